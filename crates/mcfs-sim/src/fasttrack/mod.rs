//! FastTrack scenarios (seed 001, §2, §5) on traces: several apps' traces at once through the real engine,
//! over a flash device whose command scheduler is FIFO or class-aware (§4.5), in virtual time.
//!
//! The model. One `mcfs_core::Engine` runs over a `DeviceTap` (the files in a `MemBackend`) on a
//! `ManualClock`; every app replays its trace **closed loop**: it issues its next event when the previous
//! one completed plus the gap the trace shows between the two. An engine call itself takes no virtual time
//! (CPU time is not modelled); it is admitted with `Engine::admit` as the app's caller, so the engine
//! charges and classes its work as on a mount, and the device commands it made — tagged FG only with
//! `fasttrack.dispatch` on and FG work running (`tap`) — are then sent to the device scheduler in issue
//! order: up to each read or flush, the rest once that one completed. The call completes when its last
//! read or flush did (writes do not block, as in `SimBackend`). With `fasttrack.dispatch` the host side
//! of the device also lets FG commands in first (ID, §4.4: `Scheduler::with_host_dispatch`); the device
//! picks by the policy given (`fifo`, or `priority` for FastTrack's device scheduler, §4.5). The engine
//! start (recovery, the journal's opening) comes before virtual time zero and is not part of the run.
//! `foreground` and `launch` events make their app the foreground one (`Engine::set_foreground_uid`);
//! `background` or `exit` of that app leave none.
//! The engine's background thread runs at the deadlines `next_tick_in` names, as long as apps run; its
//! checkpoints' commands form one more issuer, which no app waits for.
//!
//! PA in the event loop. A foreground call is *in flight* from its issue to its completion — in virtual
//! time, while its reads and flushes are at the device. The engine's own gate cannot see that (no engine
//! call lasts beyond its instant, and a background thread blocked on a manual clock would never wake), so
//! the loop keeps the count and holds background work itself, with the engine's rules and bound:
//!
//! * with `fasttrack.preempt`, a background app's call issued while a foreground call is in flight is
//!   held before it runs (admission), and again between its device steps;
//! * with `fasttrack.preempt` or `.dispatch`, the background thread's checkpoints are held between their
//!   device steps;
//! * a step ends after each read or flush the issuer waited for and after every `checkpoint_segment_bytes`
//!   it wrote, as the engine yields before each fetch of a background read and between the segments of a
//!   checkpoint's apply; the first step of a call or of a checkpoint is never held there;
//! * a hold ends when no foreground call is in flight, or after `fasttrack.aging_ms` even if one still is,
//!   so background work always advances. System apps are never held and hold nobody.
//!
//! Not modelled: the engine's journal lock across virtual time (a foreground sync that needs a checkpoint
//! runs at once instead of waiting for a background one in progress), and CPU time, so the page-cache
//! lock contention of §3.2 shows only as the holds above.
//!
//! Invariant: the run is a pure function of its inputs — integers only, ties broken by app index and
//! command id — so the same scenario gives the same report, byte for byte.

mod apps;
mod chain;
mod event_loop;
mod namespace;
mod ops;
mod report;
mod tap;

pub use report::{AppReport, HoldStats, Holds, ScenarioReport};

use crate::text::op_name;
use crate::trace::TraceEvent;
use apps::AppRun;
use event_loop::{EventLoop, HoldRules};
use mcfs_core::{Caller, Config, Engine, ManualClock, MemBackend};
use mcfs_device::scheduler::{SchedPolicy, Scheduler};
use mcfs_device::DeviceProfile;
use namespace::Namespace;
use std::collections::BTreeSet;
use std::sync::Arc;
use tap::DeviceTap;

/// One app's trace: its name (unique in the scenario), its uid and its events in time order.
pub type AppTrace = (String, u32, Vec<TraceEvent>);

/// Runs `traces` together from an empty store (see the module comment).
pub fn run_scenario(
    traces: &[AppTrace],
    config: Config,
    profile: DeviceProfile,
    policy: SchedPolicy,
) -> Result<ScenarioReport, String> {
    run_scenario_after_setup(&[], traces, config, profile, policy)
}

/// Runs `setup` first — untimed, through an engine of its own that is shut down (committing everything) —
/// then `traces` on a fresh engine over the resulting store, so the run starts with a cold cache (what
/// the synthetic FastTrack workloads' `setup` traces are for). The error names the app and event that
/// failed in the setup, or the engine's start.
pub fn run_scenario_after_setup(
    setup: &[AppTrace],
    traces: &[AppTrace],
    config: Config,
    profile: DeviceProfile,
    policy: SchedPolicy,
) -> Result<ScenarioReport, String> {
    let mut names = BTreeSet::new();
    if let Some((dup, _, _)) = traces.iter().find(|(name, _, _)| !names.insert(name)) {
        return Err(format!("app \"{dup}\" has two traces in the scenario; name each app once"));
    }
    let store = prepared_store(setup, &config)?;
    let clock = Arc::new(ManualClock::new());
    let tap = Arc::new(DeviceTap::new(store, clock.clone(), config.fasttrack.dispatch));
    let engine = Engine::start(tap.clone(), clock.clone(), config.clone()).map_err(|e| format!("engine start: {e}"))?;
    // The mount (recovery, opening the journal) happens before the scenario: its I/O is not part of it.
    tap.take();
    let origin = traces.iter().filter_map(|(_, _, events)| events.first()).map(|e| e.time_ns).min().unwrap_or(0);
    let apps =
        traces.iter().map(|(name, uid, events)| AppRun::new(name.clone(), *uid, events.clone(), origin)).collect();
    let device = Scheduler::new(&profile, policy).with_host_dispatch(config.fasttrack.dispatch);
    let run = EventLoop::new(engine, clock, tap, device, apps, HoldRules::of(&config));
    Ok(run.run(profile.name, config.fasttrack))
}

/// The store the run starts from: what `setup` leaves after an orderly shutdown.
fn prepared_store(setup: &[AppTrace], config: &Config) -> Result<MemBackend, String> {
    if setup.is_empty() {
        return Ok(MemBackend::new());
    }
    let store = Arc::new(MemBackend::new());
    let engine = Engine::start(store.clone(), Arc::new(ManualClock::new()), config.clone())
        .map_err(|e| format!("setup engine start: {e}"))?;
    let mut names = Namespace::new();
    for (app, uid, events) in setup {
        for (k, event) in events.iter().enumerate() {
            let caller = Caller { uid: *uid, gid: *uid, pid: event.pid };
            ops::apply(&engine, &mut names, caller, &event.kind)
                .map_err(|e| format!("setup of app \"{app}\", event {k} ({}): {e}", op_name(&event.kind)))?;
        }
    }
    engine.shutdown().map_err(|e| format!("setup engine shutdown: {e}"))?;
    Ok(MemBackend::clone(&store))
}
