//! Serving a mounted fuser session on a thread of its own, and letting go
//! of the mount afterwards without unmounting it a second time.
//!
//! Why: fuser 0.18 unmounts the mount point when a session ends even when
//! the kernel already has (its `is_mounted` takes the dead connection's
//! POLLERR for "mounted"; fixed upstream by fuser PR #703, not released). So
//! every clean unmount ended in `umount2(MOUNTPOINT)` → EINVAL and a WARN
//! "Failed to umount filesystem: Invalid argument" — or, had something been
//! mounted on the path meanwhile, in unmounting that. Here fuser's mount
//! guard is kept out of the session and dropped (fuser unmounts) only when
//! the mount may still be there: the session failed, or the path is a FUSE
//! mount whose server is gone (its connection was aborted). Otherwise the
//! kernel has unmounted it and the guard is forgotten: a few bytes and the
//! dead connection's descriptor, once per session.

use fuser::{BackgroundSession, Filesystem, Session};
use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;

/// The stand-in thread left in fuser's guard needs next to no stack.
const STAND_IN_STACK: usize = 16 << 10;

/// Serves `session` (mounted on `mountpoint`) until it ends; the returned
/// thread, named `name`, calls `on_end` once no request is served any more,
/// then releases the mount (see the module comment) and returns the
/// session's result.
pub fn serve<FS: Filesystem>(
    session: Session<FS>,
    mountpoint: PathBuf,
    name: &str,
    on_end: impl FnOnce() + Send + 'static,
) -> io::Result<JoinHandle<io::Result<()>>> {
    let mut guard = session.spawn()?;
    // The guard joins its thread when asked to; this thread joins it instead,
    // so the guard gets a finished stand-in (its handle is public).
    let stand_in = std::thread::Builder::new().stack_size(STAND_IN_STACK).spawn(|| Ok(()))?;
    let serving = std::mem::replace(&mut guard.guard, stand_in);
    std::thread::Builder::new().name(name.to_string()).spawn(move || {
        let result = serving.join().unwrap_or_else(|_| Err(io::Error::other("FUSE session thread panicked")));
        on_end();
        release(guard, &mountpoint, result.is_ok());
        result
    })
}

/// Drops fuser's guard (which unmounts) only if the mount may still be there.
fn release(guard: BackgroundSession, mountpoint: &Path, ended_cleanly: bool) {
    if ended_cleanly && !dead_fuse_mount(mountpoint) {
        std::mem::forget(guard);
    } else {
        drop(guard);
    }
}

/// Whether `path` is the root of a FUSE mount nobody serves: the kernel
/// answers ENOTCONN (asked for the type, past cached attributes: a mask of
/// 0 would be answered from the cache). A session that ended
/// cleanly lost its connection, so its mount is either gone or dead.
pub(crate) fn dead_fuse_mount(path: &Path) -> bool {
    let Ok(c_path) = CString::new(path.as_os_str().as_bytes()) else { return false };
    // SAFETY: statx is plain old data, for which all-zero is a valid value.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: `c_path` is NUL-terminated and `stx` is a writable statx that outlives the call.
    let rc =
        unsafe { libc::statx(libc::AT_FDCWD, c_path.as_ptr(), libc::AT_STATX_FORCE_SYNC, libc::STATX_TYPE, &mut stx) };
    rc != 0 && io::Error::last_os_error().raw_os_error() == Some(libc::ENOTCONN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_directory_is_no_dead_mount() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!dead_fuse_mount(dir.path()));
        assert!(!dead_fuse_mount(&dir.path().join("missing")));
    }
}
