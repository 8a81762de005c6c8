//! `DirBackend`: the backing store is a real directory. Each call is the
//! matching system call on the object below the root; nothing is buffered
//! here, so the directory is always an ordinary tree any tool can read.
//!
//! Paths of any length: objects are addressed from an open descriptor of the
//! root with the `*at` calls (see `at`), so a relative path the mount allows
//! works even when the root's absolute path plus it exceeds `PATH_MAX`.
//!
//! Exact modes: new objects get exactly the requested permission bits (a
//! `chmod` after creation undoes the umask). `write_at` and `set_len` never
//! create. Reads and writes go through a small cache of open descriptors
//! keyed by path. Invariant: a cached descriptor always refers to the object
//! now at its path — every call that changes the namespace (create, symlink,
//! link, remove, rename) drops the entries at and under the paths it touched,
//! and an open that raced with such a change is not cached (generation
//! check). The same holds for the one directory descriptor kept for path
//! resolution (the parent of the last path resolved: the engine loads a
//! directory by a stat of each entry). Changes made to the directory by other
//! processes while the backend is in use are not noticed; no symlink they
//! plant is followed (see `at`).
//!
//! Targeted barriers: `sync` does not flush the whole backing file system
//! (`syncfs` on a phone's shared /data also writes out every other app's
//! dirty data). Each call records which objects it changed (`dirty`): data
//! and attribute changes mark the object, namespace changes the directories
//! whose entries changed (and a new object itself), and a rename carries the
//! marks below its source along. `sync` fsyncs exactly the marked objects (a
//! symlink, fifo or device through its directory; mcfs's own files under
//! `.mcfs/` with `fdatasync`, see `contents_only`), skips those removed since
//! (their directory is marked), and falls back to `syncfs` past
//! `dirty::TARGETED_LIMIT` objects and on the first barrier (which so covers
//! what an earlier process left unflushed). Invariant: no namespace change
//! runs while a barrier resolves its paths to open descriptors (`namespace`
//! lock), so each mark resolves to the object whose changes it records.
//!
//! Limits: what the backing file system refuses is learned once, partly by
//! trying it on scratch objects in `.mcfs/`, where extended attribute sets
//! are also tried before the engine accepts them (`probe`).

mod at;
mod dirty;
mod probe;
mod space;

use super::error::{at_path, two_path_error};
use super::relpath;
use super::snapshot::{ContentHasher, SnapshotEntry, TreeSnapshot};
use super::{errno_of, Backend, BackendAttr, BackendLimits};
use crate::types::{FallocMode, FileKind, FsStats, PAGE_SIZE};
use at::{c_string, check, kind_of_mode, Location, XattrPath};
use dirty::{DirtySet, Pending};
use parking_lot::{Mutex, RwLock};
use std::collections::{BTreeMap, HashMap};
use std::ffi::{OsStr, OsString};
use std::fs::{self, File, OpenOptions, Permissions};
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Open descriptors kept for reads and writes.
const FD_CACHE_SIZE: usize = 64;
/// Bytes read at a time when a snapshot digests a file.
const DIGEST_CHUNK: usize = 16 * PAGE_SIZE as usize;

/// What a caller needs an open descriptor for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Access {
    Read,
    Write,
}

struct CachedFd {
    file: Arc<File>,
    readable: bool,
    writable: bool,
    last_use: u64,
}

/// Open descriptors by canonical relative path (see the module comment for
/// the invariant).
#[derive(Default)]
struct FdCache {
    entries: HashMap<PathBuf, CachedFd>,
    /// The last parent directory opened for path resolution, and its path.
    dir: Option<(PathBuf, Arc<OwnedFd>)>,
    /// Bumped by every namespace change; an open started under an older
    /// generation is not cached.
    generation: u64,
    uses: u64,
}

impl FdCache {
    fn get(&mut self, key: &Path, access: Access) -> Option<Arc<File>> {
        self.uses += 1;
        let uses = self.uses;
        let cached = self.entries.get_mut(key)?;
        let allowed = match access {
            Access::Read => cached.readable,
            Access::Write => cached.writable,
        };
        if !allowed {
            return None;
        }
        cached.last_use = uses;
        Some(cached.file.clone())
    }

    fn insert(&mut self, opened_in: u64, key: PathBuf, mut fd: CachedFd) {
        if opened_in != self.generation {
            return;
        }
        if self.entries.len() >= FD_CACHE_SIZE && !self.entries.contains_key(&key) {
            let oldest = self.entries.iter().min_by_key(|(_, c)| c.last_use).map(|(k, _)| k.clone());
            if let Some(oldest) = oldest {
                self.entries.remove(&oldest);
            }
        }
        fd.last_use = self.uses;
        self.entries.insert(key, fd);
    }

    /// Drops every descriptor at or under `key`.
    fn forget_under(&mut self, key: &Path) {
        self.generation += 1;
        self.entries.retain(|path, _| !path.starts_with(key));
        if self.dir.as_ref().is_some_and(|(path, _)| path.starts_with(key)) {
            self.dir = None;
        }
    }

    /// The kept directory descriptor of `path`, if that is the one kept.
    fn dir(&self, path: &Path) -> Option<Arc<OwnedFd>> {
        self.dir.as_ref().filter(|(kept, _)| kept == path).map(|(_, fd)| fd.clone())
    }

    /// Keeps `fd` as `path`'s descriptor unless the namespace changed since `opened_in`.
    fn keep_dir(&mut self, opened_in: u64, path: &Path, fd: Arc<OwnedFd>) {
        if opened_in == self.generation {
            self.dir = Some((path.to_owned(), fd));
        }
    }
}

/// A backing store in a real directory.
pub struct DirBackend {
    root: PathBuf,
    /// The root, open: every object is looked up from it, and `syncfs` and
    /// `fstatvfs` act on it.
    root_dir: File,
    fds: Mutex<FdCache>,
    /// What the next barrier has to make durable.
    dirty: DirtySet,
    /// Held shared by namespace changes, exclusively by a barrier while it
    /// opens the marked objects.
    namespace: RwLock<()>,
    /// Probed on first use (`probe`).
    limits: OnceLock<BackendLimits>,
    /// Scratch objects in `.mcfs/` the extended attribute check tries sets on.
    scratch: Mutex<probe::Scratch>,
}

impl DirBackend {
    /// Uses the existing directory `root` (the error names it otherwise).
    pub fn new(root: &Path) -> io::Result<DirBackend> {
        let fail = |e| at_path("open backing directory", root, e);
        let root = fs::canonicalize(root).map_err(fail)?;
        let root_dir = OpenOptions::new().read(true).custom_flags(libc::O_DIRECTORY).open(&root).map_err(fail)?;
        Ok(DirBackend {
            root,
            root_dir,
            fds: Mutex::new(FdCache::default()),
            dirty: DirtySet::new(),
            namespace: RwLock::new(()),
            limits: OnceLock::new(),
            scratch: Mutex::new(probe::Scratch::default()),
        })
    }

    /// The backing directory, as an absolute path.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The whole tree, for comparisons (hard links grouped by inode number).
    pub fn snapshot(&self) -> io::Result<TreeSnapshot> {
        let mut snap = TreeSnapshot::default();
        let mut stack = vec![PathBuf::new()];
        while let Some(key) = stack.pop() {
            let (inode, attr, content) = self.on_object("snapshot", &key, |_, at| {
                let st = at.lstat()?;
                let attr = attr_of(&st)?;
                let content = if attr.kind == FileKind::File { Some(digest_file(at, attr.size)?) } else { None };
                Ok(((st.st_dev, st.st_ino), attr, content))
            })?;
            if attr.kind == FileKind::Dir {
                for (name, _) in self.list_dir(&key)? {
                    stack.push(key.join(name));
                }
            }
            let mut xattrs = std::collections::BTreeMap::new();
            for name in self.list_xattr(&key)? {
                if let Some(value) = self.get_xattr(&key, &name)? {
                    xattrs.insert(name, value);
                }
            }
            let device = matches!(attr.kind, FileKind::CharDev | FileKind::BlockDev);
            let entry = SnapshotEntry {
                kind: attr.kind,
                perm: attr.perm,
                uid: attr.uid,
                gid: attr.gid,
                rdev: if device { attr.rdev } else { 0 },
                content,
                target: if attr.kind == FileKind::Symlink { Some(self.read_link(&key)?) } else { None },
                xattrs,
                mtime: Some(attr.mtime),
                first_link: PathBuf::new(),
            };
            snap.insert(key, inode, entry);
        }
        Ok(snap.finish())
    }

    /// The absolute path of `key`, for messages and the xattr calls.
    fn full(&self, key: &Path) -> PathBuf {
        if key.as_os_str().is_empty() {
            self.root.clone()
        } else {
            self.root.join(key)
        }
    }

    /// Where the canonical relative path `key` is, for the `*at` calls.
    fn locate(&self, key: &Path) -> io::Result<Location<'_>> {
        Location::find(self.root_dir.as_fd(), key, |parent| self.parent_dir(parent))
    }

    /// The directory `path` opened for resolution (see `at`): the kept one
    /// if it is that, else newly opened and kept.
    fn parent_dir(&self, path: &Path) -> io::Result<Arc<OwnedFd>> {
        let generation = {
            let fds = self.fds.lock();
            if let Some(fd) = fds.dir(path) {
                return Ok(fd);
            }
            fds.generation
        };
        let fd = Arc::new(at::open_dir_beneath(self.root_dir.as_fd(), path)?);
        self.fds.lock().keep_dir(generation, path, fd.clone());
        Ok(fd)
    }

    /// Checks `rel`, then runs `f` with its canonical form; errors come back
    /// naming `op` and the full path.
    fn on_path<T>(&self, op: &str, rel: &Path, f: impl FnOnce(&Path) -> io::Result<T>) -> io::Result<T> {
        let key = relpath::canonical(rel).map_err(|errno| at_path(op, rel, io::Error::from_raw_os_error(errno)))?;
        f(&key).map_err(|e| at_path(op, &self.full(&key), e))
    }

    /// `on_path` for calls that act on the object's location: `f(key, location)`.
    fn on_object<T>(&self, op: &str, rel: &Path, f: impl FnOnce(&Path, &Location) -> io::Result<T>) -> io::Result<T> {
        self.on_path(op, rel, |key| f(key, &self.locate(key)?))
    }

    /// `on_path` for calls that name two paths: `f(from_key, from, to_key, to)`.
    fn on_two_objects(
        &self,
        op: &str,
        from: &Path,
        to: &Path,
        f: impl FnOnce(&Path, &Location, &Path, &Location) -> io::Result<()>,
    ) -> io::Result<()> {
        let keys = relpath::canonical(from).and_then(|from| Ok((from, relpath::canonical(to)?)));
        let (from_key, to_key) = keys.map_err(|errno| two_path_error(op, from, to, errno))?;
        let located = self.locate(&from_key).and_then(|from| Ok((from, self.locate(&to_key)?)));
        located
            .and_then(|(from, to)| f(&from_key, &from, &to_key, &to))
            .map_err(|e| two_path_error(op, &self.full(&from_key), &self.full(&to_key), errno_of(&e)))
    }

    /// Marks the object at `key` as changed by a call that ended with
    /// `result` (a failed call may still have changed something), and passes
    /// the result on.
    fn marking<T>(&self, key: &Path, result: io::Result<T>) -> io::Result<T> {
        self.dirty.mark(key);
        result
    }

    /// Records a namespace change at `key`.
    fn forget_under(&self, key: &Path) {
        self.fds.lock().forget_under(key);
    }

    /// An open descriptor of the regular file at `key`, from the cache or newly opened.
    fn file(&self, key: &Path, access: Access) -> io::Result<Arc<File>> {
        let generation = {
            let mut fds = self.fds.lock();
            if let Some(file) = fds.get(key, access) {
                return Ok(file);
            }
            fds.generation
        };
        let (file, readable, writable) = open_regular(&self.locate(key)?, access)?;
        let file = Arc::new(file);
        let cached = CachedFd { file: file.clone(), readable, writable, last_use: 0 };
        self.fds.lock().insert(generation, key.to_owned(), cached);
        Ok(file)
    }

    /// The path the xattr calls take to the object at `key`.
    fn xattr_path(&self, key: &Path) -> io::Result<XattrPath> {
        XattrPath::new(&self.locate(key)?)
    }

    /// `syncfs`: flushes the whole backing file system.
    fn flush_everything(&self) -> io::Result<()> {
        check(unsafe { libc::syncfs(self.root_dir.as_raw_fd()) }).map_err(|e| at_path("syncfs", &self.root, e))
    }

    /// Makes every change marked so far durable (see the module comment)
    /// and returns what it covered.
    fn barrier(&self) -> io::Result<Pending> {
        // The snapshot and the opens see one namespace: a rename in between
        // would carry a mark away from the path about to be opened.
        let (pending, opened) = {
            let _frozen = self.namespace.write();
            let pending = self.dirty.pending();
            let opened = match &pending.paths {
                Some(keys) => self.open_for_barrier(keys)?,
                None => None,
            };
            (pending, opened)
        };
        match opened {
            None => self.flush_everything()?,
            Some(opened) => {
                for (key, is_dir, file) in opened {
                    if contents_only(&key, is_dir) {
                        file.sync_data().map_err(|e| at_path("fdatasync", &self.full(&key), e))?;
                    } else {
                        file.sync_all().map_err(|e| at_path("fsync", &self.full(&key), e))?;
                    }
                }
            }
        }
        Ok(pending)
    }

    /// Opens what an fsync makes the objects at `keys` durable through; see
    /// `barrier_targets`. `None` if one may not be opened (permissions): the
    /// barrier then flushes everything instead.
    fn open_for_barrier(&self, keys: &[PathBuf]) -> io::Result<Option<Vec<(PathBuf, bool, File)>>> {
        let mut opened = Vec::new();
        for (key, is_dir) in self.barrier_targets(keys)? {
            let dir_flag = if is_dir { libc::O_DIRECTORY } else { 0 };
            let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY | dir_flag;
            match self.locate(&key).and_then(|at| at.open(flags, 0)) {
                Ok(fd) => opened.push((key, is_dir, File::from(fd))),
                Err(e) if gone_since(&e) => {}
                Err(e) if matches!(errno_of(&e), libc::EACCES | libc::EPERM) => return Ok(None),
                Err(e) => return Err(at_path("open for fsync", &self.full(&key), e)),
            }
        }
        Ok(Some(opened))
    }

    /// The objects to fsync for the marks `keys`, each with "is a
    /// directory": a regular file or directory itself, the directory holding
    /// anything else (a symlink, fifo or device cannot be fsynced; its
    /// directory's fsync commits its inode). A mark whose object is gone is
    /// skipped: its removal marked the directory it was in.
    fn barrier_targets(&self, keys: &[PathBuf]) -> io::Result<BTreeMap<PathBuf, bool>> {
        let mut targets = BTreeMap::new();
        for key in keys {
            let st = match self.locate(key).and_then(|at| at.lstat()) {
                Ok(st) => st,
                Err(e) if gone_since(&e) => continue,
                Err(e) => return Err(at_path("stat for fsync", &self.full(key), e)),
            };
            match kind_of_mode(st.st_mode).map_err(|e| at_path("stat for fsync", &self.full(key), e))? {
                FileKind::File => targets.insert(key.clone(), false),
                FileKind::Dir => targets.insert(key.clone(), true),
                _ => key.parent().and_then(|parent| targets.insert(parent.to_path_buf(), true)),
            };
        }
        Ok(targets)
    }

    /// Called before the name `key` (at `at`) is unlinked or replaced: if a
    /// change to its object waits for a barrier and the object lives on under
    /// another name, no mark would lead there after the unlink, so it is made
    /// durable now. True if it was.
    fn settle_before_unlink(&self, key: &Path, at: &Location) -> io::Result<bool> {
        if !self.dirty.is_marked(key) {
            return Ok(false);
        }
        let st = match at.lstat() {
            Ok(st) => st,
            Err(e) if gone_since(&e) => return Ok(false),
            Err(e) => return Err(e),
        };
        if kind_of_mode(st.st_mode)? != FileKind::File || st.st_nlink < 2 {
            return Ok(false);
        }
        match at.open(libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY, 0) {
            Ok(fd) => File::from(fd).sync_all()?,
            Err(e) if matches!(errno_of(&e), libc::EACCES | libc::EPERM) => self.flush_everything()?,
            Err(e) => return Err(e),
        }
        Ok(true)
    }
}

/// True for mcfs's own files in the state directory (journal segments, the
/// progress file): nothing reads their times or modes, so a barrier makes
/// their contents and size durable with `fdatasync`. On ext4 an overwrite of
/// already-written blocks then costs the data write and one cache flush, not
/// a journal commit for the timestamp `fsync` would also write.
fn contents_only(key: &Path, is_dir: bool) -> bool {
    !is_dir && key.starts_with(crate::STATE_DIR)
}

/// True for the errors of a path whose object was removed (or a directory
/// on the way replaced) after it was marked.
fn gone_since(e: &io::Error) -> bool {
    matches!(errno_of(e), libc::ENOENT | libc::ENOTDIR)
}

/// Opens the regular file at `at`, read-write when permitted, else just for
/// `access`: (file, readable, writable). Never creates, never follows a
/// final symlink, never opens a device or a fifo (checked before and after
/// the open, as the name may change in between).
fn open_regular(at: &Location, access: Access) -> io::Result<(File, bool, bool)> {
    must_be_regular(at.lstat()?.st_mode)?;
    let open = |mode: libc::c_int| at.open(mode | libc::O_NOFOLLOW | libc::O_NONBLOCK, 0).map(File::from);
    let (file, readable, writable) = match open(libc::O_RDWR) {
        Ok(file) => (file, true, true),
        Err(_) if access == Access::Read => (open(libc::O_RDONLY)?, true, false),
        Err(_) => (open(libc::O_WRONLY)?, false, true),
    };
    must_be_regular(file.metadata()?.mode())?;
    Ok((file, readable, writable))
}

/// The errno a read or write of a non-regular object gives (the same as
/// `MemBackend` gives); `mode` is an `st_mode`.
fn must_be_regular(mode: u32) -> io::Result<()> {
    let errno = match kind_of_mode(mode)? {
        FileKind::File => return Ok(()),
        FileKind::Dir => libc::EISDIR,
        FileKind::Symlink => libc::ELOOP,
        _ => libc::EINVAL,
    };
    Err(io::Error::from_raw_os_error(errno))
}

fn attr_of(st: &libc::stat) -> io::Result<BackendAttr> {
    Ok(BackendAttr {
        ino: st.st_ino,
        kind: kind_of_mode(st.st_mode)?,
        perm: st.st_mode & 0o7777,
        nlink: st.st_nlink.try_into().unwrap_or(u32::MAX),
        uid: st.st_uid,
        gid: st.st_gid,
        size: st.st_size.try_into().unwrap_or(0),
        rdev: st.st_rdev as u32,
        atime: system_time(st.st_atime, st.st_atime_nsec),
        mtime: system_time(st.st_mtime, st.st_mtime_nsec),
        ctime: system_time(st.st_ctime, st.st_ctime_nsec),
        blocks: st.st_blocks.try_into().unwrap_or(0),
    })
}

/// A `timespec` (seconds may be negative) as a `SystemTime`.
fn system_time(secs: i64, nsec: i64) -> SystemTime {
    let nanos = Duration::from_nanos(nsec.clamp(0, 999_999_999) as u64);
    let whole = if secs >= 0 {
        UNIX_EPOCH.checked_add(Duration::from_secs(secs as u64))
    } else {
        UNIX_EPOCH.checked_sub(Duration::from_secs(secs.unsigned_abs()))
    };
    whole.and_then(|t| t.checked_add(nanos)).unwrap_or(UNIX_EPOCH)
}

fn timespec(t: SystemTime) -> libc::timespec {
    let (secs, nsec) = match t.duration_since(UNIX_EPOCH) {
        Ok(d) => (i64::try_from(d.as_secs()).unwrap_or(i64::MAX), d.subsec_nanos()),
        Err(before) => {
            let d = before.duration();
            let secs = -i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
            match d.subsec_nanos() {
                0 => (secs, 0),
                n => (secs - 1, 1_000_000_000 - n),
            }
        }
    };
    libc::timespec { tv_sec: secs, tv_nsec: nsec.into() }
}

/// Reads until `buf` is full or the file ends.
fn read_full(file: &File, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// Writes `pieces` one after the other from `offset` with `pwritev`, as
/// many as one call takes at a time, resuming after short writes.
fn write_all_pieces_at(file: &File, pieces: &[&[u8]], mut offset: u64) -> io::Result<()> {
    let mut slices: Vec<io::IoSlice> = pieces.iter().filter(|p| !p.is_empty()).map(|p| io::IoSlice::new(p)).collect();
    let mut left = &mut slices[..];
    while !left.is_empty() {
        let count = left.len().min(libc::UIO_MAXIOV as usize);
        let at = libc::off_t::try_from(offset).map_err(|_| io::Error::from_raw_os_error(libc::EFBIG))?;
        // SAFETY: `IoSlice` is ABI-compatible with `iovec` on Unix; the
        // slices borrow `pieces`, alive for the call.
        let written = unsafe { libc::pwritev(file.as_raw_fd(), left.as_ptr().cast(), count as libc::c_int, at) };
        match written {
            -1 if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted => {}
            -1 => return Err(io::Error::last_os_error()),
            0 => return Err(io::ErrorKind::WriteZero.into()),
            n => {
                offset += n as u64;
                io::IoSlice::advance_slices(&mut left, n as usize);
            }
        }
    }
    Ok(())
}

fn digest_file(at: &Location, size: u64) -> io::Result<super::snapshot::ContentDigest> {
    let (file, _, _) = open_regular(at, Access::Read)?;
    let mut hasher = ContentHasher::new();
    let mut buf = vec![0u8; DIGEST_CHUNK];
    let mut offset = 0;
    loop {
        let n = read_full(&file, offset, &mut buf)?;
        for (i, page) in buf[..n].chunks(PAGE_SIZE as usize).enumerate() {
            hasher.page(offset / PAGE_SIZE + i as u64, page);
        }
        offset += n as u64;
        if n < buf.len() {
            break;
        }
    }
    Ok(hasher.finish(size))
}

fn busy_if_root(key: &Path) -> io::Result<()> {
    if key.as_os_str().is_empty() {
        return Err(io::Error::from_raw_os_error(libc::EBUSY));
    }
    Ok(())
}

/// `Ok(None)` for an absent attribute.
fn absent_is_none<T>(got: io::Result<T>) -> io::Result<Option<T>> {
    match got {
        Err(e) if e.raw_os_error() == Some(libc::ENODATA) => Ok(None),
        other => other.map(Some),
    }
}

impl Backend for DirBackend {
    fn stat(&self, path: &Path) -> io::Result<BackendAttr> {
        self.on_object("stat", path, |_, at| attr_of(&at.lstat()?))
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<(OsString, FileKind)>> {
        self.on_object("list", path, |_, at| {
            let mut out = at.list()?;
            out.sort_by(|a, b| a.0.cmp(&b.0));
            Ok(out)
        })
    }

    fn read_at(&self, path: &Path, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.on_path("read", path, |key| read_full(&*self.file(key, Access::Read)?, offset, buf))
    }

    fn write_at(&self, path: &Path, offset: u64, data: &[u8]) -> io::Result<()> {
        self.write_pieces_at(path, offset, &[data])
    }

    fn write_pieces_at(&self, path: &Path, offset: u64, pieces: &[&[u8]]) -> io::Result<()> {
        self.on_path("write", path, |key| {
            let written = self.file(key, Access::Write).and_then(|file| write_all_pieces_at(&file, pieces, offset));
            // marked even on failure: part of the data may have landed
            self.dirty.mark(key);
            written
        })
    }

    fn takes_pieces(&self) -> bool {
        true
    }

    fn set_len(&self, path: &Path, size: u64) -> io::Result<()> {
        self.on_path("truncate", path, |key| {
            let file = self.file(key, Access::Write)?;
            let size = libc::off_t::try_from(size).map_err(|_| io::Error::from_raw_os_error(libc::EFBIG))?;
            let truncated = check(unsafe { libc::ftruncate(file.as_raw_fd(), size) });
            self.dirty.mark(key);
            truncated
        })
    }

    fn create(&self, path: &Path, kind: FileKind, perm: u32, rdev: u32) -> io::Result<()> {
        let perm = perm & 0o7777;
        self.on_object("create", path, |key, at| {
            let _names = self.namespace.read();
            let made = match kind {
                FileKind::File => create_file(at, perm),
                FileKind::Dir => at.mkdir(perm),
                FileKind::Symlink => Err(io::Error::from_raw_os_error(libc::EINVAL)),
                FileKind::Fifo | FileKind::Socket | FileKind::CharDev | FileKind::BlockDev => {
                    at.mknod(kind.mode_bits() | perm, rdev)
                }
            };
            self.forget_under(key);
            // mkdir and mknod applied the umask
            let made = made.and_then(|()| if kind == FileKind::File { Ok(()) } else { at.chmod(perm) });
            self.dirty.mark_parent(key);
            self.dirty.mark(key);
            made
        })
    }

    fn symlink(&self, target: &OsStr, path: &Path) -> io::Result<()> {
        self.on_object("symlink", path, |key, at| {
            let _names = self.namespace.read();
            let made = at.symlink(target);
            self.forget_under(key);
            self.dirty.mark_parent(key);
            made
        })
    }

    fn read_link(&self, path: &Path) -> io::Result<OsString> {
        self.on_object("readlink", path, |_, at| at.read_link())
    }

    fn link(&self, existing: &Path, new: &Path) -> io::Result<()> {
        self.on_two_objects("link", existing, new, |_, existing, new_key, new| {
            let _names = self.namespace.read();
            let made = existing.link(new);
            self.forget_under(new_key);
            // The source's directory is unchanged; the object's link count
            // is made durable with the object.
            self.dirty.mark_parent(new_key);
            self.dirty.mark(new_key);
            made
        })
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.on_object("unlink", path, |key, at| {
            busy_if_root(key)?;
            let _names = self.namespace.read();
            self.settle_before_unlink(key, at)?;
            let removed = at.unlink();
            self.forget_under(key);
            self.dirty.mark_parent(key);
            removed
        })
    }

    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        self.on_object("rmdir", path, |key, at| {
            busy_if_root(key)?;
            let _names = self.namespace.read();
            let removed = at.rmdir();
            self.forget_under(key);
            self.dirty.mark_parent(key);
            removed
        })
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.on_two_objects("rename", from, to, |from_key, from, to_key, to| {
            busy_if_root(from_key)?;
            busy_if_root(to_key)?;
            let _names = self.namespace.read();
            self.settle_before_unlink(to_key, to)?;
            let renamed = from.rename(to);
            {
                let mut fds = self.fds.lock();
                fds.forget_under(from_key);
                fds.forget_under(to_key);
            }
            if renamed.is_ok() {
                self.dirty.moved(from_key, to_key);
            }
            self.dirty.mark_parent(from_key);
            self.dirty.mark_parent(to_key);
            renamed
        })
    }

    fn set_owner(&self, path: &Path, uid: u32, gid: u32) -> io::Result<()> {
        self.on_object("chown", path, |key, at| self.marking(key, at.chown(uid, gid)))
    }

    fn set_perm(&self, path: &Path, perm: u32) -> io::Result<()> {
        self.on_object("chmod", path, |key, at| {
            // A symlink has no permissions of its own; chmod would follow it.
            if kind_of_mode(at.lstat()?.st_mode)? == FileKind::Symlink {
                return Ok(());
            }
            self.marking(key, at.chmod(perm & 0o7777))
        })
    }

    fn set_times(&self, path: &Path, atime: SystemTime, mtime: SystemTime) -> io::Result<()> {
        self.on_object("utimens", path, |key, at| self.marking(key, at.set_times(&[timespec(atime), timespec(mtime)])))
    }

    fn get_xattr(&self, path: &Path, name: &OsStr) -> io::Result<Option<Vec<u8>>> {
        self.on_path("getxattr", path, |key| {
            let name = c_string(name)?;
            absent_is_none(self.xattr_path(key)?.get(&name))
        })
    }

    fn list_xattr(&self, path: &Path) -> io::Result<Vec<OsString>> {
        self.on_path("listxattr", path, |key| {
            let names = self.xattr_path(key)?.list()?;
            let mut out: Vec<OsString> =
                names.split(|b| *b == 0).filter(|n| !n.is_empty()).map(|n| OsString::from_vec(n.to_vec())).collect();
            out.sort();
            Ok(out)
        })
    }

    fn set_xattr(&self, path: &Path, name: &OsStr, value: &[u8]) -> io::Result<()> {
        self.on_path("setxattr", path, |key| {
            let name = c_string(name)?;
            let set = self.xattr_path(key)?.set(&name, value);
            self.marking(key, set)
        })
    }

    fn remove_xattr(&self, path: &Path, name: &OsStr) -> io::Result<()> {
        self.on_path("removexattr", path, |key| {
            let name = c_string(name)?;
            let removed = absent_is_none(self.xattr_path(key)?.remove(&name)).map(drop);
            self.marking(key, removed)
        })
    }

    fn sync(&self) -> io::Result<()> {
        let covered = self.barrier()?;
        self.dirty.finish(&covered);
        Ok(())
    }

    fn statfs(&self) -> io::Result<FsStats> {
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        check(unsafe { libc::fstatvfs(self.root_dir.as_raw_fd(), &mut st) })
            .map_err(|e| at_path("statfs", &self.root, e))?;
        // Block counts are in fragment units; report them in `bsize` units.
        let bsize = st.f_bsize.max(1);
        let scale = |blocks: libc::fsblkcnt_t| (blocks as u128 * st.f_frsize as u128 / bsize as u128) as u64;
        Ok(FsStats {
            blocks: scale(st.f_blocks),
            bfree: scale(st.f_bfree),
            bavail: scale(st.f_bavail),
            files: st.f_files,
            ffree: st.f_ffree,
            bsize: u32::try_from(bsize).unwrap_or(u32::MAX),
            namelen: u32::try_from(st.f_namemax).unwrap_or(u32::MAX),
        })
    }

    fn limits(&self) -> BackendLimits {
        *self.limits.get_or_init(|| self.scratch.lock().limits(self.root_dir.as_fd()))
    }

    fn check_xattrs(&self, kind: FileKind, xattrs: &[(&OsStr, &[u8])]) -> io::Result<()> {
        let tried = self.scratch.lock().check_xattrs(self.root_dir.as_fd(), kind, xattrs);
        tried.map_err(|e| at_path("setxattr on a scratch object in", &self.root.join(crate::STATE_DIR), e))
    }

    fn fallocate(&self, path: &Path, mode: FallocMode, offset: u64, len: u64) -> io::Result<()> {
        self.on_path("fallocate", path, |key| {
            let done = self.file(key, Access::Write).and_then(|file| space::fallocate(&file, mode, offset, len));
            // marked even on failure: part of it may have happened
            self.dirty.mark(key);
            done
        })
    }

    fn data_extents(&self, path: &Path) -> io::Result<Vec<std::ops::Range<u64>>> {
        self.on_path("seek data", path, |key| space::data_extents(&*self.file(key, Access::Read)?))
    }
}

/// Creates or truncates the regular file at `at` with mode exactly `perm`;
/// `EEXIST` if anything else is there.
fn create_file(at: &Location, perm: u32) -> io::Result<()> {
    let fresh = at.open(libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW, perm);
    let file = match fresh {
        Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {
            if kind_of_mode(at.lstat()?.st_mode)? != FileKind::File {
                return Err(e);
            }
            let file = File::from(at.open(libc::O_WRONLY | libc::O_TRUNC | libc::O_NOFOLLOW | libc::O_NONBLOCK, 0)?);
            must_be_regular(file.metadata()?.mode())?;
            file
        }
        other => File::from(other?),
    };
    // open applied the umask
    file.set_permissions(Permissions::from_mode(perm))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backend() -> (tempfile::TempDir, DirBackend) {
        let dir = tempfile::tempdir().unwrap();
        let backend = DirBackend::new(dir.path()).unwrap();
        (dir, backend)
    }

    #[test]
    fn new_names_the_path_when_it_is_not_a_directory() {
        let (dir, _) = backend();
        let file = dir.path().join("plain");
        fs::write(&file, b"x").unwrap();
        let e = DirBackend::new(&file).err().unwrap();
        assert_eq!(errno_of(&e), libc::ENOTDIR);
        assert!(e.to_string().contains("plain"), "{e}");
        let e = DirBackend::new(&dir.path().join("missing")).err().unwrap();
        assert_eq!(errno_of(&e), libc::ENOENT);
        assert!(e.to_string().contains("missing"), "{e}");
    }

    #[test]
    fn cached_descriptor_follows_renames_and_replacements() {
        let (_dir, b) = backend();
        let p = |s: &str| PathBuf::from(s);
        b.create(&p("d"), FileKind::Dir, 0o755, 0).unwrap();
        b.create(&p("d/a"), FileKind::File, 0o644, 0).unwrap();
        b.write_at(&p("d/a"), 0, b"first").unwrap();
        b.create(&p("b"), FileKind::File, 0o644, 0).unwrap();
        b.write_at(&p("b"), 0, b"second").unwrap();
        assert_eq!(b.fds.lock().entries.len(), 2);
        // replace d/a by b: the cached d/a descriptor must not survive
        b.rename(&p("b"), &p("d/a")).unwrap();
        let mut buf = [0u8; 6];
        assert_eq!(b.read_at(&p("d/a"), 0, &mut buf).unwrap(), 6);
        assert_eq!(&buf, b"second");
        // moving the directory drops what was cached under it
        b.rename(&p("d"), &p("e")).unwrap();
        assert!(b.fds.lock().entries.is_empty());
        assert_eq!(errno_of(&b.write_at(&p("d/a"), 0, b"x").unwrap_err()), libc::ENOENT);
        assert_eq!(b.read_at(&p("e/a"), 0, &mut buf).unwrap(), 6);
    }

    #[test]
    fn an_open_that_raced_with_a_namespace_change_is_not_cached() {
        let (dir, b) = backend();
        fs::write(dir.path().join("x"), b"old").unwrap();
        let x = || b.locate(Path::new("x")).unwrap();
        let mut cache = FdCache::default();
        // A reader misses and notes the generation, then opens "x" ...
        let opened_in = cache.generation;
        let (file, readable, writable) = open_regular(&x(), Access::Read).unwrap();
        // ... while a rename replaces "x" and drops what was cached for it ...
        cache.forget_under(Path::new("x"));
        // ... so the descriptor of the replaced file must not be kept.
        let fd = CachedFd { file: Arc::new(file), readable, writable, last_use: 0 };
        cache.insert(opened_in, PathBuf::from("x"), fd);
        assert!(cache.get(Path::new("x"), Access::Read).is_none());
        let (file, readable, writable) = open_regular(&x(), Access::Read).unwrap();
        let fd = CachedFd { file: Arc::new(file), readable, writable, last_use: 0 };
        cache.insert(cache.generation, PathBuf::from("x"), fd);
        assert!(cache.get(Path::new("x"), Access::Read).is_some());
        assert!(cache.get(Path::new("x"), Access::Write).is_some(), "opened read-write when permitted");
    }

    #[test]
    fn descriptor_cache_stays_bounded() {
        let (_dir, b) = backend();
        for i in 0..FD_CACHE_SIZE + 10 {
            let name = PathBuf::from(format!("f{i}"));
            b.create(&name, FileKind::File, 0o644, 0).unwrap();
            b.write_at(&name, 0, b"x").unwrap();
        }
        assert_eq!(b.fds.lock().entries.len(), FD_CACHE_SIZE);
        assert!(b.fds.lock().entries.contains_key(Path::new("f73")));
        assert!(!b.fds.lock().entries.contains_key(Path::new("f0")));
    }

    #[test]
    fn errors_name_the_full_path() {
        let (dir, b) = backend();
        let e = b.stat(Path::new("nope")).unwrap_err();
        assert!(e.to_string().starts_with(&format!("stat {}/nope: ", b.root().display())), "{e}");
        let e = b.rename(Path::new("x"), Path::new("y")).unwrap_err();
        assert!(e.to_string().contains(" -> "), "{e}");
        assert_eq!(errno_of(&e), libc::ENOENT);
        drop(dir);
    }

    /// A file whose relative path is exactly `len` bytes, below a chain of
    /// 200-byte directory names made as needed.
    fn file_of_length(b: &DirBackend, len: usize) -> PathBuf {
        let mut dir = PathBuf::new();
        loop {
            let rest = len - dir.as_os_str().len() - usize::from(!dir.as_os_str().is_empty());
            if rest <= 201 {
                let path = dir.join("f".repeat(rest));
                assert_eq!(path.as_os_str().len(), len);
                return path;
            }
            dir.push("d".repeat(200));
            if b.stat(&dir).is_err() {
                b.create(&dir, FileKind::Dir, 0o755, 0).unwrap();
            }
        }
    }

    #[test]
    fn every_length_around_the_path_max_limits_works() {
        let (_dir, b) = backend();
        let path_max = libc::PATH_MAX as usize;
        // Longest relative path whose absolute path still fits (the xattr
        // calls use it), one more, the longest handed to the kernel whole,
        // and the shortest that is walked.
        let fits_absolute = path_max - 2 - b.root().as_os_str().len();
        for len in [fits_absolute, fits_absolute + 1, path_max - 1, path_max] {
            let f = file_of_length(&b, len);
            b.create(&f, FileKind::File, 0o600, 0).unwrap();
            b.write_at(&f, 0, b"data").unwrap();
            let mut buf = [0u8; 8];
            assert_eq!(b.read_at(&f, 0, &mut buf).unwrap(), 4, "length {len}");
            assert_eq!(b.stat(&f).unwrap().size, 4, "length {len}");
            let name = OsStr::new("user.k");
            b.set_xattr(&f, name, b"v").unwrap();
            assert_eq!(b.get_xattr(&f, name).unwrap().as_deref(), Some(&b"v"[..]), "length {len}");
            assert!(b.list_xattr(&f).unwrap().contains(&name.to_owned()), "length {len}");
            b.remove_xattr(&f, name).unwrap();
            assert_eq!(b.get_xattr(&f, name).unwrap(), None, "length {len}");
            // A symlink's own attributes, not its target's, and not the
            // `/proc/self/fd` link's when the path is long.
            let link = f.with_file_name("s");
            b.symlink(f.file_name().unwrap(), &link).unwrap();
            if unsafe { libc::geteuid() } == 0 {
                let len = link.as_os_str().len();
                let trusted = OsStr::new("trusted.k");
                b.set_xattr(&link, trusted, b"on the link").unwrap();
                assert_eq!(b.get_xattr(&link, trusted).unwrap().as_deref(), Some(&b"on the link"[..]), "length {len}");
                assert_eq!(b.list_xattr(&link).unwrap(), [trusted.to_owned()], "length {len}");
                assert_eq!(b.get_xattr(&f, trusted).unwrap(), None, "length {len}");
            }
            b.remove_file(&link).unwrap();
            b.remove_file(&f).unwrap();
            assert_eq!(errno_of(&b.stat(&f).unwrap_err()), libc::ENOENT, "length {len}");
        }
    }

    #[test]
    fn errors_on_walked_paths_keep_the_errno_and_name_the_full_path() {
        let (_dir, b) = backend();
        let missing = file_of_length(&b, libc::PATH_MAX as usize + 10);
        let e = b.stat(&missing).unwrap_err();
        assert_eq!(errno_of(&e), libc::ENOENT);
        assert!(e.to_string().starts_with(&format!("stat {}: ", b.root().join(&missing).display())), "{e}");
        // A walk goes through neither a file nor a symlink (as in a `MemBackend`).
        let plain = missing.with_file_name("plain");
        b.create(&plain, FileKind::File, 0o644, 0).unwrap();
        let up = missing.with_file_name("up");
        b.symlink(OsStr::new("."), &up).unwrap();
        for through in [plain, up] {
            let beyond = through.join("y".repeat(250));
            assert!(beyond.as_os_str().len() >= libc::PATH_MAX as usize);
            let e = b.create(&beyond, FileKind::Dir, 0o755, 0).unwrap_err();
            assert_eq!(errno_of(&e), libc::ENOTDIR, "{e}");
        }
    }

    /// The backing tree's owner replaces a directory by a symlink to a
    /// directory of root's: no call through it touches what it leads to.
    #[test]
    fn a_planted_directory_symlink_leads_nowhere_outside_the_root() {
        let (_dir, b) = backend();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("victim"), b"root's").unwrap();
        let p = |s: &str| PathBuf::from(s);
        b.create(&p("app"), FileKind::Dir, 0o755, 0).unwrap();
        b.create(&p("app/data"), FileKind::Dir, 0o755, 0).unwrap();
        fs::remove_dir(b.root().join("app/data")).unwrap();
        std::os::unix::fs::symlink(outside.path(), b.root().join("app/data")).unwrap();
        let mode_before = fs::metadata(outside.path().join("victim")).unwrap().permissions().mode();
        let f = p("app/data/victim");
        let when = UNIX_EPOCH + Duration::from_secs(1_000_000);
        let results = [
            b.write_at(&f, 0, b"overwritten"),
            b.set_len(&f, 0),
            b.create(&f, FileKind::File, 0o666, 0),
            b.create(&p("app/data/new"), FileKind::Dir, 0o777, 0),
            b.set_perm(&f, 0o666),
            b.set_owner(&f, 4242, 4242),
            b.set_times(&f, when, when),
            b.set_xattr(&f, OsStr::new("user.k"), b"v"),
            b.rename(&f, &p("stolen")),
            b.link(&f, &p("stolen")),
            b.remove_file(&f),
        ];
        for (i, result) in results.into_iter().enumerate() {
            assert_eq!(errno_of(&result.unwrap_err()), libc::ENOTDIR, "call {i}");
        }
        assert_eq!(errno_of(&b.stat(&f).unwrap_err()), libc::ENOTDIR);
        assert_eq!(fs::read(outside.path().join("victim")).unwrap(), b"root's");
        assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 1);
        assert_eq!(fs::metadata(outside.path().join("victim")).unwrap().permissions().mode(), mode_before);
    }

    fn marked(b: &DirBackend) -> Vec<PathBuf> {
        b.dirty.pending().paths.expect("targeted barrier")
    }

    #[test]
    fn barrier_targets_skip_removed_objects_and_reach_special_files_through_their_directory() {
        let (_dir, b) = backend();
        let p = |s: &str| PathBuf::from(s);
        b.create(&p("d"), FileKind::Dir, 0o755, 0).unwrap();
        b.create(&p("d/f"), FileKind::File, 0o644, 0).unwrap();
        b.create(&p("e"), FileKind::Dir, 0o755, 0).unwrap();
        b.create(&p("e/fifo"), FileKind::Fifo, 0o644, 0).unwrap();
        b.symlink(OsStr::new("d/f"), &p("link")).unwrap();
        let keys = [p("d/f"), p("e/fifo"), p("link"), p("gone"), p("d/f/below-a-file"), p("")];
        let targets = b.barrier_targets(&keys).unwrap();
        let expected = BTreeMap::from([(p(""), true), (p("d/f"), false), (p("e"), true)]);
        assert_eq!(targets, expected);
        // and the opens for the fsyncs succeed, fifo or not
        assert_eq!(b.open_for_barrier(&keys).unwrap().map(|opened| opened.len()), Some(3));
    }

    #[test]
    fn changes_mark_what_a_barrier_must_fsync_and_a_barrier_clears_them() {
        let (_dir, b) = backend();
        let p = |s: &str| PathBuf::from(s);
        assert_eq!(b.dirty.pending().paths, None, "the first barrier flushes everything");
        b.sync().unwrap();
        b.create(&p("d"), FileKind::Dir, 0o755, 0).unwrap();
        b.create(&p("d/a"), FileKind::File, 0o644, 0).unwrap();
        assert_eq!(marked(&b), [p(""), p("d"), p("d/a")]);
        b.sync().unwrap();
        assert!(marked(&b).is_empty());
        b.write_at(&p("d/a"), 0, b"data").unwrap();
        b.set_times(&p("d"), UNIX_EPOCH, UNIX_EPOCH).unwrap();
        assert_eq!(marked(&b), [p("d"), p("d/a")]);
        // the write follows the file through a rename of its directory
        b.rename(&p("d"), &p("e")).unwrap();
        assert_eq!(marked(&b), [p(""), p("e"), p("e/a")]);
        b.sync().unwrap();
        // a file written then removed is skipped; its directory is marked
        b.write_at(&p("e/a"), 0, b"more").unwrap();
        b.remove_file(&p("e/a")).unwrap();
        assert_eq!(marked(&b), [p("e"), p("e/a")]);
        b.sync().unwrap();
        assert!(marked(&b).is_empty());
    }

    #[test]
    fn a_written_file_that_loses_one_of_two_names_is_made_durable_first() {
        let (_dir, b) = backend();
        let p = |s: &str| PathBuf::from(s);
        let settles = |key: &str| b.settle_before_unlink(Path::new(key), &b.locate(Path::new(key)).unwrap()).unwrap();
        b.create(&p("a"), FileKind::File, 0o644, 0).unwrap();
        b.create(&p("alone"), FileKind::File, 0o644, 0).unwrap();
        b.link(&p("a"), &p("c")).unwrap();
        b.sync().unwrap();
        assert!(!settles("a"), "nothing waits for a barrier");
        b.write_at(&p("a"), 0, b"data").unwrap();
        b.write_at(&p("alone"), 0, b"data").unwrap();
        assert!(settles("a"), "the object lives on at c, where no mark leads");
        assert!(!settles("alone"), "the last name: the data dies with it");
        // both ways of losing a name go through it and keep the other name
        b.remove_file(&p("a")).unwrap();
        b.create(&p("x"), FileKind::File, 0o644, 0).unwrap();
        b.link(&p("c"), &p("a")).unwrap();
        b.rename(&p("x"), &p("c")).unwrap();
        let mut buf = [0u8; 4];
        assert_eq!(b.read_at(&p("a"), 0, &mut buf).unwrap(), 4);
        assert_eq!(&buf, b"data");
        b.sync().unwrap();
        assert!(marked(&b).is_empty());
    }

    #[test]
    fn barriers_beside_writes_and_renames_on_other_threads_fail_nothing_and_lose_no_mark() {
        let (_dir, b) = backend();
        b.sync().unwrap();
        let p = |s: String| PathBuf::from(s);
        std::thread::scope(|scope| {
            let syncer = scope.spawn(|| (0..200).try_for_each(|_| b.sync()));
            let workers: Vec<_> = (0..3)
                .map(|w| {
                    let b = &b;
                    scope.spawn(move || {
                        b.create(&p(format!("w{w}")), FileKind::Dir, 0o755, 0).unwrap();
                        b.create(&p(format!("w{w}/a")), FileKind::File, 0o644, 0).unwrap();
                        for i in 0..200u64 {
                            let (from, to) = if i % 2 == 0 { ("a", "b") } else { ("b", "a") };
                            b.write_at(&p(format!("w{w}/{from}")), i * 8, b"8 bytes.").unwrap();
                            b.rename(&p(format!("w{w}/{from}")), &p(format!("w{w}/{to}"))).unwrap();
                        }
                    })
                })
                .collect();
            workers.into_iter().for_each(|w| w.join().unwrap());
            syncer.join().unwrap().unwrap();
        });
        // every file ends at "a" (an even number of renames), its last write
        // moved along with it unless a barrier already covered it
        for w in 0..3 {
            assert_eq!(b.stat(&p(format!("w{w}/a"))).unwrap().size, 200 * 8);
            b.write_at(&p(format!("w{w}/a")), 0, b"last").unwrap();
            assert!(marked(&b).contains(&p(format!("w{w}/a"))));
        }
        b.sync().unwrap();
        assert!(marked(&b).is_empty());
    }

    /// Not a check: prints the time of 50 barriers, each after a 4 KiB
    /// write, with `syncfs` and with the targeted fsyncs. Run with
    /// `cargo test -p mcfs-core --release barrier_timing -- --ignored --nocapture`
    /// (MCFS_BENCH_DIR picks the file system; /tmp by default).
    #[test]
    #[ignore]
    fn barrier_timing() {
        let base = std::env::var_os("MCFS_BENCH_DIR").map_or_else(std::env::temp_dir, PathBuf::from);
        let dir = tempfile::tempdir_in(base).unwrap();
        let b = DirBackend::new(dir.path()).unwrap();
        let file = Path::new("f");
        b.create(file, FileKind::File, 0o644, 0).unwrap();
        b.sync().unwrap();
        let page = vec![7u8; 4096];
        let run = |label: &str, barrier: &dyn Fn() -> io::Result<()>| {
            let start = std::time::Instant::now();
            for i in 0..50u64 {
                b.write_at(file, i * 4096, &page).unwrap();
                barrier().unwrap();
            }
            let took = start.elapsed();
            println!("{label}: 50 barriers in {took:?} ({:?} each) on {}", took / 50, b.root().display());
        };
        run("syncfs  ", &|| b.flush_everything());
        run("targeted", &|| b.sync());
        run("syncfs  ", &|| b.flush_everything());
        run("targeted", &|| b.sync());
    }

    /// Not a check: prints the cost per call of path resolution on a path
    /// three directories deep: `stat`, a 4 KiB `write_at` whose descriptor
    /// is cached, one whose descriptor is not (more files than the cache
    /// holds), and create + unlink. Run with
    /// `cargo test -p mcfs-core --release resolution_timing -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn resolution_timing() {
        let (_dir, b) = backend();
        let p = |s: String| PathBuf::from(s);
        for d in ["a", "a/b", "a/b/c"] {
            b.create(Path::new(d), FileKind::Dir, 0o755, 0).unwrap();
        }
        let files: Vec<PathBuf> = (0..2 * FD_CACHE_SIZE).map(|i| p(format!("a/b/c/f{i}"))).collect();
        for f in &files {
            b.create(f, FileKind::File, 0o644, 0).unwrap();
        }
        let page = vec![7u8; 4096];
        let time = |label: &str, calls: u32, mut call: Box<dyn FnMut(u32) + '_>| {
            let start = std::time::Instant::now();
            for i in 0..calls {
                call(i);
            }
            println!("{label}: {:?} per call", start.elapsed() / calls);
        };
        for _ in 0..2 {
            time("stat                 ", 100_000, Box::new(|i| assert!(b.stat(&files[i as usize % 8]).is_ok())));
            time("write_at, fd cached  ", 100_000, Box::new(|_| b.write_at(&files[0], 0, &page).unwrap()));
            let n = files.len();
            time("write_at, fd uncached", 50_000, Box::new(|i| b.write_at(&files[i as usize % n], 0, &page).unwrap()));
            time(
                "create + unlink      ",
                20_000,
                Box::new(|_| {
                    b.create(Path::new("a/b/c/new"), FileKind::File, 0o644, 0).unwrap();
                    b.remove_file(Path::new("a/b/c/new")).unwrap();
                }),
            );
        }
    }

    #[test]
    fn times_before_the_epoch_round_trip() {
        let t = UNIX_EPOCH - Duration::from_millis(1500);
        let ts = timespec(t);
        assert_eq!((ts.tv_sec, ts.tv_nsec), (-2, 500_000_000));
        assert_eq!(system_time(ts.tv_sec, ts.tv_nsec), t);
    }
}
