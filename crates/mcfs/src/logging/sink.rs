//! Where log records go: stderr, the journal (stderr with each line's
//! priority, `journal`), or a log file rotated at a size cap. A
//! record is written whole or dropped and counted — writing never fails,
//! never panics and never retries, so a full or read-only file system cannot
//! take the daemon down through its log.
//!
//! Invariants: the log file and its one rotated predecessor (`NAME.1`) are
//! each at most `cap` bytes (a record larger than the cap is dropped), so the
//! log takes at most twice the cap; both are opened relative to their
//! directory's descriptor, never through a symlink, mode 0600
//! (`state_dir::open_private_file`).

use super::journal;
use crate::state_dir::open_private_file;
use serde::Serialize;
use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use tracing::Level;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};

/// Size at which the log file is rotated (the log takes at most twice this).
pub const ROTATE_AT: u64 = 4 << 20;

/// What happened to log records, for `mcfs stat`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LogCounts {
    /// Records written.
    pub written: u64,
    /// Records that could not be written (full or failing file system).
    pub dropped: u64,
    /// Times the log file was rotated.
    pub rotated: u64,
    /// Records held back by the rate limit (see `rate_limit`).
    pub suppressed: u64,
}

#[derive(Default)]
struct Counters {
    written: AtomicU64,
    dropped: AtomicU64,
    rotated: AtomicU64,
    suppressed: AtomicU64,
}

pub enum Target {
    Stderr,
    /// stderr connected to journald: no timestamps, "<N>" priorities.
    Journal,
    File(LogFile),
}

/// The one place the log is written to.
pub struct LogSink {
    target: Mutex<Target>,
    counters: Counters,
}

impl LogSink {
    pub fn new(target: Target) -> LogSink {
        LogSink { target: Mutex::new(target), counters: Counters::default() }
    }

    /// Writes one record (one or more whole lines) of `level`; a failure drops it.
    pub fn write_record(&self, level: Level, record: &[u8]) {
        if record.is_empty() {
            return;
        }
        let written = match &mut *self.target.lock().unwrap_or_else(|p| p.into_inner()) {
            Target::Stderr => io::stderr().lock().write_all(record).is_ok(),
            Target::Journal => io::stderr().lock().write_all(&journal::prefix_lines(level, record)).is_ok(),
            Target::File(file) => {
                let appended = file.append(record);
                if appended.rotated {
                    self.counters.rotated.fetch_add(1, Ordering::Relaxed);
                }
                appended.written
            }
        };
        let counter = if written { &self.counters.written } else { &self.counters.dropped };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Writes a line the pipeline makes itself (not an event), formatted
    /// as the fmt layer formats events for this target.
    pub fn write_line(&self, level: Level, target: &str, message: &str) {
        let mut line = String::new();
        if !self.is_journal() {
            let _ = SystemTime.format_time(&mut Writer::new(&mut line));
            line.push_str(&format!(" {:>5} ", level.as_str()));
        }
        line.push_str(&format!("{target}: {message}\n"));
        self.write_record(level, line.as_bytes());
    }

    /// Where records go, for people: the file's path, "journal" or "stderr".
    pub fn place(&self) -> String {
        match &*self.target.lock().unwrap_or_else(|p| p.into_inner()) {
            Target::Stderr => "stderr".to_string(),
            Target::Journal => "journal".to_string(),
            Target::File(file) => file.path().display().to_string(),
        }
    }

    /// Whether records go to the journal (which stamps them with the time).
    pub fn is_journal(&self) -> bool {
        matches!(*self.target.lock().unwrap_or_else(|p| p.into_inner()), Target::Journal)
    }

    pub fn count_suppressed(&self, records: u64) {
        self.counters.suppressed.fetch_add(records, Ordering::Relaxed);
    }

    pub fn counts(&self) -> LogCounts {
        let c = &self.counters;
        LogCounts {
            written: c.written.load(Ordering::Relaxed),
            dropped: c.dropped.load(Ordering::Relaxed),
            rotated: c.rotated.load(Ordering::Relaxed),
            suppressed: c.suppressed.load(Ordering::Relaxed),
        }
    }
}

/// A log file in a directory held open, rotated to `NAME.1` at `cap` bytes.
pub struct LogFile {
    dir: OwnedFd,
    name: OsString,
    path: PathBuf,
    /// `None` after a rotation that could not create the new file; retried.
    file: Option<File>,
    size: u64,
    cap: u64,
}

/// The outcome of one append.
struct Appended {
    written: bool,
    rotated: bool,
}

impl LogFile {
    /// Opens (creating, mode 0600) the file `name` in `dir` for appending;
    /// `path` names it in errors. Rotates at `ROTATE_AT`.
    pub fn open(dir: BorrowedFd, name: &OsStr, path: &Path) -> Result<LogFile, String> {
        LogFile::with_cap(dir, name, path, ROTATE_AT)
    }

    fn with_cap(dir: BorrowedFd, name: &OsStr, path: &Path, cap: u64) -> Result<LogFile, String> {
        let file = open_private_file(dir, name, libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT, path)?;
        let size = file.metadata().map_err(|e| format!("{}: {e}", path.display()))?.len();
        let dir = dir.try_clone_to_owned().map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(LogFile { dir, name: name.to_owned(), path: path.to_path_buf(), file: Some(file), size, cap })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn append(&mut self, record: &[u8]) -> Appended {
        let len = record.len() as u64;
        if len > self.cap {
            return Appended { written: false, rotated: false };
        }
        let mut rotated = false;
        if self.file.is_none() || self.size + len > self.cap {
            rotated = self.rotate().is_ok();
            if !rotated {
                return Appended { written: false, rotated };
            }
        }
        let Some(file) = &mut self.file else { return Appended { written: false, rotated } };
        match file.write_all(record) {
            Ok(()) => {
                self.size += len;
                Appended { written: true, rotated }
            }
            Err(_) => {
                // Part of it may have landed: the size counts it, so the cap holds.
                self.size = file.metadata().map_or(self.cap, |m| m.len());
                Appended { written: false, rotated }
            }
        }
    }

    /// `NAME` becomes `NAME.1` (replacing the previous one) and a new,
    /// empty `NAME` is opened. A failure leaves no file open to write to,
    /// so nothing grows past the cap; the next record tries again.
    fn rotate(&mut self) -> io::Result<()> {
        if self.file.is_some() {
            let mut rotated = self.name.clone();
            rotated.push(".1");
            let (old, new) = (c_string(&self.name)?, c_string(&rotated)?);
            let dir = self.dir.as_raw_fd();
            // SAFETY: both names are NUL-terminated; the fd is open.
            if unsafe { libc::renameat(dir, old.as_ptr(), dir, new.as_ptr()) } != 0 {
                return Err(io::Error::last_os_error());
            }
            self.file = None;
        }
        let flags = libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT | libc::O_EXCL;
        let file = open_private_file(self.dir.as_fd(), &self.name, flags, &self.path).map_err(io::Error::other)?;
        self.file = Some(file);
        self.size = 0;
        Ok(())
    }
}

fn c_string(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    fn dir_fd(path: &Path) -> File {
        File::open(path).unwrap()
    }

    #[test]
    fn rotates_at_the_cap_and_keeps_one_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.log");
        let file = LogFile::with_cap(dir_fd(dir.path()).as_fd(), OsStr::new("x.log"), &path, 100).unwrap();
        let sink = LogSink::new(Target::File(file));
        for i in 0..100 {
            sink.write_record(Level::INFO, format!("line {i:03} of the log\n").as_bytes());
        }
        let counts = sink.counts();
        assert_eq!((counts.written, counts.dropped), (100, 0));
        assert_eq!(counts.rotated, 19, "5 lines of 20 bytes per 100-byte file");
        for name in ["x.log", "x.log.1"] {
            let meta = std::fs::metadata(dir.path().join(name)).unwrap();
            assert!(meta.len() <= 100, "{name}: {} bytes", meta.len());
            assert_eq!(meta.mode() & 0o777, 0o600, "{name}");
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2, "no other file");
        let last = std::fs::read_to_string(&path).unwrap();
        assert!(last.ends_with("line 099 of the log\n"), "{last}");
        sink.write_record(Level::INFO, &[b'x'; 101]);
        assert_eq!(sink.counts().dropped, 1, "a record larger than the cap is dropped");
    }

    /// /dev/full fails every write with ENOSPC, as a full file system does:
    /// the records are dropped and counted, and nothing panics.
    #[test]
    fn failed_writes_are_dropped_and_counted() {
        let dev = Path::new("/dev");
        let full = File::options().append(true).open("/dev/full").unwrap();
        let mut file = LogFile {
            dir: dir_fd(dev).into(),
            name: "full".into(),
            path: dev.join("full"),
            file: Some(full),
            size: 0,
            cap: ROTATE_AT,
        };
        assert!(!file.append(b"one\n").written);
        let sink = LogSink::new(Target::File(file));
        for _ in 0..1000 {
            sink.write_record(Level::INFO, b"a record that cannot be written\n");
        }
        assert_eq!(sink.counts(), LogCounts { written: 0, dropped: 1000, rotated: 0, suppressed: 0 });
    }

    #[test]
    fn a_rotation_that_fails_stops_the_log_at_the_cap_until_it_succeeds() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.log");
        let file = LogFile::with_cap(dir_fd(dir.path()).as_fd(), OsStr::new("x.log"), &path, 10).unwrap();
        let sink = LogSink::new(Target::File(file));
        sink.write_record(Level::INFO, b"0123456789");
        // A non-empty directory where the old log goes: the rename fails.
        let blocker = dir.path().join("x.log.1");
        std::fs::create_dir(&blocker).unwrap();
        std::fs::write(blocker.join("f"), b"").unwrap();
        for _ in 0..10 {
            sink.write_record(Level::INFO, b"next");
        }
        assert_eq!(std::fs::read(&path).unwrap(), b"0123456789", "nothing past the cap");
        assert_eq!(sink.counts(), LogCounts { written: 1, dropped: 10, rotated: 0, suppressed: 0 });
        std::fs::remove_dir_all(&blocker).unwrap();
        sink.write_record(Level::INFO, b"next");
        assert_eq!(sink.counts().rotated, 1);
        assert_eq!(std::fs::read(&path).unwrap(), b"next");
        assert_eq!(std::fs::read(&blocker).unwrap(), b"0123456789");
    }
}
