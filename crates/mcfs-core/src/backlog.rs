//! The applier: committed transactions wait in the journal (their commit
//! record durable, their pages pinned in the cache, their VCTs not marked
//! committed), and are carried out in place together, in commit order and
//! coalesced (`Journal::apply`), from the ops the engine holds. They are
//! applied when the backlog reaches `apply_backlog_bytes` of journal (and
//! of data its transactions wrote in place, whose pages they pin too) or
//! `journal::POOL_SEGMENTS` transactions (one segment each), or its
//! oldest has waited `apply_backlog_seconds`, at a requested checkpoint and
//! at unmount, on memory pressure, and when backing space runs short.
//!
//! Invariant: `Engine::backlog` lists exactly the transactions the journal
//! holds waiting, in commit order; each one's pages stay pinned until its
//! apply succeeded (`State::committed`), so reads see them in the cache and
//! reclaim never drops them. The committed tree's `before` is the backing
//! store's tree while anything waits.

use crate::engine::Engine;
use crate::journal::Journal;
use crate::refused::OpOrigins;
use crate::state::State;
use crate::types::FsResult;
use crate::vct::{ClosedEntry, ClosedVct};
use std::time::SystemTime;

/// A committed transaction waiting to be applied.
pub struct Waiting {
    pub seq: u64,
    pub batch: Vec<ClosedVct>,
    /// Which app and inode each op came from (for refused ops).
    pub origins: OpOrigins,
    pub committed_at: SystemTime,
    /// Bytes the journal's waiting transactions took once it was committed.
    pub log_bytes: u64,
    /// Appended data this transaction wrote in place (`in_place`): not in
    /// the journal, but its pages stay pinned until the apply all the same.
    pub placed_bytes: u64,
}

impl Engine {
    /// The backlog reached one of its bounds: bytes, age, or the pool.
    pub(crate) fn backlog_due(&self) -> bool {
        let st = self.state.lock();
        self.backlog_due_at(&st).is_some_and(|due| due <= self.clock.now())
    }

    /// The backlog reached its bound in bytes or in age: the commit that
    /// finds it so applies it itself (a full pool is the background
    /// thread's to apply, see `commit_holding_journal`).
    pub(crate) fn backlog_due_for_committer(&self) -> bool {
        let st = self.state.lock();
        self.due_at(&st, false).is_some_and(|due| due <= self.clock.now())
    }

    /// When the backlog must be applied (now, if over its byte bound or
    /// filling the pool); `None` if nothing waits.
    pub(crate) fn backlog_due_at(&self, st: &State) -> Option<SystemTime> {
        self.due_at(st, true)
    }

    fn due_at(&self, st: &State, count_pool: bool) -> Option<SystemTime> {
        let backlog = self.backlog.lock();
        let (oldest, newest) = (backlog.first()?, backlog.last()?);
        // Past the pool of ready segments a commit would create a new one,
        // and pay for growing the journal: apply first.
        let pool_full = count_pool && backlog.len() >= crate::journal::POOL_SEGMENTS;
        let placed: u64 = backlog.iter().map(|w| w.placed_bytes).sum();
        if newest.log_bytes + placed >= st.config.apply_backlog_bytes || pool_full {
            return Some(oldest.committed_at);
        }
        Some(oldest.committed_at + crate::config::seconds(st.config.apply_backlog_seconds))
    }

    /// Applies the backlog from the background thread if it is due, or if
    /// dirty data is past the background ratio (the waiting pages are only
    /// reclaimable once applied); after a failure, not before the retry time.
    pub(crate) fn apply_if_due(&self) {
        let retry_at = self.counters.lock().retry_at;
        if retry_at.is_some_and(|t| t > self.clock.now()) || self.backlog.lock().is_empty() {
            return;
        }
        let pressure = crate::checkpoint::over_background_ratio(&self.state.lock());
        if !pressure && !self.backlog_due() {
            return;
        }
        let applied = self.dispatch.background_work(|| {
            let mut journal = self.dispatch.take_journal(|| self.journal.lock());
            self.apply_backlog(&mut journal)
        });
        if let Err(e) = applied {
            tracing::warn!("applying the journal failed: {e}; the transactions stay committed and are retried");
        }
    }

    /// Applies every waiting transaction in place (the journal lock held),
    /// then marks their VCTs committed. On failure they stay waiting (the
    /// error is counted and retried with back-off).
    pub(crate) fn apply_backlog(&self, journal: &mut Journal) -> FsResult<()> {
        if journal.waiting() == 0 {
            return Ok(());
        }
        let progress_before = journal.bytes_written();
        self.tree.write().applying = true;
        let applied = journal.apply(&mut || self.dispatch.checkpoint_segment_boundary());
        let mut committed = self.tree.write();
        committed.applying = false;
        // Even after a failure: the apply may have moved names, and the
        // transactions are durable (recovery or the retry finishes them).
        if let Some(after) = committed.after.take() {
            committed.before = after;
        }
        drop(committed);
        let report = match applied {
            Ok(report) => report,
            Err(e) => return Err(self.failed("applying the journal", &e)),
        };
        let waiting = std::mem::take(&mut *self.backlog.lock());
        let flushed = report.data_bytes + (journal.bytes_written() - progress_before);
        let mut c = self.counters.lock();
        c.bytes_flushed += flushed;
        c.coalesced_bytes += report.coalesced_bytes;
        c.elided_ops += report.elided;
        drop(c);
        let total: u64 = waiting.iter().map(|w| w.batch.iter().map(|v| v.bytes).sum::<u64>()).sum::<u64>().max(1);
        for w in waiting {
            let unapplied: Vec<_> = report.unapplied.iter().filter(|u| u.seq == w.seq).cloned().collect();
            self.note_unapplied(w.seq, w.origins, &unapplied);
            let bytes: u64 = w.batch.iter().map(|v| v.bytes).sum();
            // Its part of the run's in-place writes (its journal copy was counted at its commit).
            let share = u128::from(flushed) * u128::from(bytes) / u128::from(total);
            self.state.lock().committed(w.batch, share as u64, &self.tree);
        }
        self.succeeded();
        self.delete_dead_orphans()
    }
}

impl Engine {
    /// The backlog's invariants: it lists the journal's waiting
    /// transactions, in commit order, with the journal's byte count; every
    /// page version a waiting transaction writes is still pinned in the
    /// cache (or replaced there by a newer version: the transaction holds its
    /// own copy), so neither reads nor reclaim can lose it.
    pub(crate) fn check_backlog(&self) -> Result<(), String> {
        let journal = self.journal.lock();
        let backlog = self.backlog.lock();
        if backlog.len() != journal.waiting() {
            return Err(format!(
                "{} transactions wait in the journal, the backlog lists {}",
                journal.waiting(),
                backlog.len()
            ));
        }
        if backlog.windows(2).any(|w| w[0].seq >= w[1].seq) {
            return Err("the backlog is not in commit order".into());
        }
        if let Some(last) = backlog.last().filter(|w| w.log_bytes != journal.waiting_bytes()) {
            return Err(format!(
                "the backlog counts {} journal bytes, the journal {}",
                last.log_bytes,
                journal.waiting_bytes()
            ));
        }
        let st = self.state.lock();
        for w in backlog.iter() {
            for entry in w.batch.iter().flat_map(|v| &v.entries) {
                let ClosedEntry::Write { ino, page, slot, .. } = entry else { continue };
                if st.cache.is_unpinned(*ino, *page, *slot) {
                    return Err(format!("page {ino}:{page} of waiting transaction {} is not pinned", w.seq));
                }
            }
        }
        Ok(())
    }
}
