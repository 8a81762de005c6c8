//! The readable text form of a trace: a header line `mcfs-trace 1`, then one event per line.
//!
//! A line is `TIME APP PID OP ARGS...` (see docs/TRACE_FORMAT.md); `#` starts a comment. The writer emits the
//! canonical form (nine fractional digits, single spaces, `\xHH` escapes only where needed), so text written
//! here reads back to the same events and writes back to the same bytes. The reader streams line by line and
//! stops at the first bad line with its number.

use std::io::{self, BufRead, Write};
use std::sync::Arc;

use crate::error::TraceError;
use crate::escape::{escape_into, unescape};
use crate::lines::LineReader;
use crate::timefmt::{format_seconds, parse_decimal, NANOS_PER_SECOND};
use crate::trace::{
    check_kind_in_version, version_is_known, EventKind, InputKind, PathBytes, TraceEvent, FORMAT_NAME, FORMAT_VERSION,
    MAX_BATTERY_PERCENT, OLDEST_FORMAT_VERSION,
};

/// Writes events in the canonical text form.
pub struct TextWriter<W: Write> {
    out: W,
    line: Vec<u8>,
}

impl<W: Write> TextWriter<W> {
    /// Starts a trace: writes the header line.
    pub fn new(mut out: W) -> io::Result<Self> {
        writeln!(out, "{FORMAT_NAME} {FORMAT_VERSION}")?;
        Ok(TextWriter { out, line: Vec::with_capacity(256) })
    }

    pub fn write_event(&mut self, event: &TraceEvent) -> io::Result<()> {
        self.line.clear();
        format_event(event, &mut self.line);
        self.line.push(b'\n');
        self.out.write_all(&self.line)
    }

    /// Flushes and hands back the output.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Appends the canonical line for `event` (without newline) to `out`.
pub fn format_event(event: &TraceEvent, out: &mut Vec<u8>) {
    out.extend_from_slice(format_seconds(event.time_ns).as_bytes());
    out.push(b' ');
    escape_into(event.app.as_bytes(), out);
    out.extend_from_slice(format!(" {} {}", event.pid, op_name(&event.kind)).as_bytes());
    let path = |out: &mut Vec<u8>, p: &[u8]| {
        out.push(b' ');
        escape_into(p, out);
    };
    let number = |out: &mut Vec<u8>, n: u64| out.extend_from_slice(format!(" {n}").as_bytes());
    match &event.kind {
        EventKind::Open { path: p }
        | EventKind::Create { path: p }
        | EventKind::Fsync { path: p }
        | EventKind::Fdatasync { path: p }
        | EventKind::Unlink { path: p }
        | EventKind::Mkdir { path: p }
        | EventKind::Rmdir { path: p }
        | EventKind::Close { path: p } => path(out, p),
        EventKind::Read { path: p, offset, len } | EventKind::Write { path: p, offset, len } => {
            path(out, p);
            number(out, *offset);
            number(out, *len);
        }
        EventKind::Truncate { path: p, size } => {
            path(out, p);
            number(out, *size);
        }
        EventKind::Rename { from, to } | EventKind::Link { from, to } => {
            path(out, from);
            path(out, to);
        }
        EventKind::Input { duration_ns, .. } => {
            out.push(b' ');
            out.extend_from_slice(format_seconds(*duration_ns).as_bytes());
        }
        EventKind::Launch | EventKind::Foreground | EventKind::Background | EventKind::Exit => {}
        EventKind::Battery { percent } => number(out, u64::from(*percent)),
        EventKind::Screen { on } => out.extend_from_slice(if *on { b" on" } else { b" off" }),
    }
}

/// The text names of the operations, by `op_index`.
pub const OP_NAMES: [&str; 21] = [
    "open",
    "create",
    "read",
    "write",
    "fsync",
    "fdatasync",
    "truncate",
    "unlink",
    "rename",
    "link",
    "mkdir",
    "rmdir",
    "close",
    "tap",
    "drag",
    "launch",
    "foreground",
    "background",
    "exit",
    "battery",
    "screen",
];

/// Where an event's operation is in `OP_NAMES`: a counter per operation is
/// an array slot, not a map entry hashed by name for every event.
pub fn op_index(kind: &EventKind) -> usize {
    match kind {
        EventKind::Open { .. } => 0,
        EventKind::Create { .. } => 1,
        EventKind::Read { .. } => 2,
        EventKind::Write { .. } => 3,
        EventKind::Fsync { .. } => 4,
        EventKind::Fdatasync { .. } => 5,
        EventKind::Truncate { .. } => 6,
        EventKind::Unlink { .. } => 7,
        EventKind::Rename { .. } => 8,
        EventKind::Link { .. } => 9,
        EventKind::Mkdir { .. } => 10,
        EventKind::Rmdir { .. } => 11,
        EventKind::Close { .. } => 12,
        EventKind::Input { input: InputKind::Tap, .. } => 13,
        EventKind::Input { input: InputKind::Drag, .. } => 14,
        EventKind::Launch => 15,
        EventKind::Foreground => 16,
        EventKind::Background => 17,
        EventKind::Exit => 18,
        EventKind::Battery { .. } => 19,
        EventKind::Screen { .. } => 20,
    }
}

/// The text name of an event's operation.
pub fn op_name(kind: &EventKind) -> &'static str {
    OP_NAMES[op_index(kind)]
}

/// Streams events out of a text trace.
pub struct TextReader<R: BufRead> {
    lines: LineReader<R>,
    /// The version the header gave; `None` until it is read.
    version: Option<u32>,
    done: bool,
}

impl<R: BufRead> TextReader<R> {
    pub fn new(input: R) -> Self {
        TextReader { lines: LineReader::new(input), version: None, done: false }
    }

    /// Tokens of the next line with content (comments and blank lines skipped), or `None` at end of input.
    fn next_content_line(&mut self) -> Result<Option<Vec<Vec<u8>>>, TraceError> {
        while let Some(line) = self.lines.next_line()? {
            let tokens: Vec<Vec<u8>> = line
                .split(|b| matches!(b, b' ' | b'\t'))
                .filter(|t| !t.is_empty())
                .take_while(|t| t[0] != b'#')
                .map(<[u8]>::to_vec)
                .collect();
            if !tokens.is_empty() {
                return Ok(Some(tokens));
            }
        }
        Ok(None)
    }

    fn read_next(&mut self) -> Result<Option<TraceEvent>, TraceError> {
        let version = match self.version {
            Some(v) => v,
            None => {
                let Some(tokens) = self.next_content_line()? else {
                    return Err(TraceError::at(self.lines.position(), "empty input: missing header"));
                };
                let v = check_header(&tokens).map_err(|r| TraceError::at(self.lines.position(), r))?;
                *self.version.insert(v)
            }
        };
        let Some(tokens) = self.next_content_line()? else { return Ok(None) };
        let event = parse_event(&tokens).and_then(|e| check_kind_in_version(&e.kind, version).map(|()| e));
        event.map(Some).map_err(|r| TraceError::at(self.lines.position(), r))
    }
}

/// The version of a header line `mcfs-trace N`.
fn check_header(tokens: &[Vec<u8>]) -> Result<u32, String> {
    let expected = format!("{FORMAT_NAME} {FORMAT_VERSION}");
    match tokens {
        [name, version] if name == FORMAT_NAME.as_bytes() => {
            match std::str::from_utf8(version).ok().and_then(|v| v.parse::<u32>().ok()) {
                Some(v) if version_is_known(u64::from(v)) && version.iter().all(u8::is_ascii_digit) => Ok(v),
                _ => Err(format!(
                    "unsupported {FORMAT_NAME} version '{}' (this reader reads versions {OLDEST_FORMAT_VERSION} to \
                     {FORMAT_VERSION})",
                    String::from_utf8_lossy(version)
                )),
            }
        }
        _ => Err(format!("missing header: the first line must be '{expected}'")),
    }
}

impl<R: BufRead> Iterator for TextReader<R> {
    type Item = Result<TraceEvent, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let next = self.read_next();
        crate::error::stop_after_error(&mut self.done, next)
    }
}

fn utf8(token: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(token).map_err(|_| format!("'{}' is not valid UTF-8", String::from_utf8_lossy(token)))
}

fn number<T: std::str::FromStr>(token: &[u8], what: &str) -> Result<T, String> {
    let text = utf8(token)?;
    // FromStr for integers accepts a leading '+'; the format does not.
    if !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{what} '{text}' is not a non-negative integer"));
    }
    text.parse().map_err(|_| format!("{what} '{text}' is out of range"))
}

fn seconds(token: &[u8], what: &str) -> Result<u64, String> {
    parse_decimal(utf8(token)?, NANOS_PER_SECOND).map_err(|e| format!("{what}: {e}"))
}

fn path(token: &[u8]) -> Result<PathBytes, String> {
    let bytes = unescape(token).map_err(|e| format!("path '{}': {e}", String::from_utf8_lossy(token)))?;
    Ok(bytes.into())
}

/// Parses the tokens of one event line.
fn parse_event(tokens: &[Vec<u8>]) -> Result<TraceEvent, String> {
    let [time, app, pid, op, args @ ..] = tokens else {
        return Err(format!("expected 'TIME APP PID OP ARGS...', found {} fields", tokens.len()));
    };
    let time_ns = seconds(time, "time")?;
    let app: Arc<str> = String::from_utf8(unescape(app).map_err(|e| format!("app: {e}"))?)
        .map_err(|_| "app name is not valid UTF-8".to_string())?
        .into();
    let pid = number(pid, "pid")?;
    let op = utf8(op)?;
    let arity = |n: usize| {
        if args.len() == n {
            Ok(())
        } else {
            Err(format!("'{op}' takes {n} argument(s), found {}", args.len()))
        }
    };
    let kind = match op {
        "open" | "create" | "fsync" | "fdatasync" | "unlink" | "mkdir" | "rmdir" | "close" => {
            arity(1)?;
            let p = path(&args[0])?;
            match op {
                "open" => EventKind::Open { path: p },
                "create" => EventKind::Create { path: p },
                "fsync" => EventKind::Fsync { path: p },
                "fdatasync" => EventKind::Fdatasync { path: p },
                "unlink" => EventKind::Unlink { path: p },
                "mkdir" => EventKind::Mkdir { path: p },
                "rmdir" => EventKind::Rmdir { path: p },
                _ => EventKind::Close { path: p },
            }
        }
        "read" | "write" => {
            arity(3)?;
            let (p, offset, len) = (path(&args[0])?, number(&args[1], "offset")?, number(&args[2], "length")?);
            if op == "read" {
                EventKind::Read { path: p, offset, len }
            } else {
                EventKind::Write { path: p, offset, len }
            }
        }
        "truncate" => {
            arity(2)?;
            EventKind::Truncate { path: path(&args[0])?, size: number(&args[1], "size")? }
        }
        "rename" | "link" => {
            arity(2)?;
            let (from, to) = (path(&args[0])?, path(&args[1])?);
            if op == "rename" {
                EventKind::Rename { from, to }
            } else {
                EventKind::Link { from, to }
            }
        }
        "tap" | "drag" => {
            arity(1)?;
            let input = if op == "tap" { InputKind::Tap } else { InputKind::Drag };
            EventKind::Input { input, duration_ns: seconds(&args[0], "duration")? }
        }
        "launch" | "foreground" | "background" | "exit" => {
            arity(0)?;
            match op {
                "launch" => EventKind::Launch,
                "foreground" => EventKind::Foreground,
                "background" => EventKind::Background,
                _ => EventKind::Exit,
            }
        }
        "battery" => {
            arity(1)?;
            let percent: u8 = number(&args[0], "battery level")?;
            if percent > MAX_BATTERY_PERCENT {
                return Err(format!("battery level {percent} is above {MAX_BATTERY_PERCENT}"));
            }
            EventKind::Battery { percent }
        }
        "screen" => {
            arity(1)?;
            match args[0].as_slice() {
                b"on" => EventKind::Screen { on: true },
                b"off" => EventKind::Screen { on: false },
                other => return Err(format!("screen takes 'on' or 'off', found '{}'", String::from_utf8_lossy(other))),
            }
        }
        other => return Err(format!("unknown operation '{other}'")),
    };
    Ok(TraceEvent { time_ns, app, pid, kind })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Position;

    fn read_all(text: &str) -> Result<Vec<TraceEvent>, TraceError> {
        TextReader::new(text.as_bytes()).collect()
    }

    #[test]
    fn reads_a_hand_written_trace() {
        let events = read_all(
            "# recorded by hand\nmcfs-trace 1\n\n0.5 com.twitter 42 launch\n\
             1.000000001 com.twitter 42 write /data/t.db 4096 512 # a page\n\
             2 com.twitter 42 rename /data/a\\x20b /data/c\n3 - 0 tap 0.08\n4 - 0 screen off\n",
        )
        .unwrap();
        assert_eq!(events.len(), 5);
        assert_eq!(events[0].time_ns, 500_000_000);
        assert_eq!(events[1].kind, EventKind::Write { path: b"/data/t.db"[..].into(), offset: 4096, len: 512 });
        assert_eq!(events[2].kind, EventKind::Rename { from: b"/data/a b"[..].into(), to: b"/data/c"[..].into() });
        assert_eq!(events[3].kind, EventKind::Input { input: InputKind::Tap, duration_ns: 80_000_000 });
        assert_eq!(events[4].kind, EventKind::Screen { on: false });
    }

    #[test]
    fn bad_lines_report_their_number_and_reason() {
        let cases = [
            ("mcfs-trace 3\n", 1, "unsupported"),
            ("mcfs-trace +2\n", 1, "unsupported"),
            ("mcfs-trace 1\n1 a 1 link /x /y\n", 2, "needs mcfs-trace version 2"),
            ("hello\n", 1, "missing header"),
            ("", 1, "missing header"),
            ("mcfs-trace 1\n1 a 1 open /x\n1 a 1 write /x 1\n", 3, "takes 3"),
            ("mcfs-trace 2\n1 a 1 link /x\n", 2, "takes 2"),
            ("mcfs-trace 1\n1 a 1 frobnicate\n", 2, "unknown operation"),
            ("mcfs-trace 1\n1 a -1 exit\n", 2, "pid"),
            ("mcfs-trace 1\n1 a 1 battery 101\n", 2, "above 100"),
            ("mcfs-trace 1\n#c\n1 a 1 open /x\\q\n", 3, "bad escape"),
            ("mcfs-trace 1\n1 a 99999999999 exit\n", 2, "out of range"),
        ];
        for (text, line, reason) in cases {
            let err = read_all(text).unwrap_err();
            assert_eq!(err.position, Position::Line(line), "{text:?}: {err}");
            assert!(err.to_string().contains(reason), "{text:?}: {err}");
        }
    }

    #[test]
    fn reading_stops_after_the_first_error() {
        let mut reader = TextReader::new("mcfs-trace 1\nbad\n1 a 1 exit\n".as_bytes());
        assert!(reader.next().unwrap().is_err());
        assert!(reader.next().is_none());
    }
}
