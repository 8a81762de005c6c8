//! `McfsFs` served by a fuser session (the `/dev/fuse` transport): each
//! fuser callback passes the request's caller, the arguments the op uses
//! and fuser's reply to the op `McfsFs` writes once for both transports.

use crate::filesystem::McfsFs;
use crate::translate::caller;
use fuser::{
    FileHandle, Filesystem, INodeNo, KernelConfig, LockOwner, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate,
    ReplyData, ReplyDirectory, ReplyDirectoryPlus, ReplyEmpty, ReplyEntry, ReplyLseek, ReplyOpen, ReplyStatfs,
    ReplyWrite, ReplyXattr, Request, TimeOrNow, WriteFlags,
};
use std::ffi::OsStr;
use std::io;
use std::path::Path;
use std::time::SystemTime;

impl Filesystem for McfsFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> io::Result<()> {
        crate::ask_kernel_for(config, &self.init_flags());
        Ok(())
    }

    /// The orderly stop (engine.shutdown) is the mounting program's job once
    /// the session has ended; nothing is torn down here, so a request that
    /// still arrives is served normally.
    fn destroy(&mut self) {}

    fn lookup(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        McfsFs::lookup(self, caller(req), parent, name, reply);
    }

    // batch_forget: fuser's default calls this once per inode.
    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        McfsFs::forget(self, ino, nlookup);
    }

    fn getattr(&self, req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        McfsFs::getattr(self, caller(req), ino, reply);
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
        McfsFs::setattr(self, caller(req), ino, mode, uid, gid, size, atime, mtime, reply);
    }

    fn readlink(&self, req: &Request, ino: INodeNo, reply: ReplyData) {
        McfsFs::readlink(self, caller(req), ino, reply);
    }

    fn mknod(&self, req: &Request, parent: INodeNo, name: &OsStr, mode: u32, umask: u32, rdev: u32, reply: ReplyEntry) {
        McfsFs::mknod(self, caller(req), parent, name, mode, umask, rdev, reply);
    }

    fn mkdir(&self, req: &Request, parent: INodeNo, name: &OsStr, mode: u32, umask: u32, reply: ReplyEntry) {
        McfsFs::mkdir(self, caller(req), parent, name, mode, umask, reply);
    }

    fn unlink(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        McfsFs::unlink(self, caller(req), parent, name, reply);
    }

    fn rmdir(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        McfsFs::rmdir(self, caller(req), parent, name, reply);
    }

    fn symlink(&self, req: &Request, parent: INodeNo, link_name: &OsStr, target: &Path, reply: ReplyEntry) {
        McfsFs::symlink(self, caller(req), parent, link_name, target.as_os_str(), reply);
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
        McfsFs::rename(self, caller(req), parent, name, newparent, newname, flags, reply);
    }

    fn link(&self, req: &Request, ino: INodeNo, newparent: INodeNo, newname: &OsStr, reply: ReplyEntry) {
        McfsFs::link(self, caller(req), ino, newparent, newname, reply);
    }

    fn open(&self, req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        McfsFs::open(self, caller(req), ino, flags.0, reply);
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
        McfsFs::create(self, caller(req), parent, name, mode, umask, flags, reply);
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
        McfsFs::read(self, caller(req), ino, offset, size, reply);
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
        McfsFs::write(self, caller(req), ino, offset, data, write_flags, reply);
    }

    fn flush(&self, req: &Request, ino: INodeNo, _fh: FileHandle, _lock_owner: LockOwner, reply: ReplyEmpty) {
        McfsFs::flush(self, caller(req), ino, reply);
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
        McfsFs::release(self, ino, flags.0, reply);
    }

    fn fsync(&self, req: &Request, ino: INodeNo, _fh: FileHandle, datasync: bool, reply: ReplyEmpty) {
        McfsFs::fsync(self, caller(req), ino, datasync, reply);
    }

    fn opendir(&self, _req: &Request, _ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        McfsFs::opendir(self, reply);
    }

    fn readdir(&self, req: &Request, ino: INodeNo, _fh: FileHandle, offset: u64, reply: ReplyDirectory) {
        McfsFs::readdir(self, caller(req), ino, offset, reply);
    }

    fn readdirplus(&self, req: &Request, ino: INodeNo, _fh: FileHandle, offset: u64, reply: ReplyDirectoryPlus) {
        McfsFs::readdirplus(self, caller(req), ino, offset, reply);
    }

    fn fsyncdir(&self, req: &Request, _ino: INodeNo, _fh: FileHandle, _datasync: bool, reply: ReplyEmpty) {
        McfsFs::fsyncdir(self, caller(req), reply);
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        McfsFs::statfs(self, reply);
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
        McfsFs::setxattr(self, caller(req), ino, name, value, flags, position, reply);
    }

    fn getxattr(&self, req: &Request, ino: INodeNo, name: &OsStr, size: u32, reply: ReplyXattr) {
        McfsFs::getxattr(self, caller(req), ino, name, size, reply);
    }

    fn listxattr(&self, req: &Request, ino: INodeNo, size: u32, reply: ReplyXattr) {
        McfsFs::listxattr(self, caller(req), ino, size, reply);
    }

    fn removexattr(&self, req: &Request, ino: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        McfsFs::removexattr(self, caller(req), ino, name, reply);
    }

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
        McfsFs::ioctl(self, reply);
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
        McfsFs::fallocate(self, caller(req), ino, offset, length, mode, reply);
    }

    fn lseek(&self, req: &Request, ino: INodeNo, _fh: FileHandle, offset: i64, whence: i32, reply: ReplyLseek) {
        McfsFs::lseek(self, caller(req), ino, offset, whence, reply);
    }
}
