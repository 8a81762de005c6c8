//! The first policy (persistent file cache, seed 000): an open VCT closes when
//! it holds `max_stale_bytes` or its oldest entry is `max_stale_seconds` old.
//! Stateless: it looks at nothing but the limits.

use super::{Limits, TransactionPolicy};
use crate::vct::OpenVct;
use std::time::SystemTime;

pub struct StalenessLimit;

impl TransactionPolicy for StalenessLimit {
    fn should_close(&mut self, vct: &OpenVct, limits: &Limits, now: SystemTime) -> bool {
        self.may_close(vct, limits, now)
    }

    fn may_close(&self, vct: &OpenVct, limits: &Limits, now: SystemTime) -> bool {
        limits.reached(vct, now)
    }

    /// An empty VCT reaches no limit (both are at least 1).
    fn heeds_empty_vcts(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn closes_on_bytes_or_age_and_not_before() {
        let limits = Limits { max_stale_bytes: 8192, max_stale: Duration::from_secs(120) };
        let t0 = UNIX_EPOCH + Duration::from_secs(1000);
        let mut v = OpenVct::new(1);
        let mut p = StalenessLimit;
        assert!(!p.should_close(&v, &limits, t0), "an empty VCT never closes");
        v.record_write(2, 0, 4096, t0);
        assert!(!p.should_close(&v, &limits, t0 + Duration::from_secs(119)));
        assert!(p.should_close(&v, &limits, t0 + Duration::from_secs(120)));
        v.record_write(2, 1, 4096, t0);
        assert!(p.should_close(&v, &limits, t0));
        assert!(p.may_close(&v, &limits, t0) && !p.may_close(&OpenVct::new(2), &limits, t0));
    }
}
