//! `Engine`: the one entry point front ends use. Every call takes the state
//! lock, does its work in memory (loading from the backing store on a miss),
//! and returns; checkpoints run under their own lock and hold the state lock
//! only to pick and to finish their batch (see `checkpoint`).

use crate::app_status::IoClass;
use crate::backend::{Backend, BackendLimits};
use crate::checkpoint::{CheckpointCounters, Trigger};
use crate::clock::Clock;
use crate::committed::Committed;
use crate::config::{Config, SyncMode};
use crate::dispatch::{Dispatcher, Switches};
use crate::file_io::Room as CacheRoom;
use crate::inode::Inode;
use crate::journal::{self, Journal};
use crate::policy::interval;
use crate::policy::prediction_score::ScoredPredictor;
use crate::space::Room;
use crate::split_writes::Piece;
use crate::state::{attr_from_backend, State, Store};
use crate::stats::Stats;
use crate::types::*;
use crate::vct::{AppId, LogEntry};
use crate::STATE_DIR;
use parking_lot::{Condvar, Mutex, MutexGuard, RwLock};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub struct Engine {
    pub(crate) state: Mutex<State>,
    pub(crate) tree: RwLock<Committed>,
    pub(crate) backend: Arc<dyn Backend>,
    pub(crate) clock: Arc<dyn Clock>,
    /// The journal; holding it is holding the right to checkpoint.
    pub(crate) journal: Mutex<Journal>,
    /// Held by the one apply that may run at a time (`backlog`); taken
    /// before the journal, never while holding it.
    pub(crate) applier: Mutex<()>,
    pub(crate) preserve_owner: bool,
    pub(crate) counters: Mutex<CheckpointCounters>,
    /// Commits stopped writing appends in place: cutting files back after
    /// a failed commit failed, and its records must stay for recovery.
    pub(crate) in_place_off: AtomicBool,
    /// Committed transactions waiting to be applied, in commit order (`backlog`).
    pub(crate) backlog: Mutex<Vec<crate::backlog::Waiting>>,
    /// Ops the backing store refused for good, and the errors owed for them.
    pub(crate) refused: Mutex<crate::refused::Refused>,
    /// Wakes the background thread when a VCT closes or on shutdown.
    pub(crate) wake: (Mutex<bool>, Condvar),
    /// The user-idle predictor (`idle_predictor`), with its score.
    pub(crate) idle: Mutex<Option<ScoredPredictor>>,
    /// Foreground-first admission and yielding (FastTrack).
    pub(crate) dispatch: Dispatcher,
    /// Notified (with the state lock) when a split `write(2)` may have settled.
    pub(crate) split_settled: Condvar,
    /// What the backing store refuses: refused at the call (see `backend::limits`).
    pub(crate) limits: BackendLimits,
    /// Lookups of names that do not exist (`Stats::missing_lookups`).
    missing_lookups: AtomicU64,
}

const NAME_MAX: usize = 255;

/// The checkpoints a write ran to make way for itself.
#[derive(Default)]
struct Tried {
    rounds: u32,
    background: bool,
    everything: bool,
}

impl Tried {
    fn note(&mut self, trigger: Trigger) {
        self.rounds += 1;
        self.background |= trigger == Trigger::Background;
        self.everything |= trigger == Trigger::Everything;
    }
}

/// What `mknod`, `mkdir`, `symlink` and `create` make.
pub(crate) struct NewNode<'a> {
    pub kind: FileKind,
    pub perm: NewPerm,
    pub rdev: u32,
    pub target: Option<&'a OsStr>,
}

/// Gives a new inode the extended attributes it starts with (the ACLs it
/// inherits); the entries that log them, after its creation.
fn inherit_xattrs(inode: &mut Inode, xattrs: crate::xattr::Xattrs) -> Vec<LogEntry> {
    let ino = inode.attr.ino;
    let entries = xattrs
        .iter()
        .map(|(name, value)| LogEntry::SetXattr { ino, name: name.clone(), value: value.clone() })
        .collect();
    inode.xattrs = Some(xattrs);
    entries
}

/// The attributes of a new inode `ino` that `caller` makes in a directory
/// with attributes `dir`, with permission bits `perm` (umask or default ACL
/// applied): a set-group-id directory passes on its group, and to a new
/// directory the set-group-id bit.
fn fresh_attr(dir: &Attr, caller: Caller, ino: Ino, node: &NewNode, perm: u32, now: std::time::SystemTime) -> Attr {
    let inherit_gid = dir.perm & libc::S_ISGID != 0;
    let mut perm = perm & 0o7777;
    if node.kind == FileKind::Dir && inherit_gid {
        perm |= libc::S_ISGID;
    }
    Attr {
        ino,
        kind: node.kind,
        perm,
        nlink: if node.kind == FileKind::Dir { 2 } else { 1 },
        uid: caller.uid,
        gid: if inherit_gid { dir.gid } else { caller.gid },
        size: node.target.map_or(0, |t| t.len() as u64),
        rdev: node.rdev,
        atime: now,
        mtime: now,
        ctime: now,
        blocks: 0,
    }
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
        } else {
            tracing::info!("recovery: {report}");
        }
        let root = backend.stat(Path::new("")).map_err(|e| format!("backing root: {e}"))?;
        if root.kind != FileKind::Dir {
            return Err("backing root is not a directory".into());
        }
        let mut journal = Journal::open(Arc::clone(&backend)).map_err(|e| format!("{STATE_DIR}/journal: {e}"))?;
        journal.set_segment_bytes(config.checkpoint_segment_bytes);
        let limits = backend.limits();
        tracing::info!("backing store limits: {limits}");
        let mut root_inode = Inode::new(attr_from_backend(ROOT_INO, &root), 0, ROOT_INO);
        root_inode.children = None;
        root_inode.lookups = 1;
        let idle = interval::by_name(&config.idle_predictor).map(ScoredPredictor::new);
        let fasttrack = &config.fasttrack;
        let switches = Switches { preempt_requests: fasttrack.preempt, hold_checkpoints: fasttrack.dispatch };
        let anticipation = if clock.moves_by_itself() { fasttrack.anticipation_ms } else { 0 };
        let dispatch = Dispatcher::new(Arc::clone(&clock), Duration::from_millis(fasttrack.aging_ms), switches)
            .with_anticipation(Duration::from_millis(anticipation));
        // Pages a store recreates from their offsets (the simulator's
        // data-less one: the journal hands it their extents) are cached
        // without their bytes.
        let mut state = State::new(config, root_inode, journal.known_content());
        let app = state.app_of_uid(root.uid);
        state.inodes.get_mut(&ROOT_INO).expect("root").app = app;
        Ok(Engine {
            state: Mutex::new(state),
            tree: RwLock::new(Committed::default()),
            backend,
            clock,
            journal: Mutex::new(journal),
            applier: Mutex::new(()),
            // SAFETY: geteuid has no preconditions.
            preserve_owner: unsafe { libc::geteuid() } == 0,
            counters: Mutex::new(CheckpointCounters::default()),
            in_place_off: AtomicBool::new(false),
            backlog: Mutex::new(Vec::new()),
            refused: Mutex::new(Default::default()),
            wake: (Mutex::new(false), Condvar::new()),
            idle: Mutex::new(idle),
            dispatch,
            split_settled: Condvar::new(),
            limits,
            missing_lookups: AtomicU64::new(0),
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
        let Some(ino) = st.find(&self.store(), parent, name)? else {
            self.missing_lookups.fetch_add(1, Ordering::Relaxed);
            return Err(Errno::ENOENT);
        };
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
        let now = self.clock.file_time();
        let mut st = self.state.lock();
        st.inode(ino)?;
        if set.perm.is_some() {
            self.load_xattrs(&mut st, ino)?;
        }
        if let Some(size) = set.size {
            self.limits.check_size(size)?;
            st.load_space(&self.store(), ino)?;
            st.truncate(ino, size, now)?;
        }
        let app = match crate::sync_points::times_go_with_the_data(&st, set) {
            true => st.inode(ino)?.app,
            false => st.app_of_uid(caller.uid),
        };
        let mut entries = Vec::new();
        let inode = st.inode_mut(ino)?;
        let old_perm = inode.attr.perm;
        if let Some(perm) = set.perm {
            inode.attr.perm = perm & 0o7777;
        }
        if set.uid.is_some() || set.gid.is_some() {
            inode.attr.uid = set.uid.unwrap_or(inode.attr.uid);
            inode.attr.gid = set.gid.unwrap_or(inode.attr.gid);
            // chown drops set-user-id, and set-group-id on group-executables (Linux).
            inode.attr.perm = without_set_id_bits(&inode.attr, false);
            entries.push(LogEntry::SetOwner { ino, uid: inode.attr.uid, gid: inode.attr.gid });
        }
        if inode.attr.perm != old_perm || set.perm.is_some() {
            entries.push(LogEntry::SetPerm { ino, perm: inode.attr.perm });
        }
        if set.perm.is_some() {
            entries.extend(crate::xattr::acl_after_chmod(inode, ino)?);
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
        perm: impl Into<NewPerm>,
        rdev: u32,
    ) -> FsResult<Attr> {
        self.make_node(caller, parent, name, NewNode { kind, perm: perm.into(), rdev, target: None })
    }

    /// Takes a kernel reference.
    pub fn mkdir(&self, caller: Caller, parent: Ino, name: &OsStr, perm: impl Into<NewPerm>) -> FsResult<Attr> {
        self.make_node(caller, parent, name, NewNode { kind: FileKind::Dir, perm: perm.into(), rdev: 0, target: None })
    }

    /// Takes a kernel reference.
    pub fn symlink(&self, caller: Caller, parent: Ino, name: &OsStr, target: &OsStr) -> FsResult<Attr> {
        self.limits.check_symlink_target(target)?;
        self.make_node(
            caller,
            parent,
            name,
            NewNode { kind: FileKind::Symlink, perm: 0o777.into(), rdev: 0, target: Some(target) },
        )
    }

    fn make_node(&self, caller: Caller, parent: Ino, name: &OsStr, node: NewNode) -> FsResult<Attr> {
        check_name(parent, name)?;
        self.limits.check_name(name)?;
        let mut st = self.state.lock();
        let mut attr = self.new_node(&mut st, caller, parent, name, node)?;
        let inode = st.inode_mut(attr.ino)?;
        inode.lookups += 1;
        attr.nlink = inode.attr.nlink;
        Ok(attr)
    }

    /// Makes a new inode named `name` in `parent` and logs it.
    pub(crate) fn new_node(
        &self,
        st: &mut State,
        caller: Caller,
        parent: Ino,
        name: &OsStr,
        node: NewNode,
    ) -> FsResult<Attr> {
        let now = self.clock.file_time();
        if st.find(&self.store(), parent, name)?.is_some() {
            return Err(Errno::EEXIST);
        }
        if st.inode(parent)?.attr.nlink == 0 {
            return Err(Errno::ENOENT);
        }
        let (perm, xattrs) = self.new_object_perm(st, parent, node.kind, node.perm)?;
        let app = st.app_of_uid(caller.uid);
        let ino = st.new_ino();
        let attr = fresh_attr(&st.inode(parent)?.attr, caller, ino, &node, perm, now);
        let NewNode { kind, rdev, target, .. } = node;
        let (perm, gid) = (attr.perm, attr.gid);
        let mut inode = Inode::new(attr.clone(), app, parent);
        inode.symlink_target = target.map(OsStr::to_owned);
        let inherited = inherit_xattrs(&mut inode, xattrs);
        st.inodes.insert(ino, inode);
        let dir = st.inode_mut(parent)?;
        dir.children.as_mut().expect("loaded").insert(name, ino);
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
        for entry in inherited {
            st.log(app, entry, &[ino], now);
        }
        // The backing store would stamp the object with the checkpoint's
        // time: its own times are logged when the VCT closes.
        st.apps.list[app].open.touch(ino);
        st.apps.list[app].open.touch(parent);
        Ok(attr)
    }

    /// `open(O_TMPFILE)`: a regular file in no directory, opened (one open
    /// and one kernel reference). It lives as an orphan until a `link`
    /// names it; closed before that, it is gone (and needs no operation at
    /// all if that happens before a checkpoint takes its creation).
    pub fn tmpfile(&self, caller: Caller, parent: Ino, perm: impl Into<NewPerm>) -> FsResult<Attr> {
        let now = self.clock.file_time();
        let mut st = self.state.lock();
        let dir = st.inode(parent)?;
        if dir.attr.kind != FileKind::Dir {
            return Err(Errno::ENOTDIR);
        }
        if dir.attr.nlink == 0 {
            return Err(Errno::ENOENT);
        }
        let node = NewNode { kind: FileKind::File, perm: perm.into(), rdev: 0, target: None };
        let (perm, xattrs) = self.new_object_perm(&mut st, parent, node.kind, node.perm)?;
        let app = st.app_of_uid(caller.uid);
        let ino = st.new_ino();
        let attr = Attr { nlink: 0, ..fresh_attr(&st.inode(parent)?.attr, caller, ino, &node, perm, now) };
        let mut inode = Inode::new(attr.clone(), app, parent);
        (inode.lookups, inode.opens) = (1, 1);
        let inherited = inherit_xattrs(&mut inode, xattrs);
        st.inodes.insert(ino, inode);
        let entry = LogEntry::Tmpfile { ino, perm: attr.perm, uid: attr.uid, gid: attr.gid };
        // Made in `parent` (which must exist), though not named there: it
        // builds on whoever made the directory.
        st.log(app, entry, &[parent, ino], now);
        for entry in inherited {
            st.log(app, entry, &[ino], now);
        }
        st.apps.list[app].open.touch(ino);
        Ok(attr)
    }

    /// Takes a kernel reference.
    pub fn link(&self, caller: Caller, ino: Ino, new_parent: Ino, new_name: &OsStr) -> FsResult<Attr> {
        check_name(new_parent, new_name)?;
        self.limits.check_name(new_name)?;
        let now = self.clock.file_time();
        let mut st = self.state.lock();
        if st.inode(ino)?.is_dir() {
            return Err(Errno::EPERM);
        }
        if st.find(&self.store(), new_parent, new_name)?.is_some() {
            return Err(Errno::EEXIST);
        }
        self.limits.check_new_link(st.inode(ino)?.attr.nlink)?;
        if st.inode(new_parent)?.attr.nlink == 0 {
            return Err(Errno::ENOENT);
        }
        let app = st.app_of_uid(caller.uid);
        self.sync_point(&mut st, app, now);
        let dir = st.inode_mut(new_parent)?;
        dir.children.as_mut().expect("loaded").insert(new_name, ino);
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
        let now = self.clock.file_time();
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
        self.sync_point(&mut st, app, now);
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
    pub fn create(
        &self,
        caller: Caller,
        parent: Ino,
        name: &OsStr,
        perm: impl Into<NewPerm>,
        exclusive: bool,
    ) -> FsResult<Attr> {
        check_name(parent, name)?;
        self.limits.check_name(name)?;
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
                NewNode { kind: FileKind::File, perm: perm.into(), rdev: 0, target: None },
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
    /// so a slow device read does not stall other requests; the pages read
    /// are cached.
    pub fn read(&self, ino: Ino, offset: u64, size: u32) -> FsResult<Vec<u8>> {
        let mut out = Vec::new();
        self.read_filling(ino, offset, size, false, &mut out)?;
        Ok(out)
    }

    /// How many bytes `read` returns, doing all it does (the cache sees the
    /// same uses, fills and reclaim) but copying none: what the simulator's
    /// replay needs of a read.
    pub fn read_len(&self, ino: Ino, offset: u64, size: u32) -> FsResult<u32> {
        let mut count = crate::file_io::ReadCount::default();
        self.read_filling(ino, offset, size, false, &mut count)?;
        Ok(count.0 as u32)
    }

    /// `read` for a front end with a page cache of its own above the engine
    /// (the kernel's, with `FOPEN_KEEP_CACHE`): long runs of missing pages
    /// stream from the backing store without being cached (`Miss::streamed`,
    /// docs/ENGINE.md "Reclaim order").
    pub fn read_streamed(&self, ino: Ino, offset: u64, size: u32) -> FsResult<Vec<u8>> {
        let mut out = Vec::new();
        self.read_filling(ino, offset, size, true, &mut out)?;
        Ok(out)
    }

    fn read_filling(
        &self,
        ino: Ino,
        offset: u64,
        size: u32,
        stream: bool,
        out: &mut impl crate::file_io::ReadSink,
    ) -> FsResult<()> {
        let mut outdated = 0;
        loop {
            let mut st = self.state.lock();
            let Some(miss) = st.read_cached(ino, offset + out.count(), size as u64 - out.count(), out)? else {
                return Ok(());
            };
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
            // A long run of missing pages streams past the cache (`Miss::streamed`).
            let streamed = miss.streamed(offset + out.count()).filter(|_| stream);
            if let (Some(range), Some(out)) = (streamed, out.buffer()) {
                let kept = out.len();
                crate::file_io::stream(&self.store(), &miss, range, out)?;
                let st = st.unwrap_or_else(|| self.state.lock());
                if !st.still_current(&miss) {
                    out.truncate(kept);
                    outdated += 1;
                }
                continue;
            }
            let pages = crate::file_io::fetch(&self.store(), &miss)?;
            let mut st = st.unwrap_or_else(|| self.state.lock());
            if !st.insert_fetched(&miss, pages) {
                outdated += 1;
            }
        }
    }

    /// Writes a whole `write(2)` into the cache and the file's app's write
    /// log (see `write_piece`).
    pub fn write(&self, caller: Option<Caller>, ino: Ino, offset: u64, data: &[u8]) -> FsResult<u32> {
        self.write_piece(caller, ino, offset, data, Piece::Last)
    }

    /// A write or truncate by a caller without CAP_FSETID drops the file's
    /// set-user-id bit, and its set-group-id bit if the file is
    /// group-executable or the caller is not in the file's group
    /// (`in_group`); Linux's rule. With FUSE_HANDLE_KILLPRIV_V2 the kernel
    /// leaves that to us, instead of asking for the file's
    /// `security.capability` with a GETXATTR before every write. Returns
    /// whether the mode changed.
    pub fn drop_set_id_bits(&self, caller: Caller, ino: Ino, in_group: impl Fn(u32) -> bool) -> FsResult<bool> {
        let now = self.clock.file_time();
        let mut st = self.state.lock();
        let app = st.app_of_uid(caller.uid);
        let inode = st.inode_mut(ino)?;
        let keeps_set_group_id = |attr: &Attr| attr.perm & libc::S_IXGRP == 0 && in_group(attr.gid);
        let perm = without_set_id_bits(&inode.attr, !keeps_set_group_id(&inode.attr));
        if perm == inode.attr.perm {
            return Ok(false);
        }
        inode.attr.perm = perm;
        inode.attr.ctime = now;
        st.log(app, LogEntry::SetPerm { ino, perm }, &[ino], now);
        Ok(true)
    }

    /// Writes one request of a `write(2)` the kernel may have split
    /// (`split_writes`): a piece that continues its thread's unfinished
    /// write goes into the VCT the write started in and never waits for a
    /// checkpoint. A background request writes in segments of
    /// `fasttrack.segment_bytes` and yields to foreground requests between
    /// them; the policy sees the write once, whole.
    pub fn write_piece(
        &self,
        caller: Option<Caller>,
        ino: Ino,
        offset: u64,
        data: &[u8],
        piece: Piece,
    ) -> FsResult<u32> {
        // A write across the largest file size the backing store holds is cut short there.
        let data = &data[..self.limits.writable(offset, data.len())?];
        let segment = match crate::dispatch::current() {
            Some(w) if w.class == IoClass::Background => self.state.lock().config.fasttrack.segment_bytes as usize,
            _ => data.len(),
        };
        let segments = data.len().div_ceil(segment.max(1));
        for (i, chunk) in data.chunks(segment.max(1)).enumerate() {
            if i > 0 {
                self.dispatch.request_segment_boundary();
            }
            // A segment is a piece of the write the next segment continues.
            let piece = if i + 1 < segments { Piece::MayContinue } else { piece };
            self.write_segment(caller.map(|c| (c.pid, piece)), ino, offset + (i * segment) as u64, chunk)?;
        }
        let mut st = self.state.lock();
        let app = st.inode(ino)?.app;
        // A last piece may have settled a closed VCT the background thread left for later.
        let settled = piece == Piece::Last && !st.closed.is_empty();
        if self.policy_closes(&mut st, app) || st.background_commit_owed || settled {
            self.wake_background();
        }
        Ok(data.len() as u32)
    }

    /// One segment of a write (see `before_write` for what it may wait
    /// for). A failed piece ends its `write(2)`: the kernel sends no more.
    fn write_segment(&self, piece: Option<(u32, Piece)>, ino: Ino, offset: u64, data: &[u8]) -> FsResult<()> {
        let mut tried = Tried::default();
        let written = loop {
            let mut st = self.state.lock();
            let app = st.inode(ino)?.app;
            match self.before_write(&mut st, piece, ino, offset, data.len() as u64, &tried) {
                Ok(None) => {}
                Ok(Some(trigger)) => {
                    drop(st);
                    if trigger.makes_room() && self.waited_for_journal(app) {
                        // The commit or apply that held it freed memory: look again.
                        continue;
                    }
                    tried.note(trigger);
                    self.stalled(app, || match trigger {
                        Trigger::App(app) | Trigger::Closed(app) => self.commit_for(trigger, app),
                        trigger => self.run_checkpoint(trigger),
                    })?;
                    continue;
                }
                Err(e) => break Err(e),
            }
            let now = self.clock.file_time();
            let written = st.write(&self.store(), ino, offset, data, piece, now);
            st.note_staleness(app, now);
            break written;
        };
        if let Some((tid, _)) = piece {
            if written.is_err() {
                self.state.lock().split_writes.thread_moved_on(tid);
            }
            self.split_settled.notify_all();
        }
        written
    }

    /// If a commit holds the journal or an apply runs, waits until they
    /// end (counted as `app`'s time stalled) and says so: a writer short of
    /// memory waits for the work already freeing it rather than commit
    /// more on its own thread next to it.
    fn waited_for_journal(&self, app: AppId) -> bool {
        let busy = self.journal.is_locked() || self.applier.is_locked();
        if busy {
            let waited = self.stalled(app, || {
                self.dispatch.wait_for_journal(|| {
                    drop(self.journal.lock());
                    drop(self.applier.lock());
                });
                Ok(())
            });
            debug_assert!(waited.is_ok(), "a wait cannot fail");
        }
        busy
    }

    /// What a write of `len` bytes at `offset` must wait for, after the
    /// checkpoints it `tried`: nothing (`None`), a checkpoint, or nothing
    /// more (ENOSPC). In order:
    /// * backing space (`space`): a writer whose uncommitted data would no
    ///   longer fit in the journal with the write commits it first; if the
    ///   write alone does not fit, a full checkpoint (it commits pending
    ///   removals and frees the journal) and then ENOSPC;
    /// * bounded staleness (invariant 2): a write that would take its app
    ///   past `max_stale_bytes` commits the app's data first;
    /// * memory: dirty data past the high watermark or no clean page left
    ///   to reclaim, checkpointed in FastTrack's order.
    ///
    /// A piece that continues a split `write(2)` waits for none of these
    /// (its VCT must not commit before the rest is in: the overshoot is
    /// bounded by `State::split_write_cap`) but still gets ENOSPC. After
    /// three rounds of checkpoints the write goes ahead if it fits at all.
    fn before_write(
        &self,
        st: &mut MutexGuard<State>,
        piece: Option<(u32, Piece)>,
        ino: Ino,
        offset: u64,
        len: u64,
        tried: &Tried,
    ) -> FsResult<Option<Trigger>> {
        let now = self.clock.now();
        let app = st.inode(ino)?.app;
        let continues = piece.is_some_and(|(tid, _)| st.continued_write(tid, ino, offset, now).is_some());
        if let (Some((tid, _)), false) = (piece, continues) {
            st.split_writes.thread_moved_on(tid);
        }
        let room = st.room_for_write(&*self.backend, app, ino, offset, len, now);
        match room {
            Room::Full if continues || tried.everything => return Err(Errno::ENOSPC),
            Room::Full => return Ok(Some(Trigger::Everything)),
            // The backing store cannot take the VCT with the rest of the
            // write: storing it beats keeping the write whole.
            Room::CommitFirst if continues => {
                if let Some((tid, _)) = piece {
                    st.split_writes.thread_moved_on(tid);
                }
                return Ok(Some(Trigger::App(app)));
            }
            _ if continues || tried.rounds >= 3 => return Ok(None),
            Room::CommitFirst => return Ok(Some(Trigger::App(app))),
            Room::Fits => {}
        }
        let stale = crate::checkpoint::stale_bytes(st, app);
        let max_stale_bytes = crate::checkpoint::limits_of(st, app).max_stale_bytes;
        if stale > 0 && stale + len > max_stale_bytes {
            // The closed VCTs alone, if committing them leaves room: the
            // open one goes on filling and closes as the policy says.
            if st.apps.list[app].open.bytes + len <= max_stale_bytes {
                return Ok(Some(Trigger::Closed(app)));
            }
            crate::sync_points::limit_closes(st, app);
            return Ok(Some(Trigger::App(app)));
        }
        // FastTrack PR: the foreground app never commits background apps'
        // dirty data for room: it writes past the watermark and the cache
        // limit, by at most its own uncommitted data (bounded by its
        // staleness limit above), and the background thread, woken after
        // the write, commits the background data. A background writer at
        // the watermark commits the background apps' data, not the
        // foreground app's open VCT, as reclaim does. A background
        // checkpoint may not free all it was asked for (a background app's
        // page in the foreground app's open VCT): the next round commits
        // everything.
        let spared = st.reclaim_spares();
        let foreground_writer = spared == Some(app);
        let full = st.cache.dirty_bytes() as f64 > st.config.dirty_high_ratio * st.config.cache_size as f64;
        let pages = len.div_ceil(PAGE_SIZE) + 1;
        let cache_room = match (full, foreground_writer, spared) {
            (true, false, Some(_)) => CacheRoom::CheckpointBackground,
            (true, false, None) => CacheRoom::CheckpointAll,
            _ => st.make_room(pages),
        };
        Ok(match cache_room {
            CacheRoom::Made => None,
            CacheRoom::CheckpointBackground if foreground_writer => {
                st.background_commit_owed = true;
                None
            }
            CacheRoom::CheckpointBackground if !tried.background => Some(Trigger::Background),
            CacheRoom::CheckpointBackground | CacheRoom::CheckpointAll => Some(Trigger::Memory),
        })
    }

    /// fsync / fdatasync of one file: absorbed in memory mode (the policy may
    /// close the VCT there, e.g. `close-on-fsync`), a durable commit of the
    /// app's data in sync mode. The file's data is in its app's log, its
    /// metadata may be in the caller's too: a caller in sync mode gets both
    /// committed, whatever mode the file's app is in. Either way, an op of
    /// the caller's app on this file that a checkpoint could not store is
    /// reported here, once (see `refused`).
    pub fn fsync(&self, caller: Option<Caller>, ino: Ino) -> FsResult<()> {
        let (app, durable_caller) = {
            let mut st = self.state.lock();
            // The kernel holds the file's inode lock for fsync: every write(2) to it is over.
            st.split_writes.file_done(ino);
            self.caller_moved_on(&mut st, caller);
            let app = st.inode(ino)?.app;
            let caller_app = caller.map(|c| st.app_of_uid(c.uid));
            (app, caller_app.filter(|c| *c != app && st.mode_of(*c) == SyncMode::Sync))
        };
        match durable_caller {
            Some(caller_app) => self.timed_fsync(caller_app, || {
                self.state.lock().apps.list[caller_app].counters.fsync_honoured += 1;
                self.stalled(caller_app, || [app, caller_app].into_iter().try_for_each(|a| self.commit_app(a)))
            }),
            None => self.sync_of(app),
        }?;
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
        let app = {
            let mut st = self.state.lock();
            self.caller_moved_on(&mut st, caller);
            st.app_of_uid(caller.map_or(0, |c| c.uid))
        };
        self.sync_of(app)
    }

    /// The caller's thread is in this call, so no write(2) of its is under
    /// way: a commit it waits for must not wait for the rest of one.
    fn caller_moved_on(&self, st: &mut State, caller: Option<Caller>) {
        if let Some(c) = caller {
            st.split_writes.thread_moved_on(c.pid);
            self.split_settled.notify_all();
        }
    }

    fn sync_of(&self, app: AppId) -> FsResult<()> {
        self.timed_fsync(app, || self.sync_in_mode(app))
    }

    /// Runs `sync`, an fsync of `app`, counting its latency.
    fn timed_fsync(&self, app: AppId, sync: impl FnOnce() -> FsResult<()>) -> FsResult<()> {
        let started = self.clock.now();
        let done = sync();
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
            let now = self.clock.now();
            st.apps.list[app].policy.on_fsync(now);
            if crate::sync_points::at_sync_point(&mut st, app, now) || self.policy_closes(&mut st, app) {
                self.wake_background();
            }
            return Ok(());
        }
        counters.fsync_honoured += 1;
        drop(st);
        self.stalled(app, || self.commit_app(app))
    }

    /// A namespace operation that orders data (rename, unlink, rmdir, link)
    /// is a sync point of the caller's app: in sync-point mode its VCT may
    /// close before the operation (`sync_points`).
    pub(crate) fn sync_point(&self, st: &mut State, app: AppId, now: std::time::SystemTime) {
        if crate::sync_points::at_sync_point(st, app, now) {
            self.wake_background();
        }
    }

    /// Where VCT boundaries may fall on this mount (the FUSE adapter asks
    /// the kernel for its writeback cache in sync-point mode).
    pub fn consistency(&self) -> crate::config::Consistency {
        self.state.lock().config.consistency
    }

    /// Whether an operation of the caller's on `inos`, or on the entries
    /// `names` of directories, changes another app's object or would close
    /// another app's open VCT (`sync_points::touches_other_apps`): in
    /// sync-point mode the kernel must hand over every dirty page first.
    pub fn touches_other_apps(&self, caller: Caller, inos: &[Ino], names: &[(Ino, &OsStr)]) -> bool {
        let mut st = self.state.lock();
        let app = st.app_of_uid(caller.uid);
        let children = names.iter().filter_map(|(dir, name)| st.inodes.get(dir).and_then(|d| d.child(name)));
        let touched: Vec<Ino> = inos.iter().copied().chain(children).collect();
        crate::sync_points::touches_other_apps(&st, app, &touched)
    }

    /// Whether a sync point of the caller's app now may place a VCT
    /// boundary (sync-point mode, `sync_points::boundary_possible`): if
    /// not, the FUSE adapter skips the handover and runs the sync point
    /// `without_boundary`.
    pub fn boundary_possible(&self, caller: Caller) -> bool {
        let mut st = self.state.lock();
        let app = st.app_of_uid(caller.uid);
        crate::sync_points::boundary_possible(&st, app, self.clock.now())
    }

    /// Runs `op`, engine calls of a sync point that `boundary_possible`
    /// said no to, the kernel's dirty pages not handed over: they close no
    /// VCT.
    pub fn without_boundary<T>(op: impl FnOnce() -> T) -> T {
        crate::sync_points::without_boundary(op)
    }

    /// Whether the data `ino` holds goes to the write log of the caller's
    /// app (the file's app is the caller's): a sync point of that app must
    /// see the file's data handed over first.
    pub fn logs_data_of(&self, caller: Caller, ino: Ino) -> bool {
        let mut st = self.state.lock();
        let app = st.app_of_uid(caller.uid);
        st.inodes.get(&ino).is_some_and(|i| i.app == app)
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

    /// Up to `max` entries of a directory (without `.` and `..`) in its
    /// stream order, from slot `first` on (`children`: a later entry has a
    /// larger slot, and a slot stays with its name).
    pub fn readdir(&self, ino: Ino, first: u64, max: usize) -> FsResult<Vec<DirEntry>> {
        let mut st = self.state.lock();
        st.load_dir(&self.store(), ino)?;
        let dir = st.inode(ino)?;
        let children = dir.children.as_ref().expect("loaded");
        Ok(children
            .stream_from(first)
            .filter_map(|e| {
                let kind = st.inodes.get(&e.ino)?.attr.kind;
                Some(DirEntry { name: e.name.to_owned(), ino: e.ino, kind, slot: e.slot })
            })
            .take(max)
            .collect())
    }

    /// The backing store's numbers, net of the space reserved for what is
    /// accepted and not yet committed (`space`).
    pub fn statfs(&self) -> FsResult<FsStats> {
        let stats = self.backend.statfs()?;
        Ok(self.state.lock().net_of_reservation(stats))
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
            let name = parent.children.as_ref()?.iter().find(|(_, i)| *i == at).map(|(n, _)| n.to_owned())?;
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

    /// Checks the engine's structural invariants (the page cache's,
    /// `Cache::check_invariants`, that it holds pages of live inodes only,
    /// each loaded directory's, `Children::check_invariants`, and the
    /// journal backlog's, `check_backlog`); the crash-consistency driver
    /// calls it after every step. The error names the first broken one.
    pub fn check_invariants(&self) -> Result<(), String> {
        self.check_backlog()?;
        let st = self.state.lock();
        st.cache.check_invariants()?;
        for (ino, inode) in &st.inodes {
            if let Some(children) = &inode.children {
                children.check_invariants().map_err(|e| format!("directory {ino}: {e}"))?;
            }
        }
        let forgotten = st.cache.files().find(|ino| !st.inodes.contains_key(ino));
        match forgotten {
            Some(ino) => Err(format!("the cache holds pages of inode {ino}, which the engine forgot")),
            None => Ok(()),
        }
    }

    /// Committed transactions waiting to be applied, and the journal bytes they take.
    pub fn waiting_transactions(&self) -> (usize, u64) {
        let journal = self.journal.lock();
        (journal.waiting(), journal.waiting_bytes())
    }

    pub fn stats(&self) -> Stats {
        let st = self.state.lock();
        let idle = self.idle.lock().as_ref().map(ScoredPredictor::score);
        let mut stats = crate::checkpoint::collect_stats(&st, &self.counters.lock(), idle, self.clock.now());
        stats.fasttrack = self.fasttrack_stats(&st);
        let refused = self.refused.lock();
        stats.unapplied_ops = refused.count;
        stats.unapplied_recent = refused.recent.iter().cloned().collect();
        stats.missing_lookups = self.missing_lookups.load(Ordering::Relaxed);
        let backlog = self.backlog.lock();
        stats.journal_waiting_transactions = backlog.len() as u64;
        stats.journal_waiting_bytes = backlog.last().map_or(0, |w| w.log_bytes);
        stats
    }
}

/// `attr`'s permission bits without set-user-id, and without set-group-id
/// if group members may execute the file or `or_set_group_id` says so;
/// directories keep both.
fn without_set_id_bits(attr: &Attr, or_set_group_id: bool) -> u32 {
    if attr.kind == FileKind::Dir {
        return attr.perm;
    }
    let mut kill = libc::S_ISUID;
    if or_set_group_id || attr.perm & libc::S_IXGRP != 0 {
        kill |= libc::S_ISGID;
    }
    attr.perm & !kill
}
