//! Bounded line reading shared by the line-oriented importers.
//!
//! Invariant: a line never grows past `MAX_LINE_BYTES`, so corrupt input cannot exhaust memory; line numbers
//! are 1-based and count every line read, blank or not.

use std::io::{BufRead, Read};

use crate::error::{Position, TraceError};
/// Longest line any reader accepts, so a corrupt file cannot make it buffer without bound.
pub const MAX_LINE_BYTES: u64 = 1 << 20;

pub(crate) struct LineReader<R: BufRead> {
    input: R,
    pub(crate) line_no: u64,
    buf: Vec<u8>,
}

impl<R: BufRead> LineReader<R> {
    pub(crate) fn new(input: R) -> Self {
        LineReader { input, line_no: 0, buf: Vec::with_capacity(256) }
    }

    pub(crate) fn position(&self) -> Position {
        Position::Line(self.line_no)
    }

    /// The next line without its line ending, or `None` at end of input.
    pub(crate) fn next_line(&mut self) -> Result<Option<&[u8]>, TraceError> {
        self.buf.clear();
        self.line_no += 1;
        let n = (&mut self.input)
            .take(MAX_LINE_BYTES + 1)
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| TraceError::io(Position::Line(self.line_no), e))?;
        if n == 0 {
            return Ok(None);
        }
        if self.buf.len() as u64 > MAX_LINE_BYTES {
            return Err(TraceError::at(self.position(), format!("line longer than {MAX_LINE_BYTES} bytes")));
        }
        while matches!(self.buf.last(), Some(b'\n' | b'\r')) {
            self.buf.pop();
        }
        Ok(Some(&self.buf))
    }
}
