//! `FlashFs`: the fuser `Filesystem` that passes every request through to the backing directory and
//! charges the emulated flash for it: a read or write of N bytes is one read or write command of N
//! bytes, a change of metadata one small write, fsync a flush. Lookups, attributes and listings are
//! not charged (a real kernel serves them from its caches). Files are opened with direct I/O, so the
//! kernel's page cache above this mount hides no read or write from the device.
//!
//! Invariants: every request is answered exactly once, with the backing call's own errno on failure;
//! the device is charged only for what the backing store did; nothing here panics on any input.

use crate::attr::{file_attr, timespec};
use crate::flash::Flash;
use crate::handles::Handles;
use crate::inodes::{Inodes, ROOT};
use crate::listing::OpenDir;
use crate::sys::{self, XattrAnswer};
use fuser::{
    Errno, FileAttr, FileHandle, Filesystem, FopenFlags, Generation, INodeNo, InitFlags, KernelConfig, LockOwner,
    OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen,
    ReplyStatfs, ReplyWrite, ReplyXattr, Request, TimeOrNow, WriteFlags,
};
use mcfs_device::scheduler::Op;
use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// How long the kernel may trust names and attributes. Short: the backing directory may also be
/// changed by others (it is an ordinary directory).
const TTL: Duration = Duration::from_secs(1);

/// Inode numbers are not exported over NFS, so generations are not needed.
const GENERATION: Generation = Generation(0);

/// Direct I/O: every read and write reaches this file system (and so the device); parallel writes to
/// one file may be in the device queue together, as a block device's would.
const OPEN_FLAGS: FopenFlags = FopenFlags::FOPEN_DIRECT_IO.union(FopenFlags::FOPEN_PARALLEL_DIRECT_WRITES);

type Result<T> = std::result::Result<T, Errno>;

fn errno(e: io::Error) -> Errno {
    Errno::from(e)
}

pub struct FlashFs {
    inodes: Inodes,
    files: Handles<File>,
    dirs: Handles<OpenDir>,
    flash: Arc<Flash>,
    /// New files are given to the caller (only root may chown).
    give_to_caller: bool,
}

impl FlashFs {
    /// A pass-through of `backing` (a directory) on `flash`; the error names the directory.
    pub fn new(backing: &Path, flash: Arc<Flash>) -> std::result::Result<FlashFs, String> {
        let fail = |e: io::Error| format!("backing directory {}: {e}", backing.display());
        let root = sys::open_dir_path(backing).map_err(fail)?;
        let root_stat = sys::stat_fd(root.as_fd()).map_err(fail)?;
        Ok(FlashFs {
            inodes: Inodes::new(root, &root_stat),
            files: Handles::default(),
            dirs: Handles::default(),
            flash,
            // SAFETY: geteuid has no preconditions.
            give_to_caller: unsafe { libc::geteuid() } == 0,
        })
    }

    fn node(&self, ino: INodeNo) -> Result<Arc<OwnedFd>> {
        self.inodes.get(ino.0)
    }

    fn file(&self, fh: FileHandle) -> Result<Arc<File>> {
        self.files.get(fh.0)
    }

    /// Looks `name` up in `dir`, taking one kernel lookup on it.
    fn look_up(&self, dir: BorrowedFd<'_>, name: &OsStr) -> Result<FileAttr> {
        self.adopt(sys::open_path_at(dir, name).map_err(errno)?)
    }

    /// Takes one kernel lookup on the file `fd` (an `O_PATH` descriptor) holds.
    fn adopt(&self, fd: OwnedFd) -> Result<FileAttr> {
        let st = sys::stat_fd(fd.as_fd()).map_err(errno)?;
        let ino = self.inodes.remember(fd, &st);
        Ok(file_attr(ino, &st))
    }

    /// After creating `name` in `dir` for `req`: gives it to the caller (its group stays the
    /// directory's under a set-group-id directory), charges one metadata write, and looks it up.
    fn created(&self, req: &Request, dir: BorrowedFd<'_>, name: &OsStr) -> Result<FileAttr> {
        let fd = sys::open_path_at(dir, name).map_err(errno)?;
        if self.give_to_caller {
            let dir_setgid = sys::stat_fd(dir).map(|st| st.st_mode & libc::S_ISGID != 0).unwrap_or(false);
            let gid = (!dir_setgid).then(|| req.gid());
            // The node exists either way; a backing store that refuses chown leaves it root's.
            if let Err(e) = sys::chown(fd.as_fd(), Some(req.uid()), gid) {
                tracing::warn!("cannot give {name:?} to uid {}: {e}", req.uid());
            }
        }
        self.flash.charge_metadata(req.pid());
        self.adopt(fd)
    }

    fn set_attributes(&self, req: &Request, ino: INodeNo, fh: Option<FileHandle>, set: &SetAttr) -> Result<FileAttr> {
        let fd = self.node(ino)?;
        let fd = fd.as_fd();
        if let Some(mode) = set.mode {
            sys::chmod(fd, mode & 0o7777).map_err(errno)?;
        }
        if set.uid.is_some() || set.gid.is_some() {
            sys::chown(fd, set.uid, set.gid).map_err(errno)?;
        }
        if let Some(size) = set.size {
            match fh.map(|fh| self.file(fh)).transpose()? {
                Some(file) => file.set_len(size).map_err(errno)?,
                None => sys::truncate(fd, size).map_err(errno)?,
            }
        }
        if set.atime.is_some() || set.mtime.is_some() {
            sys::set_times(fd, &[timespec(set.atime), timespec(set.mtime)]).map_err(errno)?;
        }
        if set.changes_anything() {
            self.flash.charge_metadata(req.pid());
        }
        let st = sys::stat_fd(fd).map_err(errno)?;
        Ok(file_attr(ino.0, &st))
    }
}

/// What a setattr asks to change.
struct SetAttr {
    mode: Option<u32>,
    uid: Option<u32>,
    gid: Option<u32>,
    size: Option<u64>,
    atime: Option<TimeOrNow>,
    mtime: Option<TimeOrNow>,
}

impl SetAttr {
    fn changes_anything(&self) -> bool {
        self.mode.is_some()
            || self.uid.is_some()
            || self.gid.is_some()
            || self.size.is_some()
            || self.atime.is_some()
            || self.mtime.is_some()
    }
}

fn reply_entry(reply: ReplyEntry, result: Result<FileAttr>) {
    match result {
        Ok(attr) => reply.entry(&TTL, &attr, GENERATION),
        Err(e) => reply.error(e),
    }
}

fn reply_attr(reply: ReplyAttr, result: Result<FileAttr>) {
    match result {
        Ok(attr) => reply.attr(&TTL, &attr),
        Err(e) => reply.error(e),
    }
}

fn reply_empty(reply: ReplyEmpty, result: Result<()>) {
    match result {
        Ok(()) => reply.ok(),
        Err(e) => reply.error(e),
    }
}

fn reply_xattr(reply: ReplyXattr, result: Result<XattrAnswer>) {
    match result {
        Ok(XattrAnswer::Size(n)) => match u32::try_from(n) {
            Ok(n) => reply.size(n),
            Err(_) => reply.error(Errno::E2BIG),
        },
        Ok(XattrAnswer::Data(data)) => reply.data(&data),
        Err(e) => reply.error(e),
    }
}

impl Filesystem for FlashFs {
    /// Each capability only if the kernel offers it; a kernel without one still works.
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> io::Result<()> {
        mcfs_fuse::ask_kernel_for(
            config,
            &[
                // Several reads of one file in flight at once, so the device queue can fill.
                InitFlags::FUSE_ASYNC_READ,
                // Lookups and listings of one directory in parallel.
                InitFlags::FUSE_PARALLEL_DIROPS,
                // Shared mmap of files despite direct I/O (SQLite's -shm file needs it).
                InitFlags::FUSE_DIRECT_IO_ALLOW_MMAP,
            ],
        );
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        reply_entry(reply, self.node(parent).and_then(|dir| self.look_up(dir.as_fd(), name)));
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        self.inodes.forget(ino.0, nlookup);
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        let result = self.node(ino).and_then(|fd| sys::stat_fd(fd.as_fd()).map_err(errno));
        reply_attr(reply, result.map(|st| file_attr(ino.0, &st)));
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
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let set = SetAttr { mode, uid, gid, size, atime, mtime };
        reply_attr(reply, self.set_attributes(req, ino, fh, &set));
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        match self.node(ino).and_then(|fd| sys::readlink(fd.as_fd()).map_err(errno)) {
            Ok(target) => reply.data(&target),
            Err(e) => reply.error(e),
        }
    }

    /// The mode arrives with the caller's umask applied by the kernel; the daemon's own umask is 0.
    fn mknod(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        rdev: u32,
        reply: ReplyEntry,
    ) {
        let result = self.node(parent).and_then(|dir| {
            sys::mknod_at(dir.as_fd(), name, mode, rdev).map_err(errno)?;
            self.created(req, dir.as_fd(), name)
        });
        reply_entry(reply, result);
    }

    fn mkdir(&self, req: &Request, parent: INodeNo, name: &OsStr, mode: u32, _umask: u32, reply: ReplyEntry) {
        let result = self.node(parent).and_then(|dir| {
            sys::mkdir_at(dir.as_fd(), name, mode).map_err(errno)?;
            self.created(req, dir.as_fd(), name)
        });
        reply_entry(reply, result);
    }

    fn unlink(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let result = self.node(parent).and_then(|dir| sys::unlink_at(dir.as_fd(), name, false).map_err(errno));
        reply_empty(reply, result.map(|()| self.flash.charge_metadata(req.pid())));
    }

    fn rmdir(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let result = self.node(parent).and_then(|dir| sys::unlink_at(dir.as_fd(), name, true).map_err(errno));
        reply_empty(reply, result.map(|()| self.flash.charge_metadata(req.pid())));
    }

    fn symlink(&self, req: &Request, parent: INodeNo, link_name: &OsStr, target: &Path, reply: ReplyEntry) {
        let result = self.node(parent).and_then(|dir| {
            sys::symlink_at(target.as_os_str(), dir.as_fd(), link_name).map_err(errno)?;
            self.created(req, dir.as_fd(), link_name)
        });
        reply_entry(reply, result);
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
        let result = self.node(parent).and_then(|dir| {
            let new_dir = self.node(newparent)?;
            sys::rename_at(dir.as_fd(), name, new_dir.as_fd(), newname, flags.bits()).map_err(errno)
        });
        reply_empty(reply, result.map(|()| self.flash.charge_metadata(req.pid())));
    }

    fn link(&self, req: &Request, ino: INodeNo, newparent: INodeNo, newname: &OsStr, reply: ReplyEntry) {
        let result = self.node(ino).and_then(|fd| {
            let new_dir = self.node(newparent)?;
            sys::link(fd.as_fd(), new_dir.as_fd(), newname).map_err(errno)?;
            self.flash.charge_metadata(req.pid());
            self.look_up(new_dir.as_fd(), newname)
        });
        reply_entry(reply, result);
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        match self.node(ino).and_then(|fd| sys::reopen(fd.as_fd(), flags.0).map_err(errno)) {
            Ok(file) => reply.opened(FileHandle(self.files.insert(file)), OPEN_FLAGS),
            Err(e) => reply.error(e),
        }
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let result = self.node(parent).and_then(|dir| {
            let file = sys::create_at(dir.as_fd(), name, flags, mode).map_err(errno)?;
            let attr = self.created(req, dir.as_fd(), name)?;
            Ok((attr, file))
        });
        match result {
            Ok((attr, file)) => {
                let fh = FileHandle(self.files.insert(file));
                reply.created(&TTL, &attr, GENERATION, fh, OPEN_FLAGS);
            }
            Err(e) => reply.error(e),
        }
    }

    fn read(
        &self,
        req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let result = self.file(fh).and_then(|file| {
            let mut buf = vec![0u8; size as usize];
            let n = file.read_at(&mut buf, offset).map_err(errno)?;
            buf.truncate(n);
            Ok(buf)
        });
        match result {
            Ok(data) => {
                if !data.is_empty() {
                    self.flash.charge(req.pid(), Op::Read(data.len() as u64));
                }
                reply.data(&data);
            }
            Err(e) => reply.error(e),
        }
    }

    fn write(
        &self,
        req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let result = self.file(fh).and_then(|file| file.write_at(data, offset).map_err(errno));
        match result {
            Ok(n) => {
                if n > 0 {
                    self.flash.charge(req.pid(), Op::Write(n as u64));
                }
                // `n` is at most data.len(), which the kernel bounds by max_write.
                reply.written(u32::try_from(n).unwrap_or(u32::MAX));
            }
            Err(e) => reply.error(e),
        }
    }

    /// close(2): nothing to push (no write-back cache); durability is fsync's business.
    fn flush(&self, _req: &Request, _ino: INodeNo, _fh: FileHandle, _lock_owner: LockOwner, reply: ReplyEmpty) {
        reply.ok();
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.files.remove(fh.0);
        reply.ok();
    }

    /// fsync and fdatasync: the backing file's, then a flush command.
    fn fsync(&self, req: &Request, _ino: INodeNo, fh: FileHandle, datasync: bool, reply: ReplyEmpty) {
        let result =
            self.file(fh).and_then(|file| if datasync { file.sync_data() } else { file.sync_all() }.map_err(errno));
        reply_empty(reply, result.map(|()| self.flash.charge(req.pid(), Op::Flush)));
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match self.node(ino) {
            Ok(fd) => reply.opened(FileHandle(self.dirs.insert(OpenDir::new(fd))), FopenFlags::empty()),
            Err(e) => reply.error(e),
        }
    }

    fn readdir(&self, _req: &Request, _ino: INodeNo, fh: FileHandle, offset: u64, mut reply: ReplyDirectory) {
        let result = self.dirs.get(fh.0).and_then(|dir| {
            dir.read(&self.inodes, offset, |item, next| reply.add(INodeNo(item.ino), next, item.kind, &item.name))
                .map_err(errno)
        });
        match result {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn releasedir(&self, _req: &Request, _ino: INodeNo, fh: FileHandle, _flags: OpenFlags, reply: ReplyEmpty) {
        self.dirs.remove(fh.0);
        reply.ok();
    }

    fn fsyncdir(&self, req: &Request, ino: INodeNo, _fh: FileHandle, datasync: bool, reply: ReplyEmpty) {
        let result = self.node(ino).and_then(|fd| {
            let dir = sys::reopen(fd.as_fd(), libc::O_RDONLY | libc::O_DIRECTORY).map_err(errno)?;
            if datasync { dir.sync_data() } else { dir.sync_all() }.map_err(errno)
        });
        reply_empty(reply, result.map(|()| self.flash.charge(req.pid(), Op::Flush)));
    }

    fn statfs(&self, _req: &Request, ino: INodeNo, reply: ReplyStatfs) {
        let fd = self.node(ino).or_else(|_| self.node(INodeNo(ROOT)));
        match fd.and_then(|fd| sys::statvfs(fd.as_fd()).map_err(errno)) {
            Ok(s) => reply.statfs(
                s.f_blocks,
                s.f_bfree,
                s.f_bavail,
                s.f_files,
                s.f_ffree,
                u32::try_from(s.f_bsize).unwrap_or(4096),
                u32::try_from(s.f_namemax).unwrap_or(255),
                u32::try_from(s.f_frsize).unwrap_or(4096),
            ),
            Err(e) => reply.error(e),
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
        // `position` is a macOS resource-fork offset; Linux always sends 0.
        let result = if position != 0 {
            Err(Errno::EINVAL)
        } else {
            self.node(ino).and_then(|fd| sys::set_xattr(fd.as_fd(), name, value, flags).map_err(errno))
        };
        reply_empty(reply, result.map(|()| self.flash.charge_metadata(req.pid())));
    }

    fn getxattr(&self, _req: &Request, ino: INodeNo, name: &OsStr, size: u32, reply: ReplyXattr) {
        reply_xattr(reply, self.node(ino).and_then(|fd| sys::get_xattr(fd.as_fd(), name, size).map_err(errno)));
    }

    fn listxattr(&self, _req: &Request, ino: INodeNo, size: u32, reply: ReplyXattr) {
        reply_xattr(reply, self.node(ino).and_then(|fd| sys::list_xattr(fd.as_fd(), size).map_err(errno)));
    }

    fn removexattr(&self, req: &Request, ino: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let result = self.node(ino).and_then(|fd| sys::remove_xattr(fd.as_fd(), name).map_err(errno));
        reply_empty(reply, result.map(|()| self.flash.charge_metadata(req.pid())));
    }

    // access: not implemented — the mount uses default_permissions, so the kernel checks
    // permissions itself and never sends ACCESS.

    /// ioctls are not passed through (mkfs, losetup and lsattr probe a few): ENOTTY, as for a file
    /// that knows no such command.
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
        reply.error(Errno::ENOTTY);
    }

    /// Allocation changes metadata only: one small write.
    fn fallocate(
        &self,
        req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        let result = self.file(fh).and_then(|file| sys::fallocate(&file, mode, offset, length).map_err(errno));
        reply_empty(reply, result.map(|()| self.flash.charge_metadata(req.pid())));
    }
}
