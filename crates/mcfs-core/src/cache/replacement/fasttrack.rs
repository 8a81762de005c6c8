//! FastTrack's reclaim order (seed 001 §4.3) around any base policy: one
//! base instance per owner app, and with a spared (foreground) app, pages
//! go as background clean > background dirty (after a checkpoint of the
//! background apps) > foreground clean > foreground dirty (after a full
//! checkpoint), each class in the base policy's order across its apps.
//! Without a spared app it is the base policy across all apps.
//!
//! Invariant: a page is in the instance of its owner; a page whose owner
//! changes while unpinned moves between instances. `heads` holds the first
//! page's rank of every owner not `stale`: a victim is found among the
//! owners an event touched since the last search, not among all of them (a
//! phone block trace has a thousand owners, its threads, and scanning them
//! all at each eviction took 60 % of its replay).

use super::{Ask, PageKey, ReplacementPolicy, Scope, Victim};
use crate::vct::AppId;
use std::collections::BTreeSet;

#[derive(Default)]
pub struct FastTrack<B> {
    /// Base instances by owner app id.
    owners: Vec<B>,
    /// Each owner's first rank as `heads` holds it (`None`: none listed).
    head_of: Vec<Option<u64>>,
    /// (first rank, owner) of every owner with a listed page, up to date
    /// but for the owners in `stale`.
    heads: BTreeSet<(u64, AppId)>,
    /// Owners changed since their head was last put in `heads`, each once.
    stale: Vec<AppId>,
    is_stale: Vec<bool>,
}

impl<B: ReplacementPolicy + Default> FastTrack<B> {
    /// The owner's instance, to change: its head is looked at again before
    /// the next victim.
    fn owner(&mut self, app: AppId) -> &mut B {
        if self.owners.len() <= app {
            self.owners.resize_with(app + 1, B::default);
            self.head_of.resize(app + 1, None);
            self.is_stale.resize(app + 1, false);
        }
        if !std::mem::replace(&mut self.is_stale[app], true) {
            self.stale.push(app);
        }
        &mut self.owners[app]
    }

    /// Brings `heads` up to date.
    fn refresh(&mut self) {
        for app in std::mem::take(&mut self.stale) {
            self.is_stale[app] = false;
            let head = self.owners[app].first().map(|(_, rank)| rank);
            if let Some(old) = std::mem::replace(&mut self.head_of[app], head) {
                self.heads.remove(&(old, app));
            }
            if let Some(rank) = head {
                self.heads.insert((rank, app));
            }
        }
    }

    /// The first page, by rank (the lower owner on a tie), of the apps
    /// `eligible` accepts.
    fn first_of(&mut self, eligible: impl Fn(AppId) -> bool) -> Option<(PageKey, u64)> {
        self.refresh();
        let &(_, app) = self.heads.iter().find(|(_, app)| eligible(*app))?;
        self.owners[app].first()
    }
}

fn evict_or(first: Option<(PageKey, u64)>, scope: Scope) -> Victim {
    first.map_or(Victim::Checkpoint(scope), |(page, _)| Victim::Evict(page))
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
        if let Some((page, _)) = self.first_of(|app| app != fg) {
            return Victim::Evict(page);
        }
        let background_dirty = ask.usage.iter().enumerate().any(|(app, usage)| app != fg && usage.pinned > 0);
        if background_dirty && !ask.past_background_dirty {
            return Victim::Checkpoint(Scope::Background);
        }
        evict_or(self.owners.get_mut(fg).and_then(B::first), Scope::All)
    }

    fn first(&mut self) -> Option<(PageKey, u64)> {
        self.first_of(|_| true)
    }

    fn lists(&self, page: PageKey, owner: AppId, meta: u64) -> bool {
        self.owners.get(owner).is_some_and(|base| base.lists(page, owner, meta))
    }

    fn listed(&self) -> u64 {
        self.owners.iter().map(B::listed).sum()
    }
}
