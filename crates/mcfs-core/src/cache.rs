//! The page cache: 4 KiB pages of file data, kept per inode. A page is
//! *pinned* while a VCT (open or closed, not yet committed) refers to it;
//! pinned pages are dirty and never reclaimed. Clean pages sit in one LRU
//! list and are reclaimed oldest first. Page data is shared with closed VCTs
//! through `Arc`: writing a page that a closed VCT still holds copies it
//! (copy-on-write), writing a page only the open VCT holds changes it in place.

use crate::types::{Ino, PAGE_SIZE};
use std::collections::BTreeMap;
use std::sync::Arc;

pub type PageBuf = [u8; PAGE_SIZE as usize];

pub struct Page {
    pub data: Arc<PageBuf>,
    /// Identity of this cache slot; survives copy-on-write, not truncation.
    pub id: u64,
    /// Number of uncommitted VCTs that refer to this slot.
    pub pins: u32,
    lru_stamp: u64,
}

pub type PageMap = BTreeMap<u64, Page>;

#[derive(Default)]
pub struct Cache {
    lru: BTreeMap<u64, (Ino, u64)>,
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

    /// Inserts a page (clean unless pinned later); replaces nothing.
    pub fn insert(&mut self, ino: Ino, pages: &mut PageMap, idx: u64, data: Arc<PageBuf>) {
        debug_assert!(!pages.contains_key(&idx));
        self.next_id += 1;
        let stamp = self.stamp();
        self.lru.insert(stamp, (ino, idx));
        self.total_pages += 1;
        pages.insert(idx, Page { data, id: self.next_id, pins: 0, lru_stamp: stamp });
    }

    /// Marks a use of a page for LRU purposes.
    pub fn touch(&mut self, ino: Ino, pages: &mut PageMap, idx: u64) {
        let stamp = self.stamp();
        if let Some(p) = pages.get_mut(&idx) {
            if p.pins == 0 {
                self.lru.remove(&p.lru_stamp);
                self.lru.insert(stamp, (ino, idx));
            }
            p.lru_stamp = stamp;
        }
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
            self.lru.remove(&page.lru_stamp);
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
            self.lru.insert(page.lru_stamp, (ino, idx));
        }
    }

    /// A closed VCT that held `n` copy-on-write versions is gone.
    pub fn release_cow(&mut self, n: u64) {
        self.cow_pages -= n.min(self.cow_pages);
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
        if p.pins > 0 {
            self.dirty_pages -= 1;
        } else {
            self.lru.remove(&p.lru_stamp);
        }
    }

    /// The least recently used clean page, removed from the LRU list; the
    /// caller removes it from its inode with `drop_clean`.
    pub fn oldest_clean(&self) -> Option<(Ino, u64)> {
        self.lru.values().next().copied()
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

    fn page(byte: u8) -> Arc<PageBuf> {
        Arc::new([byte; PAGE_SIZE as usize])
    }

    #[test]
    fn pinned_pages_are_not_reclaimable_and_lru_order_holds() {
        let mut cache = Cache::default();
        let mut pages = PageMap::new();
        cache.insert(5, &mut pages, 0, page(0));
        cache.insert(5, &mut pages, 1, page(1));
        cache.insert(5, &mut pages, 2, page(2));
        cache.touch(5, &mut pages, 0);
        assert_eq!(cache.oldest_clean(), Some((5, 1)));
        let p1 = pages.get_mut(&1).unwrap();
        cache.pin(p1);
        assert_eq!(cache.oldest_clean(), Some((5, 2)));
        assert_eq!(cache.dirty_pages, 1);
        let id = pages[&1].id;
        cache.unpin(5, &mut pages, 1, id);
        assert_eq!(cache.dirty_pages, 0);
        cache.drop_clean(&mut pages, 2);
        assert_eq!(cache.total_pages, 2);
    }

    #[test]
    fn writing_a_shared_page_copies_it() {
        let mut cache = Cache::default();
        let mut pages = PageMap::new();
        cache.insert(1, &mut pages, 0, page(7));
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
            cache.insert(1, &mut pages, i, page(1));
        }
        cache.pin(pages.get_mut(&3).unwrap());
        cache.remove_from(&mut pages, 2);
        assert_eq!((cache.total_pages, cache.dirty_pages), (2, 0));
        assert_eq!(cache.oldest_clean(), Some((1, 0)));
    }
}
