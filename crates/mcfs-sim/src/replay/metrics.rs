//! What a replay reports: how many events it replayed or skipped, by kind, and what the engine did with
//! them (from `Engine::stats`), overall and per trace app.
//!
//! Invariant: every field is a pure function of the trace and the config (integers and ordered maps only,
//! no wall-clock times), so the same inputs serialize to the same JSON, byte for byte.

use mcfs_core::{AppStats, Stats};
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Metrics {
    pub events_replayed: u64,
    pub events_skipped: u64,
    /// Replayed events per operation name of the trace format (`write`, `fsync`, `tap`, ...).
    pub replayed_by_kind: BTreeMap<&'static str, u64>,
    pub skipped_by_kind: BTreeMap<&'static str, u64>,
    /// Why events were skipped: `unknown path`, or the error the engine gave.
    pub skip_reasons: BTreeMap<String, u64>,
    /// Events stamped earlier than one before them; they are replayed at the current virtual time.
    pub out_of_order_events: u64,
    /// Virtual time from the first event to the last, in nanoseconds.
    pub virtual_ns: u64,
    /// Background `tick`s run at the engine's deadlines.
    pub ticks: u64,
    pub bytes_written: u64,
    pub bytes_flushed: u64,
    pub journal_bytes: u64,
    pub checkpoints: u64,
    /// Checkpoints that ran while the trace was replayed (the rest is the final one of `shutdown`).
    pub checkpoints_before_shutdown: u64,
    pub fsync_absorbed: u64,
    pub fsync_honoured: u64,
    pub vcts_closed: u64,
    pub vcts_committed: u64,
    /// Per trace app name.
    pub apps: BTreeMap<String, AppMetrics>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct AppMetrics {
    /// The uid the replay gave the app (10000 + order of first appearance).
    pub uid: u32,
    /// The engine's name for the app (`uid:N`, or the config's name for that uid).
    pub engine_app: String,
    /// VCTs of this app committed to the backing store: its checkpoints.
    pub checkpoints: u64,
    pub vcts_closed: u64,
    pub bytes_written: u64,
    pub bytes_flushed: u64,
    pub fsync_absorbed: u64,
    pub fsync_honoured: u64,
}

impl Metrics {
    /// Copies the engine's totals in.
    pub fn take_engine_stats(&mut self, s: &Stats) {
        self.bytes_written = s.bytes_written;
        self.bytes_flushed = s.bytes_flushed;
        self.journal_bytes = s.journal_bytes;
        self.checkpoints = s.checkpoints;
        self.fsync_absorbed = s.fsync_absorbed;
        self.fsync_honoured = s.fsync_honoured;
        self.vcts_closed = s.vcts_closed;
        self.vcts_committed = s.vcts_committed;
    }
}

impl AppMetrics {
    pub fn new(uid: u32, engine_app: String, s: Option<&AppStats>) -> AppMetrics {
        let s = s.cloned().unwrap_or_default();
        AppMetrics {
            uid,
            engine_app,
            checkpoints: s.vcts_committed,
            vcts_closed: s.vcts_closed,
            bytes_written: s.bytes_written,
            bytes_flushed: s.bytes_flushed,
            fsync_absorbed: s.fsync_absorbed,
            fsync_honoured: s.fsync_honoured,
        }
    }
}
