//! The control protocol between `mcfs` commands and a daemon: over a Unix
//! stream socket, one JSON request line, then one JSON response line.
//! Lines are bounded so a misbehaving peer cannot make the other side buffer
//! without limit.

use mcfs_core::SyncMode;
use serde::{Deserialize, Serialize};
use std::io::{self, BufRead, Read, Write};

/// Longest line either side accepts (stats of many apps fit easily).
pub const MAX_LINE: u64 = 4 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    Stats,
    Checkpoint,
    Battery {
        percent: u8,
    },
    Mode {
        app: String,
        mode: SyncMode,
    },
    /// Checkpoint, unmount, and exit.
    Unmount,
    /// The user just did something (a tap): feeds the idle predictor.
    Input,
    /// Move the virtual clock forward (mounts with `--virtual-clock`).
    Advance {
        nanos: u64,
    },
    /// Make `app` (a name or `uid:N`) the foreground app; `None`: no app is.
    SetForeground {
        app: Option<String>,
    },
    /// Which app is in the foreground.
    Foreground,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Response {
    Done,
    /// The engine's `Stats`, as its own serialisation.
    Stats {
        stats: serde_json::Value,
    },
    /// The mount is gone; the daemon `pid` exits once the engine has shut down.
    Unmounting {
        pid: u32,
    },
    /// The foreground app's name, if there is one.
    Foreground {
        app: Option<String>,
    },
    Error {
        message: String,
    },
}

/// Writes one message as one line and flushes.
pub fn send<T: Serialize>(out: &mut impl Write, msg: &T) -> io::Result<()> {
    let mut line = serde_json::to_vec(msg).map_err(io::Error::other)?;
    line.push(b'\n');
    out.write_all(&line)?;
    out.flush()
}

/// Reads one line and decodes it; end of stream before a full line is an error.
pub fn receive<T: for<'de> Deserialize<'de>>(input: &mut impl BufRead) -> io::Result<T> {
    let mut line = Vec::new();
    input.by_ref().take(MAX_LINE + 1).read_until(b'\n', &mut line)?;
    if line.last() != Some(&b'\n') {
        let why = if line.len() as u64 > MAX_LINE { "line too long" } else { "connection closed mid-message" };
        return Err(io::Error::new(io::ErrorKind::InvalidData, why));
    }
    serde_json::from_slice(&line).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("bad message: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn round_trip<T: Serialize + for<'de> Deserialize<'de> + PartialEq + std::fmt::Debug>(msg: T) -> String {
        let mut buf = Vec::new();
        send(&mut buf, &msg).unwrap();
        assert_eq!(buf.iter().filter(|&&b| b == b'\n').count(), 1, "exactly one line");
        let back: T = receive(&mut Cursor::new(&buf)).unwrap();
        assert_eq!(back, msg);
        String::from_utf8(buf).unwrap()
    }

    #[test]
    fn requests_have_a_stable_wire_form() {
        assert_eq!(round_trip(Request::Stats), "{\"op\":\"stats\"}\n");
        assert_eq!(round_trip(Request::Battery { percent: 42 }), "{\"op\":\"battery\",\"percent\":42}\n");
        assert_eq!(
            round_trip(Request::Mode { app: "mail\nx".into(), mode: SyncMode::Sync }),
            "{\"op\":\"mode\",\"app\":\"mail\\nx\",\"mode\":\"sync\"}\n"
        );
        round_trip(Request::Checkpoint);
        round_trip(Request::Unmount);
        assert_eq!(round_trip(Request::Input), "{\"op\":\"input\"}\n");
        assert_eq!(round_trip(Request::Advance { nanos: 5 }), "{\"op\":\"advance\",\"nanos\":5}\n");
        assert_eq!(
            round_trip(Request::SetForeground { app: Some("uid:10001".into()) }),
            "{\"op\":\"set_foreground\",\"app\":\"uid:10001\"}\n"
        );
        assert_eq!(round_trip(Request::SetForeground { app: None }), "{\"op\":\"set_foreground\",\"app\":null}\n");
        assert_eq!(round_trip(Request::Foreground), "{\"op\":\"foreground\"}\n");
    }

    #[test]
    fn responses_round_trip() {
        assert_eq!(round_trip(Response::Unmounting { pid: 7 }), "{\"status\":\"unmounting\",\"pid\":7}\n");
        round_trip(Response::Done);
        assert_eq!(round_trip(Response::Foreground { app: None }), "{\"status\":\"foreground\",\"app\":null}\n");
        round_trip(Response::Foreground { app: Some("mail".into()) });
        round_trip(Response::Error { message: "no such app".into() });
        round_trip(Response::Stats { stats: serde_json::json!({"bytes_written": 3, "apps": {}}) });
    }

    #[test]
    fn malformed_input_is_an_error_not_a_panic() {
        for bad in [
            &b"{\"op\":\"battery\",\"percent\":300}\n"[..],
            b"{\"op\":\"reboot\"}\n",
            b"not json\n",
            b"{\"op\":\"stats\"}",
            b"",
        ] {
            let r: io::Result<Request> = receive(&mut Cursor::new(bad));
            assert_eq!(r.unwrap_err().kind(), io::ErrorKind::InvalidData, "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn overlong_line_is_refused() {
        let mut big = vec![b' '; MAX_LINE as usize + 10];
        big.push(b'\n');
        let err = receive::<Request>(&mut Cursor::new(big)).unwrap_err();
        assert!(err.to_string().contains("too long"), "{err}");
    }
}
