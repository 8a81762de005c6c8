//! How a daemon command (`mount`, `flashdev`) starts: it picks where it
//! logs (`logging::destination`), forks unless it stays in the foreground
//! (`daemonize`) and sets logging up. A log file is opened before the fork,
//! so that a bad one is reported on the terminal.

use crate::daemonize::{self, StartupReport};
use crate::logging::{self, Destination, LogFile, Target};

/// The report handle for the daemon; in a forked parent this never returns.
pub fn start(
    foreground: bool,
    asked: Option<Destination>,
    open_log_file: impl FnOnce() -> Result<LogFile, String>,
) -> Result<StartupReport, String> {
    let target = match logging::destination(asked, foreground) {
        Destination::File => Target::File(open_log_file()?),
        Destination::Stderr => Target::Stderr,
        Destination::Journal => Target::Journal,
    };
    let report = match (&target, foreground) {
        (_, true) => StartupReport::foreground(matches!(target, Target::Journal)),
        (Target::File(file), false) => daemonize::daemonize(&file.path().display().to_string(), false)?,
        (_, false) => daemonize::daemonize("its stderr", true)?,
    };
    logging::init("info", target);
    Ok(report)
}
