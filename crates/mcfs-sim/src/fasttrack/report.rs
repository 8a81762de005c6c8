//! What a scenario reports: per app, the response time of its whole trace and the latency of its file
//! operations; the holds background work spent behind foreground calls; the device scheduler's counters and
//! the engine's stats. Latency distributions are exact (`LatencyHistogram` keeps every value), so the same
//! run gives the same report, byte for byte.

use crate::replay::LatencySummary;
use mcfs_core::{FastTrackConfig, Stats};
use mcfs_device::scheduler::{SchedPolicy, SchedulerStats};
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ScenarioReport {
    /// Name of the device profile.
    pub profile: String,
    pub policy: SchedPolicy,
    /// The device scheduler's aging bound (`Priority` only).
    pub device_aging_ns: u64,
    /// The engine's FastTrack switches the run had.
    pub fasttrack: FastTrackConfig,
    /// When the last app completed its last operation (virtual ns since the earliest event of any trace).
    pub apps_done_ns: u64,
    /// When the device completed its last command (background writes may outlast the apps).
    pub device_idle_ns: u64,
    /// By app name, as the traces give it.
    pub apps: BTreeMap<String, AppReport>,
    pub holds: HoldStats,
    pub device: SchedulerStats,
    pub engine: Stats,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct AppReport {
    pub uid: u32,
    /// Events of the trace (all are issued, whether the engine performed them or refused them).
    pub events: u64,
    /// Operations the engine refused, by error.
    pub refused: BTreeMap<String, u64>,
    /// When the app issued its first event and when its last one completed (virtual ns).
    pub first_issue_ns: u64,
    pub last_done_ns: u64,
    /// The response time of the whole trace: `last_done_ns - first_issue_ns`.
    pub response_ns: u64,
    /// File operations: completion minus the instant the app issued them (PA holds included).
    pub latency: LatencySummary,
    pub by_op: BTreeMap<String, LatencySummary>,
}

/// Waits of background work behind foreground calls in flight (see the module comment of `fasttrack`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct HoldStats {
    /// Background calls held at admission (PA).
    pub admission: Holds,
    /// Background calls held between the device steps of their call (PA's segment boundaries).
    pub call_segments: Holds,
    /// The engine's background work (checkpoints) held between its steps (PA / ID).
    pub background_work: Holds,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Holds {
    pub count: u64,
    /// Holds ended by the aging bound while foreground calls were still in flight.
    pub aged: u64,
    pub held_ns: u64,
}

impl Holds {
    pub fn record(&mut self, held_ns: u64, aged: bool) {
        self.count += 1;
        self.aged += u64::from(aged);
        self.held_ns = self.held_ns.saturating_add(held_ns);
    }
}
