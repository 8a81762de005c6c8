//! Counters the engine keeps for `mcfs stat`, overall and per app.

use crate::dispatch::DispatchStats;
use crate::policy::prediction_score::PredictionScore;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct AppStats {
    pub app: String,
    pub mode: String,
    pub bytes_written: u64,
    pub bytes_flushed: u64,
    pub fsync_absorbed: u64,
    pub fsync_honoured: u64,
    pub vcts_closed: u64,
    pub vcts_committed: u64,
    pub stale_bytes: u64,
    pub stale_seconds: f64,
    /// Largest and time-weighted mean bytes at risk since the app first wrote.
    pub stale_bytes_max: u64,
    pub stale_bytes_mean: u64,
    /// Intervals between the app's checkpoints.
    pub checkpoint_intervals: u64,
    pub checkpoint_interval_mean_seconds: f64,
    pub checkpoint_interval_max_seconds: f64,
    /// fsync latency the app saw (log-bucketed: within 12.5 %, never under).
    pub fsync_calls: u64,
    pub fsync_p50_us: f64,
    pub fsync_p99_us: f64,
    /// Time the app's calls waited for checkpoints.
    pub stalled_seconds: f64,
}

#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Stats {
    pub bytes_written: u64,
    pub bytes_flushed: u64,
    /// Bytes written to the journal (part of `bytes_flushed`).
    pub journal_bytes: u64,
    pub fsync_absorbed: u64,
    pub fsync_honoured: u64,
    pub vcts_closed: u64,
    pub vcts_committed: u64,
    pub stale_bytes: u64,
    pub stale_seconds: f64,
    pub cache_clean_bytes: u64,
    pub cache_dirty_bytes: u64,
    pub cache_total_bytes: u64,
    pub cache_limit_bytes: u64,
    pub checkpoints: u64,
    /// How long the last checkpoint took; `None` before the first.
    pub last_checkpoint_duration_ns: Option<u64>,
    pub battery_percent: Option<u8>,
    pub low_battery: bool,
    /// The last error the backing store gave a checkpoint, if it has not
    /// succeeded since.
    pub checkpoint_error: Option<String>,
    pub checkpoint_failures: u64,
    /// Committed transactions waiting in the journal to be applied in place.
    pub journal_waiting_transactions: u64,
    /// Journal bytes they take.
    pub journal_waiting_bytes: u64,
    /// File data the applier did not write because a later waiting
    /// transaction wrote the same bytes (each went home once, last version).
    pub coalesced_bytes: u64,
    /// Ops of files created and unlinked within one applied run (SQLite's
    /// `-journal`): never issued in place (docs/JOURNAL.md).
    pub elided_ops: u64,
    /// Appended file data commits wrote straight in place instead of into
    /// the journal (`append_in_place_bytes`).
    pub placed_bytes: u64,
    /// Ops the backing store refused for good at apply time, skipped (their
    /// apps got the error at their next fsync of the file).
    pub unapplied_ops: u64,
    /// The newest of those.
    pub unapplied_recent: Vec<UnappliedOpStat>,
    /// Lookups of names that do not exist. The kernel keeps each answer
    /// for the entry timeout, so a name probed again and again (SQLite's
    /// `-journal` and `-wal`) is counted about once per timeout.
    pub missing_lookups: u64,
    /// The idle predictor in use and its score (MobiFS §7.4), if any.
    pub idle_predictor: String,
    pub idle: Option<PredictionScore>,
    /// Foreground-first I/O (FastTrack): the FG app and what the dispatcher did.
    pub fasttrack: FastTrackStats,
    pub apps: BTreeMap<String, AppStats>,
}

/// An op a checkpoint skipped because the backing store cannot hold it.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct UnappliedOpStat {
    /// The app whose log entry produced it.
    pub app: String,
    /// The op and its backing path, e.g. `setxattr d/f`.
    pub op: String,
    pub errno: i32,
    pub error: String,
}

#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct FastTrackStats {
    /// The foreground app's name, if one is known.
    pub foreground: Option<String>,
    #[serde(flatten)]
    pub dispatch: DispatchStats,
}
