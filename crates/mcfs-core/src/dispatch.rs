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
//! Aging bound: one BG wait (at admission or at one segment boundary) ends
//! after `fasttrack.aging_ms` of the engine's clock even if FG requests are
//! still in flight, so BG work always advances by at least one segment per
//! bound and is never starved. An FG request that itself waits for BG work
//! (a checkpoint it needs, `fg_waits_on_bg`) does not count as in flight
//! meanwhile, so it cannot hold back the work it waits for.
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
}

struct Gate {
    fg_in_flight: u32,
    stats: DispatchStats,
}

pub struct Dispatcher {
    gate: Mutex<Gate>,
    fg_done: Condvar,
    clock: Arc<dyn Clock>,
    aging: Duration,
    switches: Switches,
}

/// How a BG wait is counted.
#[derive(Clone, Copy, PartialEq, Eq)]
enum WaitKind {
    Request,
    Checkpoint,
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
            gate: Mutex::new(Gate { fg_in_flight: 0, stats: DispatchStats::default() }),
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

    /// A segment boundary of a checkpoint's apply: held back while FG
    /// requests are in flight, unless an FG or system request runs it.
    pub fn checkpoint_segment_boundary(&self) {
        let held = (self.switches.hold_checkpoints || self.switches.preempt_requests) && current_is_background();
        if held {
            self.wait_for_fg(WaitKind::Checkpoint);
        } else {
            std::thread::yield_now();
        }
    }

    /// Runs `f`, during which the calling FG request waits for BG work (a
    /// checkpoint): it does not count as in flight, so it does not hold back
    /// what it waits for (priority inheritance, in effect).
    pub fn fg_waits_on_bg<T>(&self, f: impl FnOnce() -> T) -> T {
        let fg = current().is_some_and(|w| w.class == IoClass::Foreground);
        if !fg {
            return f();
        }
        self.fg_leaves();
        let out = f();
        self.gate.lock().fg_in_flight += 1;
        out
    }

    /// FG requests in flight now.
    pub fn fg_in_flight(&self) -> u32 {
        self.gate.lock().fg_in_flight
    }

    pub fn stats(&self) -> DispatchStats {
        self.gate.lock().stats.clone()
    }

    fn fg_leaves(&self) {
        let mut gate = self.gate.lock();
        gate.fg_in_flight = gate.fg_in_flight.saturating_sub(1);
        if gate.fg_in_flight == 0 {
            self.fg_done.notify_all();
        }
    }

    /// Waits while FG requests are in flight, at most the aging bound of
    /// the engine's clock.
    fn wait_for_fg(&self, kind: WaitKind) {
        let mut gate = self.gate.lock();
        if gate.fg_in_flight == 0 {
            return;
        }
        let started = self.clock.now();
        gate.stats.bg_waits += 1;
        if kind == WaitKind::Checkpoint {
            gate.stats.checkpoint_holds += 1;
        }
        loop {
            let waited = elapsed(started, self.clock.now());
            if gate.fg_in_flight == 0 || waited >= self.aging {
                gate.stats.bg_aged += u64::from(gate.fg_in_flight > 0);
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
