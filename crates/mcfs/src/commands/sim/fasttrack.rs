//! `mcfs sim --fasttrack FG_DIR [--bg DIR]... [--scheduler fifo|priority] [--warmup SECONDS]`: one point
//! of the FastTrack study in the simulator (`mcfs_sim::fasttrack`), on the very workloads the live study
//! replays — directories of `setup.trace` and `run.trace` from `mcfs trace synth --fasttrack`.
//!
//! The scenario is built the way experiments/fasttrack/run.sh runs it live: every app's setup first
//! (untimed, then a cold cache); the FG app as uid 10001 and the BG apps as 10002, 10003, ... in the
//! order given; BG apps start at once and repeat their run trace, the FG app starts after the warm-up
//! (only when there are BG apps). Like `mcfs trace replay`, which issues each operation as soon as the
//! previous one returned, the simulated apps get no think time: the traces' own gaps (the generator's
//! model of a phone's CPU) are dropped. BG apps must still be running when the FG app finishes, as the
//! live ones loop until stopped: the run is repeated with more passes of the BG traces until they are,
//! or until more passes no longer take more time (they hit the cache, so they no longer touch the device
//! and cannot change the FG app's time; `bg_covered` is then false).
//!
//! Invariant: the output is a pure function of the traces, the config, the device and the options (the
//! simulator is deterministic), and `--json` prints one line that starts with `{"fg_seconds":`.

use crate::commands::trace::files::TraceInput;
use crate::commands::trace::parse_seconds;
use crate::output::print;
use clap::Args;
use mcfs_core::Config;
use mcfs_device::scheduler::SchedPolicy;
use mcfs_device::DeviceProfile;
use mcfs_sim::fasttrack::{run_scenario_after_setup, AppTrace, ScenarioReport};
use mcfs_sim::TraceEvent;
use serde::Serialize;
use std::collections::BTreeSet;
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The FG app's uid; BG apps follow it (the live study's uids).
pub const FG_UID: u32 = 10_001;
/// Passes of each BG trace the first run tries, and the most any run may take.
const FIRST_PASSES: u64 = 2;
const MAX_PASSES: u64 = 512;

#[derive(Args, Debug)]
pub struct ScenarioArgs {
    /// A BG app's workload directory (setup.trace, run.trace); repeat for more BG apps.
    #[arg(long = "bg", value_name = "DIR", conflicts_with = "trace")]
    pub bg: Vec<PathBuf>,
    /// The device's command scheduler: `priority` (FG read > FG write > BG read > BG write, FastTrack
    /// §4.5) or `fifo` (a priority-unaware device); the default is flashdev's.
    #[arg(long, value_name = "POLICY", default_value = crate::cli::DEFAULT_SCHEDULER, conflicts_with = "trace",
          value_parser = crate::cli::parse_scheduler)]
    pub scheduler: SchedPolicy,
    /// Seconds the BG apps run before the FG app starts (with BG apps only).
    #[arg(long, value_name = "SECONDS", default_value = "2", conflicts_with = "trace", value_parser = parse_seconds)]
    pub warmup: Duration,
}

/// One app's workload: its name (from its traces), setup and run.
struct Workload {
    name: String,
    setup: Vec<TraceEvent>,
    run: Vec<TraceEvent>,
}

/// What `--json` prints.
#[derive(Serialize)]
struct PointJson<'a> {
    /// The FG app's response time: its first event's issue to its last completion, in seconds.
    fg_seconds: f64,
    fg_app: &'a str,
    bg_apps: Vec<&'a str>,
    /// Passes of each BG trace the reported run took.
    bg_passes: u64,
    /// Every BG app still ran when the FG app finished (false: a BG app's further passes took no device
    /// time, so repeating it more would not change the FG app's time).
    bg_covered: bool,
    warmup_ns: u64,
    report: &'a ScenarioReport,
}

pub fn run(
    fg_dir: &Path,
    args: &ScenarioArgs,
    config: Config,
    device: DeviceProfile,
    json: bool,
) -> Result<(), String> {
    let fg = load(fg_dir)?;
    let bgs: Vec<Workload> = args.bg.iter().map(|dir| load(dir)).collect::<Result<_, _>>()?;
    let mut names = BTreeSet::new();
    if let Some(dup) = std::iter::once(&fg).chain(&bgs).find(|w| !names.insert(w.name.as_str())) {
        return Err(format!("app \"{}\" is given twice; every app of a scenario needs its own workload", dup.name));
    }
    let setup: Vec<AppTrace> =
        std::iter::once(&fg).chain(&bgs).zip(FG_UID..).map(|(w, uid)| (w.name.clone(), uid, w.setup.clone())).collect();
    let warmup_ns = if bgs.is_empty() { 0 } else { u64::try_from(args.warmup.as_nanos()).unwrap_or(u64::MAX) };
    let mut passes = FIRST_PASSES;
    let mut last_bg_done = 0;
    loop {
        let mut apps: Vec<AppTrace> = vec![(fg.name.clone(), FG_UID, back_to_back(&fg.run, 1, warmup_ns))];
        apps.extend(
            bgs.iter().zip(FG_UID + 1..).map(|(w, uid)| (w.name.clone(), uid, back_to_back(&w.run, passes, 0))),
        );
        let report = run_scenario_after_setup(&setup, &apps, config.clone(), device.clone(), args.scheduler)?;
        let fg_done = report.apps.get(&fg.name).map_or(0, |a| a.last_done_ns);
        let bg_done = bgs.iter().filter_map(|w| report.apps.get(&w.name)).map(|a| a.last_done_ns).min();
        let point = Point { passes, covered: true };
        match bg_done {
            Some(bg_done) if bg_done < fg_done => {
                // More passes that took no more time do no more I/O (their data is cached): the FG app's
                // time would not change, so this run stands, marked as not covered.
                if bg_done <= last_bg_done || passes >= MAX_PASSES {
                    return output(&fg, &bgs, Point { covered: false, ..point }, warmup_ns, &report, json);
                }
                last_bg_done = bg_done;
                // Enough passes, with a margin, for the earliest-ending BG app to outlast the FG app.
                let wanted = passes.saturating_mul(fg_done).div_ceil(bg_done.max(1)).saturating_mul(5).div_ceil(4);
                passes = wanted.clamp(passes + 1, MAX_PASSES);
            }
            _ => return output(&fg, &bgs, point, warmup_ns, &report, json),
        }
    }
}

/// How the BG apps' traces were repeated in the reported run.
#[derive(Clone, Copy)]
struct Point {
    passes: u64,
    /// Every BG app was still running when the FG app finished.
    covered: bool,
}

/// `dir/setup.trace` and `dir/run.trace` (or `.bin`), named by the app of their events.
fn load(dir: &Path) -> Result<Workload, String> {
    let read = |name: &str| -> Result<Vec<TraceEvent>, String> {
        let text = dir.join(format!("{name}.trace"));
        let path = if text.exists() { text } else { dir.join(format!("{name}.bin")) };
        TraceInput::open(&path)?.collect()
    };
    let (setup, run) = (read("setup")?, read("run")?);
    let apps: BTreeSet<&str> = setup.iter().chain(&run).map(|e| &*e.app).collect();
    match apps.into_iter().collect::<Vec<_>>()[..] {
        [app] => Ok(Workload { name: app.to_string(), setup, run }),
        [] => Err(format!("{}: the workload's traces have no events", dir.display())),
        ref several => {
            Err(format!("{}: the workload's traces name several apps: {}", dir.display(), several.join(", ")))
        }
    }
}

/// `passes` copies of `events`, all at `at_ns`: closed loop without think time.
fn back_to_back(events: &[TraceEvent], passes: u64, at_ns: u64) -> Vec<TraceEvent> {
    let mut out = Vec::with_capacity(events.len().saturating_mul(usize::try_from(passes).unwrap_or(usize::MAX)));
    for _ in 0..passes {
        out.extend(events.iter().map(|e| TraceEvent { time_ns: at_ns, ..e.clone() }));
    }
    out
}

fn output(
    fg: &Workload,
    bgs: &[Workload],
    point: Point,
    warmup_ns: u64,
    report: &ScenarioReport,
    json: bool,
) -> Result<(), String> {
    let fg_report = report.apps.get(&fg.name).ok_or_else(|| format!("the FG app \"{}\" did not run", fg.name))?;
    let passes = point.passes;
    let point = PointJson {
        fg_seconds: fg_report.response_ns as f64 / 1e9,
        fg_app: &fg.name,
        bg_apps: bgs.iter().map(|w| w.name.as_str()).collect(),
        bg_passes: passes,
        bg_covered: point.covered,
        warmup_ns,
        report,
    };
    if json {
        let text = serde_json::to_string(&point).map_err(|e| format!("cannot print the scenario: {e}"))?;
        return print(&(text + "\n"));
    }
    let mut out = String::new();
    let _ = writeln!(out, "device {} ({}), FastTrack {:?}", report.profile, report.policy, report.fasttrack);
    let _ = writeln!(
        out,
        "FG  {:<20} uid {FG_UID}  response {:.3} s  p50 {:.3} ms  p99 {:.3} ms  refused {}",
        fg.name,
        point.fg_seconds,
        fg_report.latency.p50_ns as f64 / 1e6,
        fg_report.latency.p99_ns as f64 / 1e6,
        fg_report.refused.values().sum::<u64>()
    );
    for (w, uid) in bgs.iter().zip(FG_UID + 1..) {
        if let Some(a) = report.apps.get(&w.name) {
            let _ = writeln!(
                out,
                "BG  {:<20} uid {uid}  {passes} passes in {:.3} s  refused {}",
                w.name,
                a.response_ns as f64 / 1e9,
                a.refused.values().sum::<u64>()
            );
        }
    }
    let h = &report.holds;
    let _ = writeln!(
        out,
        "BG holds: admission {} ({:.3} s), call segments {} ({:.3} s), background work {} ({:.3} s)",
        h.admission.count,
        h.admission.held_ns as f64 / 1e9,
        h.call_segments.count,
        h.call_segments.held_ns as f64 / 1e9,
        h.background_work.count,
        h.background_work.held_ns as f64 / 1e9
    );
    print(&out)
}
