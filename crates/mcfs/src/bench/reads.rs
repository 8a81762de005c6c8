//! Cached reads: a file is written, read once to warm every cache on the
//! way, then read sequentially in 1 MiB requests and randomly in aligned
//! 4 KiB requests, each for a fixed time: MB/s (10^6 bytes per second).
//! Every read's length is checked, so a short read fails the run instead of
//! counting bytes that were never delivered.

use super::metrics::{Metric, Outcome};
use super::Sizes;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::{Duration, Instant};

const SEQ_REQUEST: usize = 1 << 20;
const RAND_REQUEST: usize = 4096;
/// Random reads between two looks at the clock.
const RAND_BATCH: u32 = 256;

pub fn run(dir: &Path, sizes: &Sizes, seed: u64) -> Result<Outcome, String> {
    let path = dir.join("reads.dat");
    let io = |what: &str, e: std::io::Error| format!("{what} {}: {e}", path.display());
    let size = sizes.read_file_bytes - sizes.read_file_bytes % SEQ_REQUEST as u64;
    write_file(&path, size).map_err(|e| io("write", e))?;
    let file = File::open(&path).map_err(|e| io("open", e))?;
    let limit = Duration::from_secs_f64(sizes.read_seconds);
    let mut buf = vec![0u8; SEQ_REQUEST];
    read_sequentially(&file, size, &mut buf).map_err(|e| io("warm-up read", e))?;

    let start = Instant::now();
    let mut seq_bytes = 0u64;
    while start.elapsed() < limit {
        seq_bytes += read_sequentially(&file, size, &mut buf).map_err(|e| io("sequential read", e))?;
    }
    let seq_rate = seq_bytes as f64 / start.elapsed().as_secs_f64() / 1e6;

    let mut rng = StdRng::seed_from_u64(seed);
    let blocks = size / RAND_REQUEST as u64;
    let block = &mut buf[..RAND_REQUEST];
    let start = Instant::now();
    let mut rand_bytes = 0u64;
    while start.elapsed() < limit {
        for _ in 0..RAND_BATCH {
            let offset = rng.gen_range(0..blocks) * RAND_REQUEST as u64;
            file.read_exact_at(block, offset).map_err(|e| io("random read", e))?;
        }
        rand_bytes += u64::from(RAND_BATCH) * RAND_REQUEST as u64;
    }
    let rand_rate = rand_bytes as f64 / start.elapsed().as_secs_f64() / 1e6;

    let mut outcome = Outcome::default();
    outcome.sample(Metric::SeqReadMbps, seq_rate);
    outcome.sample(Metric::RandReadMbps, rand_rate);
    outcome.extra("file_bytes", size);
    outcome.extra("seq_bytes_read", seq_bytes);
    outcome.extra("rand_bytes_read", rand_bytes);
    Ok(outcome)
}

fn write_file(path: &Path, size: u64) -> std::io::Result<()> {
    let file = OpenOptions::new().create(true).truncate(true).write(true).open(path)?;
    let mut chunk = vec![0u8; SEQ_REQUEST];
    for (n, offset) in (0..size).step_by(SEQ_REQUEST).enumerate() {
        chunk.fill(n as u8 | 1);
        file.write_all_at(&chunk, offset)?;
    }
    file.sync_all()
}

/// One pass over the file; returns the bytes read.
fn read_sequentially(file: &File, size: u64, buf: &mut [u8]) -> std::io::Result<u64> {
    for offset in (0..size).step_by(buf.len()) {
        file.read_exact_at(buf, offset)?;
    }
    Ok(size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_report_positive_rates_over_whole_passes() {
        let dir = tempfile::tempdir().unwrap();
        let sizes = Sizes { read_file_bytes: 4 << 20, read_seconds: 0.05, ..Sizes::quick() };
        let outcome = run(dir.path(), &sizes, 7).unwrap();
        assert_eq!(outcome.samples.len(), 2);
        assert!(outcome.samples.iter().all(|(_, v)| *v > 0.0 && v.is_finite()), "{:?}", outcome.samples);
        let seq = outcome.extras["seq_bytes_read"].as_u64().unwrap();
        assert!(seq > 0 && seq.is_multiple_of(4 << 20), "{seq}");
        assert_eq!(std::fs::metadata(dir.path().join("reads.dat")).unwrap().len(), 4 << 20);
    }
}
