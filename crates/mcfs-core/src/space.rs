//! Backing space accounting. mcfs accepts writes in memory long before they
//! reach the backing store, and a commit needs room twice over for a while
//! (the journal copy, then the applied copy). So, as ext4's delayed
//! allocation does, it reserves backing space for what it has accepted and
//! says ENOSPC at the call when that would not fit, instead of failing every
//! checkpoint later:
//!
//! * a written page beyond its file's size in the backing store needs a new
//!   block until it is committed (`Inode::new_blocks`; holes need none, and
//!   an overwrite in place reuses its block);
//! * a new object (file, directory, symlink, link) needs about a block, and
//!   a `fallocate` that allocates (or zero-range) its whole range;
//! * a transaction needs journal room for its data while it commits, so a
//!   writer whose VCT would no longer fit commits it first, and a batch that
//!   does not fit is committed in parts (`State::fitting_prefix`).
//!
//! `statfs` shows the free space net of the reservation. The backing
//! store's free space is asked for when a decision comes close to it (and
//! at least every `FREE_TTL`).
//!
//! Invariant: `new_pages` is the number of entries in all inodes'
//! `new_blocks`, `new_objects` the number of creates and links logged and
//! not yet committed, and `allocated_pages` the pages of the allocating
//! `fallocate`s logged and not yet committed.

use crate::backend::Backend;
use crate::state::State;
use crate::types::*;
use crate::vct::{AppId, ClosedVct, LogEntry};
use std::time::{Duration, SystemTime};

/// How long an answer of the backing store's `statfs` is trusted when the
/// decision is not close.
const FREE_TTL: Duration = Duration::from_millis(100);
/// Room kept free for the backing file system's own metadata: this much,
/// plus 1/64 of what is reserved.
const MARGIN: u64 = 256 << 10;

#[derive(Default)]
pub struct Space {
    /// Pages written beyond their file's backing size, not committed yet.
    pub new_pages: u64,
    /// Objects created (or links made) and not committed yet.
    pub new_objects: u64,
    /// Pages `fallocate` allocates (or zero-range keeps allocated), all of
    /// each range, until it is committed.
    pub allocated_pages: u64,
    /// The backing store's free bytes as last asked, and when.
    free: Option<(SystemTime, u64)>,
}

/// What a write must do about backing space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Room {
    Fits,
    /// The app's uncommitted data would no longer fit in the journal with
    /// the write: commit it first, then ask again.
    CommitFirst,
    /// Not even the write alone fits.
    Full,
}

/// Journal bytes a transaction carrying `bytes` of data takes: the data,
/// plus what its records and paths add.
fn journal_need(bytes: u64) -> u64 {
    bytes + bytes / 32 + (64 << 10)
}

impl Space {
    fn reserved(&self) -> u64 {
        (self.new_pages + self.new_objects + self.allocated_pages) * PAGE_SIZE
    }

    /// Forgets the backing store's free space: a commit changed it.
    pub fn changed(&mut self) {
        self.free = None;
    }
}

impl State {
    /// Bytes the backing store has free now, asked again when the cached
    /// answer is old or `need` comes close to it.
    fn backing_free(&mut self, backend: &dyn Backend, need: u64, now: SystemTime) -> u64 {
        if let Some((at, free)) = self.space.free {
            let fresh = now >= at && !crate::clock::aged(at, FREE_TTL, now);
            if fresh && need.saturating_mul(2) < free {
                return free;
            }
        }
        // A store that cannot say (an error) is taken as having room: the
        // commit will report the real error.
        let free = backend.statfs().map_or(u64::MAX, |s| s.bavail.saturating_mul(u64::from(s.bsize)));
        self.space.free = Some((now, free));
        free
    }

    /// Pages of `[offset, offset + len)` of `ino` a write would newly need
    /// backing blocks for.
    fn pages_to_reserve(&self, ino: Ino, offset: u64, len: u64) -> u64 {
        let Some(inode) = self.inodes.get(&ino) else { return 0 };
        let first_new = inode.backing_size.div_ceil(PAGE_SIZE);
        let (first, end) = (offset / PAGE_SIZE, offset.saturating_add(len).div_ceil(PAGE_SIZE));
        (first.max(first_new)..end).filter(|p| !inode.new_blocks.contains(p)).count() as u64
    }

    /// Whether `app` may write `len` bytes at `offset` of `ino` now (see the module comment).
    pub fn room_for_write(
        &mut self,
        backend: &dyn Backend,
        app: AppId,
        ino: Ino,
        offset: u64,
        len: u64,
        now: SystemTime,
    ) -> Room {
        let reserved = self.space.reserved() + self.pages_to_reserve(ino, offset, len) * PAGE_SIZE;
        let uncommitted = crate::checkpoint::stale_bytes(self, app);
        let need = |journal: u64| reserved + reserved / 64 + MARGIN + journal_need(journal);
        let free = self.backing_free(backend, need(uncommitted + len), now);
        if need(uncommitted + len) <= free {
            Room::Fits
        } else if uncommitted > 0 && need(len) <= free {
            Room::CommitFirst
        } else {
            Room::Full
        }
    }

    /// Whether the backing store has room for a `fallocate` that allocates
    /// `len` bytes (`ENOSPC` at the call otherwise, as ext4 gives).
    pub fn room_for_allocation(&mut self, backend: &dyn Backend, len: u64, now: SystemTime) -> bool {
        let reserved = self.space.reserved() + len.div_ceil(PAGE_SIZE) * PAGE_SIZE;
        let need = reserved + reserved / 64 + MARGIN;
        need <= self.backing_free(backend, need, now)
    }

    /// How many of `batch`'s VCTs (oldest first, at least one) one
    /// transaction may carry: the rest would not fit in the journal next
    /// to what is reserved.
    pub fn fitting_prefix(&mut self, backend: &dyn Backend, batch: &[ClosedVct], now: SystemTime) -> usize {
        let reserved = self.space.reserved();
        let total: u64 = batch.iter().map(|v| v.bytes).sum();
        let room = |bytes: u64| reserved + reserved / 64 + MARGIN + journal_need(bytes);
        let free = self.backing_free(backend, room(total), now);
        let mut bytes = 0;
        let fits = batch.iter().take_while(|v| {
            bytes += v.bytes;
            room(bytes) <= free
        });
        fits.count().max(1)
    }

    /// Page `idx` of `ino` was written: it needs a block if it lies beyond
    /// the file's size in the backing store.
    pub fn reserve_page(&mut self, ino: Ino, idx: u64) {
        let Some(inode) = self.inodes.get_mut(&ino) else { return };
        if idx >= inode.backing_size.div_ceil(PAGE_SIZE) && inode.new_blocks.insert(idx) {
            self.space.new_pages += 1;
        }
    }

    /// Pages `pages` of `ino` no longer need blocks: cut off, punched out
    /// before they were committed, or the file is gone.
    pub fn release_pages(&mut self, ino: Ino, pages: std::ops::Range<u64>) {
        let Some(inode) = self.inodes.get_mut(&ino).filter(|_| !pages.is_empty()) else { return };
        let gone: Vec<u64> = inode.new_blocks.range(pages).copied().collect();
        for page in &gone {
            inode.new_blocks.remove(page);
        }
        self.space.new_pages -= gone.len() as u64;
    }

    /// An entry that creates an object, or allocates space, was logged.
    pub fn reserve_object(&mut self, entry: &LogEntry) {
        if creates_object(entry) {
            self.space.new_objects += 1;
        }
        self.space.allocated_pages += allocated_pages(entry);
    }

    /// An entry of a committed VCT is in the backing store now: its
    /// reservation is real usage (or was never needed).
    pub fn committed_entry(&mut self, entry: &LogEntry) {
        if creates_object(entry) {
            self.space.new_objects -= 1;
        }
        self.space.allocated_pages -= allocated_pages(entry);
        if let LogEntry::SetLen { ino, size } = entry {
            if let Some(inode) = self.inodes.get_mut(ino) {
                inode.backing_size = *size;
            }
        }
    }

    /// A page of a committed VCT is in the backing store now. Returns
    /// whether its inode is still known (the caller's one lookup of it).
    pub fn committed_page(&mut self, ino: Ino, idx: u64, len: usize) -> bool {
        let Some(inode) = self.inodes.get_mut(&ino) else { return false };
        if inode.new_blocks.remove(&idx) {
            self.space.new_pages -= 1;
        }
        inode.backing_size = inode.backing_size.max(idx * PAGE_SIZE + len as u64);
        true
    }

    /// The backing store's numbers net of the reservation (`statfs`).
    pub fn net_of_reservation(&self, mut stats: FsStats) -> FsStats {
        let blocks = self.space.reserved().div_ceil(u64::from(stats.bsize.max(1)));
        stats.bfree = stats.bfree.saturating_sub(blocks);
        stats.bavail = stats.bavail.saturating_sub(blocks);
        stats.ffree = stats.ffree.saturating_sub(self.space.new_objects);
        stats
    }
}

/// Pages an entry allocates in the backing store when it is applied.
fn allocated_pages(entry: &LogEntry) -> u64 {
    match entry {
        LogEntry::Fallocate { mode: FallocMode::Allocate { .. } | FallocMode::ZeroRange { .. }, len, .. } => {
            len.div_ceil(PAGE_SIZE)
        }
        _ => 0,
    }
}

fn creates_object(entry: &LogEntry) -> bool {
    matches!(entry, LogEntry::Create { .. } | LogEntry::Symlink { .. } | LogEntry::Link { .. })
}
