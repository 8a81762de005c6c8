//! The data-less store (`SimBackend::dataless`, the replay's default) against the store that keeps every
//! byte: on every trace of the synthetic suite, with the default policies and with the MobiFS ones, closed
//! and open loop, the engine decides the same — every field of the metrics (VCTs, checkpoints and their
//! intervals, bytes written, flushed and journaled, fsyncs and their latencies, bytes at risk, prediction
//! scores, device requests and energy) is equal. The same holds on recorded traces of real programs: the
//! strace logs of `tests/fixtures` and the recordings of `tests/fixtures/recorded` (the real-trace study's
//! programs, `experiments/realtrace/programs.sh NAME DIR 20 1 LOG`, imported with
//! `mcfs trace import --format strace --app NAME --path-prefix DIR`: SQLite in rollback and in WAL mode,
//! git clone, edit-commit cycles and gc).

use mcfs_core::{Backend, Config, SyncMode};
use mcfs_sim::binary::BinaryReader;
use mcfs_sim::import::strace::{StraceImporter, StraceOptions};
use mcfs_sim::replay::{Metrics, ReplayOptions, Replayer, Timing};
use mcfs_sim::synth;
use mcfs_sim::TraceEvent;
use serde_json::Value;

/// The configurations compared: the defaults and the MobiFS policies closed loop, sync mode open loop.
fn runs() -> [(&'static str, Config, Timing); 3] {
    let mobifs =
        Config { transaction_policy: "tpl".into(), idle_predictor: "state-machine".into(), ..Config::default() };
    let sync = Config { mode: SyncMode::Sync, ..Config::default() };
    [
        ("default", Config::default(), Timing::ClosedLoop),
        ("mobifs", mobifs, Timing::ClosedLoop),
        ("sync", sync, Timing::OpenLoop),
    ]
}

/// Replays `events` with and without data under every configuration of `runs`: the metrics agree field by
/// field and the device saw writes.
fn assert_same_decisions(name: &str, events: &[TraceEvent]) {
    for (label, config, timing) in &runs() {
        let (full, dataless) = (metrics(events, config, *timing, true), metrics(events, config, *timing, false));
        let mut diff = Vec::new();
        differences(&full, &dataless, String::new(), &mut diff);
        assert!(diff.is_empty(), "{name}, {label}: data-full vs data-less:\n{}", diff.join("\n"));
        assert!(full["bytes_flushed"].as_u64() > Some(0), "{name}, {label}: something reached the device");
    }
}

fn metrics(events: &[TraceEvent], config: &Config, timing: Timing, keep_data: bool) -> Value {
    let options = ReplayOptions { config: config.clone(), timing, keep_data, ..ReplayOptions::default() };
    let m: Metrics = Replayer::run(options, events.iter().cloned().map(Ok)).expect("replay succeeds");
    serde_json::to_value(m).expect("metrics serialize")
}

/// The JSON pointers of the leaves where `a` and `b` differ.
fn differences(a: &Value, b: &Value, at: String, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for key in x.keys().chain(y.keys().filter(|k| !x.contains_key(*k))) {
                let (u, v) = (x.get(key).unwrap_or(&Value::Null), y.get(key).unwrap_or(&Value::Null));
                differences(u, v, format!("{at}/{key}"), out);
            }
        }
        _ if a != b => out.push(format!("{at}: {a} != {b}")),
        _ => {}
    }
}

#[test]
fn dataless_and_data_full_replays_report_the_same_metrics() {
    for (name, spec) in synth::suite() {
        let events = synth::generate(&spec).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_same_decisions(&name, &events);
    }
}

#[test]
fn dataless_and_data_full_replays_agree_on_recorded_traces() {
    let recorded: [(&str, &[u8]); 3] = [
        ("sqlite-apsw", include_bytes!("fixtures/recorded/sqlite-apsw.bin")),
        ("sqlite-wal", include_bytes!("fixtures/recorded/sqlite-wal.bin")),
        ("git", include_bytes!("fixtures/recorded/git.bin")),
    ];
    for (name, bytes) in recorded {
        let events: Vec<TraceEvent> =
            BinaryReader::new(bytes).collect::<Result<_, _>>().unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(events.len() > 100, "{name}: a recording, not a stub ({} events)", events.len());
        assert_same_decisions(name, &events);
    }
    let straced: [(&str, &str); 2] = [
        ("sqlite3 strace", include_str!("fixtures/sqlite3_create_insert.strace")),
        ("sh strace", include_str!("fixtures/sh_background_write_mv.strace")),
    ];
    for (name, log) in straced {
        let events: Vec<TraceEvent> = StraceImporter::new(log.as_bytes(), StraceOptions::default())
            .collect::<Result<_, _>>()
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_same_decisions(name, &events);
    }
}

#[test]
fn the_dataless_store_reads_back_the_bytes_the_replay_wrote() {
    let trace = "mcfs-trace 1\n0 app 1 create /f\n0 app 1 write /f 1000 70000\n0 app 1 fsync /f\n\
                 1 app 1 truncate /f 50000\n1 app 1 write /f 60000 8192\n1 app 1 fsync /f\n";
    let events: Vec<TraceEvent> =
        mcfs_sim::text::TextReader::new(trace.as_bytes()).collect::<Result<_, _>>().expect("parses");
    let contents: Vec<Vec<u8>> = [true, false]
        .into_iter()
        .map(|keep_data| {
            let config = Config { mode: SyncMode::Sync, ..Config::default() };
            let options = ReplayOptions { config, timing: Timing::OpenLoop, keep_data, ..ReplayOptions::default() };
            let mut r = Replayer::new(options).expect("engine starts");
            events.iter().for_each(|e| r.replay(e));
            // The fsyncs are durable in the journal; this puts them in place.
            r.engine().checkpoint().expect("checkpoint");
            let mut buf = vec![0xee; 100_000];
            let n = r.backend().store().read_at(std::path::Path::new("f"), 0, &mut buf).expect("f is stored");
            buf.truncate(n);
            buf
        })
        .collect();
    let mut expected = vec![0; 68_192];
    mcfs_sim::pattern::fill(1000, &mut expected[1000..50_000]);
    mcfs_sim::pattern::fill(60_000, &mut expected[60_000..]);
    assert_eq!(contents[0], expected, "data kept");
    assert_eq!(contents[1], expected, "data-less");
}
