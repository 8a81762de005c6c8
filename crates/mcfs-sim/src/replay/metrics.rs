//! What a replay reports: how many events it replayed or skipped, by kind, what the engine did with
//! them (from `Engine::stats`), what apps waited for the simulated device, the bytes at risk over time
//! and what the device did and spent, overall and per trace app; and how the three idle predictors would
//! have fared on the trace's user inputs (`prediction`).
//!
//! Invariant: every field is a pure function of the trace and the config (integers and ordered maps only,
//! no wall-clock times), so the same inputs serialize to the same JSON, byte for byte.

use super::latency::LatencySummary;
use super::options::Timing;
use super::risk::BytesAtRisk;
use mcfs_core::policy::prediction_score::PredictionScore;
use mcfs_core::{AppStats, Stats};
use mcfs_device::DeviceReport;
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
    /// The first event skipped for each of those reasons, as a trace line.
    pub skip_examples: BTreeMap<String, String>,
    /// Events stamped earlier than one before them; they are replayed at the current virtual time.
    pub out_of_order_events: u64,
    /// How events were issued: `closed-loop` (each process after its previous call completed, plus the
    /// recorded think time) or `open-loop` (at their recorded times).
    pub timing: Timing,
    /// Virtual time from the first event to the issue of the last, in nanoseconds.
    pub virtual_ns: u64,
    /// Recorded time from the first event to the last: closed loop stretches `virtual_ns` past it when the
    /// device kept apps waiting.
    pub trace_ns: u64,
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
    /// Latency apps saw in fsync and fdatasync (replayed ones; 0 when the call issued no device I/O).
    pub fsync_latency: LatencySummary,
    /// Time apps spent waiting for the device, over all their calls.
    pub stall_ns: u64,
    /// Data written but not committed, over virtual time.
    pub bytes_at_risk: BytesAtRisk,
    /// What the simulated device did and the energy it spent (shutdown's final checkpoint included).
    pub device: DeviceReport,
    /// Per trace app name.
    pub apps: BTreeMap<String, AppMetrics>,
    /// The compared idle predictors (`state-machine`, `last-min`, `last-average`) scored on the trace's
    /// user inputs, whatever predictor the config runs (MobiFS §7.4).
    pub prediction: BTreeMap<String, PredictionScore>,
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
    pub fsync_latency: LatencySummary,
    pub stall_ns: u64,
    /// Closed loop: how far behind its recorded time the app's most delayed process issued its last
    /// event (0 in open loop).
    pub delay_ns: u64,
    /// Intervals between two of the app's checkpoints while the trace ran (shutdown's final checkpoint,
    /// which only marks the end of the trace, is left out), their mean and the longest, in nanoseconds.
    pub checkpoint_intervals: u64,
    pub checkpoint_interval_mean_ns: u64,
    pub checkpoint_interval_max_ns: u64,
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
    /// The metrics of one app from its engine counters at the end (`s`) and before shutdown (`during`,
    /// for the checkpoint intervals), and what it waited for.
    pub fn new(
        uid: u32,
        engine_app: String,
        s: Option<&AppStats>,
        during: Option<&AppStats>,
        (fsync_latency, stall_ns): (LatencySummary, u64),
    ) -> AppMetrics {
        let s = s.cloned().unwrap_or_default();
        let during = during.cloned().unwrap_or_default();
        AppMetrics {
            uid,
            engine_app,
            checkpoints: s.vcts_committed,
            vcts_closed: s.vcts_closed,
            bytes_written: s.bytes_written,
            bytes_flushed: s.bytes_flushed,
            fsync_absorbed: s.fsync_absorbed,
            fsync_honoured: s.fsync_honoured,
            fsync_latency,
            stall_ns,
            delay_ns: 0,
            checkpoint_intervals: during.checkpoint_intervals,
            checkpoint_interval_mean_ns: seconds_to_ns(during.checkpoint_interval_mean_seconds),
            checkpoint_interval_max_ns: seconds_to_ns(during.checkpoint_interval_max_seconds),
        }
    }
}

/// Whole nanoseconds of a duration the engine reports in seconds (it keeps them as a `Duration`, so the
/// value is exact to the nanosecond and rounding only undoes the float); negative or NaN gives 0.
fn seconds_to_ns(seconds: f64) -> u64 {
    let ns = (seconds * 1e9).round();
    if ns.is_nan() || ns <= 0.0 {
        0
    } else if ns >= u64::MAX as f64 {
        u64::MAX
    } else {
        ns as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_become_whole_nanoseconds() {
        assert_eq!(seconds_to_ns(8.5), 8_500_000_000);
        assert_eq!(seconds_to_ns(0.000_000_001), 1);
        assert_eq!(seconds_to_ns(123.456_789_012), 123_456_789_012);
        assert_eq!((seconds_to_ns(-1.0), seconds_to_ns(f64::NAN), seconds_to_ns(f64::INFINITY)), (0, 0, u64::MAX));
    }
}
