//! Least recently used: unpinned pages by the tick of their last use;
//! `meta` holds that tick, so an unpinned page goes back to its place.
//!
//! Pages listed since reclaim last asked wait in `unsorted`, a hash map,
//! and go into the ordered map only when it asks (`first`): a page used,
//! pinned, unpinned and used again between two reclaims — every page while
//! the cache has room — costs hash map operations, not ordered-map ones.

use super::{Ask, PageKey, ReplacementPolicy, Scope, Victim};
use crate::nearby::NearbyHasher;
use crate::vct::AppId;
use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasherDefault;

/// Room `unsorted` keeps once drained: about what comes between two
/// reclaims when the cache is full.
const UNSORTED_KEPT: usize = 64;

#[derive(Default)]
pub struct Lru {
    by_use: BTreeMap<u64, PageKey>,
    /// Listed pages by tick, not in `by_use` yet: pages used one after the
    /// other sit side by side, and a commit pins them again in that order.
    unsorted: HashMap<u64, PageKey, BuildHasherDefault<NearbyHasher>>,
}

impl Lru {
    fn list(&mut self, tick: u64, page: PageKey) {
        self.unsorted.insert(tick, page);
    }

    fn unlist(&mut self, tick: u64) {
        if self.unsorted.remove(&tick).is_none() {
            self.by_use.remove(&tick);
        }
    }
}

impl ReplacementPolicy for Lru {
    fn on_insert(&mut self, page: PageKey, _owner: AppId, tick: u64, meta: &mut u64) {
        *meta = tick;
        self.list(tick, page);
    }

    // `on_access` and `on_pin` run for every page a write touches, through
    // `FastTrack`'s: asked to inline, as the compiler stopped inlining them on
    // its own after an unrelated change in this crate (about 4 M more
    // instructions per 100,000 replayed events; docs/BENCHMARKS.md, wp-simspeed7).
    #[inline]
    fn on_access(&mut self, page: PageKey, _before: AppId, _owner: AppId, pinned: bool, tick: u64, meta: &mut u64) {
        if !pinned {
            self.unlist(*meta);
            self.list(tick, page);
        }
        *meta = tick;
    }

    #[inline]
    fn on_pin(&mut self, _page: PageKey, _owner: AppId, meta: &mut u64) {
        self.unlist(*meta);
    }

    fn on_unpin(&mut self, page: PageKey, _owner: AppId, meta: &mut u64) {
        self.list(*meta, page);
    }

    fn on_remove(&mut self, _page: PageKey, _owner: AppId, pinned: bool, meta: u64) {
        if !pinned {
            self.unlist(meta);
        }
    }

    fn victim(&mut self, _ask: &Ask) -> Victim {
        self.first().map_or(Victim::Checkpoint(Scope::All), |(page, _)| Victim::Evict(page))
    }

    fn first(&mut self) -> Option<(PageKey, u64)> {
        if !self.unsorted.is_empty() {
            self.by_use.extend(self.unsorted.drain());
            // Draining walks every bucket: a table grown by a large commit would slow every later reclaim.
            self.unsorted.shrink_to(UNSORTED_KEPT);
        }
        self.by_use.first_key_value().map(|(tick, page)| (*page, *tick))
    }

    fn lists(&self, page: PageKey, _owner: AppId, meta: u64) -> bool {
        self.unsorted.get(&meta) == Some(&page) || self.by_use.get(&meta) == Some(&page)
    }

    fn listed(&self) -> u64 {
        (self.by_use.len() + self.unsorted.len()) as u64
    }
}
