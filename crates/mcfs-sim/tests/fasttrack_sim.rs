//! FastTrack scenarios on hand-built traces, in virtual time: a background writer beside a foreground
//! reader, run with and without FastTrack and the class-aware device scheduler.

use mcfs_core::{AppConfig, Config, FastTrackConfig, SyncMode};
use mcfs_device::scheduler::SchedPolicy;
use mcfs_device::DeviceProfile;
use mcfs_sim::fasttrack::{run_scenario, run_scenario_after_setup, AppTrace, ScenarioReport};
use mcfs_sim::{EventKind, TraceEvent};

const KIB: u64 = 1024;
const MS: u64 = 1_000_000;

fn event(time_ns: u64, app: &str, kind: EventKind) -> TraceEvent {
    TraceEvent { time_ns, app: app.to_string().into(), pid: 1, kind }
}

fn path(s: &str) -> mcfs_sim::PathBytes {
    s.as_bytes().into()
}

/// The gallery's images, written once in the setup (so the run reads them from flash).
fn gallery_setup(images: u64, bytes: u64) -> AppTrace {
    let mut events = Vec::new();
    for i in 0..images {
        let p = path(&format!("/data/data/gallery/img{i}.jpg"));
        events.push(event(0, "gallery", EventKind::Create { path: p.clone() }));
        events.push(event(0, "gallery", EventKind::Write { path: p.clone(), offset: 0, len: bytes }));
        events.push(event(0, "gallery", EventKind::Close { path: p }));
    }
    ("gallery".to_string(), 10_001, events)
}

/// The gallery comes to the foreground at 20 ms and reads its images, 1 ms apart.
fn gallery_run(images: u64, bytes: u64) -> AppTrace {
    let mut t = 20 * MS;
    let mut events = vec![event(t, "gallery", EventKind::Foreground), event(t, "gallery", EventKind::Launch)];
    for i in 0..images {
        let p = path(&format!("/data/data/gallery/img{i}.jpg"));
        events.push(event(t, "gallery", EventKind::Open { path: p.clone() }));
        events.push(event(t, "gallery", EventKind::Read { path: p.clone(), offset: 0, len: bytes }));
        events.push(event(t, "gallery", EventKind::Close { path: p }));
        t += MS;
    }
    ("gallery".to_string(), 10_001, events)
}

/// An updater in the background from time 0: writes a package in 512 KiB pieces, each followed by an
/// fsync (the app is in sync mode, so every fsync is a checkpoint on the device).
fn updater(pieces: u64) -> AppTrace {
    let p = path("/data/data/update/pkg.apk");
    let mut events =
        vec![event(0, "update", EventKind::Background), event(0, "update", EventKind::Create { path: p.clone() })];
    for k in 0..pieces {
        let t = k * MS;
        events.push(event(t, "update", EventKind::Write { path: p.clone(), offset: k * 512 * KIB, len: 512 * KIB }));
        events.push(event(t, "update", EventKind::Fsync { path: p.clone() }));
    }
    ("update".to_string(), 10_002, events)
}

fn config(fasttrack: bool) -> Config {
    let switches =
        FastTrackConfig { preempt: fasttrack, reclaim: fasttrack, dispatch: fasttrack, ..FastTrackConfig::default() };
    let update = AppConfig {
        name: "update".into(),
        uids: vec![10_002],
        mode: Some(SyncMode::Sync),
        max_stale_bytes: None,
        max_stale_seconds: None,
    };
    Config { fasttrack: switches, apps: vec![update], ..Config::default() }
}

fn ufs() -> DeviceProfile {
    DeviceProfile::builtin("ufs").expect("built-in")
}

fn emmc() -> DeviceProfile {
    DeviceProfile::builtin("emmc").expect("built-in")
}

/// The gallery reading 8 images of 1 MiB beside the updater's 40 synced 512 KiB writes, on UFS (a command
/// queue of 32, so the device scheduler has a choice).
fn gallery_beside_updater(fasttrack: bool, policy: SchedPolicy) -> ScenarioReport {
    let setup = [gallery_setup(8, 1024 * KIB)];
    let traces = [updater(40), gallery_run(8, 1024 * KIB)];
    run_scenario_after_setup(&setup, &traces, config(fasttrack), ufs(), policy).expect("the scenario runs")
}

#[test]
fn the_foreground_reader_responds_sooner_with_fasttrack_and_the_priority_device() {
    let plain = gallery_beside_updater(false, SchedPolicy::Fifo);
    let fast = gallery_beside_updater(true, SchedPolicy::Priority);
    for r in [&plain, &fast] {
        for (app, events) in [("gallery", 26), ("update", 82)] {
            assert_eq!((r.apps[app].events, r.apps[app].refused.len()), (events, 0), "{app} ran every event");
        }
        assert_eq!(r.apps["gallery"].by_op["read"].count, 8);
    }
    let (slow, quick) = (plain.apps["gallery"].response_ns, fast.apps["gallery"].response_ns);
    eprintln!("gallery response: fifo without FastTrack {slow} ns, priority with FastTrack {quick} ns");
    assert!(quick < slow, "FastTrack + priority: {quick} ns, neither: {slow} ns");
    // Only with fasttrack.dispatch does the device see FG commands: the gallery's reads.
    assert_eq!(plain.device.foreground, Default::default());
    assert!(fast.device.foreground.read.commands >= 8);
    assert_eq!(fast.device.foreground.write.commands + fast.device.foreground.flush.commands, 0);
    // The updater still finished: background work is delayed, not starved.
    assert_eq!(fast.apps["update"].by_op["fsync"].count, 40);
}

/// A foreground app reads 1 MiB from flash at 0; a background app reads 4 KiB of its own at 1 ms, on eMMC
/// (no command queue: the device serves in arrival order, so only the holds reorder anything).
fn reader_and_late_background_read(preempt: bool, aging_ms: u64) -> ScenarioReport {
    let file = |app: &str, uid, len| {
        let p = path(&format!("/data/data/{app}/data"));
        let events = vec![
            event(0, app, EventKind::Create { path: p.clone() }),
            event(0, app, EventKind::Write { path: p.clone(), offset: 0, len }),
            event(0, app, EventKind::Close { path: p }),
        ];
        (app.to_string(), uid, events)
    };
    let setup = [file("fg", 10_001, 1024 * KIB), file("bg", 10_002, 4 * KIB)];
    let fg_path = path("/data/data/fg/data");
    let fg = vec![
        event(0, "fg", EventKind::Foreground),
        event(0, "fg", EventKind::Read { path: fg_path, offset: 0, len: 1024 * KIB }),
    ];
    let bg = vec![event(MS, "bg", EventKind::Read { path: path("/data/data/bg/data"), offset: 0, len: 4 * KIB })];
    let mut config = config(true);
    config.fasttrack.preempt = preempt;
    config.fasttrack.aging_ms = aging_ms;
    let traces = [("fg".to_string(), 10_001, fg), ("bg".to_string(), 10_002, bg)];
    run_scenario_after_setup(&setup, &traces, config, emmc(), SchedPolicy::Fifo).expect("the scenario runs")
}

#[test]
fn pa_holds_a_background_call_while_a_foreground_call_is_in_flight() {
    let bg_read = 50_000 + 47_315; // 4 KiB on eMMC
    let held = reader_and_late_background_read(true, 500);
    let fg = &held.device.foreground.read;
    let fg_done = held.apps["fg"].last_done_ns;
    assert_eq!(fg.total_wait_ns, 0, "the FG reads never waited");
    assert_eq!(fg_done, fg.total_response_ns, "the FG read took its service times only");
    assert!(fg_done > MS, "the FG read was still in flight when the BG read came");
    let h = held.holds.admission.clone();
    assert_eq!((h.count, h.aged, h.held_ns), (1, 0, fg_done - MS), "held from 1 ms to the FG completion");
    assert_eq!(held.apps["bg"].latency.max_ns, fg_done - MS + bg_read);

    let free = reader_and_late_background_read(false, 500);
    assert_eq!(free.holds.admission.count, 0);
    assert_eq!(free.apps["bg"].latency.max_ns, free.device.background.read.total_response_ns);
    assert_eq!(free.device.foreground.read.total_wait_ns, bg_read, "one FG read waited for the BG read");
    assert_eq!(free.apps["fg"].last_done_ns, fg_done + bg_read);
}

#[test]
fn the_aging_bound_ends_a_pa_hold() {
    let bg_read = 50_000 + 47_315;
    let aged = reader_and_late_background_read(true, 5);
    let h = aged.holds.admission.clone();
    assert_eq!((h.count, h.aged, h.held_ns), (1, 1, 5 * MS), "held 5 ms, then let through with the FG read in flight");
    assert!(aged.apps["fg"].last_done_ns > 6 * MS);
    assert_eq!(aged.device.foreground.read.total_wait_ns, bg_read, "one FG read waited for the BG read");
    let bg = &aged.device.background.read;
    assert_eq!(aged.apps["bg"].latency.max_ns, 5 * MS + bg.total_response_ns);
}

#[test]
fn apps_run_closed_loop() {
    // A cold 4 KiB read, then a close the trace shows 5 ms later: the close comes 5 ms after the read
    // completed, not at 5 ms.
    let p = path("/data/data/a/f");
    let setup = [(
        "a".to_string(),
        10_001,
        vec![
            event(0, "a", EventKind::Create { path: p.clone() }),
            event(0, "a", EventKind::Write { path: p.clone(), offset: 0, len: 4 * KIB }),
            event(0, "a", EventKind::Close { path: p.clone() }),
        ],
    )];
    let run = vec![
        event(7 * MS, "a", EventKind::Open { path: p.clone() }),
        event(7 * MS, "a", EventKind::Read { path: p.clone(), offset: 0, len: 4 * KIB }),
        event(12 * MS, "a", EventKind::Close { path: p }),
    ];
    let r =
        run_scenario_after_setup(&setup, &[("a".to_string(), 10_001, run)], config(true), emmc(), SchedPolicy::Fifo)
            .expect("runs");
    let a = &r.apps["a"];
    let read = 50_000 + 47_315;
    assert_eq!(a.by_op["read"].max_ns, read);
    assert_eq!((a.first_issue_ns, a.last_done_ns, a.response_ns), (0, read + 5 * MS, read + 5 * MS));
}

#[test]
fn the_same_scenario_gives_the_same_report() {
    let json = |r: &ScenarioReport| serde_json::to_string(r).expect("serializes");
    let (a, b) =
        (gallery_beside_updater(true, SchedPolicy::Priority), gallery_beside_updater(true, SchedPolicy::Priority));
    assert_eq!(json(&a), json(&b));
}

#[test]
fn refused_operations_are_counted_and_the_run_goes_on() {
    let events = vec![
        event(0, "a", EventKind::Read { path: path("/nowhere"), offset: 0, len: 10 }),
        event(0, "a", EventKind::Mkdir { path: path("/d") }),
        event(0, "a", EventKind::Mkdir { path: path("/d") }),
        event(0, "a", EventKind::Read { path: path("/a\0b"), offset: 0, len: 10 }),
    ];
    let r = run_scenario(&[("a".to_string(), 10_001, events.clone())], config(false), emmc(), SchedPolicy::Priority)
        .expect("runs");
    let refused: u64 = r.apps["a"].refused.values().sum();
    assert_eq!((r.apps["a"].events, refused), (4, 3), "{:?}", r.apps["a"].refused);
    let twice = [("a".to_string(), 10_001, events.clone()), ("a".to_string(), 10_002, events)];
    let err = run_scenario(&twice, config(false), emmc(), SchedPolicy::Fifo).expect_err("one name per app");
    assert!(err.contains("\"a\" has two traces"), "{err}");
}
