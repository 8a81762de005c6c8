//! The system calls of `DirBackend`, addressed as (directory descriptor,
//! name) so that any path the mount allows works in the backing store, even
//! when the backing root's absolute path plus the relative path exceeds
//! `PATH_MAX`, and so that no symlink in the backing tree is ever followed.
//!
//! A `Location` is found from the root's open descriptor: the parent
//! directory is opened (`open_dir_beneath`; the caller may reuse one) with
//! `openat2(RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH)` (one lookup), or, on a
//! kernel without `openat2` or past `PATH_MAX`, one name at a time with
//! `O_NOFOLLOW`; the last name is then acted on with the `*at` calls, none
//! of which follows it. A directory on the way that is a symlink is
//! `ENOTDIR`, as in a `MemBackend`.
//!
//! Invariants: keys are canonical (plain names, no `..`), so a location never
//! leaves the root through the path syntax, and no call follows a symlink
//! anywhere in the path, so none leaves it through a link planted in the
//! backing tree — the daemon often runs as root, and the tree's owner must
//! not make it write elsewhere. Errors are bare errnos; the caller labels
//! them with the operation and path.

use crate::types::FileKind;
use std::ffi::{CStr, CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The longest path string the kernel takes, counting the terminating NUL.
const PATH_MAX: usize = libc::PATH_MAX as usize;

/// The directory a `Location`'s name is looked up in.
enum DirFd<'a> {
    /// The backing root, for a name directly in it.
    Root(BorrowedFd<'a>),
    /// The parent directory, opened by `open_dir_beneath`.
    Opened(Arc<OwnedFd>),
}

/// An object in the backing store as the `*at` calls address it.
pub(super) struct Location<'a> {
    dir: DirFd<'a>,
    name: CString,
}

impl<'a> Location<'a> {
    /// Where the canonical relative path `key` is below the directory `root`
    /// (the root itself is `.` in it); `parent_dir` opens the key's parent
    /// when it is not the root (with `open_dir_beneath`, or a descriptor it
    /// opened so before and knows to be still right).
    pub(super) fn find(
        root: BorrowedFd<'a>,
        key: &Path,
        parent_dir: impl FnOnce(&Path) -> io::Result<Arc<OwnedFd>>,
    ) -> io::Result<Location<'a>> {
        if key.as_os_str().is_empty() {
            return Ok(Location { dir: DirFd::Root(root), name: c".".to_owned() });
        }
        let (Some(parent), Some(name)) = (key.parent(), key.file_name()) else {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        };
        let dir = match parent.as_os_str().is_empty() {
            true => DirFd::Root(root),
            false => DirFd::Opened(parent_dir(parent)?),
        };
        Ok(Location { dir, name: c_string(name)? })
    }

    fn dir_fd(&self) -> RawFd {
        match &self.dir {
            DirFd::Root(fd) => fd.as_raw_fd(),
            DirFd::Opened(fd) => fd.as_raw_fd(),
        }
    }

    fn name(&self) -> *const libc::c_char {
        self.name.as_ptr()
    }

    /// `openat`, never following a final symlink (always close-on-exec).
    pub(super) fn open(&self, flags: libc::c_int, mode: u32) -> io::Result<OwnedFd> {
        open_at(self.dir_fd(), &self.name, flags | libc::O_NOFOLLOW, mode)
    }

    /// `lstat`: never follows a final symlink.
    pub(super) fn lstat(&self) -> io::Result<libc::stat> {
        lstat_at(self.dir_fd(), &self.name)
    }

    pub(super) fn mkdir(&self, perm: u32) -> io::Result<()> {
        check(unsafe { libc::mkdirat(self.dir_fd(), self.name(), perm) })
    }

    /// `mknod` with `mode` = kind bits | permission bits.
    pub(super) fn mknod(&self, mode: u32, rdev: u32) -> io::Result<()> {
        check(unsafe { libc::mknodat(self.dir_fd(), self.name(), mode, rdev.into()) })
    }

    pub(super) fn symlink(&self, target: &OsStr) -> io::Result<()> {
        let target = c_string(target)?;
        check(unsafe { libc::symlinkat(target.as_ptr(), self.dir_fd(), self.name()) })
    }

    pub(super) fn read_link(&self) -> io::Result<OsString> {
        let mut buf = vec![0u8; PATH_MAX];
        loop {
            let got = unsafe { libc::readlinkat(self.dir_fd(), self.name(), buf.as_mut_ptr().cast(), buf.len()) };
            if got < 0 {
                return Err(io::Error::last_os_error());
            }
            let got = got as usize;
            // A full buffer may have cut the target short.
            if got < buf.len() {
                buf.truncate(got);
                return Ok(OsString::from_vec(buf));
            }
            buf.resize(buf.len() * 2, 0);
        }
    }

    /// A hard link to this object (a symlink itself, not its target) at `new`.
    pub(super) fn link(&self, new: &Location) -> io::Result<()> {
        check(unsafe { libc::linkat(self.dir_fd(), self.name(), new.dir_fd(), new.name(), 0) })
    }

    pub(super) fn rename(&self, to: &Location) -> io::Result<()> {
        check(unsafe { libc::renameat(self.dir_fd(), self.name(), to.dir_fd(), to.name()) })
    }

    pub(super) fn unlink(&self) -> io::Result<()> {
        check(unsafe { libc::unlinkat(self.dir_fd(), self.name(), 0) })
    }

    pub(super) fn rmdir(&self) -> io::Result<()> {
        check(unsafe { libc::unlinkat(self.dir_fd(), self.name(), libc::AT_REMOVEDIR) })
    }

    /// `lchown`.
    pub(super) fn chown(&self, uid: u32, gid: u32) -> io::Result<()> {
        check(unsafe { libc::fchownat(self.dir_fd(), self.name(), uid, gid, libc::AT_SYMLINK_NOFOLLOW) })
    }

    /// `chmod` without following a final symlink: `EOPNOTSUPP` on one
    /// (Linux cannot change a symlink's mode), so a symlink that replaced the
    /// object since the caller looked changes nothing elsewhere.
    pub(super) fn chmod(&self, perm: u32) -> io::Result<()> {
        check(unsafe { libc::fchmodat(self.dir_fd(), self.name(), perm, libc::AT_SYMLINK_NOFOLLOW) })
    }

    /// Sets atime and mtime, without following a final symlink.
    pub(super) fn set_times(&self, times: &[libc::timespec; 2]) -> io::Result<()> {
        let flags = libc::AT_SYMLINK_NOFOLLOW;
        check(unsafe { libc::utimensat(self.dir_fd(), self.name(), times.as_ptr(), flags) })
    }

    /// Names and kinds in this directory, without `.` and `..`, in the order
    /// the file system gives them. `ENOTDIR` for a symlink, even to a directory.
    pub(super) fn list(&self) -> io::Result<Vec<(OsString, FileKind)>> {
        let fd = self.open(libc::O_RDONLY | libc::O_DIRECTORY, 0)?;
        let mut stream = DirStream::new(fd)?;
        let mut out = Vec::new();
        while let Some(entry) = stream.next_entry()? {
            out.push(entry);
        }
        Ok(out)
    }
}

/// An open directory stream (`fdopendir`), closed on drop.
struct DirStream(NonNull<libc::DIR>);

impl DirStream {
    fn new(fd: OwnedFd) -> io::Result<DirStream> {
        let raw = fd.into_raw_fd();
        match NonNull::new(unsafe { libc::fdopendir(raw) }) {
            Some(dir) => Ok(DirStream(dir)),
            None => {
                let e = io::Error::last_os_error();
                // The stream did not take the descriptor: close it here.
                drop(unsafe { OwnedFd::from_raw_fd(raw) });
                Err(e)
            }
        }
    }

    /// The next entry other than `.` and `..`; `None` at the end.
    fn next_entry(&mut self) -> io::Result<Option<(OsString, FileKind)>> {
        loop {
            // readdir signals an error only through errno.
            unsafe { *libc::__errno_location() = 0 };
            let entry = unsafe { libc::readdir(self.0.as_ptr()) };
            let Some(entry) = NonNull::new(entry) else {
                let e = io::Error::last_os_error();
                return if e.raw_os_error() == Some(0) { Ok(None) } else { Err(e) };
            };
            let entry = unsafe { entry.as_ref() };
            let name = unsafe { CStr::from_ptr(entry.d_name.as_ptr()) };
            if matches!(name.to_bytes(), b"." | b"..") {
                continue;
            }
            let kind = match kind_of_d_type(entry.d_type) {
                Some(kind) => kind,
                // Some file systems leave the type out of the entry.
                None => kind_of_mode(lstat_at(unsafe { libc::dirfd(self.0.as_ptr()) }, name)?.st_mode)?,
            };
            return Ok(Some((OsStr::from_bytes(name.to_bytes()).to_owned(), kind)));
        }
    }
}

impl Drop for DirStream {
    fn drop(&mut self) {
        unsafe { libc::closedir(self.0.as_ptr()) };
    }
}

fn kind_of_d_type(d_type: u8) -> Option<FileKind> {
    Some(match d_type {
        libc::DT_REG => FileKind::File,
        libc::DT_DIR => FileKind::Dir,
        libc::DT_LNK => FileKind::Symlink,
        libc::DT_FIFO => FileKind::Fifo,
        libc::DT_SOCK => FileKind::Socket,
        libc::DT_CHR => FileKind::CharDev,
        libc::DT_BLK => FileKind::BlockDev,
        _ => return None,
    })
}

/// The kind in an `st_mode`; `EIO` for a type this file system cannot hold.
pub(super) fn kind_of_mode(mode: u32) -> io::Result<FileKind> {
    FileKind::from_mode(mode).ok_or_else(|| io::Error::from_raw_os_error(libc::EIO))
}

/// A path the extended-attribute calls (which have no `*at` form) can take
/// to an object: `/proc/self/fd/N` of an `O_PATH` descriptor of it, opened
/// through its `Location` (so no symlink on the way is followed). The calls
/// follow that magic link, which leads to the object itself, symlink or not.
pub(super) struct XattrPath {
    path: CString,
    /// Keeps the `/proc/self/fd` path valid.
    _object: OwnedFd,
}

impl XattrPath {
    pub(super) fn new(at: &Location) -> io::Result<XattrPath> {
        let object = at.open(libc::O_PATH, 0)?;
        let path = CString::new(format!("/proc/self/fd/{}", object.as_raw_fd()))
            .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        Ok(XattrPath { path, _object: object })
    }

    pub(super) fn get(&self, name: &CStr) -> io::Result<Vec<u8>> {
        sized_query(|buf, len| unsafe { libc::getxattr(self.path.as_ptr(), name.as_ptr(), buf, len) })
    }

    /// The names, NUL-separated as the kernel gives them.
    pub(super) fn list(&self) -> io::Result<Vec<u8>> {
        sized_query(|buf, len| unsafe { libc::listxattr(self.path.as_ptr(), buf.cast(), len) })
    }

    pub(super) fn set(&self, name: &CStr, value: &[u8]) -> io::Result<()> {
        let ret = unsafe { libc::setxattr(self.path.as_ptr(), name.as_ptr(), value.as_ptr().cast(), value.len(), 0) };
        check(ret)
    }

    pub(super) fn remove(&self, name: &CStr) -> io::Result<()> {
        check(unsafe { libc::removexattr(self.path.as_ptr(), name.as_ptr()) })
    }
}

/// Opens the directory `path` (canonical, not empty) below `root` for use as
/// an `*at` base, following no symlink on the way (`ENOTDIR` for one).
pub(super) fn open_dir_beneath(root: BorrowedFd, path: &Path) -> io::Result<OwnedFd> {
    let opened = match path.as_os_str().len() < PATH_MAX {
        true => openat2_beneath(root, path).unwrap_or_else(|| walk(root, path)),
        false => walk(root, path),
    };
    opened.map_err(|e| match e.raw_os_error() {
        // RESOLVE_NO_SYMLINKS met a symlink.
        Some(libc::ELOOP) => io::Error::from_raw_os_error(libc::ENOTDIR),
        _ => e,
    })
}

/// Set once `openat2` turned out to be missing (Linux before 5.6, or filtered
/// out): `walk` then.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

/// `openat2(root, path, O_PATH | O_DIRECTORY, RESOLVE_NO_SYMLINKS |
/// RESOLVE_BENEATH)`; `None` if the call is not available.
fn openat2_beneath(root: BorrowedFd, path: &Path) -> Option<io::Result<OwnedFd>> {
    if NO_OPENAT2.load(Ordering::Relaxed) {
        return None;
    }
    let path = match c_string(path.as_os_str()) {
        Ok(path) => path,
        Err(e) => return Some(Err(e)),
    };
    // SAFETY: open_how is plain data; all-zero is valid (and its fields are set below).
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC) as u64;
    how.resolve = libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_BENEATH;
    // SAFETY: `path` is NUL-terminated and `how` is an open_how of the size passed.
    let fd = unsafe {
        libc::syscall(libc::SYS_openat2, root.as_raw_fd(), path.as_ptr(), &how, std::mem::size_of::<libc::open_how>())
    };
    if fd < 0 {
        let e = io::Error::last_os_error();
        // EPERM: a container's seccomp filter that predates openat2.
        if matches!(e.raw_os_error(), Some(libc::ENOSYS | libc::EPERM)) {
            NO_OPENAT2.store(true, Ordering::Relaxed);
            return None;
        }
        return Some(Err(e));
    }
    // SAFETY: openat2 returned a new descriptor that nothing else owns.
    Some(Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) }))
}

/// Opens the directory `path` below `root` one name at a time, none followed
/// if it is a symlink.
fn walk(root: BorrowedFd, path: &Path) -> io::Result<OwnedFd> {
    let mut walked: Option<OwnedFd> = None;
    for name in path {
        let at = walked.as_ref().map_or(root.as_raw_fd(), |fd| fd.as_raw_fd());
        let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW;
        walked = Some(open_at(at, &c_string(name)?, flags, 0)?);
    }
    walked.ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))
}

fn open_at(dir: RawFd, name: &CStr, flags: libc::c_int, mode: u32) -> io::Result<OwnedFd> {
    let fd = unsafe { libc::openat(dir, name.as_ptr(), flags | libc::O_CLOEXEC, mode as libc::c_uint) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn lstat_at(dir: RawFd, name: &CStr) -> io::Result<libc::stat> {
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    check(unsafe { libc::fstatat(dir, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) })?;
    Ok(st)
}

pub(super) fn c_string(s: &OsStr) -> io::Result<CString> {
    CString::new(s.as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// `0` → `Ok`, `-1` → the OS error.
pub(super) fn check(ret: libc::c_int) -> io::Result<()> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;
    use std::os::unix::fs::MetadataExt;

    type Resolver<'a> = dyn Fn(&Path) -> io::Result<OwnedFd> + 'a;

    /// `openat2` and the walk used without it (or past `PATH_MAX`) resolve
    /// alike: the same directory, and `ENOTDIR` through a symlink or a file.
    #[test]
    fn both_resolvers_refuse_symlinks_alike() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        std::fs::write(dir.path().join("a/file"), b"").unwrap();
        std::os::unix::fs::symlink("b", dir.path().join("a/link")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("a"), dir.path().join("abs")).unwrap();
        let root = std::fs::File::open(dir.path()).unwrap();
        let root = root.as_fd();
        let ino = |fd: OwnedFd| std::fs::File::from(fd).metadata().unwrap().ino();
        let resolvers: [(&str, &Resolver); 2] =
            [("openat2", &|p| openat2_beneath(root, p).expect("openat2 on this kernel")), ("walk", &|p| walk(root, p))];
        let expected = std::fs::metadata(dir.path().join("a/b")).unwrap().ino();
        for (name, resolve) in resolvers {
            assert_eq!(ino(resolve(Path::new("a/b")).unwrap()), expected, "{name}");
            let errno = |p: &str| resolve(Path::new(p)).err().and_then(|e| e.raw_os_error());
            assert_eq!(errno("a/missing"), Some(libc::ENOENT), "{name}");
            assert_eq!(errno("a/file"), Some(libc::ENOTDIR), "{name}");
        }
        for through in ["a/link", "abs", "abs/b"] {
            assert_eq!(walk(root, Path::new(through)).unwrap_err().raw_os_error(), Some(libc::ENOTDIR), "{through}");
            let err = open_dir_beneath(root, Path::new(through)).unwrap_err();
            assert_eq!(err.raw_os_error(), Some(libc::ENOTDIR), "{through}");
        }
    }
}
