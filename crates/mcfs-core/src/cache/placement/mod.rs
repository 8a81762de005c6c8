//! Placement policies: which tier a page goes to when it is read in from
//! the backing store, when a write brings it in, and when reclaim demotes
//! it. Each policy is one file, made by name with `by_name` (config key
//! `cache.placement`), which also names the tiers it places into.

mod dram_only;

pub use dram_only::DramOnly;

use super::tier::TierId;

pub trait PlacementPolicy: Send {
    /// The tier a page read from the backing store goes to.
    fn fill(&self) -> TierId;
    /// The tier a page a write brings in goes to.
    fn write(&self) -> TierId;
    /// The tier a page demoted from `from` goes to; `None`: it is evicted.
    fn demote(&self, from: TierId) -> Option<TierId>;
}

/// Names `by_name` accepts.
pub const PLACEMENT_NAMES: &[&str] = &["dram"];

/// A fresh instance of the policy registered under `name` (validated by
/// `Config::validate`).
pub fn by_name(name: &str) -> Option<Box<dyn PlacementPolicy>> {
    match name {
        "dram" => Some(Box::new(DramOnly)),
        _ => None,
    }
}
