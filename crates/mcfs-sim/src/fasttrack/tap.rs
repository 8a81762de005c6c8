//! `DeviceTap`: the backing store of a FastTrack scenario. The files live in a `MemBackend`; every backend
//! call that would reach the flash becomes a device command, tagged with the class of the work that made
//! it, and is set aside for the event loop, which knows when the issuer may send it (after the reads and
//! flushes it waits for) and hands it to the device scheduler then.
//!
//! Calls map to commands as in `SimBackend` (docs/DEVICE_MODEL.md): `read_at` reads the bytes it returned,
//! `write_at` writes its bytes, a metadata-changing call writes one 4 KiB block, `sync` is a flush; lookups
//! (`stat`, `list_dir`, xattr reads, `statfs`) issue nothing, nor do failed calls and empty transfers.
//!
//! Tag: `Foreground` when the engine tags I/O (`fasttrack.dispatch`, FastTrack's FG flag) and the work
//! running now (`mcfs_core::dispatch::current`) is a foreground request; everything else is `Background`,
//! system services included (their I/O priority, best-effort level 4, is not a foreground one: `ioprio`).
//! Invariant: `take` returns the commands in the order the engine issued them.

use crate::device::scheduler::{Op, Priority};
use crate::device::Request;
use mcfs_core::backend::BackendAttr;
use mcfs_core::{Backend, Clock, FileKind, FsStats, IoClass, MemBackend};
use parking_lot::Mutex;
use std::ffi::{OsStr, OsString};
use std::io;
use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

pub struct DeviceTap {
    store: MemBackend,
    clock: Arc<dyn Clock>,
    tags_foreground: bool,
    issued: Mutex<Vec<(Priority, Op)>>,
}

impl DeviceTap {
    /// `store` under the engine; `tags_foreground` is `fasttrack.dispatch`.
    pub fn new(store: MemBackend, clock: Arc<dyn Clock>, tags_foreground: bool) -> DeviceTap {
        DeviceTap { store, clock, tags_foreground, issued: Mutex::new(Vec::new()) }
    }

    /// The commands issued since the last call, in issue order.
    pub fn take(&self) -> Vec<(Priority, Op)> {
        std::mem::take(&mut *self.issued.lock())
    }

    fn issue(&self, request: Request) {
        let foreground = mcfs_core::dispatch::current().is_some_and(|w| w.class == IoClass::Foreground);
        let priority = if self.tags_foreground && foreground { Priority::Foreground } else { Priority::Background };
        self.issued.lock().push((priority, Op::from(request)));
    }

    /// Runs a metadata-changing call on the store, stamped with the clock's time; on success, issues its
    /// metadata block.
    fn metadata<T>(&self, op: impl FnOnce(&MemBackend) -> io::Result<T>) -> io::Result<T> {
        self.store.set_now(self.clock.now());
        let result = op(&self.store)?;
        self.issue(Request::MetadataWrite);
        Ok(result)
    }
}

impl Backend for DeviceTap {
    fn stat(&self, path: &Path) -> io::Result<BackendAttr> {
        self.store.stat(path)
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<(OsString, FileKind)>> {
        self.store.list_dir(path)
    }

    fn read_at(&self, path: &Path, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.store.read_at(path, offset, buf)?;
        if n > 0 {
            self.issue(Request::Read(n as u64));
        }
        Ok(n)
    }

    fn write_at(&self, path: &Path, offset: u64, data: &[u8]) -> io::Result<()> {
        self.store.set_now(self.clock.now());
        self.store.write_at(path, offset, data)?;
        if !data.is_empty() {
            self.issue(Request::Write(data.len() as u64));
        }
        Ok(())
    }

    fn set_len(&self, path: &Path, size: u64) -> io::Result<()> {
        self.metadata(|s| s.set_len(path, size))
    }

    fn create(&self, path: &Path, kind: FileKind, perm: u32, rdev: u32) -> io::Result<()> {
        self.metadata(|s| s.create(path, kind, perm, rdev))
    }

    fn symlink(&self, target: &OsStr, path: &Path) -> io::Result<()> {
        self.metadata(|s| s.symlink(target, path))
    }

    fn read_link(&self, path: &Path) -> io::Result<OsString> {
        self.store.read_link(path)
    }

    fn link(&self, existing: &Path, new: &Path) -> io::Result<()> {
        self.metadata(|s| s.link(existing, new))
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.metadata(|s| s.remove_file(path))
    }

    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        self.metadata(|s| s.remove_dir(path))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.metadata(|s| s.rename(from, to))
    }

    fn set_owner(&self, path: &Path, uid: u32, gid: u32) -> io::Result<()> {
        self.metadata(|s| s.set_owner(path, uid, gid))
    }

    fn set_perm(&self, path: &Path, perm: u32) -> io::Result<()> {
        self.metadata(|s| s.set_perm(path, perm))
    }

    fn set_times(&self, path: &Path, atime: SystemTime, mtime: SystemTime) -> io::Result<()> {
        self.metadata(|s| s.set_times(path, atime, mtime))
    }

    fn get_xattr(&self, path: &Path, name: &OsStr) -> io::Result<Option<Vec<u8>>> {
        self.store.get_xattr(path, name)
    }

    fn list_xattr(&self, path: &Path) -> io::Result<Vec<OsString>> {
        self.store.list_xattr(path)
    }

    fn set_xattr(&self, path: &Path, name: &OsStr, value: &[u8]) -> io::Result<()> {
        self.metadata(|s| s.set_xattr(path, name, value))
    }

    fn remove_xattr(&self, path: &Path, name: &OsStr) -> io::Result<()> {
        self.metadata(|s| s.remove_xattr(path, name))
    }

    fn sync(&self) -> io::Result<()> {
        self.store.sync()?;
        self.issue(Request::Flush);
        Ok(())
    }

    fn statfs(&self) -> io::Result<FsStats> {
        self.store.statfs()
    }
}
