//! What a replay reports for the MobiFS study: the three idle predictors scored on the trace's user
//! inputs (Figures 8 and 9), the same on every run and the same as scoring the inputs directly; and each
//! app's checkpoint intervals (Figure 6), without shutdown's final checkpoint.

use mcfs_core::policy::interval;
use mcfs_core::policy::prediction_score::evaluate;
use mcfs_core::Config;
use mcfs_sim::replay::{Metrics, ReplayOptions, Replayer, COMPARED_PREDICTORS};
use mcfs_sim::{EventKind, InputKind, TraceEvent};
use std::time::{Duration, UNIX_EPOCH};

const NS_PER_MS: u64 = 1_000_000;

fn event(ms: u64, app: &str, kind: EventKind) -> TraceEvent {
    TraceEvent { time_ns: 5_000 * NS_PER_MS + ms * NS_PER_MS, app: app.to_string().into(), pid: 1, kind }
}

fn tap(ms: u64) -> TraceEvent {
    event(ms, "-", EventKind::Input { input: InputKind::Tap, duration_ns: 80 * NS_PER_MS })
}

fn write(ms: u64, offset: u64) -> TraceEvent {
    event(ms, "com.app", EventKind::Write { path: b"/data/app/db"[..].into(), offset, len: 4096 })
}

/// Runs of quick taps and long pauses, with an app writing after some of them; returns the trace and
/// the tap times relative to its first event, in ms.
fn user_trace() -> (Vec<TraceEvent>, Vec<u64>) {
    let mut trace = vec![event(0, "com.app", EventKind::Create { path: b"/data/app/db"[..].into() })];
    let mut taps = Vec::new();
    let mut at = 1_000;
    for run in 0..8u64 {
        for i in 0..5u64 {
            taps.push(at);
            trace.push(tap(at));
            trace.push(write(at + 30, (run * 5 + i) % 7 * 4096));
            at += 300 + 200 * ((run + i) % 3);
        }
        at += 6_000 + 4_000 * (run % 4);
    }
    (trace, taps)
}

fn replay(trace: &[TraceEvent], config: Config) -> Metrics {
    let options = ReplayOptions { config, ..ReplayOptions::default() };
    Replayer::run(options, trace.iter().cloned().map(Ok)).expect("replay succeeds")
}

#[test]
fn a_replay_scores_the_three_predictors_on_its_inputs_deterministically() {
    let (trace, taps) = user_trace();
    let config = Config { idle_predictor: "state-machine".into(), ..Config::default() };
    let m = replay(&trace, config.clone());
    assert_eq!(m.prediction.len(), 3, "{:?}", m.prediction);
    let times: Vec<_> = taps.iter().map(|ms| UNIX_EPOCH + Duration::from_millis(*ms)).collect();
    for name in COMPARED_PREDICTORS {
        let score = m.prediction[name];
        assert_eq!(score.operations, taps.len() as u64, "{name}: {score:?}");
        assert!(score.predictions > 0, "{name}: {score:?}");
        let direct = evaluate(interval::by_name(name).expect("registered"), &times, Duration::from_millis(100));
        assert_eq!(score, direct, "{name}: the replay scores the inputs at their trace times");
    }
    let (lmm, lam) = (m.prediction["last-min"], m.prediction["last-average"]);
    assert!(lmm.mean_predicted_seconds() < lam.mean_predicted_seconds(), "{lmm:?} vs {lam:?}");
    let json = |m: &Metrics| serde_json::to_string(m).expect("metrics serialize");
    assert_eq!(json(&m), json(&replay(&trace, config)), "same trace, same metrics");
    // The comparison does not depend on the predictor the engine runs.
    assert_eq!(replay(&trace, Config::default()).prediction, m.prediction);
}

#[test]
fn a_trace_without_inputs_scores_nothing() {
    let m = replay(&[event(0, "com.app", EventKind::Create { path: b"/x"[..].into() })], Config::default());
    assert!(m.prediction.values().all(|s| s.operations == 0 && s.predictions == 0), "{:?}", m.prediction);
}

#[test]
fn checkpoint_intervals_leave_out_the_final_checkpoint_of_shutdown() {
    // Writes every 2 s for 30 s under a 10 s bound: commits about every 10 to 12 s. Then one write at
    // 95 s, committed only by shutdown at 96 s: an interval of about 55 s that must not count.
    let mut trace = vec![event(0, "com.app", EventKind::Create { path: b"/data/app/db"[..].into() })];
    trace.extend((0..16).map(|i| write(i * 2_000, i % 3 * 4096)));
    trace.push(write(95_000, 0));
    trace.push(tap(96_000));
    let m = replay(&trace, Config { max_stale_seconds: 10.0, ..Config::default() });
    let app = &m.apps["com.app"];
    assert!(app.checkpoint_intervals >= 2, "{app:#?}");
    let s = 1_000_000_000;
    assert!((10 * s..=12 * s).contains(&app.checkpoint_interval_mean_ns), "{app:#?}");
    assert!(app.checkpoint_interval_max_ns <= 12 * s, "shutdown's checkpoint counted: {app:#?}");
    assert!(app.checkpoints > app.checkpoint_intervals + 1, "shutdown committed the last write: {app:#?}");
}
