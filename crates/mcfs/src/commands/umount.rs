//! `mcfs umount`: the daemon checkpoints and unmounts, and this waits until
//! it has exited, so that afterwards the backing directory is complete.
//! Without a daemon (it crashed) the mount is removed with fusermount3.
//! `--lazy` only detaches the mount; the daemon finishes by itself later.

use crate::cli::UmountArgs;
use crate::control_client::{self, CallError};
use crate::output::eprint_line;
use crate::protocol::{Request, Response};
use crate::{mountinfo, unmount};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const POLL: Duration = Duration::from_millis(100);
const PROGRESS_EVERY: Duration = Duration::from_secs(10);

pub fn run(args: UmountArgs) -> Result<(), String> {
    if args.lazy {
        return detach(&args.mountpoint);
    }
    match control_client::call(&args.mountpoint, &Request::Unmount) {
        Ok((Response::Unmounting { pid }, _)) => wait_for_exit(pid, args.timeout.map(Duration::from_secs)),
        Ok((Response::Error { message }, mp)) => Err(control_client::daemon_error(&mp, &message)),
        Ok((other, mp)) => Err(format!("{}: unexpected answer from the daemon: {other:?}", mp.display())),
        Err(CallError::NoDaemon(why)) => fall_back(&args.mountpoint, &why),
        Err(CallError::Denied(why) | CallError::Failed(why)) => Err(why),
    }
}

fn fall_back(mountpoint: &Path, why: &str) -> Result<(), String> {
    let canonical = mounted(mountpoint)?;
    eprint_line(&format!(
        "mcfs: {why}\nmcfs: unmounting {} with fusermount3 -u; writes the daemon had not checkpointed are lost, and the backing store is brought back to its last checkpoint at the next mount (or by `mcfs recover BACKING`)",
        canonical.display()
    ));
    unmount::unmount(&canonical, false)?;
    control_client::remove_dead_sockets(&canonical);
    Ok(())
}

/// The kernel detaches the mount now; the daemon sees its session end once
/// the mount is no longer in use, then checkpoints and exits on its own.
fn detach(mountpoint: &Path) -> Result<(), String> {
    unmount::unmount(&mounted(mountpoint)?, true)
}

/// The canonical mount point, if something is mounted there.
fn mounted(mountpoint: &Path) -> Result<PathBuf, String> {
    let canonical = control_client::canonical_mount_point(mountpoint)?;
    match mountinfo::mount_at(&canonical) {
        Some(_) => Ok(canonical),
        None => Err(format!("{}: not mounted", canonical.display())),
    }
}

fn wait_for_exit(pid: u32, timeout: Option<Duration>) -> Result<(), String> {
    let start = Instant::now();
    let mut next_progress = PROGRESS_EVERY;
    while process_alive(pid) {
        let waited = start.elapsed();
        if timeout.is_some_and(|t| waited >= t) {
            return Err(format!(
                "daemon pid {pid} is still shutting down after {}s; it keeps going in the background",
                waited.as_secs()
            ));
        }
        if waited >= next_progress {
            eprint_line(&format!(
                "mcfs: waiting for daemon pid {pid} to finish its checkpoint ({}s)",
                waited.as_secs()
            ));
            next_progress += PROGRESS_EVERY;
        }
        std::thread::sleep(POLL);
    }
    Ok(())
}

/// A zombie counts as exited: whether it is reaped is up to its new parent.
fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !matches!(process_state(&stat), Some('Z' | 'X')),
        // SAFETY: signal 0 only checks that the process exists.
        Err(_) => unsafe { libc::kill(pid as libc::pid_t, 0) == 0 || *libc::__errno_location() == libc::EPERM },
    }
}

/// The state letter of /proc/PID/stat (after the parenthesised command name,
/// which may itself contain spaces and parentheses).
fn process_state(stat: &str) -> Option<char> {
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_is_read_after_the_last_parenthesis() {
        assert_eq!(process_state("42 (mcfs) S 1 42"), Some('S'));
        assert_eq!(process_state("42 (a) b) (c) Z 1"), Some('Z'));
        assert_eq!(process_state("garbage"), None);
    }

    #[test]
    fn liveness_of_self_and_of_a_reaped_child() {
        assert!(process_alive(std::process::id()));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(!process_alive(pid));
    }

    #[test]
    fn zombie_counts_as_exited() {
        let child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        // Not reaped yet: wait until the kernel shows it as a zombie.
        while process_alive(pid) {
            std::thread::sleep(POLL);
        }
        drop(child);
    }
}
