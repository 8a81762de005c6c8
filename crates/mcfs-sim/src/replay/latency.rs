//! Exact latency distributions: every latency seen is kept in a histogram (value → count), so percentiles
//! are exact and the same latencies give the same summary whatever their order.
//!
//! Invariant: `n` and `total` are the count and sum of the recorded values.

use serde::Serialize;
use std::collections::BTreeMap;

/// A distribution in nanoseconds. Percentiles are nearest-rank: the smallest recorded value with at
/// least that share of the values at or below it (0 when nothing was recorded).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LatencySummary {
    pub count: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
    pub total_ns: u64,
}

#[derive(Clone, Debug, Default)]
pub struct LatencyHistogram {
    counts: BTreeMap<u64, u64>,
    n: u64,
    total: u64,
}

impl LatencyHistogram {
    pub fn record(&mut self, ns: u64) {
        *self.counts.entry(ns).or_default() += 1;
        self.n += 1;
        self.total = self.total.saturating_add(ns);
    }

    /// The nearest-rank percentile, in thousandths (500 is the median).
    pub fn percentile(&self, per_mille: u64) -> u64 {
        let rank = (u128::from(self.n) * u128::from(per_mille.min(1000))).div_ceil(1000).max(1);
        let mut seen = 0u128;
        for (&value, &count) in &self.counts {
            seen += u128::from(count);
            if seen >= rank {
                return value;
            }
        }
        0
    }

    pub fn summary(&self) -> LatencySummary {
        LatencySummary {
            count: self.n,
            p50_ns: self.percentile(500),
            p99_ns: self.percentile(990),
            max_ns: self.counts.keys().next_back().copied().unwrap_or(0),
            total_ns: self.total,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let mut h = LatencyHistogram::default();
        assert_eq!(h.summary(), LatencySummary::default());
        for v in (1..=100).rev() {
            h.record(v * 10);
        }
        let s = h.summary();
        assert_eq!((s.count, s.p50_ns, s.p99_ns, s.max_ns, s.total_ns), (100, 500, 990, 1000, 50_500));
        let mut h = LatencyHistogram::default();
        [0, 0, 0, 7].iter().for_each(|&v| h.record(v));
        assert_eq!((h.percentile(500), h.percentile(750), h.percentile(760), h.percentile(990)), (0, 0, 7, 7));
    }
}
