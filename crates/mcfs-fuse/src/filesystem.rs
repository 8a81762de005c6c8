//! `McfsFs`: the fuser `Filesystem` over `mcfs_core::Engine`. Each request
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

use crate::dir_handles::{items_from, DirHandles};
use crate::handover::Handover;
use crate::held_requests::{HeldRequests, HELD_REQUEST_THREADS};
use crate::io_priority;
use crate::observer::{RequestObserver, ServedOp};
use crate::translate::{self, caller, errno, file_attr, file_type};
use fuser::{
    FileHandle, Filesystem, FopenFlags, Generation, INodeNo, InitFlags, KernelConfig, LockOwner, OpenFlags,
    RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyDirectoryPlus, ReplyEmpty, ReplyEntry,
    ReplyLseek, ReplyOpen, ReplyStatfs, ReplyWrite, ReplyXattr, Request, TimeOrNow, WriteFlags,
};
use mcfs_core::{Attr, Caller, Consistency, Engine, Errno, FsResult, HeldBack, RenameMode};
use std::borrow::Borrow;
use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

/// How long the kernel may trust attributes and names without asking. Long,
/// because every change reaches the backing store through this mount and the
/// kernel updates or drops its cache on each change it sends us. That holds
/// for missing names too: a lookup that finds nothing is answered with a
/// negative entry (inode 0) the kernel keeps for as long, and every name
/// mcfs makes is made by a request through this mount, whose reply replaces
/// the kernel's negative entry (the engine never makes a name on its own).
const TTL: Duration = Duration::from_secs(60);

/// Inode numbers are not exported over NFS, so generations are not needed.
const GENERATION: Generation = Generation(0);

/// File opens need no per-open state: the engine counts opens per inode.
const FILE_HANDLE: FileHandle = FileHandle(0);

pub struct McfsFs {
    served: Arc<Served>,
    held: HeldRequests,
    /// Pages the kernel puts in one write request at most (`translate::write_piece`).
    pages_per_write: u64,
}

/// What serving a request needs, shared with the threads of held-back requests.
struct Served {
    engine: Arc<Engine>,
    dirs: DirHandles,
    observer: Option<Arc<dyn RequestObserver>>,
    /// `fasttrack.dispatch`: serving threads take the I/O priority of each request's class.
    tags_io_priority: bool,
    /// Sync-point consistency: the kernel's dirty pages handed over before each sync point.
    handover: Option<Handover>,
}

impl McfsFs {
    /// Serves `engine`, telling `observer` (if any) about every file operation served.
    pub fn new(engine: Arc<Engine>, observer: Option<Arc<dyn RequestObserver>>) -> McfsFs {
        let tags_io_priority = engine.tags_io_priority();
        if tags_io_priority {
            // A BG commit an FG request waits for runs at FG priority meanwhile.
            engine.set_io_priorities(Box::new(io_priority::ThreadPriorities));
        }
        let handover = (engine.consistency() == Consistency::SyncPoint).then(Handover::start);
        McfsFs {
            served: Arc::new(Served { engine, dirs: DirHandles::default(), observer, tags_io_priority, handover }),
            held: HeldRequests::start(HELD_REQUEST_THREADS),
            pages_per_write: crate::kernel_config::pages_per_write(),
        }
    }

    /// Where the mount puts the session's notifier (sync-point mode only).
    pub fn notifier_slot(&self) -> Option<Arc<OnceLock<fuser::Notifier>>> {
        self.served.handover.as_ref().map(Handover::notifier_slot)
    }

    /// Serves a sync point of `caller` (an fsync of `synced`, fsyncdir, a
    /// rename, unlink, rmdir or link) as `serve` does; in sync-point mode
    /// `work` runs once the kernel has handed over the dirty pages of every
    /// file of the caller's app open for writing (`handover`), but the one
    /// an fsync flushed itself.
    fn serve_sync_point<I>(
        &self,
        caller: Caller,
        synced: Option<u64>,
        input: &I,
        work: impl FnOnce(&Served, &I) + Send + 'static,
    ) where
        I: ToOwned + ?Sized,
        I::Owned: Send + 'static,
    {
        let served = Arc::clone(&self.served);
        self.serve(caller, input, move |fs, input| {
            let Some(handover) = &fs.handover else { return work(fs, input) };
            let input = input.to_owned();
            let pick = |ino| Some(ino) != synced && fs.engine.logs_data_of(caller, ino);
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
    /// A file open succeeded (counted for `handover` in sync-point mode).
    fn opened(&self, ino: u64, flags: i32) {
        if let Some(handover) = &self.handover {
            handover.opened(ino, flags);
        }
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

fn reply_entry(reply: ReplyEntry, result: FsResult<Attr>) {
    match result {
        Ok(attr) => reply.entry(&TTL, &file_attr(&attr), GENERATION),
        Err(e) => reply.error(errno(e)),
    }
}

/// A lookup's answer: a missing name is a negative entry the kernel keeps
/// (SQLite probes for its `-journal` and `-wal` files before every transaction).
fn reply_lookup(reply: ReplyEntry, result: FsResult<Attr>) {
    match result {
        Err(Errno::ENOENT) => reply.entry_with_ttls(&Duration::ZERO, &TTL, &translate::negative_entry(), GENERATION),
        result => reply_entry(reply, result),
    }
}

fn reply_attr(reply: ReplyAttr, result: FsResult<Attr>) {
    match result {
        Ok(attr) => reply.attr(&TTL, &file_attr(&attr)),
        Err(e) => reply.error(errno(e)),
    }
}

fn reply_empty(reply: ReplyEmpty, result: FsResult<()>) {
    match result {
        Ok(()) => reply.ok(),
        Err(e) => reply.error(errno(e)),
    }
}

fn reply_xattr(reply: ReplyXattr, value: &[u8], size: u32) {
    match translate::xattr_reply(value, size) {
        Ok(translate::XattrReply::Size(len)) => reply.size(len),
        Ok(translate::XattrReply::Data(data)) => reply.data(data),
        Err(e) => reply.error(errno(e)),
    }
}

impl Filesystem for McfsFs {
    /// Kernel settings. The writeback cache only in sync-point mode: with
    /// it the kernel owns mtime, ctime and size of regular files, sends the
    /// times in a SETATTR after writing pages back, and sends data later on
    /// nobody's behalf (the engine charges it to the file's app); VCT
    /// boundaries must then wait for sync points (`handover`). FUSE_ATOMIC_O_TRUNC stays off
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
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> io::Result<()> {
        // Sync-point mode: writes stay in the kernel's page cache until
        // writeback or a sync point's handover (see `handover`).
        let writeback_cache =
            if self.served.handover.is_some() { InitFlags::FUSE_WRITEBACK_CACHE } else { InitFlags::empty() };
        crate::ask_kernel_for(
            config,
            &[
                writeback_cache,
                // Several reads of one file in flight at once.
                InitFlags::FUSE_ASYNC_READ,
                // Lookups and readdirs in one directory run in parallel.
                InitFlags::FUSE_PARALLEL_DIROPS,
                // `ls -l` gets names and attributes in one pass, when the kernel sees it helps.
                InitFlags::FUSE_DO_READDIRPLUS | InitFlags::FUSE_READDIRPLUS_AUTO,
                // ACLs enforced by the kernel; the umask applied by the engine.
                InitFlags::FUSE_POSIX_ACL | InitFlags::FUSE_DONT_MASK,
            ],
        );
        Ok(())
    }

    /// The orderly stop (engine.shutdown) is the mounting program's job once
    /// the session has ended; nothing is torn down here, so a request that
    /// still arrives is served normally.
    fn destroy(&mut self) {}

    fn lookup(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let caller = caller(req);
        self.serve(caller, name, move |fs, name| reply_lookup(reply, fs.engine.lookup(caller, parent.0, name)));
    }

    // batch_forget: fuser's default calls this once per inode.
    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        self.served.engine.forget(ino.0, nlookup);
    }

    fn getattr(&self, req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        self.serve(caller(req), &(), move |fs, ()| reply_attr(reply, fs.engine.getattr(ino.0)));
    }

    fn setattr(
        &self,
        req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let caller = caller(req);
        let set = translate::set_attr(mode, uid, gid, size, atime, mtime);
        // A setattr with nothing the engine keeps (only ctime or a lock owner) changes nothing.
        self.serve(caller, &(), move |fs, ()| {
            let result = if set == mcfs_core::SetAttr::default() {
                fs.engine.getattr(ino.0)
            } else {
                fs.engine.setattr(caller, ino.0, &set)
            };
            let result = match set.size {
                Some(size) => fs.observed(Some(caller), result, |_| ServedOp::Truncate { ino: ino.0, size }),
                None => result,
            };
            reply_attr(reply, result);
        });
    }

    fn readlink(&self, req: &Request, ino: INodeNo, reply: ReplyData) {
        self.serve(caller(req), &(), move |fs, ()| match fs.engine.readlink(ino.0) {
            Ok(target) => reply.data(target.as_bytes()),
            Err(e) => reply.error(errno(e)),
        });
    }

    fn mknod(&self, req: &Request, parent: INodeNo, name: &OsStr, mode: u32, umask: u32, rdev: u32, reply: ReplyEntry) {
        let (caller, perm) = (caller(req), translate::new_perm(mode, umask));
        match translate::mknod_kind(mode) {
            Ok(kind) => self.serve(caller, name, move |fs, name| {
                reply_entry(reply, fs.engine.mknod(caller, parent.0, name, kind, perm, rdev))
            }),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn mkdir(&self, req: &Request, parent: INodeNo, name: &OsStr, mode: u32, umask: u32, reply: ReplyEntry) {
        let (caller, perm) = (caller(req), translate::new_perm(mode, umask));
        self.serve(caller, name, move |fs, name| {
            let result = fs.engine.mkdir(caller, parent.0, name, perm);
            reply_entry(reply, fs.observed(Some(caller), result, |attr| ServedOp::Mkdir { ino: attr.ino }));
        });
    }

    fn unlink(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let caller = caller(req);
        self.serve_sync_point(caller, None, name, move |fs, name| {
            let result = fs.engine.unlink(caller, parent.0, name);
            reply_empty(reply, fs.observed(Some(caller), result, |()| ServedOp::Unlink { parent: parent.0, name }));
        });
    }

    fn rmdir(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let caller = caller(req);
        self.serve_sync_point(caller, None, name, move |fs, name| {
            let result = fs.engine.rmdir(caller, parent.0, name);
            reply_empty(reply, fs.observed(Some(caller), result, |()| ServedOp::Rmdir { parent: parent.0, name }));
        });
    }

    fn symlink(&self, req: &Request, parent: INodeNo, link_name: &OsStr, target: &Path, reply: ReplyEntry) {
        let caller = caller(req);
        let target = target.as_os_str().to_os_string();
        self.serve(caller, link_name, move |fs, link_name| {
            reply_entry(reply, fs.engine.symlink(caller, parent.0, link_name, &target))
        });
    }

    fn rename(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let caller = caller(req);
        let mode = match translate::rename_mode(flags) {
            Ok(mode) => mode,
            Err(e) => return reply.error(errno(e)),
        };
        let newname = newname.to_os_string();
        self.serve_sync_point(caller, None, name, move |fs, name| {
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

    fn link(&self, req: &Request, ino: INodeNo, newparent: INodeNo, newname: &OsStr, reply: ReplyEntry) {
        let caller = caller(req);
        self.serve_sync_point(caller, None, newname, move |fs, newname| {
            let result = fs.engine.link(caller, ino.0, newparent.0, newname);
            let op = |_: &_| ServedOp::Link { ino: ino.0, new_parent: newparent.0, new_name: newname };
            reply_entry(reply, fs.observed(Some(caller), result, op));
        });
    }

    fn open(&self, req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        // O_TRUNC never arrives here (no FUSE_ATOMIC_O_TRUNC): the kernel truncates with a setattr.
        let caller = caller(req);
        self.serve(caller, &(), move |fs, ()| {
            let result = fs.engine.open_file(ino.0);
            match fs.observed(Some(caller), result, |()| ServedOp::Open { ino: ino.0 }) {
                // KEEP_CACHE: the kernel's cached pages stay valid across opens,
                // since every write to the file comes through this mount.
                Ok(()) => {
                    fs.opened(ino.0, flags.0);
                    reply.opened(FILE_HANDLE, FopenFlags::FOPEN_KEEP_CACHE)
                }
                Err(e) => reply.error(errno(e)),
            }
        });
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let caller = caller(req);
        let perm = translate::new_perm(mode, umask);
        let truncated = translate::truncates(flags);
        self.serve(caller, name, move |fs, name| {
            let result = fs.create_truncated(caller, parent.0, name, perm, flags);
            match fs.observed(Some(caller), result, |attr| ServedOp::Create { ino: attr.ino, truncated }) {
                Ok(attr) => {
                    fs.opened(attr.ino, flags);
                    reply.created(&TTL, &file_attr(&attr), GENERATION, FILE_HANDLE, FopenFlags::FOPEN_KEEP_CACHE)
                }
                Err(e) => reply.error(errno(e)),
            }
        });
    }

    fn read(
        &self,
        req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let caller = caller(req);
        self.serve(caller, &(), move |fs, ()| {
            let result = fs.engine.read(ino.0, offset, size);
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

    fn write(
        &self,
        req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let caller = translate::write_caller(req, write_flags);
        let piece = translate::write_piece(offset, data.len(), self.pages_per_write);
        let write = move |fs: &Served, data: &[u8]| {
            let result = fs.engine.write_piece(caller, ino.0, offset, data, piece);
            match fs.observed(caller, result, |n| ServedOp::Write { ino: ino.0, offset, len: u64::from(*n) }) {
                Ok(written) => reply.written(written),
                Err(e) => reply.error(errno(e)),
            }
        };
        match caller {
            Some(writer) => self.serve(writer, data, write),
            // Kernel writeback (only with the writeback cache, which is off) has no app to class.
            None => write(&self.served, data),
        }
    }

    /// close(2): durability is fsync's business, and without writeback
    /// cache there is no kernel-held data to push; but an op of the caller's
    /// on this file that a checkpoint could not store is reported here, once,
    /// as close(2) reports a writeback error. The observer hears of it here,
    /// in order with the caller's other calls (a release may come any time later).
    fn flush(&self, req: &Request, ino: INodeNo, _fh: FileHandle, _lock_owner: LockOwner, reply: ReplyEmpty) {
        let caller = caller(req);
        if let Some(observer) = &self.served.observer {
            observer.served(Some(caller), ServedOp::Close { ino: ino.0 });
        }
        reply_empty(reply, self.served.engine.flush(Some(caller), ino.0));
    }

    fn release(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        if let Some(handover) = &self.served.handover {
            handover.released(ino.0, flags.0);
        }
        self.served.engine.release(ino.0);
        reply.ok();
    }

    /// fsync and fdatasync alike: the engine decides what durability the
    /// caller's app gets (a VCT boundary, or a real commit in sync mode).
    fn fsync(&self, req: &Request, ino: INodeNo, _fh: FileHandle, datasync: bool, reply: ReplyEmpty) {
        let caller = caller(req);
        // The kernel wrote this file's dirty pages back before it sent FSYNC.
        self.serve_sync_point(caller, Some(ino.0), &(), move |fs, ()| {
            let result = fs.engine.fsync(Some(caller), ino.0);
            reply_empty(reply, fs.observed(Some(caller), result, |()| ServedOp::Fsync { ino: ino.0, datasync }));
        });
    }

    fn opendir(&self, _req: &Request, _ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        reply.opened(FileHandle(self.served.dirs.open()), FopenFlags::empty());
    }

    fn readdir(&self, req: &Request, ino: INodeNo, fh: FileHandle, offset: u64, mut reply: ReplyDirectory) {
        self.serve(caller(req), &(), move |fs, ()| {
            let listing = match fs.dirs.listing(fh.0, offset, || fs.engine.readdir(ino.0)) {
                Ok(listing) => listing,
                Err(e) => return reply.error(errno(e)),
            };
            for item in items_from(ino.0, &listing, offset) {
                if reply.add(INodeNo(item.ino), item.offset, file_type(item.kind), item.name) {
                    break;
                }
            }
            reply.ok();
        });
    }

    /// Like readdir, with each entry's attributes. The kernel counts a
    /// lookup for every entry it receives except `.` and `..`, so entries
    /// are looked up (taking that reference) rather than stat'ed.
    fn readdirplus(&self, req: &Request, ino: INodeNo, fh: FileHandle, offset: u64, mut reply: ReplyDirectoryPlus) {
        let caller = caller(req);
        self.serve(caller, &(), move |fs, ()| {
            let listing = match fs.dirs.listing(fh.0, offset, || fs.engine.readdir(ino.0)) {
                Ok(listing) => listing,
                Err(e) => return reply.error(errno(e)),
            };
            let mut sent_any = false;
            for item in items_from(ino.0, &listing, offset) {
                let attr =
                    if item.is_dot() { fs.engine.getattr(ino.0) } else { fs.engine.lookup(caller, ino.0, item.name) };
                let attr = match attr {
                    Ok(attr) => attr,
                    // Removed since the listing was taken: not part of the directory any more.
                    Err(Errno::ENOENT) if !item.is_dot() => continue,
                    // Report the failure now if nothing was sent, else on the next call.
                    Err(e) if !sent_any => return reply.error(errno(e)),
                    Err(_) => break,
                };
                if reply.add(INodeNo(attr.ino), item.offset, item.name, &TTL, &file_attr(&attr), GENERATION) {
                    if !item.is_dot() {
                        fs.engine.forget(attr.ino, 1);
                    }
                    break;
                }
                sent_any = true;
            }
            reply.ok();
        });
    }

    fn releasedir(&self, _req: &Request, _ino: INodeNo, fh: FileHandle, _flags: OpenFlags, reply: ReplyEmpty) {
        self.served.dirs.release(fh.0);
        reply.ok();
    }

    fn fsyncdir(&self, req: &Request, _ino: INodeNo, _fh: FileHandle, _datasync: bool, reply: ReplyEmpty) {
        let caller = caller(req);
        self.serve_sync_point(caller, None, &(), move |fs, ()| reply_empty(reply, fs.engine.sync_app(Some(caller))));
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        match self.served.engine.statfs() {
            Ok(s) => reply.statfs(s.blocks, s.bfree, s.bavail, s.files, s.ffree, s.bsize, s.namelen, s.bsize),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn setxattr(
        &self,
        req: &Request,
        ino: INodeNo,
        name: &OsStr,
        value: &[u8],
        flags: i32,
        position: u32,
        reply: ReplyEmpty,
    ) {
        let caller = caller(req);
        // `position` is a macOS resource-fork offset; Linux always sends 0.
        let mode = match if position != 0 { Err(Errno::EINVAL) } else { translate::xattr_mode(flags) } {
            Ok(mode) => mode,
            Err(e) => return reply.error(errno(e)),
        };
        let name = name.to_os_string();
        self.serve(caller, value, move |fs, value| {
            reply_empty(reply, fs.engine.setxattr(caller, ino.0, &name, value, mode))
        });
    }

    fn getxattr(&self, req: &Request, ino: INodeNo, name: &OsStr, size: u32, reply: ReplyXattr) {
        self.serve(caller(req), name, move |fs, name| match fs.engine.getxattr(ino.0, name) {
            Ok(value) => reply_xattr(reply, &value, size),
            Err(e) => reply.error(errno(e)),
        });
    }

    fn listxattr(&self, req: &Request, ino: INodeNo, size: u32, reply: ReplyXattr) {
        self.serve(caller(req), &(), move |fs, ()| match fs.engine.listxattr(ino.0) {
            Ok(names) => reply_xattr(reply, &translate::xattr_name_list(&names), size),
            Err(e) => reply.error(errno(e)),
        });
    }

    fn removexattr(&self, req: &Request, ino: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let caller = caller(req);
        self.serve(caller, name, move |fs, name| reply_empty(reply, fs.engine.removexattr(caller, ino.0, name)));
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
    fn ioctl(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _flags: fuser::IoctlFlags,
        _cmd: u32,
        _in_data: &[u8],
        _out_size: u32,
        reply: fuser::ReplyIoctl,
    ) {
        reply.error(fuser::Errno::ENOTTY);
    }

    fn fallocate(
        &self,
        req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        self.serve(caller(req), &(), move |fs, ()| {
            reply_empty(reply, fs.engine.fallocate(ino.0, offset, length, mode))
        });
    }

    /// Only SEEK_DATA and SEEK_HOLE reach here; the kernel answers the others.
    fn lseek(&self, req: &Request, ino: INodeNo, _fh: FileHandle, offset: i64, whence: i32, reply: ReplyLseek) {
        let Ok(offset) = u64::try_from(offset) else { return reply.error(errno(Errno::ENXIO)) };
        self.serve(caller(req), &(), move |fs, ()| {
            match fs.engine.lseek(ino.0, offset, whence).and_then(|at| i64::try_from(at).map_err(|_| Errno::EINVAL)) {
                Ok(at) => reply.offset(at),
                Err(e) => reply.error(errno(e)),
            }
        });
    }
}
