//! What the engine measures per app for `mcfs stat` and the simulator
//! (issue 3's metrics): staleness over time, checkpoint intervals, fsync
//! latency and time stalled on storage. Times come from the engine's `Clock`,
//! so under a manual clock every figure is a pure function of the calls.
//!
//! Invariant: the staleness integral covers exactly the time since the first
//! write the app made, each stretch weighted by the bytes at risk during it.

use crate::histogram::Histogram;
use std::time::{Duration, SystemTime};

#[derive(Default)]
pub struct AppMetrics {
    pub staleness: Staleness,
    pub intervals: Intervals,
    /// fsync / fdatasync / sync latency as the app saw it.
    pub fsync_latency: Histogram,
    /// Time the app's calls waited for checkpoints (sync fsync, a writer at
    /// its staleness bound or at the dirty high watermark).
    pub stalled: Duration,
}

/// Bytes the app has at risk (written, not committed), over time.
#[derive(Default)]
pub struct Staleness {
    /// When the current value started (`None` before the first write).
    since: Option<SystemTime>,
    bytes: u64,
    /// Σ bytes × nanoseconds since the first write.
    byte_ns: u128,
    started: Option<SystemTime>,
    pub max_bytes: u64,
}

impl Staleness {
    /// The app's uncommitted bytes are `bytes` from `now` on.
    pub fn set(&mut self, now: SystemTime, bytes: u64) {
        if let Some(since) = self.since {
            self.byte_ns += u128::from(self.bytes) * now.duration_since(since).unwrap_or_default().as_nanos();
        } else if bytes == 0 {
            return;
        }
        self.started.get_or_insert(now);
        self.since = Some(now);
        self.bytes = bytes;
        self.max_bytes = self.max_bytes.max(bytes);
    }

    /// Mean bytes at risk from the first write to `now`.
    pub fn mean_bytes(&self, now: SystemTime) -> u64 {
        let (Some(started), Some(since)) = (self.started, self.since) else { return 0 };
        let tail = u128::from(self.bytes) * now.duration_since(since).unwrap_or_default().as_nanos();
        let span = now.duration_since(started).unwrap_or_default().as_nanos();
        if span == 0 {
            return self.bytes;
        }
        u64::try_from((self.byte_ns + tail) / span).unwrap_or(u64::MAX)
    }
}

/// Times between an app's checkpoints (commits of its VCTs).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Intervals {
    last: Option<SystemTime>,
    pub count: u64,
    pub sum: Duration,
    pub max: Duration,
}

impl Intervals {
    pub fn checkpointed(&mut self, now: SystemTime) {
        if let Some(last) = self.last.replace(now) {
            let gap = now.duration_since(last).unwrap_or_default();
            self.count += 1;
            self.sum += gap;
            self.max = self.max.max(gap);
        }
    }

    pub fn mean(&self) -> Duration {
        u32::try_from(self.count).ok().filter(|n| *n > 0).map_or(Duration::ZERO, |n| self.sum / n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    fn at(s: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(s)
    }

    #[test]
    fn staleness_is_time_weighted() {
        let mut s = Staleness::default();
        s.set(at(5), 0);
        assert_eq!(s.mean_bytes(at(10)), 0, "nothing written yet");
        s.set(at(10), 100);
        s.set(at(20), 300);
        s.set(at(30), 0);
        // 10 s × 100 + 10 s × 300 + 10 s × 0 over 30 s.
        assert_eq!(s.mean_bytes(at(40)), 4000 / 30);
        assert_eq!(s.max_bytes, 300);
    }

    #[test]
    fn intervals_between_checkpoints() {
        let mut i = Intervals::default();
        i.checkpointed(at(3));
        assert_eq!(i.count, 0, "the first checkpoint starts the first interval");
        i.checkpointed(at(8));
        i.checkpointed(at(20));
        assert_eq!((i.count, i.mean(), i.max), (2, Duration::from_millis(8500), Duration::from_secs(12)));
    }
}
