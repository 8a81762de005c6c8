//! Holes and space: `fallocate(2)` (allocate, punch-hole, zero-range, and
//! collapse-range and insert-range on top of them), `lseek` with
//! `SEEK_DATA`/`SEEK_HOLE`, and `st_blocks`.
//!
//! Punch-hole and zero-range are logged in the file's app's write log like a
//! truncate: write entries of pages they clear wholly are voided, those of
//! partly cleared pages move after them (`OpenVct::record_zeroing`), and
//! until the entry commits, cache misses read zeros in the cleared range
//! instead of the backing data (`Inode::pending_zeroed`). In the journal
//! they are `Fallocate` data ops, applied with `fallocate(2)` so holes stay
//! holes. Collapse and insert shift data, which no idempotent op can do:
//! they are logged as the writes, punches and truncate that give the
//! shifted file, all in one VCT (so a crash keeps all of it or none).
//!
//! `SpaceMap` says which pages of a live file hold data or reserved space.
//! Invariant: an inode's map is `None` only while no operation of this
//! mount changed its allocation — each one loads it first (from the backing
//! file's data extents) — so a missing map means "as the backing file has
//! it", and a present one is exact for everything mcfs did.

use crate::engine::Engine;
use crate::file_io::{fetch, MAX_FILE_SIZE};
use crate::inode::Inode;
use crate::state::{State, Store};
use crate::types::*;
use crate::vct::LogEntry;
use std::collections::BTreeMap;
use std::ops::Range;
use std::time::SystemTime;

/// `st_blocks` units (512 bytes) in a page.
const BLOCKS_PER_PAGE: u64 = PAGE_SIZE / 512;

/// What an allocated page holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Alloc {
    /// Data (possibly zeros written as such): `SEEK_DATA` finds it.
    Data,
    /// Space reserved by `fallocate` (allocate, zero-range) and never
    /// written: it reads as zeros and, as on ext4, is a hole to `SEEK_DATA`.
    Reserved,
}

/// The allocated pages of a live file, as runs; pages in no run are holes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SpaceMap {
    /// First page of a run → (its end, exclusive; what it holds). Runs are
    /// disjoint and two adjacent runs never hold the same.
    runs: BTreeMap<u64, (u64, Alloc)>,
    /// Pages in runs.
    pages: u64,
    /// Blocks the backing file had beyond its data pages when the map was
    /// loaded (file-system metadata, space reserved before the mount, which
    /// `SEEK_DATA` does not show): kept in `st_blocks`.
    extra_blocks: i64,
}

impl SpaceMap {
    /// The map of a backing file with data in `extents` and `blocks` blocks.
    fn from_backing(extents: &[Range<u64>], blocks: u64) -> SpaceMap {
        let mut map = SpaceMap::default();
        for extent in extents {
            map.set(extent.start / PAGE_SIZE..extent.end.div_ceil(PAGE_SIZE), Some(Alloc::Data));
        }
        map.extra_blocks = blocks as i64 - (map.pages * BLOCKS_PER_PAGE) as i64;
        map
    }

    /// `st_blocks`.
    fn blocks(&self) -> u64 {
        ((self.pages * BLOCKS_PER_PAGE) as i64 + self.extra_blocks).max(0) as u64
    }

    /// Makes `pages` hold `to` (a hole for `None`).
    fn set(&mut self, pages: Range<u64>, to: Option<Alloc>) {
        if pages.is_empty() || to.is_some_and(|alloc| self.grow_run(&pages, alloc)) {
            return;
        }
        let overlapping: Vec<(u64, u64, Alloc)> = self
            .runs
            .range(..pages.end)
            .rev()
            .take_while(|(_, (end, _))| *end > pages.start)
            .map(|(start, (end, alloc))| (*start, *end, *alloc))
            .collect();
        for (start, end, alloc) in overlapping {
            self.runs.remove(&start);
            self.pages -= end - start;
            if start < pages.start {
                self.insert(start..pages.start, alloc);
            }
            if end > pages.end {
                self.insert(pages.end..end, alloc);
            }
        }
        if let Some(alloc) = to {
            self.insert(pages, alloc);
        }
    }

    /// Makes the run that holds `alloc` and holds or ends at `pages.start`
    /// cover `pages` in place, if no other run starts among them (a rewrite
    /// or an append: most writes); false if there is no such run.
    fn grow_run(&mut self, pages: &Range<u64>, alloc: Alloc) -> bool {
        let Some((&start, &(end, held))) = self.runs.range(..=pages.start).next_back() else { return false };
        if held != alloc || end < pages.start || self.runs.range(start + 1..=pages.end).next().is_some() {
            return false;
        }
        let grown = end.max(pages.end);
        self.runs.insert(start, (grown, alloc));
        self.pages += grown - end;
        true
    }

    /// Adds a run over pages in no run, merged with neighbours like it.
    fn insert(&mut self, pages: Range<u64>, alloc: Alloc) {
        self.pages += pages.end - pages.start;
        let (mut start, mut end) = (pages.start, pages.end);
        if let Some((&before, &(before_end, like))) = self.runs.range(..start).next_back() {
            if before_end == start && like == alloc {
                self.runs.remove(&before);
                start = before;
            }
        }
        if let Some(&(after_end, like)) = self.runs.get(&end) {
            if like == alloc {
                self.runs.remove(&end);
                end = after_end;
            }
        }
        self.runs.insert(start, (end, alloc));
    }

    /// Reserves the holes among `pages`; allocated pages keep what they hold.
    fn reserve(&mut self, pages: Range<u64>) {
        let mut holes = Vec::new();
        let mut at = pages.start;
        for (&start, &(end, _)) in self.runs.range(..pages.end) {
            if end <= at {
                continue;
            }
            if start > at {
                holes.push(at..start);
            }
            at = end;
        }
        if at < pages.end {
            holes.push(at..pages.end);
        }
        for hole in holes {
            self.set(hole, Some(Alloc::Reserved));
        }
    }

    /// The run holding `page`, if any.
    fn run_at(&self, page: u64) -> Option<(u64, Alloc)> {
        let (_, &(end, alloc)) = self.runs.range(..=page).next_back()?;
        (end > page).then_some((end, alloc))
    }

    fn is_data(&self, page: u64) -> bool {
        self.run_at(page).is_some_and(|(_, alloc)| alloc == Alloc::Data)
    }

    /// The first data page at or after `page`.
    fn next_data(&self, page: u64) -> Option<u64> {
        if self.is_data(page) {
            return Some(page);
        }
        self.runs.range(page..).find(|(_, (_, alloc))| *alloc == Alloc::Data).map(|(start, _)| *start)
    }

    /// The first page at or after `page` that holds no data.
    fn next_hole(&self, page: u64) -> u64 {
        match self.run_at(page) {
            // Two data runs are never adjacent: the page after one holds no data.
            Some((end, Alloc::Data)) => end,
            _ => page,
        }
    }
}

/// The pages wholly inside bytes `range`.
fn whole_pages(range: Range<u64>) -> Range<u64> {
    range.start.div_ceil(PAGE_SIZE)..range.end / PAGE_SIZE
}

/// The pages bytes `range` touch.
fn touched_pages(range: Range<u64>) -> Range<u64> {
    range.start / PAGE_SIZE..range.end.div_ceil(PAGE_SIZE)
}

/// Changes `inode`'s map (loaded) with `change` and `st_blocks` with it.
fn change_space(inode: &mut Inode, change: impl FnOnce(&mut SpaceMap)) {
    if let Some(map) = inode.space.as_mut() {
        change(map);
        inode.attr.blocks = map.blocks();
    }
}

/// Bytes `offset..end` of `inode` were written (its map is loaded).
pub fn wrote(inode: &mut Inode, offset: u64, end: u64) {
    change_space(inode, |map| map.set(touched_pages(offset..end), Some(Alloc::Data)));
}

/// `inode` is truncated to `size` (its map is loaded): a shrink frees every
/// page past the new end, reserved ones too.
pub fn truncated(inode: &mut Inode, size: u64) {
    if size <= inode.attr.size {
        change_space(inode, |map| map.set(size.div_ceil(PAGE_SIZE)..u64::MAX, None));
    }
}

/// The parts of bytes `range` that pending punches and zero-ranges cleared.
pub fn zeroed_within(inode: &Inode, range: Range<u64>) -> Vec<Range<u64>> {
    let clip = |r: &Range<u64>| r.start.max(range.start)..r.end.min(range.end);
    inode.pending_zeroed.iter().map(|(_, r)| clip(r)).filter(|r| !r.is_empty()).collect()
}

/// What a `fallocate` mode asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fallocation {
    InPlace(FallocMode),
    Collapse,
    Insert,
}

/// The request `fallocate(2)`'s `mode` makes, with the errors Linux (the VFS
/// and ext4) gives for modes it refuses.
fn parse_mode(mode: i32) -> FsResult<Fallocation> {
    use libc::{
        FALLOC_FL_COLLAPSE_RANGE as COLLAPSE, FALLOC_FL_INSERT_RANGE as INSERT, FALLOC_FL_KEEP_SIZE as KEEP,
        FALLOC_FL_PUNCH_HOLE as PUNCH, FALLOC_FL_ZERO_RANGE as ZERO,
    };
    let keep_size = mode & KEEP != 0;
    Ok(match mode {
        0 | KEEP => Fallocation::InPlace(FallocMode::Allocate { keep_size }),
        m if m == PUNCH | KEEP => Fallocation::InPlace(FallocMode::PunchHole),
        m if m & !KEEP == ZERO => Fallocation::InPlace(FallocMode::ZeroRange { keep_size }),
        COLLAPSE => Fallocation::Collapse,
        INSERT => Fallocation::Insert,
        // Collapse and insert must come alone.
        m if m & (COLLAPSE | INSERT) != 0 && m & !(COLLAPSE | INSERT | KEEP | PUNCH | ZERO) == 0 => {
            return Err(Errno::EINVAL)
        }
        // Punch without KEEP_SIZE, punch with zero-range, modes ext4 lacks.
        _ => return Err(Errno::ENOTSUP),
    })
}

impl State {
    /// Loads `ino`'s space map from the backing file unless it has one
    /// (see the module comment); nothing for anything but a regular file.
    pub fn load_space(&mut self, store: &Store, ino: Ino) -> FsResult<()> {
        let inode = self.inode(ino)?;
        if inode.attr.kind != FileKind::File || inode.space.is_some() {
            return Ok(());
        }
        let extents = match store.stable_path(ino)? {
            Some(path) => store.backend.data_extents(&path)?,
            None => Vec::new(),
        };
        let inode = self.inode_mut(ino)?;
        inode.space = Some(SpaceMap::from_backing(&extents, inode.attr.blocks));
        Ok(())
    }

    /// A `fallocate` that leaves the data in place, logged in the file's
    /// app's write log. A punch at or past the end does nothing (ext4).
    fn fallocate_in_place(
        &mut self,
        store: &Store,
        ino: Ino,
        mode: FallocMode,
        (offset, len): (u64, u64),
        now: SystemTime,
    ) -> FsResult<()> {
        let size = self.inode(ino)?.attr.size;
        if mode == FallocMode::PunchHole && offset >= size {
            return Ok(());
        }
        self.load_space(store, ino)?;
        let app = self.inode(ino)?.app;
        self.close_conflicting(app, &[ino]);
        let vct = self.apps.list[app].open.id;
        let end = offset + len;
        let entry = LogEntry::Fallocate { ino, mode, offset, len };
        self.reserve_object(&entry);
        // Past the end the file reads as zeros already, but replay zeroes
        // the whole range: the write entry of a page it meets (taken at
        // close, so with bytes written past today's end later) moves after it.
        let cleared = offset..end.min(size);
        if mode.zeroes() {
            self.apps.recording(app).record_zeroing(ino, (offset, end), size, entry, now);
            if !cleared.is_empty() {
                self.zero_cached(ino, cleared.clone());
            }
        } else {
            let open = self.apps.recording(app);
            open.record(entry, now);
            open.touch(ino);
        }
        let inode = self.inode_mut(ino)?;
        if mode.zeroes() && !cleared.is_empty() {
            inode.pending_zeroed.push((vct, cleared));
            inode.data_gen += 1;
        }
        if mode.extends() {
            inode.attr.size = inode.attr.size.max(end);
        }
        change_space(inode, |map| match mode {
            FallocMode::Allocate { .. } => map.reserve(touched_pages(offset..end)),
            // As ext4: the page holding the end of file is the last one punched.
            FallocMode::PunchHole => map.set(whole_pages(offset..end.min(size.next_multiple_of(PAGE_SIZE))), None),
            FallocMode::ZeroRange { .. } => map.set(whole_pages(offset..end), Some(Alloc::Reserved)),
        });
        inode.touch_mtime(now);
        inode.last_change = Some((app, vct));
        Ok(())
    }

    /// Clears bytes `range` in the cache: pages wholly inside go (a miss
    /// reads them as zeros now), the partly cleared ones at either end are
    /// zeroed where they are cached.
    fn zero_cached(&mut self, ino: Ino, range: Range<u64>) {
        // Holes need no blocks (what zero-range keeps allocated is counted apart).
        self.release_pages(ino, whole_pages(range.clone()));
        let whole = whole_pages(range.clone());
        self.cache.remove_range(ino, whole.clone());
        for idx in touched_pages(range.clone()).filter(|idx| !whole.contains(idx)) {
            let start = idx * PAGE_SIZE;
            let from = range.start.max(start) - start;
            let to = range.end.min(start + PAGE_SIZE) - start;
            self.cache.zero(ino, idx, from as usize..to as usize);
        }
    }

    /// Page `idx` of a regular file as the mount shows it (up to the size),
    /// through the cache.
    fn page_bytes(&mut self, store: &Store, ino: Ino, idx: u64) -> FsResult<Vec<u8>> {
        let mut bytes = Vec::new();
        loop {
            bytes.clear();
            let Some(miss) = self.read_cached(ino, idx * PAGE_SIZE, PAGE_SIZE, &mut bytes)? else { return Ok(bytes) };
            let pages = fetch(store, &miss)?;
            self.insert_fetched(&miss, pages);
        }
    }

    /// Makes page `to` hold what page `from` held when the file was `size`
    /// bytes long (the map says which is data; a hole is punched, not written).
    fn copy_page(
        &mut self,
        store: &Store,
        ino: Ino,
        (from, to): (u64, u64),
        size: u64,
        now: SystemTime,
    ) -> FsResult<()> {
        let is_data = self.inode(ino)?.space.as_ref().is_some_and(|map| map.is_data(from));
        if is_data {
            let mut bytes = self.page_bytes(store, ino, from)?;
            bytes.truncate((size - from * PAGE_SIZE).min(PAGE_SIZE) as usize);
            self.write(store, ino, to * PAGE_SIZE, &bytes, None, now)
        } else {
            self.fallocate_in_place(store, ino, FallocMode::PunchHole, (to * PAGE_SIZE, PAGE_SIZE), now)
        }
    }

    /// Collapse-range (`insert` false) or insert-range of bytes
    /// `offset..offset+len`, with ext4's rules: both page-aligned, a collapse
    /// ending before the end of file, an insert starting before it. The
    /// pages after `offset` move page by page through the cache (holes are
    /// punched, not written), all in the file's app's open VCT; so the
    /// whole tail is dirty in the cache at once, and a tail larger than the
    /// dirty part of the cache may hold is refused (`ENOSPC`).
    fn shift(
        &mut self,
        store: &Store,
        ino: Ino,
        (offset, len): (u64, u64),
        insert: bool,
        now: SystemTime,
    ) -> FsResult<()> {
        let size = self.inode(ino)?.attr.size;
        let aligned = offset.is_multiple_of(PAGE_SIZE) && len.is_multiple_of(PAGE_SIZE);
        let in_range = if insert { offset < size } else { offset + len < size };
        if !aligned || !in_range {
            return Err(Errno::EINVAL);
        }
        if insert && len > MAX_FILE_SIZE - size {
            return Err(Errno::EFBIG);
        }
        if (size - offset) as f64 > self.config.dirty_high_ratio * self.config.cache_size as f64 {
            return Err(Errno::ENOSPC);
        }
        self.load_space(store, ino)?;
        let (first, shift) = (offset / PAGE_SIZE, len / PAGE_SIZE);
        let pages = size.div_ceil(PAGE_SIZE) - first;
        if insert {
            self.truncate(ino, size + len, now)?;
            // Highest first: a page is read before anything lands on it.
            for i in (0..pages).rev() {
                self.copy_page(store, ino, (first + i, first + i + shift), size, now)?;
            }
            self.fallocate_in_place(store, ino, FallocMode::PunchHole, (offset, len), now)
        } else {
            for i in shift..pages {
                self.copy_page(store, ino, (first + i, first + i - shift), size, now)?;
            }
            self.truncate(ino, size - len, now)
        }
    }
}

impl Engine {
    /// `fallocate(2)`: allocate (mode 0, `KEEP_SIZE`), punch-hole,
    /// zero-range, collapse-range and insert-range, with the errors Linux
    /// and ext4 give (the alignment and range rules of collapse and insert
    /// included).
    pub fn fallocate(&self, ino: Ino, offset: u64, len: u64, mode: i32) -> FsResult<()> {
        if len == 0 || offset > MAX_FILE_SIZE || len > MAX_FILE_SIZE {
            return Err(Errno::EINVAL);
        }
        let request = parse_mode(mode)?;
        let now = self.clock.file_time();
        let mut st = self.state.lock();
        match st.inode(ino)?.attr.kind {
            FileKind::File => {}
            FileKind::Dir => return Err(Errno::EISDIR),
            FileKind::Fifo => return Err(Errno::ESPIPE),
            _ => return Err(Errno::ENODEV),
        }
        // As the VFS does for every mode, against the largest file the backing store holds.
        self.limits.check_size(offset + len)?;
        let store = self.store();
        let allocates =
            matches!(request, Fallocation::InPlace(FallocMode::Allocate { .. } | FallocMode::ZeroRange { .. }));
        if allocates && !st.room_for_allocation(&*self.backend, len, now) {
            return Err(Errno::ENOSPC);
        }
        match request {
            Fallocation::InPlace(mode) => st.fallocate_in_place(&store, ino, mode, (offset, len), now),
            Fallocation::Collapse | Fallocation::Insert => {
                st.shift(&store, ino, (offset, len), request == Fallocation::Insert, now)
            }
        }
    }

    /// `lseek` with `SEEK_DATA` or `SEEK_HOLE`: where the next data or hole
    /// starts at or after `offset`, merging what the backing file has with
    /// every write, truncate and fallocate since (`ENXIO` at or past the
    /// end, or when no data follows). The end of file counts as a hole.
    pub fn lseek(&self, ino: Ino, offset: u64, whence: i32) -> FsResult<u64> {
        let mut st = self.state.lock();
        if st.inode(ino)?.attr.kind != FileKind::File || !matches!(whence, libc::SEEK_DATA | libc::SEEK_HOLE) {
            return Err(Errno::EINVAL);
        }
        st.load_space(&self.store(), ino)?;
        let inode = st.inode(ino)?;
        let size = inode.attr.size;
        if offset >= size {
            return Err(Errno::ENXIO);
        }
        let map = inode.space.as_ref().ok_or(Errno::EIO)?;
        let page = offset / PAGE_SIZE;
        if whence == libc::SEEK_DATA {
            let data = map.next_data(page).map(|p| (p * PAGE_SIZE).max(offset));
            data.filter(|at| *at < size).ok_or(Errno::ENXIO)
        } else {
            Ok((map.next_hole(page) * PAGE_SIZE).max(offset).min(size))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(map: &SpaceMap) -> Vec<(u64, u64, Alloc)> {
        map.runs.iter().map(|(s, (e, a))| (*s, *e, *a)).collect()
    }

    #[test]
    fn space_runs_split_merge_and_count_pages() {
        let mut map = SpaceMap::default();
        map.set(0..10, Some(Alloc::Data));
        map.set(3..5, None);
        assert_eq!(runs(&map), [(0, 3, Alloc::Data), (5, 10, Alloc::Data)]);
        map.set(3..5, Some(Alloc::Data));
        assert_eq!(runs(&map), [(0, 10, Alloc::Data)], "adjacent runs of one kind merge");
        map.reserve(8..20);
        assert_eq!(runs(&map), [(0, 10, Alloc::Data), (10, 20, Alloc::Reserved)], "data stays data");
        map.set(15..u64::MAX, None);
        assert_eq!(map.pages, 15);
        assert_eq!(map.blocks(), 15 * 8);
        assert_eq!((map.next_data(0), map.next_data(10), map.next_hole(2), map.next_hole(12)), (Some(0), None, 10, 12));
    }

    /// Random sets, reserves and appends over 64 pages against a page-by-page model: the runs are
    /// exactly the model's maximal runs (disjoint, never two adjacent of one kind) and `pages` counts
    /// them. Seed: `MCFS_SEED`.
    #[test]
    fn random_changes_keep_maximal_runs_and_the_page_count() {
        use rand::{Rng, SeedableRng};
        let seed: u64 = std::env::var("MCFS_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random);
        println!("seed {seed} (MCFS_SEED={seed} replays it)");
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let (mut map, mut model) = (SpaceMap::default(), [None; 64]);
        for step in 0..2000 {
            let start = rng.gen_range(0..64);
            let pages = start..rng.gen_range(start..=64);
            let to = [None, Some(Alloc::Data), Some(Alloc::Reserved)][rng.gen_range(0..3)];
            if rng.gen_bool(0.2) {
                map.reserve(pages.clone());
                model[pages.start as usize..pages.end as usize].iter_mut().for_each(|p| {
                    p.get_or_insert(Alloc::Reserved);
                });
            } else {
                map.set(pages.clone(), to);
                model[pages.start as usize..pages.end as usize].fill(to);
            }
            let mut expected = Vec::new();
            for (page, alloc) in (0u64..).zip(model) {
                match (expected.last_mut(), alloc) {
                    (Some((_, end, last)), Some(alloc)) if *end == page && *last == alloc => *end += 1,
                    (_, Some(alloc)) => expected.push((page, page + 1, alloc)),
                    (_, None) => {}
                }
            }
            assert_eq!(runs(&map), expected, "seed {seed}, step {step}: {pages:?} to {to:?}");
            assert_eq!(map.pages, model.iter().flatten().count() as u64, "seed {seed}, step {step}");
        }
    }

    #[test]
    fn backing_extents_load_as_data_and_keep_extra_blocks() {
        let map = SpaceMap::from_backing(&[0..100, 8192..9000], 40);
        assert_eq!(runs(&map), [(0, 1, Alloc::Data), (2, 3, Alloc::Data)]);
        assert_eq!(map.blocks(), 40, "an untouched file shows the backing file's st_blocks");
        assert_eq!((map.next_hole(0), map.next_data(1)), (1, Some(2)));
    }

    #[test]
    fn fallocate_modes_parse_as_linux_checks_them() {
        use libc::*;
        let parse = |m: i32| parse_mode(m);
        assert_eq!(parse(0), Ok(Fallocation::InPlace(FallocMode::Allocate { keep_size: false })));
        assert_eq!(parse(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE), Ok(Fallocation::InPlace(FallocMode::PunchHole)));
        assert_eq!(parse(FALLOC_FL_ZERO_RANGE), Ok(Fallocation::InPlace(FallocMode::ZeroRange { keep_size: false })));
        assert_eq!(parse(FALLOC_FL_COLLAPSE_RANGE), Ok(Fallocation::Collapse));
        assert_eq!(parse(FALLOC_FL_INSERT_RANGE), Ok(Fallocation::Insert));
        assert_eq!(parse(FALLOC_FL_PUNCH_HOLE), Err(Errno::ENOTSUP), "punch needs KEEP_SIZE");
        assert_eq!(parse(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE), Err(Errno::ENOTSUP));
        assert_eq!(parse(FALLOC_FL_COLLAPSE_RANGE | FALLOC_FL_KEEP_SIZE), Err(Errno::EINVAL));
        assert_eq!(parse(FALLOC_FL_INSERT_RANGE | FALLOC_FL_ZERO_RANGE), Err(Errno::EINVAL));
        assert_eq!(parse(0x40), Err(Errno::ENOTSUP), "unshare-range");
    }
}
