//! The kernel's writeback cache in front of a sync-point mount (issue 11
//! item 4), as the crash-consistency driver emulates it for the
//! `sync-point` variant. An app's `write(2)` dirties pages the kernel holds
//! (reading a page it only partly overwrites from the engine first) and
//! grows the file size the kernel knows; the engine sees none of it until
//! the kernel's writeback hands a dirty page over — at any time, in any
//! order, each page as it is then, with no caller. What hands pages over
//! early, as Linux's FUSE does:
//!
//! * a sync point (fsync, rename, unlink, rmdir, link, a requested
//!   checkpoint, unmount): every dirty page of the mount (the FUSE adapter
//!   hands over the app's files open for writing, a subset; the kernel may
//!   write any other page back whenever it likes);
//! * close (FLUSH writes the file's pages back), chmod (a SETATTR of the
//!   mode writes them back first), hole punching and zeroing (the range is
//!   written back and dropped first; all of the file's pages here, a
//!   superset the kernel may also choose): the file's dirty pages;
//! * truncate: sent at once; once the engine took it, dirty pages past the
//!   new end are dropped, and the page holding the new end keeps only the
//!   bytes below it (a refused one changes nothing, as in FUSE).
//!
//! The order comes from a generator with a fixed seed, advanced only by
//! the driver's calls, so a printed script replays the same writebacks.

use mcfs_core::{Engine, FsResult, Ino};
use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, HashMap};

const PAGE: u64 = 4096;

pub struct KernelCache {
    /// Dirty pages as the kernel holds them: whole pages, zero past the data.
    dirty: BTreeMap<(Ino, u64), Vec<u8>>,
    /// Sizes writes made that the engine has not seen all of yet.
    sizes: HashMap<Ino, u64>,
    rng: u64,
}

impl KernelCache {
    pub fn new() -> KernelCache {
        KernelCache { dirty: BTreeMap::new(), sizes: HashMap::new(), rng: 0x5eed_cafe }
    }

    pub fn is_clean(&self) -> bool {
        self.dirty.is_empty()
    }

    /// splitmix64: a deterministic stream, no global RNG.
    fn next(&mut self) -> u64 {
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn size(&self, e: &Engine, ino: Ino) -> FsResult<u64> {
        match self.sizes.get(&ino) {
            Some(size) => Ok(*size),
            None => Ok(e.getattr(ino)?.size),
        }
    }

    /// A buffered write of `data` at `offset`.
    pub fn write(&mut self, e: &Engine, ino: Ino, offset: u64, data: &[u8]) -> FsResult<()> {
        let size = self.size(e, ino)?;
        let end = offset + data.len() as u64;
        for page in offset / PAGE..end.div_ceil(PAGE) {
            let start = page * PAGE;
            let held = match self.dirty.entry((ino, page)) {
                Entry::Occupied(held) => held.into_mut(),
                Entry::Vacant(clean) => {
                    let mut read = if start < size { e.read(ino, start, PAGE as u32)? } else { Vec::new() };
                    read.resize(PAGE as usize, 0);
                    clean.insert(read)
                }
            };
            let from = offset.max(start);
            let to = end.min(start + PAGE);
            held[(from - start) as usize..(to - start) as usize]
                .copy_from_slice(&data[(from - offset) as usize..(to - offset) as usize]);
        }
        self.sizes.insert(ino, size.max(end));
        Ok(())
    }

    /// A truncate the engine took.
    pub fn truncate(&mut self, ino: Ino, size: u64) {
        self.dirty.retain(|&(i, page), _| i != ino || page * PAGE < size);
        if let Some(held) = self.dirty.get_mut(&(ino, size / PAGE)) {
            held[(size % PAGE) as usize..].fill(0);
        }
        self.sizes.remove(&ino);
    }

    /// The writeback of one dirty page: its bytes below the size the kernel knows.
    fn write_back(&mut self, e: &Engine, key: (Ino, u64)) -> FsResult<()> {
        let held = self.dirty.remove(&key).expect("a dirty page");
        let (ino, page) = key;
        let size = self.size(e, ino)?;
        let start = page * PAGE;
        if start < size {
            let len = (size - start).min(PAGE) as usize;
            e.write(None, ino, start, &held[..len])?;
        }
        if !self.dirty.keys().any(|&(i, _)| i == ino) {
            self.sizes.remove(&ino);
        }
        Ok(())
    }

    /// Hands over the pages `pick` chooses, in a random order.
    fn hand_over(&mut self, e: &Engine, pick: impl Fn(&(Ino, u64)) -> bool) -> FsResult<()> {
        let mut keys: Vec<(Ino, u64)> = self.dirty.keys().copied().filter(|k| pick(k)).collect();
        while !keys.is_empty() {
            let key = keys.swap_remove(self.below(keys.len()));
            self.write_back(e, key)?;
        }
        Ok(())
    }

    pub fn hand_over_all(&mut self, e: &Engine) -> FsResult<()> {
        self.hand_over(e, |_| true)
    }

    pub fn hand_over_file(&mut self, e: &Engine, ino: Ino) -> FsResult<()> {
        self.hand_over(e, |&(i, _)| i == ino)
    }

    /// The kernel's own writeback between two steps: now and then, some
    /// dirty pages, in a random order.
    pub fn write_back_some(&mut self, e: &Engine) -> FsResult<()> {
        if self.dirty.is_empty() || self.below(2) == 0 {
            return Ok(());
        }
        let mut keys: Vec<(Ino, u64)> = self.dirty.keys().copied().collect();
        for _ in 0..=self.below(keys.len()) {
            let key = keys.swap_remove(self.below(keys.len()));
            self.write_back(e, key)?;
        }
        Ok(())
    }
}
