//! `DirBackend`: the backing store is a real directory. Each call is the
//! matching system call on `root/path`; nothing is buffered here, so the
//! directory is always an ordinary tree any tool can read.
//!
//! Exact modes: new objects get exactly the requested permission bits (a
//! `chmod` after creation undoes the umask). `write_at` and `set_len` never
//! create. Reads and writes go through a small cache of open descriptors
//! keyed by path. Invariant: a cached descriptor always refers to the object
//! now at its path — every call that changes the namespace (create, symlink,
//! link, remove, rename) drops the entries at and under the paths it touched,
//! and an open that raced with such a change is not cached (generation
//! check). Changes made to the directory by other processes while the
//! backend is in use are not noticed.

use super::error::{at_path, two_path_error};
use super::relpath;
use super::snapshot::{ContentHasher, SnapshotEntry, TreeSnapshot};
use super::{errno_of, Backend, BackendAttr};
use crate::types::{FileKind, FsStats, PAGE_SIZE};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::ffi::{CString, OsStr, OsString};
use std::fs::{self, File, FileType, Metadata, OpenOptions, Permissions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{DirBuilderExt, FileExt, FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
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
    }
}

/// A backing store in a real directory.
pub struct DirBackend {
    root: PathBuf,
    /// The root, open, for `syncfs` and `fstatvfs`.
    root_dir: File,
    fds: Mutex<FdCache>,
}

impl DirBackend {
    /// Uses the existing directory `root` (the error names it otherwise).
    pub fn new(root: &Path) -> io::Result<DirBackend> {
        let fail = |e| at_path("open backing directory", root, e);
        let root = fs::canonicalize(root).map_err(fail)?;
        let root_dir = OpenOptions::new().read(true).custom_flags(libc::O_DIRECTORY).open(&root).map_err(fail)?;
        Ok(DirBackend { root, root_dir, fds: Mutex::new(FdCache::default()) })
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
            let full = self.full(&key);
            let fail = |e| at_path("snapshot", &full, e);
            let meta = fs::symlink_metadata(&full).map_err(fail)?;
            let kind = kind_of(meta.file_type()).map_err(fail)?;
            if kind == FileKind::Dir {
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
            let entry = SnapshotEntry {
                kind,
                perm: meta.mode() & 0o7777,
                uid: meta.uid(),
                gid: meta.gid(),
                rdev: if matches!(kind, FileKind::CharDev | FileKind::BlockDev) { meta.rdev() as u32 } else { 0 },
                content: if kind == FileKind::File {
                    Some(digest_file(&full, meta.size()).map_err(fail)?)
                } else {
                    None
                },
                target: if kind == FileKind::Symlink { Some(self.read_link(&key)?) } else { None },
                xattrs,
                mtime: Some(meta.modified().map_err(fail)?),
                first_link: PathBuf::new(),
            };
            snap.insert(key, (meta.dev(), meta.ino()), entry);
        }
        Ok(snap.finish())
    }

    fn full(&self, key: &Path) -> PathBuf {
        if key.as_os_str().is_empty() {
            self.root.clone()
        } else {
            self.root.join(key)
        }
    }

    /// Checks `rel`, then runs `f` with its canonical form and its full
    /// path; errors come back naming `op` and the full path.
    fn on_path<T>(&self, op: &str, rel: &Path, f: impl FnOnce(&Path, &Path) -> io::Result<T>) -> io::Result<T> {
        let key = relpath::canonical(rel).map_err(|errno| at_path(op, rel, io::Error::from_raw_os_error(errno)))?;
        let full = self.full(&key);
        f(&key, &full).map_err(|e| at_path(op, &full, e))
    }

    /// `on_path` for calls that name two paths: `f(from_key, from_full, to_key, to_full)`.
    fn on_two_paths(
        &self,
        op: &str,
        from: &Path,
        to: &Path,
        f: impl FnOnce(&Path, &Path, &Path, &Path) -> io::Result<()>,
    ) -> io::Result<()> {
        let keys = relpath::canonical(from).and_then(|from| Ok((from, relpath::canonical(to)?)));
        let (from_key, to_key) = keys.map_err(|errno| two_path_error(op, from, to, errno))?;
        let (from_full, to_full) = (self.full(&from_key), self.full(&to_key));
        f(&from_key, &from_full, &to_key, &to_full).map_err(|e| two_path_error(op, &from_full, &to_full, errno_of(&e)))
    }

    /// Records a namespace change at `key`.
    fn forget_under(&self, key: &Path) {
        self.fds.lock().forget_under(key);
    }

    /// An open descriptor of the regular file at `key`, from the cache or newly opened.
    fn file(&self, key: &Path, full: &Path, access: Access) -> io::Result<Arc<File>> {
        let generation = {
            let mut fds = self.fds.lock();
            if let Some(file) = fds.get(key, access) {
                return Ok(file);
            }
            fds.generation
        };
        let (file, readable, writable) = open_regular(full, access)?;
        let file = Arc::new(file);
        let cached = CachedFd { file: file.clone(), readable, writable, last_use: 0 };
        self.fds.lock().insert(generation, key.to_owned(), cached);
        Ok(file)
    }
}

/// Opens the regular file at `full`, read-write when permitted, else just
/// for `access`: (file, readable, writable). Never creates, never follows a
/// final symlink, never opens a device or a fifo (checked before and after
/// the open, as the name may change in between).
fn open_regular(full: &Path, access: Access) -> io::Result<(File, bool, bool)> {
    must_be_regular(fs::symlink_metadata(full)?.file_type())?;
    let open = |read: bool, write: bool| {
        OpenOptions::new().read(read).write(write).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(full)
    };
    let (file, readable, writable) = match open(true, true) {
        Ok(file) => (file, true, true),
        Err(_) if access == Access::Read => (open(true, false)?, true, false),
        Err(_) => (open(false, true)?, false, true),
    };
    must_be_regular(file.metadata()?.file_type())?;
    Ok((file, readable, writable))
}

/// The errno a read or write of a non-regular object gives (the same as
/// `MemBackend` gives).
fn must_be_regular(t: FileType) -> io::Result<()> {
    let errno = match kind_of(t)? {
        FileKind::File => return Ok(()),
        FileKind::Dir => libc::EISDIR,
        FileKind::Symlink => libc::ELOOP,
        _ => libc::EINVAL,
    };
    Err(io::Error::from_raw_os_error(errno))
}

fn kind_of(t: FileType) -> io::Result<FileKind> {
    Ok(if t.is_file() {
        FileKind::File
    } else if t.is_dir() {
        FileKind::Dir
    } else if t.is_symlink() {
        FileKind::Symlink
    } else if t.is_fifo() {
        FileKind::Fifo
    } else if t.is_socket() {
        FileKind::Socket
    } else if t.is_char_device() {
        FileKind::CharDev
    } else if t.is_block_device() {
        FileKind::BlockDev
    } else {
        return Err(io::Error::from_raw_os_error(libc::EIO));
    })
}

fn attr_of(m: &Metadata) -> io::Result<BackendAttr> {
    Ok(BackendAttr {
        ino: m.ino(),
        kind: kind_of(m.file_type())?,
        perm: m.mode() & 0o7777,
        nlink: m.nlink().try_into().unwrap_or(u32::MAX),
        uid: m.uid(),
        gid: m.gid(),
        size: m.size(),
        rdev: m.rdev() as u32,
        atime: system_time(m.atime(), m.atime_nsec()),
        mtime: system_time(m.mtime(), m.mtime_nsec()),
        ctime: system_time(m.ctime(), m.ctime_nsec()),
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

fn c_path(path: &Path) -> io::Result<CString> {
    c_string(path.as_os_str())
}

fn c_string(s: &OsStr) -> io::Result<CString> {
    CString::new(s.as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// `0` → `Ok`, `-1` → the OS error.
fn check(ret: libc::c_int) -> io::Result<()> {
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Runs a "query the size, then fill the buffer" call (the xattr calls)
/// until the value stops changing size in between.
fn sized_query(mut call: impl FnMut(*mut libc::c_void, usize) -> libc::ssize_t) -> io::Result<Vec<u8>> {
    loop {
        let size = call(std::ptr::null_mut(), 0);
        if size < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut buf = vec![0u8; size as usize];
        let got = call(buf.as_mut_ptr().cast(), buf.len());
        if got >= 0 {
            buf.truncate(got as usize);
            return Ok(buf);
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::ERANGE) {
            return Err(e);
        }
    }
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

fn digest_file(full: &Path, size: u64) -> io::Result<super::snapshot::ContentDigest> {
    let (file, _, _) = open_regular(full, Access::Read)?;
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

impl Backend for DirBackend {
    fn stat(&self, path: &Path) -> io::Result<BackendAttr> {
        self.on_path("stat", path, |_, full| attr_of(&fs::symlink_metadata(full)?))
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<(OsString, FileKind)>> {
        self.on_path("list", path, |_, full| {
            let mut out = Vec::new();
            for entry in fs::read_dir(full)? {
                let entry = entry?;
                out.push((entry.file_name(), kind_of(entry.file_type()?)?));
            }
            out.sort_by(|a, b| a.0.cmp(&b.0));
            Ok(out)
        })
    }

    fn read_at(&self, path: &Path, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.on_path("read", path, |key, full| {
            let file = self.file(key, full, Access::Read)?;
            read_full(&file, offset, buf)
        })
    }

    fn write_at(&self, path: &Path, offset: u64, data: &[u8]) -> io::Result<()> {
        self.on_path("write", path, |key, full| self.file(key, full, Access::Write)?.write_all_at(data, offset))
    }

    fn set_len(&self, path: &Path, size: u64) -> io::Result<()> {
        self.on_path("truncate", path, |key, full| {
            let file = self.file(key, full, Access::Write)?;
            let size = libc::off_t::try_from(size).map_err(|_| io::Error::from_raw_os_error(libc::EFBIG))?;
            check(unsafe { libc::ftruncate(file.as_raw_fd(), size) })
        })
    }

    fn create(&self, path: &Path, kind: FileKind, perm: u32, rdev: u32) -> io::Result<()> {
        let perm = perm & 0o7777;
        self.on_path("create", path, |key, full| {
            let made = match kind {
                FileKind::File => create_file(full, perm),
                FileKind::Dir => fs::DirBuilder::new().mode(perm).create(full),
                FileKind::Symlink => Err(io::Error::from_raw_os_error(libc::EINVAL)),
                FileKind::Fifo | FileKind::Socket | FileKind::CharDev | FileKind::BlockDev => {
                    let mode = kind.mode_bits() | perm;
                    check(unsafe { libc::mknod(c_path(full)?.as_ptr(), mode, rdev.into()) })
                }
            };
            self.forget_under(key);
            made?;
            if kind != FileKind::File {
                // mkdir and mknod applied the umask
                fs::set_permissions(full, Permissions::from_mode(perm))?;
            }
            Ok(())
        })
    }

    fn symlink(&self, target: &OsStr, path: &Path) -> io::Result<()> {
        self.on_path("symlink", path, |key, full| {
            let made = std::os::unix::fs::symlink(target, full);
            self.forget_under(key);
            made
        })
    }

    fn read_link(&self, path: &Path) -> io::Result<OsString> {
        self.on_path("readlink", path, |_, full| Ok(fs::read_link(full)?.into_os_string()))
    }

    fn link(&self, existing: &Path, new: &Path) -> io::Result<()> {
        self.on_two_paths("link", existing, new, |_, existing, new_key, new| {
            let made = fs::hard_link(existing, new);
            self.forget_under(new_key);
            made
        })
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.on_path("unlink", path, |key, full| {
            busy_if_root(key)?;
            let removed = fs::remove_file(full);
            self.forget_under(key);
            removed
        })
    }

    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        self.on_path("rmdir", path, |key, full| {
            busy_if_root(key)?;
            let removed = fs::remove_dir(full);
            self.forget_under(key);
            removed
        })
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.on_two_paths("rename", from, to, |from_key, from, to_key, to| {
            busy_if_root(from_key)?;
            busy_if_root(to_key)?;
            let renamed = fs::rename(from, to);
            let mut fds = self.fds.lock();
            fds.forget_under(from_key);
            fds.forget_under(to_key);
            renamed
        })
    }

    fn set_owner(&self, path: &Path, uid: u32, gid: u32) -> io::Result<()> {
        self.on_path("chown", path, |_, full| check(unsafe { libc::lchown(c_path(full)?.as_ptr(), uid, gid) }))
    }

    fn set_perm(&self, path: &Path, perm: u32) -> io::Result<()> {
        self.on_path("chmod", path, |_, full| {
            // A symlink has no permissions of its own; chmod would follow it.
            if fs::symlink_metadata(full)?.file_type().is_symlink() {
                return Ok(());
            }
            fs::set_permissions(full, Permissions::from_mode(perm & 0o7777))
        })
    }

    fn set_times(&self, path: &Path, atime: SystemTime, mtime: SystemTime) -> io::Result<()> {
        self.on_path("utimens", path, |_, full| {
            let times = [timespec(atime), timespec(mtime)];
            let flags = libc::AT_SYMLINK_NOFOLLOW;
            check(unsafe { libc::utimensat(libc::AT_FDCWD, c_path(full)?.as_ptr(), times.as_ptr(), flags) })
        })
    }

    fn get_xattr(&self, path: &Path, name: &OsStr) -> io::Result<Option<Vec<u8>>> {
        self.on_path("getxattr", path, |_, full| {
            let (path, name) = (c_path(full)?, c_string(name)?);
            let got = sized_query(|buf, len| unsafe { libc::lgetxattr(path.as_ptr(), name.as_ptr(), buf, len) });
            match got {
                Err(e) if e.raw_os_error() == Some(libc::ENODATA) => Ok(None),
                other => other.map(Some),
            }
        })
    }

    fn list_xattr(&self, path: &Path) -> io::Result<Vec<OsString>> {
        self.on_path("listxattr", path, |_, full| {
            let path = c_path(full)?;
            let names = sized_query(|buf, len| unsafe { libc::llistxattr(path.as_ptr(), buf.cast(), len) })?;
            let mut out: Vec<OsString> =
                names.split(|b| *b == 0).filter(|n| !n.is_empty()).map(|n| OsString::from_vec(n.to_vec())).collect();
            out.sort();
            Ok(out)
        })
    }

    fn set_xattr(&self, path: &Path, name: &OsStr, value: &[u8]) -> io::Result<()> {
        self.on_path("setxattr", path, |_, full| {
            let (path, name) = (c_path(full)?, c_string(name)?);
            let value_ptr = value.as_ptr().cast();
            check(unsafe { libc::lsetxattr(path.as_ptr(), name.as_ptr(), value_ptr, value.len(), 0) })
        })
    }

    fn remove_xattr(&self, path: &Path, name: &OsStr) -> io::Result<()> {
        self.on_path("removexattr", path, |_, full| {
            let (path, name) = (c_path(full)?, c_string(name)?);
            match check(unsafe { libc::lremovexattr(path.as_ptr(), name.as_ptr()) }) {
                Err(e) if e.raw_os_error() == Some(libc::ENODATA) => Ok(()),
                other => other,
            }
        })
    }

    fn sync(&self) -> io::Result<()> {
        check(unsafe { libc::syncfs(self.root_dir.as_raw_fd()) }).map_err(|e| at_path("syncfs", &self.root, e))
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
}

/// Creates or truncates the regular file at `full` with mode exactly `perm`;
/// `EEXIST` if anything else is there.
fn create_file(full: &Path, perm: u32) -> io::Result<()> {
    let fresh = OpenOptions::new().write(true).create_new(true).mode(perm).custom_flags(libc::O_NOFOLLOW).open(full);
    let file = match fresh {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            if !fs::symlink_metadata(full)?.file_type().is_file() {
                return Err(e);
            }
            let flags = libc::O_NOFOLLOW | libc::O_NONBLOCK;
            let file = OpenOptions::new().write(true).truncate(true).custom_flags(flags).open(full)?;
            must_be_regular(file.metadata()?.file_type())?;
            file
        }
        other => other?,
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
        let (dir, _) = backend();
        let path = dir.path().join("x");
        fs::write(&path, b"old").unwrap();
        let mut cache = FdCache::default();
        // A reader misses and notes the generation, then opens "x" ...
        let opened_in = cache.generation;
        let (file, readable, writable) = open_regular(&path, Access::Read).unwrap();
        // ... while a rename replaces "x" and drops what was cached for it ...
        cache.forget_under(Path::new("x"));
        // ... so the descriptor of the replaced file must not be kept.
        let fd = CachedFd { file: Arc::new(file), readable, writable, last_use: 0 };
        cache.insert(opened_in, PathBuf::from("x"), fd);
        assert!(cache.get(Path::new("x"), Access::Read).is_none());
        let (file, readable, writable) = open_regular(&path, Access::Read).unwrap();
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

    #[test]
    fn times_before_the_epoch_round_trip() {
        let t = UNIX_EPOCH - Duration::from_millis(1500);
        let ts = timespec(t);
        assert_eq!((ts.tv_sec, ts.tv_nsec), (-2, 500_000_000));
        assert_eq!(system_time(ts.tv_sec, ts.tv_nsec), t);
    }
}
