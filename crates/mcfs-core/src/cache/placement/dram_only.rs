//! Every page in DRAM (tier 0); nothing is demoted.

use super::PlacementPolicy;
use crate::cache::tier::TierId;

pub struct DramOnly;

impl PlacementPolicy for DramOnly {
    fn fill(&self) -> TierId {
        0
    }

    fn write(&self) -> TierId {
        0
    }

    fn demote(&self, _from: TierId) -> Option<TierId> {
        None
    }
}
