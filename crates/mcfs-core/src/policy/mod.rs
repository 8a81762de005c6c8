//! Policies: when to close an app's open VCT (the transactioning policy of
//! MobiFS §4.4). Each policy is one file behind `TransactionPolicy`, made by
//! name with `transaction_policy` so the mount and the simulator share them.

mod staleness_limit;

pub use staleness_limit::StalenessLimit;

use crate::vct::OpenVct;
use std::time::{Duration, SystemTime};

/// Names accepted by `transaction_policy` in the config.
pub const POLICY_NAMES: &[&str] = &["staleness-limit"];

/// The limits an app runs under right now.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_stale_bytes: u64,
    pub max_stale: Duration,
}

pub trait TransactionPolicy: Send + Sync {
    /// Whether the open VCT should close now.
    fn should_close(&self, vct: &OpenVct, limits: &Limits, now: SystemTime) -> bool;
}

/// The policy registered under `name` (validated by `Config::validate`).
pub fn by_name(name: &str) -> Option<Box<dyn TransactionPolicy>> {
    match name {
        "staleness-limit" => Some(Box::new(StalenessLimit)),
        _ => None,
    }
}
