//! Fixed interval: the open VCT closes every `max_stale` seconds, whatever the
//! app wrote — the periodic flusher of a classic writeback timer, the
//! baseline MobiFS's adaptive policies are measured against. The period
//! starts at the first call and restarts at each boundary that passes, so a
//! VCT opened late in a period closes at that period's end. The byte limit
//! still applies. Invariant: `period_start` never lies in the future of the
//! latest `now` seen (a clock that steps back restarts the period).

use super::{Limits, TransactionPolicy};
use crate::vct::OpenVct;
use std::time::SystemTime;

#[derive(Default)]
pub struct FixedInterval {
    period_start: Option<SystemTime>,
}

impl TransactionPolicy for FixedInterval {
    fn should_close(&mut self, vct: &OpenVct, limits: &Limits, now: SystemTime) -> bool {
        let start = *self.period_start.get_or_insert(now);
        let boundary = match now.duration_since(start) {
            Ok(elapsed) => elapsed >= limits.max_stale,
            Err(_) => false,
        };
        if boundary || start > now {
            self.period_start = Some(now);
        }
        (boundary && vct.first_entry_at.is_some()) || limits.reached(vct, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn closes_at_period_boundaries_not_at_the_vct_age() {
        let limits = Limits { max_stale_bytes: 1 << 30, max_stale: Duration::from_secs(10) };
        let mut p = FixedInterval::default();
        let mut v = OpenVct::new(1);
        assert!(!p.should_close(&v, &limits, at(100)), "the period starts at the first call");
        v.record_write(1, 0, 4096, at(108));
        assert!(!p.should_close(&v, &limits, at(109)));
        // Only 2 s old, but the period that began at 100 ends at 110.
        assert!(p.should_close(&v, &limits, at(110)));
        let mut next = OpenVct::new(2);
        next.record_write(1, 0, 4096, at(111));
        assert!(!p.should_close(&next, &limits, at(119)));
        assert!(p.should_close(&next, &limits, at(120)));
    }

    #[test]
    fn an_empty_vct_lets_the_boundary_pass() {
        let limits = Limits { max_stale_bytes: 1 << 30, max_stale: Duration::from_secs(10) };
        let mut p = FixedInterval::default();
        let mut v = OpenVct::new(1);
        assert!(!p.should_close(&v, &limits, at(0)));
        assert!(!p.should_close(&v, &limits, at(10)), "nothing to close");
        v.record_write(1, 0, 4096, at(11));
        assert!(!p.should_close(&v, &limits, at(19)), "the period restarted at 10");
        assert!(p.should_close(&v, &limits, at(20)));
    }

    #[test]
    fn the_byte_limit_and_a_clock_step_back() {
        let limits = Limits { max_stale_bytes: 8192, max_stale: Duration::from_secs(10) };
        let mut p = FixedInterval::default();
        let mut v = OpenVct::new(1);
        v.record_write(1, 0, 4096, at(100));
        assert!(!p.should_close(&v, &limits, at(100)));
        v.record_write(1, 1, 4096, at(101));
        assert!(p.should_close(&v, &limits, at(101)), "8 KiB reached");
        let mut v = OpenVct::new(2);
        v.record_write(1, 0, 4096, at(50));
        assert!(!p.should_close(&v, &limits, at(50)), "the clock went back: the period restarts");
        assert!(!p.should_close(&v, &limits, at(59)));
        assert!(p.should_close(&v, &limits, at(60)));
    }
}
