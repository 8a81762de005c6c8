//! The replay core: drives the real `mcfs_core::Engine` with a trace, in virtual time.
//!
//! The engine runs over a `MemBackend` and a `ManualClock`. The first event's time is virtual time zero;
//! before each event the clock moves to the event's time, stopping at every deadline `next_tick_in` gives
//! on the way to run `tick` there, so background checkpoints happen at the virtual times a live mount's
//! background thread would run them. Invariants: the clock never goes back (an event stamped earlier than
//! the one before it runs at the current time and is counted), and no trace content makes the replay
//! panic: an operation the replay cannot map (unknown path) or that the engine refuses is skipped and
//! counted by kind and reason.

mod metrics;
mod paths;

pub use metrics::{AppMetrics, Metrics};

use crate::error::TraceError;
use crate::text::op_name;
use crate::trace::{EventKind, TraceEvent};
use mcfs_core::{Caller, Clock, Config, Engine, Errno, FileKind, Ino, ManualClock, MemBackend, RenameMode, SetAttr};
use paths::{normalize, split_last, PathTable};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;
use std::time::Duration;

/// The first app seen gets this uid, the next one more, and so on (Android's first app uid).
pub const FIRST_APP_UID: u32 = 10_000;
/// Largest piece of a read or write handed to the engine at once, so a long request never becomes one
/// huge buffer.
const CHUNK_BYTES: usize = 1 << 20;
/// Longest single read or write replayed. Apps do not issue longer ones; refusing them keeps one corrupt
/// length in a trace from stalling the replay for hours.
pub const MAX_REQUEST_BYTES: u64 = 64 << 20;
/// Largest file size; the kernel refuses to go past it before a file system sees the call (Linux's
/// `MAX_LFS_FILESIZE`).
const MAX_FILE_SIZE: u64 = i64::MAX as u64;
const FILE_PERM: u32 = 0o644;
const DIR_PERM: u32 = 0o755;

/// Why a replay stopped.
#[derive(Debug)]
pub enum ReplayError {
    /// The trace could not be read.
    Trace(TraceError),
    /// The engine could not start or could not shut down cleanly.
    Engine(String),
}

impl fmt::Display for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplayError::Trace(e) => write!(f, "reading the trace: {e}"),
            ReplayError::Engine(e) => write!(f, "engine: {e}"),
        }
    }
}

impl std::error::Error for ReplayError {}

/// Why one event was not replayed.
enum Skip {
    UnknownPath,
    Refused(Errno),
}

impl From<Errno> for Skip {
    fn from(e: Errno) -> Skip {
        Skip::Refused(e)
    }
}

pub struct Replayer {
    engine: Engine,
    clock: Arc<ManualClock>,
    backend: Arc<MemBackend>,
    config: Config,
    /// Trace time of the first event (virtual time zero).
    origin_ns: Option<u64>,
    /// Virtual time since the first event.
    now_ns: u64,
    /// Virtual time of the last event replayed.
    last_event_ns: u64,
    paths: PathTable,
    uids: HashMap<String, u32>,
    /// The bytes every write writes (a fixed pattern, so runs are reproducible).
    pattern: Vec<u8>,
    metrics: Metrics,
}

impl Replayer {
    pub fn new(config: Config) -> Result<Replayer, ReplayError> {
        let clock = Arc::new(ManualClock::new());
        let backend = Arc::new(MemBackend::new());
        backend.set_now(clock.now());
        let engine = Engine::start(backend.clone(), clock.clone(), config.clone()).map_err(ReplayError::Engine)?;
        Ok(Replayer {
            engine,
            clock,
            backend,
            config,
            origin_ns: None,
            now_ns: 0,
            last_event_ns: 0,
            paths: PathTable::new(),
            uids: HashMap::new(),
            pattern: (0..CHUNK_BYTES).map(|i| (i % 251) as u8).collect(),
            metrics: Metrics::default(),
        })
    }

    /// Replays a whole trace and shuts the engine down; stops at the first unreadable event.
    pub fn run<I>(config: Config, events: I) -> Result<Metrics, ReplayError>
    where
        I: IntoIterator<Item = Result<TraceEvent, TraceError>>,
    {
        let mut replayer = Replayer::new(config)?;
        for event in events {
            replayer.replay(&event.map_err(ReplayError::Trace)?);
        }
        replayer.finish()
    }

    /// Replays one event at its time (running the background ticks due before it).
    pub fn replay(&mut self, event: &TraceEvent) {
        let origin = *self.origin_ns.get_or_insert(event.time_ns);
        let at = event.time_ns.saturating_sub(origin);
        if event.time_ns < origin || at < self.now_ns {
            self.metrics.out_of_order_events += 1;
        }
        self.advance_to(at.max(self.now_ns));
        self.last_event_ns = self.now_ns;
        let kind = op_name(&event.kind);
        match self.apply(event) {
            Ok(()) => {
                self.metrics.events_replayed += 1;
                *self.metrics.replayed_by_kind.entry(kind).or_default() += 1;
            }
            Err(skip) => {
                self.metrics.events_skipped += 1;
                *self.metrics.skipped_by_kind.entry(kind).or_default() += 1;
                let reason = match skip {
                    Skip::UnknownPath => "unknown path".to_string(),
                    Skip::Refused(e) => e.to_string(),
                };
                *self.metrics.skip_reasons.entry(reason).or_default() += 1;
            }
        }
    }

    /// The engine being driven, to look at between events.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Shuts the engine down (committing everything) and reports.
    pub fn finish(mut self) -> Result<Metrics, ReplayError> {
        self.metrics.checkpoints_before_shutdown = self.engine.stats().checkpoints;
        self.engine.shutdown().map_err(|e| ReplayError::Engine(format!("shutdown failed: {e}")))?;
        let stats = self.engine.stats();
        self.metrics.take_engine_stats(&stats);
        self.metrics.virtual_ns = self.now_ns;
        for (app, uid) in self.uids {
            let engine_app = engine_app_name(&self.config, uid);
            let per_app = AppMetrics::new(uid, engine_app.clone(), stats.apps.get(&engine_app));
            self.metrics.apps.insert(app, per_app);
        }
        Ok(self.metrics)
    }

    /// Moves virtual time to `target_ns`, ticking at every engine deadline up to and including it.
    fn advance_to(&mut self, target_ns: u64) {
        let mut zero_waits = 0;
        loop {
            let wait_ns = u64::try_from(self.engine.next_tick_in().as_nanos()).unwrap_or(u64::MAX);
            // A tick with nothing to wait for clears the work that made the wait zero; a second zero in a
            // row means it could not, and waiting for the event keeps the replay from spinning.
            zero_waits = if wait_ns == 0 { zero_waits + 1 } else { 0 };
            let mut deadline = self.now_ns.saturating_add(wait_ns);
            if deadline > target_ns || zero_waits > 1 {
                break;
            }
            if wait_ns > 0 && target_ns - self.now_ns > wait_ns.saturating_mul(2) && self.engine_idle() {
                // The ticks until the event would find nothing to do: run only the last one (on the same
                // grid), so a long gap costs two ticks and policies still see one right before the event.
                deadline = target_ns - (target_ns - self.now_ns) % wait_ns;
            }
            self.set_time(deadline);
            self.engine.tick();
            self.metrics.ticks += 1;
        }
        self.set_time(target_ns);
    }

    /// Whether nothing waits to be committed: no app has an uncommitted entry and no page is dirty. Only
    /// asked after time has moved past the last event, so an entry made "now" cannot hide behind a zero age.
    fn engine_idle(&self) -> bool {
        if self.now_ns <= self.last_event_ns {
            return false;
        }
        let s = self.engine.stats();
        s.stale_bytes == 0 && s.stale_seconds == 0.0 && s.cache_dirty_bytes == 0
    }

    fn set_time(&mut self, ns: u64) {
        if ns > self.now_ns {
            self.clock.advance(Duration::from_nanos(ns - self.now_ns));
            self.backend.set_now(self.clock.now());
            self.now_ns = ns;
        }
    }

    fn caller_of(&mut self, event: &TraceEvent) -> Caller {
        let next = FIRST_APP_UID.saturating_add(self.uids.len() as u32);
        let uid = *self.uids.entry(event.app.clone()).or_insert(next);
        Caller { uid, gid: uid, pid: event.pid }
    }

    fn apply(&mut self, event: &TraceEvent) -> Result<(), Skip> {
        let caller = self.caller_of(event);
        let engine = &self.engine;
        match &event.kind {
            EventKind::Open { path } => self.open(self.resolve(path)?)?,
            EventKind::Create { path } => self.create(caller, key_of(path)?)?,
            EventKind::Read { path, offset, len } => self.read(self.resolve(path)?, *offset, *len)?,
            EventKind::Write { path, offset, len } => self.write(caller, self.resolve(path)?, *offset, *len)?,
            EventKind::Fsync { path } | EventKind::Fdatasync { path } => {
                engine.fsync(Some(caller), self.resolve(path)?)?
            }
            EventKind::Truncate { path, size } => {
                let ino = self.resolve(path)?;
                if *size > MAX_FILE_SIZE {
                    return Err(Skip::Refused(Errno::EFBIG));
                }
                let set = SetAttr { size: Some(*size), ..SetAttr::default() };
                engine.setattr(caller, ino, &set)?;
            }
            EventKind::Unlink { path } => self.remove(caller, path, false)?,
            EventKind::Rmdir { path } => self.remove(caller, path, true)?,
            EventKind::Rename { from, to } => self.rename(caller, from, to)?,
            EventKind::Mkdir { path } => {
                self.mkdir(caller, key_of(path)?)?;
            }
            EventKind::Close { path } => {
                let ino = self.resolve(path)?;
                if !self.is_dir(ino)? {
                    engine.release(ino);
                }
            }
            EventKind::Battery { percent } => engine.set_battery(*percent),
            // Counted only, until the idle predictor and scheduler take them (issue 3).
            EventKind::Input { .. }
            | EventKind::Launch
            | EventKind::Foreground
            | EventKind::Background
            | EventKind::Exit
            | EventKind::Screen { .. } => {}
        }
        Ok(())
    }

    /// Opens a file. Directories are not counted, as on the mount (its `opendir` opens nothing).
    fn open(&self, ino: Ino) -> Result<(), Errno> {
        if !self.is_dir(ino)? {
            self.engine.open_file(ino)?;
        }
        Ok(())
    }

    fn is_dir(&self, ino: Ino) -> Result<bool, Errno> {
        Ok(self.engine.getattr(ino)?.kind == FileKind::Dir)
    }

    /// Creates and opens a file, or opens the file already there (`O_CREAT` without `O_EXCL`).
    fn create(&mut self, caller: Caller, key: Vec<u8>) -> Result<(), Skip> {
        let (parent, name) = self.parent_of(&key, caller)?;
        let attr = self.engine.create(caller, parent, os(name), FILE_PERM, false)?;
        // The table holds one kernel reference per path; the engine took another.
        if self.paths.get(&key).is_some() {
            self.engine.forget(attr.ino, 1);
        } else {
            self.paths.insert(key, attr.ino);
        }
        Ok(())
    }

    fn resolve(&self, path: &[u8]) -> Result<Ino, Skip> {
        self.paths.get(&key_of(path)?).ok_or(Skip::UnknownPath)
    }

    /// The directory holding `key` (made on demand, as the app would have) and the last name of `key`.
    fn parent_of<'k>(&mut self, key: &'k [u8], caller: Caller) -> Result<(Ino, &'k [u8]), Skip> {
        let (parent, name) = split_last(key).ok_or(Skip::Refused(Errno::EEXIST))?;
        let parent_ino = match self.paths.get(parent) {
            Some(ino) => ino,
            None => self.mkdir(caller, parent.to_vec())?,
        };
        Ok((parent_ino, name))
    }

    /// Makes directory `key`, and its missing parents first.
    fn mkdir(&mut self, caller: Caller, key: Vec<u8>) -> Result<Ino, Skip> {
        let (parent, name) = self.parent_of(&key, caller)?;
        let attr = self.engine.mkdir(caller, parent, os(name), DIR_PERM)?;
        self.paths.insert(key, attr.ino);
        Ok(attr.ino)
    }

    fn remove(&mut self, caller: Caller, path: &[u8], dir: bool) -> Result<(), Skip> {
        let key = key_of(path)?;
        let ino = self.paths.get(&key).ok_or(Skip::UnknownPath)?;
        let (parent, name) = split_last(&key).ok_or(Skip::Refused(Errno::EINVAL))?;
        let parent = self.paths.get(parent).ok_or(Skip::UnknownPath)?;
        if dir {
            self.engine.rmdir(caller, parent, os(name))?;
        } else {
            self.engine.unlink(caller, parent, os(name))?;
        }
        self.paths.remove(&key);
        self.engine.forget(ino, 1);
        Ok(())
    }

    fn rename(&mut self, caller: Caller, from: &[u8], to: &[u8]) -> Result<(), Skip> {
        let (from, to) = (key_of(from)?, key_of(to)?);
        self.paths.get(&from).ok_or(Skip::UnknownPath)?;
        let (from_parent, from_name) = split_last(&from).ok_or(Skip::Refused(Errno::EINVAL))?;
        let from_parent = self.paths.get(from_parent).ok_or(Skip::UnknownPath)?;
        let (to_parent, to_name) = self.parent_of(&to, caller)?;
        self.engine.rename(caller, from_parent, os(from_name), to_parent, os(to_name), RenameMode::Replace)?;
        if let Some(replaced) = self.paths.rename(&from, &to) {
            self.engine.forget(replaced, 1);
        }
        Ok(())
    }

    fn read(&self, ino: Ino, offset: u64, len: u64) -> Result<(), Errno> {
        if len > MAX_REQUEST_BYTES {
            return Err(Errno::EINVAL);
        }
        let mut done = 0;
        while done < len {
            let want = (len - done).min(CHUNK_BYTES as u64);
            let got = self.engine.read(ino, offset.checked_add(done).ok_or(Errno::EINVAL)?, want as u32)?;
            if (got.len() as u64) < want {
                break;
            }
            done += want;
        }
        Ok(())
    }

    fn write(&self, caller: Caller, ino: Ino, offset: u64, len: u64) -> Result<(), Errno> {
        if len > MAX_REQUEST_BYTES || offset.checked_add(len).is_none_or(|end| end > MAX_FILE_SIZE) {
            return Err(Errno::EFBIG);
        }
        let mut done = 0;
        while done < len {
            let n = (len - done).min(CHUNK_BYTES as u64) as usize;
            self.engine.write(Some(caller), ino, offset + done, &self.pattern[..n])?;
            done += n as u64;
        }
        Ok(())
    }
}

/// The table key of a trace path. A path with a NUL byte cannot reach a kernel (it would end there), so
/// it is refused rather than cut.
fn key_of(path: &[u8]) -> Result<Vec<u8>, Skip> {
    if path.contains(&0) {
        return Err(Skip::Refused(Errno::EINVAL));
    }
    Ok(normalize(path))
}

fn os(name: &[u8]) -> &OsStr {
    OsStr::from_bytes(name)
}

/// The engine's name for the app of `uid`: the config's, if an app there lists the uid, else `uid:N`.
fn engine_app_name(config: &Config, uid: u32) -> String {
    match config.apps.iter().find(|a| a.uids.contains(&uid)) {
        Some(app) => app.name.clone(),
        None => format!("uid:{uid}"),
    }
}
