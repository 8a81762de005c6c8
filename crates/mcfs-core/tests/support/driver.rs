//! Runs a workload script on an engine over a `RecordingBackend` and the
//! reference model side by side, and records what the crash checks need:
//!
//! * for every step, the app whose write log it went to (and its position
//!   there), and how many backend ops had been issued when it returned;
//! * for every app, its VCT boundaries — observed as `vcts_closed` changes —
//!   each as the number of that app's logged steps it includes, and the
//!   app's `app<j>/` tree at that point;
//! * after every step, how many VCTs of each app were committed (durable),
//!   with the backend op count at that moment.
//!
//! Where a boundary falls, precisely: a dependency close (another app's
//! step touched this app's open VCT) happens before that step, but that
//! step is not in this app's log, so before and after are the same count.
//! A policy close after a `write`, a close in `tick`, `checkpoint()` and a
//! sync-mode fsync come after the step. The ambiguous case is a write that
//! checkpoints first — because it would take the app past its staleness
//! limit, or because the cache is full of dirty data — which closes the
//! writer's VCT *before* the write, while the policy may close it again
//! after. Seen from outside (a checkpoint ran during the write), such a
//! boundary is recorded as "before or after" (both accepted), unless
//! "before" would make it an empty VCT (the previous boundary stands for
//! exactly that count), which the engine never counts.
//!
//! After every step the engine's live view must equal the model's tree:
//! a difference is reported as a problem and ends the run.

use super::kernel_cache::KernelCache;
use super::model::{app_dir, Model};
use super::script::{write_data, Step, Target, APPS, UID_BASE};
use super::tree::{from_engine, subtree, Tree};
use mcfs_core::backend::RecordingBackend;
use mcfs_core::*;
use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// One step as it ran.
pub struct StepRecord {
    pub step: Step,
    /// The model refused it (only in shrunk or hand-written scripts).
    pub skipped: bool,
    /// (app, position in that app's write log) if the step was logged.
    pub log: Option<(usize, usize)>,
    /// Backend ops issued before the step started and when it returned.
    pub ops_before: usize,
    pub ops_after: usize,
    /// Committed transactions waiting in the journal to be applied, the
    /// most before or after the step.
    pub waiting: usize,
}

/// A VCT boundary of one app: the counts of that app's logged steps it may
/// stand for (one, or two when ambiguous), and the step that closed it.
pub struct Boundary {
    pub counts: Vec<usize>,
    pub step: Option<usize>,
}

pub struct Run {
    pub steps: Vec<StepRecord>,
    /// Per app, in closing order; entry 0 is the initial (empty) state.
    pub boundaries: Vec<Vec<Boundary>>,
    /// Per app: its `app<j>/` tree after a count of its logged steps, for
    /// every count some boundary stands for.
    pub app_states: Vec<HashMap<usize, Tree>>,
    /// (backend op count, committed VCTs per app) after each step.
    pub acks: Vec<(usize, Vec<u64>)>,
    pub recorder: Arc<RecordingBackend>,
    pub config: Config,
    /// The model when the engine mounted (after the steps before `mount`).
    pub initial: Model,
    /// The engine disagreed with the model (the run stopped there).
    pub problem: Option<String>,
}

/// Engine configurations the test rotates through, by name.
pub const VARIANTS: &[&str] = &["memory", "app2-sync", "tight-cache", "small-vcts", "idle-scheduled", "sync-point"];

pub fn config(variant: &str) -> Config {
    let app = |j: usize, mode: Option<SyncMode>| AppConfig {
        name: app_dir(j),
        uids: vec![UID_BASE + j as u32],
        mode,
        max_stale_bytes: None,
        max_stale_seconds: None,
    };
    let mut config = Config {
        max_stale_bytes: 32 * 1024,
        max_stale_seconds: 60.0,
        apps: (0..APPS).map(|j| app(j, None)).collect(),
        ..Config::default()
    };
    match variant {
        // Every append past a backing file's end goes in place (the
        // default waits for 64 KiB; these workloads write less).
        "memory" => config.append_in_place_bytes = 1,
        "app2-sync" => config.apps[2].mode = Some(SyncMode::Sync),
        // 24 pages: writers run into dirty data and checkpoint first.
        "tight-cache" => {
            config.cache_size = 24 * 4096;
            config.append_in_place_bytes = 1;
        }
        "small-vcts" => {
            config.append_in_place_bytes = 1;
            config.max_stale_bytes = 6 * 1024;
            config.max_stale_seconds = 10.0;
            config.checkpoint_segment_bytes = 4096;
            config.apps[1].mode = Some(SyncMode::Sync);
        }
        // Checkpoints wait for predicted idle time and the multi-app
        // scheduler commits apps' VCTs out of their closing order.
        "idle-scheduled" => {
            config.idle_predictor = "last-min".to_string();
            config.checkpoint_write_rate = 64.0 * 1024.0;
        }
        // The kernel's writeback cache reorders writes between sync points
        // (`kernel_cache`); no limit is ever reached (low battery lowers
        // the age limit), so every boundary falls at a sync point or where
        // another app's operation depends on the app's changes (the limits
        // are the documented exception).
        "sync-point" => {
            config.consistency = Consistency::SyncPoint;
            config.append_in_place_bytes = 1;
            config.max_stale_bytes = 1 << 30;
            config.max_stale_seconds = 1e9;
            config.low_battery_writeback_seconds = 1e9;
        }
        other => panic!("unknown variant {other}"),
    }
    config
}

/// Pages the emulated kernel puts in one write request at most (Linux: 256).
const PAGES_PER_WRITE: u64 = 2;

/// Writes `data` at `offset` as the kernel sends a buffered `write(2)`: the
/// partial first page of an unaligned write alone, then at most
/// `PAGES_PER_WRITE` pages a request; every piece but the last says more may
/// follow. The background thread runs between the first two pieces, so the
/// policy and the background ratio may close the writer's VCT in the middle
/// of the write (issue 10, item 5: that must not tear it).
fn write_in_pieces(e: &Engine, who: Caller, ino: Ino, offset: u64, data: &[u8]) -> FsResult<()> {
    const PAGE: u64 = 4096;
    let end = offset + data.len() as u64;
    let mut at = offset;
    while at < end {
        let first_page_end = (at / PAGE + 1) * PAGE;
        let piece_end = if !at.is_multiple_of(PAGE) { first_page_end } else { at + PAGES_PER_WRITE * PAGE }.min(end);
        let piece = if piece_end < end { Piece::MayContinue } else { Piece::Last };
        let bytes = &data[(at - offset) as usize..(piece_end - offset) as usize];
        if e.write_piece(Some(who), ino, at, bytes, piece)? as usize != bytes.len() {
            return Err(Errno::EIO);
        }
        if at == offset && piece == Piece::MayContinue {
            e.tick();
        }
        at = piece_end;
    }
    Ok(())
}

fn caller(app: usize) -> Caller {
    let uid = UID_BASE + app as u32;
    Caller { uid, gid: uid, pid: 100 + app as u32 }
}

/// A rename, exchange, unlink, rmdir or link: a sync point of its app in
/// sync-point mode (`Engine::sync_point`).
fn namespace_sync_point(step: &Step) -> bool {
    matches!(
        step,
        Step::Rename { .. }
            | Step::Exchange { .. }
            | Step::Unlink { .. }
            | Step::Rmdir { .. }
            | Step::Link { .. }
            | Step::LinkHandle { .. }
    )
}

/// Splits `a/b/c` into (`a/b`, `c`).
fn split(path: &str) -> (&str, &str) {
    path.rsplit_once('/').unwrap_or(("", path))
}

/// The engine, driven the way the FUSE adapter drives it: names resolved
/// with lookup (each reference given back with forget), files opened for
/// the duration of a path write, handles released and forgotten on close.
/// A sync point's app, the inodes and the directory entries it names.
type Touches<'s> = (usize, Vec<Ino>, Vec<(Ino, &'s OsStr)>);

struct Harness {
    engine: Engine,
    clock: Arc<ManualClock>,
    handles: HashMap<u32, Ino>,
    /// The kernel's writeback cache, in sync-point mode.
    kernel: Option<KernelCache>,
}

impl Harness {
    fn resolve(&self, app: usize, path: &str) -> FsResult<Ino> {
        let mut ino = ROOT_INO;
        for name in path.split('/').filter(|n| !n.is_empty()) {
            let attr = self.engine.lookup(caller(app), ino, OsStr::new(name))?;
            self.engine.forget(attr.ino, 1);
            ino = attr.ino;
        }
        Ok(ino)
    }

    fn parent_and_name<'p>(&self, app: usize, path: &'p str) -> FsResult<(Ino, &'p OsStr)> {
        let (dir, name) = split(path);
        Ok((self.resolve(app, dir)?, OsStr::new(name)))
    }

    fn file(&self, app: usize, target: &Target) -> FsResult<Ino> {
        match target {
            Target::Handle(h) => self.handles.get(h).copied().ok_or(Errno::EBADF),
            Target::Path(p) => self.resolve(app, p),
        }
    }

    /// What the kernel's writeback cache does before `step` reaches the
    /// engine (`kernel_cache`): hands pages over, or drops them.
    fn write_back_before(&mut self, step: &Step) -> FsResult<()> {
        let Some(mut kernel) = self.kernel.take() else { return Ok(()) };
        let done = self.kernel_before(&mut kernel, step);
        self.kernel = Some(kernel);
        done
    }

    fn kernel_before(&self, kernel: &mut KernelCache, step: &Step) -> FsResult<()> {
        let e = &self.engine;
        // The FUSE adapter hands everything over before an operation that
        // changes another app's file or would close another app's VCT
        // (`serve_ending`).
        if let Some((app, inos)) = self.touched_by(step) {
            if e.touches_other_apps(caller(app), &inos, &[]) {
                return kernel.hand_over_all(e);
            }
        }
        if namespace_sync_point(step) {
            return kernel.hand_over_all(e);
        }
        match step {
            Step::Fsync { .. } | Step::Checkpoint | Step::Shutdown => kernel.hand_over_all(e),
            // The kernel changes its cache only once the engine took the truncate (`apply`).
            Step::Truncate { .. } => Ok(()),
            Step::Punch { app, file: target, .. } | Step::ZeroRange { app, file: target, .. } => {
                kernel.hand_over_file(e, self.file(*app, target)?)
            }
            Step::Chmod { app, path, .. } => match self.resolve(*app, path) {
                Ok(ino) => kernel.hand_over_file(e, ino),
                Err(_) => Ok(()),
            },
            Step::Close { handle, .. } => match self.handles.get(handle) {
                Some(ino) => kernel.hand_over_file(e, *ino),
                None => Ok(()),
            },
            _ => kernel.write_back_some(e),
        }
    }

    /// The caller and the inodes a step that is no sync point changes, as
    /// far as another app's VCT may depend on them (the parent directory of
    /// a new name; the object of a setattr or an extended attribute).
    fn touched_by(&self, step: &Step) -> Option<(usize, Vec<Ino>)> {
        let parent = |app: usize, path: &str| self.resolve(app, split(path).0).ok();
        let (app, ino) = match step {
            Step::Mkdir { app, path, .. } | Step::Create { app, path, .. } | Step::Symlink { app, path, .. } => {
                (*app, parent(*app, path)?)
            }
            Step::Tmpfile { app, dir, .. } => (*app, self.resolve(*app, dir).ok()?),
            Step::Chmod { app, path, .. } | Step::SetXattr { app, path, .. } | Step::RemoveXattr { app, path, .. } => {
                (*app, self.resolve(*app, path).ok()?)
            }
            Step::Truncate { app, file, .. } => (*app, self.file(*app, file).ok()?),
            _ => return None,
        };
        Some((app, vec![ino]))
    }

    fn exec(&mut self, step: &Step) -> FsResult<()> {
        // The FUSE adapter hands nothing over before a sync point that
        // cannot close a VCT, and runs it placing none (`serve_ending`).
        if self.sync_point_without_handover(step) {
            if let Some(kernel) = self.kernel.as_mut() {
                kernel.write_back_some(&self.engine)?;
            }
            return Engine::without_boundary(|| self.apply(step));
        }
        self.write_back_before(step)?;
        self.apply(step)
    }

    /// Whether `step` is a sync point the adapter would serve without a
    /// handover: it changes no other app's file or open VCT, and its app's
    /// VCT cannot close there (`Engine::boundary_possible`). When a name
    /// does not resolve, the handover is kept.
    fn sync_point_without_handover(&self, step: &Step) -> bool {
        if self.kernel.is_none() {
            return false;
        }
        let Some((app, inos, entries)) = self.sync_point_touches(step) else { return false };
        let e = &self.engine;
        !e.touches_other_apps(caller(app), &inos, &entries) && !e.boundary_possible(caller(app))
    }

    /// The app of sync point `step` and what the adapter asks
    /// `touches_other_apps` about for it (`Touched`); `None` for any other
    /// step, or when a name does not resolve.
    fn sync_point_touches<'s>(&self, step: &'s Step) -> Option<Touches<'s>> {
        let (app, paths, ino): (usize, Vec<&str>, Option<Ino>) = match step {
            Step::Fsync { app, .. } => (*app, vec![], None),
            Step::Unlink { app, path } | Step::Rmdir { app, path } => (*app, vec![path], None),
            Step::Rename { app, from, to } | Step::Exchange { app, a: from, b: to } => (*app, vec![from, to], None),
            Step::Link { app, from, to } => (*app, vec![to], Some(self.resolve(*app, from).ok()?)),
            Step::LinkHandle { app, handle, to } => (*app, vec![to], Some(*self.handles.get(handle)?)),
            _ => return None,
        };
        let entries = paths.into_iter().map(|p| self.parent_and_name(app, p).ok()).collect::<Option<Vec<_>>>()?;
        let inos = ino.into_iter().chain(entries.iter().map(|(dir, _)| *dir)).collect();
        Some((app, inos, entries))
    }

    fn apply(&mut self, step: &Step) -> FsResult<()> {
        let e = &self.engine;
        match step {
            Step::Mkdir { app, path, perm } => {
                let (parent, name) = self.parent_and_name(*app, path)?;
                let attr = e.mkdir(caller(*app), parent, name, *perm)?;
                e.forget(attr.ino, 1);
            }
            Step::Rmdir { app, path } => {
                let (parent, name) = self.parent_and_name(*app, path)?;
                e.rmdir(caller(*app), parent, name)?;
            }
            Step::Create { app, path, perm, open } => {
                let (parent, name) = self.parent_and_name(*app, path)?;
                let ino = e.create(caller(*app), parent, name, *perm, true)?.ino;
                match open {
                    Some(h) => {
                        self.handles.insert(*h, ino);
                    }
                    None => {
                        e.release(ino);
                        e.forget(ino, 1);
                    }
                }
            }
            Step::Write { app, file, offset, len, pattern } => {
                let ino = self.file(*app, file)?;
                let by_path = matches!(file, Target::Path(_));
                if by_path {
                    e.open_file(ino)?;
                }
                let data = write_data(*pattern, *offset, *len);
                let written = match self.kernel.as_mut() {
                    // A path write closes its file at once: FLUSH hands its pages over.
                    Some(kernel) => kernel.write(e, ino, *offset, &data).and_then(|()| {
                        if by_path {
                            kernel.hand_over_file(e, ino)
                        } else {
                            Ok(())
                        }
                    }),
                    None => write_in_pieces(e, caller(*app), ino, *offset, &data),
                };
                if by_path {
                    e.release(ino);
                }
                written?;
            }
            Step::Truncate { app, file, size } => {
                let ino = self.file(*app, file)?;
                e.setattr(caller(*app), ino, &SetAttr { size: Some(*size), ..SetAttr::default() })?;
                // As FUSE does, only after the SETATTR succeeded: a refused
                // truncate leaves the kernel's size and dirty pages as they were.
                if let Some(kernel) = self.kernel.as_mut() {
                    kernel.truncate(ino, *size);
                }
            }
            Step::Punch { app, file, offset, len } => {
                let ino = self.file(*app, file)?;
                e.fallocate(ino, *offset, *len, libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE)?;
            }
            Step::ZeroRange { app, file, offset, len, keep_size } => {
                let ino = self.file(*app, file)?;
                let keep = if *keep_size { libc::FALLOC_FL_KEEP_SIZE } else { 0 };
                e.fallocate(ino, *offset, *len, libc::FALLOC_FL_ZERO_RANGE | keep)?;
            }
            Step::Tmpfile { app, dir, perm, handle } => {
                let parent = self.resolve(*app, dir)?;
                let ino = e.tmpfile(caller(*app), parent, *perm)?.ino;
                self.handles.insert(*handle, ino);
            }
            Step::LinkHandle { app, handle, to } => {
                let ino = self.handles.get(handle).copied().ok_or(Errno::EBADF)?;
                let (parent, name) = self.parent_and_name(*app, to)?;
                let attr = e.link(caller(*app), ino, parent, name)?;
                e.forget(attr.ino, 1);
            }
            Step::Chmod { app, path, perm } => {
                let ino = self.resolve(*app, path)?;
                e.setattr(caller(*app), ino, &SetAttr { perm: Some(*perm), ..SetAttr::default() })?;
            }
            Step::Rename { app, from, to } | Step::Exchange { app, a: from, b: to } => {
                let mode =
                    if matches!(step, Step::Exchange { .. }) { RenameMode::Exchange } else { RenameMode::Replace };
                let (p1, n1) = self.parent_and_name(*app, from)?;
                let (p2, n2) = self.parent_and_name(*app, to)?;
                e.rename(caller(*app), p1, n1, p2, n2, mode)?;
            }
            Step::SetXattr { app, path, name, pattern, len } => {
                let ino = self.resolve(*app, path)?;
                let value = write_data(*pattern, 0, *len);
                e.setxattr(caller(*app), ino, OsStr::new(name), &value, XattrMode::Any)?;
            }
            Step::RemoveXattr { app, path, name } => {
                let ino = self.resolve(*app, path)?;
                e.removexattr(caller(*app), ino, OsStr::new(name))?;
            }
            Step::Link { app, from, to } => {
                let ino = self.resolve(*app, from)?;
                let (parent, name) = self.parent_and_name(*app, to)?;
                let attr = e.link(caller(*app), ino, parent, name)?;
                e.forget(attr.ino, 1);
            }
            Step::Symlink { app, path, target } => {
                let (parent, name) = self.parent_and_name(*app, path)?;
                let attr = e.symlink(caller(*app), parent, name, OsStr::new(target))?;
                e.forget(attr.ino, 1);
            }
            Step::Unlink { app, path } => {
                let (parent, name) = self.parent_and_name(*app, path)?;
                e.unlink(caller(*app), parent, name)?;
            }
            Step::Fsync { app, file } => {
                let ino = self.file(*app, file)?;
                e.fsync(Some(caller(*app)), ino)?;
            }
            Step::Close { handle, .. } => {
                let ino = self.handles.remove(handle).ok_or(Errno::EBADF)?;
                e.release(ino);
                e.forget(ino, 1);
            }
            Step::Checkpoint => e.checkpoint()?,
            Step::Tick { seconds } => {
                self.clock.advance(Duration::from_secs(*seconds));
                e.tick();
            }
            Step::Input => e.user_input(),
            Step::Battery { percent } => e.set_battery(*percent),
            Step::Shutdown => e.shutdown()?,
            // The engine mounts once, at the first `mount` (see `run`).
            Step::Mount => {}
        }
        Ok(())
    }

    /// (VCTs closed, VCTs committed) per app, and checkpoints run.
    fn counters(&self) -> (Vec<u64>, Vec<u64>, u64) {
        let stats = self.engine.stats();
        let app = |j: usize| stats.apps.get(&app_dir(j)).cloned().unwrap_or_default();
        let closed = (0..APPS).map(|j| app(j).vcts_closed).collect();
        let committed = (0..APPS).map(|j| app(j).vcts_committed).collect();
        (closed, committed, stats.checkpoints)
    }
}

/// The backing store a run starts from.
#[derive(Clone, Copy, Debug)]
pub enum Start {
    /// Empty: the first mount makes `.mcfs/` while being recorded.
    Empty,
    /// Mounted once before (not recorded), as on every later mount.
    Mounted,
}

/// The store the engine is mounted on: `pre_mount` holds what the steps
/// before a `mount` step put there directly (data that predates the mount).
fn initial_store(pre_mount: MemBackend, start: Start) -> MemBackend {
    let store = Arc::new(pre_mount);
    if let Start::Mounted = start {
        let engine = Engine::start(store.clone(), Arc::new(ManualClock::new()), Config::default());
        engine.expect("the engine starts on an empty store").shutdown().expect("an idle engine stops");
    }
    MemBackend::clone(&store)
}

/// Makes a step before the mount directly in the backing store, owned by
/// its app as the engine would have left it.
fn apply_to_store(store: &MemBackend, step: &Step) -> std::io::Result<()> {
    let owner = |app: usize, path: &str| {
        let uid = UID_BASE + app as u32;
        store.set_owner(Path::new(path), uid, uid)
    };
    match step {
        Step::Mkdir { app, path, perm } => {
            store.create(Path::new(path), FileKind::Dir, *perm, 0)?;
            owner(*app, path)
        }
        Step::Create { app, path, perm, open: None } => {
            store.create(Path::new(path), FileKind::File, *perm, 0)?;
            owner(*app, path)
        }
        Step::Symlink { app, path, target } => {
            store.symlink(OsStr::new(target), Path::new(path))?;
            owner(*app, path)
        }
        Step::Write { file: Target::Path(p), offset, len, pattern, .. } => {
            store.write_at(Path::new(p), *offset, &write_data(*pattern, *offset, *len))
        }
        Step::Truncate { file: Target::Path(p), size, .. } => store.set_len(Path::new(p), *size),
        Step::Chmod { path, perm, .. } => store.set_perm(Path::new(path), *perm),
        Step::SetXattr { path, name, pattern, len, .. } => {
            store.set_xattr(Path::new(path), OsStr::new(name), &write_data(*pattern, 0, *len))
        }
        _ => Err(std::io::Error::other(format!("\"{step}\" cannot come before the mount"))),
    }
}

/// Runs `script` from `start` under `config`. Steps before a `mount` step
/// (if there is one) are made directly in the backing store: the engine
/// mounts a tree that already has data.
pub fn run(script: &[Step], config: Config, start: Start) -> Run {
    let mounted_at = script.iter().position(|s| *s == Step::Mount).unwrap_or(0);
    let mut model = Model::default();
    let pre_mount = MemBackend::new();
    let mut steps = Vec::new();
    let mut problem = None;
    for step in &script[..mounted_at] {
        let skipped = model.apply(step).is_err();
        if !skipped {
            if let Err(e) = apply_to_store(&pre_mount, step) {
                problem.get_or_insert(format!("before the mount: {step}: {e}"));
            }
        }
        steps.push(StepRecord { step: step.clone(), skipped, log: None, ops_before: 0, ops_after: 0, waiting: 0 });
    }
    let recorder = Arc::new(RecordingBackend::new(initial_store(pre_mount, start)));
    let clock = Arc::new(ManualClock::new());
    let initial = model.tree();
    let mut run = Run {
        steps,
        boundaries: (0..APPS).map(|_| vec![Boundary { counts: vec![0], step: None }]).collect(),
        app_states: (0..APPS).map(|j| HashMap::from([(0, subtree(&initial, &app_dir(j)))])).collect(),
        acks: Vec::new(),
        recorder: Arc::clone(&recorder),
        config: config.clone(),
        initial: model.clone(),
        problem,
    };
    if run.problem.is_some() {
        return run;
    }
    let engine = match Engine::start(recorder.clone(), clock.clone(), config) {
        Ok(engine) => engine,
        Err(e) => {
            run.problem = Some(format!("the engine does not start on the initial backing store: {e}"));
            return run;
        }
    };
    let kernel = (run.config.consistency == Consistency::SyncPoint).then(KernelCache::new);
    let mut harness = Harness { engine, clock, handles: HashMap::new(), kernel };
    let mut logged = [0usize; APPS];
    for (index, step) in script.iter().enumerate().skip(mounted_at) {
        let ops_before = recorder.op_count();
        let waiting = harness.engine.waiting_transactions().0;
        let mut record =
            StepRecord { step: step.clone(), skipped: false, log: None, ops_before, ops_after: ops_before, waiting };
        let before = model.tree();
        let refused_with = model.refused_with(step);
        let log_app = match refused_with.map_or_else(|| model.apply(step), |_| Ok(None)) {
            Ok(app) => app,
            Err(_) => {
                record.skipped = true;
                run.steps.push(record);
                continue;
            }
        };
        let (closed_before, _, checkpoints_before) = harness.counters();
        let result = harness.exec(step);
        record.ops_after = recorder.op_count();
        record.waiting = record.waiting.max(harness.engine.waiting_transactions().0);
        if let Some(app) = log_app {
            record.log = Some((app, logged[app]));
            logged[app] += 1;
        }
        run.steps.push(record);
        match (refused_with, result) {
            (None, Err(e)) => {
                run.problem = Some(format!("step {index} ({step}) failed in the engine: {e}; the model accepts it"));
                return run;
            }
            (Some(errno), result) if result != Err(Errno(errno)) => {
                run.problem = Some(format!(
                    "step {index} ({step}) gave {result:?} in the engine; the backing store's limits refuse it with {}",
                    Errno(errno)
                ));
                return run;
            }
            _ => {}
        }
        let (closed, committed, checkpoints) = harness.counters();
        let after = model.tree();
        for j in 0..APPS {
            let new_closes = (closed[j] - closed_before[j]) as usize;
            let ambiguous =
                matches!(step, Step::Write { .. }) && log_app == Some(j) && checkpoints > checkpoints_before;
            // In sync-point mode a namespace operation is a sync point of
            // its app, whose VCT may close before it (`Engine::sync_point`),
            // and after it if it changed another app's object
            // (`sync_points::after_changing_other_apps`).
            let closes_before = harness.kernel.is_some() && namespace_sync_point(step);
            let previous = run.boundaries[j].last().map(|b| b.counts.clone()).unwrap_or_default();
            for n in 0..new_closes {
                let count_after = logged[j];
                let count_before = count_after - usize::from(log_app == Some(j));
                let counts = match (ambiguous, n, new_closes) {
                    _ if closes_before => match (n, new_closes) {
                        (0, 1) if previous != [count_before] => vec![count_before, count_after],
                        (0, 1) => vec![count_after],
                        (0, _) => vec![count_before],
                        _ => vec![count_after],
                    },
                    (true, 0, 1) if previous != [count_before] => vec![count_before, count_after],
                    (true, 0, _) if new_closes > 1 => vec![count_before],
                    _ => vec![count_after],
                };
                for c in &counts {
                    let tree = if *c == count_after { &after } else { &before };
                    run.app_states[j].entry(*c).or_insert_with(|| subtree(tree, &app_dir(j)));
                }
                run.boundaries[j].push(Boundary { counts, step: Some(index) });
            }
        }
        run.acks.push((record_ops(&run), committed));
        if let Err(broken) = harness.engine.check_invariants() {
            run.problem = Some(format!("after step {index} ({step}) an engine invariant is broken: {broken}"));
            return run;
        }
        // With pages still in the kernel's cache the engine lags the apps.
        if harness.kernel.as_ref().is_some_and(|k| !k.is_clean()) {
            continue;
        }
        match from_engine(&harness.engine) {
            Ok(live) if live == after => {}
            Ok(live) => {
                let diff = super::tree::diff(&live, &after);
                run.problem = Some(format!(
                    "after step {index} ({step}) the engine shows a different tree (engine vs model):\n  {}",
                    diff.join("\n  ")
                ));
                return run;
            }
            Err(e) => {
                run.problem = Some(format!("after step {index} ({step}) the engine's tree cannot be read: {e}"));
                return run;
            }
        }
    }
    run
}

fn record_ops(run: &Run) -> usize {
    run.steps.last().map_or(0, |s| s.ops_after)
}
