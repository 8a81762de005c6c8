//! The journal's conventions for a service that logs on stderr: systemd
//! connects stderr to journald and says so in JOURNAL_STREAM ("DEV:INODE"
//! of that stream, systemd.exec(5)); journald stamps every line with the
//! time, so records carry none, and reads a leading "<N>" as the line's
//! syslog priority (sd-daemon(3)), which `journalctl -p` filters on.

use std::os::fd::AsRawFd;
use tracing::Level;

/// Whether stderr is the stream systemd connected to the journal (and not,
/// say, a file a child of the service inherited JOURNAL_STREAM with).
pub fn stderr_is_journal() -> bool {
    let Some((dev, ino)) = std::env::var("JOURNAL_STREAM").ok().as_deref().and_then(parse_stream) else {
        return false;
    };
    // SAFETY: fstat fills a plain-data stat for an fd this process has (stderr).
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above; `st` outlives the call.
    let ok = unsafe { libc::fstat(std::io::stderr().as_raw_fd(), &mut st) } == 0;
    ok && st.st_dev == dev && st.st_ino == ino
}

/// "DEV:INODE", both decimal.
fn parse_stream(text: &str) -> Option<(u64, u64)> {
    let (dev, ino) = text.split_once(':')?;
    Some((dev.parse().ok()?, ino.parse().ok()?))
}

/// The syslog priority of a level: err 3, warning 4, info 6, debug 7.
pub fn priority(level: Level) -> u8 {
    match level {
        Level::ERROR => 3,
        Level::WARN => 4,
        Level::INFO => 6,
        Level::DEBUG | Level::TRACE => 7,
    }
}

/// `record` with every line prefixed by "<N>": journald makes each line an
/// entry, and a line without the prefix would get the default priority.
pub fn prefix_lines(level: Level, record: &[u8]) -> Vec<u8> {
    let prefix = format!("<{}>", priority(level));
    let mut out = Vec::with_capacity(record.len() + prefix.len());
    for line in record.split_inclusive(|b| *b == b'\n') {
        out.extend_from_slice(prefix.as_bytes());
        out.extend_from_slice(line);
    }
    if !out.ends_with(b"\n") {
        out.push(b'\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_gets_the_priority_of_its_record() {
        assert_eq!(prefix_lines(Level::WARN, b"mcfs::daemon: one\n"), b"<4>mcfs::daemon: one\n");
        assert_eq!(prefix_lines(Level::ERROR, b"a\n  b\n"), b"<3>a\n<3>  b\n");
        assert_eq!(prefix_lines(Level::INFO, b"no newline"), b"<6>no newline\n");
        assert_eq!(prefix_lines(Level::TRACE, b"t\n"), b"<7>t\n");
    }

    #[test]
    fn the_stream_is_device_and_inode() {
        assert_eq!(parse_stream("8:12345"), Some((8, 12345)));
        for bad in ["", "8", "8:", ":1", "a:b", "8:1:2"] {
            assert_eq!(parse_stream(bad), None, "{bad:?}");
        }
    }
}
