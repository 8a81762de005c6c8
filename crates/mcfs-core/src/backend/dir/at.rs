//! The system calls of `DirBackend`, addressed as (directory descriptor,
//! name) so that any path the mount allows works in the backing store, even
//! when the backing root's absolute path plus the relative path exceeds
//! `PATH_MAX`.
//!
//! A `Location` is found from the root's open descriptor: a relative path
//! shorter than `PATH_MAX` is handed to the kernel whole (one lookup, as
//! cheap as a path call); a longer one is reached by opening its parent one
//! name at a time with `O_NOFOLLOW`, then naming the last component.
//! Invariant: keys are canonical (plain names, no `..`), so a location never
//! leaves the root through the path syntax. Errors are bare errnos; the
//! caller labels them with the operation and path.

use crate::types::FileKind;
use std::ffi::{CStr, CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;
use std::ptr::NonNull;

/// The longest path string the kernel takes, counting the terminating NUL.
const PATH_MAX: usize = libc::PATH_MAX as usize;

/// The directory a `Location`'s name is looked up in.
enum DirFd<'a> {
    /// The backing root (the name is the whole relative path).
    Root(BorrowedFd<'a>),
    /// The parent of a long path, opened by walking its names.
    Walked(OwnedFd),
}

/// An object in the backing store as the `*at` calls address it.
pub(super) struct Location<'a> {
    dir: DirFd<'a>,
    name: CString,
}

impl<'a> Location<'a> {
    /// Where the canonical relative path `key` is below the directory `root`
    /// (the root itself is `.` in it).
    pub(super) fn find(root: BorrowedFd<'a>, key: &Path) -> io::Result<Location<'a>> {
        let bytes = key.as_os_str().as_bytes();
        if bytes.is_empty() {
            return Ok(Location { dir: DirFd::Root(root), name: c".".to_owned() });
        }
        if bytes.len() < PATH_MAX {
            return Ok(Location { dir: DirFd::Root(root), name: c_string(key.as_os_str())? });
        }
        let (Some(parent), Some(name)) = (key.parent(), key.file_name()) else {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        };
        let mut walked: Option<OwnedFd> = None;
        for dir_name in parent {
            let at = walked.as_ref().map_or(root.as_raw_fd(), |fd| fd.as_raw_fd());
            let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW;
            walked = Some(open_at(at, &c_string(dir_name)?, flags, 0)?);
        }
        let dir = walked.map_or(DirFd::Root(root), DirFd::Walked);
        Ok(Location { dir, name: c_string(name)? })
    }

    fn dir_fd(&self) -> RawFd {
        match &self.dir {
            DirFd::Root(fd) => fd.as_raw_fd(),
            DirFd::Walked(fd) => fd.as_raw_fd(),
        }
    }

    fn name(&self) -> *const libc::c_char {
        self.name.as_ptr()
    }

    /// `openat` (always close-on-exec).
    pub(super) fn open(&self, flags: libc::c_int, mode: u32) -> io::Result<OwnedFd> {
        open_at(self.dir_fd(), &self.name, flags, mode)
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

    /// `chmod`, which follows a final symlink: callers check for one first
    /// (Linux cannot change a symlink's mode).
    pub(super) fn chmod(&self, perm: u32) -> io::Result<()> {
        check(unsafe { libc::fchmodat(self.dir_fd(), self.name(), perm, 0) })
    }

    /// Sets atime and mtime, without following a final symlink.
    pub(super) fn set_times(&self, times: &[libc::timespec; 2]) -> io::Result<()> {
        let flags = libc::AT_SYMLINK_NOFOLLOW;
        check(unsafe { libc::utimensat(self.dir_fd(), self.name(), times.as_ptr(), flags) })
    }

    /// Names and kinds in this directory, without `.` and `..`, in the order
    /// the file system gives them. `ENOTDIR` for a symlink, even to a directory.
    pub(super) fn list(&self) -> io::Result<Vec<(OsString, FileKind)>> {
        let fd = self.open(libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW, 0)?;
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
/// to an object: its absolute path when that fits in `PATH_MAX`, else
/// `/proc/self/fd/N` of an `O_PATH` descriptor of it. The calls must follow
/// the latter — the magic link leads to the object itself, symlink or not —
/// and must not follow the former.
pub(super) struct XattrPath {
    path: CString,
    follow: bool,
    /// Keeps a `/proc/self/fd` path valid.
    _object: Option<OwnedFd>,
}

impl XattrPath {
    /// For the object at absolute path `full`, found by `locate` when `full` is too long.
    pub(super) fn new<'a>(full: &Path, locate: impl FnOnce() -> io::Result<Location<'a>>) -> io::Result<XattrPath> {
        if full.as_os_str().len() < PATH_MAX {
            return Ok(XattrPath { path: c_string(full.as_os_str())?, follow: false, _object: None });
        }
        let object = locate()?.open(libc::O_PATH | libc::O_NOFOLLOW, 0)?;
        let path = CString::new(format!("/proc/self/fd/{}", object.as_raw_fd()))
            .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        Ok(XattrPath { path, follow: true, _object: Some(object) })
    }

    pub(super) fn get(&self, name: &CStr) -> io::Result<Vec<u8>> {
        let call = if self.follow { libc::getxattr } else { libc::lgetxattr };
        sized_query(|buf, len| unsafe { call(self.path.as_ptr(), name.as_ptr(), buf, len) })
    }

    /// The names, NUL-separated as the kernel gives them.
    pub(super) fn list(&self) -> io::Result<Vec<u8>> {
        let call = if self.follow { libc::listxattr } else { libc::llistxattr };
        sized_query(|buf, len| unsafe { call(self.path.as_ptr(), buf.cast(), len) })
    }

    pub(super) fn set(&self, name: &CStr, value: &[u8]) -> io::Result<()> {
        let call = if self.follow { libc::setxattr } else { libc::lsetxattr };
        let ret = unsafe { call(self.path.as_ptr(), name.as_ptr(), value.as_ptr().cast(), value.len(), 0) };
        check(ret)
    }

    pub(super) fn remove(&self, name: &CStr) -> io::Result<()> {
        let call = if self.follow { libc::removexattr } else { libc::lremovexattr };
        check(unsafe { call(self.path.as_ptr(), name.as_ptr()) })
    }
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
