//! A latency histogram with bounded memory: log-linear buckets (8 per power
//! of two, so a percentile is off by at most 12.5 %), exact below 8 ns.
//! Percentiles report the upper edge of their bucket, so they never
//! understate a latency.

use std::time::Duration;

const SUB_BUCKETS: u32 = 8;
const BUCKETS: usize = 64 * SUB_BUCKETS as usize;

#[derive(Clone)]
pub struct Histogram {
    counts: Box<[u64; BUCKETS]>,
    total: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram { counts: Box::new([0; BUCKETS]), total: 0 }
    }
}

fn bucket_of(ns: u64) -> usize {
    if ns < u64::from(SUB_BUCKETS) {
        return ns as usize;
    }
    let exp = 63 - ns.leading_zeros();
    let sub = (ns >> (exp - 3)) & u64::from(SUB_BUCKETS - 1);
    ((exp - 2) * SUB_BUCKETS) as usize + sub as usize
}

/// The largest value that falls in `bucket`.
fn upper_edge(bucket: usize) -> u64 {
    if bucket < SUB_BUCKETS as usize {
        return bucket as u64;
    }
    let exp = bucket as u32 / SUB_BUCKETS + 2;
    let sub = bucket as u64 % u64::from(SUB_BUCKETS);
    let low = (u64::from(SUB_BUCKETS) + sub) << (exp - 3);
    low.saturating_add((1u64 << (exp - 3)) - 1)
}

impl Histogram {
    pub fn record(&mut self, latency: Duration) {
        let ns = u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX);
        self.counts[bucket_of(ns)] += 1;
        self.total += 1;
    }

    pub fn count(&self) -> u64 {
        self.total
    }

    /// The latency at or below which a fraction `q` (0..=1) of the samples lie.
    pub fn percentile(&self, q: f64) -> Duration {
        if self.total == 0 {
            return Duration::ZERO;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (bucket, n) in self.counts.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Duration::from_nanos(upper_edge(bucket));
            }
        }
        Duration::from_nanos(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_every_value_in_order() {
        let mut last = 0;
        for ns in (0..100_000u64).chain([u64::MAX / 3, u64::MAX]) {
            let b = bucket_of(ns);
            assert!(b >= last && b < BUCKETS, "{ns} → {b}");
            assert!(upper_edge(b) >= ns, "{ns} above its bucket's edge {}", upper_edge(b));
            assert!(upper_edge(b) as f64 <= ns as f64 * 1.125 + 1.0, "{ns}: edge {} too far", upper_edge(b));
            last = b;
        }
    }

    #[test]
    fn percentiles() {
        let mut h = Histogram::default();
        assert_eq!(h.percentile(0.5), Duration::ZERO);
        for us in 1..=100u64 {
            h.record(Duration::from_micros(us));
        }
        let p50 = h.percentile(0.5).as_nanos() as f64;
        let p99 = h.percentile(0.99).as_nanos() as f64;
        assert!((50_000.0..=50_000.0 * 1.125).contains(&p50), "p50 {p50}");
        assert!((99_000.0..=99_000.0 * 1.125).contains(&p99), "p99 {p99}");
        assert_eq!(h.count(), 100);
    }
}
