//! Least recently used: unpinned pages by the tick of their last use;
//! `meta` holds that tick, so an unpinned page goes back to its place.

use super::{Ask, PageKey, ReplacementPolicy, Scope, Victim};
use crate::vct::AppId;
use std::collections::BTreeMap;

#[derive(Default)]
pub struct Lru {
    by_use: BTreeMap<u64, PageKey>,
}

impl ReplacementPolicy for Lru {
    fn on_insert(&mut self, page: PageKey, _owner: AppId, tick: u64, meta: &mut u64) {
        *meta = tick;
        self.by_use.insert(tick, page);
    }

    fn on_access(&mut self, page: PageKey, _before: AppId, _owner: AppId, pinned: bool, tick: u64, meta: &mut u64) {
        if !pinned {
            self.by_use.remove(meta);
            self.by_use.insert(tick, page);
        }
        *meta = tick;
    }

    fn on_pin(&mut self, _page: PageKey, _owner: AppId, meta: &mut u64) {
        self.by_use.remove(meta);
    }

    fn on_unpin(&mut self, page: PageKey, _owner: AppId, meta: &mut u64) {
        self.by_use.insert(*meta, page);
    }

    fn on_remove(&mut self, _page: PageKey, _owner: AppId, pinned: bool, meta: u64) {
        if !pinned {
            self.by_use.remove(&meta);
        }
    }

    fn victim(&self, _ask: &Ask) -> Victim {
        self.first().map_or(Victim::Checkpoint(Scope::All), |(page, _)| Victim::Evict(page))
    }

    fn first(&self) -> Option<(PageKey, u64)> {
        self.by_use.first_key_value().map(|(tick, page)| (*page, *tick))
    }

    fn lists(&self, page: PageKey, _owner: AppId, meta: u64) -> bool {
        self.by_use.get(&meta) == Some(&page)
    }

    fn listed(&self) -> u64 {
        self.by_use.len() as u64
    }
}
