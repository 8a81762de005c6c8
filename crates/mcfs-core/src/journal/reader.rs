//! Streams the op records of the transaction in a segment of the log back through
//! the backend, a bounded chunk at a time (plus at most one record), keeping a
//! running crc32c of the bytes it consumed.
//!
//! Invariant: every payload byte before `position()` was consumed exactly
//! once, in order, so `crc()` is the checksum of that prefix unless a record
//! was skipped unread.

use super::encode::{decode_op, HEADER_LEN, RECORD_LEN_BYTES};
use super::JournalOp;
use crate::backend::Backend;
use std::io;
use std::path::Path;

const CHUNK: u64 = 256 * 1024;

/// Why the next record could not be produced.
pub enum ReadError {
    Io(io::Error),
    /// The file ends before the payload the header announced.
    Short,
    /// The bytes are there but do not form a record.
    Malformed(String),
}

pub struct OpReader<'a> {
    backend: &'a dyn Backend,
    /// The segment file.
    path: &'a Path,
    payload_len: u64,
    /// Payload offset of `buf[0]`.
    buf_start: u64,
    buf: Vec<u8>,
    /// Index in `buf` of the next unconsumed byte.
    cursor: usize,
    /// `None` once bytes were skipped unread.
    crc: Option<u32>,
}

impl<'a> OpReader<'a> {
    pub fn new(backend: &'a dyn Backend, path: &'a Path, payload_len: u64) -> OpReader<'a> {
        OpReader { backend, path, payload_len, buf_start: 0, buf: Vec::new(), cursor: 0, crc: Some(0) }
    }

    pub fn position(&self) -> u64 {
        self.buf_start + self.cursor as u64
    }

    pub fn remaining(&self) -> u64 {
        self.payload_len - self.position()
    }

    pub fn crc(&self) -> Option<u32> {
        self.crc
    }

    /// The next op, or `Ok(None)` at the end of the payload.
    pub fn next_op(&mut self) -> Result<Option<JournalOp>, ReadError> {
        let Some(len) = self.next_record_len()? else {
            return Ok(None);
        };
        let body = self.consume(len)?;
        decode_op(body)
            .map(Some)
            .map_err(|m| ReadError::Malformed(format!("record ending at payload byte {}: {m}", self.position())))
    }

    /// Steps over the next record without decoding it (or reading it, when it
    /// is not buffered yet). Returns false at the end of the payload.
    pub fn skip_op(&mut self) -> Result<bool, ReadError> {
        let Some(len) = self.next_record_len()? else {
            return Ok(false);
        };
        let buffered = (self.buf.len() - self.cursor) as u64;
        if len <= buffered {
            self.cursor += len as usize;
        } else {
            self.buf_start = self.position() + len;
            self.buf.clear();
            self.cursor = 0;
        }
        self.crc = None;
        Ok(true)
    }

    /// Consumes whatever is left of the payload (for its checksum).
    pub fn consume_rest(&mut self) -> Result<(), ReadError> {
        while self.remaining() > 0 {
            let n = self.remaining().min(CHUNK);
            self.consume(n)?;
        }
        Ok(())
    }

    fn next_record_len(&mut self) -> Result<Option<u64>, ReadError> {
        if self.remaining() == 0 {
            return Ok(None);
        }
        if self.remaining() < RECORD_LEN_BYTES {
            return Err(ReadError::Malformed(format!("{} stray bytes at the end of the payload", self.remaining())));
        }
        let field = self.consume(RECORD_LEN_BYTES)?;
        let len = u64::from(u32::from_le_bytes(field.try_into().unwrap_or_default()));
        if len > self.remaining() {
            return Err(ReadError::Malformed(format!(
                "record of {len} bytes at payload byte {} overruns the payload",
                self.position() - RECORD_LEN_BYTES
            )));
        }
        Ok(Some(len))
    }

    /// Returns the next `n` payload bytes (`n <= remaining()`), reading more of
    /// the file as needed.
    fn consume(&mut self, n: u64) -> Result<&[u8], ReadError> {
        self.fill(n)?;
        let start = self.cursor;
        self.cursor += n as usize;
        let bytes = &self.buf[start..self.cursor];
        self.crc = self.crc.map(|c| crc32c::crc32c_append(c, bytes));
        Ok(bytes)
    }

    fn fill(&mut self, n: u64) -> Result<(), ReadError> {
        let buffered = (self.buf.len() - self.cursor) as u64;
        if buffered >= n {
            return Ok(());
        }
        self.buf.drain(..self.cursor);
        self.buf_start += self.cursor as u64;
        self.cursor = 0;
        if self.buf.capacity() > 4 * CHUNK as usize && (n as usize) < CHUNK as usize {
            self.buf.shrink_to(CHUNK as usize);
        }
        let want = n.max(CHUNK).min(self.payload_len - self.buf_start) as usize;
        let have = self.buf.len();
        self.buf.resize(want, 0);
        let file_offset = HEADER_LEN + self.buf_start + have as u64;
        let got = self.backend.read_at(self.path, file_offset, &mut self.buf[have..]).map_err(ReadError::Io)?;
        self.buf.truncate(have + got);
        if (self.buf.len() as u64) < n {
            return Err(ReadError::Short);
        }
        Ok(())
    }
}
