//! The replay core: drives the real `mcfs_core::Engine` with a trace, in virtual time, over a simulated
//! device.
//!
//! The engine runs over a `SimBackend` (files in memory, a device model in virtual time) and a
//! `ManualClock`. The first event's time is virtual time zero; before each event the clock moves to the
//! event's time, stopping at every deadline `next_tick_in` gives on the way to run `tick` there, so
//! background checkpoints happen at the virtual times a live mount's background thread would run them.
//! Background work does not move the clock (on a phone it runs beside the apps) but it occupies the
//! device, so an app call that needs the device behind it waits. Each event is one timed call: what it
//! waited for the device is its latency (CPU time is not modelled), recorded per app; the trace's own
//! times are kept (open loop), so a stall delays no later event. Invariants: the clock never goes back
//! (an event stamped earlier than the one before it runs at the current time and is counted), and no
//! trace content makes the replay panic: an operation the replay cannot map (unknown path) or that the
//! engine refuses is skipped and counted by kind and reason.

mod closed_loop;
mod latency;
mod metrics;
mod ops;
mod options;
mod paths;
mod prediction;
mod risk;
mod waits;

pub(crate) use latency::LatencyHistogram;
pub use latency::LatencySummary;
pub use metrics::{AppMetrics, Metrics};
pub use options::{ReplayOptions, Timing};
pub use prediction::COMPARED_PREDICTORS;
pub use risk::BytesAtRisk;

use crate::device::SimBackend;
use crate::error::TraceError;
use crate::text::{format_event, op_index, op_name, OP_NAMES};
use crate::trace::{EventKind, TraceEvent};
use closed_loop::ClosedLoop;
use mcfs_core::{Caller, Clock, Config, Engine, Errno, InoHasher, ManualClock};
use paths::PathTable;
use prediction::InputTimes;
use risk::RiskTracker;
use std::collections::HashMap;
use std::fmt;
use std::hash::BuildHasherDefault;
use std::sync::Arc;
use std::time::Duration;
use waits::Waits;

/// The first app seen gets this uid, the next one more, and so on (Android's first app uid).
pub const FIRST_APP_UID: u32 = 10_000;
/// Longest single read or write replayed. Apps do not issue longer ones; refusing them keeps one corrupt
/// length in a trace from stalling the replay for hours.
pub const MAX_REQUEST_BYTES: u64 = 64 << 20;
/// Largest file size; the kernel refuses to go past it before a file system sees the call (Linux's
/// `MAX_LFS_FILESIZE`).
const MAX_FILE_SIZE: u64 = i64::MAX as u64;

/// The replayer's maps looked up on every event by keys it makes itself (uids): hashed eight
/// bytes a step, not with SipHash; none is iterated where order shows. Trace paths and app names are names
/// apps chose, so their maps keep SipHash (with `InoHasher` colliding names are easy to craft).
type Fast = BuildHasherDefault<InoHasher>;

/// Why a replay stopped.
#[derive(Debug)]
pub enum ReplayError {
    /// The options are unusable.
    Options(String),
    /// The trace could not be read.
    Trace(TraceError),
    /// The engine could not start or could not shut down cleanly.
    Engine(String),
}

impl fmt::Display for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplayError::Options(e) => write!(f, "replay options: {e}"),
            ReplayError::Trace(e) => write!(f, "reading the trace: {e}"),
            ReplayError::Engine(e) => write!(f, "engine: {e}"),
        }
    }
}

impl std::error::Error for ReplayError {}

/// Why one event was not replayed.
enum Skip {
    UnknownPath,
    Refused(Errno),
}

impl From<Errno> for Skip {
    fn from(e: Errno) -> Skip {
        Skip::Refused(e)
    }
}

pub struct Replayer {
    /// Shared so an admission can live while the replayer changes its own tables.
    engine: Arc<Engine>,
    clock: Arc<ManualClock>,
    backend: Arc<SimBackend>,
    config: Config,
    /// Trace time of the first event (virtual time zero).
    origin_ns: Option<u64>,
    /// Virtual time since the first event.
    now_ns: u64,
    /// Latest recorded time read, relative to the first event's.
    horizon_ns: u64,
    timing: Timing,
    /// Events waiting for their closed-loop issue time.
    closed: ClosedLoop,
    paths: PathTable,
    uids: HashMap<String, u32>,
    /// The app of the last event and its uid (0 before the first; apps get `FIRST_APP_UID` on): consecutive
    /// events mostly come from one app, whose name is then compared, not hashed.
    last_app: (Arc<str>, u32),
    waits: Waits,
    /// Events replayed by kind (`op_index`), into `metrics.replayed_by_kind` at the end.
    replayed_by_kind: [u64; OP_NAMES.len()],
    risk: RiskTracker,
    /// User inputs, for the predictor comparison.
    inputs: InputTimes,
    metrics: Metrics,
}

impl Replayer {
    pub fn new(options: ReplayOptions) -> Result<Replayer, ReplayError> {
        let sample_every_ns = u64::try_from(options.sample_every.as_nanos()).unwrap_or(u64::MAX);
        if sample_every_ns == 0 {
            return Err(ReplayError::Options("sample_every must be longer than zero".into()));
        }
        let clock = Arc::new(ManualClock::new());
        let backend = Arc::new(if options.keep_data {
            SimBackend::new(options.device, clock.clone())
        } else {
            SimBackend::dataless(options.device, clock.clone())
        });
        let config = options.config;
        let engine = Engine::start(backend.clone(), clock.clone(), config.clone()).map_err(ReplayError::Engine)?;
        Ok(Replayer {
            engine: Arc::new(engine),
            clock,
            backend,
            config,
            origin_ns: None,
            now_ns: 0,
            horizon_ns: 0,
            timing: options.timing,
            closed: ClosedLoop::default(),
            paths: PathTable::new(),
            uids: HashMap::default(),
            last_app: ("".into(), 0),
            waits: Waits::default(),
            replayed_by_kind: [0; OP_NAMES.len()],
            risk: RiskTracker::new(sample_every_ns),
            inputs: InputTimes::default(),
            metrics: Metrics::default(),
        })
    }

    /// Replays a whole trace and shuts the engine down; stops at the first unreadable event.
    pub fn run<I>(options: ReplayOptions, events: I) -> Result<Metrics, ReplayError>
    where
        I: IntoIterator<Item = Result<TraceEvent, TraceError>>,
    {
        let mut replayer = Replayer::new(options)?;
        for event in events {
            replayer.push(event.map_err(ReplayError::Trace)?);
        }
        replayer.finish()
    }

    /// Takes the next event of the trace. Open loop replays it now, at its recorded time; closed loop
    /// replays it (and others waiting) once its issue time is known and nothing unread can come first, so
    /// what the engine shows between calls may lag the trace read so far (`finish` replays the rest).
    pub fn push(&mut self, event: TraceEvent) {
        let recorded_ns = self.recorded_ns(&event);
        match self.timing {
            Timing::OpenLoop => {
                self.run_event(&event, recorded_ns);
            }
            Timing::ClosedLoop => {
                self.closed.push(event, recorded_ns);
                self.run_due(false);
            }
        }
    }

    /// `push` for a borrowed event (closed loop keeps a copy until it runs).
    pub fn replay(&mut self, event: &TraceEvent) {
        match self.timing {
            Timing::OpenLoop => {
                let recorded_ns = self.recorded_ns(event);
                self.run_event(event, recorded_ns);
            }
            Timing::ClosedLoop => self.push(event.clone()),
        }
    }

    /// The event's recorded time relative to the first event's; counts it if the trace went back.
    fn recorded_ns(&mut self, event: &TraceEvent) -> u64 {
        let origin = *self.origin_ns.get_or_insert(event.time_ns);
        let at = event.time_ns.saturating_sub(origin);
        if event.time_ns < origin || at < self.horizon_ns {
            self.metrics.out_of_order_events += 1;
        }
        self.horizon_ns = self.horizon_ns.max(at);
        at
    }

    /// Runs the closed-loop events that are due (all of them at the `end`).
    fn run_due(&mut self, end: bool) {
        while let Some(due) = self.closed.next_due(end) {
            let done_ns = self.run_event(&due.event, due.issue_ns);
            self.closed.completed(due.process, done_ns);
        }
    }

    /// Replays one event at virtual time `at_ns` (or now, if that has passed), running the background
    /// ticks due before it; returns when the call completed.
    fn run_event(&mut self, event: &TraceEvent, at_ns: u64) -> u64 {
        self.advance_to(at_ns.max(self.now_ns));
        if matches!(event.kind, EventKind::Input { .. }) {
            self.inputs.record(self.now_ns);
        }
        let caller = self.caller_of(event);
        self.backend.begin_call();
        let result = self.apply(event, caller);
        let cost = self.backend.end_call();
        let fsync = matches!(event.kind, EventKind::Fsync { .. } | EventKind::Fdatasync { .. });
        self.waits.record(caller.uid, cost.latency_ns, fsync && result.is_ok());
        self.observe_risk();
        let done_ns = self.now_ns.saturating_add(cost.latency_ns);
        match result {
            Ok(()) => {
                self.metrics.events_replayed += 1;
                self.replayed_by_kind[op_index(&event.kind)] += 1;
            }
            Err(skip) => {
                self.metrics.events_skipped += 1;
                *self.metrics.skipped_by_kind.entry(op_name(&event.kind)).or_default() += 1;
                let reason = match skip {
                    Skip::UnknownPath => "unknown path".to_string(),
                    Skip::Refused(e) => e.to_string(),
                };
                self.metrics.skip_examples.entry(reason.clone()).or_insert_with(|| {
                    let mut line = Vec::new();
                    format_event(event, &mut line);
                    String::from_utf8_lossy(&line).trim_end().to_string()
                });
                *self.metrics.skip_reasons.entry(reason).or_default() += 1;
            }
        }
        done_ns
    }

    /// The engine being driven, to look at between events.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The simulated backing store and device, to look at between events.
    pub fn backend(&self) -> &SimBackend {
        &self.backend
    }

    /// Shuts the engine down (committing everything) and reports.
    pub fn finish(mut self) -> Result<Metrics, ReplayError> {
        self.run_due(true);
        let during = self.engine.stats();
        self.metrics.checkpoints_before_shutdown = during.checkpoints;
        let m = &mut self.metrics;
        let replayed = OP_NAMES.into_iter().zip(self.replayed_by_kind).filter(|(_, n)| *n > 0);
        m.replayed_by_kind.extend(replayed);
        m.bytes_at_risk = self.risk.finish(self.now_ns);
        self.engine.shutdown().map_err(|e| ReplayError::Engine(format!("shutdown failed: {e}")))?;
        let stats = self.engine.stats();
        m.take_engine_stats(&stats);
        m.virtual_ns = self.now_ns;
        m.trace_ns = self.horizon_ns;
        m.timing = self.timing;
        (m.fsync_latency, m.stall_ns) = self.waits.of(None);
        m.device = self.backend.report();
        m.prediction = self.inputs.scores();
        let mut delays: HashMap<&str, u64> = HashMap::new();
        for (app, delay_ns) in self.closed.delays() {
            let d = delays.entry(app).or_default();
            *d = (*d).max(delay_ns);
        }
        for (app, uid) in &self.uids {
            let engine_app = self.config.app_name_of(*uid);
            let waits = self.waits.of(Some(*uid));
            let mut per_app = AppMetrics::new(
                *uid,
                engine_app.clone(),
                stats.apps.get(&engine_app),
                during.apps.get(&engine_app),
                waits,
            );
            per_app.delay_ns = delays.get(app.as_str()).copied().unwrap_or(0);
            m.apps.insert(app.clone(), per_app);
        }
        Ok(self.metrics)
    }

    /// Moves virtual time to `target_ns`, ticking at every engine deadline up to and including it.
    fn advance_to(&mut self, target_ns: u64) {
        let by = Duration::from_nanos(target_ns.saturating_sub(self.now_ns));
        let Replayer { engine, clock, backend, risk, metrics, now_ns, .. } = self;
        let start = clock.now();
        mcfs_core::virtual_time::advance(engine, clock, by, || {
            // Background work: it occupies the device, but no app waits for it.
            backend.begin_call();
            engine.tick();
            backend.end_call();
            metrics.ticks += 1;
            let at =
                *now_ns + u64::try_from(clock.now().duration_since(start).unwrap_or_default().as_nanos()).unwrap_or(0);
            risk.observe(at, engine.bytes_at_risk());
        });
        self.now_ns = self.now_ns.max(target_ns);
    }

    /// Reports the bytes at risk now to the tracker.
    fn observe_risk(&mut self) {
        self.risk.observe(self.now_ns, self.engine.bytes_at_risk());
    }

    fn caller_of(&mut self, event: &TraceEvent) -> Caller {
        let uid = match &self.last_app {
            (app, uid) if *app == event.app && *uid != 0 => *uid,
            _ => {
                let uid = self.uid_of(&event.app);
                self.last_app.0 = event.app.clone();
                self.last_app.1 = uid;
                uid
            }
        };
        Caller { uid, gid: uid, pid: event.pid }
    }

    fn uid_of(&mut self, app: &str) -> u32 {
        // Looked up before inserting: the app's name is copied once, not per event.
        match self.uids.get(app) {
            Some(uid) => *uid,
            None => {
                let next = FIRST_APP_UID.saturating_add(self.uids.len() as u32);
                self.uids.insert(app.to_owned(), next);
                next
            }
        }
    }
}
