//! Daemon memory under write pressure: with the mcfs cache set to
//! `cache_size`, write 8 × cache_size to one file (`run`; 2 GiB with a
//! 256 MiB cache), or have 48
//! writers of 4 apps write 6 × cache_size between them with mixed request
//! sizes and an fsync every 50 writes (`run_writers`, the load of issue 10),
//! and read the daemon's peak resident set size (VmHWM) from /proc. The
//! daemon was started fresh for each workload, so its peak belongs to it.

use super::metrics::{Metric, Outcome};
use super::targets::{peak_rss_bytes, Target};
use super::Sizes;
use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::Path;

const CHUNK: usize = 1 << 20;
pub const CACHE_MULTIPLE: u64 = 8;

pub fn run(target: &Target, sizes: &Sizes) -> Result<Outcome, String> {
    peak_rss_of(target, sizes, Metric::PeakRssBytes, |outcome| {
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
        outcome.extra("bytes_written", total);
        Ok(())
    })
}

/// Runs `load` on a fresh daemon and samples its peak RSS as `metric`, with
/// what the load and mcfs report beside it.
fn peak_rss_of(
    target: &Target,
    sizes: &Sizes,
    metric: Metric,
    load: impl FnOnce(&mut Outcome) -> Result<(), String>,
) -> Result<Outcome, String> {
    let pid = target.daemon_pid()?;
    let at_start = peak_rss_bytes(pid)?;
    let mut outcome = Outcome::default();
    load(&mut outcome)?;
    outcome.sample(metric, peak_rss_bytes(pid)? as f64);
    outcome.extra("daemon_pid", pid);
    outcome.extra("peak_rss_bytes_at_start", at_start);
    outcome.extra("cache_size", sizes.rss_cache_bytes);
    outcome.extra("mcfs_stats", target.mcfs_stats()?);
    Ok(outcome)
}

/// The apps of the writers workload (uids), and its writers per app.
const WRITER_UIDS: [u32; 4] = [10001, 10002, 10003, 10004];
const WRITERS_PER_APP: usize = 12;
pub const WRITERS_CACHE_MULTIPLE: u64 = 6;
/// Request sizes the writers cycle through: pages, runs of pages, and an odd size.
const WRITE_SIZES: [usize; 4] = [4096, 16384, 65536, 100];

pub fn run_writers(target: &Target, sizes: &Sizes) -> Result<Outcome, String> {
    peak_rss_of(target, sizes, Metric::PeakRssWritersBytes, |outcome| {
        let writers = WRITER_UIDS.len() * WRITERS_PER_APP;
        let per_writer = sizes.rss_cache_bytes * WRITERS_CACHE_MULTIPLE / writers as u64;
        for uid in WRITER_UIDS {
            let dir = target.dir.join(format!("app{uid}"));
            std::fs::create_dir(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
            std::os::unix::fs::chown(&dir, Some(uid), Some(uid))
                .map_err(|e| format!("chown {}: {e}", dir.display()))?;
        }
        let results: Vec<Result<(), String>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..writers)
                .map(|w| {
                    let uid = WRITER_UIDS[w % WRITER_UIDS.len()];
                    let path = target.dir.join(format!("app{uid}/writer{w}"));
                    scope.spawn(move || write_as(uid, &path, per_writer))
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("a writer thread panicked".into()))).collect()
        });
        results.into_iter().collect::<Result<Vec<()>, String>>()?;
        outcome.extra("writers", writers);
        outcome.extra("bytes_written", per_writer * writers as u64);
        Ok(())
    })
}

/// Writes `bytes` to `path` as `uid` (the thread's file-system uid: FUSE
/// requests carry it), in requests of `WRITE_SIZES`, fsync every 50th.
fn write_as(uid: u32, path: &Path, bytes: u64) -> Result<(), String> {
    // SAFETY: setfsuid/setfsgid change only this thread's file-system ids.
    unsafe {
        libc::setfsgid(uid);
        libc::setfsuid(uid);
    }
    let io = |what: &str, e: std::io::Error| format!("{what} {} as uid {uid}: {e}", path.display());
    let mut file = OpenOptions::new().create(true).truncate(true).write(true).open(path).map_err(|e| io("open", e))?;
    let chunk = vec![0x5au8; *WRITE_SIZES.iter().max().expect("sizes")];
    let mut written = 0;
    for i in 1.. {
        if written >= bytes {
            break;
        }
        let n = WRITE_SIZES[i % WRITE_SIZES.len()];
        file.write_all(&chunk[..n]).map_err(|e| io("write", e))?;
        written += n as u64;
        if i % 50 == 0 {
            file.sync_data().map_err(|e| io("fsync", e))?;
        }
    }
    Ok(())
}
