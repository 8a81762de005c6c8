//! mcfs-sim: the trace side of the simulator.
//!
//! This crate holds the trace model ([`trace`]), its two on-disk forms (readable text in [`text`], compact
//! binary in [`binary`]), importers that turn other people's traces into ours ([`import`]) and the replay core
//! that drives the real engine with a trace in virtual time ([`replay`]), on a backend that charges its calls to
//! the mcfs-device model ([`device`]). Every reader
//! streams (an `Iterator` of `Result<TraceEvent, TraceError>`), stops at the first bad line or record with its
//! position and reason, and never panics on any input. The format is documented in `docs/TRACE_FORMAT.md`.

pub mod binary;
pub mod device;
pub mod error;
pub mod escape;
pub mod fasttrack;
mod file_calls;
pub mod import;
mod lines;
pub mod lint;
pub mod live_replay;
pub mod pattern;
pub mod replay;
pub mod synth;
pub mod text;
pub mod timefmt;
pub mod trace;

pub use error::{Position, TraceError};
pub use trace::{EventKind, InputKind, PathBytes, TraceEvent};
