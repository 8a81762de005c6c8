//! `mcfs mount --record FILE`: every file operation the mount serves, and
//! every user-input operation the daemon is told of, written to FILE as an
//! mcfs trace (docs/TRACE_FORMAT.md, "Recording a live mount"): the binary
//! form if the name ends in `.bin`, the text form otherwise. Events carry
//! the wall-clock time in nanoseconds since the epoch, the caller's app
//! (named as the engine names it) and pid, and the path below the mount
//! root, written with a leading `/`.
//!
//! Invariants: recording never changes or fails a file-system operation —
//! the first error writing the trace is logged once and recording stops
//! there; events are stamped and written under one lock, so file
//! operations appear in the order they were served and their times never
//! go back; after `finish` the file is complete.

use crate::user_input::InputOperation;
use mcfs_core::{Caller, Config, Engine, Ino};
use mcfs_fuse::{RequestObserver, ServedOp};
use mcfs_sim::binary::BinaryWriter;
use mcfs_sim::text::TextWriter;
use mcfs_sim::trace::{EventKind, PathBytes, TraceEvent};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, BufWriter};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A trace file whose name ends in `.bin` is written in the binary form.
pub const BINARY_EXTENSION: &str = "bin";

/// The app name of input operations, which belong to no app.
const NO_APP: &str = "-";

/// The trace file, created before the daemon starts so that a bad path is
/// reported on the user's terminal.
pub struct TraceFile {
    path: PathBuf,
    file: File,
}

impl TraceFile {
    /// Creates (or empties) `path`, which must lie outside the mount point
    /// and the backing directory (both canonical): a trace inside the mount
    /// would record its own writes without end.
    pub fn create(path: &Path, mountpoint: &Path, backing: &Path) -> Result<TraceFile, String> {
        let fail = |why: String| format!("trace file {}: {why}", path.display());
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return Err(fail("not a file name".into()));
        };
        let parent = if parent.as_os_str().is_empty() { Path::new(".") } else { parent };
        let parent = parent.canonicalize().map_err(|e| fail(format!("{}: {e}", parent.display())))?;
        let canonical = parent.join(name);
        for (role, dir) in [("mount point", mountpoint), ("backing directory", backing)] {
            if canonical.starts_with(dir) {
                return Err(fail(format!("is inside the {role} {}; record to a file elsewhere", dir.display())));
            }
        }
        let file = File::create(&canonical).map_err(|e| fail(e.to_string()))?;
        Ok(TraceFile { path: canonical, file })
    }
}

/// The trace form being written, through a buffer, in place — unlike the
/// all-or-nothing outputs of `mcfs trace`, so that a recording can be
/// followed while the mount runs and a killed daemon leaves what it wrote.
enum TraceWriter {
    Text(TextWriter<BufWriter<File>>),
    Binary(BinaryWriter<BufWriter<File>>),
}

impl TraceWriter {
    fn start(file: TraceFile) -> io::Result<TraceWriter> {
        let binary = file.path.extension() == Some(OsStr::new(BINARY_EXTENSION));
        let out = BufWriter::new(file.file);
        Ok(if binary { TraceWriter::Binary(BinaryWriter::new(out)?) } else { TraceWriter::Text(TextWriter::new(out)?) })
    }

    fn write(&mut self, event: &TraceEvent) -> io::Result<()> {
        match self {
            TraceWriter::Text(w) => w.write_event(event),
            TraceWriter::Binary(w) => w.write_event(event),
        }
    }

    fn finish(self) -> io::Result<()> {
        match self {
            TraceWriter::Text(w) => w.finish().map(drop),
            TraceWriter::Binary(w) => w.finish().map(drop),
        }
    }
}

struct Sink {
    writer: TraceWriter,
    events: u64,
}

/// The engine's name for the app of a uid: the configured app listing the
/// uid, else `uid:N` (as `mcfs stat` and `mcfs ctl mode` name it).
/// Paths of inodes resolved before, so that recording a write costs a hash
/// lookup rather than a walk up the namespace under the engine's lock.
/// Every operation that can change a resolved path (rename, unlink, rmdir)
/// empties it, and the generation keeps a resolution that raced with one
/// of them out of it.
#[derive(Default)]
struct PathCache {
    generation: u64,
    paths: HashMap<Ino, PathBytes>,
}

/// Bound on the cached paths: a long recording over many files starts over.
const MAX_CACHED_PATHS: usize = 1 << 16;

pub struct Recorder {
    engine: Arc<Engine>,
    /// Names apps as the engine does (`Config::app_name_of`).
    config: Config,
    path: PathBuf,
    paths: Mutex<PathCache>,
    /// False once recording stopped (finished or failed): operations then
    /// cost nothing more.
    active: AtomicBool,
    /// `None` once recording stopped.
    sink: Mutex<Option<Sink>>,
}

impl Recorder {
    /// Starts the trace (writes its header).
    pub fn start(file: TraceFile, engine: Arc<Engine>, config: &Config) -> Result<Recorder, String> {
        let path = file.path.clone();
        let writer = TraceWriter::start(file).map_err(|e| format!("trace file {}: {e}", path.display()))?;
        Ok(Recorder {
            engine,
            config: config.clone(),
            path,
            paths: Mutex::default(),
            active: AtomicBool::new(true),
            sink: Mutex::new(Some(Sink { writer, events: 0 })),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A user operation, stamped with its start (so it may be written a
    /// little after file operations that came later).
    pub fn record_input(&self, operation: &InputOperation) {
        let kind = EventKind::Input { input: operation.kind(), duration_ns: nanos(operation.duration) };
        self.append(Some(operation.start), NO_APP.to_string(), 0, vec![kind]);
    }

    /// Flushes and closes the trace; returns how many events it holds.
    /// Events arriving later are dropped.
    pub fn finish(&self) -> Result<u64, String> {
        self.active.store(false, Ordering::SeqCst);
        let sink = self.sink.lock().unwrap_or_else(|p| p.into_inner()).take();
        let Some(sink) = sink else {
            return Err(format!("trace file {}: recording had stopped after an error", self.path.display()));
        };
        sink.writer.finish().map_err(|e| format!("trace file {}: {e}", self.path.display()))?;
        Ok(sink.events)
    }

    /// Writes `kinds` as events of `app`/`pid`, stamped `at` or, for `None`, now.
    fn append(&self, at: Option<SystemTime>, app: String, pid: u32, kinds: Vec<EventKind>) {
        let mut guard = self.sink.lock().unwrap_or_else(|p| p.into_inner());
        let Some(sink) = guard.as_mut() else { return };
        let time_ns = nanos(at.unwrap_or_else(SystemTime::now).duration_since(UNIX_EPOCH).unwrap_or_default());
        let mut event = TraceEvent { time_ns, app: app.into(), pid, kind: EventKind::Launch };
        for kind in kinds {
            event.kind = kind;
            if let Err(e) = sink.writer.write(&event) {
                tracing::error!("trace file {}: {e}; recording stopped", self.path.display());
                self.active.store(false, Ordering::SeqCst);
                *guard = None;
                return;
            }
            sink.events += 1;
        }
    }

    /// The trace path of `ino`: its path below the mount root, with a leading `/`.
    fn path_of(&self, ino: Ino) -> Option<PathBytes> {
        let generation = {
            let cache = self.paths.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(path) = cache.paths.get(&ino) {
                return Some(path.clone());
            }
            cache.generation
        };
        let below = self.engine.path_of(ino)?;
        let path: PathBytes = [b"/", below.as_os_str().as_bytes()].concat().into();
        let mut cache = self.paths.lock().unwrap_or_else(|p| p.into_inner());
        if cache.generation == generation {
            if cache.paths.len() >= MAX_CACHED_PATHS {
                cache.paths.clear();
            }
            cache.paths.insert(ino, path.clone());
        }
        Some(path)
    }

    fn forget_paths(&self) {
        let mut cache = self.paths.lock().unwrap_or_else(|p| p.into_inner());
        cache.generation += 1;
        cache.paths.clear();
    }
}

impl RequestObserver for Recorder {
    fn served(&self, caller: Option<Caller>, op: ServedOp<'_>) {
        if !self.active.load(Ordering::Relaxed) {
            return;
        }
        if matches!(op, ServedOp::Rename { .. } | ServedOp::Unlink { .. } | ServedOp::Rmdir { .. }) {
            self.forget_paths();
        }
        let Some(kinds) = trace_events(op, |ino| self.path_of(ino)) else {
            tracing::trace!("not recorded (no trace path or no trace event for it): {op:?}");
            return;
        };
        // A write the kernel flushes on nobody's behalf is charged, as the
        // engine charges it, to the file's app: the one of its owner.
        let (uid, pid) = match caller {
            Some(c) => (c.uid, c.pid),
            None => (inode_of(op).and_then(|ino| self.engine.getattr(ino).ok()).map_or(0, |a| a.uid), 0),
        };
        self.append(None, self.config.app_name_of(uid), pid, kinds);
    }
}

/// The trace events of one served operation; `None` when one of its paths
/// is unknown (the file was unlinked meanwhile) or the format has no event
/// for it (`RENAME_EXCHANGE`). The source of a link is the file's path as
/// resolved before (cached) or now; when that is the new name itself (a
/// second name in the same directory that sorts first, and the file not
/// resolved before), the link is not written rather than written as a
/// link of a name to itself.
fn trace_events(op: ServedOp<'_>, path_of: impl Fn(Ino) -> Option<PathBytes>) -> Option<Vec<EventKind>> {
    let entry = |parent: Ino, name: &OsStr| {
        let parent = path_of(parent)?;
        let slash: &[u8] = if parent.last() == Some(&b'/') { b"" } else { b"/" };
        Some([&parent[..], slash, name.as_bytes()].concat().into())
    };
    Some(match op {
        ServedOp::Open { ino } => vec![EventKind::Open { path: path_of(ino)? }],
        // An `O_TRUNC` create of an existing file is a create followed by a truncation to 0, as the
        // strace importer writes it.
        ServedOp::Create { ino, truncated } => {
            let path = path_of(ino)?;
            let mut events = vec![EventKind::Create { path: path.clone() }];
            if truncated {
                events.push(EventKind::Truncate { path, size: 0 });
            }
            events
        }
        ServedOp::Read { ino, offset, len } => vec![EventKind::Read { path: path_of(ino)?, offset, len }],
        ServedOp::Write { ino, offset, len } => vec![EventKind::Write { path: path_of(ino)?, offset, len }],
        ServedOp::Fsync { ino, datasync: false } => vec![EventKind::Fsync { path: path_of(ino)? }],
        ServedOp::Fsync { ino, datasync: true } => vec![EventKind::Fdatasync { path: path_of(ino)? }],
        ServedOp::Truncate { ino, size } => vec![EventKind::Truncate { path: path_of(ino)?, size }],
        ServedOp::Unlink { parent, name } => vec![EventKind::Unlink { path: entry(parent, name)? }],
        ServedOp::Rename { exchange: true, .. } => return None,
        ServedOp::Rename { parent, name, new_parent, new_name, exchange: false } => {
            vec![EventKind::Rename { from: entry(parent, name)?, to: entry(new_parent, new_name)? }]
        }
        ServedOp::Link { ino, new_parent, new_name } => {
            let (from, to) = (path_of(ino)?, entry(new_parent, new_name)?);
            if from == to {
                return None;
            }
            vec![EventKind::Link { from, to }]
        }
        ServedOp::Mkdir { ino } => vec![EventKind::Mkdir { path: path_of(ino)? }],
        ServedOp::Rmdir { parent, name } => vec![EventKind::Rmdir { path: entry(parent, name)? }],
        ServedOp::Close { ino } => vec![EventKind::Close { path: path_of(ino)? }],
    })
}

/// The file an operation acts on, for operations that name one by inode.
fn inode_of(op: ServedOp<'_>) -> Option<Ino> {
    match op {
        ServedOp::Open { ino, .. }
        | ServedOp::Create { ino, .. }
        | ServedOp::Read { ino, .. }
        | ServedOp::Write { ino, .. }
        | ServedOp::Fsync { ino, .. }
        | ServedOp::Truncate { ino, .. }
        | ServedOp::Link { ino, .. }
        | ServedOp::Mkdir { ino }
        | ServedOp::Close { ino } => Some(ino),
        ServedOp::Unlink { .. } | ServedOp::Rename { .. } | ServedOp::Rmdir { .. } => None,
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcfs_core::{AppConfig, ManualClock, MemBackend, ROOT_INO};
    use mcfs_sim::binary::BinaryReader;
    use mcfs_sim::text::TextReader;
    use mcfs_sim::trace::InputKind;
    use std::io::BufReader;

    fn config() -> Config {
        let mail = AppConfig {
            name: "mail".into(),
            uids: vec![10_001],
            mode: None,
            max_stale_bytes: None,
            max_stale_seconds: None,
        };
        Config { apps: vec![mail], ..Config::default() }
    }

    fn engine() -> Arc<Engine> {
        Arc::new(Engine::start(Arc::new(MemBackend::new()), Arc::new(ManualClock::new()), config()).unwrap())
    }

    fn caller(uid: u32, pid: u32) -> Option<Caller> {
        Some(Caller { uid, gid: uid, pid })
    }

    fn read_back(path: &Path) -> Vec<TraceEvent> {
        let file = BufReader::new(File::open(path).unwrap());
        if path.extension() == Some(OsStr::new("bin")) {
            BinaryReader::new(file).collect::<Result<_, _>>().unwrap()
        } else {
            TextReader::new(file).collect::<Result<_, _>>().unwrap()
        }
    }

    /// Serves a few operations through a recorder writing `name`, then reads the trace back.
    fn record_some(name: &str) -> Vec<TraceEvent> {
        let dir = tempfile::tempdir().unwrap();
        let (mnt, backing) = (dir.path().join("mnt"), dir.path().join("backing"));
        let engine = engine();
        let path = dir.path().join(name);
        let file = TraceFile::create(&path, &mnt, &backing).unwrap();
        let recorder = Recorder::start(file, engine.clone(), &config()).unwrap();

        let c = Caller { uid: 10_001, gid: 10_001, pid: 42 };
        let d = engine.mkdir(c, ROOT_INO, OsStr::new("d"), 0o755).unwrap();
        recorder.served(caller(10_001, 42), ServedOp::Mkdir { ino: d.ino });
        let f = engine.create(c, d.ino, OsStr::new("f"), 0o644, false).unwrap();
        recorder.served(caller(10_001, 42), ServedOp::Create { ino: f.ino, truncated: true });
        recorder.served(None, ServedOp::Write { ino: f.ino, offset: 4096, len: 100 });
        recorder.served(caller(10_002, 7), ServedOp::Read { ino: f.ino, offset: 0, len: 10 });
        recorder.served(caller(10_002, 7), ServedOp::Fsync { ino: f.ino, datasync: true });
        engine.rename(c, d.ino, OsStr::new("f"), ROOT_INO, OsStr::new("g"), mcfs_core::RenameMode::Replace).unwrap();
        let renamed = |exchange| ServedOp::Rename {
            parent: d.ino,
            name: OsStr::new("f"),
            new_parent: ROOT_INO,
            new_name: OsStr::new("g"),
            exchange,
        };
        recorder.served(caller(10_001, 42), renamed(false));
        recorder.served(caller(10_001, 42), renamed(true));
        recorder.served(caller(10_001, 42), ServedOp::Close { ino: f.ino });
        let start = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        recorder.record_input(&InputOperation { start, duration: Duration::from_millis(300), reports: 20 });
        engine.unlink(c, ROOT_INO, OsStr::new("g")).unwrap();
        recorder.served(caller(10_001, 42), ServedOp::Unlink { parent: ROOT_INO, name: OsStr::new("g") });
        // Unlinked: its path is gone, so there is nothing to record.
        recorder.served(caller(10_001, 42), ServedOp::Write { ino: f.ino, offset: 0, len: 1 });
        assert_eq!(recorder.finish().unwrap(), 10);
        recorder.served(caller(10_001, 42), ServedOp::Mkdir { ino: d.ino });
        read_back(&path)
    }

    fn check_recording(events: &[TraceEvent]) {
        let p = |s: &str| PathBytes::from(s.as_bytes());
        let got: Vec<(&str, u32, &EventKind)> = events.iter().map(|e| (&*e.app, e.pid, &e.kind)).collect();
        let want = [
            ("mail", 42, EventKind::Mkdir { path: p("/d") }),
            ("mail", 42, EventKind::Create { path: p("/d/f") }),
            ("mail", 42, EventKind::Truncate { path: p("/d/f"), size: 0 }),
            ("mail", 0, EventKind::Write { path: p("/d/f"), offset: 4096, len: 100 }),
            ("uid:10002", 7, EventKind::Read { path: p("/d/f"), offset: 0, len: 10 }),
            ("uid:10002", 7, EventKind::Fdatasync { path: p("/d/f") }),
            ("mail", 42, EventKind::Rename { from: p("/d/f"), to: p("/g") }),
            ("mail", 42, EventKind::Close { path: p("/g") }),
            ("-", 0, EventKind::Input { input: InputKind::Drag, duration_ns: 300_000_000 }),
            ("mail", 42, EventKind::Unlink { path: p("/g") }),
        ];
        let want: Vec<(&str, u32, &EventKind)> = want.iter().map(|(a, pid, k)| (*a, *pid, k)).collect();
        assert_eq!(got, want);
        let file_ops: Vec<u64> = events.iter().filter(|e| &*e.app != NO_APP).map(|e| e.time_ns).collect();
        assert!(file_ops.windows(2).all(|w| w[0] <= w[1]), "times never go back: {file_ops:?}");
        let now = nanos(SystemTime::now().duration_since(UNIX_EPOCH).unwrap());
        assert!(file_ops[0] > now - 3600 * 1_000_000_000 && file_ops[0] <= now, "wall-clock nanoseconds");
        assert_eq!(events[8].time_ns, 1_700_000_000 * 1_000_000_000, "an input is stamped with its start");
    }

    #[test]
    fn text_recording_holds_the_served_operations_with_paths_apps_and_pids() {
        check_recording(&record_some("trace.txt"));
    }

    #[test]
    fn a_bin_name_gets_the_binary_form() {
        check_recording(&record_some("trace.bin"));
    }

    /// A recorder over a fresh engine, writing `DIR/t`.
    fn recording(dir: &Path) -> (PathBuf, Arc<Engine>, Recorder) {
        let path = dir.join("t");
        let engine = engine();
        let file = TraceFile::create(&path, &dir.join("m"), &dir.join("b")).unwrap();
        let recorder = Recorder::start(file, engine.clone(), &config()).unwrap();
        (path, engine, recorder)
    }

    #[test]
    fn paths_follow_a_renamed_directory() {
        let dir = tempfile::tempdir().unwrap();
        let (path, engine, recorder) = recording(dir.path());
        let c = Caller { uid: 1, gid: 1, pid: 1 };
        let d = engine.mkdir(c, ROOT_INO, OsStr::new("d"), 0o755).unwrap();
        let f = engine.create(c, d.ino, OsStr::new("f"), 0o644, false).unwrap();
        let write = ServedOp::Write { ino: f.ino, offset: 0, len: 1 };
        recorder.served(Some(c), write);
        engine.rename(c, ROOT_INO, OsStr::new("d"), ROOT_INO, OsStr::new("e"), mcfs_core::RenameMode::Replace).unwrap();
        let rename = ServedOp::Rename {
            parent: ROOT_INO,
            name: OsStr::new("d"),
            new_parent: ROOT_INO,
            new_name: OsStr::new("e"),
            exchange: false,
        };
        recorder.served(Some(c), rename);
        recorder.served(Some(c), write);
        recorder.finish().unwrap();
        let paths: Vec<EventKind> = read_back(&path).into_iter().map(|e| e.kind).collect();
        let p = |s: &str| PathBytes::from(s.as_bytes());
        assert_eq!(
            paths,
            [
                EventKind::Write { path: p("/d/f"), offset: 0, len: 1 },
                EventKind::Rename { from: p("/d"), to: p("/e") },
                EventKind::Write { path: p("/e/f"), offset: 0, len: 1 },
            ]
        );
    }

    /// git's pattern: an object written under a temporary name, linked to its final name, the first name
    /// unlinked; and a second name in the same directory that sorts before the first one, unresolved.
    #[test]
    fn links_are_recorded_with_the_name_the_file_had() {
        let dir = tempfile::tempdir().unwrap();
        let (path, engine, recorder) = recording(dir.path());
        let c = Caller { uid: 1, gid: 1, pid: 1 };
        let objects = engine.mkdir(c, ROOT_INO, OsStr::new("objects"), 0o755).unwrap();
        let ab = engine.mkdir(c, objects.ino, OsStr::new("ab"), 0o755).unwrap();
        let tmp = engine.create(c, objects.ino, OsStr::new("tmp_obj"), 0o644, false).unwrap();
        recorder.served(Some(c), ServedOp::Create { ino: tmp.ino, truncated: false });
        let link = |ino, new_parent, new_name| {
            engine.link(c, ino, new_parent, OsStr::new(new_name)).unwrap();
            recorder.served(Some(c), ServedOp::Link { ino, new_parent, new_name: OsStr::new(new_name) });
        };
        link(tmp.ino, ab.ino, "cdef");
        engine.unlink(c, objects.ino, OsStr::new("tmp_obj")).unwrap();
        recorder.served(Some(c), ServedOp::Unlink { parent: objects.ino, name: OsStr::new("tmp_obj") });
        // Nothing resolved `other` before its link, and its new name sorts first in the same directory.
        let other = engine.create(c, objects.ino, OsStr::new("zz"), 0o644, false).unwrap();
        link(other.ino, objects.ino, "aa");
        recorder.finish().unwrap();
        let kinds: Vec<EventKind> = read_back(&path).into_iter().map(|e| e.kind).collect();
        let p = |s: &str| PathBytes::from(s.as_bytes());
        assert_eq!(
            kinds,
            [
                EventKind::Create { path: p("/objects/tmp_obj") },
                EventKind::Link { from: p("/objects/tmp_obj"), to: p("/objects/ab/cdef") },
                EventKind::Unlink { path: p("/objects/tmp_obj") },
            ]
        );
    }

    #[test]
    fn a_write_error_stops_recording_once_and_never_fails_the_operation() {
        let dir = tempfile::tempdir().unwrap();
        let file = TraceFile::create(Path::new("/dev/full"), &dir.path().join("m"), &dir.path().join("b")).unwrap();
        let engine = engine();
        let recorder = Recorder::start(file, engine.clone(), &config()).unwrap();
        // More than the buffer holds, so a write reaches the device and fails.
        for _ in 0..10_000 {
            recorder.served(caller(1, 1), ServedOp::Read { ino: ROOT_INO, offset: 0, len: 1 });
        }
        assert!(!recorder.active.load(Ordering::SeqCst), "recording stopped");
        let err = recorder.finish().unwrap_err();
        assert!(err.contains("/dev/full") && err.contains("stopped after an error"), "{err}");
    }

    #[test]
    fn a_trace_inside_the_mount_or_the_backing_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let (mnt, backing) = (root.join("mnt"), root.join("backing"));
        std::fs::create_dir_all(mnt.join("sub")).unwrap();
        std::fs::create_dir(&backing).unwrap();
        let err = TraceFile::create(&mnt.join("sub/../t"), &mnt, &backing).err().unwrap();
        assert!(err.contains("is inside the mount point"), "{err}");
        let err = TraceFile::create(&backing.join("t"), &mnt, &backing).err().unwrap();
        assert!(err.contains("is inside the backing directory"), "{err}");
        let err = TraceFile::create(&root.join("no/t"), &mnt, &backing).err().unwrap();
        assert!(err.starts_with(&format!("trace file {}: ", root.join("no/t").display())), "{err}");
        assert!(err.contains("No such file"), "{err}");
        TraceFile::create(&root.join("t"), &mnt, &backing).unwrap();
        assert!(root.join("t").is_file());
    }
}
