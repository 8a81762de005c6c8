//! mcfs-core: the engine of mcfs, a memory-centric, app-aware file system.
//!
//! The engine knows nothing of FUSE or of traces: front ends call `Engine`
//! methods with an inode number and a `Caller`; the engine talks to storage
//! only through `Backend` and to time only through `Clock`.

mod acl;
mod app_metrics;
pub mod app_status;
mod apps;
pub mod backend;
mod backlog;
mod batch_selection;
pub mod cache;
mod checkpoint;
mod checkpoint_log;
mod children;
pub mod clock;
mod committed;
mod compile;
pub mod config;
pub mod dispatch;
mod engine;
mod file_io;
mod file_space;
mod foreground;
mod histogram;
pub mod human;
mod in_place;
mod inode;
pub mod ioprio;
pub mod journal;
mod nearby;
pub mod policy;
mod refused;
mod rename;
mod rename_chains;
mod space;
mod split_writes;
mod state;
pub mod stats;
pub mod stats_doc;
mod sync_points;
pub mod types;
mod vct;
pub mod virtual_time;
mod write_run;
mod xattr;

pub use app_status::IoClass;
pub use backend::{Backend, DirBackend, MemBackend};
pub use clock::{Clock, ManualClock, SystemClock};
pub use config::{AppConfig, Config, Consistency, FastTrackConfig, FuseConfig, IoUringMode, SyncMode};
pub use engine::Engine;
pub use foreground::HeldBack;
pub use split_writes::Piece;
pub use stats::{AppStats, Stats};
pub use types::*;

/// Name of the engine's own directory inside the backing store; hidden from
/// the mount.
pub const STATE_DIR: &str = ".mcfs";
