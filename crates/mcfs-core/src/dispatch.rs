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
//! per bound and is never starved. While FG work is busy, though, at most one
//! aged BG commit takes the journal per bound (as on the device, mcfs_sim's
//! scheduler): BG commits that aged together would otherwise hold the journal
//! one after another while an FG request waits.
//!
//! A BG commit does not take the journal while FG work is busy: FG requests in
//! flight or waiting for the journal, or the anticipation after the last one
//! (`with_anticipation`).
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
//! way, it goes on. A writer short of memory only waits for the commit in
//! progress, which frees it (`wait_for_journal`): that commit goes on.
//!
//! Priority inheritance down to the device: the moment an FG request waits
//! for the journal, the thread holding it gets FG I/O priority, set from the
//! waiting thread (`IoPriorities::raise_thread`), so even the command that
//! thread has at the device right now is FG there (the emulated device
//! re-reads the class of commands still waiting); the holder goes back to
//! its own priority when it lets the journal go (`JournalHold`'s drop).
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
}

/// How the dispatcher sets threads' I/O priorities (the front end's `ioprio_set`).
pub trait IoPriorities: Send + Sync {
    /// Gives the calling thread the I/O priority of `class`.
    fn set_own(&self, class: IoClass);
    /// The calling thread's id, as `raise_thread` takes it.
    fn own_thread(&self) -> u32;
    /// Gives thread `tid` the FG I/O priority (it holds the journal an FG request waits for).
    fn raise_thread(&self, tid: u32);
}

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
    /// The BG thread holding the journal, if `io_priorities` is set.
    journal_holder: Option<Holder>,
    /// When an aged BG commit last took the journal while FG work was busy.
    last_journal_overtake: Option<SystemTime>,
    /// When the last FG request in flight ended.
    last_fg_end: Option<SystemTime>,
    stats: DispatchStats,
}

struct Holder {
    tid: u32,
    /// Raised to FG I/O priority for an FG request waiting for the journal.
    raised: bool,
}

pub struct Dispatcher {
    gate: Mutex<Gate>,
    io_priorities: std::sync::OnceLock<Box<dyn IoPriorities>>,
    fg_done: Condvar,
    clock: Arc<dyn Clock>,
    aging: Duration,
    /// How long after the last FG request ended a BG commit still holds back.
    anticipation: Duration,
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
            io_priorities: std::sync::OnceLock::new(),
            gate: Mutex::new(Gate {
                fg_in_flight: 0,
                fg_at_journal: 0,
                journal_holder: None,
                last_journal_overtake: None,
                last_fg_end: None,
                stats: DispatchStats::default(),
            }),
            fg_done: Condvar::new(),
            clock,
            aging,
            anticipation: Duration::ZERO,
            switches,
        }
    }

    /// The same dispatcher where a BG commit does not start within
    /// `anticipation` after an FG request ended: an app that just had a
    /// request served is likely to send the next one soon (as BFQ idles on a
    /// sync queue for `slice_idle`), and a BG commit started in that gap would
    /// hold the journal for a whole segment. Needs a clock that moves by itself.
    pub fn with_anticipation(mut self, anticipation: Duration) -> Dispatcher {
        self.anticipation = anticipation;
        self
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

    /// Whether a request of `class` may wait, at admission or at a segment
    /// boundary, for FG work: a BG request while request preemption is on.
    pub fn may_hold_back(&self, class: IoClass) -> bool {
        class == IoClass::Background && self.switches.preempt_requests
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
        if self.switches.preempt_requests && is_background() {
            self.wait_for_fg(WaitKind::Request);
        }
    }

    /// How the front end sets threads' I/O priorities; set once, with
    /// `fasttrack.dispatch`. Without it no commit is ever raised.
    pub fn set_io_priorities(&self, priorities: Box<dyn IoPriorities>) {
        let _ = self.io_priorities.set(priorities);
    }

    /// A step of a commit's journal writing, for a commit that first gave
    /// way at `gave_way_at` (if ever). A BG commit an FG request waits for
    /// gives way until the aging bound has passed since it first did (so a
    /// stream of FG commits cannot starve it).
    pub fn commit_step(&self, gave_way_at: Option<SystemTime>) -> Step {
        let gives_way = (self.switches.preempt_requests || self.switches.hold_checkpoints)
            && is_background()
            && gave_way_at.is_none_or(|t| elapsed(t, self.clock.now()) < self.aging);
        if gives_way {
            let mut gate = self.gate.lock();
            if gate.fg_at_journal > 0 {
                gate.stats.commits_given_way += 1;
                return Step::GiveWay;
            }
        }
        Step::GoOn
    }

    /// A segment boundary of a checkpoint's apply: held back while FG
    /// requests are in flight, unless an FG or system request runs it.
    pub fn checkpoint_segment_boundary(&self) {
        let held = (self.switches.hold_checkpoints || self.switches.preempt_requests) && is_background();
        if held {
            self.wait_for_fg(WaitKind::Checkpoint);
        } else {
            std::thread::yield_now();
        }
    }

    /// Takes the journal with `lock` (the right to commit). An FG request
    /// goes ahead of BG commits still waiting for it, and while it waits it
    /// does not count as in flight, so it does not hold back the BG commit it
    /// waits for, which it raises to FG I/O priority. A BG commit waits while
    /// FG work is busy (`fg_busy`), up to the aging bound.
    pub fn take_journal<T>(&self, mut lock: impl FnMut() -> T) -> JournalHold<'_, T> {
        match current().map(|w| w.class) {
            Some(IoClass::Foreground) => {
                {
                    let mut gate = self.gate.lock();
                    gate.fg_at_journal += 1;
                    self.raise_holder(&mut gate);
                }
                self.fg_leaves();
                let taken = lock();
                let mut gate = self.gate.lock();
                gate.fg_at_journal -= 1;
                gate.fg_in_flight += 1;
                if gate.fg_at_journal == 0 {
                    self.fg_done.notify_all();
                }
                JournalHold { dispatcher: self, taken: Some(taken), registered: false }
            }
            Some(IoClass::Background) => {
                let yields = self.switches.preempt_requests || self.switches.hold_checkpoints;
                let started = self.clock.now();
                loop {
                    if yields {
                        self.wait_while(WaitKind::Journal, |gate| self.fg_busy(gate));
                    }
                    let taken = lock();
                    let mut gate = self.gate.lock();
                    // FG work that came while this one was queued on the lock
                    // goes first (the lock itself knows no priorities), up to
                    // the aging bound: one aged BG commit per bound.
                    let now = self.clock.now();
                    let fg_busy = self.fg_busy(&gate);
                    let overtakes = fg_busy
                        && elapsed(started, now) >= self.aging
                        && gate.last_journal_overtake.is_none_or(|last| elapsed(last, now) >= self.aging);
                    if !yields || !fg_busy || overtakes {
                        if overtakes {
                            gate.last_journal_overtake = Some(now);
                        }
                        let registered = self.register_holder(&mut gate);
                        return JournalHold { dispatcher: self, taken: Some(taken), registered };
                    }
                }
            }
            _ => JournalHold { dispatcher: self, taken: Some(lock()), registered: false },
        }
    }

    /// Waits with `wait` until the journal's holder lets it go, without
    /// taking it: a writer short of memory waits for the commit or apply
    /// in progress, which frees it. Unlike `take_journal`, a BG commit goes
    /// on (it does not give way), and an FG waiter neither counts as in
    /// flight meanwhile nor leaves the holder at BG I/O priority.
    pub fn wait_for_journal(&self, wait: impl FnOnce()) {
        if current().map(|w| w.class) != Some(IoClass::Foreground) {
            return wait();
        }
        self.raise_holder(&mut self.gate.lock());
        self.fg_leaves();
        wait();
        self.gate.lock().fg_in_flight += 1;
    }

    /// Whether a BG commit holds back for FG work: FG requests in flight or
    /// waiting for the journal, or one that ended within the anticipation.
    fn fg_busy(&self, gate: &Gate) -> bool {
        gate.fg_at_journal > 0
            || gate.fg_in_flight > 0
            || gate.last_fg_end.is_some_and(|end| elapsed(end, self.clock.now()) < self.anticipation)
    }

    /// Makes the calling BG thread the journal's holder (raised at once if
    /// an FG request waits already); false without `io_priorities`.
    fn register_holder(&self, gate: &mut Gate) -> bool {
        let Some(priorities) = self.io_priorities.get() else { return false };
        gate.journal_holder = Some(Holder { tid: priorities.own_thread(), raised: false });
        if gate.fg_at_journal > 0 {
            self.raise_holder(gate);
        }
        true
    }

    /// Raises the journal's BG holder to FG I/O priority, once.
    fn raise_holder(&self, gate: &mut Gate) {
        let (Some(priorities), Some(holder)) = (self.io_priorities.get(), gate.journal_holder.as_mut()) else {
            return;
        };
        if !holder.raised {
            holder.raised = true;
            gate.stats.commits_boosted += 1;
            priorities.raise_thread(holder.tid);
        }
    }

    /// The holder lets the journal go: it is no longer raised for anybody.
    fn release_holder(&self) {
        let holder = self.gate.lock().journal_holder.take();
        if let (Some(priorities), Some(Holder { raised: true, .. })) = (self.io_priorities.get(), holder) {
            priorities.set_own(current().map_or(IoClass::Background, |w| w.class));
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
        debug_assert!(gate.fg_in_flight > 0, "an FG request left that never came in");
        gate.fg_in_flight -= 1;
        if gate.fg_in_flight == 0 {
            gate.last_fg_end = Some(self.clock.now());
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

/// The journal, taken (`Dispatcher::take_journal`); dropping it lets the
/// journal go and puts a raised holder back at its own I/O priority.
pub struct JournalHold<'a, T> {
    dispatcher: &'a Dispatcher,
    /// Always `Some` until dropped.
    taken: Option<T>,
    /// The taker is the registered BG holder.
    registered: bool,
}

impl<T> std::ops::Deref for JournalHold<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.taken.as_ref().expect("held until dropped")
    }
}

impl<T> std::ops::DerefMut for JournalHold<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.taken.as_mut().expect("held until dropped")
    }
}

impl<T> Drop for JournalHold<'_, T> {
    fn drop(&mut self) {
        if self.registered {
            // Unregistered before the lock goes, so the next holder's registration is never undone.
            self.dispatcher.release_holder();
        }
        drop(self.taken.take());
    }
}

/// The calling thread does background work: the engine's own, or a
/// background app's request.
pub fn is_background() -> bool {
    current().is_some_and(|w| w.class == IoClass::Background)
}

fn elapsed(from: SystemTime, to: SystemTime) -> Duration {
    to.duration_since(from).unwrap_or_default()
}
