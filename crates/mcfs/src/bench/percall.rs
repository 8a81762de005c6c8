//! Per-call costs, straight libc calls in a loop on the target: a 4 KiB
//! `pwrite`, `open`+`close`, `stat` of a name that does not exist, a cached
//! 4 KiB `pread`, `stat` of an existing file, and `fsync` after a 4 KiB
//! write (only the fsync is timed). Cheap calls are timed in batches (a
//! clock read per call would weigh on a sub-microsecond call) and the value
//! is the median over batches of the time per call; each fsync is timed on
//! its own. µs; every call's result is checked. The cost of a call that
//! does no work (`getppid`) is recorded beside them: the machine's floor.
//! So are the calling thread's moves between CPUs per call (from
//! `/proc/thread-self/sched`, where the kernel offers it): a FUSE round trip
//! whose answer wakes the caller on another CPU each time shows there (the
//! io_uring transport's pinned queue threads do that on an idle machine,
//! docs/FUSE_URING.md).

use super::metrics::{Metric, Outcome};
use super::spread::summarize;
use super::Sizes;
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Instant;

const BLOCK: usize = 4096;
/// Calls per timed batch for the cheap calls.
const BATCH: u32 = 50;
/// Untimed calls before each measurement.
const WARM_UP: u32 = 100;
/// pwrite offsets cycle over this many bytes; so do pread's and fsync's.
const WRITE_SPAN: u64 = 16 << 20;
const READ_SPAN: u64 = 1 << 20;

/// Per-call time in µs: the median over batches, and the overall mean;
/// and the calling thread's CPU migrations per call (untimed calls included).
#[derive(Debug, Clone, Copy)]
struct Timing {
    median_us: f64,
    mean_us: f64,
    migrations_per_call: Option<f64>,
}

pub fn run(dir: &Path, sizes: &Sizes) -> Result<Outcome, String> {
    let write_path = c_path(&dir.join("percall-write.dat"))?;
    let read_path = c_path(&dir.join("percall-read.dat"))?;
    let sync_path = c_path(&dir.join("percall-sync.dat"))?;
    let missing_path = c_path(&dir.join("percall-missing"))?;
    let n = sizes.percall_iterations;
    let block = [0x5au8; BLOCK];
    let mut buf = [0u8; BLOCK];

    let write_fd = Fd::open(&write_path, libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC)?;
    let pwrite = time_batches(n, |i| write_fd.pwrite(&block, offset(i, WRITE_SPAN)))?;
    drop(write_fd);

    let read_fd = Fd::open(&read_path, libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC)?;
    for i in 0..READ_SPAN / BLOCK as u64 {
        read_fd.pwrite(&block, i * BLOCK as u64)?;
    }
    let open_close = time_batches(n, |_| Fd::open(&read_path, libc::O_RDONLY).map(drop))?;
    let stat_missing = time_batches(n, |_| stat_expect(&missing_path, false))?;
    let pread = time_batches(n, |i| read_fd.pread(&mut buf, offset(i, READ_SPAN)))?;
    let stat = time_batches(n, |_| stat_expect(&read_path, true))?;
    drop(read_fd);

    let sync_fd = Fd::open(&sync_path, libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC)?;
    let fsync = time_each(sizes.percall_fsyncs, |i| sync_fd.pwrite(&block, offset(i, READ_SPAN)), || sync_fd.fsync())?;

    let null_call = time_batches(n, |_| {
        // SAFETY: getppid has no preconditions and cannot fail.
        unsafe { libc::getppid() };
        Ok(())
    })?;

    let mut outcome = Outcome::default();
    for (metric, timing, key) in [
        (Metric::PwriteUs, pwrite, "pwrite"),
        (Metric::OpenCloseUs, open_close, "open_close"),
        (Metric::StatMissingUs, stat_missing, "stat_missing"),
        (Metric::PreadCachedUs, pread, "pread_cached"),
        (Metric::StatUs, stat, "stat"),
        (Metric::FsyncAfterWriteUs, fsync, "fsync_after_write"),
    ] {
        outcome.sample(metric, timing.median_us);
        outcome.extra(&format!("{key}_mean_us"), timing.mean_us);
    }
    for (timing, key) in [(pwrite, "pwrite"), (open_close, "open_close")] {
        if let Some(migrations) = timing.migrations_per_call {
            outcome.extra(&format!("{key}_migrations_per_call"), migrations);
        }
    }
    outcome.extra("null_syscall_us", null_call.median_us);
    outcome.extra("iterations", n);
    outcome.extra("fsyncs", sizes.percall_fsyncs);
    outcome.extra("batch", BATCH);
    Ok(outcome)
}

/// The i-th block-aligned offset, cycling over `span` bytes.
fn offset(i: u64, span: u64) -> u64 {
    i * BLOCK as u64 % span
}

/// Times `calls` calls of `op(i)` (after WARM_UP untimed ones) in batches.
fn time_batches(calls: u32, mut op: impl FnMut(u64) -> Result<(), String>) -> Result<Timing, String> {
    let migrations_before = thread_migrations();
    for i in 0..WARM_UP {
        op(u64::from(i))?;
    }
    let batches = calls.div_ceil(BATCH).max(1);
    let mut per_call = Vec::with_capacity(batches as usize);
    let mut i = u64::from(WARM_UP);
    for _ in 0..batches {
        let start = Instant::now();
        for _ in 0..BATCH {
            op(i)?;
            i += 1;
        }
        per_call.push(start.elapsed().as_secs_f64() * 1e6 / f64::from(BATCH));
    }
    let migrations = migrations_before.zip(thread_migrations()).map(|(before, after)| after.saturating_sub(before));
    let mut timing = timing(&per_call)?;
    timing.migrations_per_call = migrations.map(|moves| moves as f64 / i as f64);
    Ok(timing)
}

/// Times each of `calls` calls of `op` on its own, each after an untimed `before(i)`.
fn time_each(
    calls: u32,
    mut before: impl FnMut(u64) -> Result<(), String>,
    mut op: impl FnMut() -> Result<(), String>,
) -> Result<Timing, String> {
    let warm_up = (WARM_UP / 10).min(calls);
    let mut each = Vec::with_capacity(calls as usize);
    for i in 0..u64::from(warm_up + calls.max(1)) {
        before(i)?;
        let start = Instant::now();
        op()?;
        if i >= u64::from(warm_up) {
            each.push(start.elapsed().as_secs_f64() * 1e6);
        }
    }
    timing(&each)
}

fn timing(per_call_us: &[f64]) -> Result<Timing, String> {
    let summary = summarize(per_call_us).ok_or("no call was timed")?;
    let mean_us = per_call_us.iter().sum::<f64>() / per_call_us.len() as f64;
    Ok(Timing { median_us: summary.median, mean_us, migrations_per_call: None })
}

/// How often the calling thread has moved to another CPU, if the kernel says
/// (`se.nr_migrations` in `/proc/thread-self/sched`).
fn thread_migrations() -> Option<u64> {
    migrations_in(&std::fs::read_to_string("/proc/thread-self/sched").ok()?)
}

fn migrations_in(sched: &str) -> Option<u64> {
    let line = sched.lines().find(|line| line.starts_with("se.nr_migrations"))?;
    line.split(':').nth(1)?.trim().parse().ok()
}

fn c_path(path: &Path) -> Result<CString, String> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| format!("{} has a NUL byte", path.display()))
}

fn os_error(what: &str, path: &CString) -> String {
    format!("{what} {}: {}", path.to_string_lossy(), std::io::Error::last_os_error())
}

/// stat(2) of `path`, which must exist (`exists`) or be missing (ENOENT).
fn stat_expect(path: &CString, exists: bool) -> Result<(), String> {
    // SAFETY: a NUL-terminated path and a zeroed stat buffer of the right type.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::stat(path.as_ptr(), &mut st) };
    match (rc, exists) {
        (0, true) => Ok(()),
        (-1, false) if std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOENT) => Ok(()),
        (0, false) => Err(format!("stat {}: exists, but should not", path.to_string_lossy())),
        _ => Err(os_error("stat", path)),
    }
}

/// A raw descriptor (closed on drop) and the path it was opened by, for
/// errors; the path is borrowed, so the timed open+close allocates nothing.
struct Fd<'p> {
    fd: OwnedFd,
    path: &'p CString,
}

impl<'p> Fd<'p> {
    fn open(path: &'p CString, flags: libc::c_int) -> Result<Fd<'p>, String> {
        // SAFETY: a NUL-terminated path; the mode is used only with O_CREAT.
        let fd = unsafe { libc::open(path.as_ptr(), flags | libc::O_CLOEXEC, 0o644) };
        if fd < 0 {
            return Err(os_error("open", path));
        }
        // SAFETY: a descriptor just opened, owned by nothing else.
        Ok(Fd { fd: unsafe { OwnedFd::from_raw_fd(fd) }, path })
    }

    fn pwrite(&self, data: &[u8], offset: u64) -> Result<(), String> {
        // SAFETY: writes from a live slice of the stated length.
        let n = unsafe { libc::pwrite(self.fd.as_raw_fd(), data.as_ptr().cast(), data.len(), offset as libc::off_t) };
        if n != data.len() as isize {
            return Err(if n < 0 { os_error("pwrite", self.path) } else { format!("short pwrite: {n} bytes") });
        }
        Ok(())
    }

    fn pread(&self, buf: &mut [u8], offset: u64) -> Result<(), String> {
        // SAFETY: reads into a live mutable slice of the stated length.
        let n = unsafe { libc::pread(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), offset as libc::off_t) };
        if n != buf.len() as isize {
            return Err(if n < 0 { os_error("pread", self.path) } else { format!("short pread: {n} bytes") });
        }
        Ok(())
    }

    fn fsync(&self) -> Result<(), String> {
        // SAFETY: fsync of a descriptor we own.
        if unsafe { libc::fsync(self.fd.as_raw_fd()) } != 0 {
            return Err(os_error("fsync", self.path));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_call_gets_a_positive_time() {
        let dir = tempfile::tempdir().unwrap();
        let sizes = Sizes { percall_iterations: 200, percall_fsyncs: 5, ..Sizes::quick() };
        let outcome = run(dir.path(), &sizes).unwrap();
        assert_eq!(outcome.samples.len(), 6);
        assert!(outcome.samples.iter().all(|(_, v)| *v > 0.0 && v.is_finite()), "{:?}", outcome.samples);
        assert_eq!(std::fs::metadata(dir.path().join("percall-read.dat")).unwrap().len(), READ_SPAN);
        assert!(!dir.path().join("percall-missing").exists());
        assert!(outcome.extras["null_syscall_us"].as_f64().unwrap() > 0.0);
        // Present exactly where the kernel reports migrations; a fraction of the calls at most here.
        let reported = thread_migrations().is_some();
        for key in ["pwrite_migrations_per_call", "open_close_migrations_per_call"] {
            assert_eq!(outcome.extras.contains_key(key), reported, "{key}");
            if let Some(value) = outcome.extras.get(key) {
                assert!((0.0..=1.0).contains(&value.as_f64().unwrap()), "{key}: {value}");
            }
        }
    }

    #[test]
    fn migrations_are_read_from_the_sched_file() {
        let sched = "cat (1234, #threads: 1)\n-------\nse.exec_start    :   12.5\nse.nr_migrations     :   17\nnr_switches : 40\n";
        assert_eq!(migrations_in(sched), Some(17));
        assert_eq!(migrations_in("nr_switches : 40\n"), None);
        assert_eq!(migrations_in("se.nr_migrations : lots\n"), None);
    }

    #[test]
    fn offsets_cycle_over_the_span_in_whole_blocks() {
        assert_eq!(offset(0, READ_SPAN), 0);
        assert_eq!(offset(1, READ_SPAN), 4096);
        assert_eq!(offset(256, READ_SPAN), 0);
        assert_eq!(offset(257, READ_SPAN), 4096);
    }

    #[test]
    fn a_failing_call_fails_the_measurement() {
        let dir = tempfile::tempdir().unwrap();
        let missing = c_path(&dir.path().join("nope")).unwrap();
        assert!(stat_expect(&missing, true).unwrap_err().contains("No such file"));
        let err = time_batches(10, |_| stat_expect(&missing, true)).unwrap_err();
        assert!(err.starts_with("stat "), "{err}");
        let made = c_path(&dir.path().join("made")).unwrap();
        drop(Fd::open(&made, libc::O_WRONLY | libc::O_CREAT).unwrap());
        assert!(stat_expect(&made, false).unwrap_err().contains("should not"));
    }
}
