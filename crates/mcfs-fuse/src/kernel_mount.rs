//! Opening a fuser session on a fresh mount whose type is `fuse.SUBTYPE`.
//!
//! fuser's own mount(2) call (taken when the process may mount, e.g. as root)
//! passes the type `fuse` and drops the subtype, so `/proc/mounts` showed
//! plain `fuse` and `findmnt -t fuse.mcfs` found nothing. So when we may
//! mount, we call mount(2) ourselves with `fuse.SUBTYPE` and hand the
//! `/dev/fuse` descriptor to fuser; when we may not (EPERM: an ordinary
//! user), fuser goes through fusermount3, which sets the subtype itself.

use crate::mount::MountOptions;
use fuser::{Filesystem, Session};
use std::ffi::CString;
use std::fs::OpenOptions;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

const DEV_FUSE: &str = "/dev/fuse";

/// Mounts on `mountpoint` and returns the session serving it,
/// after the kernel's INIT handshake.
pub fn open_session<FS: Filesystem>(fs: FS, mountpoint: &Path, opts: &MountOptions) -> io::Result<Session<FS>> {
    let config = opts.session_config();
    match mount_fuse(mountpoint, opts)? {
        Some(dev) => Session::from_fd(fs, dev, config.acl, config).inspect_err(|_| detach(mountpoint)),
        None => Session::new(fs, mountpoint, &config),
    }
}

/// mount(2) of a FUSE file system served through a new `/dev/fuse`
/// descriptor; `None` if this process may not mount (then fusermount3 must).
pub(crate) fn mount_fuse(mountpoint: &Path, opts: &MountOptions) -> io::Result<Option<OwnedFd>> {
    let dev = match OpenOptions::new().read(true).write(true).custom_flags(libc::O_CLOEXEC).open(DEV_FUSE) {
        Ok(dev) => dev,
        // fusermount3 is setuid root and opens it itself.
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => return Ok(None),
        Err(e) => return Err(io::Error::new(e.kind(), format!("{DEV_FUSE}: {e}"))),
    };
    let root_mode = std::fs::metadata(mountpoint)?.mode() & libc::S_IFMT;
    let data = mount_data(dev.as_raw_fd(), root_mode, opts);
    let cstr = |text: &[u8]| CString::new(text).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e));
    let (source, target) = (cstr(opts.fsname.as_bytes())?, cstr(mountpoint.as_os_str().as_bytes())?);
    let (fs_type, data) = (cstr(fs_type(&opts.subtype).as_bytes())?, cstr(data.as_bytes())?);
    // SAFETY: every pointer is a NUL-terminated string that outlives the call.
    let mounted = unsafe {
        libc::mount(source.as_ptr(), target.as_ptr(), fs_type.as_ptr(), mount_flags(opts), data.as_ptr().cast())
    };
    if mounted == 0 {
        return Ok(Some(dev.into()));
    }
    let err = io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::EPERM) => Ok(None),
        _ => Err(err),
    }
}

/// `fuse.SUBTYPE`, which the kernel shows as the type in /proc/mounts.
fn fs_type(subtype: &str) -> String {
    if subtype.is_empty() {
        "fuse".to_string()
    } else {
        format!("fuse.{subtype}")
    }
}

/// The FUSE super block options: the descriptor, the root's file type, who
/// mounted, permissions checked by the kernel, and `allow_other` as asked.
fn mount_data(fd: i32, root_mode: u32, opts: &MountOptions) -> String {
    // SAFETY: getuid and getgid have no preconditions.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let mut data = format!("fd={fd},rootmode={root_mode:o},user_id={uid},group_id={gid},default_permissions");
    if opts.allow_other {
        data.push_str(",allow_other");
    }
    data
}

fn mount_flags(opts: &MountOptions) -> libc::c_ulong {
    let flags = &opts.flags;
    [
        (flags.read_only, libc::MS_RDONLY),
        (flags.no_suid, libc::MS_NOSUID),
        (flags.no_dev, libc::MS_NODEV),
        (flags.no_exec, libc::MS_NOEXEC),
    ]
    .iter()
    .filter(|(on, _)| *on)
    .fold(0, |all, (_, flag)| all | flag)
}

/// Undoes a mount whose session could not start.
pub(crate) fn detach(mountpoint: &Path) {
    if let Ok(path) = CString::new(mountpoint.as_os_str().as_bytes()) {
        // SAFETY: `path` is a NUL-terminated string that outlives the call.
        unsafe { libc::umount2(path.as_ptr(), libc::MNT_DETACH) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mount::MountFlags;

    #[test]
    fn the_type_carries_the_subtype() {
        assert_eq!(fs_type("mcfs"), "fuse.mcfs");
        assert_eq!(fs_type(""), "fuse");
    }

    #[test]
    fn data_and_flags_follow_the_options() {
        let opts = MountOptions { allow_other: true, ..MountOptions::default() };
        let data = mount_data(7, libc::S_IFDIR, &opts);
        assert!(data.starts_with("fd=7,rootmode=40000,user_id="), "{data}");
        assert!(data.ends_with(",default_permissions,allow_other"), "{data}");
        let private = MountOptions { allow_other: false, ..opts.clone() };
        assert!(!mount_data(7, libc::S_IFDIR, &private).contains("allow_other"));

        assert_eq!(mount_flags(&opts), libc::MS_NOSUID | libc::MS_NODEV, "FUSE's defaults");
        let flags = MountFlags { read_only: true, no_suid: false, no_dev: false, no_exec: true };
        assert_eq!(mount_flags(&MountOptions { flags, ..opts }), libc::MS_RDONLY | libc::MS_NOEXEC);
    }
}
