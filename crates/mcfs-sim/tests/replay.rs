//! The replay core against hand-built traces: background checkpoints at the staleness deadlines, data
//! reaching the backing store, skipped operations counted, byte-equal metrics across runs, and no panic on
//! arbitrary traces.

mod common;

use mcfs_core::Config;
use mcfs_sim::replay::{Metrics, ReplayOptions, Replayer, FIRST_APP_UID};
use mcfs_sim::text::TextReader;
use mcfs_sim::TraceEvent;

/// Two apps over 60 s, with gaps longer than a 10 s staleness bound (expected commits in the comments).
const TRACE: &str = "\
mcfs-trace 1
0.0   com.a 100 launch
0.5   com.a 100 create /data/a/db            # a's VCT opens: deadline 10.5
1.0   com.a 100 write  /data/a/db 0 8192
1.1   com.a 100 fsync  /data/a/db
1.2   com.a 100 close  /data/a/db
15.0  com.a 100 write  /data/a/db 8192 4096  # after a's 1st commit; deadline 25
16.0  com.b 200 create /sdcard/b/log         # b's deadline 26
16.5  com.b 200 write  /sdcard/b/log 0 4096
20.0  -     0   tap    0.08
30.0  com.a 100 rename /data/a/db /data/a/db.old   # after a's 2nd, b's 1st; deadline 40
45.0  com.b 200 write  /sdcard/b/log 4096 4096     # after a's 3rd; deadline 55
60.0  com.a 100 write  /data/a/missing 0 10        # b's 2nd before; unknown path: skipped
60.0  -     0   battery 50
";

fn events(text: &str) -> Vec<TraceEvent> {
    TextReader::new(text.as_bytes()).collect::<Result<_, _>>().expect("test trace parses")
}

fn config(max_stale_seconds: f64) -> Config {
    Config { max_stale_seconds, ..Config::default() }
}

fn options(config: Config) -> ReplayOptions {
    ReplayOptions { config, ..ReplayOptions::default() }
}

fn replay(text: &str, config: Config) -> Metrics {
    Replayer::run(options(config), events(text).into_iter().map(Ok)).expect("replay succeeds")
}

#[test]
fn checkpoints_follow_the_staleness_bound() {
    let m = replay(TRACE, config(10.0));
    // a commits at 10.5, 25 and 40, b at 26 and 55 (b's at 26 may ride along with a's at 25).
    assert!(m.checkpoints_before_shutdown >= 4, "{m:#?}");
    assert_eq!(m.apps["com.a"].checkpoints, 3, "{m:#?}");
    assert_eq!(m.apps["com.b"].checkpoints, 2, "{m:#?}");
    assert!(m.bytes_flushed >= 8192 + 4096 + 4096 + 4096, "{m:#?}");
    assert!(m.journal_bytes > 0 && m.journal_bytes <= m.bytes_flushed, "{m:#?}");
    assert_eq!(m.checkpoints, m.checkpoints_before_shutdown, "nothing was left for shutdown: {m:#?}");
    assert_eq!(m.bytes_written, 8192 + 4096 + 4096 + 4096);
    assert_eq!(m.fsync_absorbed, 1, "memory mode absorbs the fsync");
    assert_eq!(m.virtual_ns, 60_000_000_000);

    // With a 120 s bound no deadline falls within the 60 s trace: fewer commits (b's first write in the
    // root directory a wrote to still closes a's VCT), and shutdown commits the rest.
    let lazy = replay(TRACE, config(120.0));
    assert!(lazy.checkpoints_before_shutdown < m.checkpoints_before_shutdown, "{lazy:#?}");
    assert!(lazy.checkpoints > lazy.checkpoints_before_shutdown, "{lazy:#?}");
    assert_eq!(lazy.bytes_written, m.bytes_written);
}

#[test]
fn a_background_checkpoint_runs_at_its_deadline_not_before() {
    let mut r = Replayer::new(options(config(10.0))).expect("engine starts");
    let trace = events(
        "mcfs-trace 1\n\
         0.0 app 1 create /f\n\
         0.0 app 1 write /f 0 4096\n\
         9.999999999 app 1 launch\n\
         10.0 app 1 launch\n",
    );
    let mut after_each = Vec::new();
    for event in &trace {
        r.replay(event);
        after_each.push(r.engine().stats().checkpoints);
    }
    assert_eq!(after_each, [0, 0, 0, 1]);
    let m = r.finish().expect("shutdown");
    assert_eq!(m.apps["app"].checkpoints, 1, "shutdown found nothing left: {m:#?}");
}

#[test]
fn unresolvable_and_refused_operations_are_skipped_and_counted() {
    let m = replay(TRACE, config(10.0));
    assert_eq!(m.events_skipped, 1, "{m:#?}");
    assert_eq!(m.skipped_by_kind.get("write"), Some(&1));
    assert_eq!(m.skip_reasons.get("unknown path"), Some(&1));
    assert_eq!(m.events_replayed, 12);
    assert_eq!(m.replayed_by_kind.get("write"), Some(&4));
    assert_eq!((m.replayed_by_kind.get("tap"), m.replayed_by_kind.get("battery")), (Some(&1), Some(&1)));

    let m = replay(
        "mcfs-trace 1\n\
         0 app 1 mkdir /d\n\
         1 app 1 mkdir /d\n\
         2 app 1 create /d/f\n\
         3 app 1 rmdir /d\n\
         4 app 1 unlink /d/f\n\
         5 app 1 read /d/f 0 10\n\
         6 app 1 rename /nowhere /x\n\
         7 app 1 create /with\\x00nul\n\
         8 app 1 open /d\n\
         9 app 1 create /d\n",
        Config::default(),
    );
    assert_eq!(m.events_replayed, 4, "{m:#?}");
    assert_eq!(m.skipped_by_kind.get("mkdir"), Some(&1), "mkdir of an existing directory");
    assert_eq!(m.skipped_by_kind.get("rmdir"), Some(&1), "rmdir of a non-empty directory");
    assert_eq!(m.skip_reasons.get("unknown path"), Some(&2), "read after unlink, rename of nothing: {m:#?}");
    assert_eq!(m.skipped_by_kind.get("create"), Some(&2), "a path with a NUL byte, a directory: {m:#?}");
}

#[test]
fn parents_are_made_on_demand_and_renamed_directories_keep_their_files() {
    let m = replay(
        "mcfs-trace 1\n\
         0 app 1 create /a/b/c/file\n\
         1 app 1 rename /a/b /a/moved\n\
         2 app 1 write /a/moved/c/file 0 100\n\
         3 app 1 write /a/b/c/file 0 100\n\
         4 app 1 unlink /a/moved/c/file\n\
         5 app 1 rmdir /a/moved/c\n",
        Config::default(),
    );
    assert_eq!(m.events_replayed, 5, "{m:#?}");
    assert_eq!(m.skip_reasons.get("unknown path"), Some(&1), "the old path is gone: {m:#?}");
    assert_eq!(m.bytes_written, 100);
}

#[test]
fn apps_get_uids_in_order_of_appearance() {
    let m = replay("mcfs-trace 1\n0 zeta 1 launch\n1 alpha 2 launch\n2 zeta 1 create /z\n", Config::default());
    assert_eq!(m.apps["zeta"].uid, FIRST_APP_UID);
    assert_eq!(m.apps["alpha"].uid, FIRST_APP_UID + 1);
    assert_eq!(m.apps["zeta"].engine_app, format!("uid:{FIRST_APP_UID}"));
}

#[test]
fn each_event_is_charged_to_its_own_app_as_apps_alternate() {
    // Runs of one app and single events in turns: the uid of the previous event must not stick.
    let m = replay(
        "mcfs-trace 1\n0 zeta 1 create /z\n1 zeta 1 write /z 0 1\n2 alpha 2 create /a\n3 alpha 2 write /a 0 20\n\
         4 zeta 1 write /z 1 300\n5 alpha 2 write /a 20 4000\n6 zeta 1 write /z 301 50000\n",
        Config::default(),
    );
    assert_eq!((m.apps["zeta"].uid, m.apps["alpha"].uid), (FIRST_APP_UID, FIRST_APP_UID + 1));
    assert_eq!((m.apps["zeta"].bytes_written, m.apps["alpha"].bytes_written), (50_301, 4_020), "{m:#?}");
}

#[test]
fn same_trace_and_config_give_byte_equal_metrics() {
    let json = || serde_json::to_string(&replay(TRACE, config(10.0))).expect("metrics serialize");
    let first = json();
    assert_eq!(first, json());
    assert!(first.contains("\"com.b\":{\"uid\":10001"), "{first}");
}

#[test]
fn arbitrary_traces_replay_without_panicking_and_deterministically() {
    let mut rng = common::seeded_rng("arbitrary_traces_replay_without_panicking_and_deterministically");
    for _ in 0..20 {
        let trace = common::random_trace(&mut rng, 60);
        let run = || Replayer::run(options(config(10.0)), trace.iter().cloned().map(Ok)).expect("replay succeeds");
        let m = run();
        assert_eq!(m.events_replayed + m.events_skipped, trace.len() as u64);
        assert_eq!(serde_json::to_string(&m).unwrap(), serde_json::to_string(&run()).unwrap());
    }
}

#[test]
fn a_trace_read_error_stops_the_replay_with_its_line() {
    let text = "mcfs-trace 1\n0 app 1 launch\n1 app 1 frobnicate /x\n";
    let err = Replayer::run(ReplayOptions::default(), TextReader::new(text.as_bytes())).expect_err("bad line");
    assert!(err.to_string().contains("line 3"), "{err}");
}
