//! The backing-store system calls, over file descriptors: every inode the kernel knows is held as an
//! `O_PATH` descriptor (see `inodes`), names are resolved relative to their parent's descriptor with
//! the `*at` calls, and what needs a path goes through `/proc/self/fd/N`, which names exactly the file
//! the descriptor holds (even after a rename).
//!
//! Invariant: nothing here panics; every failure is the backing call's own `io::Error` (its errno).

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

/// `r` as a result: negative is the errno of the call just made.
fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn cstr(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// The path naming the file `fd` holds.
fn proc_path(fd: BorrowedFd<'_>) -> CString {
    // Digits only: no interior NUL is possible.
    CString::new(format!("/proc/self/fd/{}", fd.as_raw_fd())).unwrap_or_default()
}

/// An `O_PATH` descriptor for `name` in `dir`, not following a final symlink.
pub fn open_path_at(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<OwnedFd> {
    let name = cstr(name)?;
    // SAFETY: valid fd and NUL-terminated name; the result is a new fd we own.
    let fd = check(unsafe {
        libc::openat(dir.as_raw_fd(), name.as_ptr(), libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC)
    })?;
    // SAFETY: openat just returned this fd and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The directory `path` as an `O_PATH` descriptor (the root of the backing store).
pub fn open_dir_path(path: &std::path::Path) -> io::Result<OwnedFd> {
    let path = cstr(path.as_os_str())?;
    // SAFETY: NUL-terminated path; the result is a new fd we own.
    let fd = check(unsafe { libc::open(path.as_ptr(), libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC) })?;
    // SAFETY: open just returned this fd and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The attributes of the file `fd` holds (a symlink itself, not its target).
pub fn stat_fd(fd: BorrowedFd<'_>) -> io::Result<libc::stat> {
    // SAFETY: all-zero is a valid stat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid fd, empty NUL-terminated name, writable stat.
    check(unsafe {
        libc::fstatat(fd.as_raw_fd(), c"".as_ptr(), &mut st, libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW)
    })?;
    Ok(st)
}

/// Opens the file `fd` holds for I/O with `flags` (as open(2) takes them).
pub fn reopen(fd: BorrowedFd<'_>, flags: i32) -> io::Result<File> {
    let path = proc_path(fd);
    // The magic link must be followed; O_CREAT never comes with an open request.
    let flags = backing_flags(flags & !(libc::O_NOFOLLOW | libc::O_CREAT));
    // SAFETY: NUL-terminated path; the result is a new fd we own.
    let fd = check(unsafe { libc::open(path.as_ptr(), flags) })?;
    // SAFETY: open just returned this fd and nothing else owns it.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// The flags a backing file is opened with: the caller's, without O_DIRECT. The emulator stands for
/// the device, so the backing file is only storage, and the request buffers it gets from the kernel
/// are not aligned as O_DIRECT demands (every call would fail with EINVAL).
fn backing_flags(flags: i32) -> i32 {
    (flags & !libc::O_DIRECT) | libc::O_CLOEXEC
}

/// Creates (or, without O_EXCL, opens) `name` in `dir` with `flags` and `mode`.
pub fn create_at(dir: BorrowedFd<'_>, name: &OsStr, flags: i32, mode: u32) -> io::Result<File> {
    let name = cstr(name)?;
    let flags = backing_flags(flags | libc::O_CREAT);
    // SAFETY: valid fd, NUL-terminated name; the result is a new fd we own.
    let fd = check(unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags, mode as libc::c_uint) })?;
    // SAFETY: openat just returned this fd and nothing else owns it.
    Ok(unsafe { File::from_raw_fd(fd) })
}

pub fn mkdir_at(dir: BorrowedFd<'_>, name: &OsStr, mode: u32) -> io::Result<()> {
    let name = cstr(name)?;
    // SAFETY: valid fd and NUL-terminated name.
    check(unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), mode as libc::mode_t) }).map(drop)
}

pub fn mknod_at(dir: BorrowedFd<'_>, name: &OsStr, mode: u32, rdev: u32) -> io::Result<()> {
    let name = cstr(name)?;
    // SAFETY: valid fd and NUL-terminated name.
    check(unsafe { libc::mknodat(dir.as_raw_fd(), name.as_ptr(), mode as libc::mode_t, libc::dev_t::from(rdev)) })
        .map(drop)
}

pub fn symlink_at(target: &OsStr, dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<()> {
    let (target, name) = (cstr(target)?, cstr(name)?);
    // SAFETY: NUL-terminated strings and a valid fd.
    check(unsafe { libc::symlinkat(target.as_ptr(), dir.as_raw_fd(), name.as_ptr()) }).map(drop)
}

/// unlink (or rmdir, with `dir_entry`) of `name` in `dir`.
pub fn unlink_at(dir: BorrowedFd<'_>, name: &OsStr, dir_entry: bool) -> io::Result<()> {
    let name = cstr(name)?;
    let flags = if dir_entry { libc::AT_REMOVEDIR } else { 0 };
    // SAFETY: valid fd and NUL-terminated name.
    check(unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), flags) }).map(drop)
}

/// renameat2(2); `flags` are RENAME_NOREPLACE / RENAME_EXCHANGE / RENAME_WHITEOUT as the kernel sent them.
pub fn rename_at(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    new_dir: BorrowedFd<'_>,
    new_name: &OsStr,
    flags: u32,
) -> io::Result<()> {
    let (name, new_name) = (cstr(name)?, cstr(new_name)?);
    // SAFETY: valid fds and NUL-terminated names; renameat2 takes plain integers and pointers.
    let r = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            dir.as_raw_fd(),
            name.as_ptr(),
            new_dir.as_raw_fd(),
            new_name.as_ptr(),
            flags as libc::c_uint,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A new name `new_name` in `new_dir` for the file `fd` holds.
pub fn link(fd: BorrowedFd<'_>, new_dir: BorrowedFd<'_>, new_name: &OsStr) -> io::Result<()> {
    let (path, new_name) = (proc_path(fd), cstr(new_name)?);
    // SAFETY: NUL-terminated strings and valid fds.
    check(unsafe {
        libc::linkat(libc::AT_FDCWD, path.as_ptr(), new_dir.as_raw_fd(), new_name.as_ptr(), libc::AT_SYMLINK_FOLLOW)
    })
    .map(drop)
}

/// The target of the symlink `fd` holds.
pub fn readlink(fd: BorrowedFd<'_>) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; libc::PATH_MAX as usize + 1];
    // SAFETY: valid fd, empty name, and a writable buffer of the given length.
    let n = unsafe { libc::readlinkat(fd.as_raw_fd(), c"".as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    buf.truncate(n as usize);
    Ok(buf)
}

/// chown of the file `fd` holds (a symlink itself); `None` leaves that id as it is.
pub fn chown(fd: BorrowedFd<'_>, uid: Option<u32>, gid: Option<u32>) -> io::Result<()> {
    // (uid_t)-1 means "unchanged" to chown(2).
    let (uid, gid) = (uid.unwrap_or(u32::MAX), gid.unwrap_or(u32::MAX));
    // SAFETY: valid fd and an empty NUL-terminated name.
    check(unsafe {
        libc::fchownat(fd.as_raw_fd(), c"".as_ptr(), uid, gid, libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW)
    })
    .map(drop)
}

pub fn chmod(fd: BorrowedFd<'_>, mode: u32) -> io::Result<()> {
    let path = proc_path(fd);
    // SAFETY: NUL-terminated path.
    check(unsafe { libc::chmod(path.as_ptr(), mode as libc::mode_t) }).map(drop)
}

pub fn truncate(fd: BorrowedFd<'_>, size: u64) -> io::Result<()> {
    let size = libc::off_t::try_from(size).map_err(|_| io::Error::from_raw_os_error(libc::EFBIG))?;
    let path = proc_path(fd);
    // SAFETY: NUL-terminated path.
    check(unsafe { libc::truncate(path.as_ptr(), size) }).map(drop)
}

/// utimensat(2) of the file `fd` holds: `[atime, mtime]`, each a time, UTIME_NOW or UTIME_OMIT.
pub fn set_times(fd: BorrowedFd<'_>, times: &[libc::timespec; 2]) -> io::Result<()> {
    let path = proc_path(fd);
    // SAFETY: NUL-terminated path and an array of two timespecs.
    check(unsafe { libc::utimensat(libc::AT_FDCWD, path.as_ptr(), times.as_ptr(), 0) }).map(drop)
}

pub fn statvfs(fd: BorrowedFd<'_>) -> io::Result<libc::statvfs> {
    // SAFETY: all-zero is a valid statvfs.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: valid fd and a writable statvfs.
    check(unsafe { libc::fstatvfs(fd.as_raw_fd(), &mut st) })?;
    Ok(st)
}

pub fn fallocate(file: &File, mode: i32, offset: u64, length: u64) -> io::Result<()> {
    let einval = || io::Error::from_raw_os_error(libc::EINVAL);
    let offset = libc::off_t::try_from(offset).map_err(|_| einval())?;
    let length = libc::off_t::try_from(length).map_err(|_| einval())?;
    // SAFETY: valid fd; fallocate takes plain integers.
    check(unsafe { libc::fallocate(file.as_raw_fd(), mode, offset, length) }).map(drop)
}

/// The answer to an xattr read: the size of the value or list (when asked with size 0), or its bytes.
#[derive(Debug, PartialEq, Eq)]
pub enum XattrAnswer {
    Size(usize),
    Data(Vec<u8>),
}

/// Runs an xattr read into a buffer of `size` bytes (`size == 0` asks for the size only).
fn xattr_read(size: u32, call: impl Fn(*mut libc::c_void, usize) -> libc::ssize_t) -> io::Result<XattrAnswer> {
    if size == 0 {
        let n = call(std::ptr::null_mut(), 0);
        return if n < 0 { Err(io::Error::last_os_error()) } else { Ok(XattrAnswer::Size(n as usize)) };
    }
    let mut buf = vec![0u8; size as usize];
    let n = call(buf.as_mut_ptr().cast(), buf.len());
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    buf.truncate(n as usize);
    Ok(XattrAnswer::Data(buf))
}

pub fn get_xattr(fd: BorrowedFd<'_>, name: &OsStr, size: u32) -> io::Result<XattrAnswer> {
    let (path, name) = (proc_path(fd), cstr(name)?);
    // SAFETY: NUL-terminated strings and a buffer of the given length (or null with length 0).
    xattr_read(size, |buf, len| unsafe { libc::getxattr(path.as_ptr(), name.as_ptr(), buf, len) })
}

pub fn list_xattr(fd: BorrowedFd<'_>, size: u32) -> io::Result<XattrAnswer> {
    let path = proc_path(fd);
    // SAFETY: NUL-terminated path and a buffer of the given length (or null with length 0).
    xattr_read(size, |buf, len| unsafe { libc::listxattr(path.as_ptr(), buf.cast(), len) })
}

pub fn set_xattr(fd: BorrowedFd<'_>, name: &OsStr, value: &[u8], flags: i32) -> io::Result<()> {
    let (path, name) = (proc_path(fd), cstr(name)?);
    // SAFETY: NUL-terminated strings and a value buffer of the given length.
    check(unsafe { libc::setxattr(path.as_ptr(), name.as_ptr(), value.as_ptr().cast(), value.len(), flags) }).map(drop)
}

pub fn remove_xattr(fd: BorrowedFd<'_>, name: &OsStr) -> io::Result<()> {
    let (path, name) = (proc_path(fd), cstr(name)?);
    // SAFETY: NUL-terminated strings.
    check(unsafe { libc::removexattr(path.as_ptr(), name.as_ptr()) }).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;
    use std::os::unix::fs::MetadataExt;

    fn scratch() -> (std::path::PathBuf, OwnedFd) {
        let dir =
            std::env::temp_dir().join(format!("flashdev-sys-{}-{:?}", std::process::id(), std::thread::current().id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).expect("mkdir scratch");
        let fd = open_dir_path(&dir).expect("open scratch");
        (dir, fd)
    }

    #[test]
    fn names_resolve_through_descriptors_even_after_a_rename() {
        let (dir, root) = scratch();
        mkdir_at(root.as_fd(), OsStr::new("d"), 0o755).expect("mkdir");
        let d = open_path_at(root.as_fd(), OsStr::new("d")).expect("open d");
        let mut f = create_at(d.as_fd(), OsStr::new("f"), libc::O_WRONLY, 0o644).expect("create");
        std::io::Write::write_all(&mut f, b"hello").expect("write");
        rename_at(root.as_fd(), OsStr::new("d"), root.as_fd(), OsStr::new("e"), 0).expect("rename");
        let f_path = open_path_at(d.as_fd(), OsStr::new("f")).expect("d's fd follows the rename");
        assert_eq!(stat_fd(f_path.as_fd()).expect("stat").st_size, 5);
        assert_eq!(std::fs::metadata(dir.join("e/f")).expect("moved").size(), 5);
        symlink_at(OsStr::new("f"), d.as_fd(), OsStr::new("l")).expect("symlink");
        let l = open_path_at(d.as_fd(), OsStr::new("l")).expect("open the link itself");
        assert_eq!(readlink(l.as_fd()).expect("readlink"), b"f");
        assert_eq!(stat_fd(l.as_fd()).expect("lstat").st_mode & libc::S_IFMT, libc::S_IFLNK);
        let err = unlink_at(root.as_fd(), OsStr::new("e"), false).expect_err("unlink of a directory");
        assert_eq!(err.raw_os_error(), Some(libc::EISDIR));
        let err = rename_at(d.as_fd(), OsStr::new("f"), d.as_fd(), OsStr::new("l"), libc::RENAME_NOREPLACE)
            .expect_err("noreplace");
        assert_eq!(err.raw_os_error(), Some(libc::EEXIST));
        std::fs::remove_dir_all(&dir).expect("clean up");
    }

    #[test]
    fn names_with_nul_are_einval_not_panics() {
        let (dir, root) = scratch();
        let err = mkdir_at(root.as_fd(), OsStr::from_bytes(b"a\0b"), 0o755).expect_err("NUL");
        assert_eq!(err.raw_os_error(), Some(libc::EINVAL));
        assert_eq!(truncate(root.as_fd(), u64::MAX).expect_err("huge").raw_os_error(), Some(libc::EFBIG));
        std::fs::remove_dir_all(&dir).expect("clean up");
    }
}
