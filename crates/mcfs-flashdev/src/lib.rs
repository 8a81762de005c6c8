//! mcfs-flashdev: a FUSE pass-through whose files behave like phone flash (FastTrack §4.5, §5.2).
//! Every read, write, metadata change and fsync on the mount is passed to the backing directory and
//! charged to an emulated device that serves it in real time: per-request latency, read and write
//! bandwidth, flush latency, an internal command queue, and the device scheduler (FG read > FG write
//! > BG read > BG write, or FIFO). A request's class comes from the calling thread's I/O priority.
//!
//! Modules: `realtime` drives the pure scheduler (`mcfs_device::scheduler`) from the monotonic
//! clock; `class` learns a request's class; `flash` charges requests and counts them; `report` is the
//! stats file; `fs` is the pass-through over `sys` (the backing calls), `inodes`, `handles`,
//! `listing` and `attr`; `session` mounts it. docs/FLASHDEV.md is the user's guide.

mod attr;
mod class;
mod flash;
mod fs;
mod handles;
mod inodes;
mod listing;
mod realtime;
mod report;
mod session;
mod sys;

pub use class::RequestClass;
pub use flash::Flash;
pub use fs::FlashFs;
pub use realtime::{Clock, MonotonicClock, RealTimeDevice};
pub use report::{Report, RequestCounts};
pub use session::{mount, Serving};
