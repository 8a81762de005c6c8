//! Least recently used: unpinned pages by the tick of their last use;
//! `meta` holds that tick, so an unpinned page goes back to its place.
//!
//! The page used last waits in `newest`, outside the ordered map: a write
//! pins the page it has just used, and a page written whole comes in and is
//! used at once, so the map sees neither the insert nor the removal (two
//! ordered-map operations of the three a page write made).

use super::{Ask, PageKey, ReplacementPolicy, Scope, Victim};
use crate::vct::AppId;
use std::collections::BTreeMap;

#[derive(Default)]
pub struct Lru {
    by_use: BTreeMap<u64, PageKey>,
    /// A listed page and its tick, kept out of `by_use` until another page
    /// takes its place here.
    newest: Option<(u64, PageKey)>,
}

impl Lru {
    /// Lists `page` at `tick`, in `newest`; the page there moves to the map.
    fn list_newest(&mut self, tick: u64, page: PageKey) {
        if let Some((tick, page)) = self.newest.replace((tick, page)) {
            self.by_use.insert(tick, page);
        }
    }

    fn unlist(&mut self, tick: u64) {
        if self.newest.is_some_and(|(newest, _)| newest == tick) {
            self.newest = None;
        } else {
            self.by_use.remove(&tick);
        }
    }
}

impl ReplacementPolicy for Lru {
    fn on_insert(&mut self, page: PageKey, _owner: AppId, tick: u64, meta: &mut u64) {
        *meta = tick;
        self.list_newest(tick, page);
    }

    fn on_access(&mut self, page: PageKey, _before: AppId, _owner: AppId, pinned: bool, tick: u64, meta: &mut u64) {
        if !pinned {
            self.unlist(*meta);
            self.list_newest(tick, page);
        }
        *meta = tick;
    }

    fn on_pin(&mut self, _page: PageKey, _owner: AppId, meta: &mut u64) {
        self.unlist(*meta);
    }

    fn on_unpin(&mut self, page: PageKey, _owner: AppId, meta: &mut u64) {
        self.by_use.insert(*meta, page);
    }

    fn on_remove(&mut self, _page: PageKey, _owner: AppId, pinned: bool, meta: u64) {
        if !pinned {
            self.unlist(meta);
        }
    }

    fn victim(&self, _ask: &Ask) -> Victim {
        self.first().map_or(Victim::Checkpoint(Scope::All), |(page, _)| Victim::Evict(page))
    }

    fn first(&self) -> Option<(PageKey, u64)> {
        let oldest = self.by_use.first_key_value().map(|(tick, page)| (*page, *tick));
        let newest = self.newest.map(|(tick, page)| (page, tick));
        oldest.into_iter().chain(newest).min_by_key(|(_, tick)| *tick)
    }

    fn lists(&self, page: PageKey, _owner: AppId, meta: u64) -> bool {
        self.newest == Some((meta, page)) || self.by_use.get(&meta) == Some(&page)
    }

    fn listed(&self) -> u64 {
        self.by_use.len() as u64 + u64::from(self.newest.is_some())
    }
}
