//! Simulator speed: trace events replayed per second on one core, for the binary and the text form of the
//! same trace, with the MobiFS policies on (TPL transactioning, state-machine idle prediction) and with
//! the defaults, on the data-less store (the default) and on the one that keeps every byte; closed loop. Run with `cargo bench -p mcfs-sim --bench replay_speed`; results go to
//! docs/BENCHMARKS.md. Measures wall time, so it prints and asserts nothing about speed.
//!
//! The trace is the synthetic suite (every entry, concatenated one after the other in time, each app its
//! own), repeated until it holds at least `MCFS_BENCH_EVENTS` events (default 2 million).
//! `MCFS_BENCH_ONLY=TEXT` runs only the rows whose label contains TEXT (to profile or count one alone).

use mcfs_core::Config;
use mcfs_sim::binary::{BinaryReader, BinaryWriter};
use mcfs_sim::replay::{ReplayOptions, Replayer};
use mcfs_sim::synth::{generate, suite};
use mcfs_sim::text::{TextReader, TextWriter};
use mcfs_sim::TraceEvent;
use std::time::Instant;

fn trace(min_events: usize) -> Vec<TraceEvent> {
    let mut events = Vec::new();
    let mut offset_ns = 0;
    let mut round = 0;
    while events.len() < min_events {
        for (name, spec) in suite() {
            let app_events = generate(&spec).unwrap_or_else(|e| panic!("suite entry {name}: {e}"));
            let Some(last) = app_events.last().map(|e| e.time_ns) else { continue };
            let first = app_events[0].time_ns;
            for mut e in app_events {
                e.time_ns = e.time_ns - first + offset_ns;
                e.app = format!("{}#{round}", e.app).into();
                events.push(e);
            }
            offset_ns += last - first + 1_000_000_000;
        }
        round += 1;
    }
    events
}

fn replay(label: &str, config: &Config, keep_data: bool, events: impl Iterator<Item = TraceEvent>, count: usize) {
    if std::env::var("MCFS_BENCH_ONLY").is_ok_and(|only| !label.contains(&only)) {
        return;
    }
    let options = ReplayOptions { config: config.clone(), keep_data, ..ReplayOptions::default() };
    let start = Instant::now();
    let mut replayer = Replayer::new(options).expect("replayer starts");
    for event in events {
        replayer.push(event);
    }
    let metrics = replayer.finish().expect("replay finishes");
    let seconds = start.elapsed().as_secs_f64();
    println!(
        "{label:<34} {count:>9} events in {seconds:>6.2} s = {:>5.2} M events/s ({} checkpoints, {} skipped)",
        count as f64 / seconds / 1e6,
        metrics.checkpoints,
        metrics.events_skipped,
    );
}

fn main() {
    let min_events = std::env::var("MCFS_BENCH_EVENTS").ok().and_then(|v| v.parse().ok()).unwrap_or(2_000_000);
    let events = trace(min_events);
    let count = events.len();
    let mut w = BinaryWriter::new(Vec::new()).expect("binary writer");
    events.iter().for_each(|e| w.write_event(e).expect("encode"));
    let binary = w.finish().expect("binary");
    let mut w = TextWriter::new(Vec::new()).expect("text writer");
    events.iter().for_each(|e| w.write_event(e).expect("encode"));
    let text = w.finish().expect("text");
    drop(events);
    println!("trace: {count} events, binary {} MiB, text {} MiB", binary.len() >> 20, text.len() >> 20);

    let mobifs =
        Config { transaction_policy: "tpl".into(), idle_predictor: "state-machine".into(), ..Config::default() };
    let defaults = Config::default();
    let from_binary = || BinaryReader::new(binary.as_slice()).map(|e| e.expect("binary event"));
    let from_text = || TextReader::new(text.as_slice()).map(|e| e.expect("text event"));
    replay("binary, MobiFS policies, data-less", &mobifs, false, from_binary(), count);
    replay("binary, MobiFS policies, data kept", &mobifs, true, from_binary(), count);
    replay("text, MobiFS policies", &mobifs, false, from_text(), count);
    replay("binary, default policies", &defaults, false, from_binary(), count);
    replay("text, default policies", &defaults, false, from_text(), count);
}
