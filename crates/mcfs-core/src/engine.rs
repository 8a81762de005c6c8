//! `Engine`: the one entry point front ends use. (API skeleton; bodies are
//! being written.)

use crate::backend::Backend;
use crate::clock::Clock;
use crate::config::{Config, SyncMode};
use crate::stats::Stats;
use crate::types::*;
use std::ffi::{OsStr, OsString};
use std::sync::Arc;
use std::time::Duration;

pub struct Engine {
    _backend: Arc<dyn Backend>,
    _clock: Arc<dyn Clock>,
    _config: Config,
}

#[allow(unused_variables)]
impl Engine {
    /// Opens the backing store: runs recovery, then loads the root.
    /// The error names the file and the cause.
    pub fn start(backend: Arc<dyn Backend>, clock: Arc<dyn Clock>, config: Config) -> Result<Engine, String> {
        todo!()
    }
    /// Looks up `name` in `parent` and takes one kernel reference on the result.
    pub fn lookup(&self, caller: Caller, parent: Ino, name: &OsStr) -> FsResult<Attr> {
        todo!()
    }
    /// Drops `n` kernel references.
    pub fn forget(&self, ino: Ino, n: u64) {
        todo!()
    }
    pub fn getattr(&self, ino: Ino) -> FsResult<Attr> {
        todo!()
    }
    pub fn setattr(&self, caller: Caller, ino: Ino, set: &SetAttr) -> FsResult<Attr> {
        todo!()
    }
    pub fn readlink(&self, ino: Ino) -> FsResult<OsString> {
        todo!()
    }
    /// Creates a special file or a regular file without opening it. Takes a kernel reference.
    pub fn mknod(&self, caller: Caller, parent: Ino, name: &OsStr, kind: FileKind, perm: u32, rdev: u32) -> FsResult<Attr> {
        todo!()
    }
    /// Takes a kernel reference.
    pub fn mkdir(&self, caller: Caller, parent: Ino, name: &OsStr, perm: u32) -> FsResult<Attr> {
        todo!()
    }
    /// Takes a kernel reference.
    pub fn symlink(&self, caller: Caller, parent: Ino, name: &OsStr, target: &OsStr) -> FsResult<Attr> {
        todo!()
    }
    /// Takes a kernel reference.
    pub fn link(&self, caller: Caller, ino: Ino, new_parent: Ino, new_name: &OsStr) -> FsResult<Attr> {
        todo!()
    }
    pub fn unlink(&self, caller: Caller, parent: Ino, name: &OsStr) -> FsResult<()> {
        todo!()
    }
    pub fn rmdir(&self, caller: Caller, parent: Ino, name: &OsStr) -> FsResult<()> {
        todo!()
    }
    pub fn rename(&self, caller: Caller, parent: Ino, name: &OsStr, new_parent: Ino, new_name: &OsStr, mode: RenameMode) -> FsResult<()> {
        todo!()
    }
    /// Creates a regular file and opens it (one open and one kernel reference).
    /// With `exclusive` false an existing regular file is opened instead.
    pub fn create(&self, caller: Caller, parent: Ino, name: &OsStr, perm: u32, exclusive: bool) -> FsResult<Attr> {
        todo!()
    }
    /// Counts an open of `ino`.
    pub fn open_file(&self, ino: Ino) -> FsResult<()> {
        todo!()
    }
    /// Counts a close of `ino`.
    pub fn release(&self, ino: Ino) {
        todo!()
    }
    /// Reads up to `size` bytes; fewer only at end of file.
    pub fn read(&self, ino: Ino, offset: u64, size: u32) -> FsResult<Vec<u8>> {
        todo!()
    }
    /// Writes into the cache and the file's app's write log.
    pub fn write(&self, caller: Option<Caller>, ino: Ino, offset: u64, data: &[u8]) -> FsResult<u32> {
        todo!()
    }
    /// `fallocate` mode 0 (allocate, extending the size) and KEEP_SIZE; other modes give EOPNOTSUPP.
    pub fn fallocate(&self, ino: Ino, offset: u64, len: u64, mode: i32) -> FsResult<()> {
        todo!()
    }
    /// fsync / fdatasync of one file: a VCT boundary in memory mode, a durable
    /// commit of the app's data in sync mode.
    pub fn fsync(&self, caller: Option<Caller>, ino: Ino) -> FsResult<()> {
        todo!()
    }
    /// fsyncdir and sync(2): the same for the caller's app.
    pub fn sync_app(&self, caller: Option<Caller>) -> FsResult<()> {
        todo!()
    }
    /// Entries of a directory (without `.` and `..`).
    pub fn readdir(&self, ino: Ino) -> FsResult<Vec<DirEntry>> {
        todo!()
    }
    pub fn statfs(&self) -> FsResult<FsStats> {
        todo!()
    }
    pub fn getxattr(&self, ino: Ino, name: &OsStr) -> FsResult<Vec<u8>> {
        todo!()
    }
    pub fn listxattr(&self, ino: Ino) -> FsResult<Vec<OsString>> {
        todo!()
    }
    pub fn setxattr(&self, caller: Caller, ino: Ino, name: &OsStr, value: &[u8], mode: XattrMode) -> FsResult<()> {
        todo!()
    }
    pub fn removexattr(&self, caller: Caller, ino: Ino, name: &OsStr) -> FsResult<()> {
        todo!()
    }
    /// Closes every open VCT and commits all closed ones (`mcfs ctl checkpoint`).
    pub fn checkpoint(&self) -> FsResult<()> {
        todo!()
    }
    /// Runs the policies: closes VCTs that are due and checkpoints. The
    /// mount calls it from a background thread; the simulator at each step.
    pub fn tick(&self) {
        todo!()
    }
    /// How long the background thread may sleep before the next `tick`.
    pub fn next_tick_in(&self) -> Duration {
        todo!()
    }
    /// Orderly stop: checkpoints everything, open VCTs included.
    pub fn shutdown(&self) -> FsResult<()> {
        todo!()
    }
    pub fn set_battery(&self, percent: u8) {
        todo!()
    }
    /// Sets an app's mode; the app is named as in the config or as `uid:N`.
    pub fn set_app_mode(&self, app: &str, mode: SyncMode) -> Result<(), String> {
        todo!()
    }
    pub fn stats(&self) -> Stats {
        todo!()
    }
}
