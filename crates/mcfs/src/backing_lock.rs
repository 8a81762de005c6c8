//! One process at a time per backing directory: the daemon (and `mcfs
//! recover`) hold an exclusive `flock` on BACKING/.mcfs/lock for as long as
//! they work on it. The lock file holds the holder's pid, for messages only;
//! the kernel drops the lock when the holder dies, so it is never stale.
//! It is opened through the checked state directory (`StateDir`): a planted
//! link is refused before anything is written.

use crate::state_dir::StateDir;
use std::fs::File;
use std::io::{self, Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

pub const LOCK_FILE: &str = "lock";

/// Held lock; dropping it (or the process dying) releases it.
#[derive(Debug)]
pub struct BackingLock {
    file: File,
    path: PathBuf,
}

impl BackingLock {
    /// Takes the lock of `backing`, whose state directory is `state`, without waiting.
    pub fn acquire(backing: &Path, state: &StateDir) -> Result<BackingLock, String> {
        let path = state.file_path(LOCK_FILE);
        let mut file = state.open_file(LOCK_FILE, libc::O_RDWR | libc::O_CREAT)?;
        // SAFETY: flock on an fd we own; no memory is passed.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let err = io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
                let holder = read_pid(&mut file).map(|p| format!(" (pid {p})")).unwrap_or_default();
                return Err(format!(
                    "{}: in use by a running mcfs daemon{holder}; unmount it first (lock {})",
                    backing.display(),
                    path.display()
                ));
            }
            return Err(format!("{}: cannot lock: {}", path.display(), err));
        }
        let mut lock = BackingLock { file, path };
        lock.record_pid().map_err(|e| format!("{}: {}", lock.path.display(), e))?;
        Ok(lock)
    }

    /// Writes the current pid; called again by a daemon after it forked.
    pub fn record_pid(&mut self) -> io::Result<()> {
        self.file.set_len(0)?;
        self.file.rewind()?;
        writeln!(self.file, "{}", std::process::id())
    }
}

fn read_pid(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.rewind().ok()?;
    file.read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_holder_is_refused_with_the_pid_and_lock_is_released_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::open(dir.path(), true).unwrap();
        let first = BackingLock::acquire(dir.path(), &state).unwrap();
        let err = BackingLock::acquire(dir.path(), &state).unwrap_err();
        assert!(err.contains("in use by a running mcfs daemon"), "{err}");
        assert!(err.contains(&format!("pid {}", std::process::id())), "{err}");
        assert!(err.contains(&dir.path().display().to_string()), "{err}");
        drop(first);
        BackingLock::acquire(dir.path(), &state).unwrap();
    }

    #[test]
    fn a_planted_symlink_is_refused_and_its_target_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::open(dir.path(), true).unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"root's file").unwrap();
        std::os::unix::fs::symlink(&victim, state.file_path(LOCK_FILE)).unwrap();
        let err = BackingLock::acquire(dir.path(), &state).unwrap_err();
        assert!(err.contains(".mcfs/lock: is a symbolic link"), "{err}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"root's file");
    }
}
