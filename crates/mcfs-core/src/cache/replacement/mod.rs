//! Replacement policies: which cached page reclaim takes next. Each policy
//! is one file, made by name with `by_name` (config key
//! `cache.replacement`); the cache notifies it of every page that comes in,
//! is used, pinned, unpinned or leaves, and asks it for a victim.
//!
//! A policy tracks only the pages reclaim may take (unpinned ones); a page
//! keeps its per-page state in the word `meta` of its cache entry, which
//! the policy alone reads and writes, so a pinned page keeps its place for
//! when it is unpinned. `FastTrack` wraps any base policy: it keeps one
//! instance per owner app and takes pages in FastTrack's order across them
//! (the way libCacheSim composes algorithms); `fasttrack+lru` is the
//! default.

mod fasttrack;
mod lru;

pub use fasttrack::FastTrack;
pub use lru::Lru;

use super::AppUsage;
use crate::types::Ino;
use crate::vct::AppId;

/// A cached page: (inode, page index).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PageKey {
    pub ino: Ino,
    pub idx: u64,
}

/// What reclaim should do next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Victim {
    /// Drop this unpinned page.
    Evict(PageKey),
    /// Move this unpinned page to the tier the placement policy names for
    /// demotions (evicted if it names none).
    Demote(PageKey),
    /// No page may go before a checkpoint makes some clean.
    Checkpoint(Scope),
}

/// Whose dirty pages a checkpoint must commit before reclaim goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Apps other than the spared one (FastTrack's background apps).
    Background,
    /// Every app.
    All,
}

/// What a victim is chosen for.
pub struct Ask<'a> {
    /// The app whose pages go last (FastTrack PR: the foreground app).
    pub spared: Option<AppId>,
    /// The caller cannot wait for other apps' commits: skip the step that
    /// asks for them.
    pub past_background_dirty: bool,
    /// Pages each app owns, by app id.
    pub usage: &'a [AppUsage],
}

pub trait ReplacementPolicy: Send {
    /// An unpinned page came in; `tick` orders events (it only grows).
    fn on_insert(&mut self, page: PageKey, owner: AppId, tick: u64, meta: &mut u64);
    /// `owner` used the page, which `before` owned; `pinned`: it is not
    /// reclaimable.
    fn on_access(&mut self, page: PageKey, before: AppId, owner: AppId, pinned: bool, tick: u64, meta: &mut u64);
    /// The page's first pin: reclaim may not take it.
    fn on_pin(&mut self, page: PageKey, owner: AppId, meta: &mut u64);
    /// Its last pin went: reclaimable again.
    fn on_unpin(&mut self, page: PageKey, owner: AppId, meta: &mut u64);
    /// The page left the cache.
    fn on_remove(&mut self, page: PageKey, owner: AppId, pinned: bool, meta: u64);
    fn victim(&mut self, ask: &Ask) -> Victim;
    /// The unpinned page this policy would take first, with a rank that
    /// orders it against other instances fed the same ticks (lower first):
    /// what a wrapper composes.
    fn first(&mut self) -> Option<(PageKey, u64)>;
    /// Whether the page is in this policy's reclaim lists.
    fn lists(&self, page: PageKey, owner: AppId, meta: u64) -> bool;
    /// Pages in its reclaim lists.
    fn listed(&self) -> u64;
}

/// Names `by_name` accepts.
pub const REPLACEMENT_NAMES: &[&str] = &["fasttrack+lru", "lru"];

/// A fresh instance of the policy registered under `name` (validated by
/// `Config::validate`). A base policy `B` is registered alone and as
/// `fasttrack+B`, `FastTrack<B>`.
pub fn by_name(name: &str) -> Option<Box<dyn ReplacementPolicy>> {
    match name {
        "lru" => Some(Box::new(Lru::default())),
        "fasttrack+lru" => Some(Box::new(FastTrack::<Lru>::default())),
        _ => None,
    }
}
