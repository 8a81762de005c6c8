//! Foreground-first dispatch inside the engine (FastTrack's page allocator,
//! §4.2, and the checkpoint hold of its I/O dispatcher, §4.4).
//!
//! Every request is admitted with its class. A foreground (FG) request goes
//! in at once and counts as *in flight* until its `Admission` drops. A
//! background (BG) request waits at admission while any FG request is in
//! flight, and long BG work — segments of large reads and writes, segments
//! of a checkpoint's journal apply — waits the same way at each segment
//! boundary (`yield_point`), holding no engine lock, then resumes where it
//! stopped. System requests neither wait nor make others wait.
//!
//! Aging bound: one BG wait (at admission, at one segment boundary, or for
//! the journal) ends after `fasttrack.aging_ms` of the engine's clock even if
//! FG work still goes on, so BG work always advances by at least one segment
//! per bound and is never starved.
//!
//! The journal (the right to commit) is taken FG first: an FG request that
//! must commit (a sync-mode fsync, a throttled write) goes before BG commits
//! still waiting for it, and while it waits for a BG commit in progress it
//! does not count as in flight, so it does not hold that commit back
//! (`take_journal`). A BG commit still writing its journal when an FG
//! request comes for the journal gives way: it drops its uncommitted
//! transaction, and retries after the FG commit (`commit_step`). Once its
//! commit record is durable it must be applied before anyone else commits;
//! then, and once the aging bound has passed since a BG commit first gave
//! way, it goes on at FG I/O priority until it ends (priority inheritance
//! down to the device).
//!
//! The class of the work a thread is doing lives in a thread-local set by
//! `admit` and `background_work`, so engine code deep in a call can ask
//! "should I yield?" without every function carrying the caller.

use crate::app_status::IoClass;
use crate::clock::Clock;
use parking_lot::{Condvar, Mutex};
use serde::Serialize;
use std::cell::Cell;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

thread_local! {
    /// The class of the request or job this thread is running, with its uid.
    static CURRENT: Cell<Option<Work>> = const { Cell::new(None) };
    /// Whether this thread's BG commit runs at FG I/O priority for an FG request waiting for it.
    static BOOSTED: Cell<bool> = const { Cell::new(false) };
}

/// Gives the calling thread the I/O priority of a class (the front end's `ioprio_set`).
pub type IoPriorityHook = Box<dyn Fn(IoClass) + Send + Sync>;

/// What a thread is running: a request of a uid's app, or the engine's own background work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Work {
    pub class: IoClass,
    /// The requesting uid; `None` for the engine's own background work.
    pub uid: Option<u32>,
}

/// The work the calling thread is running, if any.
pub fn current() -> Option<Work> {
    CURRENT.with(|c| c.get())
}

/// Which waits are switched on (`fasttrack.preempt` and `fasttrack.dispatch`).
#[derive(Clone, Copy, Debug)]
pub struct Switches {
    /// BG requests wait at admission and between their segments.
    pub preempt_requests: bool,
    /// Checkpoints run for BG reasons wait between their apply segments.
    pub hold_checkpoints: bool,
}

/// What the dispatcher did, for `mcfs stat`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DispatchStats {
    pub fg_requests: u64,
    pub bg_requests: u64,
    /// BG waits (admissions and segment boundaries) that found FG work in flight.
    pub bg_waits: u64,
    /// Of those, waits ended by the aging bound rather than by FG work finishing.
    pub bg_aged: u64,
    /// Engine-clock time BG work spent waiting.
    pub bg_wait_ns: u64,
    /// Checkpoint apply segments held back for FG work.
    pub checkpoint_holds: u64,
    /// BG commits that let an FG request take the journal first.
    pub journal_yields: u64,
    /// FG requests waiting for the journal right now.
    pub fg_at_journal: u32,
    /// BG commits that dropped their uncommitted transaction for an FG commit (and retried).
    pub commits_given_way: u64,
    /// BG commits raised to FG I/O priority because an FG request waited for them.
    pub commits_boosted: u64,
}

struct Gate {
    fg_in_flight: u32,
    /// FG requests waiting to take the journal (to commit their app's data).
    fg_at_journal: u32,
    stats: DispatchStats,
}

pub struct Dispatcher {
    gate: Mutex<Gate>,
    io_priority: std::sync::OnceLock<IoPriorityHook>,
    fg_done: Condvar,
    clock: Arc<dyn Clock>,
    aging: Duration,
    switches: Switches,
}

/// What a commit does after a step of writing its journal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    GoOn,
    /// Drop the uncommitted transaction and retry: an FG request waits for the journal.
    GiveWay,
}

/// How a BG wait is counted.
#[derive(Clone, Copy, PartialEq, Eq)]
enum WaitKind {
    Request,
    Checkpoint,
    Journal,
}

/// An admitted request; dropping it ends the request (FG: no longer in flight).
#[must_use = "the request is admitted only while the Admission lives"]
pub struct Admission<'a> {
    dispatcher: &'a Dispatcher,
    work: Work,
    outer: Option<Work>,
}

impl Drop for Admission<'_> {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.outer));
        if self.work.class == IoClass::Foreground {
            self.dispatcher.fg_leaves();
        }
    }
}

/// How often a waiting BG thread re-reads the clock: the clock may be a
/// manual one that moves without notifying anybody.
const RECHECK: Duration = Duration::from_millis(5);

impl Dispatcher {
    pub fn new(clock: Arc<dyn Clock>, aging: Duration, switches: Switches) -> Dispatcher {
        Dispatcher {
            io_priority: std::sync::OnceLock::new(),
            gate: Mutex::new(Gate { fg_in_flight: 0, fg_at_journal: 0, stats: DispatchStats::default() }),
            fg_done: Condvar::new(),
            clock,
            aging,
            switches,
        }
    }

    /// Admits a request of class `class` from `uid`: a BG one waits while
    /// FG requests are in flight (up to the aging bound).
    pub fn admit(&self, class: IoClass, uid: u32) -> Admission<'_> {
        let work = Work { class, uid: Some(uid) };
        match class {
            IoClass::Foreground => {
                let mut gate = self.gate.lock();
                gate.fg_in_flight += 1;
                gate.stats.fg_requests += 1;
            }
            IoClass::Background => {
                self.gate.lock().stats.bg_requests += 1;
                if self.switches.preempt_requests {
                    self.wait_for_fg(WaitKind::Request);
                }
            }
            IoClass::System => {}
        }
        let outer = CURRENT.with(|c| c.replace(Some(work)));
        Admission { dispatcher: self, work, outer }
    }

    /// Runs `f` as the engine's own background work (a checkpoint the ticker
    /// starts): it holds back for FG requests at its segment boundaries.
    pub fn background_work<T>(&self, f: impl FnOnce() -> T) -> T {
        let outer = CURRENT.with(|c| c.replace(Some(Work { class: IoClass::Background, uid: None })));
        let out = f();
        CURRENT.with(|c| c.set(outer));
        out
    }

    /// A segment boundary of a BG request's read or write.
    pub fn request_segment_boundary(&self) {
        if self.switches.preempt_requests && current_is_background() {
            self.wait_for_fg(WaitKind::Request);
        }
    }

    /// How the front end sets a thread's I/O priority; set once, with
    /// `fasttrack.dispatch`. Without it no commit is ever boosted.
    pub fn set_io_priority_hook(&self, hook: IoPriorityHook) {
        let _ = self.io_priority.set(hook);
    }

    /// A step of a commit's journal writing, for a commit that first gave
    /// way at `gave_way_at` (if ever). A BG commit an FG request waits for
    /// gives way until the aging bound has passed since it first did (so a
    /// stream of FG commits cannot starve it); then it goes on, boosted.
    pub fn commit_step(&self, gave_way_at: Option<SystemTime>) -> Step {
        let gives_way = (self.switches.preempt_requests || self.switches.hold_checkpoints)
            && current_is_background()
            && gave_way_at.is_none_or(|t| elapsed(t, self.clock.now()) < self.aging);
        if gives_way {
            let mut gate = self.gate.lock();
            if gate.fg_at_journal > 0 {
                gate.stats.commits_given_way += 1;
                drop(gate);
                // The FG request waits for the abort too (it truncates the journal).
                self.boost_if_waited_for();
                return Step::GiveWay;
            }
        }
        self.boost_if_waited_for();
        Step::GoOn
    }

    /// A BG commit that an FG request is waiting for (at the journal) goes
    /// on at FG I/O priority until it ends (`commit_done`): priority
    /// inheritance down to the device, so the FG request does not wait
    /// behind BG I/O for a commit whose end it needs.
    fn boost_if_waited_for(&self) {
        let Some(hook) = self.io_priority.get() else { return };
        if BOOSTED.with(Cell::get) || !current_is_background() || self.gate.lock().fg_at_journal == 0 {
            return;
        }
        BOOSTED.with(|b| b.set(true));
        self.gate.lock().stats.commits_boosted += 1;
        hook(IoClass::Foreground);
    }

    /// The commit is over: a boosted thread goes back to its own priority.
    pub fn commit_done(&self) {
        if let (Some(hook), true) = (self.io_priority.get(), BOOSTED.with(|b| b.replace(false))) {
            hook(current().map_or(IoClass::Background, |w| w.class));
        }
    }

    /// A segment boundary of a checkpoint's apply: held back while FG
    /// requests are in flight, unless an FG or system request runs it.
    pub fn checkpoint_segment_boundary(&self) {
        self.boost_if_waited_for();
        let held = (self.switches.hold_checkpoints || self.switches.preempt_requests) && current_is_background();
        if held {
            self.wait_for_fg(WaitKind::Checkpoint);
        } else {
            std::thread::yield_now();
        }
    }

    /// Takes the journal with `lock` (the right to commit). An FG request
    /// goes ahead of BG commits still waiting for it, and while it waits it
    /// does not count as in flight, so it does not hold back the BG commit it
    /// waits for (priority inheritance, in effect). A BG commit waits while FG
    /// requests are waiting for the journal, up to the aging bound.
    pub fn take_journal<T>(&self, mut lock: impl FnMut() -> T) -> T {
        match current().map(|w| w.class) {
            Some(IoClass::Foreground) => {
                {
                    let mut gate = self.gate.lock();
                    gate.fg_at_journal += 1;
                }
                self.fg_leaves();
                let taken = lock();
                let mut gate = self.gate.lock();
                gate.fg_at_journal -= 1;
                gate.fg_in_flight += 1;
                if gate.fg_at_journal == 0 {
                    self.fg_done.notify_all();
                }
                taken
            }
            Some(IoClass::Background) if self.switches.preempt_requests || self.switches.hold_checkpoints => {
                let started = self.clock.now();
                loop {
                    self.wait_while(WaitKind::Journal, |gate| gate.fg_at_journal > 0);
                    let taken = lock();
                    // An FG request that came while this one was queued on the
                    // lock goes first (the lock itself knows no priorities),
                    // up to the aging bound.
                    if self.gate.lock().fg_at_journal == 0 || elapsed(started, self.clock.now()) >= self.aging {
                        return taken;
                    }
                    drop(taken);
                }
            }
            _ => lock(),
        }
    }

    /// FG requests in flight now.
    pub fn fg_in_flight(&self) -> u32 {
        self.gate.lock().fg_in_flight
    }

    pub fn stats(&self) -> DispatchStats {
        let gate = self.gate.lock();
        DispatchStats { fg_at_journal: gate.fg_at_journal, ..gate.stats.clone() }
    }

    fn fg_leaves(&self) {
        let mut gate = self.gate.lock();
        gate.fg_in_flight = gate.fg_in_flight.saturating_sub(1);
        if gate.fg_in_flight == 0 {
            self.fg_done.notify_all();
        }
    }

    /// Waits while FG requests are in flight, at most the aging bound.
    fn wait_for_fg(&self, kind: WaitKind) {
        self.wait_while(kind, |gate| gate.fg_in_flight > 0);
    }

    /// Waits while `held` says FG work goes first, at most the aging bound
    /// of the engine's clock.
    fn wait_while(&self, kind: WaitKind, held: impl Fn(&Gate) -> bool) {
        let mut gate = self.gate.lock();
        if !held(&gate) {
            return;
        }
        let started = self.clock.now();
        gate.stats.bg_waits += 1;
        match kind {
            WaitKind::Request => {}
            WaitKind::Checkpoint => gate.stats.checkpoint_holds += 1,
            WaitKind::Journal => gate.stats.journal_yields += 1,
        }
        loop {
            let waited = elapsed(started, self.clock.now());
            if !held(&gate) || waited >= self.aging {
                gate.stats.bg_aged += u64::from(held(&gate));
                gate.stats.bg_wait_ns += waited.as_nanos() as u64;
                return;
            }
            let _ = self.fg_done.wait_for(&mut gate, (self.aging - waited).min(RECHECK));
        }
    }
}

fn current_is_background() -> bool {
    current().is_some_and(|w| w.class == IoClass::Background)
}

fn elapsed(from: SystemTime, to: SystemTime) -> Duration {
    to.duration_since(from).unwrap_or_default()
}
