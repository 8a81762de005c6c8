//! Replaying a trace's file operations onto a real directory with ordinary system calls (`mcfs trace
//! replay TRACE --into DIR`), to reproduce on any file system — a plain directory or a live mcfs mount —
//! the tree a recorded program left.
//!
//! Every trace path is taken relative to the target directory: `.` is dropped and `..` resolved by name,
//! stopping at the directory (as at a chroot's root). Writes write the [`pattern`](crate::pattern) bytes
//! of their offsets, so the replay leaves byte-identical files to those of a program that wrote the
//! pattern, however either of them cut its writes. Opens, creates, closes and syncs are real calls on
//! real descriptors; reads, writes and syncs use the latest descriptor the trace opened on the path (a
//! short-lived one otherwise). As in the simulator's replay, missing parent directories of a create,
//! mkdir or rename target are made on demand. Input, lifecycle and power events have nothing to act on
//! here and are counted as ignored.
//!
//! Every file operation is timed on the monotonic clock: the report gives the time from the start of the
//! first to the end of the last, and the latency percentiles of the operations (what the FastTrack study
//! measures as an app's response time). Timing only observes; it never changes what is done.
//!
//! Invariant: no trace makes the replay panic, name anything outside the target directory or remove the
//! directory itself; an operation the system refuses is skipped, counted with its reason, and the replay
//! goes on.

use crate::error::TraceError;
use crate::pattern;
use crate::replay::MAX_REQUEST_BYTES;
use crate::text::op_name;
use crate::trace::{EventKind, TraceEvent};
use std::collections::{BTreeMap, HashMap};
use std::ffi::OsStr;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, Instant};

/// Largest piece of a read or write done at once, so a long request never becomes one huge buffer.
const CHUNK_BYTES: usize = 1 << 20;
/// Mode of the files a `create` makes (before the umask), as `open(2)` callers usually ask.
const FILE_MODE: u32 = 0o644;
/// Latency samples kept; past this, every other one is dropped and half as many taken (a replay looped
/// for hours keeps bounded memory and an even sample of its whole run).
const MAX_LATENCY_SAMPLES: usize = 1 << 20;

/// What a replay did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct LiveReplayReport {
    /// File operations carried out.
    pub done: u64,
    /// File operations the system refused or the replay could not map; see `skip_reasons`.
    pub skipped: u64,
    /// Events with nothing to do on a directory: input, lifecycle, battery, screen.
    pub ignored: u64,
    /// Skipped operations counted by `op: reason`.
    pub skip_reasons: BTreeMap<String, u64>,
    /// Opens the trace never closed (closed when the replay finished).
    pub left_open: u64,
    /// How long the file operations took.
    pub timing: ReplayTiming,
}

/// How long a replay's file operations (done or skipped) took, on the monotonic clock, in nanoseconds.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ReplayTiming {
    /// From the start of the first file operation to the end of the last (0 without any).
    pub elapsed_ns: u64,
    /// File operations timed.
    pub ops: u64,
    /// Median and 99th percentile latency of one operation (nearest rank over the samples kept).
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
    /// By operation name (`read`, `fsync`, ...): where the time went.
    pub by_op: BTreeMap<&'static str, OpTiming>,
}

/// How long the operations of one kind took, in nanoseconds.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct OpTiming {
    pub count: u64,
    pub total_ns: u64,
    pub max_ns: u64,
}

/// Timing of the operations as they run.
#[derive(Default)]
struct OpTimer {
    first_start: Option<Instant>,
    last_end: Option<Instant>,
    ops: u64,
    max_ns: u64,
    by_op: BTreeMap<&'static str, OpTiming>,
    /// Latencies of every `stride`-th operation.
    samples: Vec<u64>,
    stride: u64,
}

impl OpTimer {
    fn record(&mut self, op: &'static str, start: Instant, end: Instant) {
        self.first_start.get_or_insert(start);
        self.last_end = Some(end);
        let ns = u64::try_from(end.duration_since(start).as_nanos()).unwrap_or(u64::MAX);
        self.max_ns = self.max_ns.max(ns);
        let kind = self.by_op.entry(op).or_default();
        kind.count += 1;
        kind.total_ns = kind.total_ns.saturating_add(ns);
        kind.max_ns = kind.max_ns.max(ns);
        let stride = self.stride.max(1);
        if self.ops.is_multiple_of(stride) {
            if self.samples.len() >= MAX_LATENCY_SAMPLES {
                // Keep every other sample (those of operations at twice the stride) and take half as many.
                let mut keep = false;
                self.samples.retain(|_| {
                    keep = !keep;
                    keep
                });
                self.stride = stride * 2;
            }
            if self.ops.is_multiple_of(self.stride.max(1)) {
                self.samples.push(ns);
            }
        }
        self.ops += 1;
    }

    fn timing(mut self) -> ReplayTiming {
        self.samples.sort_unstable();
        let elapsed = match (self.first_start, self.last_end) {
            (Some(start), Some(end)) => end.duration_since(start),
            _ => Duration::ZERO,
        };
        ReplayTiming {
            elapsed_ns: u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX),
            ops: self.ops,
            p50_ns: nearest_rank(&self.samples, 50),
            p99_ns: nearest_rank(&self.samples, 99),
            max_ns: self.max_ns,
            by_op: self.by_op,
        }
    }
}

/// The `percent`-th percentile of sorted `samples` by nearest rank (0 when empty).
fn nearest_rank(samples: &[u64], percent: usize) -> u64 {
    if samples.is_empty() {
        return 0;
    }
    let rank = (samples.len() * percent).div_ceil(100).max(1);
    samples[rank - 1]
}

/// Why a replay could not run to the end.
#[derive(Debug)]
pub enum LiveReplayError {
    /// The target directory is missing or unusable.
    Target(String),
    /// The trace could not be read.
    Trace(TraceError),
}

impl fmt::Display for LiveReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LiveReplayError::Target(e) => f.write_str(e),
            LiveReplayError::Trace(e) => write!(f, "reading the trace: {e}"),
        }
    }
}

impl std::error::Error for LiveReplayError {}

/// Replays `events` onto the directory `root`; stops at the first unreadable event.
pub fn replay_into<I>(root: &Path, events: I) -> Result<LiveReplayReport, LiveReplayError>
where
    I: IntoIterator<Item = Result<TraceEvent, TraceError>>,
{
    let mut replayer = LiveReplayer::new(root)?;
    for event in events {
        replayer.apply(&event.map_err(LiveReplayError::Trace)?);
    }
    Ok(replayer.finish())
}

struct OpenFile {
    file: File,
    writable: bool,
}

/// A replay in progress onto one directory.
pub struct LiveReplayer {
    root: PathBuf,
    /// Descriptors the trace opened and has not closed, by path relative to `root`, latest last.
    open: HashMap<PathBuf, Vec<OpenFile>>,
    buf: Vec<u8>,
    report: LiveReplayReport,
    timer: OpTimer,
}

impl LiveReplayer {
    /// A replayer onto `root`, which must be an existing directory.
    pub fn new(root: &Path) -> Result<LiveReplayer, LiveReplayError> {
        let target = |why: String| LiveReplayError::Target(format!("replay directory {}: {why}", root.display()));
        let meta = fs::metadata(root).map_err(|e| target(e.to_string()))?;
        if !meta.is_dir() {
            return Err(target("is not a directory".to_string()));
        }
        let root = root.canonicalize().map_err(|e| target(e.to_string()))?;
        Ok(LiveReplayer {
            root,
            open: HashMap::new(),
            buf: Vec::new(),
            report: LiveReplayReport::default(),
            timer: OpTimer::default(),
        })
    }

    /// Carries out one event (or counts why not).
    pub fn apply(&mut self, event: &TraceEvent) {
        let start = Instant::now();
        let result = self.file_op(&event.kind);
        if result.is_some() {
            self.timer.record(op_name(&event.kind), start, Instant::now());
        }
        match result {
            None => self.report.ignored += 1,
            Some(Ok(())) => self.report.done += 1,
            Some(Err(e)) => {
                self.report.skipped += 1;
                *self.report.skip_reasons.entry(format!("{}: {e}", op_name(&event.kind))).or_default() += 1;
            }
        }
    }

    /// Closes what the trace left open and reports.
    pub fn finish(mut self) -> LiveReplayReport {
        self.report.left_open = self.open.values().map(|files| files.len() as u64).sum();
        self.report.timing = self.timer.timing();
        self.report
    }

    /// `None` for events that are not file operations.
    fn file_op(&mut self, kind: &EventKind) -> Option<io::Result<()>> {
        Some(match kind {
            EventKind::Open { path } => self.open_existing(path),
            EventKind::Create { path } => self.create(path),
            EventKind::Read { path, offset, len } => self.read(path, *offset, *len),
            EventKind::Write { path, offset, len } => self.write(path, *offset, *len),
            EventKind::Fsync { path } => self.with_file(path, false, File::sync_all),
            EventKind::Fdatasync { path } => self.with_file(path, false, File::sync_data),
            EventKind::Truncate { path, size } => self.with_file(path, true, |f| f.set_len(*size)),
            EventKind::Unlink { path } => self.unlink(path),
            EventKind::Rmdir { path } => self.inside(path).and_then(|rel| fs::remove_dir(self.removable(&rel)?)),
            EventKind::Rename { from, to } => self.rename(from, to),
            EventKind::Link { from, to } => self.link(from, to),
            EventKind::Mkdir { path } => self.mkdir(path),
            EventKind::Close { path } => self.close(path),
            EventKind::Input { .. }
            | EventKind::Launch
            | EventKind::Foreground
            | EventKind::Background
            | EventKind::Exit
            | EventKind::Battery { .. }
            | EventKind::Screen { .. } => return None,
        })
    }

    /// The trace path relative to the root, resolved by name only.
    fn inside(&self, path: &[u8]) -> io::Result<PathBuf> {
        if path.contains(&0) {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "the path holds a NUL byte"));
        }
        let mut rel = PathBuf::new();
        for component in Path::new(OsStr::from_bytes(path)).components() {
            match component {
                Component::Normal(name) => rel.push(name),
                Component::ParentDir => {
                    rel.pop();
                }
                Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
            }
        }
        Ok(rel)
    }

    /// The full path of `rel`, refusing the root itself (it is never removed or replaced).
    fn removable(&self, rel: &Path) -> io::Result<PathBuf> {
        if rel.as_os_str().is_empty() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "names the replay directory itself"));
        }
        Ok(self.root.join(rel))
    }

    /// Makes the missing directories above `rel`.
    fn make_parents(&self, rel: &Path) -> io::Result<()> {
        match rel.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => fs::create_dir_all(self.root.join(parent)),
            _ => Ok(()),
        }
    }

    fn open_existing(&mut self, path: &[u8]) -> io::Result<()> {
        let rel = self.inside(path)?;
        let full = self.root.join(&rel);
        let opened = match OpenOptions::new().read(true).write(true).open(&full) {
            Ok(file) => OpenFile { file, writable: true },
            // Read-only files and directories open the way a reader opens them.
            Err(e) if read_only_would_do(&e) => OpenFile { file: File::open(&full)?, writable: false },
            Err(e) => return Err(e),
        };
        self.open.entry(rel).or_default().push(opened);
        Ok(())
    }

    fn create(&mut self, path: &[u8]) -> io::Result<()> {
        let rel = self.inside(path)?;
        self.make_parents(&rel)?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(FILE_MODE)
            .open(self.root.join(&rel))?;
        self.open.entry(rel).or_default().push(OpenFile { file, writable: true });
        Ok(())
    }

    fn close(&mut self, path: &[u8]) -> io::Result<()> {
        let rel = self.inside(path)?;
        let files = self.open.get_mut(&rel).ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "not open"))?;
        files.pop();
        if files.is_empty() {
            self.open.remove(&rel);
        }
        Ok(())
    }

    /// Runs `op` on the latest descriptor the trace opened on `path` (a writable one if `write`), or on a
    /// descriptor opened just for it.
    fn with_file<T>(&mut self, path: &[u8], write: bool, op: impl FnOnce(&File) -> io::Result<T>) -> io::Result<T> {
        let rel = self.inside(path)?;
        let latest = self.open.get(&rel).and_then(|files| files.iter().rev().find(|f| f.writable || !write));
        match latest {
            Some(open) => op(&open.file),
            None => op(&OpenOptions::new().read(!write).write(write).open(self.root.join(&rel))?),
        }
    }

    fn read(&mut self, path: &[u8], offset: u64, len: u64) -> io::Result<()> {
        check_request(offset, len)?;
        let mut buf = std::mem::take(&mut self.buf);
        buf.resize(CHUNK_BYTES, 0);
        let result = self.with_file(path, false, |file| {
            let mut done = 0;
            while done < len {
                let want = (len - done).min(CHUNK_BYTES as u64) as usize;
                let got = file.read_at(&mut buf[..want], offset + done)?;
                if got == 0 {
                    break;
                }
                done += got as u64;
            }
            Ok(())
        });
        self.buf = buf;
        result
    }

    fn write(&mut self, path: &[u8], offset: u64, len: u64) -> io::Result<()> {
        check_request(offset, len)?;
        let mut buf = std::mem::take(&mut self.buf);
        buf.resize(CHUNK_BYTES, 0);
        let result = self.with_file(path, true, |file| {
            let mut done = 0;
            while done < len {
                let n = (len - done).min(CHUNK_BYTES as u64) as usize;
                pattern::fill(offset + done, &mut buf[..n]);
                file.write_all_at(&buf[..n], offset + done)?;
                done += n as u64;
            }
            Ok(())
        });
        self.buf = buf;
        result
    }

    fn unlink(&mut self, path: &[u8]) -> io::Result<()> {
        let rel = self.inside(path)?;
        fs::remove_file(self.removable(&rel)?)?;
        // The name is gone: a later create of it is another file.
        self.open.remove(&rel);
        Ok(())
    }

    fn mkdir(&mut self, path: &[u8]) -> io::Result<()> {
        let rel = self.inside(path)?;
        self.make_parents(&rel)?;
        fs::create_dir(self.root.join(rel))
    }

    fn rename(&mut self, from: &[u8], to: &[u8]) -> io::Result<()> {
        let (from, to) = (self.inside(from)?, self.inside(to)?);
        let (from_full, to_full) = (self.removable(&from)?, self.removable(&to)?);
        self.make_parents(&to)?;
        fs::rename(from_full, to_full)?;
        if from == to {
            return Ok(());
        }
        // Descriptors follow their files, below a renamed directory too; those of a replaced file are closed.
        self.open.retain(|rel, _| !rel.starts_with(&to));
        let moved: Vec<PathBuf> = self.open.keys().filter(|rel| rel.starts_with(&from)).cloned().collect();
        for old in moved {
            if let (Some(files), Ok(below)) = (self.open.remove(&old), old.strip_prefix(&from)) {
                self.open.insert(to.join(below), files);
            }
        }
        Ok(())
    }

    fn link(&self, from: &[u8], to: &[u8]) -> io::Result<()> {
        let (from, to) = (self.inside(from)?, self.inside(to)?);
        self.make_parents(&to)?;
        fs::hard_link(self.removable(&from)?, self.removable(&to)?)
    }
}

/// Opening read-write failed in a way a read-only open may not.
fn read_only_would_do(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::PermissionDenied | io::ErrorKind::IsADirectory | io::ErrorKind::ReadOnlyFilesystem
    ) || e.raw_os_error() == Some(ETXTBSY)
}

/// ETXTBSY (a running executable), spelled out rather than pulling in libc for one constant.
const ETXTBSY: i32 = 26;

/// Refuses requests no program issues, so one corrupt length cannot stall the replay.
fn check_request(offset: u64, len: u64) -> io::Result<()> {
    if len > MAX_REQUEST_BYTES {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("longer than {MAX_REQUEST_BYTES} bytes")));
    }
    if offset.checked_add(len).is_none_or(|end| end > i64::MAX as u64) {
        return Err(io::Error::new(io::ErrorKind::FileTooLarge, "ends past the largest file size"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::InputKind;
    use rand::{Rng, SeedableRng};

    fn ev(kind: EventKind) -> TraceEvent {
        TraceEvent { time_ns: 0, app: "test".into(), pid: 1, kind }
    }

    fn p(s: &str) -> crate::trace::PathBytes {
        s.as_bytes().into()
    }

    fn run(root: &Path, kinds: Vec<EventKind>) -> LiveReplayReport {
        replay_into(root, kinds.into_iter().map(|k| Ok(ev(k)))).unwrap()
    }

    fn pattern_of(offset: u64, len: usize) -> Vec<u8> {
        let mut v = vec![0; len];
        pattern::fill(offset, &mut v);
        v
    }

    #[test]
    fn live_replay_builds_the_tree_with_pattern_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let report = run(
            dir.path(),
            vec![
                EventKind::Launch,
                EventKind::Mkdir { path: p("/d") },
                EventKind::Create { path: p("/d/a") },
                EventKind::Write { path: p("/d/a"), offset: 0, len: 5000 },
                EventKind::Write { path: p("/d/a"), offset: 10_000, len: 100 },
                EventKind::Fsync { path: p("/d/a") },
                EventKind::Close { path: p("/d/a") },
                EventKind::Create { path: p("/b") },
                EventKind::Write { path: p("/b"), offset: 0, len: 3 * CHUNK_BYTES as u64 / 2 },
                EventKind::Truncate { path: p("/b"), size: 30_000 },
                EventKind::Fdatasync { path: p("/b") },
                EventKind::Read { path: p("/b"), offset: 100, len: 1 << 20 },
                EventKind::Close { path: p("/b") },
                EventKind::Rename { from: p("/b"), to: p("/d/b2") },
                EventKind::Create { path: p("/x") },
                EventKind::Close { path: p("/x") },
                EventKind::Unlink { path: p("/x") },
                EventKind::Mkdir { path: p("/gone") },
                EventKind::Rmdir { path: p("/gone") },
                EventKind::Input { input: InputKind::Drag, duration_ns: 5 },
                EventKind::Battery { percent: 3 },
            ],
        );
        assert_eq!(report.skip_reasons, BTreeMap::new());
        assert_eq!((report.done, report.skipped, report.ignored, report.left_open), (18, 0, 3, 0));

        let a = fs::read(dir.path().join("d/a")).unwrap();
        assert_eq!(a.len(), 10_100);
        assert_eq!(&a[..5000], &pattern_of(0, 5000)[..]);
        assert!(a[5000..10_000].iter().all(|b| *b == 0), "a hole reads as zeros");
        assert_eq!(&a[10_000..], &pattern_of(10_000, 100)[..]);
        assert_eq!(fs::read(dir.path().join("d/b2")).unwrap(), pattern_of(0, 30_000));
        let mut names: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        names.sort();
        assert_eq!(names, ["d"], "b was renamed, x unlinked, gone removed");
    }

    #[test]
    fn live_replay_keeps_descriptors_across_renames_and_makes_parents() {
        let dir = tempfile::tempdir().unwrap();
        let report = run(
            dir.path(),
            vec![
                EventKind::Create { path: p("/deep/er/f") },
                EventKind::Rename { from: p("/deep"), to: p("/moved/here") },
                EventKind::Write { path: p("/moved/here/er/f"), offset: 7, len: 9 },
                EventKind::Close { path: p("/moved/here/er/f") },
                EventKind::Close { path: p("/moved/here/er/f") },
                EventKind::Open { path: p("/moved/here/er/f") },
            ],
        );
        assert_eq!(report.skip_reasons, BTreeMap::from([("close: not open".to_string(), 1)]));
        assert_eq!((report.done, report.left_open), (5, 1), "the first close found the renamed descriptor");
        let f = fs::read(dir.path().join("moved/here/er/f")).unwrap();
        assert_eq!(f, [vec![0; 7], pattern_of(7, 9)].concat());
    }

    #[test]
    fn live_replay_stays_inside_and_skips_what_it_cannot_do() {
        let outer = tempfile::tempdir().unwrap();
        let root = outer.path().join("root");
        fs::create_dir(&root).unwrap();
        let report = run(
            &root,
            vec![
                EventKind::Create { path: p("/../../escape") },
                EventKind::Close { path: p("escape") },
                EventKind::Create { path: b"/nul\0byte"[..].into() },
                EventKind::Write { path: p("/missing"), offset: 0, len: 10 },
                EventKind::Write { path: p("/escape"), offset: u64::MAX - 5, len: 10 },
                EventKind::Write { path: p("/escape"), offset: 0, len: MAX_REQUEST_BYTES + 1 },
                EventKind::Rmdir { path: p("/") },
                EventKind::Rmdir { path: p("/..") },
                EventKind::Unlink { path: p("") },
                EventKind::Rename { from: p("/escape"), to: p("/") },
                EventKind::Truncate { path: p("/escape"), size: u64::MAX },
                EventKind::Open { path: p("/") },
            ],
        );
        assert_eq!(report.done, 3, "{report:?}");
        assert_eq!(report.skipped, 9, "{report:?}");
        assert!(root.join("escape").is_file());
        let outside: Vec<_> = fs::read_dir(outer.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(outside, ["root"], "nothing was made or removed outside the replay directory");
        assert_eq!(report.skip_reasons.get("rmdir: names the replay directory itself"), Some(&2));
        assert!(report.skip_reasons.keys().any(|r| r.starts_with("write: No such file")), "{report:?}");
    }

    #[test]
    fn live_replay_refuses_a_target_that_is_not_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        fs::write(&file, b"").unwrap();
        let err = LiveReplayer::new(&file).err().unwrap().to_string();
        assert!(err.contains("f: is not a directory"), "{err}");
        let err = LiveReplayer::new(&dir.path().join("none")).err().unwrap().to_string();
        assert!(err.contains("none: No such file"), "{err}");
        let bad = vec![Ok(ev(EventKind::Launch)), Err(TraceError::at(crate::Position::Line(3), "bad"))];
        let err = replay_into(dir.path(), bad).unwrap_err().to_string();
        assert_eq!(err, "reading the trace: line 3: bad");
    }

    #[test]
    fn file_operations_are_timed_and_other_events_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let report = run(
            dir.path(),
            vec![
                EventKind::Launch,
                EventKind::Create { path: p("/t") },
                EventKind::Write { path: p("/t"), offset: 0, len: 1 << 16 },
                EventKind::Fsync { path: p("/t") },
                EventKind::Close { path: p("/t") },
                EventKind::Close { path: p("/t") },
                EventKind::Background,
            ],
        );
        let t = &report.timing;
        assert_eq!(t.ops, 5, "four done and one skipped close, not the lifecycle events: {t:?}");
        assert!(t.p50_ns <= t.p99_ns && t.p99_ns <= t.max_ns, "{t:?}");
        assert!(t.max_ns <= t.elapsed_ns && t.elapsed_ns > 0, "{t:?}");
        let counts: Vec<(&str, u64)> = t.by_op.iter().map(|(op, o)| (*op, o.count)).collect();
        assert_eq!(counts, [("close", 2), ("create", 1), ("fsync", 1), ("write", 1)]);
        assert!(t.by_op.values().all(|o| o.max_ns <= t.max_ns && o.max_ns <= o.total_ns));
        assert_eq!(run(dir.path(), vec![EventKind::Launch]).timing, ReplayTiming::default());
    }

    #[test]
    fn percentiles_are_nearest_ranks_and_samples_stay_bounded() {
        let sorted: Vec<u64> = (1..=200).collect();
        assert_eq!((nearest_rank(&sorted, 50), nearest_rank(&sorted, 99)), (100, 198));
        assert_eq!((nearest_rank(&[7], 50), nearest_rank(&[7], 99), nearest_rank(&[], 50)), (7, 7, 0));
        let mut timer = OpTimer::default();
        let t0 = Instant::now();
        let count = MAX_LATENCY_SAMPLES as u64 * 3;
        for i in 0..count {
            timer.record("read", t0, t0 + Duration::from_nanos(i % 1000));
        }
        assert!(timer.samples.len() <= MAX_LATENCY_SAMPLES, "{}", timer.samples.len());
        assert!(timer.samples.len() >= MAX_LATENCY_SAMPLES / 2, "an even sample remains");
        let t = timer.timing();
        assert_eq!((t.ops, t.max_ns), (count, 999));
        assert_eq!((t.by_op["read"].count, t.by_op["read"].max_ns), (count, 999));
        assert!((450..=550).contains(&t.p50_ns), "{t:?}");
    }

    /// Random operations on a few names: never a panic, never anything outside the directory.
    #[test]
    fn live_replay_survives_random_traces() {
        let seed = match std::env::var("MCFS_SEED") {
            Ok(s) => s.trim().parse().expect("MCFS_SEED is a u64"),
            Err(_) => rand::random(),
        };
        println!("live_replay_survives_random_traces: seed {seed} (replay with MCFS_SEED={seed})");
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let outer = tempfile::tempdir().unwrap();
        let root = outer.path().join("root");
        fs::create_dir(&root).unwrap();
        let names = ["/a", "/b", "/a/b", "/../a", "/./b/../c", "/", "", "/c/d/e", "//a//b/"];
        let mut replayer = LiveReplayer::new(&root).unwrap();
        for _ in 0..2000 {
            let (from, to) = (p(names[rng.gen_range(0..names.len())]), p(names[rng.gen_range(0..names.len())]));
            let (offset, len) = (rng.gen_range(0..100_000), rng.gen_range(0..20_000));
            let path = || from.clone();
            let kind = match rng.gen_range(0..14) {
                0 => EventKind::Open { path: path() },
                1 => EventKind::Create { path: path() },
                2 => EventKind::Read { path: path(), offset, len },
                3 => EventKind::Write { path: path(), offset, len },
                4 => EventKind::Fsync { path: path() },
                5 => EventKind::Fdatasync { path: path() },
                6 => EventKind::Truncate { path: path(), size: offset },
                7 => EventKind::Unlink { path: path() },
                8 => EventKind::Rename { from: path(), to },
                9 => EventKind::Mkdir { path: path() },
                10 => EventKind::Rmdir { path: path() },
                11 => EventKind::Close { path: path() },
                12 => EventKind::Link { from: path(), to },
                _ => EventKind::Screen { on: true },
            };
            replayer.apply(&ev(kind));
        }
        let report = replayer.finish();
        assert_eq!(report.done + report.skipped + report.ignored, 2000);
        assert!(report.done > 0, "{report:?}");
        assert!(root.is_dir());
        let outside: Vec<_> = fs::read_dir(outer.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(outside, ["root"]);
    }
}
