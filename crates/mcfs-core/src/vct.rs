//! Write logs and Versioned Cache Transactions (MobiFS §4.1–4.2).
//!
//! Each app has one write log: a chronological list of its data and metadata
//! operations, cut into VCTs. The open VCT accepts entries; a page written
//! again inside the open VCT is overwritten in place (one entry per page).
//! Closing a VCT snapshots the current version of each of its pages, so a
//! later write to such a page copies it (see `cache`), and makes the VCT
//! immutable. A closed VCT is committed atomically by the checkpointer and
//! then dropped. Metadata entries keep their order with the data entries.

use crate::cache::PageVersion;
use crate::nearby::NearbyHasher;
use crate::types::*;
use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, HashMap};
use std::ffi::OsString;
use std::hash::BuildHasherDefault;
use std::ops::RangeBounds;
use std::time::SystemTime;

/// Index of an app in the engine's app table.
pub type AppId = usize;

/// One operation in a write log. Inodes are named by engine inode number;
/// the checkpointer turns them into backing paths when it commits.
#[derive(Clone, Debug)]
pub enum LogEntry {
    /// Page `page` of `ino` (its content is taken when the VCT closes).
    Write {
        ino: Ino,
        page: u64,
    },
    SetLen {
        ino: Ino,
        size: u64,
    },
    Create {
        ino: Ino,
        parent: Ino,
        name: OsString,
        kind: FileKind,
        perm: u32,
        rdev: u32,
        uid: u32,
        gid: u32,
    },
    Symlink {
        ino: Ino,
        parent: Ino,
        name: OsString,
        target: OsString,
        uid: u32,
        gid: u32,
    },
    Link {
        ino: Ino,
        parent: Ino,
        name: OsString,
    },
    Unlink {
        ino: Ino,
        parent: Ino,
        name: OsString,
    },
    Rmdir {
        ino: Ino,
        parent: Ino,
        name: OsString,
    },
    Rename {
        ino: Ino,
        parent: Ino,
        name: OsString,
        new_parent: Ino,
        new_name: OsString,
        replaced: Option<Ino>,
    },
    Exchange {
        parent: Ino,
        name: OsString,
        new_parent: Ino,
        new_name: OsString,
    },
    SetPerm {
        ino: Ino,
        perm: u32,
    },
    SetOwner {
        ino: Ino,
        uid: u32,
        gid: u32,
    },
    SetTimes {
        ino: Ino,
        atime: SystemTime,
        mtime: SystemTime,
    },
    SetXattr {
        ino: Ino,
        name: OsString,
        value: Vec<u8>,
    },
    RemoveXattr {
        ino: Ino,
        name: OsString,
    },
    /// `fallocate` of bytes `offset..offset+len` (see `FallocMode`).
    Fallocate {
        ino: Ino,
        mode: FallocMode,
        offset: u64,
        len: u64,
    },
    /// An `O_TMPFILE` file: a regular file without a name, kept as an
    /// orphan in the backing store until a `Link` names it.
    Tmpfile {
        ino: Ino,
        perm: u32,
        uid: u32,
        gid: u32,
    },
}

impl LogEntry {
    /// The inode whose object or name the entry changes (for an exchange of
    /// two names, the directory of the first).
    pub fn ino(&self) -> Ino {
        match self {
            LogEntry::Write { ino, .. }
            | LogEntry::SetLen { ino, .. }
            | LogEntry::Create { ino, .. }
            | LogEntry::Symlink { ino, .. }
            | LogEntry::Link { ino, .. }
            | LogEntry::Unlink { ino, .. }
            | LogEntry::Rmdir { ino, .. }
            | LogEntry::Rename { ino, .. }
            | LogEntry::SetPerm { ino, .. }
            | LogEntry::SetOwner { ino, .. }
            | LogEntry::SetTimes { ino, .. }
            | LogEntry::SetXattr { ino, .. }
            | LogEntry::RemoveXattr { ino, .. }
            | LogEntry::Fallocate { ino, .. }
            | LogEntry::Tmpfile { ino, .. } => *ino,
            LogEntry::Exchange { parent, .. } => *parent,
        }
    }

    /// Whether the entry adds or removes a name (so where it lands depends
    /// on the directories above it).
    pub fn changes_names(&self) -> bool {
        matches!(
            self,
            LogEntry::Create { .. }
                | LogEntry::Symlink { .. }
                | LogEntry::Link { .. }
                | LogEntry::Unlink { .. }
                | LogEntry::Rmdir { .. }
                | LogEntry::Rename { .. }
                | LogEntry::Exchange { .. }
        )
    }
}

/// Entries whose room an open VCT keeps from one VCT to the next (about
/// 100 KiB): what the VCTs of a steady writer hold, not the rare large one.
const ENTRIES_KEPT: usize = 1024;

/// The open VCT of an app.
#[derive(Default)]
pub struct OpenVct {
    pub id: u64,
    /// `None` marks an entry a later truncate made void.
    entries: Vec<Option<LogEntry>>,
    /// Position of the write entry of each (inode, page): one table that
    /// keeps its room from one VCT to the next (a map per inode allocated
    /// its nodes anew in every VCT).
    page_entries: HashMap<(Ino, u64), usize, BuildHasherDefault<NearbyHasher>>,
    /// Inodes whose data or size changed (their times are logged at close).
    data_inodes: BTreeSet<Ino>,
    /// The inode a write last put in `data_inodes` (which only grows until
    /// `take`): the pages of one file come in a row, inserted without a search.
    last_data_inode: Option<Ino>,
    /// Staleness s: bytes written into this VCT.
    pub bytes: u64,
    /// Overwrite o: bytes of those that landed on a page already in this VCT.
    pub overwrite_bytes: u64,
    /// Time of the first entry.
    pub first_entry_at: Option<SystemTime>,
    /// Closed VCTs of other apps this one depends on: it touched an inode
    /// they changed, so it may only commit with or after them.
    pub deps: BTreeSet<u64>,
}

impl OpenVct {
    pub fn new(id: u64) -> OpenVct {
        OpenVct { id, ..OpenVct::default() }
    }

    /// At least the entries of this VCT once closed: every entry logged
    /// (overwritten ones included) and one per changed inode (its times).
    pub fn closed_len_bound(&self) -> usize {
        self.entries.len() + self.data_inodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.iter().all(Option::is_none)
    }

    fn note_time(&mut self, now: SystemTime) {
        self.first_entry_at.get_or_insert(now);
    }

    /// Records `len` bytes written into page `page` of `ino`. Returns true if
    /// the page is new to this VCT (the caller pins it).
    pub fn record_write(&mut self, ino: Ino, page: u64, len: u64, now: SystemTime) -> bool {
        self.note_time(now);
        self.bytes += len;
        match self.page_entries.entry((ino, page)) {
            // The inode went into `data_inodes` with the page's entry.
            Entry::Occupied(_) => {
                self.overwrite_bytes += len;
                false
            }
            Entry::Vacant(slot) => {
                slot.insert(self.entries.len());
                if self.last_data_inode != Some(ino) {
                    self.data_inodes.insert(ino);
                    self.last_data_inode = Some(ino);
                }
                self.entries.push(Some(LogEntry::Write { ino, page }));
                true
            }
        }
    }

    /// Records a truncate of `ino` to `size`. Write entries for pages the
    /// truncate cuts off are voided (their data is gone); the page holding the
    /// new end of file, if it was written, moves after the truncate so that
    /// replay keeps its surviving bytes. Returns the pages dropped from this
    /// VCT (the caller unpins them).
    pub fn record_truncate(&mut self, ino: Ino, size: u64, now: SystemTime) -> Vec<u64> {
        let boundary = size / PAGE_SIZE;
        let partial = !size.is_multiple_of(PAGE_SIZE);
        self.record_over_pages(
            ino,
            boundary..=u64::MAX,
            LogEntry::SetLen { ino, size },
            |page| partial && page == boundary,
            now,
        )
    }

    /// Records a punch-hole or zero-range `entry` that clears bytes
    /// `start..end` of `ino` (`start < end`; bytes past `size` count too,
    /// since replay clears them after writes taken at close), a file of `size` bytes, as
    /// `record_truncate` does: write entries of pages wholly inside are
    /// voided (their bytes are zeros now), those of the partly cleared pages
    /// at either end move after the entry. A voided write may be what made
    /// the file `size` bytes long, so then the size is recorded first, as a
    /// truncate to `size` (which moves the entry of the page holding the end
    /// of file after it, since later writes may still extend that page).
    pub fn record_zeroing(&mut self, ino: Ino, (start, end): (u64, u64), size: u64, entry: LogEntry, now: SystemTime) {
        let whole = start.div_ceil(PAGE_SIZE)..end / PAGE_SIZE;
        if !whole.is_empty() && !self.written_pages(ino, whole).is_empty() {
            self.record_truncate(ino, size, now);
        }
        let partly = |page: u64| page * PAGE_SIZE < start || (page + 1) * PAGE_SIZE > end;
        self.record_over_pages(ino, start / PAGE_SIZE..=(end - 1) / PAGE_SIZE, entry, partly, now);
    }

    /// Records `entry`, which changes `pages` of `ino`: their write entries
    /// are voided, and those of the pages `keeps` names are recorded again
    /// after it (replay then writes their surviving bytes after the change).
    /// Returns the voided pages not recorded again.
    fn record_over_pages(
        &mut self,
        ino: Ino,
        pages: std::ops::RangeInclusive<u64>,
        entry: LogEntry,
        keeps: impl Fn(u64) -> bool,
        now: SystemTime,
    ) -> Vec<u64> {
        self.note_time(now);
        self.data_inodes.insert(ino);
        let hit = self.written_pages(ino, pages);
        let mut dropped = Vec::new();
        let mut kept = Vec::new();
        for (page, at) in hit {
            self.entries[at] = None;
            self.page_entries.remove(&(ino, page));
            if keeps(page) {
                kept.push(page);
            } else {
                dropped.push(page);
            }
        }
        self.entries.push(Some(entry));
        for page in kept {
            self.page_entries.insert((ino, page), self.entries.len());
            self.entries.push(Some(LogEntry::Write { ino, page }));
        }
        dropped
    }

    /// The live write entries of `ino`'s pages in `pages`, as (page,
    /// position), by page: a look through the log, for the rare truncate or
    /// hole over a VCT's writes.
    fn written_pages(&self, ino: Ino, pages: impl RangeBounds<u64>) -> Vec<(u64, usize)> {
        let mut written: Vec<(u64, usize)> = (self.entries.iter().enumerate())
            .filter_map(|(at, entry)| match entry {
                Some(LogEntry::Write { ino: of, page }) if *of == ino && pages.contains(page) => Some((*page, at)),
                _ => None,
            })
            .collect();
        written.sort_unstable();
        written
    }

    /// Notes that an inode's times changed (they are logged at close).
    pub fn touch(&mut self, ino: Ino) {
        self.data_inodes.insert(ino);
    }

    pub fn record(&mut self, entry: LogEntry, now: SystemTime) {
        self.note_time(now);
        self.entries.push(Some(entry));
    }

    /// Takes the live entries out, handing each to `each` in order, and
    /// leaves an empty VCT with the next id; returns the inodes whose data
    /// the VCT changed.
    pub fn take(&mut self, each: impl FnMut(LogEntry)) -> BTreeSet<Ino> {
        // Drained, not taken: the next VCT fills the same buffer rather than
        // growing one from nothing (every doubling copies the entries so far).
        // Handed over, not collected: the caller builds its own list of them.
        self.entries.drain(..).flatten().for_each(each);
        if self.entries.capacity() > ENTRIES_KEPT {
            // A large one goes now, as it did before: shrunk in place instead,
            // it raised the 60 GiB install trace's peak RSS by about 1 MiB.
            self.entries = Vec::new();
        }
        let inodes = std::mem::take(&mut self.data_inodes);
        self.last_data_inode = None;
        self.page_entries.clear();
        self.bytes = 0;
        self.overwrite_bytes = 0;
        self.first_entry_at = None;
        self.deps.clear();
        self.id += 1;
        inodes
    }
}

/// An entry of a closed VCT: writes carry the page version taken at close
/// (`slot`: the id of the cache page it pinned), which the cache releases
/// when the VCT is done with it (`Cache::release`).
#[derive(Clone, Debug)]
pub enum ClosedEntry {
    Write { ino: Ino, page: u64, slot: u64, data: PageVersion, len: usize },
    Other(LogEntry),
}

impl ClosedEntry {
    /// The inode the entry changes (see `LogEntry::ino`).
    pub fn ino(&self) -> Ino {
        match self {
            ClosedEntry::Write { ino, .. } => *ino,
            ClosedEntry::Other(e) => e.ino(),
        }
    }
}

/// A closed, immutable VCT waiting for the checkpointer.
pub struct ClosedVct {
    pub app: AppId,
    pub id: u64,
    pub entries: Vec<ClosedEntry>,
    /// Staleness this VCT carries (bytes written into it).
    pub bytes: u64,
    pub first_entry_at: Option<SystemTime>,
    /// Other apps' closed VCTs that must commit no later than this one.
    pub deps: Vec<u64>,
    /// Idle intervals this VCT was passed over in (its scheduling queue).
    pub age: u32,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    fn writes(vct: &mut OpenVct) -> Vec<String> {
        let mut entries = Vec::new();
        vct.take(|e| {
            entries.push(match e {
                LogEntry::Write { page, .. } => format!("W{page}"),
                LogEntry::SetLen { size, .. } => format!("T{size}"),
                other => format!("{other:?}"),
            })
        });
        entries
    }

    #[test]
    fn a_page_written_twice_in_the_open_vct_has_one_entry() {
        let mut v = OpenVct::new(0);
        assert!(v.record_write(9, 0, 4096, UNIX_EPOCH));
        assert!(!v.record_write(9, 0, 100, UNIX_EPOCH));
        assert!(v.record_write(9, 1, 4096, UNIX_EPOCH));
        assert_eq!((v.bytes, v.overwrite_bytes), (8292, 100));
        assert_eq!(writes(&mut v), ["W0", "W1"]);
        assert_eq!(v.id, 1);
        assert!(v.is_empty());
    }

    #[test]
    fn every_written_inode_is_changed_once_per_vct() {
        let mut v = OpenVct::new(0);
        for (ino, page) in [(1, 0), (1, 1), (2, 0), (1, 2)] {
            v.record_write(ino, page, 4096, UNIX_EPOCH);
        }
        assert_eq!(v.take(drop), BTreeSet::from([1, 2]));
        v.record_write(1, 3, 4096, UNIX_EPOCH);
        assert_eq!(v.take(drop), BTreeSet::from([1]), "the next VCT logs the times of the file it wrote");
    }

    #[test]
    fn truncate_voids_cut_pages_and_moves_the_boundary_page_after_it() {
        let mut v = OpenVct::new(0);
        for p in 0..4 {
            v.record_write(3, p, 4096, UNIX_EPOCH);
        }
        let dropped = v.record_truncate(3, 4096 + 10, UNIX_EPOCH);
        assert_eq!(dropped, [2, 3]);
        // A later write to the boundary page lands after the truncate.
        assert!(!v.record_write(3, 1, 10, UNIX_EPOCH));
        assert_eq!(writes(&mut v), ["W0", "T4106", "W1"]);
    }

    #[test]
    fn zeroing_voids_covered_pages_and_moves_partly_cleared_ones_after_it() {
        let mut v = OpenVct::new(0);
        for p in 0..5 {
            v.record_write(3, p, 4096, UNIX_EPOCH);
        }
        v.record_write(4, 2, 4096, UNIX_EPOCH);
        let punch = LogEntry::Fallocate { ino: 3, mode: FallocMode::PunchHole, offset: 4000, len: 8300 };
        v.record_zeroing(3, (4000, 12300), 5 * 4096, punch, UNIX_EPOCH);
        // Pages 1 and 2 are wholly cleared: a later write is a new entry after the punch.
        assert!(v.record_write(3, 1, 10, UNIX_EPOCH));
        let punch =
            format!("{:?}", LogEntry::Fallocate { ino: 3, mode: FallocMode::PunchHole, offset: 4000, len: 8300 });
        // The size the voided writes made is recorded before the punch.
        assert_eq!(writes(&mut v), ["W4", "W2", "T20480", &punch, "W0", "W3", "W1"]);
    }

    /// Regression (crash seed 132006278164): the size recorded for voided
    /// writes cut off a later write that extended the end-of-file page.
    #[test]
    fn a_zeroing_keeps_the_end_of_file_page_after_the_size_it_records() {
        let mut v = OpenVct::new(0);
        v.record_write(3, 3, 4096, UNIX_EPOCH);
        v.record_write(3, 10, 54, UNIX_EPOCH);
        let punch = LogEntry::Fallocate { ino: 3, mode: FallocMode::PunchHole, offset: 12288, len: 4096 };
        v.record_zeroing(3, (12288, 16384), 41014, punch, UNIX_EPOCH);
        assert!(!v.record_write(3, 10, 455, UNIX_EPOCH), "the end-of-file page keeps its one entry");
        let punch =
            format!("{:?}", LogEntry::Fallocate { ino: 3, mode: FallocMode::PunchHole, offset: 12288, len: 4096 });
        assert_eq!(writes(&mut v), ["T41014", "W10", &punch]);
    }

    #[test]
    fn truncate_to_a_page_boundary_drops_that_page() {
        let mut v = OpenVct::new(0);
        v.record_write(3, 1, 4096, UNIX_EPOCH);
        assert_eq!(v.record_truncate(3, 4096, UNIX_EPOCH), [1]);
        assert!(v.record_write(3, 1, 1, UNIX_EPOCH), "a rewrite is a new entry");
        assert_eq!(writes(&mut v), ["T4096", "W1"]);
    }
}
