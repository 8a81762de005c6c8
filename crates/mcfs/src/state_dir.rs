//! BACKING/.mcfs as the daemon and `mcfs recover` open it: the directory
//! once, by a descriptor, and every file in it relative to that descriptor,
//! so that nothing the backing directory's owner plants there makes mcfs —
//! often root — touch a file elsewhere.
//!
//! Invariants: `.mcfs` is opened with `O_NOFOLLOW`, must be a real directory
//! owned by the effective uid and is made mode 0700 (so no other user can add
//! a name to it afterwards); a file in it is opened with `O_NOFOLLOW`, created
//! mode 0600, and must be a regular file owned by the effective uid with one
//! link. A symlink, a hard link or a foreign owner is an error naming the file.

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The open, checked state directory of one backing directory.
#[derive(Debug)]
pub struct StateDir {
    fd: OwnedFd,
    path: PathBuf,
}

impl StateDir {
    /// Opens BACKING/.mcfs, creating it (mode 0700) when `create` is set.
    /// `backing` must be canonical (see `preflight::existing_dir`).
    pub fn open(backing: &Path, create: bool) -> Result<StateDir, String> {
        let path = backing.join(mcfs_core::STATE_DIR);
        let backing_fd = File::open(backing).map_err(|e| format!("backing directory {}: {e}", backing.display()))?;
        let name = c_name(OsStr::new(mcfs_core::STATE_DIR), &path)?;
        if create {
            // SAFETY: `name` is NUL-terminated; the fd is open.
            let made = unsafe { libc::mkdirat(backing_fd.as_raw_fd(), name.as_ptr(), 0o700) };
            let err = io::Error::last_os_error();
            if made != 0 && err.raw_os_error() != Some(libc::EEXIST) {
                return Err(format!(
                    "backing directory {}: not writable: cannot create {}: {err}",
                    backing.display(),
                    path.display()
                ));
            }
        }
        // Not O_DIRECTORY: with it a symlink fails as ENOTDIR, not as ELOOP.
        let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC;
        let fd = open_at(backing_fd.as_fd(), &name, flags, 0).map_err(|e| match e.raw_os_error() {
            Some(libc::ENOENT) => {
                format!(
                    "backing directory {}: no {} directory; not an mcfs backing store",
                    backing.display(),
                    path.display()
                )
            }
            _ => link_or(&path, e),
        })?;
        let st = fstat(fd.as_fd()).map_err(|e| format!("{}: {e}", path.display()))?;
        if st.st_mode & libc::S_IFMT != libc::S_IFDIR {
            return Err(format!("{}: is not a directory (mcfs keeps its state there)", path.display()));
        }
        check_owner(&st, &path)?;
        tighten(fd.as_fd(), &st, 0o700).map_err(|e| format!("{}: cannot make it mode 0700: {e}", path.display()))?;
        Ok(StateDir { fd, path })
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// The path of `name` in the directory, for messages.
    pub fn file_path(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Opens (with `O_CREAT`: creates, mode 0600) the file `name` in the
    /// directory; see the module comment for what is checked.
    pub fn open_file(&self, name: &str, flags: libc::c_int) -> Result<File, String> {
        open_private_file(self.fd(), OsStr::new(name), flags, &self.file_path(name))
    }
}

/// Opens `name` in `dir` as `StateDir::open_file` does; `path` names it in
/// errors. `flags` must not truncate: the checks come after the open.
pub fn open_private_file(dir: BorrowedFd, name: &OsStr, flags: libc::c_int, path: &Path) -> Result<File, String> {
    let c_name = c_name(name, path)?;
    let flags = flags | libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK | libc::O_NOCTTY;
    let fd = open_at(dir, &c_name, flags, 0o600).map_err(|e| link_or(path, e))?;
    let st = fstat(fd.as_fd()).map_err(|e| format!("{}: {e}", path.display()))?;
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Err(format!(
            "{}: is not a regular file; mcfs writes only its own files there (remove it)",
            path.display()
        ));
    }
    check_owner(&st, path)?;
    if st.st_nlink != 1 {
        return Err(format!(
            "{}: has {} hard links; mcfs writes only files with one link there (remove it)",
            path.display(),
            st.st_nlink
        ));
    }
    tighten(fd.as_fd(), &st, 0o600).map_err(|e| format!("{}: cannot make it mode 0600: {e}", path.display()))?;
    Ok(File::from(fd))
}

/// The message for a failed open: a planted symlink is named as such.
fn link_or(path: &Path, e: io::Error) -> String {
    if e.raw_os_error() == Some(libc::ELOOP) {
        format!("{}: is a symbolic link; mcfs follows no links in its state directory (remove it)", path.display())
    } else {
        format!("{}: {e}", path.display())
    }
}

fn check_owner(st: &libc::stat, path: &Path) -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    if st.st_uid != euid {
        return Err(format!(
            "{}: owned by uid {}, not by uid {euid} who runs mcfs; mcfs trusts only its own state (remove it)",
            path.display(),
            st.st_uid
        ));
    }
    Ok(())
}

/// Clears group and other bits (state written by older versions may have them).
fn tighten(fd: BorrowedFd, st: &libc::stat, mode: libc::mode_t) -> io::Result<()> {
    if st.st_mode & 0o077 == 0 {
        return Ok(());
    }
    // SAFETY: plain syscall on an open fd.
    if unsafe { libc::fchmod(fd.as_raw_fd(), mode) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn c_name(name: &OsStr, path: &Path) -> Result<CString, String> {
    CString::new(name.as_bytes()).map_err(|_| format!("{}: name contains NUL", path.display()))
}

fn open_at(dir: BorrowedFd, name: &CString, flags: libc::c_int, mode: libc::mode_t) -> io::Result<OwnedFd> {
    // SAFETY: `name` is NUL-terminated; the fd is open.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags, mode as libc::c_uint) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: openat returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn fstat(fd: BorrowedFd) -> io::Result<libc::stat> {
    // SAFETY: `st` is valid for fstat to fill.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    fn backing() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().canonicalize().unwrap();
        (dir, path)
    }

    #[test]
    fn creates_a_private_directory_and_private_files() {
        let (_dir, backing) = backing();
        let err = StateDir::open(&backing, false).unwrap_err();
        assert!(err.contains("not an mcfs backing store"), "{err}");
        let state = StateDir::open(&backing, true).unwrap();
        assert_eq!(std::fs::metadata(backing.join(".mcfs")).unwrap().mode() & 0o777, 0o700);
        state.open_file("f", libc::O_WRONLY | libc::O_CREAT).unwrap();
        assert_eq!(std::fs::metadata(state.file_path("f")).unwrap().mode() & 0o777, 0o600);
        StateDir::open(&backing, false).expect("opens again");
    }

    #[test]
    fn loose_modes_of_older_versions_are_tightened() {
        let (_dir, backing) = backing();
        let path = backing.join(".mcfs");
        std::fs::create_dir(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(path.join("f"), b"").unwrap();
        std::fs::set_permissions(path.join("f"), std::fs::Permissions::from_mode(0o644)).unwrap();
        let state = StateDir::open(&backing, true).unwrap();
        state.open_file("f", libc::O_RDONLY).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o700);
        assert_eq!(std::fs::metadata(path.join("f")).unwrap().mode() & 0o777, 0o600);
    }

    #[test]
    fn planted_links_are_refused_by_name_and_their_targets_untouched() {
        let (_dir, backing) = backing();
        let victim = backing.join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        let state = StateDir::open(&backing, true).unwrap();
        std::os::unix::fs::symlink(&victim, state.file_path("sym")).unwrap();
        let err = state.open_file("sym", libc::O_RDWR | libc::O_CREAT).unwrap_err();
        assert!(err.contains(".mcfs/sym: is a symbolic link"), "{err}");
        std::fs::hard_link(&victim, state.file_path("hard")).unwrap();
        let err = state.open_file("hard", libc::O_RDWR | libc::O_CREAT).unwrap_err();
        assert!(err.contains(".mcfs/hard: has 2 hard links"), "{err}");
        std::fs::create_dir(state.file_path("dir")).unwrap();
        let err = state.open_file("dir", libc::O_RDONLY).unwrap_err();
        assert!(err.contains("is a directory") || err.contains("not a regular file"), "{err}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    }

    #[test]
    fn a_state_dir_that_is_a_link_or_a_file_is_refused() {
        let (_dir, backing) = backing();
        let elsewhere = backing.join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, backing.join(".mcfs")).unwrap();
        for create in [false, true] {
            let err = StateDir::open(&backing, create).unwrap_err();
            assert!(err.contains(".mcfs: is a symbolic link"), "{err}");
        }
        std::fs::remove_file(backing.join(".mcfs")).unwrap();
        std::fs::write(backing.join(".mcfs"), b"").unwrap();
        let err = StateDir::open(&backing, true).unwrap_err();
        assert!(err.contains(".mcfs: is not a directory"), "{err}");
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    }

    #[test]
    fn foreign_owners_are_refused() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            panic!("this test must run as root: it chowns files to another uid");
        }
        let (_dir, backing) = backing();
        let state = StateDir::open(&backing, true).unwrap();
        state.open_file("f", libc::O_WRONLY | libc::O_CREAT).unwrap();
        std::os::unix::fs::chown(state.file_path("f"), Some(65534), None).unwrap();
        let err = state.open_file("f", libc::O_WRONLY).unwrap_err();
        assert!(err.contains(".mcfs/f: owned by uid 65534, not by uid 0"), "{err}");
        std::os::unix::fs::chown(backing.join(".mcfs"), Some(65534), None).unwrap();
        let err = StateDir::open(&backing, true).unwrap_err();
        assert!(err.contains(".mcfs: owned by uid 65534"), "{err}");
    }
}
