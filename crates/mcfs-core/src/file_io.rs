//! File data through the cache: reads fill pages from the backing store,
//! writes go into pages and the file's app's write log, truncates cut pages
//! and hide backing data beyond the new end until they commit.

use crate::cache::PageBuf;
use crate::inode::Inode;
use crate::state::{State, Store};
use crate::types::*;
use std::sync::Arc;
use std::time::SystemTime;

impl State {
    /// Room for `pages` more pages, reclaiming clean ones (LRU). Returns false
    /// when only dirty data is left: the caller must checkpoint first.
    pub fn make_room(&mut self, pages: u64) -> bool {
        let limit = self.config.cache_size;
        while self.cache.bytes() + pages * PAGE_SIZE > limit {
            let Some((ino, idx)) = self.cache.oldest_clean() else { return false };
            let inode = self.inodes.get_mut(&ino).expect("LRU names a live inode");
            self.cache.drop_clean(&mut inode.pages, idx);
        }
        true
    }

    /// Brings page `idx` of a file into the cache (clean) if it is not there.
    fn load_page(&mut self, store: &Store, ino: Ino, idx: u64) -> FsResult<()> {
        if self.inode(ino)?.pages.contains_key(&idx) {
            return Ok(());
        }
        let miss = Miss::new(self.inode(ino)?, ino, idx, 1);
        let pages = fetch(store, &miss)?;
        self.insert_fetched(&miss, pages);
        Ok(())
    }

    /// Copies what the cache holds of a read, up to the first page it lacks,
    /// and names the run of pages to fetch from the backing store next (the
    /// caller fetches them without the state lock and calls again from where
    /// this stopped, so every call makes progress).
    pub fn read_cached(&mut self, ino: Ino, offset: u64, size: u64) -> FsResult<(Vec<u8>, Option<Miss>)> {
        let inode = self.inode(ino)?;
        match inode.attr.kind {
            FileKind::File => {}
            FileKind::Dir => return Err(Errno::EISDIR),
            _ => return Err(Errno::EINVAL),
        }
        let end = offset.saturating_add(size).min(inode.attr.size);
        let mut out = Vec::with_capacity(end.saturating_sub(offset) as usize);
        let mut at = offset;
        while at < end {
            let idx = at / PAGE_SIZE;
            let inode = self.inodes.get_mut(&ino).expect("checked");
            if !inode.pages.contains_key(&idx) {
                let last_page = (end - 1) / PAGE_SIZE;
                let run = (idx..=last_page).take_while(|i| !inode.pages.contains_key(i)).count() as u64;
                return Ok((out, Some(Miss::new(inode, ino, idx, run.min(MAX_FETCH_PAGES)))));
            }
            let within = (at % PAGE_SIZE) as usize;
            let take = ((PAGE_SIZE as usize - within) as u64).min(end - at) as usize;
            self.cache.touch(ino, &mut inode.pages, idx);
            out.extend_from_slice(&inode.pages[&idx].data[within..within + take]);
            at += take as u64;
        }
        Ok((out, None))
    }

    /// Caches pages fetched for `miss`, unless the file's data changed since
    /// (a write or truncate may have made them stale; then it returns false)
    /// or a page is there now.
    pub fn insert_fetched(&mut self, miss: &Miss, pages: Vec<Arc<PageBuf>>) -> bool {
        if self.inodes.get(&miss.ino).is_none_or(|i| i.data_gen != miss.gen) {
            return false;
        }
        self.make_room(pages.len() as u64);
        let inode = self.inodes.get_mut(&miss.ino).expect("checked");
        for (idx, data) in (miss.first..).zip(pages) {
            if !inode.pages.contains_key(&idx) {
                self.cache.insert(miss.ino, &mut inode.pages, idx, data);
            }
        }
        true
    }

    /// Writes into the cache and logs the pages in the file's app's open VCT.
    pub fn write(&mut self, store: &Store, ino: Ino, offset: u64, data: &[u8], now: SystemTime) -> FsResult<()> {
        let inode = self.inode(ino)?;
        match inode.attr.kind {
            FileKind::File => {}
            FileKind::Dir => return Err(Errno::EISDIR),
            _ => return Err(Errno::EINVAL),
        }
        let end = offset.checked_add(data.len() as u64).filter(|e| *e <= MAX_FILE_SIZE).ok_or(Errno::EFBIG)?;
        let app = inode.app;
        self.close_conflicting(app, &[ino]);
        let vct = self.apps.list[app].open.id;
        let mut at = offset;
        while at < end {
            let idx = at / PAGE_SIZE;
            let within = (at % PAGE_SIZE) as usize;
            let take = ((PAGE_SIZE as usize - within) as u64).min(end - at) as usize;
            let whole_page = within == 0 && take == PAGE_SIZE as usize;
            if whole_page && !self.inode(ino)?.pages.contains_key(&idx) {
                self.make_room(1);
                let inode = self.inodes.get_mut(&ino).expect("checked");
                self.cache.insert(ino, &mut inode.pages, idx, Arc::new([0; PAGE_SIZE as usize]));
            } else {
                self.load_page(store, ino, idx)?;
            }
            let new_in_vct = self.apps.list[app].open.record_write(ino, idx, take as u64, now);
            let inode = self.inodes.get_mut(&ino).expect("checked");
            let page = inode.pages.get_mut(&idx).expect("loaded");
            if new_in_vct {
                self.cache.pin(page);
            }
            let src = (at - offset) as usize;
            self.cache.data_mut(page)[within..within + take].copy_from_slice(&data[src..src + take]);
            at += take as u64;
        }
        let inode = self.inodes.get_mut(&ino).expect("checked");
        inode.attr.size = inode.attr.size.max(end);
        inode.data_gen += 1;
        inode.touch_mtime(now);
        inode.last_change = Some((app, vct));
        self.apps.list[app].counters.bytes_written += data.len() as u64;
        Ok(())
    }

    /// Sets a file's size; logged in the file's app's write log.
    pub fn truncate(&mut self, ino: Ino, size: u64, now: SystemTime) -> FsResult<()> {
        if size > MAX_FILE_SIZE {
            return Err(Errno::EFBIG);
        }
        let inode = self.inode(ino)?;
        match inode.attr.kind {
            FileKind::File => {}
            FileKind::Dir => return Err(Errno::EISDIR),
            _ => return Err(Errno::EINVAL),
        }
        let app = inode.app;
        self.close_conflicting(app, &[ino]);
        let vct = self.apps.list[app].open.id;
        self.apps.list[app].open.record_truncate(ino, size, now);
        let inode = self.inodes.get_mut(&ino).expect("checked");
        if size < inode.attr.size {
            self.cache.remove_from(&mut inode.pages, size.div_ceil(PAGE_SIZE));
            let within = (size % PAGE_SIZE) as usize;
            if let Some(page) = inode.pages.get_mut(&(size / PAGE_SIZE)).filter(|_| within != 0) {
                self.cache.data_mut(page)[within..].fill(0);
            }
            inode.pending_truncates.push((vct, size));
            inode.backing_valid_len = inode.backing_valid_len.min(size);
        }
        inode.attr.size = size;
        inode.data_gen += 1;
        inode.touch_mtime(now);
        inode.last_change = Some((app, vct));
        Ok(())
    }
}

/// Largest file size: what a backing file system's `off_t` can hold.
const MAX_FILE_SIZE: u64 = i64::MAX as u64;

/// Pages to read from the backing store at most at once (128 KiB).
const MAX_FETCH_PAGES: u64 = 32;

/// A run of pages a read needs from the backing store.
pub struct Miss {
    ino: Ino,
    first: u64,
    pages: u64,
    /// Bytes of backing data the file may show: its size, or less where a
    /// pending truncate cut the backing data off.
    valid: u64,
    /// The file's data generation when the miss was found.
    gen: u64,
}

impl Miss {
    fn new(inode: &Inode, ino: Ino, first: u64, pages: u64) -> Miss {
        let valid = inode.backing_valid_len.min(inode.attr.size);
        Miss { ino, first, pages, valid, gen: inode.data_gen }
    }
}

/// Reads a miss's pages from the backing store; zeros where it has nothing
/// the file may show (beyond its end, cut off by a pending truncate, or a
/// file not yet in the backing store). Runs without the state lock.
pub fn fetch(store: &Store, miss: &Miss) -> FsResult<Vec<Arc<PageBuf>>> {
    let start = miss.first * PAGE_SIZE;
    let want = miss.valid.saturating_sub(start).min(miss.pages * PAGE_SIZE) as usize;
    let mut buf = vec![0u8; (miss.pages * PAGE_SIZE) as usize];
    if want > 0 {
        if let Some(path) = store.stable_path(miss.ino)? {
            let mut got = 0;
            while got < want {
                let n = store.backend.read_at(&path, start + got as u64, &mut buf[got..want])?;
                if n == 0 {
                    break;
                }
                got += n;
            }
        }
    }
    Ok(buf.chunks_exact(PAGE_SIZE as usize).map(|c| Arc::new(<PageBuf>::try_from(c).expect("page-sized"))).collect())
}
