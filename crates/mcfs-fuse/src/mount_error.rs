//! Words for a mount that failed. fuser's errors say what went wrong but
//! not with which file: "Permission denied (os error 13)" may come from the
//! mount point, from /dev/fuse or from fusermount3. So after a failure the
//! steps fuser took are retried here in its order — open the mount point,
//! open /dev/fuse, find the setuid helper a user other than root mounts
//! through — and the first that fails names its file, the cause and what to
//! do about it. Any other error keeps fuser's words behind the mount point.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The FUSE device fuser opens.
pub const FUSE_DEVICE: &str = "/dev/fuse";

/// The error of a failed attempt to mount `what` (e.g. "mcfs") on `mountpoint`.
pub fn explain(mountpoint: &Path, what: &str, e: io::Error) -> io::Error {
    explain_with(mountpoint, what, e, Path::new(FUSE_DEVICE))
}

/// `explain` with the device at `device` (tests point it elsewhere).
fn explain_with(mountpoint: &Path, what: &str, e: io::Error, device: &Path) -> io::Error {
    let lead = format!("cannot mount {what} on {}", mountpoint.display());
    let as_before =
        |e: io::Error| io::Error::new(e.kind(), format!("{}: cannot mount {what}: {e}", mountpoint.display()));
    if !could_be_a_file(&e) {
        return as_before(e);
    }
    if let Err(m) = File::open(mountpoint) {
        let hint = if m.kind() == io::ErrorKind::PermissionDenied {
            ": the mounting user needs read and search permission on the mount point"
        } else {
            ""
        };
        return io::Error::new(m.kind(), format!("{lead}: {}: {m}{hint}", mountpoint.display()));
    }
    if let Err(d) = OpenOptions::new().read(true).write(true).open(device) {
        return io::Error::new(d.kind(), format!("{lead}: {}: {d}: {}", device.display(), device_hint(&d, device)));
    }
    if e.kind() == io::ErrorKind::NotFound && !is_root() {
        if let Some(missing) = missing_fusermount() {
            return io::Error::new(
                e.kind(),
                format!(
                    "{lead}: {missing}: not found; a user other than root mounts through fuse3's setuid helper \
                     fusermount3: install fuse3 (or mount as root)"
                ),
            );
        }
    }
    as_before(e)
}

/// Errors that mean "this file could not be opened or run".
fn could_be_a_file(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::PermissionDenied | io::ErrorKind::NotFound)
        || matches!(e.raw_os_error(), Some(libc::EACCES | libc::EPERM | libc::ENOENT | libc::ENODEV | libc::ENXIO))
}

/// What to do about a /dev/fuse that cannot be opened.
fn device_hint(e: &io::Error, device: &Path) -> String {
    match e.raw_os_error() {
        Some(libc::ENOENT) => "the FUSE device is missing: load the module (modprobe fuse); in a container, \
                               pass the device in (--device /dev/fuse)"
            .to_string(),
        Some(libc::ENODEV | libc::ENXIO) => "the FUSE module is not loaded: modprobe fuse".to_string(),
        Some(libc::EACCES | libc::EPERM) => {
            let owner = std::fs::metadata(device)
                .map(|m| format!(" (it is owned by uid {}, gid {}, mode {:04o})", m.uid(), m.gid(), m.mode() & 0o7777))
                .unwrap_or_default();
            format!(
                "uid {} may not open the FUSE device{owner}: give the user read and write access, e.g. add it to \
                 the device's group if that group has rw, or make the device mode 0666 as fuse3's udev rule does; \
                 or mount as root",
                // SAFETY: geteuid has no preconditions.
                unsafe { libc::geteuid() }
            )
        }
        _ => "the FUSE device cannot be opened".to_string(),
    }
}

/// The helper fuser would run that is not there, if it is not: FUSERMOUNT_PATH
/// when set, else fusermount3 (or fusermount) on PATH, /sbin or /bin.
fn missing_fusermount() -> Option<String> {
    if let Some(path) = std::env::var_os("FUSERMOUNT_PATH") {
        let path = PathBuf::from(path);
        return (!path.is_file()).then(|| format!("{} (FUSERMOUNT_PATH)", path.display()));
    }
    let path_dirs: Vec<PathBuf> =
        std::env::var_os("PATH").map(|p| std::env::split_paths(&p).collect()).unwrap_or_default();
    let dirs = path_dirs.into_iter().chain([PathBuf::from("/sbin"), PathBuf::from("/bin")]);
    let found = dirs.into_iter().any(|dir| ["fusermount3", "fusermount"].iter().any(|n| dir.join(n).is_file()));
    (!found).then(|| "fusermount3".to_string())
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_device_is_named_with_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let device = dir.path().join("fuse");
        let enoent = io::Error::from_raw_os_error(libc::ENOENT);
        let err = explain_with(dir.path(), "mcfs", enoent, &device).to_string();
        let lead =
            format!("cannot mount mcfs on {}: {}: No such file or directory", dir.path().display(), device.display());
        assert!(err.starts_with(&lead), "{err}");
        assert!(err.contains("modprobe fuse"), "{err}");
    }

    #[test]
    fn an_unreadable_mount_point_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("gone");
        let err = explain_with(&missing, "mcfs", io::Error::from_raw_os_error(libc::ENOENT), Path::new("/dev/null"));
        let lead = format!("cannot mount mcfs on {0}: {0}: No such file or directory", missing.display());
        assert!(err.to_string().starts_with(&lead), "{err}");
    }

    #[test]
    fn other_errors_keep_fusers_words_behind_the_mount_point() {
        let err =
            explain(Path::new("/mnt/x"), "mcfs", io::Error::other("fusermount3: mount failed: Bad file descriptor"));
        assert_eq!(err.to_string(), "/mnt/x: cannot mount mcfs: fusermount3: mount failed: Bad file descriptor");
    }
}
