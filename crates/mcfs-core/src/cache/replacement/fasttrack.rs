//! FastTrack's reclaim order (seed 001 §4.3) around any base policy: one
//! base instance per owner app, and with a spared (foreground) app, pages
//! go as background clean > background dirty (after a checkpoint of the
//! background apps) > foreground clean > foreground dirty (after a full
//! checkpoint), each class in the base policy's order across its apps.
//! Without a spared app it is the base policy across all apps.
//!
//! Invariant: a page is in the instance of its owner; a page whose owner
//! changes while unpinned moves between instances.

use super::{Ask, PageKey, ReplacementPolicy, Scope, Victim};
use crate::vct::AppId;

#[derive(Default)]
pub struct FastTrack<B> {
    /// Base instances by owner app id.
    owners: Vec<B>,
}

impl<B: ReplacementPolicy + Default> FastTrack<B> {
    fn owner(&mut self, app: AppId) -> &mut B {
        if self.owners.len() <= app {
            self.owners.resize_with(app + 1, B::default);
        }
        &mut self.owners[app]
    }

    /// The first page, by rank, of the apps `eligible` accepts.
    fn first_of(&mut self, eligible: impl Fn(AppId) -> bool) -> Option<PageKey> {
        let heads = self.owners.iter_mut().enumerate().filter(|(app, _)| eligible(*app));
        heads.filter_map(|(_, base)| base.first()).min_by_key(|(_, rank)| *rank).map(|(page, _)| page)
    }
}

fn evict_or(page: Option<PageKey>, scope: Scope) -> Victim {
    page.map_or(Victim::Checkpoint(scope), Victim::Evict)
}

impl<B: ReplacementPolicy + Default> ReplacementPolicy for FastTrack<B> {
    fn on_insert(&mut self, page: PageKey, owner: AppId, tick: u64, meta: &mut u64) {
        self.owner(owner).on_insert(page, owner, tick, meta);
    }

    fn on_access(&mut self, page: PageKey, before: AppId, owner: AppId, pinned: bool, tick: u64, meta: &mut u64) {
        if before != owner && !pinned {
            self.owner(before).on_remove(page, before, false, *meta);
            self.owner(owner).on_insert(page, owner, tick, meta);
        } else {
            self.owner(owner).on_access(page, before, owner, pinned, tick, meta);
        }
    }

    fn on_pin(&mut self, page: PageKey, owner: AppId, meta: &mut u64) {
        self.owner(owner).on_pin(page, owner, meta);
    }

    fn on_unpin(&mut self, page: PageKey, owner: AppId, meta: &mut u64) {
        self.owner(owner).on_unpin(page, owner, meta);
    }

    fn on_remove(&mut self, page: PageKey, owner: AppId, pinned: bool, meta: u64) {
        self.owner(owner).on_remove(page, owner, pinned, meta);
    }

    fn victim(&mut self, ask: &Ask) -> Victim {
        let Some(fg) = ask.spared else { return evict_or(self.first_of(|_| true), Scope::All) };
        if let Some(page) = self.first_of(|app| app != fg) {
            return Victim::Evict(page);
        }
        let background_dirty = ask.usage.iter().enumerate().any(|(app, usage)| app != fg && usage.pinned > 0);
        if background_dirty && !ask.past_background_dirty {
            return Victim::Checkpoint(Scope::Background);
        }
        evict_or(self.first_of(|app| app == fg), Scope::All)
    }

    fn first(&mut self) -> Option<(PageKey, u64)> {
        self.owners.iter_mut().filter_map(B::first).min_by_key(|(_, rank)| *rank)
    }

    fn lists(&self, page: PageKey, owner: AppId, meta: u64) -> bool {
        self.owners.get(owner).is_some_and(|base| base.lists(page, owner, meta))
    }

    fn listed(&self) -> u64 {
        self.owners.iter().map(B::listed).sum()
    }
}
