//! Importers: turn traces recorded by other tools into [`TraceEvent`](crate::trace::TraceEvent) streams.
//!
//! Each importer is a streaming iterator over a `BufRead` that stops at the first bad line with its line
//! number and reason, like the native readers.

pub mod compressed;
pub mod csv;
pub mod gaps;
pub mod strace;
mod workdirs;
