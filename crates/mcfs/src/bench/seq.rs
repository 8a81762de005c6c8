//! Sequential throughput: one file written in 1 MiB requests and fsynced
//! (the time includes the fsync), then, after `sync` and dropping the
//! kernel's caches (`echo 3 > /proc/sys/vm/drop_caches`), read back in
//! 1 MiB requests: MiB/s each way. Every chunk carries its index, checked
//! on the way back, so a read of the wrong data fails the run.
//!
//! What the read measures differs by target: on ext4 and the FUSE floor the
//! device (the kernel's caches were dropped); on tmpfs memory (nothing to
//! drop); on mcfs whatever its own cache still holds, which dropping the
//! kernel's caches does not touch, and the backing ext4 for the rest.
//!
//! The JSON also keeps, per run, the bytes the target's device wrote
//! during the write and its fsync (`device_bytes_written`; none on tmpfs)
//! and, on mcfs, its counters right after the fsync (`mcfs_stats`: journal
//! bytes, data written in place, ...): how many times each byte went to the
//! device.

use super::metrics::{Metric, Outcome};
use super::targets::Target;
use super::Sizes;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::Instant;

const CHUNK: usize = 1 << 20;

pub fn run(target: &Target, sizes: &Sizes) -> Result<Outcome, String> {
    let path = target.dir.join("seq.dat");
    let chunks = (sizes.seq_bytes / CHUNK as u64).max(1);
    let bytes = chunks * CHUNK as u64;
    let has_device = target.has_device();
    if has_device {
        // Set-up writes (mkfs leftovers, mcfs's state directory) are not ours.
        target.sync_device_fs()?;
    }
    let device_before = if has_device { Some(target.device_bytes_written()?) } else { None };
    let write_seconds = write_file(&path, chunks)?;
    let mut outcome = Outcome::default();
    if let Some(before) = device_before {
        outcome.extra("device_bytes_written", target.device_bytes_written()?.saturating_sub(before));
    }
    if target.kind.is_mcfs() {
        outcome.extra("mcfs_stats", target.mcfs_stats()?);
    }
    drop_caches()?;
    let read_seconds = read_file(&path, chunks)?;
    outcome.sample(Metric::SeqWriteBytesPerSec, bytes as f64 / write_seconds);
    outcome.sample(Metric::SeqColdReadBytesPerSec, bytes as f64 / read_seconds);
    outcome.extra("bytes", bytes);
    outcome.extra("request_bytes", CHUNK);
    Ok(outcome)
}

/// Writes `chunks` chunks and fsyncs; returns the seconds that took.
fn write_file(path: &Path, chunks: u64) -> Result<f64, String> {
    let io = |what: &str, e: std::io::Error| format!("{what} {}: {e}", path.display());
    let file = OpenOptions::new().create(true).truncate(true).write(true).open(path).map_err(|e| io("open", e))?;
    let mut chunk = vec![0u8; CHUNK];
    let start = Instant::now();
    for n in 0..chunks {
        fill(&mut chunk, n);
        file.write_all_at(&chunk, n * CHUNK as u64).map_err(|e| io("write", e))?;
    }
    file.sync_all().map_err(|e| io("fsync", e))?;
    Ok(start.elapsed().as_secs_f64())
}

/// Reads the chunks back in order, checking each; returns the seconds.
fn read_file(path: &Path, chunks: u64) -> Result<f64, String> {
    let io = |what: &str, e: std::io::Error| format!("{what} {}: {e}", path.display());
    let file = File::open(path).map_err(|e| io("open", e))?;
    let mut chunk = vec![0u8; CHUNK];
    let start = Instant::now();
    for n in 0..chunks {
        file.read_exact_at(&mut chunk, n * CHUNK as u64).map_err(|e| io("read", e))?;
        let index = u64::from_le_bytes(chunk[..8].try_into().expect("8 bytes"));
        if index != n || chunk[CHUNK - 1] != n as u8 | 1 {
            return Err(format!("{}: chunk {n} read back as chunk {index}", path.display()));
        }
    }
    Ok(start.elapsed().as_secs_f64())
}

/// Chunk `n`: its index in the first 8 bytes, then one byte value.
fn fill(chunk: &mut [u8], n: u64) {
    chunk.fill(n as u8 | 1);
    chunk[..8].copy_from_slice(&n.to_le_bytes());
}

/// Writes back everything dirty, then drops the page cache, dentries and
/// inodes (needs root).
fn drop_caches() -> Result<(), String> {
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
    std::fs::write("/proc/sys/vm/drop_caches", "3\n")
        .map_err(|e| format!("cannot drop the kernel's caches (/proc/sys/vm/drop_caches): {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_carry_their_index() {
        let mut chunk = vec![0u8; 64];
        fill(&mut chunk, 0x0102);
        assert_eq!(u64::from_le_bytes(chunk[..8].try_into().unwrap()), 0x0102);
        assert_eq!(chunk[63], 0x03);
        fill(&mut chunk, 2);
        assert_eq!(chunk[8], 3);
    }

    /// The whole run would drop the machine's caches: tests stop short of that.
    #[test]
    fn what_is_written_is_read_back_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seq.dat");
        assert!(write_file(&path, 3).unwrap() > 0.0);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 3 * CHUNK as u64);
        assert!(read_file(&path, 3).unwrap() > 0.0);
        // Chunk 1 overwritten with chunk 2's contents: the read notices.
        let mut chunk = vec![0u8; CHUNK];
        fill(&mut chunk, 2);
        OpenOptions::new().write(true).open(&path).unwrap().write_all_at(&chunk, CHUNK as u64).unwrap();
        assert!(read_file(&path, 3).unwrap_err().contains("chunk 1 read back as chunk 2"));
    }
}
