//! What apps waited for the device: the latency of every replayed fsync and fdatasync, and the stall
//! time of every call (the latency summed), per trace app (by the uid the replay gave it) and over all of
//! them.
//!
//! Invariant: the totals are the sums over the apps (every record goes to both).

use super::latency::{LatencyHistogram, LatencySummary};
use super::Fast;
use std::collections::HashMap;

#[derive(Clone, Debug, Default)]
struct AppWaits {
    fsync: LatencyHistogram,
    stall_ns: u64,
}

#[derive(Clone, Debug, Default)]
pub struct Waits {
    all: AppWaits,
    apps: HashMap<u32, AppWaits, Fast>,
}

impl Waits {
    /// One call of `app` that kept it waiting `latency_ns`; `fsync` if it was an fsync or fdatasync.
    pub fn record(&mut self, app: u32, latency_ns: u64, fsync: bool) {
        let app_waits = self.apps.entry(app).or_default();
        for waits in [&mut self.all, app_waits] {
            waits.stall_ns = waits.stall_ns.saturating_add(latency_ns);
            if fsync {
                waits.fsync.record(latency_ns);
            }
        }
    }

    /// The fsync latencies and stall time of `app`, or of all apps for `None`.
    pub fn of(&self, app: Option<u32>) -> (LatencySummary, u64) {
        let waits = match app {
            None => Some(&self.all),
            Some(app) => self.apps.get(&app),
        };
        waits.map_or_else(Default::default, |w| (w.fsync.summary(), w.stall_ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_are_the_sums_over_apps() {
        let mut w = Waits::default();
        w.record(1, 10, true);
        w.record(1, 5, false);
        w.record(2, 30, true);
        let (fsync, stall) = w.of(None);
        assert_eq!((fsync.count, fsync.max_ns, stall), (2, 30, 45));
        let (fsync, stall) = w.of(Some(1));
        assert_eq!((fsync.count, fsync.p50_ns, stall), (1, 10, 15));
        assert_eq!(w.of(Some(3)), (LatencySummary::default(), 0));
    }
}
