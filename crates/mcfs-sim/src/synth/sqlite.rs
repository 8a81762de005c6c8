//! A SQLite database as an app drives it in rollback-journal mode with `synchronous=FULL` (Android's
//! default in the MobiFS era): every write transaction journals the original pages, flushes the journal
//! twice, writes the database pages in place, flushes the database and then retires the journal.
//!
//! Invariant: the call sequence of each transaction is the one SQLite issues (MobiFS §2 describes it), so
//! a replay exercises the write-then-fsync-then-unlink pattern a consistency policy must keep in order.
//! Pages are 4 KiB; page 1 (offset 0) changes in every transaction (SQLite's file change counter).

use std::ops::RangeInclusive;

use super::timeline::{join, Timeline};
use crate::trace::{EventKind, PathBytes};

pub(crate) const PAGE_BYTES: u64 = 4096;
/// The journal header SQLite writes first (one disk sector).
const JOURNAL_HEADER_BYTES: u64 = 512;
/// The header update that records how many pages the journal holds (magic + count).
const JOURNAL_COUNT_BYTES: u64 = 12;
/// The bytes zeroed to retire a persistent journal.
const JOURNAL_ZERO_BYTES: u64 = 28;
/// One journal record: page number, page, checksum.
const JOURNAL_RECORD_BYTES: u64 = 4 + PAGE_BYTES + 4;

/// How a transaction retires its journal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JournalMode {
    /// `journal_mode=DELETE`: a fresh `-journal` file per transaction, unlinked at commit.
    Delete,
    /// `journal_mode=PERSIST`: one `-journal` file kept open; its header is zeroed (and fdatasync'ed) at
    /// commit, so every transaction rewrites the same journal bytes.
    Persist,
}

#[derive(Debug, Clone)]
pub(crate) struct DbParams {
    /// File name under `databases/`.
    pub file: &'static str,
    pub journal: JournalMode,
    /// Pages written when the database is created at launch.
    pub initial_pages: u64,
    /// Pages 2..=hot_pages+1 are the hot set (indexes, counters, the rows the app keeps updating).
    pub hot_pages: u64,
    /// Chance that a changed page is a hot one; the others are appended (new rows).
    pub hot_per_mille: u32,
    /// Chance that a burst of app I/O touches the database at all.
    pub burst_per_mille: u32,
    pub txns_per_burst: RangeInclusive<u64>,
    /// Pages changed per transaction, besides page 1.
    pub pages_per_txn: RangeInclusive<u64>,
    /// Pages read (queried) before each transaction.
    pub reads_per_txn: RangeInclusive<u64>,
    /// The app's own work between two transactions, in microseconds.
    pub think_us: RangeInclusive<u64>,
}

pub(crate) struct Database {
    params: &'static DbParams,
    path: PathBytes,
    journal: PathBytes,
    /// Current size in pages.
    pages: u64,
    /// Whether the persistent journal has been created (PERSIST mode).
    journal_open: bool,
}

impl Database {
    pub(crate) fn new(params: &'static DbParams, databases_dir: &[u8]) -> Database {
        let path = join(databases_dir, params.file);
        let journal = [&path[..], b"-journal"].concat().into();
        Database { params, path, journal, pages: 0, journal_open: false }
    }

    /// Creates the database and writes its first pages (the schema and the rows an install brings).
    pub(crate) fn create(&mut self, tl: &mut Timeline) {
        tl.call(EventKind::Create { path: self.path.clone() });
        self.pages = self.params.initial_pages.max(1);
        for page in 0..self.pages {
            tl.write(&self.path, page * PAGE_BYTES, PAGE_BYTES);
        }
        tl.call(EventKind::Fsync { path: self.path.clone() });
    }

    /// The database work of one burst: some transactions, or none.
    pub(crate) fn burst(&mut self, tl: &mut Timeline) {
        if !tl.rng.chance(self.params.burst_per_mille) {
            return;
        }
        let txns = tl.rng.uniform(&self.params.txns_per_burst);
        for _ in 0..txns {
            self.transaction(tl);
            tl.think(&self.params.think_us);
        }
    }

    fn transaction(&mut self, tl: &mut Timeline) {
        let existing = self.pages;
        for _ in 0..tl.rng.uniform(&self.params.reads_per_txn) {
            let page = tl.rng.below(existing);
            tl.read(&self.path, page * PAGE_BYTES, PAGE_BYTES);
        }
        let changed = self.pick_pages(tl);
        // Only pages that existed before the transaction have an original to journal.
        let journaled: Vec<u64> = changed.iter().copied().filter(|&p| p < existing).collect();
        match self.params.journal {
            JournalMode::Delete => tl.call(EventKind::Create { path: self.journal.clone() }),
            JournalMode::Persist if !self.journal_open => {
                tl.call(EventKind::Create { path: self.journal.clone() });
                self.journal_open = true;
            }
            JournalMode::Persist => {}
        }
        tl.write(&self.journal, 0, JOURNAL_HEADER_BYTES);
        for (i, _) in journaled.iter().enumerate() {
            tl.write(&self.journal, JOURNAL_HEADER_BYTES + i as u64 * JOURNAL_RECORD_BYTES, JOURNAL_RECORD_BYTES);
        }
        tl.call(EventKind::Fsync { path: self.journal.clone() });
        tl.write(&self.journal, 0, JOURNAL_COUNT_BYTES);
        tl.call(EventKind::Fsync { path: self.journal.clone() });
        for &page in &changed {
            tl.write(&self.path, page * PAGE_BYTES, PAGE_BYTES);
        }
        tl.call(EventKind::Fsync { path: self.path.clone() });
        match self.params.journal {
            JournalMode::Delete => {
                tl.call(EventKind::Close { path: self.journal.clone() });
                tl.call(EventKind::Unlink { path: self.journal.clone() });
            }
            JournalMode::Persist => {
                tl.write(&self.journal, 0, JOURNAL_ZERO_BYTES);
                tl.call(EventKind::Fdatasync { path: self.journal.clone() });
            }
        }
    }

    /// Page 1, hot pages and appended pages, in file order, each once.
    fn pick_pages(&mut self, tl: &mut Timeline) -> Vec<u64> {
        let mut pages = vec![0];
        let hot_end = (1 + self.params.hot_pages).min(self.pages);
        for _ in 0..tl.rng.uniform(&self.params.pages_per_txn) {
            if hot_end > 1 && tl.rng.chance(self.params.hot_per_mille) {
                pages.push(1 + tl.rng.below(hot_end - 1));
            } else {
                pages.push(self.pages);
                self.pages += 1;
            }
        }
        pages.sort_unstable();
        pages.dedup();
        pages
    }
}
