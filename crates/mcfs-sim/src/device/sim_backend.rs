//! `SimBackend`: the backing store of a simulation — a `MemBackend` holds the files, a `Device` says how
//! long each call keeps the storage busy and what it costs, in the virtual time of a `Clock`. Over a real
//! directory (`DirBackend`) and the system clock, the same wrapper gives a live mount its estimate of
//! what its I/O would cost on the modelled device.
//!
//! Backend calls map to requests: `read_at` reads the bytes it returns; `write_at` writes its bytes;
//! every call that changes metadata (create, symlink, link, remove, rename, set_len, set_owner, set_perm,
//! set_times, set_xattr, remove_xattr) writes one metadata block; `sync` is a flush. `stat`, `list_dir`,
//! `read_link`, `get_xattr`, `list_xattr` and `statfs` are served from the OS's metadata cache (no device
//! I/O). Failed calls and empty reads or writes issue nothing.
//!
//! Time: a request is issued at the issuer's cursor — the clock's time, or later if the issuer waited
//! for an earlier read or flush of the same call (`begin_call` .. `end_call`): the clock stands still
//! during a call, the issuer does not. Invariant: the device sees requests in the order the backend is
//! called, and the cursor never runs behind the clock.

use super::model::{Device, DeviceReport, Request};
use super::profile::DeviceProfile;
use mcfs_core::backend::BackendAttr;
use mcfs_core::{Backend, Clock, DirBackend, FileKind, FsStats, MemBackend};
use parking_lot::Mutex;
use std::ffi::{OsStr, OsString};
use std::io;
use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

/// What one call cost its caller.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallCost {
    /// Whether the call issued any device request.
    pub issued_io: bool,
    /// How long the caller waited for the device: from the call's start to the completion of the last
    /// read or flush it waited for (0 when it issued nothing).
    pub latency_ns: u64,
}

struct Timeline {
    device: Device,
    /// When the current issuer can issue its next request (0: at the clock's time).
    cursor_ns: u64,
    /// The open call: its start and whether it issued anything.
    call: Option<(u64, bool)>,
}

/// What `SimBackend` wraps: a backing store, told the virtual time if it stamps files itself.
pub trait Store: Backend {
    fn set_now(&self, _now: SystemTime) {}
}

impl Store for MemBackend {
    fn set_now(&self, now: SystemTime) {
        MemBackend::set_now(self, now)
    }
}

/// The real file system stamps its own times.
impl Store for DirBackend {}

pub struct SimBackend<S: Store = MemBackend> {
    store: S,
    clock: Arc<dyn Clock>,
    /// The clock's time at virtual zero.
    origin: SystemTime,
    timeline: Mutex<Timeline>,
}

impl SimBackend {
    /// An empty store on a device of `profile`; virtual time zero is the clock's time now.
    pub fn new(profile: DeviceProfile, clock: Arc<dyn Clock>) -> SimBackend {
        SimBackend::over(MemBackend::new(), profile, clock)
    }
}

impl<S: Store> SimBackend<S> {
    /// `store` on a device of `profile`; virtual time zero is the clock's time now.
    pub fn over(store: S, profile: DeviceProfile, clock: Arc<dyn Clock>) -> SimBackend<S> {
        let origin = clock.now();
        store.set_now(origin);
        let timeline = Timeline { device: Device::new(profile), cursor_ns: 0, call: None };
        SimBackend { store, clock, origin, timeline: Mutex::new(timeline) }
    }

    /// Virtual time: nanoseconds since the backend was made.
    pub fn now_ns(&self) -> u64 {
        let since = self.clock.now().duration_since(self.origin).unwrap_or_default();
        u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
    }

    /// Starts a call of one issuer (an engine call): its requests are issued from now on, one after the
    /// completion of each read or flush it waits for.
    pub fn begin_call(&self) {
        let now = self.now_ns();
        let mut t = self.timeline.lock();
        t.cursor_ns = now;
        t.call = Some((now, false));
    }

    /// Ends the call `begin_call` started and says what it cost.
    pub fn end_call(&self) -> CallCost {
        let mut t = self.timeline.lock();
        let cost = match t.call.take() {
            Some((start, true)) => CallCost { issued_io: true, latency_ns: t.cursor_ns.saturating_sub(start) },
            _ => CallCost::default(),
        };
        t.cursor_ns = 0;
        cost
    }

    /// What the device did so far.
    pub fn report(&self) -> DeviceReport {
        self.timeline.lock().device.report()
    }

    /// The files, to inspect.
    pub fn store(&self) -> &S {
        &self.store
    }

    fn issue(&self, request: Request) {
        let now = self.now_ns();
        let mut t = self.timeline.lock();
        let at = t.cursor_ns.max(now);
        let service = t.device.submit(request, at);
        if request.blocks_issuer() {
            t.cursor_ns = service.done_ns;
        }
        if let Some((_, issued)) = &mut t.call {
            *issued = true;
        }
    }

    /// Runs a metadata-changing call on the store (stamped with the clock's time); on success, issues its
    /// metadata write.
    fn metadata<T>(&self, op: impl FnOnce(&S) -> io::Result<T>) -> io::Result<T> {
        self.store.set_now(self.clock.now());
        let result = op(&self.store)?;
        self.issue(Request::MetadataWrite);
        Ok(result)
    }
}

impl<S: Store> Backend for SimBackend<S> {
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
