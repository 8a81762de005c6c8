//! `McfsFs`: the FUSE file system over `mcfs_core::Engine`, its ops written
//! once for both transports — the fuser session on `/dev/fuse`
//! (`fuser_session`) and FUSE over io_uring (`ring_session`) — each
//! answering through the traits of `replies`. Each request
//! becomes one engine call (readdirplus: one per entry) and its result one
//! reply; the engine does its own locking, so nothing here holds a lock
//! across an engine call. An observer, if set, is told of each file
//! operation the engine carried out (see `observer`).
//!
//! Every request that reaches the engine is admitted first (`serve`): a
//! background app's request waits while foreground ones are in flight, and
//! the serving thread's I/O priority follows the request's class
//! (FastTrack). A request that may be held back waits on a thread of
//! `held_requests`, never on a thread that reads requests, so an FG request
//! always finds a reader. Reference drops (forget, release), directory
//! handles, flush and statfs touch no file data and are not admitted.
//!
//! Invariants: every request is answered exactly once, no request panics,
//! and every kernel reference the engine counts (lookup, create, mknod,
//! mkdir, symlink, link, readdirplus entries) is one the kernel really got —
//! a reference whose reply could not carry it is forgotten at once.

use crate::dir_stream;
use crate::handover::{DirtyPages, Handover, InvalidatorSlot, PathOf};
use crate::held_requests::{HeldRequests, HELD_REQUEST_THREADS};
use crate::io_priority;
use crate::observer::{RequestObserver, ServedOp};
use crate::replies::{
    Answer, AttrAnswer, CreateAnswer, DataAnswer, DirAnswer, DirPlusAnswer, EmptyAnswer, EntryAnswer, LseekAnswer,
    OpenAnswer, StatfsAnswer, WriteAnswer, XattrAnswer,
};
use crate::translate::{self, errno, file_attr, file_type};
use crate::write_back::MountRootSlot;
use fuser::{FileHandle, FopenFlags, Generation, INodeNo, InitFlags, RenameFlags, TimeOrNow, WriteFlags};
use mcfs_core::{Attr, Caller, Consistency, Engine, Errno, FsResult, HeldBack, RenameMode};
use std::borrow::Borrow;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;
use std::time::Duration;

/// How long the kernel may trust attributes and names without asking. Long,
/// because every change reaches the backing store through this mount and the
/// kernel updates or drops its cache on each change it sends us. That holds
/// for missing names too: a lookup that finds nothing is answered with a
/// negative entry (inode 0) the kernel keeps for as long, and every name
/// mcfs makes is made by a request through this mount, whose reply replaces
/// the kernel's negative entry (the engine never makes a name on its own).
const TTL: Duration = Duration::from_secs(60);

/// What a request that may end VCTs is, for what sync-point mode hands
/// over before it (`McfsFs::serve_ending`).
#[derive(Clone, Copy)]
enum Ends {
    /// A sync point of the caller's app (fsync of `synced`, fsyncdir,
    /// rename, unlink, rmdir, link).
    SyncPoint { synced: Option<u64> },
    /// A change that ends VCTs only if it reaches another app's.
    Change,
}

/// A rename, unlink, rmdir, link or fsyncdir: a sync point naming no file.
const NAMESPACE_SYNC_POINT: Ends = Ends::SyncPoint { synced: None };

/// The inodes and directory entries a request changes, for sync-point
/// mode's check whether it reaches into another app's objects or VCT
/// (`Engine::touches_other_apps`).
#[derive(Default)]
struct Touched {
    inos: Vec<u64>,
    names: Vec<(u64, OsString)>,
}

impl Touched {
    fn inode(ino: u64) -> Touched {
        Touched { inos: vec![ino], names: Vec::new() }
    }

    /// The entry `name` of directory `dir`, and the directory.
    fn entry(dir: u64, name: &OsStr) -> Touched {
        Touched::default().and_entry(dir, name)
    }

    fn and_entry(mut self, dir: u64, name: &OsStr) -> Touched {
        self.inos.push(dir);
        self.names.push((dir, name.to_os_string()));
        self
    }

    fn and_inode(mut self, ino: u64) -> Touched {
        self.inos.push(ino);
        self
    }
}

/// Inode numbers are not exported over NFS, so generations are not needed.
const GENERATION: Generation = Generation(0);

/// File opens need no per-open state: the engine counts opens per inode.
const FILE_HANDLE: FileHandle = FileHandle(0);

/// What McfsFs asks the kernel for at INIT, over either transport
/// (`McfsFs::init_flags` adds the writeback cache in sync-point mode: with
/// it the kernel owns mtime, ctime and size of regular files, sends the
/// times in a SETATTR after writing pages back, and sends data later on
/// nobody's behalf, which the engine charges to the file's app; VCT
/// boundaries must then wait for sync points, `handover`). FUSE_ATOMIC_O_TRUNC stays off
/// too: with it the kernel sends O_TRUNC in `open` before it checks that
/// nobody executes the file, so an `open(O_TRUNC)` that fails with
/// ETXTBSY would already have emptied a running program. Without it the
/// kernel checks first, then truncates with a `setattr`. POSIX ACLs: with
/// FUSE_POSIX_ACL the kernel enforces the ACLs it reads back with
/// getxattr, and leaves keeping them in step with the mode and their
/// inheritance to us (the engine does, `mcfs_core` `acl`); with
/// FUSE_DONT_MASK it leaves the umask to us too, since a new object
/// that inherits a default ACL must not have the umask applied. Each
/// capability is asked for only if the kernel offers it; a kernel
/// without one still works.
pub(crate) const INIT_FLAGS: &[InitFlags] = &[
    // Several reads of one file in flight at once.
    InitFlags::FUSE_ASYNC_READ,
    // Lookups and readdirs in one directory run in parallel.
    InitFlags::FUSE_PARALLEL_DIROPS,
    // `ls -l` gets names and attributes in one pass, when the kernel sees it helps.
    InitFlags::FUSE_DO_READDIRPLUS.union(InitFlags::FUSE_READDIRPLUS_AUTO),
    // ACLs enforced by the kernel; the umask applied by the engine.
    InitFlags::FUSE_POSIX_ACL.union(InitFlags::FUSE_DONT_MASK),
    // Set-id bits dropped by the engine on write and truncate, so the kernel
    // marks files without them S_NOSEC and stops asking for their
    // `security.capability` with a GETXATTR before every write.
    InitFlags::FUSE_HANDLE_KILLPRIV_V2,
];

pub struct McfsFs {
    served: Arc<Served>,
    held: HeldRequests,
    /// Pages the kernel puts in one write request at most (`translate::write_piece`).
    pages_per_write: u64,
}

/// What serving a request needs, shared with the threads of held-back requests.
struct Served {
    engine: Arc<Engine>,
    observer: Option<Arc<dyn RequestObserver>>,
    /// `fasttrack.dispatch`: serving threads take the I/O priority of each request's class.
    tags_io_priority: bool,
    /// Sync-point consistency: the kernel's dirty pages handed over before each sync point.
    handover: Option<Arc<Handover>>,
    /// Drops the kernel's cached attributes or pages of a file; set once the session exists.
    kernel_cache: InvalidatorSlot,
    /// The mount's root, through which the handover has the kernel write back; set once it is live.
    mount_root: MountRootSlot,
}

impl McfsFs {
    /// Serves `engine`, telling `observer` (if any) about every file operation served.
    pub fn new(engine: Arc<Engine>, observer: Option<Arc<dyn RequestObserver>>) -> McfsFs {
        let tags_io_priority = engine.tags_io_priority();
        if tags_io_priority {
            // A BG commit an FG request waits for runs at FG priority meanwhile.
            engine.set_io_priorities(Box::new(io_priority::ThreadPriorities));
        }
        let (kernel_cache, mount_root) = (InvalidatorSlot::default(), MountRootSlot::default());
        let handover = (engine.consistency() == Consistency::SyncPoint).then(|| {
            // Weak: the handover thread must not keep the engine alive past the mount.
            let engine = Arc::downgrade(&engine);
            let path_of: PathOf = Box::new(move |ino| engine.upgrade().and_then(|e| e.path_of(ino)));
            Arc::new(Handover::start(mount_root.clone(), kernel_cache.clone(), path_of))
        });
        McfsFs {
            served: Arc::new(Served { engine, observer, tags_io_priority, handover, kernel_cache, mount_root }),
            held: HeldRequests::start(HELD_REQUEST_THREADS),
            pages_per_write: crate::kernel_config::pages_per_write(),
        }
    }

    /// What to ask the kernel for at INIT: `INIT_FLAGS`, and in sync-point
    /// mode the writeback cache (writes stay in the kernel's page cache
    /// until writeback or a sync point's handover).
    pub(crate) fn init_flags(&self) -> Vec<InitFlags> {
        let mut flags = INIT_FLAGS.to_vec();
        if self.served.handover.is_some() {
            flags.push(InitFlags::FUSE_WRITEBACK_CACHE);
        }
        flags
    }

    /// What has the kernel hand over its dirty pages before a checkpoint the daemon is asked for.
    pub fn dirty_pages(&self) -> DirtyPages {
        DirtyPages(self.served.handover.clone())
    }

    /// Where the mount puts what invalidates the kernel's cache of an
    /// inode, once the session has one.
    pub fn invalidator_slot(&self) -> InvalidatorSlot {
        Arc::clone(&self.served.kernel_cache)
    }

    /// Where the mount puts its root once it is live.
    pub(crate) fn mount_root_slot(&self) -> MountRootSlot {
        Arc::clone(&self.served.mount_root)
    }

    /// Serves a request that may end VCTs as `serve` does; in sync-point
    /// mode `work` runs once the kernel has handed over the dirty pages
    /// those VCTs need (`Ends`): at a sync point that may close the app's
    /// VCT (`Engine::boundary_possible`; one that cannot runs at once,
    /// placing no boundary), those of every file of
    /// the caller's app open for writing (but the one an fsync flushed
    /// itself); and those of every file where the request changes another
    /// app's file or depends on what another app changed since its last
    /// boundary (which closes that app's VCT, `Engine::touches_other_apps`),
    /// so that the VCTs it ends hold all their apps did (mcfs-core's
    /// `sync_points`).
    fn serve_ending<I>(
        &self,
        caller: Caller,
        ends: Ends,
        touched: Touched,
        input: &I,
        work: impl FnOnce(&Served, &I) + Send + 'static,
    ) where
        I: ToOwned + ?Sized,
        I::Owned: Send + 'static,
    {
        let served = Arc::clone(&self.served);
        self.serve(caller, input, move |fs, input| {
            let Some(handover) = &fs.handover else { return work(fs, input) };
            let names: Vec<(u64, &OsStr)> = touched.names.iter().map(|(dir, name)| (*dir, name.as_os_str())).collect();
            let others = fs.engine.touches_other_apps(caller, &touched.inos, &names);
            let own = match ends {
                // Nothing to hand over for a sync point that cannot close a VCT.
                Ends::SyncPoint { .. } if !others && !fs.engine.boundary_possible(caller) => {
                    return Engine::without_boundary(|| work(fs, input));
                }
                Ends::SyncPoint { synced } => Some(synced),
                Ends::Change if !others => return work(fs, input),
                Ends::Change => None,
            };
            let input = input.to_owned();
            let pick =
                |ino| others || own.is_some_and(|synced| Some(ino) != synced && fs.engine.logs_data_of(caller, ino));
            handover.then(pick, Box::new(move || work(&served, input.borrow())));
        });
    }

    /// Serves one request of `caller` that is admitted first: `work` (its
    /// engine calls and its reply) runs at once on this thread, or, if
    /// FastTrack may hold the request back, on a thread of `held` with its
    /// own copy of `input` (a name, a write's data) once the engine admits it.
    fn serve<I>(&self, caller: Caller, input: &I, work: impl FnOnce(&Served, &I) + Send + 'static)
    where
        I: ToOwned + ?Sized,
        I::Owned: Send + 'static,
    {
        match self.served.engine.admit_at_once(caller) {
            Ok(_admission) => {
                self.served.follow_class();
                work(&self.served, input);
            }
            Err(HeldBack) => {
                let (served, input) = (Arc::clone(&self.served), input.to_owned());
                self.held.hand_over(Box::new(move || {
                    let _admission = served.engine.admit(caller);
                    served.follow_class();
                    work(&served, input.borrow());
                }));
            }
        }
    }
}

impl Served {
    /// Drops set-id bits as a write or truncate by `caller` that lacks
    /// CAP_FSETID must (`Engine::drop_set_id_bits`); whether the mode changed.
    fn drop_set_id_bits(&self, caller: Caller, ino: u64) -> FsResult<bool> {
        self.engine.drop_set_id_bits(caller, ino, |gid| translate::in_group(caller, gid))
    }

    /// The kernel's cached attributes of `ino` are stale (a mode changed
    /// by a request whose reply does not carry attributes).
    fn attributes_changed(&self, ino: u64) {
        if let Some(kernel) = self.kernel_cache.get() {
            if let Err(e) = kernel.invalidate(ino, -1, 0) {
                tracing::warn!("inode {ino}: cannot drop the kernel's cached attributes: {e}");
            }
        }
    }

    /// A file open succeeded (counted for `handover` in sync-point mode).
    fn opened(&self, ino: u64, flags: i32) {
        if let Some(handover) = &self.handover {
            handover.opened(ino, flags);
        }
    }

    /// Whether this mount needs to hear of each file open and its release:
    /// the handover counts write opens (sync-point mode) and a recorded
    /// trace has an event per open. Any other mount answers the first OPEN
    /// `ENOSYS`; the kernel then sends no OPEN and no RELEASE for the rest
    /// of the connection (not even for the files it creates), which saves a
    /// round trip per open(2) and a request per close(2). The engine needs
    /// no open count to keep an unlinked file while it is open: the kernel
    /// holds its lookup reference until the last close, then forgets it.
    fn hears_opens(&self) -> bool {
        self.handover.is_some() || self.observer.is_some()
    }

    /// Gives this thread the I/O priority of the class of the request it runs.
    fn follow_class(&self) {
        if self.tags_io_priority {
            if let Some(running) = mcfs_core::dispatch::current() {
                io_priority::follow_class(running.class);
            }
        }
    }

    /// create(2): a non-exclusive create may open a file that exists; O_TRUNC
    /// then empties it (the kernel leaves that to us: to it the file is new).
    /// The open is undone if that fails.
    fn create_truncated(
        &self,
        caller: Caller,
        parent: u64,
        name: &OsStr,
        perm: mcfs_core::NewPerm,
        flags: i32,
    ) -> FsResult<Attr> {
        let attr = self.engine.create(caller, parent, name, perm, translate::exclusive(flags))?;
        if translate::truncates(flags) && attr.size > 0 {
            return self.engine.setattr(caller, attr.ino, &translate::open_truncation()).inspect_err(|_| {
                self.engine.release(attr.ino);
                self.engine.forget(attr.ino, 1);
            });
        }
        Ok(attr)
    }

    /// Passes `result` through, telling the observer (if any) about the
    /// operation `op` describes when it succeeded.
    fn observed<'a, T>(
        &self,
        caller: Option<Caller>,
        result: FsResult<T>,
        op: impl FnOnce(&T) -> ServedOp<'a>,
    ) -> FsResult<T> {
        if let (Some(observer), Ok(value)) = (&self.observer, &result) {
            observer.served(caller, op(value));
        }
        result
    }
}

fn reply_entry(reply: impl EntryAnswer, result: FsResult<Attr>) {
    match result {
        Ok(attr) => reply.entry(&TTL, &file_attr(&attr), GENERATION),
        Err(e) => reply.error(errno(e)),
    }
}

/// A lookup's answer: a missing name is a negative entry the kernel keeps
/// (SQLite probes for its `-journal` and `-wal` files before every transaction).
fn reply_lookup(reply: impl EntryAnswer, result: FsResult<Attr>) {
    match result {
        Err(Errno::ENOENT) => reply.entry_with_ttls(&Duration::ZERO, &TTL, &translate::negative_entry(), GENERATION),
        result => reply_entry(reply, result),
    }
}

fn reply_attr(reply: impl AttrAnswer, result: FsResult<Attr>) {
    match result {
        Ok(attr) => reply.attr(&TTL, &file_attr(&attr)),
        Err(e) => reply.error(errno(e)),
    }
}

fn reply_empty(reply: impl EmptyAnswer, result: FsResult<()>) {
    match result {
        Ok(()) => reply.ok(),
        Err(e) => reply.error(errno(e)),
    }
}

fn reply_xattr(reply: impl XattrAnswer, value: &[u8], size: u32) {
    match translate::xattr_reply(value, size) {
        Ok(translate::XattrReply::Size(len)) => reply.size(len),
        Ok(translate::XattrReply::Data(data)) => reply.data(data),
        Err(e) => reply.error(errno(e)),
    }
}

/// The ops, each written once for both transports: the fuser session
/// (`fuser_session`) and the ring (`ring_session`) call them with the
/// request's caller, its decoded arguments and their own answer type.
// An op takes its request's arguments one by one, as fuser's callbacks do.
#[allow(clippy::too_many_arguments)]
impl McfsFs {
    pub(crate) fn lookup(&self, caller: Caller, parent: INodeNo, name: &OsStr, reply: impl EntryAnswer) {
        self.serve(caller, name, move |fs, name| reply_lookup(reply, fs.engine.lookup(caller, parent.0, name)));
    }

    pub(crate) fn forget(&self, ino: INodeNo, nlookup: u64) {
        self.served.engine.forget(ino.0, nlookup);
    }

    pub(crate) fn getattr(&self, caller: Caller, ino: INodeNo, reply: impl AttrAnswer) {
        self.serve(caller, &(), move |fs, ()| reply_attr(reply, fs.engine.getattr(ino.0)));
    }

    pub(crate) fn setattr(
        &self,
        caller: Caller,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        reply: impl AttrAnswer,
    ) {
        let set = translate::set_attr(mode, uid, gid, size, atime, mtime);
        // A setattr with nothing the engine keeps (only ctime or a lock owner) changes nothing.
        // A truncate by anyone but root (standing for CAP_FSETID) drops set-id bits (FUSE_HANDLE_KILLPRIV_V2).
        let drops_set_id_bits = set.size.is_some() && set.perm.is_none() && caller.uid != 0;
        let only_times = set.sets_only_times();
        let work = move |fs: &Served, _: &()| {
            let result = if set == mcfs_core::SetAttr::default() {
                fs.engine.getattr(ino.0)
            } else if drops_set_id_bits {
                fs.drop_set_id_bits(caller, ino.0).and_then(|_| fs.engine.setattr(caller, ino.0, &set))
            } else {
                fs.engine.setattr(caller, ino.0, &set)
            };
            let result = match set.size {
                Some(size) => fs.observed(Some(caller), result, |_| ServedOp::Truncate { ino: ino.0, size }),
                None => result,
            };
            reply_attr(reply, result);
        };
        // Times alone are logged with the file's data and end no VCT; the kernel
        // may send them from inside a writeback, which a handover would wait for.
        if only_times {
            self.serve(caller, &(), work);
        } else {
            self.serve_ending(caller, Ends::Change, Touched::inode(ino.0), &(), work);
        }
    }

    pub(crate) fn readlink(&self, caller: Caller, ino: INodeNo, reply: impl DataAnswer) {
        self.serve(caller, &(), move |fs, ()| match fs.engine.readlink(ino.0) {
            Ok(target) => reply.data(target.as_bytes()),
            Err(e) => reply.error(errno(e)),
        });
    }

    pub(crate) fn mknod(
        &self,
        caller: Caller,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        rdev: u32,
        reply: impl EntryAnswer,
    ) {
        let perm = translate::new_perm(mode, umask);
        match translate::mknod_kind(mode) {
            Ok(kind) => self.serve_ending(caller, Ends::Change, Touched::inode(parent.0), name, move |fs, name| {
                reply_entry(reply, fs.engine.mknod(caller, parent.0, name, kind, perm, rdev))
            }),
            Err(e) => reply.error(errno(e)),
        }
    }

    pub(crate) fn mkdir(
        &self,
        caller: Caller,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: impl EntryAnswer,
    ) {
        let perm = translate::new_perm(mode, umask);
        self.serve_ending(caller, Ends::Change, Touched::inode(parent.0), name, move |fs, name| {
            let result = fs.engine.mkdir(caller, parent.0, name, perm);
            reply_entry(reply, fs.observed(Some(caller), result, |attr| ServedOp::Mkdir { ino: attr.ino }));
        });
    }

    pub(crate) fn unlink(&self, caller: Caller, parent: INodeNo, name: &OsStr, reply: impl EmptyAnswer) {
        self.serve_ending(caller, NAMESPACE_SYNC_POINT, Touched::entry(parent.0, name), name, move |fs, name| {
            let result = fs.engine.unlink(caller, parent.0, name);
            reply_empty(reply, fs.observed(Some(caller), result, |()| ServedOp::Unlink { parent: parent.0, name }));
        });
    }

    pub(crate) fn rmdir(&self, caller: Caller, parent: INodeNo, name: &OsStr, reply: impl EmptyAnswer) {
        self.serve_ending(caller, NAMESPACE_SYNC_POINT, Touched::entry(parent.0, name), name, move |fs, name| {
            let result = fs.engine.rmdir(caller, parent.0, name);
            reply_empty(reply, fs.observed(Some(caller), result, |()| ServedOp::Rmdir { parent: parent.0, name }));
        });
    }

    pub(crate) fn symlink(
        &self,
        caller: Caller,
        parent: INodeNo,
        link_name: &OsStr,
        target: &OsStr,
        reply: impl EntryAnswer,
    ) {
        let target = target.to_os_string();
        self.serve_ending(caller, Ends::Change, Touched::inode(parent.0), link_name, move |fs, link_name| {
            reply_entry(reply, fs.engine.symlink(caller, parent.0, link_name, &target))
        });
    }

    pub(crate) fn rename(
        &self,
        caller: Caller,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: impl EmptyAnswer,
    ) {
        let mode = match translate::rename_mode(flags) {
            Ok(mode) => mode,
            Err(e) => return reply.error(errno(e)),
        };
        let touched = Touched::entry(parent.0, name).and_entry(newparent.0, newname);
        let newname = newname.to_os_string();
        self.serve_ending(caller, NAMESPACE_SYNC_POINT, touched, name, move |fs, name| {
            let result = fs.engine.rename(caller, parent.0, name, newparent.0, &newname, mode);
            let result = fs.observed(Some(caller), result, |()| ServedOp::Rename {
                parent: parent.0,
                name,
                new_parent: newparent.0,
                new_name: &newname,
                exchange: mode == RenameMode::Exchange,
            });
            reply_empty(reply, result);
        });
    }

    pub(crate) fn link(
        &self,
        caller: Caller,
        ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
        reply: impl EntryAnswer,
    ) {
        let touched = Touched::entry(newparent.0, newname).and_inode(ino.0);
        self.serve_ending(caller, NAMESPACE_SYNC_POINT, touched, newname, move |fs, newname| {
            let result = fs.engine.link(caller, ino.0, newparent.0, newname);
            let op = |_: &_| ServedOp::Link { ino: ino.0, new_parent: newparent.0, new_name: newname };
            reply_entry(reply, fs.observed(Some(caller), result, op));
        });
    }

    pub(crate) fn open(&self, caller: Caller, ino: INodeNo, flags: i32, reply: impl OpenAnswer) {
        // O_TRUNC never arrives here (no FUSE_ATOMIC_O_TRUNC): the kernel truncates with a setattr.
        // Refused where nobody needs to hear of opens; the kernel then keeps its
        // cached pages across opens as FOPEN_KEEP_CACHE asks (its default without OPEN).
        if !self.served.hears_opens() {
            return reply.error(fuser::Errno::ENOSYS);
        }
        self.serve(caller, &(), move |fs, ()| {
            let result = fs.engine.open_file(ino.0);
            match fs.observed(Some(caller), result, |()| ServedOp::Open { ino: ino.0 }) {
                // KEEP_CACHE: the kernel's cached pages stay valid across opens,
                // since every write to the file comes through this mount.
                Ok(()) => {
                    fs.opened(ino.0, flags);
                    reply.opened(FILE_HANDLE, FopenFlags::FOPEN_KEEP_CACHE)
                }
                Err(e) => reply.error(errno(e)),
            }
        });
    }

    pub(crate) fn create(
        &self,
        caller: Caller,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: impl CreateAnswer,
    ) {
        let perm = translate::new_perm(mode, umask);
        let truncated = translate::truncates(flags);
        self.serve_ending(caller, Ends::Change, Touched::inode(parent.0), name, move |fs, name| {
            let result = fs.create_truncated(caller, parent.0, name, perm, flags);
            match fs.observed(Some(caller), result, |attr| ServedOp::Create { ino: attr.ino, truncated }) {
                Ok(attr) => {
                    fs.opened(attr.ino, flags);
                    if !fs.hears_opens() {
                        // No RELEASE will give back the open the engine counted (`hears_opens`).
                        fs.engine.release(attr.ino);
                    }
                    reply.created(&TTL, &file_attr(&attr), GENERATION, FILE_HANDLE, FopenFlags::FOPEN_KEEP_CACHE)
                }
                Err(e) => reply.error(errno(e)),
            }
        });
    }

    pub(crate) fn read(&self, caller: Caller, ino: INodeNo, offset: u64, size: u32, reply: impl DataAnswer) {
        self.serve(caller, &(), move |fs, ()| {
            // The kernel's page cache keeps what it reads (FOPEN_KEEP_CACHE).
            let result = fs.engine.read_streamed(ino.0, offset, size);
            match fs.observed(Some(caller), result, |data| ServedOp::Read {
                ino: ino.0,
                offset,
                len: data.len() as u64,
            }) {
                Ok(data) => reply.data(&data),
                Err(e) => reply.error(errno(e)),
            }
        });
    }

    pub(crate) fn write(
        &self,
        caller: Caller,
        ino: INodeNo,
        offset: u64,
        data: &[u8],
        write_flags: WriteFlags,
        reply: impl WriteAnswer,
    ) {
        let caller = translate::write_caller(caller, write_flags);
        let piece = translate::write_piece(offset, data.len(), self.pages_per_write);
        // Set for a writer without CAP_FSETID (FUSE_HANDLE_KILLPRIV_V2).
        let drops_set_id_bits = write_flags.contains(WriteFlags::FUSE_WRITE_KILL_SUIDGID);
        let write = move |fs: &Served, data: &[u8]| {
            let dropped = match caller {
                Some(writer) if drops_set_id_bits => fs.drop_set_id_bits(writer, ino.0),
                _ => Ok(false),
            };
            if dropped == Ok(true) {
                fs.attributes_changed(ino.0);
            }
            let result = dropped.and_then(|_| fs.engine.write_piece(caller, ino.0, offset, data, piece));
            match fs.observed(caller, result, |n| ServedOp::Write { ino: ino.0, offset, len: u64::from(*n) }) {
                Ok(written) => reply.written(written),
                Err(e) => reply.error(errno(e)),
            }
        };
        match caller {
            Some(writer) => self.serve(writer, data, write),
            // Kernel writeback (sync-point mode's writeback cache) has no app to class.
            None => write(&self.served, data),
        }
    }

    /// close(2). Only a mount that records a trace has anything to do here:
    /// the close is an event of the trace, heard here in order with the
    /// caller's other calls (a release may come any time later). Any other
    /// mount answers `ENOSYS`, and the kernel sends no FLUSH for the rest of
    /// the connection: one round trip less per close. The kernel still
    /// writes a file's dirty pages back at close first; an op a checkpoint
    /// could not store is reported at the app's next fsync, as ext4 reports
    /// writeback errors (README, "What is guaranteed").
    pub(crate) fn flush(&self, caller: Caller, ino: INodeNo, reply: impl EmptyAnswer) {
        match &self.served.observer {
            Some(observer) => {
                observer.served(Some(caller), ServedOp::Close { ino: ino.0 });
                reply.ok();
            }
            None => reply.error(fuser::Errno::ENOSYS),
        }
    }

    pub(crate) fn release(&self, ino: INodeNo, flags: i32, reply: impl EmptyAnswer) {
        if let Some(handover) = &self.served.handover {
            handover.released(ino.0, flags);
        }
        self.served.engine.release(ino.0);
        reply.ok();
    }

    /// fsync and fdatasync alike: the engine decides what durability the
    /// caller's app gets (a VCT boundary, or a real commit in sync mode).
    pub(crate) fn fsync(&self, caller: Caller, ino: INodeNo, datasync: bool, reply: impl EmptyAnswer) {
        // The kernel wrote this file's dirty pages back before it sent FSYNC.
        self.serve_ending(caller, Ends::SyncPoint { synced: Some(ino.0) }, Touched::default(), &(), move |fs, ()| {
            let result = fs.engine.fsync(Some(caller), ino.0);
            reply_empty(reply, fs.observed(Some(caller), result, |()| ServedOp::Fsync { ino: ino.0, datasync }));
        });
    }

    /// Refused once, so that the kernel stops sending OPENDIR and RELEASEDIR
    /// and caches directory listings itself (`dir_stream`).
    pub(crate) fn opendir(&self, reply: impl OpenAnswer) {
        reply.error(fuser::Errno::ENOSYS);
    }

    pub(crate) fn readdir(&self, caller: Caller, ino: INodeNo, offset: u64, mut reply: impl DirAnswer) {
        self.serve(caller, &(), move |fs, ()| {
            let listed = dir_stream::each_item(
                ino.0,
                offset,
                |first, max| fs.engine.readdir(ino.0, first, max),
                |item| Ok(reply.add(INodeNo(item.ino), item.offset, file_type(item.kind), item.name)),
            );
            match listed {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(errno(e)),
            }
        });
    }

    /// Like readdir, with each entry's attributes. The kernel counts a
    /// lookup for every entry it receives except `.` and `..`, so entries
    /// are looked up (taking that reference) rather than stat'ed.
    pub(crate) fn readdirplus(&self, caller: Caller, ino: INodeNo, offset: u64, mut reply: impl DirPlusAnswer) {
        self.serve(caller, &(), move |fs, ()| {
            let listed = dir_stream::each_item(
                ino.0,
                offset,
                |first, max| fs.engine.readdir(ino.0, first, max),
                |item| {
                    let found = if item.is_dot() {
                        fs.engine.getattr(ino.0)
                    } else {
                        fs.engine.lookup(caller, ino.0, item.name)
                    };
                    let attr = match found {
                        Ok(attr) => attr,
                        // Removed since the batch was listed: not part of the directory any more.
                        Err(Errno::ENOENT) if !item.is_dot() => return Ok(false),
                        Err(e) => return Err(e),
                    };
                    let full =
                        reply.add(INodeNo(attr.ino), item.offset, item.name, &TTL, &file_attr(&attr), GENERATION);
                    if full && !item.is_dot() {
                        fs.engine.forget(attr.ino, 1);
                    }
                    Ok(full)
                },
            );
            match listed {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(errno(e)),
            }
        });
    }

    pub(crate) fn fsyncdir(&self, caller: Caller, reply: impl EmptyAnswer) {
        let sync = move |fs: &Served, _: &()| reply_empty(reply, fs.engine.sync_app(Some(caller)));
        self.serve_ending(caller, NAMESPACE_SYNC_POINT, Touched::default(), &(), sync);
    }

    pub(crate) fn statfs(&self, reply: impl StatfsAnswer) {
        match self.served.engine.statfs() {
            Ok(s) => reply.statfs(s.blocks, s.bfree, s.bavail, s.files, s.ffree, s.bsize, s.namelen, s.bsize),
            Err(e) => reply.error(errno(e)),
        }
    }

    pub(crate) fn setxattr(
        &self,
        caller: Caller,
        ino: INodeNo,
        name: &OsStr,
        value: &[u8],
        flags: i32,
        position: u32,
        reply: impl EmptyAnswer,
    ) {
        // `position` is a macOS resource-fork offset; Linux always sends 0.
        let mode = match if position != 0 { Err(Errno::EINVAL) } else { translate::xattr_mode(flags) } {
            Ok(mode) => mode,
            Err(e) => return reply.error(errno(e)),
        };
        let name = name.to_os_string();
        self.serve_ending(caller, Ends::Change, Touched::inode(ino.0), value, move |fs, value| {
            reply_empty(reply, fs.engine.setxattr(caller, ino.0, &name, value, mode))
        });
    }

    pub(crate) fn getxattr(&self, caller: Caller, ino: INodeNo, name: &OsStr, size: u32, reply: impl XattrAnswer) {
        self.serve(caller, name, move |fs, name| match fs.engine.getxattr(ino.0, name) {
            Ok(value) => reply_xattr(reply, &value, size),
            Err(e) => reply.error(errno(e)),
        });
    }

    pub(crate) fn listxattr(&self, caller: Caller, ino: INodeNo, size: u32, reply: impl XattrAnswer) {
        self.serve(caller, &(), move |fs, ()| match fs.engine.listxattr(ino.0) {
            Ok(names) => reply_xattr(reply, &translate::xattr_name_list(&names), size),
            Err(e) => reply.error(errno(e)),
        });
    }

    pub(crate) fn removexattr(&self, caller: Caller, ino: INodeNo, name: &OsStr, reply: impl EmptyAnswer) {
        let remove = move |fs: &Served, name: &OsStr| reply_empty(reply, fs.engine.removexattr(caller, ino.0, name));
        self.serve_ending(caller, Ends::Change, Touched::inode(ino.0), name, remove);
    }

    // access: not implemented — the mount uses default_permissions, so the
    // kernel checks permissions itself and never sends ACCESS. Of fuser's
    // other defaults, each of which logs a warning per call, only ioctl can
    // be sent again and again (the kernel remembers ENOSYS from poll, lseek,
    // copy_file_range and bmap, and sends no locks without FUSE_POSIX_LOCKS).

    /// ioctls are not passed to the backing store: ENOTTY, what ext4 answers
    /// on a regular file for a command it does not know, such as the TCGETS
    /// Python's `open()` sends. Quietly: any app can send them by the
    /// thousand, and fuser's default logs each one.
    pub(crate) fn ioctl(&self, reply: impl Answer) {
        reply.error(fuser::Errno::ENOTTY);
    }

    pub(crate) fn fallocate(
        &self,
        caller: Caller,
        ino: INodeNo,
        offset: u64,
        length: u64,
        mode: i32,
        reply: impl EmptyAnswer,
    ) {
        self.serve(caller, &(), move |fs, ()| reply_empty(reply, fs.engine.fallocate(ino.0, offset, length, mode)));
    }

    /// Only SEEK_DATA and SEEK_HOLE reach here; the kernel answers the
    /// others. In sync-point mode the kernel may still hold pages (and the
    /// size they made) that the engine has not seen, and FUSE writes none
    /// back before an lseek: a file open for writing is handed over first,
    /// or a copy (`cp` looks for data with SEEK_DATA) would find a hole, or
    /// nothing at all, where the app wrote.
    pub(crate) fn lseek(&self, caller: Caller, ino: INodeNo, offset: i64, whence: i32, reply: impl LseekAnswer) {
        let Ok(offset) = u64::try_from(offset) else { return reply.error(errno(Errno::ENXIO)) };
        let seek = move |fs: &Served| {
            let at = fs.engine.lseek(ino.0, offset, whence);
            match at.and_then(|at| i64::try_from(at).map_err(|_| Errno::EINVAL)) {
                Ok(at) => reply.offset(at),
                Err(e) => reply.error(errno(e)),
            }
        };
        let served = Arc::clone(&self.served);
        self.serve(caller, &(), move |fs, ()| match &fs.handover {
            Some(handover) => handover.then(|written| written == ino.0, Box::new(move || seek(&served))),
            None => seek(fs),
        });
    }
}
