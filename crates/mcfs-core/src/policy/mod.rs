//! Policies: when to close an app's open VCT. Each policy is one file behind
//! `TransactionPolicy`, registered by name in `POLICY_NAMES`.

/// Names accepted by `transaction_policy` in the config.
pub const POLICY_NAMES: &[&str] = &["staleness-limit"];
