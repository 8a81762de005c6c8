//! Byte format of the journal file: the transaction header (the commit record)
//! and the op records of the payload. Pure encoding and decoding, no I/O.
//!
//! Invariant: `decode_op(encode_op(op)) == op` for every op but a
//! `WriteKnown`, which holds no bytes to encode: `encode_op` and
//! `encode_op_head` refuse it, only `encode_op_extent` (for a log that keeps
//! no payload) measures it, and decoding never gives one. No input — torn,
//! corrupt or foreign — makes a decoder panic; it returns an error.

use super::JournalOp;
use crate::types::{FallocMode, FileKind};
use std::ffi::OsString;
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub const MAGIC: [u8; 8] = *b"MCFSJNL1";
/// Format 2 keeps `.mcfs/progress` valid from `Journal::open` on (see
/// `progress.rs`); recovery holds a version-2 transaction to that.
pub const VERSION: u32 = 2;
/// The format before that; its transactions are still recovered.
pub const LEGACY_VERSION: u32 = 1;
/// The header occupies the first sector; the payload starts right after it.
pub const HEADER_LEN: u64 = 512;
/// Bytes of the header that carry fields; the rest of the sector is zero.
const HEADER_FIELDS: usize = 48;
/// Every record starts with its body length as a little-endian u32.
pub const RECORD_LEN_BYTES: u64 = 4;

/// The commit record of one transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxnHeader {
    pub version: u32,
    pub seq: u64,
    pub payload_len: u64,
    pub op_count: u64,
    pub payload_crc: u32,
}

/// What the first sector of a journal file says.
#[derive(Debug, PartialEq, Eq)]
pub enum HeaderState {
    /// Never written (all zero): no commit record.
    Empty,
    /// Partly written or damaged: no valid commit record.
    Torn,
    Valid(TxnHeader),
}

/// A header that is not ours to interpret; recovery refuses to touch it.
#[derive(Debug, PartialEq, Eq)]
pub enum ForeignHeader {
    Magic([u8; 8]),
    Version(u32),
}

impl TxnHeader {
    /// Layout (little endian): magic[8] version u32, flags u32 (0), seq u64,
    /// payload_len u64, op_count u64, payload_crc u32, header_crc u32 (crc32c
    /// of bytes 0..44); zero up to `HEADER_LEN`.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_LEN as usize);
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&self.seq.to_le_bytes());
        out.extend_from_slice(&self.payload_len.to_le_bytes());
        out.extend_from_slice(&self.op_count.to_le_bytes());
        out.extend_from_slice(&self.payload_crc.to_le_bytes());
        let crc = crc32c::crc32c(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        debug_assert_eq!(out.len(), HEADER_FIELDS);
        out.resize(HEADER_LEN as usize, 0);
        out
    }

    /// Classifies the first sector of a journal file (`bytes` may be shorter
    /// than a sector; missing bytes count as zero). A torn write of our own
    /// header into a zeroed sector leaves every byte either zero or the byte
    /// we meant, so a magic with any other byte is someone else's file.
    pub fn decode(bytes: &[u8]) -> Result<HeaderState, ForeignHeader> {
        let mut sector = [0u8; HEADER_LEN as usize];
        let n = bytes.len().min(sector.len());
        sector[..n].copy_from_slice(&bytes[..n]);
        if sector.iter().all(|&b| b == 0) {
            return Ok(HeaderState::Empty);
        }
        let magic: [u8; 8] = sector[0..8].try_into().unwrap_or_default();
        if magic != MAGIC {
            let could_be_torn = magic.iter().zip(MAGIC.iter()).all(|(&b, &m)| b == 0 || b == m);
            return if could_be_torn { Ok(HeaderState::Torn) } else { Err(ForeignHeader::Magic(magic)) };
        }
        let version = le_u32(&sector[8..12]);
        if ![0, LEGACY_VERSION, VERSION].contains(&version) {
            return Err(ForeignHeader::Version(version));
        }
        let stored_crc = le_u32(&sector[44..48]);
        let well_formed = stored_crc == crc32c::crc32c(&sector[..44])
            && le_u32(&sector[12..16]) == 0
            && sector[HEADER_FIELDS..].iter().all(|&b| b == 0);
        if !well_formed {
            return Ok(HeaderState::Torn);
        }
        Ok(HeaderState::Valid(TxnHeader {
            version,
            seq: le_u64(&sector[16..24]),
            payload_len: le_u64(&sector[24..32]),
            op_count: le_u64(&sector[32..40]),
            payload_crc: le_u32(&sector[40..44]),
        }))
    }
}

fn le_u32(b: &[u8]) -> u32 {
    u32::from_le_bytes(b.try_into().unwrap_or_default())
}

fn le_u64(b: &[u8]) -> u64 {
    u64::from_le_bytes(b.try_into().unwrap_or_default())
}

// Record tags. Never renumber: they are part of the on-disk format.
const TAG_WRITE: u8 = 1;
const TAG_SET_LEN: u8 = 2;
const TAG_CREATE: u8 = 3;
const TAG_SYMLINK: u8 = 4;
const TAG_LINK: u8 = 5;
const TAG_REMOVE_FILE: u8 = 6;
const TAG_REMOVE_DIR: u8 = 7;
const TAG_RENAME: u8 = 8;
const TAG_SET_OWNER: u8 = 9;
const TAG_SET_PERM: u8 = 10;
const TAG_SET_TIMES: u8 = 11;
const TAG_SET_XATTR: u8 = 12;
const TAG_REMOVE_XATTR: u8 = 13;
const TAG_FALLOCATE: u8 = 14;

/// Appends one record (`len u32 | tag u8 | fields`) to `out`. Variable-size
/// fields are `len u32 | bytes`; times are `secs i64 | nanos u32` from the
/// epoch. Fails with `EFBIG` if a field or the record exceeds 4 GiB.
pub fn encode_op(op: &JournalOp, out: &mut Vec<u8>) -> io::Result<()> {
    let tail = encode_op_head(op, out)?;
    out.extend_from_slice(tail);
    Ok(())
}

/// The bytes a record of `op` ends with that `encode_op_head` leaves out: a
/// write's data (its last field), nothing for other ops; `None` for a
/// `WriteKnown`, which does not hold them.
pub fn record_tail(op: &JournalOp) -> Option<&[u8]> {
    match op {
        JournalOp::Write { data, .. } => Some(data),
        JournalOp::WriteKnown { .. } => None,
        _ => Some(&[]),
    }
}

/// Appends the record of `op` to `out` without its `record_tail`, which the
/// caller writes right after it (the journal hands a write's data to the store
/// as it is instead of copying it into the record buffer); the length prefix
/// counts the tail. Returns the tail. Errors as `encode_op`, and `EINVAL`
/// for a `WriteKnown`: its record cannot be written whole.
pub fn encode_op_head<'op>(op: &'op JournalOp, out: &mut Vec<u8>) -> io::Result<&'op [u8]> {
    let tail = record_tail(op).ok_or_else(|| {
        super::journal_error(libc::EINVAL, format!("{op}: holds no bytes, for a journal that keeps its payload"))
    })?;
    encode_op_extent(op, out)?;
    Ok(tail)
}

/// Appends the record of `op` to `out` without its tail, as `encode_op_head`
/// does, and returns the tail's length: all a journal that keeps no payload
/// needs (`Backend::keeps_journal_payload`), which writes only the records'
/// extent. A `WriteKnown` measures as a `Write` of its bytes.
pub fn encode_op_extent(op: &JournalOp, out: &mut Vec<u8>) -> io::Result<u64> {
    let start = out.len();
    out.extend_from_slice(&[0; RECORD_LEN_BYTES as usize]);
    let mut w = FieldWriter { out, too_big: false };
    match op {
        JournalOp::Write { path, offset, .. } | JournalOp::WriteKnown { path, offset, .. } => {
            w.tag(TAG_WRITE).path(path).u64(*offset).len(op.data_len());
        }
        JournalOp::SetLen { path, size } => {
            w.tag(TAG_SET_LEN).path(path).u64(*size);
        }
        JournalOp::Create { path, kind, perm, rdev } => {
            w.tag(TAG_CREATE).path(path).tag(kind_code(*kind)).u32(*perm).u32(*rdev);
        }
        JournalOp::Symlink { path, target } => {
            w.tag(TAG_SYMLINK).path(path).bytes(target.as_bytes());
        }
        JournalOp::Link { existing, new } => {
            w.tag(TAG_LINK).path(existing).path(new);
        }
        JournalOp::RemoveFile { path } => {
            w.tag(TAG_REMOVE_FILE).path(path);
        }
        JournalOp::RemoveDir { path } => {
            w.tag(TAG_REMOVE_DIR).path(path);
        }
        JournalOp::Rename { from, to } => {
            w.tag(TAG_RENAME).path(from).path(to);
        }
        JournalOp::SetOwner { path, uid, gid } => {
            w.tag(TAG_SET_OWNER).path(path).u32(*uid).u32(*gid);
        }
        JournalOp::SetPerm { path, perm } => {
            w.tag(TAG_SET_PERM).path(path).u32(*perm);
        }
        JournalOp::SetTimes { path, atime, mtime } => {
            w.tag(TAG_SET_TIMES).path(path).time(*atime).time(*mtime);
        }
        JournalOp::SetXattr { path, name, value } => {
            w.tag(TAG_SET_XATTR).path(path).bytes(name.as_bytes()).bytes(value);
        }
        JournalOp::RemoveXattr { path, name } => {
            w.tag(TAG_REMOVE_XATTR).path(path).bytes(name.as_bytes());
        }
        JournalOp::Fallocate { path, mode, offset, len } => {
            w.tag(TAG_FALLOCATE).path(path).tag(falloc_code(*mode)).u64(*offset).u64(*len);
        }
    }
    let too_big = w.too_big;
    let tail_len = op.data_len();
    let body_len = u32::try_from((out.len() - start) as u64 - RECORD_LEN_BYTES + tail_len);
    match body_len {
        Ok(len) if !too_big => {
            out[start..start + RECORD_LEN_BYTES as usize].copy_from_slice(&len.to_le_bytes());
            Ok(tail_len)
        }
        _ => {
            out.truncate(start);
            Err(io::Error::from_raw_os_error(libc::EFBIG))
        }
    }
}

struct FieldWriter<'a> {
    out: &'a mut Vec<u8>,
    too_big: bool,
}

impl FieldWriter<'_> {
    fn tag(&mut self, v: u8) -> &mut Self {
        self.out.push(v);
        self
    }
    fn u32(&mut self, v: u32) -> &mut Self {
        self.out.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u64(&mut self, v: u64) -> &mut Self {
        self.out.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn bytes(&mut self, v: &[u8]) -> &mut Self {
        self.len(v.len() as u64);
        if !self.too_big {
            self.out.extend_from_slice(v);
        }
        self
    }
    /// The length prefix of a variable-size field of `len` bytes alone.
    fn len(&mut self, len: u64) -> &mut Self {
        match u32::try_from(len) {
            Ok(len) => self.u32(len),
            Err(_) => {
                self.too_big = true;
                self
            }
        }
    }
    fn path(&mut self, p: &std::path::Path) -> &mut Self {
        self.bytes(p.as_os_str().as_bytes())
    }
    fn time(&mut self, t: SystemTime) -> &mut Self {
        let (secs, nanos) = match t.duration_since(UNIX_EPOCH) {
            Ok(d) => (i64::try_from(d.as_secs()).ok(), d.subsec_nanos()),
            Err(before) => {
                let d = before.duration();
                let whole = i64::try_from(d.as_secs()).ok();
                match d.subsec_nanos() {
                    0 => (whole.map(|s| -s), 0),
                    n => (whole.and_then(|s| (-s).checked_sub(1)), 1_000_000_000 - n),
                }
            }
        };
        match secs {
            Some(s) => {
                self.out.extend_from_slice(&s.to_le_bytes());
                self.u32(nanos);
            }
            None => self.too_big = true,
        }
        self
    }
}

fn kind_code(kind: FileKind) -> u8 {
    match kind {
        FileKind::File => 1,
        FileKind::Dir => 2,
        FileKind::Symlink => 3,
        FileKind::Fifo => 4,
        FileKind::Socket => 5,
        FileKind::CharDev => 6,
        FileKind::BlockDev => 7,
    }
}

fn kind_from_code(code: u8) -> Option<FileKind> {
    Some(match code {
        1 => FileKind::File,
        2 => FileKind::Dir,
        3 => FileKind::Symlink,
        4 => FileKind::Fifo,
        5 => FileKind::Socket,
        6 => FileKind::CharDev,
        7 => FileKind::BlockDev,
        _ => return None,
    })
}

fn falloc_code(mode: FallocMode) -> u8 {
    match mode {
        FallocMode::Allocate { keep_size: false } => 1,
        FallocMode::Allocate { keep_size: true } => 2,
        FallocMode::PunchHole => 3,
        FallocMode::ZeroRange { keep_size: false } => 4,
        FallocMode::ZeroRange { keep_size: true } => 5,
    }
}

fn falloc_from_code(code: u8) -> Option<FallocMode> {
    Some(match code {
        1 => FallocMode::Allocate { keep_size: false },
        2 => FallocMode::Allocate { keep_size: true },
        3 => FallocMode::PunchHole,
        4 => FallocMode::ZeroRange { keep_size: false },
        5 => FallocMode::ZeroRange { keep_size: true },
        _ => return None,
    })
}

/// Decodes a record body (the bytes after its length field). The error says
/// what is wrong with the record.
pub fn decode_op(body: &[u8]) -> Result<JournalOp, String> {
    let mut r = FieldReader { body, pos: 0 };
    let tag = r.u8()?;
    let op = match tag {
        TAG_WRITE => JournalOp::Write { path: r.path()?, offset: r.u64()?, data: r.bytes()?.to_vec() },
        TAG_SET_LEN => JournalOp::SetLen { path: r.path()?, size: r.u64()? },
        TAG_CREATE => {
            let path = r.path()?;
            let code = r.u8()?;
            let kind = kind_from_code(code).ok_or_else(|| format!("unknown file kind {code}"))?;
            JournalOp::Create { path, kind, perm: r.u32()?, rdev: r.u32()? }
        }
        TAG_SYMLINK => JournalOp::Symlink { path: r.path()?, target: r.os()? },
        TAG_LINK => JournalOp::Link { existing: r.path()?, new: r.path()? },
        TAG_REMOVE_FILE => JournalOp::RemoveFile { path: r.path()? },
        TAG_REMOVE_DIR => JournalOp::RemoveDir { path: r.path()? },
        TAG_RENAME => JournalOp::Rename { from: r.path()?, to: r.path()? },
        TAG_SET_OWNER => JournalOp::SetOwner { path: r.path()?, uid: r.u32()?, gid: r.u32()? },
        TAG_SET_PERM => JournalOp::SetPerm { path: r.path()?, perm: r.u32()? },
        TAG_SET_TIMES => JournalOp::SetTimes { path: r.path()?, atime: r.time()?, mtime: r.time()? },
        TAG_SET_XATTR => JournalOp::SetXattr { path: r.path()?, name: r.os()?, value: r.bytes()?.to_vec() },
        TAG_REMOVE_XATTR => JournalOp::RemoveXattr { path: r.path()?, name: r.os()? },
        TAG_FALLOCATE => {
            let path = r.path()?;
            let code = r.u8()?;
            let mode = falloc_from_code(code).ok_or_else(|| format!("unknown fallocate mode {code}"))?;
            JournalOp::Fallocate { path, mode, offset: r.u64()?, len: r.u64()? }
        }
        other => return Err(format!("unknown op tag {other}")),
    };
    if r.pos != body.len() {
        return Err(format!("{} trailing bytes after a {} record", body.len() - r.pos, op.name()));
    }
    Ok(op)
}

struct FieldReader<'a> {
    body: &'a [u8],
    pos: usize,
}

impl<'a> FieldReader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.body.len());
        let end = end.ok_or_else(|| format!("field of {n} bytes at {} overruns the record", self.pos))?;
        let out = &self.body[self.pos..end];
        self.pos = end;
        Ok(out)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(le_u32(self.take(4)?))
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(le_u64(self.take(8)?))
    }
    fn bytes(&mut self) -> Result<&'a [u8], String> {
        let len = self.u32()? as usize;
        self.take(len)
    }
    fn os(&mut self) -> Result<OsString, String> {
        Ok(OsString::from_vec(self.bytes()?.to_vec()))
    }
    fn path(&mut self) -> Result<PathBuf, String> {
        Ok(PathBuf::from(self.os()?))
    }
    fn time(&mut self) -> Result<SystemTime, String> {
        let secs = i64::from_le_bytes(self.take(8)?.try_into().unwrap_or_default());
        let nanos = self.u32()?;
        if nanos >= 1_000_000_000 {
            return Err(format!("time with {nanos} nanoseconds"));
        }
        let whole = if secs >= 0 {
            UNIX_EPOCH.checked_add(Duration::from_secs(secs.unsigned_abs()))
        } else {
            UNIX_EPOCH.checked_sub(Duration::from_secs(secs.unsigned_abs()))
        };
        whole
            .and_then(|t| t.checked_add(Duration::from_nanos(u64::from(nanos))))
            .ok_or_else(|| format!("time {secs}s out of range"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    fn non_utf8(prefix: &str) -> PathBuf {
        let mut v = prefix.as_bytes().to_vec();
        v.extend_from_slice(&[0xff, 0xfe, b'/', 0x80, b'x']);
        PathBuf::from(OsString::from_vec(v))
    }

    pub(crate) fn sample_ops() -> Vec<JournalOp> {
        let t = |s: i64, n: u32| {
            if s >= 0 {
                UNIX_EPOCH + Duration::new(s as u64, n)
            } else {
                UNIX_EPOCH - Duration::from_secs(s.unsigned_abs()) + Duration::from_nanos(u64::from(n))
            }
        };
        vec![
            JournalOp::Write { path: "a/b".into(), offset: 1 << 40, data: (0..=255).collect() },
            JournalOp::Write { path: non_utf8("d"), offset: 0, data: vec![] },
            JournalOp::SetLen { path: "f".into(), size: u64::MAX },
            JournalOp::Create { path: "dir".into(), kind: FileKind::Dir, perm: 0o755, rdev: 0 },
            JournalOp::Create { path: "dev".into(), kind: FileKind::CharDev, perm: 0o600, rdev: 0x0103 },
            JournalOp::Symlink { path: "ln".into(), target: OsStr::from_bytes(b"../\xfftarget").to_os_string() },
            JournalOp::Link { existing: "f".into(), new: non_utf8("g") },
            JournalOp::RemoveFile { path: "f".into() },
            JournalOp::RemoveDir { path: "dir".into() },
            JournalOp::Rename { from: non_utf8("x"), to: "y".into() },
            JournalOp::SetOwner { path: "y".into(), uid: 10001, gid: u32::MAX },
            JournalOp::SetPerm { path: "y".into(), perm: 0o4755 },
            JournalOp::SetTimes { path: "y".into(), atime: t(1_700_000_000, 999_999_999), mtime: t(-5, 1) },
            JournalOp::SetTimes { path: "y".into(), atime: t(-7, 0), mtime: UNIX_EPOCH },
            JournalOp::SetXattr {
                path: "y".into(),
                name: OsStr::from_bytes(b"user.\xff").to_os_string(),
                value: vec![0, 1, 2],
            },
            JournalOp::RemoveXattr { path: "y".into(), name: "user.k".into() },
            JournalOp::Fallocate { path: "y".into(), mode: FallocMode::PunchHole, offset: 4095, len: 1 << 40 },
            JournalOp::Fallocate {
                path: non_utf8("z"),
                mode: FallocMode::ZeroRange { keep_size: true },
                offset: 0,
                len: u64::MAX,
            },
            JournalOp::Fallocate {
                path: "y".into(),
                mode: FallocMode::ZeroRange { keep_size: false },
                offset: 1,
                len: 2,
            },
            JournalOp::Fallocate {
                path: "y".into(),
                mode: FallocMode::Allocate { keep_size: true },
                offset: 0,
                len: 9,
            },
            JournalOp::Fallocate {
                path: "y".into(),
                mode: FallocMode::Allocate { keep_size: false },
                offset: 7,
                len: 1,
            },
        ]
    }

    fn split_records(mut buf: &[u8]) -> Vec<&[u8]> {
        let mut out = Vec::new();
        while !buf.is_empty() {
            let len = le_u32(&buf[..4]) as usize;
            out.push(&buf[4..4 + len]);
            buf = &buf[4 + len..];
        }
        out
    }

    #[test]
    fn record_head_and_tail_join_to_the_record() {
        for op in sample_ops() {
            let (mut whole, mut head) = (Vec::new(), Vec::new());
            encode_op(&op, &mut whole).unwrap();
            let tail = encode_op_head(&op, &mut head).unwrap();
            assert_eq!(Some(tail), record_tail(&op), "{op:?}");
            let mut extent_head = Vec::new();
            assert_eq!(encode_op_extent(&op, &mut extent_head).unwrap(), tail.len() as u64, "{op:?}");
            assert_eq!(extent_head, head, "{op:?}");
            head.extend_from_slice(tail);
            assert_eq!(head, whole, "{op:?}");
        }
    }

    /// A write of known content measures as the write of its bytes, and only
    /// the extent encoder takes it: it has no bytes for a whole record.
    #[test]
    fn a_known_write_has_the_extent_of_its_bytes_and_no_record() {
        let write = JournalOp::Write { path: "a/b".into(), offset: 1 << 40, data: vec![3; 5000] };
        let known = JournalOp::WriteKnown { path: "a/b".into(), offset: 1 << 40, len: 5000 };
        let (mut write_head, mut known_head) = (Vec::new(), Vec::new());
        let tail = encode_op_extent(&write, &mut write_head).unwrap();
        assert_eq!(encode_op_extent(&known, &mut known_head).unwrap(), tail);
        assert_eq!(known_head, write_head);
        assert_eq!(record_tail(&known), None);
        let mut out = vec![9];
        for refused in [encode_op(&known, &mut out), encode_op_head(&known, &mut out).map(drop)] {
            assert_eq!(crate::backend::errno_of(&refused.unwrap_err()), libc::EINVAL);
        }
        assert_eq!(out, [9], "nothing appended");
    }

    #[test]
    fn journal_ops_round_trip_including_non_utf8_names() {
        let ops = sample_ops();
        let mut buf = Vec::new();
        for op in &ops {
            encode_op(op, &mut buf).unwrap();
        }
        let decoded: Vec<JournalOp> = split_records(&buf).into_iter().map(|b| decode_op(b).unwrap()).collect();
        assert_eq!(decoded, ops);
    }

    #[test]
    fn journal_record_decoding_rejects_damage_without_panicking() {
        for op in sample_ops() {
            let mut buf = Vec::new();
            encode_op(&op, &mut buf).unwrap();
            let body = &buf[4..];
            // Every strict prefix is missing a field; trailing junk is refused.
            for cut in 0..body.len() {
                assert!(decode_op(&body[..cut]).is_err(), "{op:?} cut at {cut}");
            }
            let mut longer = body.to_vec();
            longer.push(0);
            assert!(decode_op(&longer).is_err());
            // Flipped bytes either fail or decode to something else; never panic.
            for i in 0..body.len() {
                let mut damaged = body.to_vec();
                damaged[i] ^= 0xa5;
                if let Ok(other) = decode_op(&damaged) {
                    assert_ne!(other, op);
                }
            }
        }
        assert!(decode_op(&[99]).is_err());
        assert!(decode_op(&[]).is_err());
    }

    #[test]
    fn journal_header_round_trip_and_torn_detection() {
        let h = TxnHeader { version: VERSION, seq: 7, payload_len: 12345, op_count: 9, payload_crc: 0xdead_beef };
        let bytes = h.encode();
        assert_eq!(bytes.len() as u64, HEADER_LEN);
        assert_eq!(TxnHeader::decode(&bytes), Ok(HeaderState::Valid(h)));
        assert_eq!(TxnHeader::decode(&[]), Ok(HeaderState::Empty));
        assert_eq!(TxnHeader::decode(&vec![0; 512]), Ok(HeaderState::Empty));
        // Any prefix of the header written over zeros is torn, never valid.
        for cut in 1..HEADER_FIELDS {
            assert_eq!(TxnHeader::decode(&bytes[..cut]), Ok(HeaderState::Torn), "prefix {cut}");
        }
        // Any single byte missing (written as zero) from the header is torn.
        for i in 0..HEADER_FIELDS {
            if bytes[i] == 0 {
                continue;
            }
            let mut torn = bytes.clone();
            torn[i] = 0;
            assert_eq!(TxnHeader::decode(&torn), Ok(HeaderState::Torn), "byte {i} zero");
        }
        // A flipped bit past the magic and version is caught by the crc.
        for i in 12..HEADER_LEN as usize {
            let mut bad = bytes.clone();
            bad[i] ^= 0x10;
            assert_eq!(TxnHeader::decode(&bad), Ok(HeaderState::Torn), "byte {i} flipped");
        }
    }

    #[test]
    fn journal_header_foreign_magic_and_version_are_refused() {
        let h = TxnHeader { version: VERSION, seq: 1, payload_len: 0, op_count: 0, payload_crc: 0 };
        let legacy = TxnHeader { version: LEGACY_VERSION, ..h };
        assert_eq!(TxnHeader::decode(&legacy.encode()), Ok(HeaderState::Valid(legacy)));
        let mut other = h.encode();
        other[..8].copy_from_slice(b"SQLITE f");
        assert_eq!(TxnHeader::decode(&other), Err(ForeignHeader::Magic(*b"SQLITE f")));
        let mut newer = h.encode();
        newer[8..12].copy_from_slice(&3u32.to_le_bytes());
        assert_eq!(TxnHeader::decode(&newer), Err(ForeignHeader::Version(3)));
    }
}
