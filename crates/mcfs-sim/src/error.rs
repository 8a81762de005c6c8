//! Errors of every trace reader, writer and importer.
//!
//! A [`TraceError`] carries where reading stopped (a 1-based line number for text inputs, a byte offset for
//! binary ones) and why, so a user can find the bad spot; readers stop at the first error.

use std::fmt;
use std::io;

/// Where in the input an error was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Position {
    /// 1-based line number in a line-oriented input (text trace, CSV, strace log).
    Line(u64),
    /// Byte offset from the start of a binary trace.
    Byte(u64),
    /// Not tied to a place in the input (e.g. a bad importer option).
    None,
}

/// A reader, writer or importer failure.
#[derive(Debug)]
pub struct TraceError {
    pub position: Position,
    pub reason: String,
    /// The underlying I/O error, when there was one.
    pub io: Option<io::Error>,
}

impl TraceError {
    pub fn at(position: Position, reason: impl Into<String>) -> Self {
        TraceError { position, reason: reason.into(), io: None }
    }

    pub fn io(position: Position, err: io::Error) -> Self {
        TraceError { position, reason: format!("I/O error: {err}"), io: Some(err) }
    }

    /// The errno that best describes the failure (the I/O error's own, else EINVAL for bad input).
    pub fn errno(&self) -> i32 {
        self.io.as_ref().and_then(io::Error::raw_os_error).unwrap_or(EINVAL)
    }
}

/// EINVAL, spelled out rather than pulling in libc for one constant (22 on every Linux architecture).
const EINVAL: i32 = 22;

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.position {
            Position::Line(n) => write!(f, "line {n}: {}", self.reason),
            Position::Byte(n) => write!(f, "byte offset {n}: {}", self.reason),
            Position::None => f.write_str(&self.reason),
        }
    }
}

impl std::error::Error for TraceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.io.as_ref().map(|e| e as _)
    }
}

/// One step of a reader's iterator: an error or the end stops it for good
/// (`done`), so a caller never reads past a bad record.
pub(crate) fn stop_after_error(
    done: &mut bool,
    next: Result<Option<crate::trace::TraceEvent>, TraceError>,
) -> Option<Result<crate::trace::TraceEvent, TraceError>> {
    let result = next.transpose();
    if !matches!(result, Some(Ok(_))) {
        *done = true;
    }
    result
}
