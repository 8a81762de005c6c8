//! The live mount and the simulator make the same checkpoint decisions for the same operations: a
//! synthetic app trace is replayed once through the simulator (`Replayer`: engine over the simulated
//! device, manual clock) and once through a real FUSE mount started with `--virtual-clock`, with
//! `mcfs ctl advance` moving the mount's clock to each event's time and the file operations made by
//! this process on the mount. Both run the MobiFS policies (TPL and the state-machine predictor), and
//! the engine's stats — VCTs closed and committed, checkpoints and their intervals, bytes written,
//! flushed and journaled, fsyncs, staleness, idle windows predicted and conflicts — must be equal.
//!
//! Writes are made page-aligned first. The kernel cuts an unaligned write at a partial page it does not
//! have cached (a 4104-byte write at offset 512 reaches the mount as 3584 + 520 bytes), while the
//! simulator hands the engine the app's write whole; TPL samples its e curve once per write, so the two
//! would sample different points. The simulator does not model the kernel's page cache (docs/DEVICE_MODEL.md
//! says so); aligned writes reach both engines as the same calls.
//!
//! The test process is root, so its operations belong to uid 0; the simulator gives the trace's app
//! uid 10000. The config names both one app, so both sides report it under the same name.

mod common;

use common::{ctl, stats, Daemon, Dirs};
use mcfs_core::Config;
use mcfs_sim::live_replay::LiveReplayer;
use mcfs_sim::replay::{ReplayOptions, Replayer, Timing};
use mcfs_sim::synth::{generate, SynthSpec};
use mcfs_sim::{EventKind, TraceEvent};
use serde_json::Value;
use std::time::Duration;

const CONFIG: &str = r#"
transaction_policy = "tpl"
idle_predictor = "state-machine"
max_stale_seconds = 5.0

[[apps]]
name = "app"
uids = [0, 10000]
"#;

/// Stats that may differ without a different decision: what the page cache holds (the kernel's reads
/// and read-ahead reach the mount's cache, not the simulator's), the mount's device estimate (the
/// simulator reports its device in its own metrics), the daemon's log counters, pid and log place,
/// how many requests were admitted and how many names were missing (the kernel adds lookups and
/// getattrs of its own).
const NOT_DECISIONS: &[&str] = &[
    "cache_clean_bytes",
    "cache_total_bytes",
    "device_estimate",
    "log",
    "daemon",
    "fuse",
    "missing_lookups",
    "timestamp_seconds",
];
const NOT_DECISIONS_OF_FASTTRACK: &[&str] = &["fg_requests", "bg_requests"];

fn trace(seed: u64) -> Vec<TraceEvent> {
    let spec = SynthSpec {
        app: "com.example.live".into(),
        io_profile: "fsync-moderate".into(),
        user_profile: "mixed".into(),
        seed,
        duration: Duration::from_secs(60),
    };
    generate(&spec).expect("synthetic trace").into_iter().map(page_aligned).collect()
}

/// The first trace from the test's seed on that makes the simulator decide
/// something worth comparing: more than two commits, and the predictor asked.
/// (Some 60 s traces commit only twice.) The same seed gives the same trace.
fn deciding_trace() -> (Vec<TraceEvent>, Value) {
    let seed = common::seed("live_and_simulated_mounts_decide_alike");
    for next in 0..20 {
        let events = trace(seed.wrapping_add(next));
        let sim = simulated(&events);
        let commits = sim["apps"]["app"]["vcts_committed"].as_u64().unwrap_or(0);
        if commits > 2 && sim["idle"]["predictions"].as_u64().unwrap_or(0) > 0 {
            return (events, sim);
        }
    }
    panic!("20 traces from seed {seed} on made too few decisions to compare");
}

const PAGE: u64 = 4096;

/// The write widened to whole pages; other events as they are.
fn page_aligned(mut event: TraceEvent) -> TraceEvent {
    if let EventKind::Write { offset, len, .. } = &mut event.kind {
        let end = (*offset + *len).div_ceil(PAGE) * PAGE;
        *offset -= *offset % PAGE;
        *len = end - *offset;
    }
    event
}

/// The engine's stats after the simulator replayed `events` (before its final shutdown checkpoint).
fn simulated(events: &[TraceEvent]) -> Value {
    let config = Config::from_toml(CONFIG).expect("config");
    // Open loop: the mount below is driven at the recorded times, and stats are read before `finish`.
    let options = ReplayOptions { config, timing: Timing::OpenLoop, ..ReplayOptions::default() };
    let mut replayer = Replayer::new(options).expect("replayer");
    for event in events {
        replayer.replay(event);
    }
    // As `mcfs stat --json` shows them (docs/STAT.md).
    let raw = serde_json::to_value(replayer.engine().stats()).expect("stats as JSON");
    mcfs_core::stats_doc::document(raw, std::time::SystemTime::now())
}

/// The same through a mount on a virtual clock.
fn live(dirs: &Dirs, events: &[TraceEvent]) -> Value {
    let daemon = Daemon::daemonised(dirs, &["--virtual-clock"]);
    let mut files = LiveReplayer::new(&dirs.mnt).expect("replay onto the mount");
    let mut now = events.first().map_or(0, |e| e.time_ns);
    for event in events {
        // Also by zero: work due now runs then, as the simulator runs it before each event.
        let seconds = format!("{:.9}", event.time_ns.saturating_sub(now) as f64 / 1e9);
        ctl(dirs, &["advance", &seconds]);
        now = now.max(event.time_ns);
        match event.kind {
            EventKind::Input { .. } => ctl(dirs, &["input"]),
            _ => files.apply(event),
        }
    }
    let report = files.finish();
    assert_eq!(report.skipped, 0, "every file operation reached the mount: {report:?}");
    let stats = stats(dirs);
    daemon.unmount();
    stats
}

#[test]
fn live_and_simulated_mounts_decide_alike() {
    let (events, mut sim) = deciding_trace();
    let dirs = Dirs::new(Some(CONFIG));
    let mut live = live(&dirs, &events);
    if let Ok(dir) = std::env::var("MCFS_DUMP_STATS") {
        std::fs::write(format!("{dir}/sim.json"), format!("{sim:#}")).expect("write sim.json");
        std::fs::write(format!("{dir}/live.json"), format!("{live:#}")).expect("write live.json");
    }
    for stats in [&mut sim, &mut live] {
        let top = stats.as_object_mut().expect("stats are an object");
        NOT_DECISIONS.iter().for_each(|key| drop(top.remove(*key)));
        let fasttrack = top.get_mut("fasttrack").and_then(|f| f.as_object_mut()).expect("fasttrack stats");
        NOT_DECISIONS_OF_FASTTRACK.iter().for_each(|key| drop(fasttrack.remove(*key)));
    }
    assert_eq!(sim, live, "simulator {sim:#}\nmount {live:#}");
}
