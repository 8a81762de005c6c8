//! The ext4-like baseline of MobiFS's evaluation: the journal commits every
//! 5 s whatever the app wrote (ext4's default `commit=5`), and fsync is
//! synchronous — it returns once the app's data is durable. Only the byte
//! limit of the config still applies; the time limit is ext4's own period.

use super::{FixedInterval, Limits, TransactionPolicy};
use crate::vct::OpenVct;
use std::time::{Duration, SystemTime};

/// ext4's default journal commit interval.
pub const COMMIT_INTERVAL: Duration = Duration::from_secs(5);

#[derive(Default)]
pub struct Ext4Like {
    period: FixedInterval,
}

impl TransactionPolicy for Ext4Like {
    fn should_close(&mut self, vct: &OpenVct, limits: &Limits, now: SystemTime) -> bool {
        let ext4 = Limits { max_stale: COMMIT_INTERVAL, ..*limits };
        self.period.should_close(vct, &ext4, now)
    }

    fn fsync_durable(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    #[test]
    fn commits_every_five_seconds_and_makes_fsync_durable() {
        let at = |s: u64| UNIX_EPOCH + Duration::from_secs(s);
        let limits = Limits { max_stale_bytes: 1 << 30, max_stale: Duration::from_secs(120) };
        let mut p = Ext4Like::default();
        let mut v = OpenVct::new(1);
        assert!(!p.should_close(&v, &limits, at(100)));
        v.record_write(1, 0, 4096, at(101));
        assert!(!p.should_close(&v, &limits, at(104)));
        assert!(p.should_close(&v, &limits, at(105)), "5 s, not the config's 120 s");
        assert!(p.fsync_durable());
    }
}
