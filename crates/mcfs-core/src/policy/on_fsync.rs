//! Close on fsync: every fsync / fdatasync / sync an app issues in memory
//! mode ends its open VCT, so each VCT is exactly what the app declared a
//! unit (the boundary the app itself would make durable under ext4). The
//! fsync returns at once; only the transaction boundary is kept. Between
//! fsyncs the staleness and time limits apply. Invariant: a pending fsync is
//! consumed by the next call, closed or not (an fsync on an empty VCT marks
//! no boundary).

use super::{Limits, TransactionPolicy};
use crate::vct::OpenVct;
use std::time::SystemTime;

#[derive(Default)]
pub struct CloseOnFsync {
    fsync_pending: bool,
}

impl TransactionPolicy for CloseOnFsync {
    fn should_close(&mut self, vct: &OpenVct, limits: &Limits, now: SystemTime) -> bool {
        let fsynced = std::mem::take(&mut self.fsync_pending);
        (fsynced && vct.first_entry_at.is_some()) || limits.reached(vct, now)
    }

    fn on_fsync(&mut self, _now: SystemTime) {
        self.fsync_pending = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn closes_after_fsync_once_and_otherwise_at_the_limits() {
        let limits = Limits { max_stale_bytes: 3 * 4096, max_stale: Duration::from_secs(60) };
        let t = UNIX_EPOCH + Duration::from_secs(10);
        let mut p = CloseOnFsync::default();
        let mut v = OpenVct::new(1);
        v.record_write(1, 0, 4096, t);
        assert!(!p.should_close(&v, &limits, t));
        p.on_fsync(t);
        assert!(p.should_close(&v, &limits, t), "the fsync is a boundary");
        let mut v = OpenVct::new(2);
        v.record_write(1, 0, 4096, t);
        assert!(!p.should_close(&v, &limits, t), "one fsync closes one VCT");
        v.record_write(1, 1, 4096, t);
        v.record_write(1, 2, 4096, t);
        assert!(p.should_close(&v, &limits, t), "the byte limit");
    }

    #[test]
    fn an_fsync_on_an_empty_vct_is_no_boundary_later() {
        let limits = Limits { max_stale_bytes: 1 << 30, max_stale: Duration::from_secs(60) };
        let t = UNIX_EPOCH + Duration::from_secs(10);
        let mut p = CloseOnFsync::default();
        let mut v = OpenVct::new(1);
        p.on_fsync(t);
        assert!(!p.should_close(&v, &limits, t));
        v.record_write(1, 0, 4096, t);
        assert!(!p.should_close(&v, &limits, t), "the earlier fsync was consumed");
    }
}
