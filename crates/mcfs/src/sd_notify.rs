//! systemd's notification protocol (sd_notify(3)) for `Type=notify`
//! services: one datagram of "KEY=VALUE" lines to the unix socket that
//! NOTIFY_SOCKET names (a path, or an abstract name after '@'). The daemon
//! sends READY=1 once the mount is live, STATUS= lines as it goes,
//! STOPPING=1 when its stop begins, and WATCHDOG=1 pings when systemd
//! watches it (WATCHDOG_USEC, for this process if WATCHDOG_PID says so).
//!
//! Without NOTIFY_SOCKET every call does nothing. The variables are taken
//! out of the environment when read, so that no child (fusermount3)
//! inherits them. A message that cannot be sent is dropped (logged at
//! DEBUG): systemd's absence never stops the daemon.

use std::ffi::OsString;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::time::Duration;

pub struct Notifier {
    /// Where to send; `None`: not started by a service manager that listens.
    socket: Option<SocketAddr>,
    /// How often to ping, if systemd watches this process.
    watchdog: Option<Duration>,
}

impl Notifier {
    /// Reads NOTIFY_SOCKET, WATCHDOG_USEC and WATCHDOG_PID, and removes
    /// them from the environment. Changing the environment is sound only
    /// while the process has one thread: call it first thing.
    pub fn from_env() -> Notifier {
        let take = |key: &str| {
            let value = std::env::var_os(key);
            std::env::remove_var(key);
            value
        };
        let socket = take("NOTIFY_SOCKET").and_then(|name| socket_address(&name));
        let (usec, pid) = (take("WATCHDOG_USEC"), take("WATCHDOG_PID"));
        let watchdog = socket.as_ref().and_then(|_| watchdog_interval(usec, pid, std::process::id()));
        Notifier { socket, watchdog }
    }

    /// Whether anybody listens.
    pub fn enabled(&self) -> bool {
        self.socket.is_some()
    }

    /// Half the watchdog timeout, when systemd watches this process.
    pub fn watchdog_interval(&self) -> Option<Duration> {
        self.watchdog
    }

    /// The service is up. MAINPID names this process, which systemd did not
    /// start itself when `mcfs mount` forked (then `NotifyAccess=all`).
    pub fn ready(&self, status: &str) {
        let pid = std::process::id().to_string();
        self.send(&[("READY", "1"), ("STATUS", status), ("MAINPID", &pid)]);
    }

    pub fn status(&self, status: &str) {
        self.send(&[("STATUS", status)]);
    }

    /// The stop has begun (the final checkpoint comes next).
    pub fn stopping(&self, status: &str) {
        self.send(&[("STOPPING", "1"), ("STATUS", status)]);
    }

    /// Alive: a watchdog ping (if watched) with the current status.
    pub fn alive(&self, status: &str) {
        match self.watchdog {
            Some(_) => self.send(&[("WATCHDOG", "1"), ("STATUS", status)]),
            None => self.status(status),
        }
    }

    fn send(&self, fields: &[(&str, &str)]) {
        let Some(address) = &self.socket else { return };
        let sent = UnixDatagram::unbound().and_then(|socket| socket.send_to_addr(message(fields).as_bytes(), address));
        if let Err(e) = sent {
            tracing::debug!("cannot notify systemd: {e}");
        }
    }
}

/// The datagram: one "KEY=VALUE" line per field. A value is one line (a
/// newline in it would start a new assignment), so newlines become spaces.
pub fn message(fields: &[(&str, &str)]) -> String {
    fields.iter().map(|(key, value)| format!("{key}={}\n", value.replace('\n', " "))).collect()
}

/// NOTIFY_SOCKET's address: "@name" is abstract, "/path" a file; anything
/// else (say "vsock:…") is not for a process on this machine's namespace.
fn socket_address(name: &OsString) -> Option<SocketAddr> {
    let bytes = name.as_bytes();
    match bytes.first() {
        Some(b'@') => SocketAddr::from_abstract_name(&bytes[1..]).ok(),
        Some(b'/') => SocketAddr::from_pathname(name).ok(),
        _ => None,
    }
}

/// Half of WATCHDOG_USEC, if set, positive, and meant for `pid` (WATCHDOG_PID
/// unset or equal to it): sd_watchdog_enabled(3) and its advice to ping at
/// half the timeout.
fn watchdog_interval(usec: Option<OsString>, watched: Option<OsString>, pid: u32) -> Option<Duration> {
    let number = |v: Option<OsString>| v.and_then(|v| v.to_str()?.trim().parse::<u64>().ok());
    if watched.is_some() && number(watched) != Some(u64::from(pid)) {
        return None;
    }
    number(usec).filter(|usec| *usec > 0).map(|usec| Duration::from_micros(usec / 2))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(text: &str) -> Option<OsString> {
        Some(text.into())
    }

    #[test]
    fn a_message_is_one_line_per_field() {
        assert_eq!(message(&[("READY", "1"), ("STATUS", "serving /mnt/data")]), "READY=1\nSTATUS=serving /mnt/data\n");
        assert_eq!(message(&[("STATUS", "two\nlines")]), "STATUS=two lines\n");
        assert_eq!(message(&[]), "");
    }

    #[test]
    fn the_watchdog_is_half_the_timeout_for_this_pid_only() {
        assert_eq!(watchdog_interval(os("30000000"), None, 7), Some(Duration::from_secs(15)));
        assert_eq!(watchdog_interval(os("30000000"), os("7"), 7), Some(Duration::from_secs(15)));
        assert_eq!(watchdog_interval(os("30000000"), os("8"), 7), None, "another process is watched");
        assert_eq!(watchdog_interval(os("30000000"), os("x"), 7), None);
        assert_eq!(watchdog_interval(None, None, 7), None);
        assert_eq!(watchdog_interval(os("0"), None, 7), None);
        assert_eq!(watchdog_interval(os("soon"), None, 7), None);
    }

    #[test]
    fn addresses_are_paths_or_abstract_names() {
        let abstract_name = socket_address(&"@mcfs/notify".into()).expect("abstract");
        assert_eq!(abstract_name.as_abstract_name(), Some(&b"mcfs/notify"[..]));
        let path = socket_address(&"/run/systemd/notify".into()).expect("path");
        assert_eq!(path.as_pathname(), Some(std::path::Path::new("/run/systemd/notify")));
        assert!(socket_address(&"vsock:2:1234".into()).is_none());
        assert!(socket_address(&"".into()).is_none());
    }

    /// What a service manager listening on an abstract socket receives.
    #[test]
    fn ready_reaches_an_abstract_socket_with_the_pid() {
        let name = format!("mcfs-test-notify-{}", std::process::id());
        let listener = UnixDatagram::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes()).unwrap()).unwrap();
        listener.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let notifier = Notifier { socket: socket_address(&format!("@{name}").into()), watchdog: None };
        notifier.ready("serving");
        let mut buf = [0u8; 256];
        let n = listener.recv(&mut buf).expect("a datagram");
        let text = String::from_utf8_lossy(&buf[..n]);
        assert_eq!(text, format!("READY=1\nSTATUS=serving\nMAINPID={}\n", std::process::id()));
    }

    #[test]
    fn without_a_socket_nothing_is_sent_and_nothing_fails() {
        let notifier = Notifier { socket: None, watchdog: None };
        assert!(!notifier.enabled());
        notifier.ready("x");
        notifier.alive("x");
    }
}
