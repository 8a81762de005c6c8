//! Bytes at risk over a replay: data written but not yet committed, which a crash would lose. The
//! replayer reports the engine's figure after every event and every background tick; this keeps its
//! maximum, its time-weighted mean and a series sampled every `sample_every` of virtual time.
//!
//! Invariant: a sample at instant `t` holds the bytes at risk after everything that happened at `t`,
//! and the series stays under `MAX_SAMPLES` points: past that, the period doubles and every other
//! sample goes, so a trace spanning years cannot exhaust memory.

use serde::Serialize;

/// Most samples kept.
const MAX_SAMPLES: usize = 100_000;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct BytesAtRisk {
    /// Period of the series (the one asked for, doubled as often as needed to stay under 100 000 points).
    pub sample_every_ns: u64,
    pub max_bytes: u64,
    /// Mean over virtual time, from the first event to the last (rounded down).
    pub mean_bytes: u64,
    /// (virtual ns, bytes at risk) at every multiple of the period.
    pub series: Vec<(u64, u64)>,
}

#[derive(Clone, Debug)]
pub struct RiskTracker {
    every_ns: u64,
    /// The next instant to sample (`None` past the end of time).
    next_sample_ns: Option<u64>,
    /// The bytes at risk from `since_ns` on.
    bytes: u64,
    since_ns: u64,
    /// Integral of the bytes at risk over time, in byte·ns.
    integral: u128,
    max_bytes: u64,
    series: Vec<(u64, u64)>,
}

impl RiskTracker {
    /// Samples every `every_ns` (at least 1).
    pub fn new(every_ns: u64) -> RiskTracker {
        RiskTracker {
            every_ns: every_ns.max(1),
            next_sample_ns: Some(0),
            bytes: 0,
            since_ns: 0,
            integral: 0,
            max_bytes: 0,
            series: Vec::new(),
        }
    }

    /// From `at_ns` on (until the next call), `bytes` are at risk. Times must not go back.
    pub fn observe(&mut self, at_ns: u64, bytes: u64) {
        self.hold_until(at_ns);
        self.bytes = bytes;
        self.max_bytes = self.max_bytes.max(bytes);
    }

    /// The report at `end_ns`, the time of the last event.
    pub fn finish(mut self, end_ns: u64) -> BytesAtRisk {
        self.hold_until(end_ns);
        self.sample_while(|t| t <= end_ns);
        let mean = if end_ns == 0 { self.bytes } else { (self.integral / u128::from(end_ns)) as u64 };
        BytesAtRisk { sample_every_ns: self.every_ns, max_bytes: self.max_bytes, mean_bytes: mean, series: self.series }
    }

    /// The current value held from `since_ns` to `at_ns`: integrated, and sampled before `at_ns`.
    fn hold_until(&mut self, at_ns: u64) {
        if at_ns <= self.since_ns {
            return;
        }
        self.sample_while(|t| t < at_ns);
        self.integral = self.integral.saturating_add(u128::from(self.bytes) * u128::from(at_ns - self.since_ns));
        self.since_ns = at_ns;
    }

    fn sample_while(&mut self, before: impl Fn(u64) -> bool) {
        while let Some(at) = self.next_sample_ns.filter(|&t| before(t)) {
            self.series.push((at, self.bytes));
            if self.series.len() > MAX_SAMPLES {
                self.every_ns = self.every_ns.saturating_mul(2);
                let every = self.every_ns;
                self.series.retain(|(t, _)| t % every == 0);
            }
            let last = self.series.last().map_or(0, |(t, _)| *t);
            self.next_sample_ns = last.checked_add(self.every_ns);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_hold_the_value_after_each_instant_and_the_mean_weighs_time() {
        let mut r = RiskTracker::new(10);
        r.observe(0, 100);
        r.observe(5, 300); // 100 over [0, 5)
        r.observe(10, 0); // 300 over [5, 10)
        r.observe(10, 50); // two changes at 10: the sample at 10 sees the last
        r.observe(25, 0); // 50 over [10, 25)
        let report = r.finish(30); // 0 over [25, 30]
        assert_eq!(report.series, [(0, 100), (10, 50), (20, 50), (30, 0)]);
        assert_eq!(report.max_bytes, 300);
        assert_eq!(report.mean_bytes, (100 * 5 + 300 * 5 + 50 * 15) / 30);
    }

    #[test]
    fn a_huge_span_coarsens_the_series_instead_of_growing_it() {
        let mut r = RiskTracker::new(1);
        r.observe(0, 7);
        let report = r.finish(u64::MAX);
        assert!(report.series.len() <= MAX_SAMPLES, "{}", report.series.len());
        assert!(report.series.iter().all(|&(t, b)| t % report.sample_every_ns == 0 && b == 7));
        assert_eq!(report.mean_bytes, 7);
    }
}
