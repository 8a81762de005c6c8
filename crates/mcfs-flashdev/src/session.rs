//! Mounting a `FlashFs`: a multi-threaded fuser session (one `/dev/fuse` clone per thread, enough
//! threads that the device's command queue can fill) served on a background thread.
//!
//! Invariant: when `Serving::wait` returns, the session is over and no request reaches the file
//! system any more. Unmounting is done by path, from outside (fusermount3 -u, umount).

use crate::fs::FlashFs;
use fuser::{Config, MountOption, Session, SessionACL};
use std::io;
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountSettings {
    /// Threads serving requests; each blocks while the device serves its command.
    pub threads: usize,
    /// Let other users in (`allow_other`; needs `user_allow_other` in /etc/fuse.conf unless root).
    pub allow_other: bool,
    /// Source shown in /proc/mounts: the backing directory.
    pub fsname: String,
}

impl MountSettings {
    fn session_config(&self) -> Config {
        let mut config = Config::default();
        config.n_threads = Some(self.threads.max(1));
        config.clone_fd = true;
        config.mount_options = vec![
            MountOption::FSName(self.fsname.clone()),
            MountOption::Subtype("flashdev".to_string()),
            // The kernel checks permissions against the backing attributes we report.
            MountOption::DefaultPermissions,
            MountOption::RW,
        ];
        config.acl = if self.allow_other { SessionACL::All } else { SessionACL::Owner };
        config
    }
}

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
pub fn mount(fs: FlashFs, mountpoint: &Path, settings: &MountSettings) -> io::Result<Serving> {
    // SAFETY: umask cannot fail.
    unsafe { libc::umask(0) };
    raise_open_files_limit();
    let context =
        |e: io::Error| io::Error::new(e.kind(), format!("{}: cannot mount flashdev: {e}", mountpoint.display()));
    let session = Session::new(fs, mountpoint, &settings.session_config()).map_err(context)?;
    let thread = std::thread::Builder::new().name("flashdev-session".into()).spawn(move || session.run())?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_config_carries_the_settings() {
        let settings = MountSettings { threads: 0, allow_other: true, fsname: "/srv/flash".into() };
        let config = settings.session_config();
        assert_eq!(config.n_threads, Some(1), "zero threads would never serve");
        assert!(config.clone_fd);
        assert_eq!(config.acl, SessionACL::All);
        assert!(config.mount_options.contains(&MountOption::FSName("/srv/flash".into())));
        assert!(config.mount_options.contains(&MountOption::Subtype("flashdev".into())));
        let private = MountSettings { allow_other: false, ..settings };
        assert_eq!(private.session_config().acl, SessionACL::Owner);
    }
}
