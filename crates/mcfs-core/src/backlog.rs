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
//! An apply takes the waiting transactions as a run and lets the journal go
//! while it carries them out (`Journal::take_run`): commits go on beside it,
//! and their transactions wait for the next run. One apply runs at a time
//! (`Engine::applier`). A due backlog is applied by background work (the
//! background thread, or a background app's commit); a foreground or system
//! app's commit leaves it to the background thread. So a commit somebody
//! waits for does not wait for an apply's device time, unless it must (a
//! requested checkpoint, memory pressure, or a backlog past `BACKLOG_CAP`).
//!
//! A committed transaction's page versions go back to the cache at its
//! commit (`JournaledVct`): the journal's ops hold what the apply writes.
//!
//! Invariant: `Engine::backlog` lists exactly the transactions the journal
//! holds waiting (a run's too, until it ends), in commit order; each one's
//! pages stay pinned until its apply succeeded (`State::committed`), so
//! reads see them in the cache and reclaim never drops them (a deleted
//! file's pages go at once: nothing can read them). The committed tree's
//! `before` is the backing store's tree while anything waits.

use crate::cache::Cache;
use crate::engine::Engine;
use crate::refused::OpOrigins;
use crate::state::State;
use crate::types::FsResult;
use crate::types::Ino;
use crate::vct::{AppId, ClosedEntry, ClosedVct, LogEntry};
use std::time::SystemTime;

/// How far past `apply_backlog_bytes` commits go on while the backlog waits
/// to be applied. An apply run on a slow device takes seconds, and deletes
/// make commits cheap meanwhile: dbench on emulated eMMC keeps up to 3.7
/// times the bound waiting, and a cap of 4 made its writers wait seconds
/// for the run in flight (docs/BENCHMARKS.md, "Commits beside the apply").
const BACKLOG_CAP: u64 = 8;

/// A committed transaction waiting to be applied.
pub struct Waiting {
    pub seq: u64,
    pub batch: Vec<JournaledVct>,
    /// Which app and inode each op came from (for refused ops).
    pub origins: OpOrigins,
    pub committed_at: SystemTime,
    /// Bytes the journal's waiting transactions took once it was committed.
    pub log_bytes: u64,
    /// Appended data this transaction wrote in place (`in_place`): not in
    /// the journal, but its pages stay pinned until the apply all the same.
    pub placed_bytes: u64,
}

/// A VCT of a waiting transaction: what the apply's bookkeeping needs. Its
/// page versions are given back at the commit, since the journal's ops hold
/// the data; the pages stay pinned in the cache for reads until the apply.
pub struct JournaledVct {
    pub app: AppId,
    pub id: u64,
    pub bytes: u64,
    pub entries: Vec<JournaledEntry>,
}

pub enum JournaledEntry {
    /// A page the VCT wrote (`slot`: the id of the cache page it pinned).
    Page {
        ino: Ino,
        page: u64,
        slot: u64,
        len: usize,
    },
    Other(LogEntry),
}

impl JournaledVct {
    /// `vct`, committed: its page versions go back to `cache`.
    pub fn of(vct: ClosedVct, cache: &mut Cache) -> JournaledVct {
        let entries = vct
            .entries
            .into_iter()
            .map(|entry| match entry {
                ClosedEntry::Write { ino, page, slot, data, len } => {
                    cache.release(data);
                    JournaledEntry::Page { ino, page, slot, len }
                }
                ClosedEntry::Other(e) => JournaledEntry::Other(e),
            })
            .collect();
        JournaledVct { app: vct.app, id: vct.id, bytes: vct.bytes, entries }
    }
}

impl Engine {
    /// The backlog reached one of its bounds: bytes, age, or the pool.
    pub(crate) fn backlog_due(&self) -> bool {
        let st = self.state.lock();
        self.backlog_due_at(&st).is_some_and(|due| due <= self.clock.now())
    }

    /// When the backlog must be applied (now, if over its byte bound or
    /// filling the pool of segments); `None` if nothing waits.
    pub(crate) fn backlog_due_at(&self, st: &State) -> Option<SystemTime> {
        let backlog = self.backlog.lock();
        let (oldest, newest) = (backlog.first()?, backlog.last()?);
        // Past the pool of ready segments a commit would create a new one,
        // and pay for growing the journal: apply first.
        let pool_full = backlog.len() >= crate::journal::POOL_SEGMENTS;
        let placed: u64 = backlog.iter().map(|w| w.placed_bytes).sum();
        if newest.log_bytes + placed >= st.config.apply_backlog_bytes || pool_full {
            return Some(oldest.committed_at);
        }
        Some(oldest.committed_at + st.periods.apply_backlog)
    }

    /// The waiting transactions' journal bytes, which their ops hold in
    /// memory too, passed `BACKLOG_CAP` times `apply_backlog_bytes`: commits
    /// wait for the apply (the background thread's cannot keep up).
    pub(crate) fn backlog_over_cap(&self) -> bool {
        let cap = BACKLOG_CAP * self.state.lock().config.apply_backlog_bytes;
        self.backlog.lock().last().is_some_and(|newest| newest.log_bytes > cap)
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
        if let Err(e) = self.dispatch.background_work(|| self.apply_backlog()) {
            tracing::warn!("applying the journal failed: {e}; the transactions stay committed and are retried");
        }
    }

    /// Applies every transaction waiting when it starts, after the apply
    /// running now, if any (never call it holding the journal: that apply
    /// needs it to end). On failure they stay waiting (the error is counted
    /// and retried with back-off).
    pub(crate) fn apply_backlog(&self) -> FsResult<()> {
        // Taken as the journal is: FG work goes first, and raises the BG applier it waits for.
        let applier = self.dispatch.take_journal(|| self.applier.lock());
        self.apply_run(applier)
    }

    /// Applies the backlog after the commit that holds `journal`, which it
    /// lets go: at once if no apply runs, else after that one. The applier
    /// is taken first, so a writer waiting for the commit to free memory
    /// (`waited_for_journal`) waits for this apply too.
    pub(crate) fn apply_after<J>(&self, journal: J) -> FsResult<()> {
        let applier = self.applier.try_lock();
        drop(journal);
        match applier {
            Some(applier) => self.apply_run(applier),
            None => self.apply_backlog(),
        }
    }

    /// Takes the waiting transactions as a run, applies them in place with
    /// the journal free for commits, then marks their VCTs committed; the
    /// caller holds `applier` (`Engine::applier`) and not the journal.
    pub(crate) fn apply_run<G>(&self, applier: G) -> FsResult<()> {
        let mut run = {
            let mut journal = self.journal.lock();
            if journal.waiting() == 0 {
                return self.delete_dead_orphans();
            }
            let run = journal.take_run().map_err(|e| self.failed("applying the journal", &e))?;
            self.tree.write().start_run();
            run
        };
        let applied = run.apply(&mut || self.dispatch.checkpoint_segment_boundary());
        let txns = run.txns();
        let mut journal = self.journal.lock();
        journal.end_run(run);
        // Even after a failure (see `Committed::end_run`).
        self.tree.write().end_run();
        let report = match applied {
            Ok(report) => report,
            Err(e) => return Err(self.failed("applying the journal", &e)),
        };
        let waiting: Vec<Waiting> = {
            let mut backlog = self.backlog.lock();
            let run: Vec<Waiting> = backlog.drain(..txns).collect();
            // Committed during the run, the rest counted its bytes as waiting too.
            let run_bytes = run.last().map_or(0, |w| w.log_bytes);
            backlog.iter_mut().for_each(|w| w.log_bytes -= run_bytes);
            run
        };
        let flushed = report.data_bytes + report.journal_bytes;
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
        // Still holding the journal: no commit may add a transaction the
        // orphans it deletes could belong to.
        let deleted = self.delete_dead_orphans();
        drop(journal);
        drop(applier);
        deleted
    }
}

impl Engine {
    /// The backlog's invariants: it lists the journal's waiting
    /// transactions, in commit order, with the journal's byte count; every
    /// page a waiting transaction wrote is still pinned in the cache (or
    /// replaced there by a newer version, or its inode forgotten: nothing
    /// can read it), so neither reads nor reclaim can lose it; the apply
    /// writes the data the journal's ops hold.
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
                let JournaledEntry::Page { ino, page, slot, .. } = entry else { continue };
                if st.inodes.contains_key(ino) && st.cache.is_unpinned(*ino, *page, *slot) {
                    return Err(format!("page {ino}:{page} of waiting transaction {} is not pinned", w.seq));
                }
            }
        }
        Ok(())
    }
}
