//! Daemon memory under write pressure: with the mcfs cache set to
//! `cache_size`, write 4 × cache_size to one file and read the daemon's peak
//! resident set size (VmHWM) from /proc. The daemon was started fresh for
//! this workload, so its peak belongs to this run.

use super::metrics::{Metric, Outcome};
use super::targets::{peak_rss_bytes, Target};
use super::Sizes;
use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;

const CHUNK: usize = 1 << 20;
pub const CACHE_MULTIPLE: u64 = 4;

pub fn run(target: &Target, sizes: &Sizes) -> Result<Outcome, String> {
    let pid = target.daemon_pid()?;
    let at_start = peak_rss_bytes(pid)?;
    let total = sizes.rss_cache_bytes * CACHE_MULTIPLE;
    let path = target.dir.join("rss.dat");
    let io = |what: &str, e: std::io::Error| format!("{what} {}: {e}", path.display());
    let file = OpenOptions::new().create(true).truncate(true).write(true).open(&path).map_err(|e| io("open", e))?;
    let mut chunk = vec![0u8; CHUNK];
    for (n, offset) in (0..total).step_by(CHUNK).enumerate() {
        chunk.fill(n as u8 | 1);
        file.write_all_at(&chunk, offset).map_err(|e| io("write", e))?;
    }
    file.sync_all().map_err(|e| io("fsync", e))?;
    drop(file);
    let mut outcome = Outcome::default();
    outcome.sample(Metric::PeakRssBytes, peak_rss_bytes(pid)? as f64);
    outcome.extra("daemon_pid", pid);
    outcome.extra("peak_rss_bytes_at_start", at_start);
    outcome.extra("cache_size", sizes.rss_cache_bytes);
    outcome.extra("bytes_written", total);
    outcome.extra("mcfs_stats", target.mcfs_stats()?);
    Ok(outcome)
}
