//! What commands print, without ever panicking: `println!` panics when
//! stdout cannot be written (a full disk, a closed pipe), so commands print
//! through `print`, which returns the failure as an error, and write their
//! messages to stderr through `eprint_line`, which drops what cannot be
//! written (there is nowhere left to report it).
//!
//! A closed pipe (`mcfs stat --json | head -c 100`) ends a command the way it
//! ends `cat` or `grep`: `main` gives every command but the daemons
//! SIGPIPE's default action, so the first write to the closed pipe ends the
//! process at once, silently (status 141 in a shell).

use std::io::{self, Write};

/// Writes `text` to stdout as is; the error says what failed.
pub fn print(text: &str) -> Result<(), String> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes()).and_then(|()| out.flush()).map_err(|e| format!("writing to stdout: {e}"))
}

/// Writes `line` and a newline to stderr; a failure is ignored.
pub fn eprint_line(line: &str) {
    let _ = writeln!(io::stderr().lock(), "{line}");
}

/// SIGPIPE's default action (end the process) for a command that prints,
/// or ignored (write fails with EPIPE instead) for a daemon, which must
/// survive a client that hangs up. Rust programs start with it ignored.
pub fn sigpipe_ends_process(ends: bool) {
    let action = if ends { libc::SIG_DFL } else { libc::SIG_IGN };
    // SAFETY: installs one of the two predefined dispositions; no handler runs.
    unsafe {
        libc::signal(libc::SIGPIPE, action);
    }
}
