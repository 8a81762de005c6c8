//! The page cache: 4 KiB pages of file data, kept per inode. A page is
//! *pinned* while a VCT (open or closed, not yet committed) refers to it;
//! pinned pages are dirty and never reclaimed. Page data is shared with closed
//! VCTs through `Arc`: writing a page that a closed VCT still holds copies it
//! (copy-on-write), writing a page only the open VCT holds changes it in place.
//!
//! Every page has an *owner*: the app that last brought it in, read it or
//! wrote it. Clean pages sit in one LRU list per owner, so reclaim finds the
//! oldest clean page of any set of apps by looking at one list head per app
//! (`victim`, FastTrack's order when the foreground app is spared).
//!
//! Invariant: an unpinned page is in its owner's LRU list under its stamp; a
//! pinned page is in no list and counts in its owner's `dirty`.

use crate::types::{Ino, PAGE_SIZE};
use crate::vct::AppId;
use std::collections::BTreeMap;
use std::sync::Arc;

pub type PageBuf = [u8; PAGE_SIZE as usize];

pub struct Page {
    pub data: Arc<PageBuf>,
    /// Identity of this cache slot; survives copy-on-write, not truncation.
    pub id: u64,
    /// Number of uncommitted VCTs that refer to this slot.
    pub pins: u32,
    owner: AppId,
    lru_stamp: u64,
}

pub type PageMap = BTreeMap<u64, Page>;

/// The pages one app owns, as reclaim sees them.
#[derive(Default)]
struct Owned {
    /// Clean pages by LRU stamp, least recently used first.
    lru: BTreeMap<u64, (Ino, u64)>,
    /// Pinned (dirty) pages.
    dirty: u64,
}

/// What reclaim should do next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Victim {
    /// Drop this clean page (inode, page index).
    Clean(Ino, u64),
    /// Apps other than the spared one hold dirty pages, and those come
    /// before the spared app's clean pages: commit them first.
    BackgroundDirty,
    /// No page that may go is clean: only a checkpoint can make room.
    OnlyDirty,
}

#[derive(Default)]
pub struct Cache {
    owners: BTreeMap<AppId, Owned>,
    next_stamp: u64,
    next_id: u64,
    pub total_pages: u64,
    pub dirty_pages: u64,
    /// Page versions kept only by closed VCTs (copies made by copy-on-write).
    pub cow_pages: u64,
}

impl Cache {
    /// Bytes held: live pages plus copy-on-write versions.
    pub fn bytes(&self) -> u64 {
        (self.total_pages + self.cow_pages) * PAGE_SIZE
    }

    pub fn dirty_bytes(&self) -> u64 {
        (self.dirty_pages + self.cow_pages) * PAGE_SIZE
    }

    fn stamp(&mut self) -> u64 {
        self.next_stamp += 1;
        self.next_stamp
    }

    fn owned(&mut self, app: AppId) -> &mut Owned {
        self.owners.entry(app).or_default()
    }

    /// Inserts a page owned by `owner` (clean unless pinned later); replaces nothing.
    pub fn insert(&mut self, ino: Ino, pages: &mut PageMap, idx: u64, data: Arc<PageBuf>, owner: AppId) {
        debug_assert!(!pages.contains_key(&idx));
        self.next_id += 1;
        let stamp = self.stamp();
        self.owned(owner).lru.insert(stamp, (ino, idx));
        self.total_pages += 1;
        pages.insert(idx, Page { data, id: self.next_id, pins: 0, owner, lru_stamp: stamp });
    }

    /// A use of a page by `owner`: it becomes the page's owner and the page
    /// its most recently used one.
    pub fn touch(&mut self, ino: Ino, pages: &mut PageMap, idx: u64, owner: AppId) {
        let stamp = self.stamp();
        let Some(p) = pages.get_mut(&idx) else { return };
        if p.pins == 0 {
            self.owned(p.owner).lru.remove(&p.lru_stamp);
            self.owned(owner).lru.insert(stamp, (ino, idx));
        } else if p.owner != owner {
            self.owned(p.owner).dirty -= 1;
            self.owned(owner).dirty += 1;
        }
        p.owner = owner;
        p.lru_stamp = stamp;
    }

    /// Writable access to a page's bytes; copies it first if a closed VCT
    /// still shares this version.
    pub fn data_mut<'a>(&mut self, page: &'a mut Page) -> &'a mut PageBuf {
        if Arc::get_mut(&mut page.data).is_none() {
            self.cow_pages += 1;
        }
        Arc::make_mut(&mut page.data)
    }

    /// A VCT now refers to this page: it is dirty until that VCT commits.
    pub fn pin(&mut self, page: &mut Page) {
        if page.pins == 0 {
            let owned = self.owned(page.owner);
            owned.lru.remove(&page.lru_stamp);
            owned.dirty += 1;
            self.dirty_pages += 1;
        }
        page.pins += 1;
    }

    /// A VCT that referred to slot `id` committed (or was dropped).
    pub fn unpin(&mut self, ino: Ino, pages: &mut PageMap, idx: u64, id: u64) {
        let Some(page) = pages.get_mut(&idx) else { return };
        if page.id != id || page.pins == 0 {
            return;
        }
        page.pins -= 1;
        if page.pins == 0 {
            self.dirty_pages -= 1;
            let owned = self.owned(page.owner);
            owned.dirty -= 1;
            owned.lru.insert(page.lru_stamp, (ino, idx));
        }
    }

    /// A closed VCT that held `n` copy-on-write versions is gone.
    pub fn release_cow(&mut self, n: u64) {
        debug_assert!(n <= self.cow_pages, "{n} copy-on-write versions released, {} counted", self.cow_pages);
        self.cow_pages -= n;
    }

    /// Removes every page at index `from` or beyond (truncate, unlink).
    pub fn remove_from(&mut self, pages: &mut PageMap, from: u64) {
        let doomed: Vec<u64> = pages.range(from..).map(|(i, _)| *i).collect();
        for idx in doomed {
            if let Some(p) = pages.remove(&idx) {
                self.forget_page(&p);
            }
        }
    }

    fn forget_page(&mut self, p: &Page) {
        self.total_pages -= 1;
        if Arc::strong_count(&p.data) > 1 {
            self.cow_pages += 1; // a closed VCT now holds the only copy
        }
        let owned = self.owned(p.owner);
        if p.pins > 0 {
            owned.dirty -= 1;
            self.dirty_pages -= 1;
        } else {
            owned.lru.remove(&p.lru_stamp);
        }
    }

    /// The least recently used clean page among the apps `eligible` accepts.
    fn oldest_clean(&self, eligible: impl Fn(AppId) -> bool) -> Option<(Ino, u64)> {
        let heads = self.owners.iter().filter(|(app, _)| eligible(**app));
        heads.filter_map(|(_, o)| o.lru.first_key_value()).min_by_key(|(stamp, _)| **stamp).map(|(_, page)| *page)
    }

    /// The next page to reclaim; the caller removes it from its inode with
    /// `drop_clean`. Without a spared app: the least recently used clean
    /// page. With one (the foreground app, FastTrack §4.3): other apps'
    /// clean pages, then their dirty pages (`BackgroundDirty`, which
    /// `past_background_dirty` skips), then the spared app's clean pages,
    /// least recently used first within each class.
    pub fn victim(&self, spared: Option<AppId>, past_background_dirty: bool) -> Victim {
        let clean = |page: Option<(Ino, u64)>| page.map_or(Victim::OnlyDirty, |(ino, idx)| Victim::Clean(ino, idx));
        let Some(fg) = spared else { return clean(self.oldest_clean(|_| true)) };
        if let Some((ino, idx)) = self.oldest_clean(|app| app != fg) {
            return Victim::Clean(ino, idx);
        }
        let background_dirty = self.owners.iter().any(|(app, o)| *app != fg && o.dirty > 0);
        if background_dirty && !past_background_dirty {
            return Victim::BackgroundDirty;
        }
        clean(self.oldest_clean(|app| app == fg))
    }

    /// Checks the invariants of the module header against every file's
    /// pages (`files`: each inode with its page map): every unpinned page is
    /// in its owner's LRU list under its stamp and no pinned page is, each
    /// app's LRU list and dirty count hold exactly its clean and pinned
    /// pages, and the totals count every page once. The error names the
    /// first broken one.
    pub fn check_invariants<'a>(&self, files: impl Iterator<Item = (Ino, &'a PageMap)>) -> Result<(), String> {
        let (mut total, mut pinned) = (0u64, 0u64);
        let mut per_app: BTreeMap<AppId, (u64, u64)> = BTreeMap::new();
        for (ino, pages) in files {
            for (idx, page) in pages {
                total += 1;
                let listed =
                    self.owners.get(&page.owner).and_then(|o| o.lru.get(&page.lru_stamp)) == Some(&(ino, *idx));
                let counts = per_app.entry(page.owner).or_default();
                if page.pins == 0 {
                    counts.0 += 1;
                    if !listed {
                        return Err(format!("clean page {ino}:{idx} is not in app {}'s LRU list", page.owner));
                    }
                } else {
                    counts.1 += 1;
                    pinned += 1;
                    if listed {
                        return Err(format!("pinned page {ino}:{idx} is in app {}'s LRU list", page.owner));
                    }
                }
            }
        }
        if (total, pinned) != (self.total_pages, self.dirty_pages) {
            return Err(format!(
                "the cache counts {} pages, {} pinned; the files hold {total}, {pinned} pinned",
                self.total_pages, self.dirty_pages
            ));
        }
        for (app, owned) in &self.owners {
            let (clean, dirty) = per_app.get(app).copied().unwrap_or_default();
            if (owned.lru.len() as u64, owned.dirty) != (clean, dirty) {
                return Err(format!(
                    "app {app}: LRU list of {} and {} dirty, but it owns {clean} clean and {dirty} pinned pages",
                    owned.lru.len(),
                    owned.dirty
                ));
            }
        }
        Ok(())
    }

    pub fn drop_clean(&mut self, pages: &mut PageMap, idx: u64) {
        if let Some(p) = pages.get(&idx) {
            if p.pins == 0 {
                let p = pages.remove(&idx).expect("present");
                self.forget_page(&p);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FG: AppId = 1;
    const BG: AppId = 2;
    const OTHER_BG: AppId = 3;

    fn page(byte: u8) -> Arc<PageBuf> {
        Arc::new([byte; PAGE_SIZE as usize])
    }

    /// Takes victims until reclaim would need a checkpoint; returns them in order.
    fn drain(cache: &mut Cache, files: &mut BTreeMap<Ino, PageMap>, spared: Option<AppId>) -> Vec<(Ino, u64)> {
        let mut taken = Vec::new();
        while let Victim::Clean(ino, idx) = cache.victim(spared, false) {
            cache.drop_clean(files.get_mut(&ino).expect("file"), idx);
            taken.push((ino, idx));
        }
        taken
    }

    fn check(cache: &Cache, files: &BTreeMap<Ino, PageMap>) -> Result<(), String> {
        cache.check_invariants(files.iter().map(|(ino, pages)| (*ino, pages)))
    }

    /// Random inserts, touches by other apps, pins, unpins, truncations and
    /// reclaim over three files of three apps: the invariants hold after
    /// every step. Seed: `MCFS_SEED`.
    #[test]
    fn random_operations_keep_the_invariants() {
        use rand::{Rng, SeedableRng};
        let seed: u64 = std::env::var("MCFS_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random);
        println!("seed {seed} (MCFS_SEED={seed} replays it)");
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut cache = Cache::default();
        let mut files: BTreeMap<Ino, PageMap> = (1..=3).map(|ino| (ino, PageMap::new())).collect();
        // The pins each page holds, by slot id, so unpins match pins.
        let mut pins: Vec<(Ino, u64, u64)> = Vec::new();
        for step in 0..2000 {
            let (ino, idx, app) = (rng.gen_range(1..=3), rng.gen_range(0..16), rng.gen_range(1..=3));
            let pages = files.get_mut(&ino).expect("file");
            match rng.gen_range(0..6) {
                0 if !pages.contains_key(&idx) => cache.insert(ino, pages, idx, page(0), app),
                1 => cache.touch(ino, pages, idx, app),
                2 => {
                    if let Some(p) = pages.get_mut(&idx) {
                        cache.pin(p);
                        pins.push((ino, idx, p.id));
                    }
                }
                3 if !pins.is_empty() => {
                    let (ino, idx, id) = pins.swap_remove(rng.gen_range(0..pins.len()));
                    cache.unpin(ino, files.get_mut(&ino).expect("file"), idx, id);
                }
                4 => cache.remove_from(pages, rng.gen_range(0..16)),
                _ => {
                    if let Victim::Clean(ino, idx) = cache.victim(Some(app), rng.gen_bool(0.5)) {
                        cache.drop_clean(files.get_mut(&ino).expect("file"), idx);
                    }
                }
            }
            if let Err(broken) = check(&cache, &files) {
                panic!("step {step} (seed {seed}): {broken}");
            }
        }
    }

    #[test]
    fn a_page_the_cache_does_not_know_breaks_the_invariants() {
        let mut cache = Cache::default();
        let mut files: BTreeMap<Ino, PageMap> = BTreeMap::from([(1, PageMap::new())]);
        cache.insert(1, files.get_mut(&1).unwrap(), 0, page(0), FG);
        assert_eq!(check(&cache, &files), Ok(()));
        // A page put in the map behind the cache's back is in no LRU list.
        let stray = Page { data: page(1), id: 99, pins: 0, owner: FG, lru_stamp: 99 };
        files.get_mut(&1).unwrap().insert(1, stray);
        assert!(check(&cache, &files).unwrap_err().contains("1:1 is not in app 1's LRU list"));
        // A page dropped behind its back leaves the counts wrong.
        files.get_mut(&1).unwrap().clear();
        assert!(check(&cache, &files).unwrap_err().contains("the cache counts 1 pages"));
    }

    #[test]
    fn pinned_pages_are_not_reclaimable_and_lru_order_holds() {
        let mut cache = Cache::default();
        let mut pages = PageMap::new();
        cache.insert(5, &mut pages, 0, page(0), FG);
        cache.insert(5, &mut pages, 1, page(1), FG);
        cache.insert(5, &mut pages, 2, page(2), FG);
        cache.touch(5, &mut pages, 0, FG);
        assert_eq!(cache.victim(None, false), Victim::Clean(5, 1));
        let p1 = pages.get_mut(&1).unwrap();
        cache.pin(p1);
        assert_eq!(cache.victim(None, false), Victim::Clean(5, 2));
        assert_eq!(cache.dirty_pages, 1);
        let id = pages[&1].id;
        cache.unpin(5, &mut pages, 1, id);
        assert_eq!(cache.dirty_pages, 0);
        cache.drop_clean(&mut pages, 2);
        assert_eq!(cache.total_pages, 2);
        assert_eq!(cache.victim(None, false), Victim::Clean(5, 1), "an unpinned page keeps its place");
    }

    #[test]
    fn writing_a_shared_page_copies_it() {
        let mut cache = Cache::default();
        let mut pages = PageMap::new();
        cache.insert(1, &mut pages, 0, page(7), FG);
        let snapshot = pages[&0].data.clone();
        let p = pages.get_mut(&0).unwrap();
        cache.data_mut(p)[0] = 9;
        assert_eq!(snapshot[0], 7, "the closed VCT keeps its version");
        assert_eq!(pages[&0].data[0], 9);
        assert_eq!(cache.cow_pages, 1);
        drop(snapshot);
        let p = pages.get_mut(&0).unwrap();
        cache.data_mut(p)[1] = 9;
        assert_eq!(cache.cow_pages, 1, "an unshared page is written in place");
    }

    #[test]
    fn truncation_forgets_dirty_and_clean_pages() {
        let mut cache = Cache::default();
        let mut pages = PageMap::new();
        for i in 0..4 {
            cache.insert(1, &mut pages, i, page(1), BG);
        }
        cache.pin(pages.get_mut(&3).unwrap());
        cache.remove_from(&mut pages, 2);
        assert_eq!((cache.total_pages, cache.dirty_pages), (2, 0));
        assert_eq!(cache.victim(Some(FG), false), Victim::Clean(1, 0));
        cache.remove_from(&mut pages, 0);
        assert_eq!(cache.victim(Some(FG), false), Victim::OnlyDirty, "no dirty page is left behind");
    }

    /// The foreground app's pages were used first (least recent), then two
    /// background apps read: FastTrack takes every background page first,
    /// oldest first across the background apps; plain LRU takes the
    /// foreground app's pages first.
    #[test]
    fn background_clean_pages_go_before_older_foreground_ones() {
        let mut cache = Cache::default();
        let mut files: BTreeMap<Ino, PageMap> = (1..=3).map(|ino| (ino, PageMap::new())).collect();
        for (ino, idx, owner) in [(1, 0, FG), (1, 1, FG), (2, 0, BG), (3, 0, OTHER_BG), (2, 1, BG)] {
            cache.insert(ino, files.get_mut(&ino).unwrap(), idx, page(0), owner);
        }
        assert_eq!(cache.victim(None, false), Victim::Clean(1, 0), "plain LRU");
        let order = drain(&mut cache, &mut files, Some(FG));
        assert_eq!(order, vec![(2, 0), (3, 0), (2, 1), (1, 0), (1, 1)]);
        assert_eq!(cache.total_pages, 0);
        assert_eq!(cache.victim(Some(FG), false), Victim::OnlyDirty);
    }

    #[test]
    fn background_dirty_pages_come_before_foreground_clean_ones() {
        let mut cache = Cache::default();
        let mut fg_file = PageMap::new();
        let mut bg_file = PageMap::new();
        cache.insert(1, &mut fg_file, 0, page(0), FG);
        cache.insert(2, &mut bg_file, 0, page(0), BG);
        cache.pin(bg_file.get_mut(&0).unwrap());
        assert_eq!(cache.victim(Some(FG), false), Victim::BackgroundDirty);
        assert_eq!(cache.victim(Some(FG), true), Victim::Clean(1, 0), "a caller that cannot checkpoint goes on");
        assert_eq!(cache.victim(None, false), Victim::Clean(1, 0), "without a spared app only cleanliness counts");
        let id = bg_file[&0].id;
        cache.unpin(2, &mut bg_file, 0, id);
        assert_eq!(cache.victim(Some(FG), false), Victim::Clean(2, 0), "committed: clean background page");
        cache.pin(bg_file.get_mut(&0).unwrap());
        cache.pin(fg_file.get_mut(&0).unwrap());
        assert_eq!(cache.victim(Some(FG), true), Victim::OnlyDirty, "the foreground app's dirty pages go last");
    }

    #[test]
    fn a_used_page_stays_and_belongs_to_its_last_user() {
        let mut cache = Cache::default();
        let mut files: BTreeMap<Ino, PageMap> = (1..=2).map(|ino| (ino, PageMap::new())).collect();
        for idx in 0..3 {
            cache.insert(1, files.get_mut(&1).unwrap(), idx, page(0), FG);
        }
        cache.insert(2, files.get_mut(&2).unwrap(), 0, page(0), BG);
        cache.touch(1, files.get_mut(&1).unwrap(), 0, FG);
        // A background app reads the foreground app's page 1: it is background data now.
        cache.touch(1, files.get_mut(&1).unwrap(), 1, BG);
        let order = drain(&mut cache, &mut files, Some(FG));
        assert_eq!(order, vec![(2, 0), (1, 1), (1, 2), (1, 0)], "the touched foreground page goes last");

        // The same for a dirty page: its dirt moves with it.
        let fg_file = files.get_mut(&1).unwrap();
        cache.insert(1, fg_file, 5, page(0), FG);
        cache.pin(fg_file.get_mut(&5).unwrap());
        cache.insert(1, fg_file, 6, page(0), FG);
        assert_eq!(cache.victim(Some(FG), false), Victim::Clean(1, 6));
        cache.touch(1, fg_file, 5, BG);
        assert_eq!(cache.victim(Some(FG), false), Victim::BackgroundDirty);
        cache.remove_from(fg_file, 0);
        assert_eq!((cache.total_pages, cache.dirty_pages), (0, 0));
        assert_eq!(cache.victim(Some(FG), false), Victim::OnlyDirty, "per-owner dirty counts went back to zero");
    }
}
