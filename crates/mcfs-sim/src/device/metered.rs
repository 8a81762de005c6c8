//! `MeteredStore`: a backing store whose calls become the device requests they would make — the one place
//! backend calls are mapped to requests. What happens to a request is the `RequestSink`'s business: the
//! device timeline of `SimBackend`, or the FastTrack scenario's tap that tags it and sets it aside.
//!
//! Mapping (docs/DEVICE_MODEL.md): `read_at` reads the bytes it returns that the store holds data for
//! (never-written ranges and holes are free); `write_at`, `write_pieces_at`, `write_unkept_at` and
//! `write_known_at` write their bytes;
//! every call that changes metadata (create, symlink, link, remove, rename, set_len, set_owner, set_perm,
//! set_times, set_xattr, remove_xattr, fallocate) writes one metadata block; `sync` is a flush. `stat`,
//! `list_dir`, `read_link`, `get_xattr`, `list_xattr`, `data_extents` and `statfs` are served from the OS's
//! metadata cache (no device I/O). Failed calls and empty reads or writes issue nothing.
//!
//! Invariant: the sink sees the requests in the order the backend is called, each after its call
//! succeeded on the store; calls that write are stamped with the clock's time.

use mcfs_core::backend::{BackendAttr, BackendLimits, KnownContent};
use mcfs_core::{Backend, Clock, DirBackend, FallocMode, FileKind, FsStats, MemBackend};
use mcfs_device::Request;
use std::ffi::{OsStr, OsString};
use std::io;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

/// Where the requests of a `MeteredStore` go.
pub trait RequestSink: Send + Sync {
    /// Takes the next request, issued now by the call running now.
    fn issue(&self, request: Request);
}

/// What a `MeteredStore` wraps: a backing store, told the virtual time if it stamps files itself.
pub trait Store: Backend {
    fn set_now(&self, _now: SystemTime) {}

    /// Bytes of `range` of `path` the store holds data for (holes and never-written ranges left out):
    /// what the device reads for it. By default every byte.
    fn stored_bytes(&self, _path: &Path, range: Range<u64>) -> u64 {
        range.end - range.start
    }
}

impl Store for MemBackend {
    fn set_now(&self, now: SystemTime) {
        MemBackend::set_now(self, now)
    }

    fn stored_bytes(&self, path: &Path, range: Range<u64>) -> u64 {
        MemBackend::stored_bytes(self, path, range.clone()).unwrap_or(range.end - range.start)
    }
}

/// The real file system stamps its own times; the live estimate charges every byte a read returns.
impl Store for DirBackend {}

pub struct MeteredStore<S, K> {
    store: S,
    clock: Arc<dyn Clock>,
    sink: K,
}

impl<S: Store, K: RequestSink> MeteredStore<S, K> {
    /// `store`, stamped with `clock`'s time, issuing its requests to `sink`.
    pub fn with_sink(store: S, clock: Arc<dyn Clock>, sink: K) -> MeteredStore<S, K> {
        MeteredStore { store, clock, sink }
    }

    /// Runs a call that writes `len` bytes on the store (stamped with the clock's time); on success, issues
    /// one write request of `len` bytes, as `write_at` of that many would.
    fn write(&self, len: u64, op: impl FnOnce(&S) -> io::Result<()>) -> io::Result<()> {
        self.store.set_now(self.clock.now());
        op(&self.store)?;
        if len > 0 {
            self.sink.issue(Request::Write(len));
        }
        Ok(())
    }

    /// The files, to inspect.
    pub fn store(&self) -> &S {
        &self.store
    }

    pub fn sink(&self) -> &K {
        &self.sink
    }

    /// Runs a metadata-changing call on the store (stamped with the clock's time); on success, issues its
    /// metadata write.
    fn metadata<T>(&self, op: impl FnOnce(&S) -> io::Result<T>) -> io::Result<T> {
        self.store.set_now(self.clock.now());
        let result = op(&self.store)?;
        self.sink.issue(Request::MetadataWrite);
        Ok(result)
    }
}

impl<S: Store, K: RequestSink> Backend for MeteredStore<S, K> {
    fn stat(&self, path: &Path) -> io::Result<BackendAttr> {
        self.store.stat(path)
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<(OsString, FileKind)>> {
        self.store.list_dir(path)
    }

    fn read_at(&self, path: &Path, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.store.read_at(path, offset, buf)?;
        let stored = if n > 0 { self.store.stored_bytes(path, offset..offset + n as u64) } else { 0 };
        if stored > 0 {
            self.sink.issue(Request::Read(stored));
        }
        Ok(n)
    }

    fn write_at(&self, path: &Path, offset: u64, data: &[u8]) -> io::Result<()> {
        self.write_pieces_at(path, offset, &[data])
    }

    /// One write request of the pieces' joined length, as `write_at` of their joined bytes would issue.
    fn write_pieces_at(&self, path: &Path, offset: u64, pieces: &[&[u8]]) -> io::Result<()> {
        let len: usize = pieces.iter().map(|p| p.len()).sum();
        self.write(len as u64, |s| s.write_pieces_at(path, offset, pieces))
    }

    fn takes_pieces(&self) -> bool {
        self.store.takes_pieces()
    }

    fn keeps_journal_payload(&self) -> bool {
        self.store.keeps_journal_payload()
    }

    /// One write request of `len` bytes, as `write_at` of that many would issue.
    fn write_unkept_at(&self, path: &Path, offset: u64, len: u64) -> io::Result<()> {
        self.write(len, |s| s.write_unkept_at(path, offset, len))
    }

    fn known_content(&self) -> Option<KnownContent> {
        self.store.known_content()
    }

    /// One write request of `len` bytes, as `write_at` of those bytes would issue.
    fn write_known_at(&self, path: &Path, offset: u64, len: u64) -> io::Result<()> {
        self.write(len, |s| s.write_known_at(path, offset, len))
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
        self.sink.issue(Request::Flush);
        Ok(())
    }

    fn statfs(&self) -> io::Result<FsStats> {
        self.store.statfs()
    }

    fn limits(&self) -> BackendLimits {
        self.store.limits()
    }

    fn check_xattrs(&self, kind: FileKind, xattrs: &[(&OsStr, &[u8])]) -> io::Result<()> {
        self.store.check_xattrs(kind, xattrs)
    }

    fn fallocate(&self, path: &Path, mode: FallocMode, offset: u64, len: u64) -> io::Result<()> {
        self.metadata(|s| s.fallocate(path, mode, offset, len))
    }

    fn data_extents(&self, path: &Path) -> io::Result<Vec<std::ops::Range<u64>>> {
        self.store.data_extents(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcfs_core::ManualClock;
    use parking_lot::Mutex;

    #[derive(Default)]
    struct Recorder(Mutex<Vec<Request>>);

    impl RequestSink for Recorder {
        fn issue(&self, request: Request) {
            self.0.lock().push(request);
        }
    }

    #[test]
    fn calls_map_to_requests_and_failures_and_lookups_issue_none() {
        let s = MeteredStore::with_sink(MemBackend::new(), Arc::new(ManualClock::new()), Recorder::default());
        let (d, f, g) = (Path::new("d"), Path::new("d/f"), Path::new("d/g"));
        s.create(d, FileKind::Dir, 0o755, 0).unwrap();
        s.create(f, FileKind::File, 0o644, 0).unwrap();
        s.write_at(f, 0, &[1; 300]).unwrap();
        s.write_at(f, 0, &[]).unwrap();
        let mut buf = [0; 500];
        assert_eq!(s.read_at(f, 0, &mut buf).unwrap(), 300);
        assert_eq!(s.read_at(f, 300, &mut buf).unwrap(), 0);
        s.stat(f).unwrap();
        s.list_dir(d).unwrap();
        s.statfs().unwrap();
        s.rename(f, g).unwrap();
        s.set_len(g, 10).unwrap();
        s.sync().unwrap();
        assert!(s.remove_file(f).is_err(), "f was renamed away");
        assert!(s.read_at(f, 0, &mut buf).is_err());
        s.remove_file(g).unwrap();
        use Request::{Flush, MetadataWrite as Meta, Read, Write};
        assert_eq!(*s.sink().0.lock(), [Meta, Meta, Write(300), Read(300), Meta, Meta, Flush, Meta]);
    }

    #[test]
    fn reads_of_never_written_ranges_are_free() {
        let s = MeteredStore::with_sink(MemBackend::new(), Arc::new(ManualClock::new()), Recorder::default());
        let f = Path::new("f");
        s.create(f, FileKind::File, 0o644, 0).unwrap();
        s.write_at(f, 8192, &[1; 300]).unwrap();
        s.set_len(f, 20_000).unwrap();
        let mut buf = vec![0; 20_000];
        assert_eq!(s.read_at(f, 0, &mut buf[..8192]).unwrap(), 8192, "a hole");
        assert_eq!(s.read_at(f, 0, &mut buf).unwrap(), 20_000, "the hole, the written page, the grown tail");
        s.fallocate(f, FallocMode::PunchHole, 8192, 4096).unwrap();
        assert_eq!(s.read_at(f, 0, &mut buf).unwrap(), 20_000, "all holes now");
        use Request::{MetadataWrite as Meta, Read, Write};
        assert_eq!(*s.sink().0.lock(), [Meta, Write(300), Meta, Read(4096), Meta]);
    }
}
