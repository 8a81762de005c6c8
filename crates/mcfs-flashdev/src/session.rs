//! Mounting a `FlashFs`: a multi-threaded fuser session (one `/dev/fuse` clone per thread, enough
//! threads that the device's command queue can fill) served on a background thread.
//!
//! Invariant: when `Serving::wait` returns, the session is over and no request reaches the file
//! system any more. Unmounting is done by path, from outside (fusermount3 -u, umount).

use crate::fs::FlashFs;
use mcfs_fuse::{session_thread, MountOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;

/// A live mount, served on a background thread.
pub struct Serving {
    thread: JoinHandle<io::Result<()>>,
    mountpoint: PathBuf,
}

/// Mounts `fs` on `mountpoint`; the error names the mount point and the cause.
///
/// Process-wide effects, as a pass-through needs them: the umask becomes 0 (the kernel sends modes
/// with the caller's umask already applied) and the open-files limit is raised to its hard limit
/// (every inode the kernel holds keeps a descriptor open).
pub fn mount(fs: FlashFs, mountpoint: &Path, settings: &MountOptions) -> io::Result<Serving> {
    // SAFETY: umask cannot fail.
    unsafe { libc::umask(0) };
    raise_open_files_limit();
    let session = mcfs_fuse::open_session(fs, mountpoint, settings)
        .map_err(|e| mcfs_fuse::explain_mount_error(mountpoint, "flashdev", e))?;
    let thread = session_thread::serve(session, mountpoint.to_path_buf(), "flashdev-session", || {})?;
    Ok(Serving { thread, mountpoint: mountpoint.to_path_buf() })
}

impl Serving {
    /// Blocks until the session ends (the file system was unmounted and the kernel let go).
    pub fn wait(self) -> io::Result<()> {
        let context = |what: String| io::Error::other(format!("{}: {what}", self.mountpoint.display()));
        match self.thread.join() {
            Ok(result) => result.map_err(|e| context(format!("FUSE session failed: {e}"))),
            Err(_) => Err(context("FUSE session thread panicked".into())),
        }
    }
}

fn raise_open_files_limit() {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: a valid rlimit to fill and then to set.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                tracing::warn!("cannot raise the open-files limit: {}", io::Error::last_os_error());
            }
        }
    }
}
