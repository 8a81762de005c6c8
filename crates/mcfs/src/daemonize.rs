//! Turning `mcfs mount` into a daemon without losing its errors.
//!
//! The fork happens while the process still has one thread (a fork copies
//! only the calling thread, so any other thread's locks would be stuck).
//! The child starts a new session and tells the waiting parent, through a
//! close-on-exec pipe, either "ready" (the mount is live) or why it failed;
//! the parent prints that and exits 0 or 1. If the child dies first, the
//! pipe closes empty and the parent says so and points at the log.
//!
//! The daemon's stdin and stdout are /dev/null, and so is its stderr unless
//! the log goes there (`--log stderr|journal`): it writes only through
//! `logging`, whose writes cannot fail, never through a stderr whose failure
//! (a full disk under a log file) makes `eprintln!` panic.

use crate::output::eprint_line;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const READY: &[u8] = b"ready";

/// How the daemon reports the outcome of its start-up; used once.
pub struct StartupReport {
    pipe: Option<File>,
    /// Whether a failure is logged rather than printed (the journal reads
    /// stderr: a logged error keeps its priority there).
    log_failure: bool,
}

impl StartupReport {
    /// For `--foreground`: there is no parent waiting. `journal`: the log
    /// goes to the journal.
    pub fn foreground(journal: bool) -> StartupReport {
        StartupReport { pipe: None, log_failure: journal }
    }

    pub fn ready(self) {
        self.send(READY);
    }

    /// A daemon logs the error and hands it to the waiting parent to print;
    /// in the foreground it is printed like any other command's error
    /// (logged, when the log is the journal).
    pub fn failed(self, message: &str) {
        if self.log_failure {
            tracing::error!("{message}");
        } else {
            eprint_line(&format!("mcfs: {message}"));
        }
        self.send(message.as_bytes());
    }

    fn send(mut self, bytes: &[u8]) {
        if let Some(mut pipe) = self.pipe.take() {
            // The parent may already be gone (killed); nothing to do then.
            let _ = pipe.write_all(bytes);
        }
    }
}

/// Forks. In the parent this never returns: it waits for the child's report
/// and exits. In the child it returns the report handle, with the child in a
/// new session, cwd `/`, stdin, stdout and (unless `keep_stderr`) stderr on
/// /dev/null. `log` (where the log goes) is named in the parent's message if
/// the child dies.
pub fn daemonize(log: &str, keep_stderr: bool) -> Result<StartupReport, String> {
    let null = OpenOptions::new().read(true).write(true).open("/dev/null").map_err(|e| format!("/dev/null: {e}"))?;
    let (read_end, write_end) = pipe().map_err(|e| format!("cannot create a pipe: {e}"))?;
    // SAFETY: the process is single-threaded here (see the module comment).
    match unsafe { libc::fork() } {
        -1 => Err(format!("cannot fork: {}", std::io::Error::last_os_error())),
        0 => {
            drop(read_end);
            // SAFETY: plain syscalls on fds this process owns.
            unsafe {
                libc::setsid();
                libc::dup2(null.as_raw_fd(), 0);
                libc::dup2(null.as_raw_fd(), 1);
                if !keep_stderr {
                    libc::dup2(null.as_raw_fd(), 2);
                }
            }
            let report = StartupReport { pipe: Some(File::from(write_end)), log_failure: true };
            if let Err(e) = std::env::set_current_dir("/") {
                report.failed(&format!("chdir /: {e}"));
                std::process::exit(1);
            }
            Ok(report)
        }
        child => {
            drop(write_end);
            std::process::exit(wait_for_report(File::from(read_end), child, log))
        }
    }
}

fn wait_for_report(mut pipe: File, child: libc::pid_t, log: &str) -> i32 {
    let mut report = Vec::new();
    let read = pipe.read_to_end(&mut report);
    if read.is_ok() && report == READY {
        return 0;
    }
    if read.is_ok() && !report.is_empty() {
        eprint_line(&format!("mcfs: {}", String::from_utf8_lossy(&report)));
    } else {
        eprint_line(&format!("mcfs: the daemon (pid {child}) exited before the mount was ready; see {log}"));
    }
    1
}

fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` is a valid array of two ints for pipe2 to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: pipe2 succeeded, so both fds are open and owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}
