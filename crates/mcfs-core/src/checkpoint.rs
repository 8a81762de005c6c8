//! The checkpointer: commits closed VCTs to the backing store, oldest first,
//! through the journal (BEGIN / APPEND / END / WAIT_SYNC: a commit is done
//! once its commit record is durable), and the background policy loop
//! (`tick`) that decides when. The committed transactions wait in the
//! journal until the applier (`backlog`) carries them out in place.
//!
//! Locking: the journal lock serialises checkpoints; an apply holds it only
//! to take its run and to give it back (`backlog`), so a commit does not
//! wait for one. The state lock is held only to take the batch and to
//! finish it, so apps keep working while the journal is written.

use crate::app_status::IoClass;
use crate::backlog::{JournaledVct, Waiting};
use crate::batch_selection::{select, Selection};
use crate::checkpoint_log::{CheckpointLog, Done};
use crate::compile::{born_and_gone, Compiler};
use crate::dispatch::Step;
use crate::engine::Engine;
use crate::in_place::InPlace;
use crate::journal::Journal;
use crate::policy::prediction_score::PredictionScore;
use crate::policy::Limits;
use crate::refused::OpOrigins;
use crate::rename_chains::RenameChains;
use crate::state::{DeadOrphan, State};
use crate::stats::{AppStats, Stats};
use crate::types::*;
use crate::vct::{AppId, ClosedEntry, ClosedVct, LogEntry};
use crate::write_run::WriteRun;
use parking_lot::MutexGuard;
use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime};

/// Why a checkpoint runs; says which open VCTs it closes first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// `mcfs ctl checkpoint` and shutdown: every open VCT.
    Everything,
    /// An fsync in sync mode, or a writer at its staleness bound: that
    /// app's open VCT.
    App(AppId),
    /// A writer at its staleness bound whose open VCT leaves room for the
    /// write: no VCT (the app's closed ones commit).
    Closed(AppId),
    /// Dirty data passed the high watermark, or reclaim found only dirty
    /// pages: every open VCT.
    Memory,
    /// Reclaim needs background apps' dirty pages before the foreground
    /// app's clean ones (FastTrack PR): every open VCT but the one of the app
    /// reclaim spares. The commit still takes every closed VCT, the spared
    /// app's too, so a VCT's dependencies (all closed: touching what another
    /// app's open VCT changed closes it) are never left behind.
    Background,
    /// The policy closed VCTs already.
    Policy,
}

impl Trigger {
    /// Whether somebody waits for this commit, so that it waits for the rest
    /// of a split `write(2)` rather than leave its VCT for later.
    fn waits_for_split_writes(self) -> bool {
        !matches!(self, Trigger::Policy | Trigger::Background)
    }

    /// Whether the checkpoint makes room in the cache (memory pressure, or
    /// reclaim): what a commit or apply in progress does as well.
    pub(crate) fn makes_room(self) -> bool {
        matches!(self, Trigger::Memory | Trigger::Background)
    }

    /// Whether the committed transactions are applied in place right away:
    /// a checkpoint asked for, and memory pressure (only applied pages can
    /// be reclaimed).
    fn applies_at_once(self) -> bool {
        matches!(self, Trigger::Everything | Trigger::Memory | Trigger::Background)
    }

    /// Why the checkpoint ran, for its log line.
    fn words(self, app_name: &dyn Fn(AppId) -> String) -> String {
        match self {
            Trigger::Everything => "requested".to_string(),
            Trigger::App(app) | Trigger::Closed(app) => format!("for {}", app_name(app)),
            Trigger::Memory => "memory pressure".to_string(),
            Trigger::Background => "reclaim".to_string(),
            Trigger::Policy => "policy".to_string(),
        }
    }
}

/// How often a commit waiting for the rest of a split write looks at the clock.
const SPLIT_WRITE_RECHECK: Duration = Duration::from_millis(5);

#[derive(Default)]
pub struct CheckpointCounters {
    pub checkpoints: u64,
    pub last_duration: Duration,
    pub bytes_flushed: u64,
    pub journal_bytes: u64,
    pub failures: u64,
    /// File data the applier left out: later waiting transactions rewrote it.
    pub coalesced_bytes: u64,
    /// Ops of files born and gone within an applied run, not issued.
    pub elided_ops: u64,
    /// Appended file data commits wrote in place instead of into the journal.
    pub placed_bytes: u64,
    pub last_error: Option<String>,
    /// After a failure, background retries wait until then (backing off).
    pub retry_at: Option<SystemTime>,
    /// The INFO lines about checkpoints (at most one a minute).
    pub log: CheckpointLog,
}

impl Engine {
    pub(crate) fn run_checkpoint(&self, trigger: Trigger) -> FsResult<()> {
        self.commit(trigger, &Selection::All)
    }

    /// A sync-mode commit of `app`'s data: its VCTs and what they depend on,
    /// not other apps' independent data. After a failed checkpoint the queue
    /// may lack dependencies on the batch that went back: then everything.
    pub(crate) fn commit_app(&self, app: AppId) -> FsResult<()> {
        self.commit_for(Trigger::App(app), app)
    }

    /// The same for a writer at its staleness bound, with `trigger` saying
    /// whether its open VCT closes first (`App`) or not (`Closed`).
    pub(crate) fn commit_for(&self, trigger: Trigger, app: AppId) -> FsResult<()> {
        let selection =
            if self.counters.lock().retry_at.is_some() { Selection::All } else { Selection::AppAndNeeds(app) };
        self.commit(trigger, &selection)
    }

    /// Closes the VCTs `trigger` names, then commits the closed VCTs
    /// `selection` picks (oldest first) in one journal transaction. A BG
    /// commit that gives way to an FG one (`Dispatcher::commit_step`) starts
    /// over once the FG commit has the journal.
    fn commit(&self, trigger: Trigger, selection: &Selection) -> FsResult<()> {
        let (mut trigger, mut rest) = (trigger, None);
        let mut gave_way_at = None;
        loop {
            let selection = rest.as_ref().unwrap_or(selection);
            match self.commit_holding_journal(trigger, selection, gave_way_at) {
                Ok(Commit::Done) => return Ok(()),
                Ok(Commit::GaveWay) => gave_way_at = gave_way_at.or(Some(self.clock.now())),
                Ok(Commit::More(ids)) => {
                    // The VCTs are closed already; the rest goes as a commit of its own.
                    (trigger, rest, gave_way_at) = (Trigger::Policy, Some(Selection::Only(ids)), None);
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn commit_holding_journal(
        &self,
        trigger: Trigger,
        selection: &Selection,
        gave_way_at: Option<SystemTime>,
    ) -> FsResult<Commit> {
        let asked = self.clock.now();
        let mut journal = self.dispatch.take_journal(|| self.journal.lock());
        let started = self.clock.now();
        let (batch, live, skip, rest, append_in_place_bytes) = {
            let mut st = self.state.lock();
            match trigger {
                Trigger::Everything | Trigger::Memory => st.close_all(),
                Trigger::App(app) => st.close_vct(app),
                Trigger::Background => st.close_all_but_spared(),
                Trigger::Closed(_) | Trigger::Policy => {}
            }
            let mut chosen: HashSet<u64> = match selection {
                Selection::All => st.closed.iter().map(|v| v.id).collect(),
                Selection::Only(ids) => ids.clone(),
                Selection::AppAndNeeds(app) => crate::batch_selection::app_and_needs(&st, *app),
            };
            self.settle_split_writes(&mut st, trigger.waits_for_split_writes(), &mut chosen);
            let batch = st.take_closed(|v| chosen.contains(&v.id));
            if batch.is_empty() {
                drop(st);
                if trigger.applies_at_once() {
                    return self.apply_after(journal).map(|()| Commit::Done);
                }
                return self.delete_dead_orphans().map(|()| Commit::Done);
            }
            let (batch, mut rest) = split_background_batch(&mut st, batch);
            let batch = split_to_fit(&mut st, &*self.backend, batch, &mut rest, self.clock.now());
            let referenced = |i: Ino| st.inodes.get(&i).is_some_and(|n| !n.unreferenced());
            // Files still in use keep their data as orphans; a replaced or
            // removed directory is empty, so nothing of it needs keeping.
            let keeps_data = |i: Ino| referenced(i) && st.inodes.get(&i).is_some_and(|n| !n.is_dir());
            let live: InoSet = batch_inodes(&batch).filter(|i| keeps_data(*i)).collect();
            let skip = born_and_gone(batch.iter().flat_map(|v| v.entries.iter()), &referenced);
            (batch, live, skip, rest, st.config.append_in_place_bytes)
        };
        let journal_before = journal.bytes_written();
        let mut tree = self.tree.write().begin_compile();
        let seq = self.counters.lock().checkpoints + 1;
        let still_live = |ino: Ino| live.contains(&ino);
        let mut compiler = Compiler::new(&mut tree, &still_live, self.preserve_owner, &skip);
        let step = || self.dispatch.commit_step(gave_way_at);
        let mut origins = OpOrigins::default();
        // Not beside a running apply: it changes the files whose sizes an
        // append in place records, and cutting one back would cut its bytes.
        let in_place_off = self.in_place_off.load(Ordering::Relaxed) || journal.run_out();
        let min_bytes = if in_place_off { 0 } else { append_in_place_bytes };
        let mut in_place = InPlace::new(&*self.backend, seq, min_bytes, journal.waiting_ops());
        let written = write_transaction(&mut journal, seq, &batch, &mut compiler, &step, &mut origins, &mut in_place);
        if !matches!(written, Ok(Step::GoOn)) {
            // The transaction is not durable: the backing store has none of
            // it once the appends written in place are cut back (after the
            // abort, whose truncation of the segment their sync makes durable).
            let undone = in_place.undo(journal.abort());
            self.tree.write().abandon_compile();
            self.state.lock().requeue_closed(batch);
            let wasted = journal.bytes_written() - journal_before + in_place.record_bytes();
            let mut c = self.counters.lock();
            (c.journal_bytes, c.bytes_flushed) =
                (c.journal_bytes + wasted, c.bytes_flushed + wasted + in_place.data_bytes);
            drop(c);
            if let Err(e) = undone {
                // Its records stay for recovery; new ones must not replace them.
                self.in_place_off.store(true, Ordering::Relaxed);
                return Err(self.failed("cutting back files appended in place", &e));
            }
            return match written {
                Err(e) => Err(self.failed("writing the journal", &e)),
                Ok(_) => Ok(Commit::GaveWay),
            };
        }
        let (placed_bytes, record_bytes) = (in_place.data_bytes, in_place.record_bytes());
        if let Err(e) = in_place.committed() {
            // Committed all the same; the records stay, for recovery to read.
            tracing::error!(
                "cannot clear {}: {e}; appends go through the journal from now on",
                crate::in_place::appends_path().display()
            );
            self.in_place_off.store(true, Ordering::Relaxed);
        }
        let written_at = self.clock.now();
        // The backing store keeps the tree before the transaction until the applier runs.
        self.tree.write().install(tree);
        let journal_bytes = journal.bytes_written() - journal_before + record_bytes;
        let mut c = self.counters.lock();
        c.journal_bytes += journal_bytes;
        c.bytes_flushed += journal_bytes + placed_bytes;
        c.placed_bytes += placed_bytes;
        c.checkpoints += 1;
        c.last_duration = self.clock.now().duration_since(started).unwrap_or_default();
        let took = c.last_duration;
        drop(c);
        self.log_checkpoint(seq, trigger, &batch, journal_bytes, took);
        let ms = |from: SystemTime, to: SystemTime| to.duration_since(from).unwrap_or_default().as_millis();
        tracing::debug!(
            seq,
            ?trigger,
            vcts = ?batch.iter().map(|v| (v.app, v.bytes)).collect::<Vec<_>>(),
            class = ?crate::dispatch::current().map(|w| w.class),
            journal_bytes,
            waited_ms = ms(asked, started),
            journal_ms = ms(started, written_at),
            "checkpoint"
        );
        // The journal copy takes backing space now: ask the store again.
        let mut st = self.state.lock();
        st.space.changed();
        st.journaled(&batch, journal_bytes, written_at);
        let batch: Vec<JournaledVct> = batch.into_iter().map(|v| JournaledVct::of(v, &mut st.cache)).collect();
        drop(st);
        let log_bytes = journal.waiting_bytes();
        self.backlog.lock().push(Waiting { seq, batch, origins, committed_at: written_at, log_bytes, placed_bytes });
        self.succeeded();
        let done = if rest.is_empty() { Commit::Done } else { Commit::More(rest) };
        if trigger.applies_at_once() {
            return self.apply_after(journal).map(|()| done);
        }
        // Background work (the engine's thread, a background app) applies a
        // due backlog itself; a foreground or system app's commit leaves it
        // to the background thread rather than wait for its device time,
        // unless the backlog is past its cap.
        let (over_cap, due) = (self.backlog_over_cap(), self.backlog_due());
        let applies_here = over_cap || (crate::dispatch::is_background() && due);
        let applier = applies_here.then(|| self.applier.try_lock()).flatten();
        drop(journal);
        match applier {
            // The commit is durable whatever the apply does: a failure is
            // logged, counted and retried (`tick`), not this caller's error.
            Some(applier) => {
                let _ = self.apply_run(applier);
            }
            // Over the cap with an apply running: its end frees what it
            // applied, and the background thread goes on with the rest.
            None if over_cap => self.dispatch.wait_for_journal(|| drop(self.applier.lock())),
            None if due => self.wake_background(),
            None => {}
        }
        Ok(done)
    }

    /// Keeps a batch from splitting a `write(2)` whose rest may still come
    /// (`split_writes`): a commit somebody waits for (`wait`) waits for the
    /// rest, at most `State::split_write_wait`, and then takes the VCTs as
    /// they are; a background commit leaves those VCTs, and what must commit
    /// after them, for later.
    fn settle_split_writes(&self, st: &mut MutexGuard<State>, wait: bool, chosen: &mut HashSet<u64>) {
        loop {
            let withheld = st.withheld(self.clock.now());
            if !chosen.iter().any(|id| withheld.contains(id)) {
                break;
            }
            if !wait {
                chosen.retain(|id| !withheld.contains(id));
                return;
            }
            // The clock may be one that moves without notifying anybody: look again now and then.
            self.split_settled.wait_for(st, SPLIT_WRITE_RECHECK);
        }
        st.split_writes.settle(Some(&|vct| chosen.contains(&vct)));
    }

    /// Logs and counts the ops of transaction `seq` the backing store could
    /// not hold, and owes their apps the error (see `refused`).
    pub(crate) fn note_unapplied(&self, seq: u64, origins: OpOrigins, unapplied: &[crate::journal::UnappliedOp]) {
        if unapplied.is_empty() {
            return; // nothing to log or owe (`Refused::applied` would drop `origins`)
        }
        let app_name = self.app_names();
        let mut refused = self.refused.lock();
        refused.origins = origins;
        refused.applied(seq, unapplied, &app_name);
    }

    /// Names apps as the config and `mcfs stat` do.
    fn app_names(&self) -> impl Fn(AppId) -> String {
        let names: Vec<String> = self.state.lock().apps.list.iter().map(|a| a.name.clone()).collect();
        move |app: AppId| names.get(app).cloned().unwrap_or_else(|| format!("app {app}"))
    }

    /// The INFO line of a committed checkpoint (`checkpoint_log`).
    fn log_checkpoint(&self, seq: u64, trigger: Trigger, batch: &[ClosedVct], bytes: u64, took: Duration) {
        let now = Instant::now();
        if self.counters.lock().log.hold(bytes, took, now) {
            return;
        }
        let app_name = self.app_names();
        let mut apps: Vec<(String, u64)> = Vec::new();
        for vct in batch {
            let name = app_name(vct.app);
            match apps.iter_mut().find(|(n, _)| *n == name) {
                Some((_, total)) => *total += vct.bytes,
                None => apps.push((name, vct.bytes)),
            }
        }
        let done = Done { seq, trigger: trigger.words(&app_name), apps, bytes, took };
        let line = self.counters.lock().log.record(&done, now);
        if let Some(line) = line {
            tracing::info!("{line}");
        }
    }

    /// The INFO line about checkpoints not told yet, if one is due (`force`: now).
    fn log_held_checkpoints(&self, force: bool) {
        let line = self.counters.lock().log.flush(Instant::now(), force);
        if let Some(line) = line {
            tracing::info!("{line}");
        }
    }

    pub(crate) fn succeeded(&self) {
        let mut c = self.counters.lock();
        (c.last_error, c.retry_at) = (None, None);
    }

    pub(crate) fn failed(&self, what: &str, e: &std::io::Error) -> Errno {
        let msg = format!("checkpoint failed {what} in the backing store: {e}");
        tracing::error!("{msg}; the data stays in memory and is retried");
        let mut c = self.counters.lock();
        c.failures += 1;
        c.last_error = Some(msg);
        let backoff = Duration::from_secs(1 << c.failures.min(5));
        c.retry_at = Some(self.clock.now() + backoff);
        Errno::from_io(e)
    }

    /// Deletes orphans (unlinked files kept while open) nobody uses any more,
    /// once no transaction waits (an orphan may be in the tree they lead to
    /// and not yet in the backing store) and the VCT of each one's last
    /// change committed (its ops may still name the orphan, `DeadOrphan`).
    pub(crate) fn delete_dead_orphans(&self) -> FsResult<()> {
        if !self.backlog.lock().is_empty() {
            return Ok(());
        }
        let dead: Vec<Ino> = {
            let mut st = self.state.lock();
            let (pending, dead) = std::mem::take(&mut st.dead_orphans)
                .into_iter()
                .partition(|orphan| st.change_pending(orphan.last_change));
            st.dead_orphans = pending;
            dead.into_iter().map(|orphan: DeadOrphan| orphan.ino).collect()
        };
        let mut committed = self.tree.write();
        let tree = &mut committed.before;
        for ino in dead {
            if let Some(path) = tree.path(ino).filter(|_| tree.is_orphan(ino)) {
                match self.backend.remove_file(&path) {
                    Ok(()) => {}
                    Err(e) if crate::backend::is_not_found(&e) => {}
                    Err(e) => return Err(e.into()),
                }
                tree.forget(ino);
            }
        }
        Ok(())
    }

    /// Closes the app's open VCT if the policy says so (in sync-point mode:
    /// if a limit is reached, see `sync_points`); true if it did or
    /// if dirty data passed the background ratio (either way the background
    /// thread has work).
    pub(crate) fn policy_closes(&self, st: &mut State, app: AppId) -> bool {
        let limits = limits_of(st, app);
        let closed = crate::sync_points::closes_between_sync_points(st, app, &limits, self.clock.now());
        if closed {
            st.close_vct(app);
        }
        closed || over_background_ratio(st)
    }

    /// Runs the policies: closes VCTs that are due and checkpoints what the
    /// batch selection picks, then applies the waiting transactions if their
    /// backlog is due (`backlog`) or dirty data is past the background
    /// ratio. The mount calls it from a background thread; the simulator at
    /// each step.
    pub fn tick(&self) {
        self.commit_due();
        self.apply_if_due();
    }

    fn commit_due(&self) {
        self.log_held_checkpoints(false);
        let now = self.clock.now();
        let retry_at = self.counters.lock().retry_at;
        let may_commit = retry_at.is_none_or(|t| t <= now);
        if may_commit && std::mem::take(&mut self.state.lock().background_commit_owed) {
            if let Err(e) = self.dispatch.background_work(|| self.run_checkpoint(Trigger::Background)) {
                tracing::warn!("background checkpoint for reclaim failed: {e}; data stays in memory and is retried");
            }
        }
        let selection = {
            let mut st = self.state.lock();
            for app in st.apps.polled_at_tick() {
                self.policy_closes(&mut st, app);
            }
            if over_background_ratio(&st) {
                // Background apps' data first (PR); the foreground app's too
                // once nothing else is left to commit.
                st.close_all_but_spared();
                if st.closed.is_empty() {
                    st.close_all();
                }
            }
            if st.closed.is_empty() {
                return;
            }
            // After a failure the batch went back to the queue, and
            // dependencies on it may be unrecorded: retry everything.
            if retry_at.is_some() {
                Selection::All
            } else {
                select(&mut st, self.idle.lock().as_mut(), now)
            }
        };
        if retry_at.is_some_and(|t| t > now) {
            return;
        }
        if let Err(e) = self.dispatch.background_work(|| self.commit(Trigger::Policy, &selection)) {
            tracing::warn!("background checkpoint failed: {e}; data stays in memory and is retried");
        }
    }

    /// How long the background thread may sleep before the next `tick`.
    pub fn next_tick_in(&self) -> Duration {
        let mut st = self.state.lock();
        let now = self.clock.now();
        let over_ratio = over_background_ratio(&st);
        // Asked only with VCTs closed (the usual answer comes without the predictor's lock).
        let waiting_for_idle = || self.idle.lock().is_some() && !over_ratio;
        let all_withheld = || {
            let withheld = st.withheld(now);
            st.closed.iter().all(|v| withheld.contains(&v.id))
        };
        if !st.closed.is_empty() && all_withheld() && self.backlog.lock().is_empty() && !st.background_commit_owed {
            // Only VCTs waiting for the rest of a split write: look again when
            // that wait ends (the piece that settles them wakes us sooner).
            let expiry = st.split_writes.next_expiry(now, st.split_write_wait()).unwrap_or(now);
            return expiry.duration_since(now).unwrap_or_default().max(SPLIT_WRITE_RECHECK);
        }
        if (!st.closed.is_empty() && !waiting_for_idle()) || over_ratio || st.background_commit_owed {
            let retry_at = self.counters.lock().retry_at;
            return retry_at.map_or(Duration::ZERO, |t| t.duration_since(now).unwrap_or_default());
        }
        if !st.closed.is_empty() {
            // Closed VCTs wait for idle time: look again soon.
            return IDLE_POLL;
        }
        let window = low_battery_window(&st);
        let mut wait = window.unwrap_or(st.periods.writeback_interval);
        // The earliest staleness deadline of any app (`limits_of`'s
        // `max_stale`, the window worked out once), one subtraction from now.
        let staleness_due =
            st.apps.with_entries().filter_map(|a| Some(a.open.first_entry_at? + capped(a.max_stale, window))).min();
        if let Some(due) = staleness_due {
            wait = wait.min(due.duration_since(now).unwrap_or_default());
        }
        if let Some(due) = self.backlog_due_at(&st) {
            let retry_at = self.counters.lock().retry_at.unwrap_or(due);
            wait = wait.min(due.max(retry_at).duration_since(now).unwrap_or_default());
        }
        wait
    }

    /// Bytes written by all apps and not committed yet (what a crash now
    /// would lose); cheaper than `stats` for callers that sample it often.
    pub fn bytes_at_risk(&self) -> u64 {
        self.state.lock().apps.bytes_at_risk()
    }

    /// Whether nothing waits to be committed: no uncommitted entry (data or
    /// metadata) and no dirty page.
    pub fn is_quiet(&self) -> bool {
        let st = self.state.lock();
        st.closed.is_empty() && st.apps.list.iter().all(|a| a.open.is_empty()) && st.cache.dirty_bytes() == 0
    }

    /// Sleeps up to `max`, or until a VCT closes or `wake_background` is called.
    pub fn wait_for_work(&self, max: Duration) {
        let (flag, cv) = &self.wake;
        let mut woken = flag.lock();
        if !*woken {
            cv.wait_for(&mut woken, max);
        }
        *woken = false;
    }

    pub fn wake_background(&self) {
        let (flag, cv) = &self.wake;
        *flag.lock() = true;
        cv.notify_all();
    }

    /// Orderly stop: checkpoints everything, open VCTs included, and removes
    /// the orphans (nothing is open any more).
    pub fn shutdown(&self) -> FsResult<()> {
        // No request comes any more, so no rest of a split write either.
        self.state.lock().split_writes.settle(None);
        self.run_checkpoint(Trigger::Everything)?;
        let mut st = self.state.lock();
        // Everything committed above: no change of theirs is pending.
        let orphans: Vec<DeadOrphan> = st
            .inodes
            .keys()
            .filter(|i| self.tree.read().latest().is_orphan(**i))
            .map(|&ino| DeadOrphan { ino, last_change: None })
            .collect();
        st.dead_orphans.extend(orphans);
        drop(st);
        self.delete_dead_orphans()?;
        self.log_held_checkpoints(true);
        self.wake_background();
        Ok(())
    }
}

/// How often the background thread asks the predictor while closed VCTs
/// wait for idle time (a touch is ~100 ms, so a window is seen in time).
pub const IDLE_POLL: Duration = Duration::from_millis(100);

/// Dirty data passed `dirty_background_ratio` of the cache: commit (the
/// background apps' data first under FastTrack PR; also the memory-footprint
/// rule of MobiFS §7.2).
pub(crate) fn over_background_ratio(st: &State) -> bool {
    st.cache.dirty_bytes() as f64 > st.config.dirty_background_ratio * st.config.cache_size as f64
}

/// Bytes an app has written that are not committed yet (its staleness s).
pub(crate) fn stale_bytes(st: &State, app: AppId) -> u64 {
    let a = &st.apps.list[app];
    a.open.bytes + a.closed_bytes
}

/// The limits in force for an app: low battery shortens the staleness window;
/// with FastTrack PA a background app may leave at most one checkpoint
/// segment uncommitted while a foreground app runs. Its commits are long
/// background operations that hold the journal: bounded so, each one is
/// about a segment long, and a foreground commit that finds the journal busy
/// waits for at most that (each commit is still a point in time of the app).
pub(crate) fn limits_of(st: &State, app: AppId) -> Limits {
    let a = &st.apps.list[app];
    let max_stale = capped(a.max_stale, low_battery_window(st));
    let mut max_stale_bytes = a.max_stale_bytes;
    if commits_in_segments(st, st.io_class(app)) {
        max_stale_bytes = max_stale_bytes.min(st.config.checkpoint_segment_bytes);
    }
    Limits { max_stale_bytes, max_stale }
}

/// The staleness window low battery imposes, if the battery is low.
fn low_battery_window(st: &State) -> Option<Duration> {
    st.low_battery().then_some(st.periods.low_battery_writeback)
}

/// An app's staleness bound `max_stale`, shortened to `window` if any.
fn capped(max_stale: Duration, window: Option<Duration>) -> Duration {
    window.map_or(max_stale, |window| max_stale.min(window))
}

/// FastTrack PA keeps commits of `class` to about one checkpoint segment:
/// background work, while a foreground app runs.
fn commits_in_segments(st: &State, class: IoClass) -> bool {
    st.config.fasttrack.preempt && st.status.foreground().is_some() && class == IoClass::Background
}

fn batch_inodes(batch: &[ClosedVct]) -> impl Iterator<Item = Ino> + '_ {
    batch.iter().flat_map(|v| v.entries.iter()).filter_map(|e| match e {
        ClosedEntry::Write { ino, .. } => Some(*ino),
        ClosedEntry::Other(LogEntry::Unlink { ino, .. }) => Some(*ino),
        ClosedEntry::Other(LogEntry::Rename { replaced, .. }) => *replaced,
        ClosedEntry::Other(_) => None,
    })
}

/// How a commit attempt ended (errors aside).
enum Commit {
    Done,
    /// Gave way to an FG commit before its transaction was durable: nothing is committed.
    GaveWay,
    /// Committed the first segment of a background batch; these VCTs are still to go.
    More(HashSet<u64>),
}

/// A background commit while a foreground app runs, with FastTrack PA, is a
/// long background operation that holds the journal: it commits its batch in
/// pieces of about `checkpoint_segment_bytes` (at least one VCT each), so a
/// foreground commit waits for one piece at most. The queue is in closing
/// order and a VCT only needs VCTs closed before it, so the oldest VCTs of a
/// batch are a batch on their own; the rest goes back to the front of the
/// queue. Gives the batch to commit now and the ids still to commit.
fn split_background_batch(st: &mut State, mut batch: Vec<ClosedVct>) -> (Vec<ClosedVct>, HashSet<u64>) {
    let class = crate::dispatch::current().map(|w| w.class);
    if !class.is_some_and(|c| commits_in_segments(st, c)) {
        return (batch, HashSet::new());
    }
    let mut bytes = 0;
    let keep = batch
        .iter()
        .position(|v| {
            bytes += v.bytes;
            bytes > st.config.checkpoint_segment_bytes
        })
        .map_or(batch.len(), |i| i.max(1));
    let rest = batch.split_off(keep);
    let ids = rest.iter().map(|v| v.id).collect();
    st.requeue_closed(rest);
    (batch, ids)
}

/// Keeps the oldest VCTs of `batch` that fit in the journal next to the
/// backing space already reserved (`space`) and puts the rest back at the
/// front of the queue, adding them to `rest`: a batch too big for the free
/// space commits in parts, each a consistent prefix (as in
/// `split_background_batch`).
fn split_to_fit(
    st: &mut State,
    backend: &dyn crate::backend::Backend,
    mut batch: Vec<ClosedVct>,
    rest: &mut HashSet<u64>,
    now: SystemTime,
) -> Vec<ClosedVct> {
    let keep = st.fitting_prefix(backend, &batch, now);
    let later = batch.split_off(keep);
    rest.extend(later.iter().map(|v| v.id));
    st.requeue_closed(later);
    batch
}

/// BEGIN, one APPEND per operation compiled from the batch (rename chains
/// merged, page writes joined into runs) that `in_place` does not write to
/// its home at once (appended data), END, WAIT_SYNC; stops before an APPEND
/// if `step` says to give way (the caller aborts). `origins` learns which
/// entry each op came from.
fn write_transaction(
    journal: &mut Journal,
    seq: u64,
    batch: &[ClosedVct],
    compiler: &mut Compiler,
    step: &dyn Fn() -> Step,
    origins: &mut OpOrigins,
    in_place: &mut InPlace,
) -> std::io::Result<Step> {
    journal.begin(seq)?;
    let chains = RenameChains::of(batch);
    let mut run: Option<WriteRun> = None;
    for (app, entry) in chains.entries(batch) {
        let page = match &entry {
            Cow::Borrowed(entry) => compiler.entry(entry),
            // A merged entry is a rename, never a page.
            Cow::Owned(merged) => {
                compiler.entry(merged);
                None
            }
        };
        if let Some(page) = page {
            if step() == Step::GiveWay {
                return Ok(Step::GiveWay);
            }
            if let Some(done) = WriteRun::add(&mut run, page.path, page.offset, page.piece) {
                hand_over(journal, in_place, done)?;
            }
            // The page is (part of) the run, appended next if journaled.
            origins.note(journal.ops_appended(), app, &entry);
        }
        for op in compiler.ops.drain(..) {
            if step() == Step::GiveWay {
                return Ok(Step::GiveWay);
            }
            if let Some(done) = run.take() {
                hand_over(journal, in_place, done)?;
            }
            origins.note(journal.ops_appended(), app, &entry);
            if let Some(op) = in_place.route(op)? {
                journal.append(op)?;
            }
        }
    }
    if let Some(last) = run {
        hand_over(journal, in_place, last)?;
    }
    in_place.journal_ops = journal.ops_appended();
    in_place.make_durable()?;
    journal.end()?;
    journal.wait_sync()?;
    Ok(Step::GoOn)
}

/// Writes `run` in place, or appends it to the journal.
fn hand_over(journal: &mut Journal, in_place: &mut InPlace, run: WriteRun) -> std::io::Result<()> {
    let known = journal.known_content();
    if !in_place.place(&run, known)? {
        journal.append(run.into_op(known))?;
    }
    Ok(())
}

pub fn collect_stats(st: &State, c: &CheckpointCounters, idle: Option<PredictionScore>, now: SystemTime) -> Stats {
    let mut s = Stats {
        journal_bytes: c.journal_bytes,
        bytes_flushed: c.bytes_flushed,
        checkpoints: c.checkpoints,
        last_checkpoint_duration_ns: (c.checkpoints > 0).then_some(c.last_duration.as_nanos() as u64),
        checkpoint_error: c.last_error.clone(),
        checkpoint_failures: c.failures,
        coalesced_bytes: c.coalesced_bytes,
        elided_ops: c.elided_ops,
        placed_bytes: c.placed_bytes,
        cache_dirty_bytes: st.cache.dirty_bytes(),
        cache_total_bytes: st.cache.bytes(),
        cache_clean_bytes: st.cache.bytes() - st.cache.dirty_bytes(),
        cache_limit_bytes: st.config.cache_size,
        battery_percent: st.battery,
        low_battery: st.low_battery(),
        idle_predictor: st.config.idle_predictor.clone(),
        idle,
        ..Stats::default()
    };
    for (id, app) in st.apps.list.iter().enumerate() {
        let stale_bytes = stale_bytes(st, id);
        let closed = st.closed.iter().filter(|v| v.app == id);
        let oldest = closed.filter_map(|v| v.first_entry_at).chain(app.open.first_entry_at).min();
        let stale_seconds = oldest.map_or(0.0, |t| now.duration_since(t).unwrap_or_default().as_secs_f64());
        let k = &app.counters;
        let m = &app.metrics;
        let micros = |d: Duration| d.as_nanos() as f64 / 1e3;
        let a = AppStats {
            app: app.name.clone(),
            mode: format!("{:?}", st.mode_of(id)).to_lowercase(),
            bytes_written: k.bytes_written,
            bytes_flushed: k.bytes_flushed,
            fsync_absorbed: k.fsync_absorbed,
            fsync_honoured: k.fsync_honoured,
            vcts_closed: k.vcts_closed,
            vcts_committed: k.vcts_committed,
            stale_bytes,
            stale_seconds,
            stale_bytes_max: m.staleness.max_bytes,
            stale_bytes_mean: m.staleness.mean_bytes(now),
            checkpoint_intervals: m.intervals.count,
            checkpoint_interval_mean_seconds: m.intervals.mean().as_secs_f64(),
            checkpoint_interval_max_seconds: m.intervals.max.as_secs_f64(),
            fsync_calls: m.fsync_latency.count(),
            fsync_p50_us: micros(m.fsync_latency.percentile(0.5)),
            fsync_p99_us: micros(m.fsync_latency.percentile(0.99)),
            stalled_seconds: m.stalled.as_secs_f64(),
        };
        s.bytes_written += a.bytes_written;
        s.fsync_absorbed += a.fsync_absorbed;
        s.fsync_honoured += a.fsync_honoured;
        s.vcts_closed += a.vcts_closed;
        s.vcts_committed += a.vcts_committed;
        s.stale_bytes += a.stale_bytes;
        s.stale_seconds = s.stale_seconds.max(a.stale_seconds);
        s.apps.insert(a.app.clone(), a);
    }
    s
}
