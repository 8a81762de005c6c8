//! The page cache: 4 KiB pages of file data, the one API the engine uses
//! for them. A page table maps (inode, page index) to an entry naming the
//! tier that holds the page (`tier`: DRAM today), its slot there, its pins,
//! its owner app and the apps that used it. Which page reclaim takes next
//! is a `ReplacementPolicy`'s choice (`replacement`), which tier a page goes
//! to a `PlacementPolicy`'s (`placement`), both chosen by name in the
//! config (`cache.replacement`, `cache.placement`; docs/ENGINE.md says how
//! a new tier or policy plugs in).
//!
//! A page is *pinned* while a VCT (open or closed, not yet committed)
//! refers to it; pinned pages are dirty and never reclaimed. Closing a VCT
//! freezes each of its pages as a `PageVersion` that the tier keeps as it
//! was whatever later writes do (DRAM: copy-on-write). Every page has an
//! *owner*: the app that last brought it in, read it or wrote it.
//!
//! Invariants (`check_invariants`): every page is in the table once and
//! counted once — in its tier's slots, in its owner's clean or pinned
//! count, and in the replacement policy's lists exactly when unpinned; clean
//! pages exceed the tiers' capacity by at most one fill (`MAX_FILL_PAGES`),
//! as long as every fill and commit reclaims first (the engine's do).

mod dram;
mod placement;
mod replacement;
#[cfg(test)]
mod tests;
mod tier;

pub use placement::{PlacementPolicy, PLACEMENT_NAMES};
pub use replacement::{Ask, PageKey, ReplacementPolicy, Scope, Victim, REPLACEMENT_NAMES};
pub use tier::{Durability, NewPage, PageBuf, PageVersion, Slot, Tier, TierId, VersionContent, ZERO_PAGE};

use crate::backend::KnownContent;
use crate::config::Config;
use crate::types::{Ino, InoMap, PAGE_SIZE};
use crate::vct::AppId;
use std::collections::{btree_map, BTreeMap};
use std::ops::Range;

/// Pages one fill from the backing store brings in at most (128 KiB): what
/// clean pages may take the cache past its capacity by (a fill that may not
/// take the foreground app's pages, docs/ENGINE.md "Memory").
pub const MAX_FILL_PAGES: u64 = 32;

/// Pages one app owns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AppUsage {
    pub clean: u64,
    pub pinned: u64,
}

impl AppUsage {
    fn of_kind(&mut self, pinned: bool) -> &mut u64 {
        if pinned {
            &mut self.pinned
        } else {
            &mut self.clean
        }
    }
}

/// Apps that used a page, as bits (for launch sets); apps 63 and up share
/// the last bit.
#[derive(Clone, Copy, Debug, Default)]
struct AppSet(u64);

impl AppSet {
    fn bit(app: AppId) -> u64 {
        1 << app.min(63)
    }

    fn insert(&mut self, app: AppId) {
        self.0 |= AppSet::bit(app);
    }

    fn contains(&self, app: AppId) -> bool {
        self.0 & AppSet::bit(app) != 0
    }
}

/// A page table entry.
struct Entry {
    tier: TierId,
    slot: Slot,
    /// Identity of the page in the cache; survives copy-on-write and
    /// demotion, not removal (a VCT unpins the page it pinned, not a
    /// later one at the same index).
    id: u64,
    /// Uncommitted VCTs that refer to the page.
    pins: u32,
    owner: AppId,
    sharers: AppSet,
    /// The replacement policy's word for this page.
    meta: u64,
}

type PageTable = InoMap<BTreeMap<u64, Entry>>;

/// Where a page that comes in comes from (placement decides by it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// Read from the backing store.
    Backing,
    /// Made by a write.
    Write,
}

/// What reclaim achieved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reclaim {
    /// There is room now.
    Made,
    /// Only a checkpoint of `Scope`'s dirty pages can make more.
    Checkpoint(Scope),
}

pub struct Cache {
    pages: PageTable,
    tiers: Vec<Box<dyn Tier>>,
    replacement: Box<dyn ReplacementPolicy>,
    placement: Box<dyn PlacementPolicy>,
    /// Pages each app owns, by app id.
    usage: Vec<AppUsage>,
    /// Orders uses for the replacement policy.
    tick: u64,
    next_id: u64,
    total: u64,
    pinned: u64,
}

fn usage_of(usage: &mut Vec<AppUsage>, app: AppId) -> &mut AppUsage {
    if usage.len() <= app {
        usage.resize(app + 1, AppUsage::default());
    }
    &mut usage[app]
}

impl Cache {
    /// The cache the config names: its policies, and a DRAM tier of
    /// `cache_size` bytes, which keeps pages of the store's `known` content
    /// without their bytes (`tier`).
    pub fn new(config: &Config, known: Option<KnownContent>) -> Cache {
        let replacement = replacement::by_name(&config.cache.replacement);
        let placement = placement::by_name(&config.cache.placement);
        Cache::with(
            vec![Box::new(dram::Dram::new(0, config.cache_size, known))],
            replacement.expect("Config::validate checks cache.replacement"),
            placement.expect("Config::validate checks cache.placement"),
        )
    }

    /// A cache of these tiers (a `TierId` is an index in `tiers`) and policies.
    pub fn with(
        tiers: Vec<Box<dyn Tier>>,
        replacement: Box<dyn ReplacementPolicy>,
        placement: Box<dyn PlacementPolicy>,
    ) -> Cache {
        Cache {
            pages: PageTable::default(),
            tiers,
            replacement,
            placement,
            usage: Vec::new(),
            tick: 0,
            next_id: 0,
            total: 0,
            pinned: 0,
        }
    }

    /// Bytes held in every tier: pages plus versions only closed VCTs hold.
    pub fn bytes(&self) -> u64 {
        self.tiers.iter().map(|t| t.used_bytes()).sum()
    }

    /// Bytes no reclaim may take: pinned pages and kept versions.
    pub fn dirty_bytes(&self) -> u64 {
        self.bytes() - (self.total - self.pinned) * PAGE_SIZE
    }

    pub fn contains(&self, ino: Ino, idx: u64) -> bool {
        self.pages.get(&ino).is_some_and(|m| m.contains_key(&idx))
    }

    /// Inserts an unpinned page owned by `owner` in the tier placement
    /// picks for `source`; a page already there stays as it is.
    pub fn insert(&mut self, ino: Ino, idx: u64, data: NewPage, owner: AppId, source: Source) {
        let tier = self.target(source);
        let btree_map::Entry::Vacant(vacant) = self.pages.entry(ino).or_default().entry(idx) else { return };
        let slot = self.tiers[tier as usize].store(data, idx * PAGE_SIZE);
        self.tick += 1;
        self.next_id += 1;
        let mut sharers = AppSet::default();
        sharers.insert(owner);
        let mut entry = Entry { tier, slot, id: self.next_id, pins: 0, owner, sharers, meta: 0 };
        self.replacement.on_insert(PageKey { ino, idx }, owner, self.tick, &mut entry.meta);
        vacant.insert(entry);
        usage_of(&mut self.usage, owner).clean += 1;
        self.total += 1;
    }

    fn target(&self, source: Source) -> TierId {
        match source {
            Source::Backing => self.placement.fill(),
            Source::Write => self.placement.write(),
        }
    }

    /// A read by `owner`: the page's bytes; it becomes the page's owner and
    /// the page its most recent use.
    pub fn read(&mut self, ino: Ino, idx: u64, owner: AppId) -> Option<&PageBuf> {
        self.tick += 1;
        let entry = self.pages.get_mut(&ino)?.get_mut(&idx)?;
        note_use(&mut *self.replacement, &mut self.usage, PageKey { ino, idx }, entry, owner, self.tick);
        Some(self.tiers[entry.tier as usize].read(entry.slot, idx * PAGE_SIZE))
    }

    /// `read` for a caller that counts the bytes and needs none of them
    /// (the simulator's replay): whether the page is cached.
    pub fn note_read(&mut self, ino: Ino, idx: u64, owner: AppId) -> bool {
        self.tick += 1;
        let Some(entry) = self.pages.get_mut(&ino).and_then(|m| m.get_mut(&idx)) else { return false };
        note_use(&mut *self.replacement, &mut self.usage, PageKey { ino, idx }, entry, owner, self.tick);
        true
    }

    /// A write by `owner` (as `read`) of `bytes` at `within` of the page,
    /// pinned once more if `pin` says so (a VCT takes it); false if the page
    /// is not cached, and then `pin` is not called. (The caller logs the
    /// write in `pin`: one lookup of the page serves both.)
    pub fn write(
        &mut self,
        ino: Ino,
        idx: u64,
        owner: AppId,
        within: usize,
        bytes: &[u8],
        pin: impl FnOnce() -> bool,
    ) -> bool {
        let Some(entry) = self.pages.get_mut(&ino).and_then(|m| m.get_mut(&idx)) else { return false };
        self.tick += 1;
        let page = PageKey { ino, idx };
        // Pinned first, the use of a page leaving reclaim's lists does not list it again.
        if pin() {
            pin_entry(&mut *self.replacement, &mut self.usage, &mut self.pinned, page, entry);
        }
        note_use(&mut *self.replacement, &mut self.usage, page, entry, owner, self.tick);
        self.tiers[entry.tier as usize].write(entry.slot, idx * PAGE_SIZE, within, bytes);
        true
    }

    /// Zeros bytes `range` of the page if it is cached, without a use (what
    /// a truncate or punched hole cleared).
    pub fn zero(&mut self, ino: Ino, idx: u64, range: Range<usize>) {
        if let Some(entry) = self.pages.get_mut(&ino).and_then(|m| m.get_mut(&idx)) {
            self.tiers[entry.tier as usize].zero(entry.slot, idx * PAGE_SIZE, range);
        }
    }

    /// Whether page `id` (the slot a VCT pinned) is still cached unpinned.
    pub fn is_unpinned(&self, ino: Ino, idx: u64, id: u64) -> bool {
        self.pages.get(&ino).and_then(|m| m.get(&idx)).is_some_and(|e| e.id == id && e.pins == 0)
    }

    /// Pins the page once more (a closed VCT takes it); its id.
    pub fn pin(&mut self, ino: Ino, idx: u64) -> Option<u64> {
        let entry = self.pages.get_mut(&ino)?.get_mut(&idx)?;
        pin_entry(&mut *self.replacement, &mut self.usage, &mut self.pinned, PageKey { ino, idx }, entry);
        Some(entry.id)
    }

    /// A VCT that pinned page `id` committed (or was dropped); a page
    /// removed since (another id now, or none) is left alone.
    pub fn unpin(&mut self, ino: Ino, idx: u64, id: u64) {
        let Some(entry) = self.pages.get_mut(&ino).and_then(|m| m.get_mut(&idx)) else { return };
        if entry.id != id || entry.pins == 0 {
            return;
        }
        entry.pins -= 1;
        if entry.pins == 0 {
            self.replacement.on_unpin(PageKey { ino, idx }, entry.owner, &mut entry.meta);
            let usage = usage_of(&mut self.usage, entry.owner);
            usage.pinned -= 1;
            usage.clean += 1;
            self.pinned -= 1;
        }
    }

    /// The page's current bytes frozen for a closed VCT, with the page's id.
    pub fn freeze(&mut self, ino: Ino, idx: u64) -> Option<(u64, PageVersion)> {
        let entry = self.pages.get(&ino)?.get(&idx)?;
        Some((entry.id, self.tiers[entry.tier as usize].freeze(entry.slot)))
    }

    /// A closed VCT no longer needs `version` (committed, or replaced).
    pub fn release(&mut self, version: PageVersion) {
        self.tiers[version.tier() as usize].release(version);
    }

    /// Removes every page of `ino` at index `from` or beyond (truncate, unlink).
    pub fn remove_from(&mut self, ino: Ino, from: u64) {
        self.remove_range(ino, from..u64::MAX);
    }

    /// Removes the pages of `ino` at the indexes `range` holds.
    pub fn remove_range(&mut self, ino: Ino, range: Range<u64>) {
        let Some(map) = self.pages.get_mut(&ino) else { return };
        let mut removed = map.split_off(&range.start);
        map.append(&mut removed.split_off(&range.end));
        if map.is_empty() {
            self.pages.remove(&ino);
        }
        for (idx, entry) in removed {
            self.forget(PageKey { ino, idx }, entry);
        }
    }

    fn forget(&mut self, page: PageKey, entry: Entry) {
        self.tiers[entry.tier as usize].free(entry.slot);
        let pinned = entry.pins > 0;
        self.replacement.on_remove(page, entry.owner, pinned, entry.meta);
        let usage = usage_of(&mut self.usage, entry.owner);
        if pinned {
            usage.pinned -= 1;
            self.pinned -= 1;
        } else {
            usage.clean -= 1;
        }
        self.total -= 1;
    }

    /// Drops an unpinned page; false if there is none.
    fn evict(&mut self, page: PageKey) -> bool {
        let Some(map) = self.pages.get_mut(&page.ino) else { return false };
        if map.get(&page.idx).is_none_or(|e| e.pins > 0) {
            return false;
        }
        let entry = map.remove(&page.idx).expect("checked");
        if map.is_empty() {
            self.pages.remove(&page.ino);
        }
        self.forget(page, entry);
        true
    }

    /// Moves an unpinned page to the tier placement names for its
    /// demotion, or evicts it if none; false if there is no such page.
    fn demote(&mut self, page: PageKey) -> bool {
        let Some(entry) = self.pages.get_mut(&page.ino).and_then(|m| m.get_mut(&page.idx)) else { return false };
        let Some(to) = self.placement.demote(entry.tier).filter(|to| *to != entry.tier) else {
            return self.evict(page);
        };
        if entry.pins > 0 {
            return false;
        }
        let from = &mut self.tiers[entry.tier as usize];
        let offset = page.idx * PAGE_SIZE;
        let data = *from.read(entry.slot, offset);
        from.free(entry.slot);
        entry.slot = self.tiers[to as usize].store(NewPage::Copy(&data), offset);
        entry.tier = to;
        true
    }

    /// What the replacement policy would take next.
    pub fn victim(&mut self, spared: Option<AppId>, past_background_dirty: bool) -> Victim {
        self.replacement.victim(&Ask { spared, past_background_dirty, usage: &self.usage })
    }

    /// Room for `pages` more pages from `source` in the tier they go to:
    /// takes victims until they fit or only a checkpoint can make room.
    /// `spared` and `past_background_dirty` as in `Ask`.
    pub fn reclaim(
        &mut self,
        pages: u64,
        source: Source,
        spared: Option<AppId>,
        past_background_dirty: bool,
    ) -> Reclaim {
        let tier = self.target(source) as usize;
        while self.tiers[tier].used_bytes() + pages * PAGE_SIZE > self.tiers[tier].capacity() {
            let taken = match self.victim(spared, past_background_dirty) {
                Victim::Evict(page) => self.evict(page),
                Victim::Demote(page) => self.demote(page),
                Victim::Checkpoint(scope) => return Reclaim::Checkpoint(scope),
            };
            // A policy that names a page reclaim cannot take would loop for ever.
            debug_assert!(taken, "the replacement policy named a page reclaim cannot take");
            if !taken {
                return Reclaim::Checkpoint(Scope::All);
            }
        }
        Reclaim::Made
    }

    /// The inodes with pages in the cache.
    pub fn files(&self) -> impl Iterator<Item = Ino> + '_ {
        self.pages.keys().copied()
    }

    /// Checks the invariants of the module header; the error names the
    /// first broken one.
    pub fn check_invariants(&self) -> Result<(), String> {
        let (mut total, mut pinned) = (0u64, 0u64);
        let mut usage: Vec<AppUsage> = Vec::new();
        let mut in_tier = vec![0u64; self.tiers.len()];
        for (&ino, map) in &self.pages {
            if map.is_empty() {
                return Err(format!("inode {ino} has an empty page map"));
            }
            for (&idx, e) in map {
                total += 1;
                if !e.sharers.contains(e.owner) {
                    return Err(format!("page {ino}:{idx}: its owner, app {}, is not among its users", e.owner));
                }
                let Some(count) = in_tier.get_mut(e.tier as usize) else {
                    return Err(format!("page {ino}:{idx} is in tier {}, which the cache does not have", e.tier));
                };
                *count += 1;
                let listed = self.replacement.lists(PageKey { ino, idx }, e.owner, e.meta);
                let app = usage_of(&mut usage, e.owner);
                if e.pins == 0 {
                    app.clean += 1;
                    if !listed {
                        return Err(format!("clean page {ino}:{idx} is not in app {}'s reclaim list", e.owner));
                    }
                } else {
                    app.pinned += 1;
                    pinned += 1;
                    if listed {
                        return Err(format!("pinned page {ino}:{idx} is in app {}'s reclaim list", e.owner));
                    }
                }
            }
        }
        if (total, pinned) != (self.total, self.pinned) {
            return Err(format!(
                "the cache counts {} pages, {} pinned; its table holds {total}, {pinned} pinned",
                self.total, self.pinned
            ));
        }
        if self.replacement.listed() != total - pinned {
            return Err(format!(
                "the reclaim lists hold {} pages, but {} are unpinned",
                self.replacement.listed(),
                total - pinned
            ));
        }
        for app in 0..usage.len().max(self.usage.len()) {
            let (counted, found) = (self.usage.get(app).copied(), usage.get(app).copied());
            if counted.unwrap_or_default() != found.unwrap_or_default() {
                return Err(format!("app {app}: the cache counts {counted:?} pages, the table holds {found:?}"));
            }
        }
        let (clean, capacity) = ((total - pinned) * PAGE_SIZE, self.tiers.iter().map(|t| t.capacity()).sum::<u64>());
        if clean > capacity + MAX_FILL_PAGES * PAGE_SIZE {
            return Err(format!(
                "{clean} bytes of clean pages, more than the capacity ({capacity} bytes) and one fill"
            ));
        }
        for (tier, found) in self.tiers.iter().zip(in_tier) {
            if tier.slots_used() != found || tier.used_bytes() < found * PAGE_SIZE {
                return Err(format!(
                    "tier {}: {} slots and {} bytes used, but {found} pages in it",
                    tier.name(),
                    tier.slots_used(),
                    tier.used_bytes()
                ));
            }
        }
        Ok(())
    }
}

/// A use of `entry` by `owner`.
fn note_use(
    replacement: &mut dyn ReplacementPolicy,
    usage: &mut Vec<AppUsage>,
    page: PageKey,
    entry: &mut Entry,
    owner: AppId,
    tick: u64,
) {
    replacement.on_access(page, entry.owner, owner, entry.pins > 0, tick, &mut entry.meta);
    if entry.owner != owner {
        let pinned = entry.pins > 0;
        *usage_of(usage, entry.owner).of_kind(pinned) -= 1;
        *usage_of(usage, owner).of_kind(pinned) += 1;
        entry.owner = owner;
    }
    entry.sharers.insert(owner);
}

/// One more pin of `entry`; its first takes it out of reclaim.
fn pin_entry(
    replacement: &mut dyn ReplacementPolicy,
    usage: &mut Vec<AppUsage>,
    pinned: &mut u64,
    page: PageKey,
    entry: &mut Entry,
) {
    if entry.pins == 0 {
        replacement.on_pin(page, entry.owner, &mut entry.meta);
        let usage = usage_of(usage, entry.owner);
        usage.clean -= 1;
        usage.pinned += 1;
        *pinned += 1;
    }
    entry.pins += 1;
}
