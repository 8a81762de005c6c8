//! The compact binary form of a trace: magic, version, then a stream of records.
//!
//! Layout (docs/TRACE_FORMAT.md has the full table): the 8 bytes `MCFSTRAC`, the version as a LEB128 varint,
//! then records that each start with a tag byte. Tag `0x01` defines the next entry of a string table (apps
//! and paths share it); event records refer to strings by index, store time as the wrapping difference from
//! the previous event and every number as a varint. The writer defines each string once, just before its
//! first use, so the output is a deterministic function of the event sequence. Both sides stream: memory is
//! bounded by the string table, never by the number of events.

use std::collections::HashMap;
use std::io::{self, ErrorKind, Read, Write};
use std::sync::Arc;

use crate::error::{Position, TraceError};
use crate::trace::{
    check_kind_in_version, version_is_known, EventKind, InputKind, PathBytes, TraceEvent, FORMAT_VERSION,
    MAX_BATTERY_PERCENT, OLDEST_FORMAT_VERSION,
};

/// First bytes of every binary trace.
pub const MAGIC: &[u8; 8] = b"MCFSTRAC";
/// Longest string (path or app) a reader accepts, so a corrupt length cannot exhaust memory.
pub const MAX_STRING_BYTES: u64 = 1 << 20;

const TAG_STRING: u8 = 0x01;

/// Event tags, one per operation.
mod tag {
    pub const OPEN: u8 = 0x10;
    pub const CREATE: u8 = 0x11;
    pub const READ: u8 = 0x12;
    pub const WRITE: u8 = 0x13;
    pub const FSYNC: u8 = 0x14;
    pub const FDATASYNC: u8 = 0x15;
    pub const TRUNCATE: u8 = 0x16;
    pub const UNLINK: u8 = 0x17;
    pub const RENAME: u8 = 0x18;
    pub const MKDIR: u8 = 0x19;
    pub const RMDIR: u8 = 0x1a;
    pub const CLOSE: u8 = 0x1b;
    /// Version 2 on.
    pub const LINK: u8 = 0x1c;
    pub const TAP: u8 = 0x20;
    pub const DRAG: u8 = 0x21;
    pub const LAUNCH: u8 = 0x30;
    pub const FOREGROUND: u8 = 0x31;
    pub const BACKGROUND: u8 = 0x32;
    pub const EXIT: u8 = 0x33;
    pub const BATTERY: u8 = 0x40;
    pub const SCREEN: u8 = 0x41;

    /// Whether `t` starts an event record (checked before its body, so a bad tag is named as such).
    pub fn is_event(t: u8) -> bool {
        matches!(t, OPEN..=LINK | TAP..=DRAG | LAUNCH..=EXIT | BATTERY..=SCREEN)
    }
}

fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// An event's tag, its path fields and its number fields, in on-disk order.
type Encoding<'a> = (u8, [Option<&'a [u8]>; 2], [Option<u64>; 2]);

/// Writes events in the binary form. Wrap the output in a `BufWriter`: records are written one by one.
pub struct BinaryWriter<W: Write> {
    out: W,
    strings: HashMap<Vec<u8>, u64>,
    last_time_ns: u64,
    record: Vec<u8>,
}

impl<W: Write> BinaryWriter<W> {
    /// Starts a trace: writes magic and version.
    pub fn new(mut out: W) -> io::Result<Self> {
        let mut header = MAGIC.to_vec();
        put_varint(&mut header, u64::from(FORMAT_VERSION));
        out.write_all(&header)?;
        Ok(BinaryWriter { out, strings: HashMap::new(), last_time_ns: 0, record: Vec::with_capacity(64) })
    }

    /// Index of `s` in the string table; defines it (into `self.record`, before the event) when new.
    fn string_id(&mut self, s: &[u8], defs: &mut Vec<u8>) -> u64 {
        if let Some(&id) = self.strings.get(s) {
            return id;
        }
        let id = self.strings.len() as u64;
        defs.push(TAG_STRING);
        put_varint(defs, s.len() as u64);
        defs.extend_from_slice(s);
        self.strings.insert(s.to_vec(), id);
        id
    }

    pub fn write_event(&mut self, event: &TraceEvent) -> io::Result<()> {
        let mut defs = std::mem::take(&mut self.record);
        defs.clear();
        let mut body = Vec::with_capacity(32);
        put_varint(&mut body, event.time_ns.wrapping_sub(self.last_time_ns));
        let app = self.string_id(event.app.as_bytes(), &mut defs);
        put_varint(&mut body, app);
        put_varint(&mut body, u64::from(event.pid));
        let tag = self.encode_kind(&event.kind, &mut defs, &mut body);
        defs.push(tag);
        defs.extend_from_slice(&body);
        let result = self.out.write_all(&defs);
        self.last_time_ns = event.time_ns;
        self.record = defs;
        result
    }

    /// Appends the operation's arguments to `body` and returns its tag.
    fn encode_kind(&mut self, kind: &EventKind, defs: &mut Vec<u8>, body: &mut Vec<u8>) -> u8 {
        let (tag, paths, numbers): Encoding<'_> = match kind {
            EventKind::Open { path } => (tag::OPEN, [Some(path), None], [None, None]),
            EventKind::Create { path } => (tag::CREATE, [Some(path), None], [None, None]),
            EventKind::Fsync { path } => (tag::FSYNC, [Some(path), None], [None, None]),
            EventKind::Fdatasync { path } => (tag::FDATASYNC, [Some(path), None], [None, None]),
            EventKind::Unlink { path } => (tag::UNLINK, [Some(path), None], [None, None]),
            EventKind::Mkdir { path } => (tag::MKDIR, [Some(path), None], [None, None]),
            EventKind::Rmdir { path } => (tag::RMDIR, [Some(path), None], [None, None]),
            EventKind::Close { path } => (tag::CLOSE, [Some(path), None], [None, None]),
            EventKind::Read { path, offset, len } => (tag::READ, [Some(path), None], [Some(*offset), Some(*len)]),
            EventKind::Write { path, offset, len } => (tag::WRITE, [Some(path), None], [Some(*offset), Some(*len)]),
            EventKind::Truncate { path, size } => (tag::TRUNCATE, [Some(path), None], [Some(*size), None]),
            EventKind::Rename { from, to } => (tag::RENAME, [Some(from), Some(to)], [None, None]),
            EventKind::Link { from, to } => (tag::LINK, [Some(from), Some(to)], [None, None]),
            EventKind::Input { input: InputKind::Tap, duration_ns } => {
                (tag::TAP, [None, None], [Some(*duration_ns), None])
            }
            EventKind::Input { input: InputKind::Drag, duration_ns } => {
                (tag::DRAG, [None, None], [Some(*duration_ns), None])
            }
            EventKind::Launch => (tag::LAUNCH, [None, None], [None, None]),
            EventKind::Foreground => (tag::FOREGROUND, [None, None], [None, None]),
            EventKind::Background => (tag::BACKGROUND, [None, None], [None, None]),
            EventKind::Exit => (tag::EXIT, [None, None], [None, None]),
            EventKind::Battery { percent } => (tag::BATTERY, [None, None], [Some(u64::from(*percent)), None]),
            EventKind::Screen { on } => (tag::SCREEN, [None, None], [Some(u64::from(*on)), None]),
        };
        // Field order on disk: paths first, then numbers (see docs/TRACE_FORMAT.md).
        for path in paths.into_iter().flatten() {
            let id = self.string_id(path, defs);
            put_varint(body, id);
        }
        for number in numbers.into_iter().flatten() {
            put_varint(body, number);
        }
        tag
    }

    /// Flushes and hands back the output.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Bytes a reader takes from its input at a time.
const READ_CHUNK: usize = 64 << 10;

/// Streams events out of a binary trace.
pub struct BinaryReader<R: Read> {
    input: R,
    /// Input not decoded yet is `chunk[at..end]`: records are decoded from
    /// this buffer a byte at a time, not through a `read` call per byte.
    chunk: Box<[u8]>,
    at: usize,
    end: usize,
    /// Input offset of `chunk[0]`; `chunk_offset + at` is the position reported in errors.
    chunk_offset: u64,
    strings: Vec<PathBytes>,
    /// The string-table index and text of the last event's app: consecutive events mostly come from one
    /// app, whose name is then shared without checking its UTF-8 again.
    last_app: Option<(u64, Arc<str>)>,
    last_time_ns: u64,
    /// The version the header gave; `None` until it is read.
    version: Option<u32>,
    done: bool,
}

/// Why a record could not be decoded; turned into a [`TraceError`] at the record's start.
enum Bad {
    Io(io::Error),
    Msg(String),
}

impl From<String> for Bad {
    fn from(s: String) -> Self {
        Bad::Msg(s)
    }
}

impl<R: Read> BinaryReader<R> {
    pub fn new(input: R) -> Self {
        BinaryReader {
            input,
            chunk: vec![0; READ_CHUNK].into_boxed_slice(),
            at: 0,
            end: 0,
            chunk_offset: 0,
            strings: Vec::new(),
            last_app: None,
            last_time_ns: 0,
            version: None,
            done: false,
        }
    }

    /// Bytes consumed so far.
    fn offset(&self) -> u64 {
        self.chunk_offset + self.at as u64
    }

    /// Reads the next chunk of input once all of the last one is decoded;
    /// false at the end of input.
    fn refill(&mut self) -> Result<bool, Bad> {
        self.chunk_offset += self.end as u64;
        (self.at, self.end) = (0, 0);
        loop {
            match self.input.read(&mut self.chunk) {
                Ok(n) => {
                    self.end = n;
                    return Ok(n > 0);
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(Bad::Io(e)),
            }
        }
    }

    /// One byte, or `None` at a clean end of input.
    #[inline]
    fn byte_or_end(&mut self) -> Result<Option<u8>, Bad> {
        if self.at == self.end && !self.refill()? {
            return Ok(None);
        }
        self.at += 1;
        Ok(Some(self.chunk[self.at - 1]))
    }

    fn byte(&mut self, what: &str) -> Result<u8, Bad> {
        self.byte_or_end()?.ok_or_else(|| Bad::Msg(format!("truncated record: input ends inside {what}")))
    }

    #[inline]
    fn varint(&mut self, what: &str) -> Result<u64, Bad> {
        // Fast path: up to nine bytes (63 bits, no overflow) within the chunk.
        let mut value = 0u64;
        for (i, b) in self.chunk[self.at..self.end].iter().take(9).enumerate() {
            value |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                self.at += i + 1;
                return Ok(value);
            }
        }
        self.varint_by_bytes(what)
    }

    /// A varint that crosses the chunk's end or is ten bytes long.
    #[cold]
    fn varint_by_bytes(&mut self, what: &str) -> Result<u64, Bad> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte(what)?;
            let bits = u64::from(b & 0x7f);
            if shift == 63 && bits > 1 {
                return Err(Bad::Msg(format!("{what}: varint overflows 64 bits")));
            }
            value |= bits << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(Bad::Msg(format!("{what}: varint longer than 10 bytes")))
    }

    fn string(&mut self, what: &str) -> Result<PathBytes, Bad> {
        let id = self.varint(what)?;
        self.defined(id, what).cloned()
    }

    fn defined(&self, id: u64, what: &str) -> Result<&PathBytes, Bad> {
        usize::try_from(id).ok().and_then(|i| self.strings.get(i)).ok_or_else(|| {
            Bad::Msg(format!("{what}: string #{id} is not defined (table has {} entries)", self.strings.len()))
        })
    }

    fn app(&mut self) -> Result<Arc<str>, Bad> {
        let id = self.varint("app")?;
        if let Some((last, app)) = &self.last_app {
            if *last == id {
                return Ok(app.clone());
            }
        }
        let app: Arc<str> = std::str::from_utf8(self.defined(id, "app")?)
            .map_err(|_| Bad::Msg("app name is not valid UTF-8".into()))?
            .into();
        self.last_app = Some((id, app.clone()));
        Ok(app)
    }

    fn define_string(&mut self) -> Result<(), Bad> {
        let len = self.varint("string length")?;
        if len > MAX_STRING_BYTES {
            return Err(Bad::Msg(format!("string length {len} exceeds the limit of {MAX_STRING_BYTES} bytes")));
        }
        let len = len as usize;
        let mut bytes = Vec::with_capacity(len);
        while bytes.len() < len {
            if self.at == self.end && !self.refill()? {
                let got = bytes.len();
                return Err(Bad::Msg(format!("truncated record: string of {len} bytes has only {got}")));
            }
            let take = (len - bytes.len()).min(self.end - self.at);
            bytes.extend_from_slice(&self.chunk[self.at..self.at + take]);
            self.at += take;
        }
        self.strings.push(bytes.into());
        Ok(())
    }

    fn check_header(&mut self) -> Result<u32, Bad> {
        let mut magic = [0u8; 8];
        for slot in magic.iter_mut() {
            *slot = self.byte_or_end()?.ok_or_else(|| Bad::Msg("input too short for the magic".into()))?;
        }
        if &magic != MAGIC {
            return Err(Bad::Msg("not an mcfs binary trace (bad magic)".into()));
        }
        let version = self.varint("version")?;
        if !version_is_known(version) {
            return Err(Bad::Msg(format!(
                "unsupported binary trace version {version} (this reader reads versions {OLDEST_FORMAT_VERSION} to \
                 {FORMAT_VERSION})"
            )));
        }
        Ok(version as u32)
    }

    /// Reads records until the next event; `None` at a clean end of input (between records).
    fn read_next(&mut self) -> Result<Option<TraceEvent>, Bad> {
        let version = match self.version {
            Some(v) => v,
            None => {
                let v = self.check_header()?;
                *self.version.insert(v)
            }
        };
        loop {
            let Some(tag) = self.byte_or_end()? else { return Ok(None) };
            if tag == TAG_STRING {
                self.define_string()?;
                continue;
            }
            let event = self.event(tag)?;
            check_kind_in_version(&event.kind, version)?;
            return Ok(Some(event));
        }
    }

    fn event(&mut self, tag: u8) -> Result<TraceEvent, Bad> {
        if !tag::is_event(tag) {
            return Err(Bad::Msg(format!("unknown record tag 0x{tag:02x}")));
        }
        let delta = self.varint("time")?;
        let time_ns = self.last_time_ns.wrapping_add(delta);
        let app = self.app()?;
        let pid = u32::try_from(self.varint("pid")?).map_err(|_| Bad::Msg("pid does not fit in 32 bits".into()))?;
        let kind = match tag {
            tag::OPEN => EventKind::Open { path: self.string("path")? },
            tag::CREATE => EventKind::Create { path: self.string("path")? },
            tag::FSYNC => EventKind::Fsync { path: self.string("path")? },
            tag::FDATASYNC => EventKind::Fdatasync { path: self.string("path")? },
            tag::UNLINK => EventKind::Unlink { path: self.string("path")? },
            tag::MKDIR => EventKind::Mkdir { path: self.string("path")? },
            tag::RMDIR => EventKind::Rmdir { path: self.string("path")? },
            tag::CLOSE => EventKind::Close { path: self.string("path")? },
            tag::READ => EventKind::Read {
                path: self.string("path")?,
                offset: self.varint("offset")?,
                len: self.varint("length")?,
            },
            tag::WRITE => EventKind::Write {
                path: self.string("path")?,
                offset: self.varint("offset")?,
                len: self.varint("length")?,
            },
            tag::TRUNCATE => EventKind::Truncate { path: self.string("path")?, size: self.varint("size")? },
            tag::RENAME => EventKind::Rename { from: self.string("source path")?, to: self.string("target path")? },
            tag::LINK => EventKind::Link { from: self.string("source path")?, to: self.string("target path")? },
            tag::TAP => EventKind::Input { input: InputKind::Tap, duration_ns: self.varint("duration")? },
            tag::DRAG => EventKind::Input { input: InputKind::Drag, duration_ns: self.varint("duration")? },
            tag::LAUNCH => EventKind::Launch,
            tag::FOREGROUND => EventKind::Foreground,
            tag::BACKGROUND => EventKind::Background,
            tag::EXIT => EventKind::Exit,
            tag::BATTERY => match self.varint("battery level")? {
                p if p <= u64::from(MAX_BATTERY_PERCENT) => EventKind::Battery { percent: p as u8 },
                p => return Err(Bad::Msg(format!("battery level {p} is above {MAX_BATTERY_PERCENT}"))),
            },
            tag::SCREEN => match self.varint("screen state")? {
                0 => EventKind::Screen { on: false },
                1 => EventKind::Screen { on: true },
                s => return Err(Bad::Msg(format!("screen state {s} is neither 0 (off) nor 1 (on)"))),
            },
            other => return Err(Bad::Msg(format!("unknown record tag 0x{other:02x}"))),
        };
        self.last_time_ns = time_ns;
        Ok(TraceEvent { time_ns, app, pid, kind })
    }
}

impl<R: Read> Iterator for BinaryReader<R> {
    type Item = Result<TraceEvent, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let record_start = self.offset();
        let result = match self.read_next() {
            Ok(Some(event)) => return Some(Ok(event)),
            Ok(None) => None,
            Err(Bad::Io(e)) => Some(Err(TraceError::io(Position::Byte(record_start), e))),
            Err(Bad::Msg(m)) => Some(Err(TraceError::at(Position::Byte(record_start), m))),
        };
        self.done = true;
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(events: &[TraceEvent]) -> Vec<u8> {
        let mut w = BinaryWriter::new(Vec::new()).unwrap();
        events.iter().for_each(|e| w.write_event(e).unwrap());
        w.finish().unwrap()
    }

    fn write(t: u64, path: &[u8]) -> TraceEvent {
        TraceEvent {
            time_ns: t,
            app: "com.app".into(),
            pid: 7,
            kind: EventKind::Write { path: path.into(), offset: 4096, len: 512 },
        }
    }

    #[test]
    fn strings_are_defined_once_and_records_are_small() {
        let events = [write(1_000, b"/d/a.db"), write(2_000, b"/d/a.db"), write(1_500, b"/d/b.db")];
        let bytes = encode(&events);
        let decoded: Vec<_> = BinaryReader::new(bytes.as_slice()).collect::<Result<_, _>>().unwrap();
        assert_eq!(decoded, events);
        // header 9 + two string defs for the first event + one per later new path + three small events.
        let strings = 3 + "com.app".len() + "/d/a.db".len() + 2 * 2 + "/d/b.db".len();
        assert!(bytes.len() <= 9 + strings + 3 * 9 + 10, "{} bytes", bytes.len());
    }

    #[test]
    fn truncation_and_bad_tags_report_the_record_offset() {
        let bytes = encode(&[write(1, b"/x")]);
        let err = BinaryReader::new(&bytes[..bytes.len() - 1]).find_map(Result::err).unwrap();
        assert!(err.reason.contains("truncated"), "{err}");
        let mut bad = bytes.clone();
        bad.push(0x7f);
        let err = BinaryReader::new(bad.as_slice()).find_map(Result::err).unwrap();
        assert_eq!(err.position, Position::Byte(bytes.len() as u64));
        assert!(err.reason.contains("unknown record tag 0x7f"), "{err}");
        let err = BinaryReader::new(&b"MCFSTRAC\x03"[..]).find_map(Result::err).unwrap();
        assert!(err.reason.contains("version 3"), "{err}");
        let err = BinaryReader::new(&b"NOTATRACE"[..]).find_map(Result::err).unwrap();
        assert!(err.reason.contains("magic"), "{err}");
    }

    /// Hands out at most `step` bytes per call, and an `Interrupted` error before each.
    struct Trickle<'a> {
        rest: &'a [u8],
        step: usize,
        interrupt: bool,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.interrupt = !self.interrupt;
            if self.interrupt {
                return Err(ErrorKind::Interrupted.into());
            }
            let n = self.step.min(buf.len()).min(self.rest.len());
            buf[..n].copy_from_slice(&self.rest[..n]);
            self.rest = &self.rest[n..];
            Ok(n)
        }
    }

    #[test]
    fn records_and_strings_across_read_chunks_decode_alike() {
        let long = |i: usize| format!("/d/{i}/{}", "x".repeat(700 + i)).into_bytes();
        let mut events: Vec<_> = (0..300).map(|i| write(i as u64, &long(i % 200))).collect();
        // Ten-byte varints (past the nine-byte fast path): the largest time and offset.
        events[150].time_ns = u64::MAX;
        events[150].kind = EventKind::Write { path: long(7).into(), offset: u64::MAX, len: 1 << 63 };
        let bytes = encode(&events);
        assert!(bytes.len() > 2 * READ_CHUNK, "{} bytes span several chunks", bytes.len());
        for step in [1, 7, READ_CHUNK - 1, READ_CHUNK] {
            let input = Trickle { rest: &bytes, step, interrupt: false };
            let decoded: Vec<_> = BinaryReader::new(input).collect::<Result<_, _>>().unwrap();
            assert_eq!(decoded, events, "read {step} bytes at a time");
        }
        let last_record = encode(&events[..299]).len();
        let cut = Trickle { rest: &bytes[..bytes.len() - 1], step: 5000, interrupt: false };
        let err = BinaryReader::new(cut).find_map(Result::err).unwrap();
        assert!(err.reason.contains("truncated"), "{err}");
        assert_eq!(err.position, Position::Byte(last_record as u64));
    }

    #[test]
    fn version_1_traces_still_read_but_may_not_hold_links() {
        let link = TraceEvent {
            time_ns: 5,
            app: "git".into(),
            pid: 1,
            kind: EventKind::Link { from: b"/a"[..].into(), to: b"/b"[..].into() },
        };
        let mut bytes = encode(&[write(1, b"/a"), link.clone()]);
        assert_eq!(bytes[MAGIC.len()], FORMAT_VERSION as u8);
        let back: Vec<_> = BinaryReader::new(bytes.as_slice()).collect::<Result<_, _>>().unwrap();
        assert_eq!(back[1], link);
        bytes[MAGIC.len()] = 1;
        let mut reader = BinaryReader::new(bytes.as_slice());
        assert_eq!(reader.next().unwrap().unwrap(), write(1, b"/a"), "a version 1 event reads");
        let err = reader.next().unwrap().unwrap_err();
        assert!(err.reason.contains("'link' needs mcfs-trace version 2"), "{err}");
    }

    #[test]
    fn undefined_strings_and_overlong_varints_are_errors() {
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&[1, tag::EXIT, 0, 5, 0]);
        let err = BinaryReader::new(bytes.as_slice()).find_map(Result::err).unwrap();
        assert!(err.reason.contains("not defined"), "{err}");
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&[1, tag::EXIT]);
        bytes.extend_from_slice(&[0xff; 11]);
        let err = BinaryReader::new(bytes.as_slice()).find_map(Result::err).unwrap();
        assert!(err.reason.contains("varint"), "{err}");
    }
}
