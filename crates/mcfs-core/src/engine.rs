//! `Engine`: the one entry point front ends use. Every call takes the state
//! lock, does its work in memory (loading from the backing store on a miss),
//! and returns; checkpoints run under their own lock and hold the state lock
//! only to pick and to finish their batch (see `checkpoint`).

use crate::app_status::IoClass;
use crate::backend::Backend;
use crate::checkpoint::{CheckpointCounters, Trigger};
use crate::clock::Clock;
use crate::committed::Committed;
use crate::config::{Config, SyncMode};
use crate::dispatch::{Dispatcher, Switches};
use crate::file_io::Room;
use crate::inode::Inode;
use crate::journal::{self, Journal};
use crate::policy::interval;
use crate::policy::prediction_score::ScoredPredictor;
use crate::state::{attr_from_backend, State, Store};
use crate::stats::Stats;
use crate::types::*;
use crate::vct::{AppId, LogEntry};
use crate::STATE_DIR;
use parking_lot::{Condvar, Mutex, RwLock};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub struct Engine {
    pub(crate) state: Mutex<State>,
    pub(crate) tree: RwLock<Committed>,
    pub(crate) backend: Arc<dyn Backend>,
    pub(crate) clock: Arc<dyn Clock>,
    /// The journal; holding it is holding the right to checkpoint.
    pub(crate) journal: Mutex<Journal>,
    pub(crate) preserve_owner: bool,
    pub(crate) counters: Mutex<CheckpointCounters>,
    /// A committed batch whose in-place apply failed (retried first).
    pub(crate) unapplied: Mutex<Vec<crate::vct::ClosedVct>>,
    /// Ops the backing store refused for good, and the errors owed for them.
    pub(crate) refused: Mutex<crate::refused::Refused>,
    /// Wakes the background thread when a VCT closes or on shutdown.
    pub(crate) wake: (Mutex<bool>, Condvar),
    /// The user-idle predictor (`idle_predictor`), with its score.
    pub(crate) idle: Mutex<Option<ScoredPredictor>>,
    /// Foreground-first admission and yielding (FastTrack).
    pub(crate) dispatch: Dispatcher,
}

const NAME_MAX: usize = 255;

/// What `mknod`, `mkdir`, `symlink` and `create` make.
struct NewNode<'a> {
    kind: FileKind,
    perm: u32,
    rdev: u32,
    target: Option<&'a OsStr>,
}

pub(crate) fn check_name(parent: Ino, name: &OsStr) -> FsResult<()> {
    if name.len() > NAME_MAX {
        return Err(Errno::ENAMETOOLONG);
    }
    if name.is_empty() || name.as_encoded_bytes().iter().any(|b| *b == b'/' || *b == 0) {
        return Err(Errno::EINVAL);
    }
    if parent == ROOT_INO && name == STATE_DIR {
        return Err(Errno::EPERM);
    }
    Ok(())
}

impl Engine {
    /// Opens the backing store: runs recovery, then loads the root.
    /// The error names the file and the cause.
    pub fn start(backend: Arc<dyn Backend>, clock: Arc<dyn Clock>, config: Config) -> Result<Engine, String> {
        config.validate()?;
        let report = journal::recover(&*backend).map_err(|e| format!("recovery of {STATE_DIR}/ failed: {e}"))?;
        if report.replayed.as_ref().is_some_and(|r| !r.unapplied.is_empty()) {
            tracing::warn!("recovery: {report}");
        }
        tracing::info!(?report, "recovery done");
        let root = backend.stat(Path::new("")).map_err(|e| format!("backing root: {e}"))?;
        if root.kind != FileKind::Dir {
            return Err("backing root is not a directory".into());
        }
        let mut journal = Journal::open(Arc::clone(&backend)).map_err(|e| format!("{STATE_DIR}/journal: {e}"))?;
        journal.set_segment_bytes(config.checkpoint_segment_bytes);
        let mut root_inode = Inode::new(attr_from_backend(ROOT_INO, &root), 0, ROOT_INO);
        root_inode.children = None;
        root_inode.lookups = 1;
        let idle = interval::by_name(&config.idle_predictor).map(ScoredPredictor::new);
        let fasttrack = &config.fasttrack;
        let switches = Switches { preempt_requests: fasttrack.preempt, hold_checkpoints: fasttrack.dispatch };
        let anticipation = if clock.moves_by_itself() { fasttrack.anticipation_ms } else { 0 };
        let dispatch = Dispatcher::new(Arc::clone(&clock), Duration::from_millis(fasttrack.aging_ms), switches)
            .with_anticipation(Duration::from_millis(anticipation));
        let mut state = State::new(config, root_inode);
        let app = state.app_of_uid(root.uid);
        state.inodes.get_mut(&ROOT_INO).expect("root").app = app;
        Ok(Engine {
            state: Mutex::new(state),
            tree: RwLock::new(Committed::default()),
            backend,
            clock,
            journal: Mutex::new(journal),
            // SAFETY: geteuid has no preconditions.
            preserve_owner: unsafe { libc::geteuid() } == 0,
            counters: Mutex::new(CheckpointCounters::default()),
            unapplied: Mutex::new(Vec::new()),
            refused: Mutex::new(Default::default()),
            wake: (Mutex::new(false), Condvar::new()),
            idle: Mutex::new(idle),
            dispatch,
        })
    }

    pub(crate) fn store(&self) -> Store<'_> {
        Store { backend: &*self.backend, tree: &self.tree }
    }

    /// Looks up `name` in `parent` and takes one kernel reference on the result.
    pub fn lookup(&self, _caller: Caller, parent: Ino, name: &OsStr) -> FsResult<Attr> {
        if name.len() > NAME_MAX {
            return Err(Errno::ENAMETOOLONG);
        }
        if parent == ROOT_INO && name == STATE_DIR {
            return Err(Errno::ENOENT);
        }
        let mut st = self.state.lock();
        let ino = st.find(&self.store(), parent, name)?.ok_or(Errno::ENOENT)?;
        let inode = st.inode_mut(ino)?;
        inode.lookups += 1;
        Ok(inode.attr.clone())
    }

    /// Drops `n` kernel references.
    pub fn forget(&self, ino: Ino, n: u64) {
        let mut st = self.state.lock();
        if let Some(inode) = st.inodes.get_mut(&ino) {
            inode.lookups = inode.lookups.saturating_sub(n);
            st.drop_if_unreferenced(ino, &self.tree);
        }
    }

    pub fn getattr(&self, ino: Ino) -> FsResult<Attr> {
        Ok(self.state.lock().inode(ino)?.attr.clone())
    }

    pub fn setattr(&self, caller: Caller, ino: Ino, set: &SetAttr) -> FsResult<Attr> {
        let now = self.clock.now();
        let mut st = self.state.lock();
        st.inode(ino)?;
        if let Some(size) = set.size {
            st.truncate(ino, size, now)?;
        }
        let app = st.app_of_uid(caller.uid);
        let mut entries = Vec::new();
        let inode = st.inode_mut(ino)?;
        let old_perm = inode.attr.perm;
        if let Some(perm) = set.perm {
            inode.attr.perm = perm & 0o7777;
        }
        if set.uid.is_some() || set.gid.is_some() {
            inode.attr.uid = set.uid.unwrap_or(inode.attr.uid);
            inode.attr.gid = set.gid.unwrap_or(inode.attr.gid);
            if inode.attr.kind != FileKind::Dir {
                // chown drops set-user-id, and set-group-id on group-executables (Linux).
                let mut kill = libc::S_ISUID;
                if inode.attr.perm & libc::S_IXGRP != 0 {
                    kill |= libc::S_ISGID;
                }
                inode.attr.perm &= !kill;
            }
            entries.push(LogEntry::SetOwner { ino, uid: inode.attr.uid, gid: inode.attr.gid });
        }
        if inode.attr.perm != old_perm || set.perm.is_some() {
            entries.push(LogEntry::SetPerm { ino, perm: inode.attr.perm });
        }
        let time = |t: SetTime| match t {
            SetTime::At(t) => t,
            SetTime::Now => now,
        };
        if let Some(t) = set.atime {
            inode.attr.atime = time(t);
        }
        if let Some(t) = set.mtime {
            inode.attr.mtime = time(t);
        }
        if set.atime.is_some() || set.mtime.is_some() {
            entries.push(LogEntry::SetTimes { ino, atime: inode.attr.atime, mtime: inode.attr.mtime });
        }
        inode.attr.ctime = now;
        let attr = inode.attr.clone();
        for e in entries {
            st.log(app, e, &[ino], now);
        }
        Ok(attr)
    }

    pub fn readlink(&self, ino: Ino) -> FsResult<OsString> {
        self.state.lock().inode(ino)?.symlink_target.clone().ok_or(Errno::EINVAL)
    }

    /// Creates a special file or a regular file without opening it. Takes a kernel reference.
    pub fn mknod(
        &self,
        caller: Caller,
        parent: Ino,
        name: &OsStr,
        kind: FileKind,
        perm: u32,
        rdev: u32,
    ) -> FsResult<Attr> {
        self.make_node(caller, parent, name, NewNode { kind, perm, rdev, target: None })
    }

    /// Takes a kernel reference.
    pub fn mkdir(&self, caller: Caller, parent: Ino, name: &OsStr, perm: u32) -> FsResult<Attr> {
        self.make_node(caller, parent, name, NewNode { kind: FileKind::Dir, perm, rdev: 0, target: None })
    }

    /// Takes a kernel reference.
    pub fn symlink(&self, caller: Caller, parent: Ino, name: &OsStr, target: &OsStr) -> FsResult<Attr> {
        self.make_node(
            caller,
            parent,
            name,
            NewNode { kind: FileKind::Symlink, perm: 0o777, rdev: 0, target: Some(target) },
        )
    }

    fn make_node(&self, caller: Caller, parent: Ino, name: &OsStr, node: NewNode) -> FsResult<Attr> {
        check_name(parent, name)?;
        let mut st = self.state.lock();
        let mut attr = self.new_node(&mut st, caller, parent, name, node)?;
        let inode = st.inode_mut(attr.ino)?;
        inode.lookups += 1;
        attr.nlink = inode.attr.nlink;
        Ok(attr)
    }

    /// Makes a new inode named `name` in `parent` and logs it.
    fn new_node(&self, st: &mut State, caller: Caller, parent: Ino, name: &OsStr, node: NewNode) -> FsResult<Attr> {
        let NewNode { kind, perm, rdev, target } = node;
        let now = self.clock.now();
        if st.find(&self.store(), parent, name)?.is_some() {
            return Err(Errno::EEXIST);
        }
        let dir = st.inode(parent)?;
        if dir.attr.nlink == 0 {
            return Err(Errno::ENOENT);
        }
        let inherit_gid = dir.attr.perm & libc::S_ISGID != 0;
        let gid = if inherit_gid { dir.attr.gid } else { caller.gid };
        let mut perm = perm & 0o7777;
        if kind == FileKind::Dir && inherit_gid {
            perm |= libc::S_ISGID;
        }
        let app = st.app_of_uid(caller.uid);
        let ino = st.new_ino();
        let attr = Attr {
            ino,
            kind,
            perm,
            nlink: if kind == FileKind::Dir { 2 } else { 1 },
            uid: caller.uid,
            gid,
            size: target.map_or(0, |t| t.len() as u64),
            rdev,
            atime: now,
            mtime: now,
            ctime: now,
        };
        let mut inode = Inode::new(attr.clone(), app, parent);
        inode.symlink_target = target.map(OsStr::to_owned);
        st.inodes.insert(ino, inode);
        let dir = st.inode_mut(parent)?;
        dir.children.as_mut().expect("loaded").insert(name.to_owned(), ino);
        dir.touch_mtime(now);
        if kind == FileKind::Dir {
            dir.attr.nlink += 1;
        }
        let entry = match target {
            Some(target) => {
                LogEntry::Symlink { ino, parent, name: name.to_owned(), target: target.to_owned(), uid: attr.uid, gid }
            }
            None => LogEntry::Create { ino, parent, name: name.to_owned(), kind, perm, rdev, uid: attr.uid, gid },
        };
        st.log(app, entry, &[parent, ino], now);
        st.apps.list[app].open.touch(parent);
        Ok(attr)
    }

    /// Takes a kernel reference.
    pub fn link(&self, caller: Caller, ino: Ino, new_parent: Ino, new_name: &OsStr) -> FsResult<Attr> {
        check_name(new_parent, new_name)?;
        let now = self.clock.now();
        let mut st = self.state.lock();
        if st.inode(ino)?.is_dir() {
            return Err(Errno::EPERM);
        }
        if st.find(&self.store(), new_parent, new_name)?.is_some() {
            return Err(Errno::EEXIST);
        }
        if st.inode(new_parent)?.attr.nlink == 0 {
            return Err(Errno::ENOENT);
        }
        let app = st.app_of_uid(caller.uid);
        let dir = st.inode_mut(new_parent)?;
        dir.children.as_mut().expect("loaded").insert(new_name.to_owned(), ino);
        dir.touch_mtime(now);
        let inode = st.inode_mut(ino)?;
        inode.attr.nlink += 1;
        inode.attr.ctime = now;
        inode.lookups += 1;
        let attr = inode.attr.clone();
        st.log(app, LogEntry::Link { ino, parent: new_parent, name: new_name.to_owned() }, &[ino, new_parent], now);
        st.apps.list[app].open.touch(new_parent);
        Ok(attr)
    }

    pub fn unlink(&self, caller: Caller, parent: Ino, name: &OsStr) -> FsResult<()> {
        self.remove(caller, parent, name, false)
    }

    pub fn rmdir(&self, caller: Caller, parent: Ino, name: &OsStr) -> FsResult<()> {
        self.remove(caller, parent, name, true)
    }

    fn remove(&self, caller: Caller, parent: Ino, name: &OsStr, want_dir: bool) -> FsResult<()> {
        let now = self.clock.now();
        let mut st = self.state.lock();
        let ino = st.find(&self.store(), parent, name)?.ok_or(Errno::ENOENT)?;
        let is_dir = st.inode(ino)?.is_dir();
        match (want_dir, is_dir) {
            (false, true) => return Err(Errno::EISDIR),
            (true, false) => return Err(Errno::ENOTDIR),
            (true, true) => {
                st.load_dir(&self.store(), ino)?;
                if st.inode(ino)?.children.as_ref().is_some_and(|c| !c.is_empty()) {
                    return Err(Errno::ENOTEMPTY);
                }
            }
            (false, false) => {}
        }
        let app = st.app_of_uid(caller.uid);
        let dir = st.inode_mut(parent)?;
        dir.children.as_mut().expect("loaded").remove(name);
        dir.touch_mtime(now);
        if is_dir {
            dir.attr.nlink -= 1;
        }
        let inode = st.inode_mut(ino)?;
        inode.attr.nlink = if is_dir { 0 } else { inode.attr.nlink - 1 };
        inode.attr.ctime = now;
        let entry = if is_dir {
            LogEntry::Rmdir { ino, parent, name: name.to_owned() }
        } else {
            LogEntry::Unlink { ino, parent, name: name.to_owned() }
        };
        st.log(app, entry, &[parent, ino], now);
        st.apps.list[app].open.touch(parent);
        st.drop_if_unreferenced(ino, &self.tree);
        Ok(())
    }

    /// Creates a regular file and opens it (one open and one kernel reference).
    /// With `exclusive` false an existing regular file is opened instead.
    pub fn create(&self, caller: Caller, parent: Ino, name: &OsStr, perm: u32, exclusive: bool) -> FsResult<Attr> {
        check_name(parent, name)?;
        let mut st = self.state.lock();
        let attr = match st.find(&self.store(), parent, name)? {
            Some(_) if exclusive => return Err(Errno::EEXIST),
            Some(ino) if st.inode(ino)?.is_dir() => return Err(Errno::EISDIR),
            Some(ino) => st.inode(ino)?.attr.clone(),
            None => self.new_node(
                &mut st,
                caller,
                parent,
                name,
                NewNode { kind: FileKind::File, perm, rdev: 0, target: None },
            )?,
        };
        let inode = st.inode_mut(attr.ino)?;
        inode.lookups += 1;
        inode.opens += 1;
        Ok(inode.attr.clone())
    }

    /// Counts an open of `ino`.
    pub fn open_file(&self, ino: Ino) -> FsResult<()> {
        self.state.lock().inode_mut(ino)?.opens += 1;
        Ok(())
    }

    /// Counts a close of `ino`.
    pub fn release(&self, ino: Ino) {
        let mut st = self.state.lock();
        if let Some(inode) = st.inodes.get_mut(&ino) {
            inode.opens = inode.opens.saturating_sub(1);
            st.drop_if_unreferenced(ino, &self.tree);
        }
    }

    /// Reads up to `size` bytes; fewer only at end of file.
    /// Cache misses are read from the backing store without the state lock,
    /// so a slow device read does not stall other requests.
    pub fn read(&self, ino: Ino, offset: u64, size: u32) -> FsResult<Vec<u8>> {
        let mut out = Vec::new();
        let mut outdated = 0;
        loop {
            let mut st = self.state.lock();
            let (data, miss) = st.read_cached(ino, offset + out.len() as u64, size as u64 - out.len() as u64)?;
            out.extend_from_slice(&data);
            let Some(miss) = miss else { return Ok(out) };
            // Writes to this file outdated what we fetched before: keep the lock.
            let st = if outdated >= 3 {
                Some(st)
            } else {
                drop(st);
                None
            };
            if st.is_none() {
                self.dispatch.request_segment_boundary();
            }
            let pages = crate::file_io::fetch(&self.store(), &miss)?;
            let mut st = st.unwrap_or_else(|| self.state.lock());
            if !st.insert_fetched(&miss, pages) {
                outdated += 1;
            }
        }
    }

    /// Writes into the cache and the file's app's write log. A background
    /// request writes in segments of `fasttrack.segment_bytes` and yields to
    /// foreground requests between them; the policy sees the write once, whole.
    pub fn write(&self, _caller: Option<Caller>, ino: Ino, offset: u64, data: &[u8]) -> FsResult<u32> {
        let segment = match crate::dispatch::current() {
            Some(w) if w.class == IoClass::Background => self.state.lock().config.fasttrack.segment_bytes as usize,
            _ => data.len(),
        };
        for (i, chunk) in data.chunks(segment.max(1)).enumerate() {
            if i > 0 {
                self.dispatch.request_segment_boundary();
            }
            self.write_segment(ino, offset + (i * segment) as u64, chunk)?;
        }
        let mut st = self.state.lock();
        let app = st.inode(ino)?.app;
        if self.policy_closes(&mut st, app) || st.background_commit_owed {
            self.wake_background();
        }
        Ok(data.len() as u32)
    }

    /// One segment of a write. Throttles the writer with a checkpoint first
    /// when dirty data passes the high watermark, or when the write would
    /// take its app past `max_stale_bytes` of uncommitted data (invariant 2:
    /// bounded staleness).
    fn write_segment(&self, ino: Ino, offset: u64, data: &[u8]) -> FsResult<()> {
        let pages = (data.len() as u64).div_ceil(PAGE_SIZE) + 1;
        let mut background_tried = false;
        for _ in 0..3 {
            let mut st = self.state.lock();
            let app = st.inode(ino)?.app;
            let stale = crate::checkpoint::stale_bytes(&st, app);
            if stale > 0 && stale + data.len() as u64 > crate::checkpoint::limits_of(&st, app).max_stale_bytes {
                drop(st);
                self.stalled(app, || self.commit_app(app))?;
                continue;
            }
            // FastTrack PR: the foreground app never commits background apps'
            // dirty data for room: it writes past the watermark and the cache
            // limit, by at most its own uncommitted data (bounded by its
            // staleness limit above), and the background thread, woken after
            // the write, commits the background data. A background writer at
            // the watermark commits the background apps' data, not the
            // foreground app's open VCT, as reclaim does.
            let spared = st.reclaim_spares();
            let foreground_writer = spared == Some(app);
            let full = st.cache.dirty_bytes() as f64 > st.config.dirty_high_ratio * st.config.cache_size as f64;
            let room = match (full, foreground_writer, spared) {
                (true, false, Some(_)) => Room::CheckpointBackground,
                (true, false, None) => Room::CheckpointAll,
                _ => st.make_room(pages),
            };
            // A background checkpoint may not free all it was asked for (a
            // background app's page in the foreground app's open VCT): the
            // next round commits everything.
            let trigger = match room {
                Room::Made => break,
                Room::CheckpointBackground if foreground_writer => {
                    st.background_commit_owed = true;
                    break;
                }
                Room::CheckpointBackground if !background_tried => Trigger::Background,
                Room::CheckpointBackground | Room::CheckpointAll => Trigger::Memory,
            };
            background_tried |= trigger == Trigger::Background;
            drop(st);
            self.stalled(app, || self.run_checkpoint(trigger))?;
        }
        let now = self.clock.now();
        let mut st = self.state.lock();
        st.write(&self.store(), ino, offset, data, now)?;
        let app = st.inode(ino)?.app;
        st.note_staleness(app, now);
        Ok(())
    }

    /// `fallocate` mode 0 (allocate, extending the size) and KEEP_SIZE; other modes give EOPNOTSUPP.
    pub fn fallocate(&self, ino: Ino, offset: u64, len: u64, mode: i32) -> FsResult<()> {
        let end = offset.checked_add(len).ok_or(Errno::EFBIG)?;
        if len == 0 {
            return Err(Errno::EINVAL);
        }
        let mut st = self.state.lock();
        if st.inode(ino)?.attr.kind != FileKind::File {
            return Err(Errno::ENODEV);
        }
        match mode {
            0 if end > st.inode(ino)?.attr.size => st.truncate(ino, end, self.clock.now()),
            0 => Ok(()),
            libc::FALLOC_FL_KEEP_SIZE => Ok(()),
            _ => Err(Errno::ENOTSUP),
        }
    }

    /// fsync / fdatasync of one file: absorbed in memory mode (the policy may
    /// close the VCT there, e.g. `close-on-fsync`), a durable commit of the
    /// app's data in sync mode.
    /// Either way, an op of the caller's app on this file that a checkpoint
    /// could not store is reported here, once (see `refused`).
    pub fn fsync(&self, caller: Option<Caller>, ino: Ino) -> FsResult<()> {
        let app = self.state.lock().inode(ino)?.app;
        self.sync_of(app)?;
        self.owed_error(caller, ino)
    }

    /// close(2) of a file (FUSE flush): reports, once, an op of the caller's
    /// app on this file that a checkpoint could not store.
    pub fn flush(&self, caller: Option<Caller>, ino: Ino) -> FsResult<()> {
        self.owed_error(caller, ino)
    }

    /// The error a checkpoint owes the caller's app (the file's app for a
    /// call without a caller) for `ino`, if any.
    fn owed_error(&self, caller: Option<Caller>, ino: Ino) -> FsResult<()> {
        if !self.refused.lock().owes_any() {
            return Ok(());
        }
        let app = {
            let mut st = self.state.lock();
            match caller {
                Some(c) => st.app_of_uid(c.uid),
                None => st.inode(ino)?.app,
            }
        };
        self.refused.lock().take(app, ino).map_or(Ok(()), Err)
    }

    /// fsyncdir and sync(2): the same for the caller's app.
    pub fn sync_app(&self, caller: Option<Caller>) -> FsResult<()> {
        let app = self.state.lock().app_of_uid(caller.map_or(0, |c| c.uid));
        self.sync_of(app)
    }

    fn sync_of(&self, app: AppId) -> FsResult<()> {
        let started = self.clock.now();
        let done = self.sync_in_mode(app);
        let took = self.clock.now().duration_since(started).unwrap_or_default();
        self.state.lock().apps.list[app].metrics.fsync_latency.record(took);
        done
    }

    /// Memory mode: a log boundary. Sync mode: a durable commit.
    fn sync_in_mode(&self, app: AppId) -> FsResult<()> {
        let mut st = self.state.lock();
        let mode = st.mode_of(app);
        let counters = &mut st.apps.list[app].counters;
        if mode == SyncMode::Memory {
            counters.fsync_absorbed += 1;
            st.apps.list[app].policy.on_fsync(self.clock.now());
            if self.policy_closes(&mut st, app) {
                self.wake_background();
            }
            return Ok(());
        }
        counters.fsync_honoured += 1;
        drop(st);
        self.stalled(app, || self.commit_app(app))
    }

    /// Runs a checkpoint an app's call waits for, counting the wait as the
    /// app's time stalled on storage.
    fn stalled(&self, app: AppId, checkpoint: impl FnOnce() -> FsResult<()>) -> FsResult<()> {
        let started = self.clock.now();
        let done = checkpoint();
        let took = self.clock.now().duration_since(started).unwrap_or_default();
        self.state.lock().apps.list[app].metrics.stalled += took;
        done
    }

    /// Entries of a directory (without `.` and `..`).
    pub fn readdir(&self, ino: Ino) -> FsResult<Vec<DirEntry>> {
        let mut st = self.state.lock();
        st.load_dir(&self.store(), ino)?;
        let dir = st.inode(ino)?;
        let children = dir.children.as_ref().expect("loaded");
        Ok(children
            .iter()
            .filter_map(|(name, child)| {
                let kind = st.inodes.get(child)?.attr.kind;
                Some(DirEntry { name: name.clone(), ino: *child, kind })
            })
            .collect())
    }

    pub fn statfs(&self) -> FsResult<FsStats> {
        Ok(self.backend.statfs()?)
    }

    /// Closes every open VCT and commits all closed ones (`mcfs ctl checkpoint`).
    pub fn checkpoint(&self) -> FsResult<()> {
        self.run_checkpoint(Trigger::Everything)
    }

    pub fn set_battery(&self, percent: u8) {
        self.state.lock().battery = Some(percent.min(100));
        self.wake_background();
    }

    /// Sets an app's mode; the app is named as in the config or as `uid:N`.
    pub fn set_app_mode(&self, app: &str, mode: SyncMode) -> Result<(), String> {
        let mut st = self.state.lock();
        let id =
            st.app_by_name(app).ok_or_else(|| format!("no app named \"{app}\" (use a configured name or uid:N)"))?;
        st.apps.list[id].mode = Some(mode);
        Ok(())
    }

    /// The path of `ino` below the mount root as the live namespace has it
    /// now (one of its names if it has several); `None` for an unknown or
    /// unlinked inode. Costs one scan of each ancestor's children.
    pub fn path_of(&self, ino: Ino) -> Option<PathBuf> {
        let st = self.state.lock();
        let mut names = Vec::new();
        let mut at = ino;
        while at != ROOT_INO {
            let inode = st.inodes.get(&at)?;
            let parent = st.inodes.get(&inode.parent)?;
            let name = parent.children.as_ref()?.iter().find(|(_, i)| **i == at).map(|(n, _)| n.clone())?;
            names.push(name);
            at = inode.parent;
        }
        Some(names.iter().rev().collect())
    }

    /// A user-input operation (a tap, or a drag already merged into one)
    /// happened now: feeds the idle-interval predictor (MobiFS §5.3).
    pub fn user_input(&self) {
        if let Some(predictor) = self.idle.lock().as_mut() {
            predictor.input(self.clock.now());
        }
        self.wake_background();
    }

    pub fn stats(&self) -> Stats {
        let st = self.state.lock();
        let idle = self.idle.lock().as_ref().map(ScoredPredictor::score);
        let mut stats = crate::checkpoint::collect_stats(&st, &self.counters.lock(), idle, self.clock.now());
        stats.fasttrack = self.fasttrack_stats(&st);
        let refused = self.refused.lock();
        stats.unapplied_ops = refused.count;
        stats.unapplied_recent = refused.recent.iter().cloned().collect();
        stats
    }
}
