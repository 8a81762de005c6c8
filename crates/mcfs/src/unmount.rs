//! Unmounting a FUSE mount point by path, independent of the session that
//! serves it: `fusermount3 -u` (works for the mounting user and root), or
//! umount2(2) directly for root when fuse3's helper is not installed.
//! `lazy` detaches a busy or dead mount (used when the daemon must go anyway).

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::Command;

pub fn unmount(mountpoint: &Path, lazy: bool) -> Result<(), String> {
    let mut cmd = Command::new("fusermount3");
    cmd.arg("-u").arg("-q");
    if lazy {
        cmd.arg("-z");
    }
    match cmd.arg("--").arg(mountpoint).output() {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(format!(
            "fusermount3 -u {}: {}",
            mountpoint.display(),
            failure_text(&out.stderr, &out.status.to_string())
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && is_root() => umount2(mountpoint, lazy),
        Err(e) => Err(format!("fusermount3 -u {}: {} (is fuse3 installed?)", mountpoint.display(), e)),
    }
}

fn failure_text(stderr: &[u8], status: &str) -> String {
    let text = String::from_utf8_lossy(stderr).trim().to_string();
    if text.is_empty() {
        status.to_string()
    } else {
        text
    }
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn umount2(mountpoint: &Path, lazy: bool) -> Result<(), String> {
    let path = CString::new(mountpoint.as_os_str().as_bytes())
        .map_err(|_| format!("{}: path contains NUL", mountpoint.display()))?;
    let flags = if lazy { libc::MNT_DETACH } else { 0 };
    // SAFETY: `path` is a valid NUL-terminated string.
    if unsafe { libc::umount2(path.as_ptr(), flags) } != 0 {
        return Err(format!("umount {}: {}", mountpoint.display(), std::io::Error::last_os_error()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unmounting_a_plain_directory_fails_with_the_path_in_the_message() {
        let dir = tempfile::tempdir().unwrap();
        let err = unmount(dir.path(), false).unwrap_err();
        assert!(err.contains(&dir.path().display().to_string()), "{err}");
    }
}
