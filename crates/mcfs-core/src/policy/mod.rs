//! Policies of MobiFS §5. Each algorithm is one file.
//!
//! Transactioning policies decide when to close an app's open VCT (MobiFS
//! §4.4, §5.2). Each sits behind `TransactionPolicy`, is made by name with
//! `transaction_policy` so the mount and the simulator share them, and every
//! app owns its own instance (a policy may keep state about that app's
//! writes). Whatever a policy decides, `Limits` bound the open VCT: it closes
//! once it holds `max_stale_bytes` or its first entry is `max_stale` old
//! (invariant 2).
//!
//! `interval` (user-idle interval prediction, §5.3, scored by
//! `prediction_score`) and `schedule` (multi-app checkpoint scheduling,
//! §5.4) decide when closed VCTs are checkpointed: with an `idle_predictor`
//! configured, the checkpointer waits for predicted idle time (see
//! `checkpoint`).

pub mod interval;
pub mod prediction_score;
pub mod schedule;

mod ext4_like;
mod fixed_interval;
mod on_fsync;
mod staleness_limit;
mod tpl;

pub use ext4_like::Ext4Like;
pub use fixed_interval::FixedInterval;
pub use on_fsync::CloseOnFsync;
pub use staleness_limit::StalenessLimit;
pub use tpl::TradeoffPointLocation;

use crate::vct::OpenVct;
use std::time::{Duration, SystemTime};

/// Names accepted by `transaction_policy` in the config. `persistent-cache`
/// is `staleness-limit` under its seed's name (with the default limits it is
/// that paper's policy: expiry 2 min, writeback 1 min, background ratio 50 %,
/// battery fallback); `ext4-like` is the baseline MobiFS compares against.
pub const POLICY_NAMES: &[&str] =
    &["staleness-limit", "persistent-cache", "tpl", "fixed-interval", "close-on-fsync", "ext4-like"];

/// The limits an app runs under right now.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_stale_bytes: u64,
    pub max_stale: Duration,
}

impl Limits {
    /// Whether `vct` has reached either bound: every policy closes then.
    pub fn reached(&self, vct: &OpenVct, now: SystemTime) -> bool {
        let too_old = vct.first_entry_at.is_some_and(|t| crate::clock::aged(t, self.max_stale, now));
        vct.bytes >= self.max_stale_bytes || too_old
    }
}

/// One app's transactioning policy. The engine keeps one instance per app and
/// calls `should_close` after each write of the app and at each `tick`; when
/// it returns true the engine closes the open VCT (the VCT's `id` changes, so
/// a policy can tell a new VCT from the old one). VCTs also close for reasons
/// of their own (memory pressure, sync mode, `mcfs ctl checkpoint`).
pub trait TransactionPolicy: Send + Sync {
    /// Whether the open VCT should close now.
    fn should_close(&mut self, vct: &OpenVct, limits: &Limits, now: SystemTime) -> bool;

    /// Whether `should_close` could say yes now, without asking it (it may
    /// change the policy's state): sync-point mode has the kernel hand over
    /// its dirty pages only before a sync point that may close the VCT
    /// (`sync_points::boundary_possible`). Yes unless a policy knows better.
    fn may_close(&self, _vct: &OpenVct, _limits: &Limits, _now: SystemTime) -> bool {
        true
    }

    /// Whether `should_close` may change the policy's state, or answer yes,
    /// for a VCT that holds no entry: the background step asks about every
    /// app's VCT if so, else only about those holding entries (a long
    /// replay sees many apps, few of them writing at a time; `Apps::polled_at_tick`).
    /// Yes unless a policy knows better.
    fn heeds_empty_vcts(&self) -> bool {
        true
    }

    /// The app called fsync / fdatasync / sync while in memory mode.
    fn on_fsync(&mut self, _now: SystemTime) {}

    /// Whether fsync must wait for a durable commit (as in sync mode)
    /// whatever the app's mode: baselines that model a classic file system.
    fn fsync_durable(&self) -> bool {
        false
    }
}

/// A fresh instance of the policy registered under `name` (validated by
/// `Config::validate`).
pub fn by_name(name: &str) -> Option<Box<dyn TransactionPolicy>> {
    match name {
        "staleness-limit" | "persistent-cache" => Some(Box::new(StalenessLimit)),
        "tpl" => Some(Box::new(TradeoffPointLocation::default())),
        "fixed-interval" => Some(Box::new(FixedInterval::default())),
        "close-on-fsync" => Some(Box::new(CloseOnFsync::default())),
        "ext4-like" => Some(Box::new(Ext4Like::default())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_name_makes_a_policy() {
        for name in POLICY_NAMES {
            assert!(by_name(name).is_some(), "{name} is listed but not made");
        }
        assert!(by_name("lru").is_none());
    }
}
