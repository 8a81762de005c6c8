//! The discrete-event loop of a scenario (the model is described in the module comment of `fasttrack`).
//! It visits the instants at which something happens, in order; at each one, in this order: the device
//! completes its commands (and the issuers waiting for them send their next ones), holds that are over
//! end, the engine's background thread runs if its deadline has come, and the apps whose next event is
//! due issue it (lowest app index first).
//!
//! Invariants: virtual time never goes back, every engine call runs with the clock at the instant it
//! happens, and no engine `Admission` outlives the call it admitted — the loop itself keeps the count of
//! foreground calls in flight, so a background admission inside the engine never blocks.

use super::apps::{AppRun, AppState, Call};
use super::chain::{Chain, Progress};
use super::namespace::Namespace;
use super::ops;
use super::report::{AppReport, HoldStats, ScenarioReport};
use super::tap::DeviceTap;
use crate::trace::EventKind;
use mcfs_core::{Config, Engine, FastTrackConfig, IoClass, ManualClock};
use mcfs_device::scheduler::{Completion, Scheduler};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Which holds are on, and their bounds.
#[derive(Clone, Copy, Debug)]
pub struct HoldRules {
    /// PA: background calls wait at admission and between their device steps (`fasttrack.preempt`).
    pub preempt: bool,
    /// The engine's background work waits between its steps (`fasttrack.preempt` or `.dispatch`).
    pub hold_background: bool,
    /// `fasttrack.aging_ms`, in ns.
    pub aging_ns: u64,
    /// Bytes written between two yields of background work (`checkpoint_segment_bytes`).
    pub segment_bytes: u64,
}

impl HoldRules {
    pub fn of(config: &Config) -> HoldRules {
        let f = &config.fasttrack;
        HoldRules {
            preempt: f.preempt,
            hold_background: f.preempt || f.dispatch,
            aging_ns: f.aging_ms.saturating_mul(1_000_000),
            segment_bytes: config.checkpoint_segment_bytes,
        }
    }
}

pub struct EventLoop {
    pub engine: Engine,
    pub clock: Arc<ManualClock>,
    pub tap: Arc<DeviceTap>,
    pub device: Scheduler,
    pub apps: Vec<AppRun>,
    pub rules: HoldRules,
    names: Namespace,
    /// The engine's own background work (the checkpoints `tick` runs).
    worker: Chain,
    fg_in_flight: u32,
    now_ns: u64,
    /// The uid the loop last made the foreground app.
    foreground_uid: Option<u32>,
    /// When the engine's background thread runs next (`None`: at the next instant something else happens).
    tick_due_ns: Option<u64>,
    last_tick_ns: Option<u64>,
    holds: HoldStats,
}

impl EventLoop {
    pub fn new(
        engine: Engine,
        clock: Arc<ManualClock>,
        tap: Arc<DeviceTap>,
        device: Scheduler,
        apps: Vec<AppRun>,
        rules: HoldRules,
    ) -> EventLoop {
        EventLoop {
            engine,
            clock,
            tap,
            device,
            apps,
            rules,
            names: Namespace::new(),
            worker: Chain::default(),
            fg_in_flight: 0,
            now_ns: 0,
            foreground_uid: None,
            tick_due_ns: None,
            last_tick_ns: None,
            holds: HoldStats::default(),
        }
    }

    /// Runs every app's trace to its end, then lets the device finish what it holds.
    pub fn run(mut self, profile: String, fasttrack: FastTrackConfig) -> ScenarioReport {
        self.schedule_tick();
        while let Some(at) = self.next_instant() {
            self.clock.advance(Duration::from_nanos(at - self.now_ns));
            self.now_ns = at;
            self.complete_device_commands();
            self.end_holds();
            if self.tick_due_ns.is_some_and(|t| t <= at) {
                self.tick();
            }
            self.issue_due_events();
            self.schedule_tick();
        }
        let apps: BTreeMap<String, AppReport> = self.apps.iter().map(|a| (a.name.clone(), a.report())).collect();
        ScenarioReport {
            profile,
            policy: self.device.policy(),
            device_aging_ns: self.device.aging_ns(),
            fasttrack,
            apps_done_ns: apps.values().map(|a| a.last_done_ns).max().unwrap_or(0),
            device_idle_ns: self.now_ns,
            apps,
            holds: self.holds,
            device: self.device.stats(),
            engine: self.engine.stats(),
        }
    }

    /// The next instant something happens: a device completion, a hold that ends, the engine's background
    /// deadline (while apps run) or an app's next event.
    fn next_instant(&self) -> Option<u64> {
        let hold_end =
            |since: u64| if self.fg_in_flight == 0 { self.now_ns } else { since.saturating_add(self.rules.aging_ns) };
        let apps = self.apps.iter().filter_map(|a| match &a.state {
            AppState::Ready(at) => Some(*at),
            AppState::Held { since_ns, .. } => Some(hold_end(*since_ns)),
            AppState::InCall(call) => call.chain.held_since().map(hold_end),
            AppState::Finished => None,
        });
        let worker = self.worker.held_since().map(hold_end);
        let tick = self.tick_due_ns.filter(|_| self.apps_running());
        apps.chain(worker).chain(tick).chain(self.device.next_completion_ns()).min().map(|t| t.max(self.now_ns))
    }

    fn apps_running(&self) -> bool {
        self.apps.iter().any(|a| !matches!(a.state, AppState::Finished))
    }

    /// Completes the device commands done now; their issuers send what they held back.
    fn complete_device_commands(&mut self) {
        while self.device.next_completion_ns().is_some_and(|t| t <= self.now_ns) {
            for c in self.device.advance(self.now_ns) {
                self.on_completion(c);
            }
        }
    }

    fn on_completion(&mut self, c: Completion) {
        if self.worker.completed(c.id) {
            self.pump_worker();
            return;
        }
        let waiter = self.apps.iter_mut().position(|a| match &mut a.state {
            AppState::InCall(call) => call.chain.completed(c.id),
            _ => false,
        });
        if let Some(i) = waiter {
            self.pump_call(i);
        }
    }

    /// Ends the holds that are over: all of them once no foreground call is in flight, else those held
    /// for the aging bound.
    fn end_holds(&mut self) {
        let (now, aging) = (self.now_ns, self.rules.aging_ns);
        let in_flight = self.fg_in_flight > 0;
        let over = |since: u64| !in_flight || now >= since.saturating_add(aging);
        for i in 0..self.apps.len() {
            match &mut self.apps[i].state {
                AppState::Held { issued_ns, since_ns } if over(*since_ns) => {
                    let (issued_ns, since_ns) = (*issued_ns, *since_ns);
                    self.holds.admission.record(now - since_ns, in_flight);
                    self.perform_call(i, issued_ns);
                }
                AppState::InCall(call) => {
                    if let Some(since) = call.chain.held_since().filter(|s| over(*s)) {
                        call.chain.release();
                        self.holds.call_segments.record(now - since, in_flight);
                        self.pump_call(i);
                    }
                }
                _ => {}
            }
        }
        if let Some(since) = self.worker.held_since().filter(|s| over(*s)) {
            self.worker.release();
            self.holds.background_work.record(now - since, in_flight);
            self.pump_worker();
        }
    }

    /// Runs the engine's background thread now (checkpoints the policies ask for).
    fn tick(&mut self) {
        self.engine.tick();
        self.last_tick_ns = Some(self.now_ns);
        let segment = self.rules.hold_background.then_some(self.rules.segment_bytes);
        self.worker.push_batch(self.tap.take(), segment);
        self.pump_worker();
    }

    /// The next background deadline: `next_tick_in` from now. A second zero wait at one instant means the
    /// tick could not clear its work: the next tick waits for the next instant something else happens.
    fn schedule_tick(&mut self) {
        let wait = u64::try_from(self.engine.next_tick_in().as_nanos()).unwrap_or(u64::MAX);
        self.tick_due_ns = if wait == 0 && self.last_tick_ns == Some(self.now_ns) {
            None
        } else {
            Some(self.now_ns.saturating_add(wait))
        };
    }

    /// Issues the events due now, lowest app index first, until none is.
    fn issue_due_events(&mut self) {
        while let Some(i) = self.apps.iter().position(|a| matches!(a.state, AppState::Ready(at) if at <= self.now_ns)) {
            self.issue(i);
        }
    }

    /// App `i` issues its next event now.
    fn issue(&mut self, i: usize) {
        let now = self.now_ns;
        let app = &mut self.apps[i];
        app.issued(now);
        let Some(kind) = app.next_event().cloned() else {
            app.state = AppState::Finished;
            return;
        };
        if kind.is_file_op() {
            let background = self.engine.io_class(app.uid) == IoClass::Background;
            if background && self.rules.preempt && self.fg_in_flight > 0 {
                app.state = AppState::Held { issued_ns: now, since_ns: now };
            } else {
                self.perform_call(i, now);
            }
            return;
        }
        let uid = app.uid;
        match kind {
            EventKind::Foreground | EventKind::Launch => {
                self.engine.set_foreground_uid(Some(uid));
                self.foreground_uid = Some(uid);
            }
            EventKind::Background | EventKind::Exit if self.foreground_uid == Some(uid) => {
                self.engine.set_foreground_uid(None);
                self.foreground_uid = None;
            }
            EventKind::Input { .. } => self.engine.user_input(),
            EventKind::Battery { percent } => self.engine.set_battery(percent),
            _ => {}
        }
        self.apps[i].completed(now, now);
    }

    /// Performs app `i`'s next event (a file operation issued at `issued_ns`) on the engine now, then sends
    /// its device commands.
    fn perform_call(&mut self, i: usize, issued_ns: u64) {
        let app = &mut self.apps[i];
        let caller = app.caller();
        let class = self.engine.io_class(app.uid);
        let result = match app.next_event() {
            Some(kind) => {
                let _admitted = self.engine.admit(caller);
                ops::apply(&self.engine, &mut self.names, caller, kind)
            }
            None => Ok(()),
        };
        if let Err(errno) = result {
            app.refused(errno);
        }
        let mut chain = Chain::default();
        let gated = class == IoClass::Background && self.rules.preempt;
        chain.push_batch(self.tap.take(), gated.then_some(self.rules.segment_bytes));
        let foreground = class == IoClass::Foreground;
        self.fg_in_flight += u32::from(foreground);
        app.state = AppState::InCall(Call { issued_ns, foreground, chain });
        self.pump_call(i);
    }

    /// Sends what app `i`'s call may send now; completes the call if nothing is left.
    fn pump_call(&mut self, i: usize) {
        let now = self.now_ns;
        let in_flight = self.fg_in_flight > 0;
        let AppState::InCall(call) = &mut self.apps[i].state else { return };
        if call.chain.pump(now, &mut self.device, in_flight) != Progress::Done {
            return;
        }
        let (issued_ns, foreground) = (call.issued_ns, call.foreground);
        self.fg_in_flight -= u32::from(foreground);
        self.apps[i].completed(issued_ns, now);
    }

    fn pump_worker(&mut self) {
        self.worker.pump(self.now_ns, &mut self.device, self.fg_in_flight > 0);
    }
}
