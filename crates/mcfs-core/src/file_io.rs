//! File data through the cache: reads fill pages from the backing store,
//! writes go into pages and the file's app's write log, truncates cut pages
//! and hide backing data beyond the new end until they commit (as pending
//! punched holes and zeroed ranges hide theirs, see `file_space`).
//!
//! Reclaim (`make_room`) takes pages in the replacement policy's order
//! (`cache.replacement`, `Cache::reclaim`), sparing the foreground app when
//! `fasttrack.reclaim` is on. With the default `fasttrack+lru` that is
//! FastTrack's order (§4.3) — background clean, background dirty (after a
//! checkpoint of the background apps), foreground clean, foreground dirty
//! (after a full checkpoint) — the foreground writer leaves the background
//! checkpoint to the background thread and takes its own clean pages
//! meanwhile (docs/ENGINE.md); without a spared app, least recently used
//! clean pages of any app, then a full checkpoint. A page belongs to the app
//! that last brought it in, read or wrote it (`State::accessor`).

use crate::app_status::IoClass;
use crate::apps::Apps;
use crate::cache::{NewPage, PageBuf, Reclaim, Scope, Source, MAX_FILL_PAGES, ZERO_PAGE};
use crate::inode::Inode;
use crate::split_writes::Piece;
use crate::state::{State, Store};
use crate::types::*;
use crate::vct::AppId;
use std::sync::Arc;
use std::time::SystemTime;

/// What a writer must do before the cache has room for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Room {
    /// There is room now.
    Made,
    /// Background apps' dirty pages stand before the foreground app's pages:
    /// checkpoint them (`Trigger::Background`), then ask again.
    CheckpointBackground,
    /// Only dirty data is left: checkpoint everything, then ask again.
    CheckpointAll,
}

impl State {
    /// The app whose pages reclaim takes last: the foreground app, unless
    /// `fasttrack.reclaim` is off or it is a system app (system apps count
    /// as background for reclaim).
    pub(crate) fn reclaim_spares(&self) -> Option<AppId> {
        let fg = self.status.foreground().filter(|_| self.config.fasttrack.reclaim)?;
        (self.io_class(fg) == IoClass::Foreground).then_some(fg)
    }

    /// Room for `pages` more pages for a writer, dropping clean pages in
    /// reclaim order until it needs a checkpoint (see the module comment).
    pub fn make_room(&mut self, pages: u64) -> Room {
        self.reclaim(pages, Source::Write, false)
    }

    /// Room for `pages` more pages `app` brings in now, without waiting for a
    /// checkpoint: only clean pages go, and the cache overshoots its limit
    /// when none may. The foreground app may take its own clean pages ahead
    /// of background dirty ones (else it would grow the cache without bound);
    /// a background app may not, and overshoots by at most this fill, since
    /// the pages it brings in are the first victims of the next reclaim.
    fn make_room_now(&mut self, pages: u64, app: AppId, source: Source) {
        let _overshoot = self.reclaim(pages, source, Some(app) == self.reclaim_spares());
    }

    /// Pages a commit made clean go as far as the cache is over its limit,
    /// now rather than at the next fill: the foreground writer's overshoot
    /// (docs/ENGINE.md, "Memory") ends with its commit.
    pub(crate) fn reclaim_committed(&mut self) {
        let _only_dirty_left = self.reclaim(0, Source::Write, true);
    }

    fn reclaim(&mut self, pages: u64, source: Source, past_background_dirty: bool) -> Room {
        match self.cache.reclaim(pages, source, self.reclaim_spares(), past_background_dirty) {
            Reclaim::Made => Room::Made,
            Reclaim::Checkpoint(Scope::Background) => Room::CheckpointBackground,
            Reclaim::Checkpoint(Scope::All) => Room::CheckpointAll,
        }
    }

    /// Brings page `idx` of a file, not cached, into the cache (clean) for `owner`.
    fn load_page(&mut self, store: &Store, ino: Ino, idx: u64, owner: AppId) -> FsResult<()> {
        let inode = self.inode(ino)?;
        if idx * PAGE_SIZE >= backing_shown(inode) {
            // Zeros (what `fetch` would make), without a fetch: an append's new page.
            self.make_room_now(1, owner, Source::Backing);
            self.cache.insert(ino, idx, NewPage::Zeros, owner, Source::Backing);
            return Ok(());
        }
        let miss = Miss::new(inode, ino, idx, 1, (idx + 1) * PAGE_SIZE);
        let pages = fetch(store, &miss)?;
        self.insert_fetched(&miss, pages);
        Ok(())
    }

    /// Appends to `out` what the cache holds of a read, up to the first page
    /// it lacks, and names the run of pages to fetch from the backing store
    /// next (the caller fetches them without the state lock and calls again
    /// from where this stopped, so every call makes progress).
    pub(crate) fn read_cached(
        &mut self,
        ino: Ino,
        offset: u64,
        size: u64,
        out: &mut impl ReadSink,
    ) -> FsResult<Option<Miss>> {
        let owner = self.accessor(ino)?;
        let inode = self.inode(ino)?;
        match inode.attr.kind {
            FileKind::File => {}
            FileKind::Dir => return Err(Errno::EISDIR),
            _ => return Err(Errno::EINVAL),
        }
        let end = offset.saturating_add(size).min(inode.attr.size);
        out.reserve(end.saturating_sub(offset) as usize);
        let mut at = offset;
        while at < end {
            let idx = at / PAGE_SIZE;
            let within = (at % PAGE_SIZE) as usize;
            let take = ((PAGE_SIZE as usize - within) as u64).min(end - at) as usize;
            // A sink that only counts is handed zeros: a page kept without its bytes is not made for it.
            let page = match out.keeps_bytes() {
                true => self.cache.read(ino, idx, owner),
                false => self.cache.note_read(ino, idx, owner).then_some(&ZERO_PAGE),
            };
            let Some(page) = page else {
                let last_page = (end - 1) / PAGE_SIZE;
                let run = (idx..=last_page).take_while(|i| !self.cache.contains(ino, *i)).count() as u64;
                let run_end = end.min((idx + run) * PAGE_SIZE);
                return Ok(Some(Miss::new(self.inode(ino)?, ino, idx, run.min(MAX_FILL_PAGES), run_end)));
            };
            out.append(&page[within..within + take]);
            at += take as u64;
        }
        Ok(None)
    }

    /// Caches pages fetched for `miss`, unless the file's data changed since
    /// (a write or truncate may have made them stale; then it returns false)
    /// or a page is there now.
    pub fn insert_fetched(&mut self, miss: &Miss, pages: Vec<Arc<PageBuf>>) -> bool {
        if !self.still_current(miss) {
            return false;
        }
        let Ok(owner) = self.accessor(miss.ino) else { return false };
        self.make_room_now(pages.len() as u64, owner, Source::Backing);
        for (idx, data) in (miss.first..).zip(pages) {
            self.cache.insert(miss.ino, idx, NewPage::Owned(data), owner, Source::Backing);
        }
        true
    }

    /// Whether the file's data is as it was when `miss` was found (no write
    /// or truncate since that could make what was fetched for it stale).
    pub fn still_current(&self, miss: &Miss) -> bool {
        self.inodes.get(&miss.ino).is_some_and(|i| i.data_gen == miss.gen)
    }

    /// Writes into the cache and logs the pages in the file's app's open VCT,
    /// or, for the rest of a `write(2)` whose VCT closed after its first
    /// piece, in that VCT (`split_writes`). `piece` is the writing thread
    /// and what the front end knows of the request; `None` for the kernel's
    /// writeback, which has no caller.
    pub fn write(
        &mut self,
        store: &Store,
        ino: Ino,
        offset: u64,
        data: &[u8],
        piece: Option<(u32, Piece)>,
        now: SystemTime,
    ) -> FsResult<()> {
        let inode = self.inode(ino)?;
        match inode.attr.kind {
            FileKind::File => {}
            FileKind::Dir => return Err(Errno::EISDIR),
            _ => return Err(Errno::EINVAL),
        }
        let end = offset.checked_add(data.len() as u64).filter(|e| *e <= MAX_FILE_SIZE).ok_or(Errno::EFBIG)?;
        let app = inode.app;
        let owner = self.accessor(ino)?;
        self.load_space(store, ino)?;
        let open = self.apps.list[app].open.id;
        let started_in = piece.and_then(|(tid, _)| self.continued_write(tid, ino, offset, now));
        let trailing = started_in.filter(|vct| *vct != open);
        if trailing.is_none() {
            self.close_conflicting(app, &[ino]);
        }
        let vct = trailing.unwrap_or(self.apps.list[app].open.id);
        let mut at = offset;
        while at < end {
            let idx = at / PAGE_SIZE;
            let within = (at % PAGE_SIZE) as usize;
            let take = ((PAGE_SIZE as usize - within) as u64).min(end - at) as usize;
            let src = (at - offset) as usize;
            let bytes = &data[src..src + take];
            // The write is logged (and the page pinned if new in the VCT) once the page is found.
            let log = |apps: &mut Apps| trailing.is_none() && apps.record_write(app, ino, idx, take as u64, now);
            let apps = &mut self.apps;
            if !self.cache.write(ino, idx, owner, within, bytes, || log(apps)) {
                // A whole page not cached comes in with its new bytes (nothing to read, zero or copy twice).
                let rest = match <&PageBuf>::try_from(bytes) {
                    Ok(whole) => {
                        self.make_room_now(1, owner, Source::Write);
                        self.cache.insert(ino, idx, NewPage::Copy(whole), owner, Source::Write);
                        &bytes[..0]
                    }
                    Err(_) => {
                        self.load_page(store, ino, idx, owner)?;
                        bytes
                    }
                };
                let apps = &mut self.apps;
                assert!(self.cache.write(ino, idx, owner, within, rest, || log(apps)), "loaded");
            }
            self.reserve_page(ino, idx);
            at += take as u64;
        }
        let inode = self.inodes.get_mut(&ino).expect("checked");
        inode.attr.size = inode.attr.size.max(end);
        inode.data_gen += 1;
        match piece {
            Some(_) => inode.touch_mtime(now),
            // The kernel's writeback (no caller: sync-point mode) keeps the
            // time of the app's write itself and sends it in a SETATTR if
            // it changed the file's (docs/ENGINE.md, "Consistency modes").
            None => inode.attr.ctime = now,
        }
        crate::file_space::wrote(inode, offset, end);
        match trailing {
            Some(vct) => self.write_trailing(vct, ino, offset, end),
            None => inode.last_change = Some((app, vct)),
        }
        if let Some((tid, piece)) = piece {
            let cap = self.split_write_cap();
            self.split_writes.record(tid, app, ino, offset, data.len() as u64, vct, piece, cap, now);
        }
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
        self.apps.recording(app).record_truncate(ino, size, now);
        let inode = self.inodes.get_mut(&ino).expect("checked");
        if size < inode.attr.size {
            self.cache.remove_from(ino, size.div_ceil(PAGE_SIZE));
            let within = (size % PAGE_SIZE) as usize;
            if within != 0 {
                self.cache.zero(ino, size / PAGE_SIZE, within..PAGE_SIZE as usize);
            }
            inode.pending_truncates.push((vct, size));
            inode.backing_valid_len = inode.backing_valid_len.min(size);
        }
        crate::file_space::truncated(inode, size);
        inode.attr.size = size;
        inode.data_gen += 1;
        inode.touch_mtime(now);
        inode.last_change = Some((app, vct));
        self.release_pages(ino, size.div_ceil(PAGE_SIZE)..u64::MAX);
        Ok(())
    }
}

/// Where the bytes of a read go (`State::read_cached`): into the caller's
/// buffer, or nowhere (`ReadCount`).
pub(crate) trait ReadSink {
    /// Bytes taken so far.
    fn count(&self) -> u64;
    fn append(&mut self, bytes: &[u8]);
    /// Room for `more` bytes to come.
    fn reserve(&mut self, more: usize);
    /// Whether the sink keeps the bytes (else it counts them and is given
    /// zeros in their place).
    fn keeps_bytes(&self) -> bool;
    /// The buffer a streamed read goes into (`Miss::streamed`); none for a
    /// sink that keeps nothing, which never streams.
    fn buffer(&mut self) -> Option<&mut Vec<u8>>;
}

impl ReadSink for Vec<u8> {
    fn count(&self) -> u64 {
        self.len() as u64
    }

    fn append(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }

    fn reserve(&mut self, more: usize) {
        Vec::reserve(self, more);
    }

    fn keeps_bytes(&self) -> bool {
        true
    }

    fn buffer(&mut self) -> Option<&mut Vec<u8>> {
        Some(self)
    }
}

/// A read's bytes counted, not kept: the simulator's replay needs how many
/// bytes a read returns, not a copy of them (`Engine::read_len`).
#[derive(Default)]
pub(crate) struct ReadCount(pub u64);

impl ReadSink for ReadCount {
    fn count(&self) -> u64 {
        self.0
    }

    fn append(&mut self, bytes: &[u8]) {
        self.0 += bytes.len() as u64;
    }

    fn reserve(&mut self, _more: usize) {}

    fn keeps_bytes(&self) -> bool {
        false
    }

    fn buffer(&mut self) -> Option<&mut Vec<u8>> {
        None
    }
}

/// Largest file size: what a backing file system's `off_t` can hold.
pub(crate) const MAX_FILE_SIZE: u64 = i64::MAX as u64;

/// Pages a read must miss in a row to be streamed: served from the backing
/// store straight into the reply and not cached (`Miss::streamed`). The
/// kernel's default read-ahead window (128 KiB): only sequential reads ask
/// for that much at once.
pub const STREAM_PAGES: u64 = 32;

/// A run of pages a read needs from the backing store.
pub struct Miss {
    ino: Ino,
    first: u64,
    pages: u64,
    /// Where the read's run of missing pages ends, in bytes (at the read's
    /// end, the file's end or the next cached page; not capped like `pages`).
    run_end: u64,
    /// The file's `backing_shown` bytes when the miss was found.
    valid: u64,
    /// Byte ranges within the run that pending punched holes and zeroed
    /// ranges cleared: zeros whatever the backing store still has there.
    zeroed: Vec<std::ops::Range<u64>>,
    /// The file's data generation when the miss was found.
    gen: u64,
}

impl Miss {
    fn new(inode: &Inode, ino: Ino, first: u64, pages: u64, run_end: u64) -> Miss {
        let valid = backing_shown(inode);
        let last = run_end.div_ceil(PAGE_SIZE).max(first + pages);
        let zeroed = crate::file_space::zeroed_within(inode, first * PAGE_SIZE..last * PAGE_SIZE);
        Miss { ino, first, pages, run_end, valid, zeroed, gen: inode.data_gen }
    }

    /// The bytes from `at` (where the read stands, within the miss's first
    /// page) to the end of the run, if the run is long enough to stream: a
    /// sequential read of data the cache does not hold. Caching it would
    /// copy every page once more, allocate it, and push out pages that are
    /// read again, for data the kernel's page cache above mcfs already
    /// keeps (files are opened with `FOPEN_KEEP_CACHE`).
    pub fn streamed(&self, at: u64) -> Option<std::ops::Range<u64>> {
        (self.run_end.div_ceil(PAGE_SIZE) - self.first >= STREAM_PAGES).then_some(at..self.run_end)
    }
}

/// Bytes of backing data a file may show: its size, or less where a
/// pending truncate cut the backing data off.
fn backing_shown(inode: &Inode) -> u64 {
    inode.backing_valid_len.min(inode.attr.size)
}

/// Reads bytes `start..start + buf.len()` of a miss's file from the backing
/// store into `buf`, which holds zeros: they stay where the backing store
/// has nothing the file may show (beyond its end, cut off by a pending
/// truncate, or a file not yet in the backing store).
fn read_backing(store: &Store, miss: &Miss, start: u64, buf: &mut [u8]) -> FsResult<()> {
    let want = miss.valid.saturating_sub(start).min(buf.len() as u64) as usize;
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
    let end = start + buf.len() as u64;
    for range in &miss.zeroed {
        let (from, to) = (range.start.max(start), range.end.min(end));
        if from < to {
            buf[(from - start) as usize..(to - start) as usize].fill(0);
        }
    }
    Ok(())
}

/// Appends bytes `range` of a streamed miss (`Miss::streamed`) to `out`,
/// read from the backing store. Runs without the state lock: the caller
/// keeps them only if the file is `still_current` afterwards.
pub fn stream(store: &Store, miss: &Miss, range: std::ops::Range<u64>, out: &mut Vec<u8>) -> FsResult<()> {
    let at = out.len();
    out.resize(at + (range.end - range.start) as usize, 0);
    read_backing(store, miss, range.start, &mut out[at..]).inspect_err(|_| out.truncate(at))
}

/// Reads a miss's pages from the backing store; zeros where it has nothing
/// the file may show (beyond its end, cut off by a pending truncate, or a
/// file not yet in the backing store). Runs without the state lock.
pub fn fetch(store: &Store, miss: &Miss) -> FsResult<Vec<Arc<PageBuf>>> {
    let start = miss.first * PAGE_SIZE;
    // Pages wholly past what the backing store may show are made as zeros, not read and copied.
    let readable = miss.valid.saturating_sub(start).div_ceil(PAGE_SIZE).min(miss.pages);
    let mut buf = vec![0u8; (readable * PAGE_SIZE) as usize];
    read_backing(store, miss, start, &mut buf)?;
    let read = buf.chunks_exact(PAGE_SIZE as usize).map(|c| Arc::new(<PageBuf>::try_from(c).expect("page-sized")));
    Ok(read.chain((readable..miss.pages).map(|_| Arc::new([0; PAGE_SIZE as usize]))).collect())
}
