//! The synthetic trace generator measured from the outside: determinism, order, the fsync rates and e-curve
//! shapes its profiles promise (docs/SYNTH.md), users alternating short and long intervals, and every suite
//! entry surviving both trace forms. Property tests draw their seed from `MCFS_SEED` (printed).

use std::collections::HashMap;
use std::time::Duration;

use mcfs_sim::binary::{BinaryReader, BinaryWriter};
use mcfs_sim::replay::{ReplayOptions, Replayer};
use mcfs_sim::synth::{self, SynthSpec};
use mcfs_sim::text::{TextReader, TextWriter};
use mcfs_sim::{EventKind, PathBytes, TraceEvent};

const NS: f64 = 1e9;

fn seed(test: &str) -> u64 {
    let seed = std::env::var("MCFS_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random::<u64>);
    eprintln!("{test}: MCFS_SEED={seed}");
    seed
}

fn spec(io: &str, user: &str, seed: u64, seconds: u64) -> SynthSpec {
    SynthSpec {
        app: "com.example.app".into(),
        io_profile: io.into(),
        user_profile: user.into(),
        seed,
        duration: Duration::from_secs(seconds),
    }
}

fn generate(io: &str, user: &str, seed: u64, seconds: u64) -> Vec<TraceEvent> {
    synth::generate(&spec(io, user, seed, seconds)).unwrap_or_else(|e| panic!("{io}/{user}: {e}"))
}

fn to_text(events: &[TraceEvent]) -> Vec<u8> {
    let mut w = TextWriter::new(Vec::new()).unwrap();
    events.iter().for_each(|e| w.write_event(e).unwrap());
    w.finish().unwrap()
}

fn is_input(e: &TraceEvent) -> bool {
    matches!(e.kind, EventKind::Input { .. })
}

fn is_io(e: &TraceEvent) -> bool {
    !is_input(e) && !matches!(e.kind, EventKind::Launch | EventKind::Foreground | EventKind::Background)
}

fn is_flush(e: &TraceEvent) -> bool {
    matches!(e.kind, EventKind::Fsync { .. } | EventKind::Fdatasync { .. })
}

/// Bursts of I/O: maximal runs of I/O events less than `gap_ns` apart, as (first, last) times.
fn bursts(events: &[TraceEvent], gap_ns: u64) -> Vec<(u64, u64)> {
    let mut bursts: Vec<(u64, u64)> = Vec::new();
    for e in events.iter().filter(|e| is_io(e)) {
        match bursts.last_mut() {
            Some((_, last)) if e.time_ns - *last < gap_ns => *last = e.time_ns,
            _ => bursts.push((e.time_ns, e.time_ns)),
        }
    }
    bursts
}

/// Flushes per second of activity: the summed length of the bursts of I/O events less than a second apart
/// (docs/SYNTH.md, "Measuring").
fn flushes_per_active_second(events: &[TraceEvent]) -> f64 {
    let active_ns: u64 = bursts(events, 1_000_000_000).iter().map(|(first, last)| last - first).sum();
    events.iter().filter(|e| is_flush(e)).count() as f64 / (active_ns.max(1) as f64 / NS)
}

fn flushes_per_second(events: &[TraceEvent]) -> f64 {
    let span = events.last().unwrap().time_ns as f64 / NS;
    events.iter().filter(|e| is_flush(e)).count() as f64 / span
}

fn flushes_per_mib_written(events: &[TraceEvent]) -> f64 {
    let written: u64 = events
        .iter()
        .map(|e| match e.kind {
            EventKind::Write { len, .. } => len,
            _ => 0,
        })
        .sum();
    events.iter().filter(|e| is_flush(e)).count() as f64 / (written.max(1) as f64 / (1 << 20) as f64)
}

/// The e = o/s curve with no checkpoint at all (MobiFS Fig. 7's "ideal"): s counts every byte written, o
/// the bytes that landed on bytes written before and still pending. Unlinking a file drops its pending
/// bytes (they are not overwrites), a rename moves them. Returns e sampled at `points` even steps of s.
fn e_curve(events: &[TraceEvent], points: usize) -> Vec<f64> {
    let mut pending: HashMap<PathBytes, Vec<(u64, u64)>> = HashMap::new();
    let (mut s, mut o) = (0u64, 0u64);
    let mut history: Vec<(u64, u64)> = Vec::new();
    for e in events {
        match &e.kind {
            EventKind::Write { path, offset, len } => {
                let ranges = pending.entry(path.clone()).or_default();
                o += add_range(ranges, *offset, offset + len);
                s += len;
                history.push((s, o));
            }
            EventKind::Unlink { path } => {
                pending.remove(path);
            }
            EventKind::Rename { from, to } => {
                let moved = pending.remove(from).unwrap_or_default();
                pending.insert(to.clone(), moved);
            }
            EventKind::Truncate { .. } => panic!("the generator does not truncate"),
            _ => {}
        }
    }
    let total = history.last().map_or(0, |h| h.0);
    (1..=points)
        .map(|k| {
            let at = total * k as u64 / points as u64;
            let i = history.partition_point(|h| h.0 < at).min(history.len() - 1);
            history[i].1 as f64 / history[i].0 as f64
        })
        .collect()
}

/// Adds `[start, end)` to sorted disjoint ranges; returns how many of its bytes were already there.
fn add_range(ranges: &mut Vec<(u64, u64)>, start: u64, end: u64) -> u64 {
    let mut overlap = 0;
    let (mut lo, mut hi) = (start, end);
    ranges.retain(|&(a, b)| {
        if b < start || a > end {
            return true;
        }
        overlap += b.min(end).saturating_sub(a.max(start));
        lo = lo.min(a);
        hi = hi.max(b);
        false
    });
    let at = ranges.partition_point(|r| r.0 < lo);
    ranges.insert(at, (lo, hi));
    overlap
}

#[test]
fn same_spec_same_events_and_seeds_differ() {
    let seed = seed("same_spec_same_events_and_seeds_differ");
    for io in synth::io_profile_names() {
        let a = generate(io, "mixed", seed, 60);
        assert_eq!(a, generate(io, "mixed", seed, 60), "{io}");
        assert_ne!(a, generate(io, "mixed", seed.wrapping_add(1), 60), "{io}");
    }
}

#[test]
fn output_is_pinned_for_a_given_version() {
    // A digest of one trace's canonical text, header line left out (it names the trace format's version,
    // not the generator's). It changes only when the generator does; then raise SYNTH_VERSION and update
    // the digest (docs/SYNTH.md, "Reproducibility").
    assert_eq!(synth::SYNTH_VERSION, 1);
    let text = to_text(&generate("fsync-moderate", "scroller", 42, 30));
    let events = &text[text.iter().position(|&b| b == b'\n').unwrap() + 1..];
    let digest =
        events.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
    assert_eq!((events.len(), digest), (79_614, 6_684_750_225_911_147_428));
}

#[test]
fn events_are_in_order_and_belong_to_the_app() {
    let seed = seed("events_are_in_order_and_belong_to_the_app");
    for io in synth::io_profile_names() {
        for user in synth::user_profile_names() {
            let events = generate(io, user, seed, 120);
            assert!(events.windows(2).all(|w| w[0].time_ns <= w[1].time_ns), "{io}/{user}: out of order");
            assert_eq!(events[0].kind, EventKind::Launch, "{io}/{user}");
            assert_eq!(events[1].kind, EventKind::Foreground, "{io}/{user}");
            assert_eq!(events[0].time_ns, 0);
            let last = events.last().unwrap();
            assert_eq!(last.kind, EventKind::Background, "{io}/{user}");
            assert!(last.time_ns >= 120_000_000_000, "{io}/{user}");
            assert!(last.time_ns < 125_000_000_000, "{io}/{user}: the last burst ran long");
            for e in &events {
                assert_eq!(e.app, "com.example.app".into());
                let paths: Vec<&PathBytes> = match &e.kind {
                    EventKind::Rename { from, to } => vec![from, to],
                    EventKind::Open { path }
                    | EventKind::Create { path }
                    | EventKind::Read { path, .. }
                    | EventKind::Write { path, .. }
                    | EventKind::Fsync { path }
                    | EventKind::Fdatasync { path }
                    | EventKind::Unlink { path }
                    | EventKind::Mkdir { path }
                    | EventKind::Close { path } => vec![path],
                    _ => vec![],
                };
                for p in paths {
                    assert!(p.starts_with(b"/data/data/com.example.app"), "{io}/{user}: {e:?}");
                }
            }
            assert!(events.iter().any(is_input), "{io}/{user}: no input");
            assert!(events.iter().any(|e| matches!(e.kind, EventKind::Write { .. })), "{io}/{user}: no write");
        }
    }
}

#[test]
fn fsync_rates_match_the_papers_apps() {
    let seed = seed("fsync_rates_match_the_papers_apps");
    for user in synth::user_profile_names() {
        // MobiFS §7.1: Twitter triggers more than 50 fsyncs per second ...
        let heavy = generate("fsync-heavy", user, seed, 300);
        let heavy_rate = flushes_per_active_second(&heavy);
        assert!(heavy_rate > 50.0, "fsync-heavy/{user}: {heavy_rate:.1} fsyncs per active second");
        // ... Browser incurs few fsyncs ...
        let light = generate("fsync-light", user, seed, 300);
        let light_rate = flushes_per_second(&light);
        assert!(light_rate < 0.1, "fsync-light/{user}: {light_rate:.3} fsyncs per second");
        let (light_per_mib, heavy_per_mib) = (flushes_per_mib_written(&light), flushes_per_mib_written(&heavy));
        assert!(
            heavy_per_mib > 20.0 * light_per_mib,
            "fsyncs per MiB written: fsync-light/{user} {light_per_mib:.2}, fsync-heavy/{user} {heavy_per_mib:.1}"
        );
        // ... Facebook has a moderate number.
        let moderate = generate("fsync-moderate", user, seed, 300);
        let moderate_rate = flushes_per_active_second(&moderate);
        assert!(
            (2.0..50.0).contains(&moderate_rate) && moderate_rate < heavy_rate / 2.0,
            "fsync-moderate/{user}: {moderate_rate:.1} fsyncs per active second (heavy: {heavy_rate:.1})"
        );
        assert!(flushes_per_second(&moderate) > 3.0 * light_rate, "fsync-moderate/{user}");
    }
}

#[test]
fn e_curves_have_their_shapes() {
    let seed = seed("e_curves_have_their_shapes");
    for user in synth::user_profile_names() {
        let peak = e_curve(&generate("e-peak", user, seed, 300), 200);
        let (top, max) = peak.iter().enumerate().fold((0, 0.0), |m, (i, &e)| if e > m.1 { (i, e) } else { m });
        let last = *peak.last().unwrap();
        assert!(top > 0 && top < peak.len() - 20, "e-peak/{user}: maximum at sample {top}: {peak:.2?}");
        assert!(max > 0.5 && last < 0.6 * max, "e-peak/{user}: no fall after the peak: {peak:.2?}");

        let plateau = e_curve(&generate("e-plateau", user, seed, 300), 50);
        let last = *plateau.last().unwrap();
        let max = plateau.iter().copied().fold(0.0, f64::max);
        assert!(plateau[0] < last, "e-plateau/{user}: does not rise: {plateau:.2?}");
        assert!(last > 0.6 && last > 0.9 * max, "e-plateau/{user}: does not stay high: {plateau:.2?}");

        let flat = e_curve(&generate("e-flat", user, seed, 300), 50);
        assert!(flat.iter().all(|&e| e < 0.05), "e-flat/{user}: {flat:.3?}");
    }
}

#[test]
fn users_alternate_short_and_long_intervals() {
    let seed = seed("users_alternate_short_and_long_intervals");
    for user in synth::user_profile_names() {
        let events = generate("e-flat", user, seed, 600);
        let starts: Vec<u64> = events.iter().filter(|e| is_input(e)).map(|e| e.time_ns).collect();
        let gaps: Vec<f64> = starts.windows(2).map(|w| (w[1] - w[0]) as f64 / NS).collect();
        let short = gaps.iter().filter(|&&g| g < 2.0).count();
        let long = gaps.iter().filter(|&&g| g > 5.0).count();
        // A switch: a short gap followed by a long one or the reverse.
        let switches = gaps.windows(2).filter(|w| (w[0] < 2.0) != (w[1] < 2.0)).count();
        assert!(short > 0 && long > 0 && switches >= 2, "{user}: {short} short, {long} long, {switches} switches");
        assert!(gaps.iter().all(|&g| g >= 0.2), "{user}: inputs closer than 0.2 s");
    }
}

#[test]
fn inputs_depend_on_the_user_not_on_the_app() {
    let seed = seed("inputs_depend_on_the_user_not_on_the_app");
    let inputs =
        |io: &str| -> Vec<TraceEvent> { generate(io, "scroller", seed, 120).into_iter().filter(is_input).collect() };
    assert_eq!(inputs("fsync-heavy"), inputs("e-flat"));
}

#[test]
fn io_follows_inputs() {
    let seed = seed("io_follows_inputs");
    let events = generate("fsync-moderate", "scroller", seed, 300);
    let input_ends: Vec<u64> = events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::Input { duration_ns, .. } => Some(e.time_ns + duration_ns),
            _ => None,
        })
        .collect();
    // Skip the first-run burst at launch.
    let bursts = &bursts(&events, 100_000_000)[1..];
    let following = bursts
        .iter()
        .filter(|(start, _)| input_ends.iter().any(|&end| end <= *start && start - end <= 500_000_000))
        .count();
    assert!(
        following * 10 >= bursts.len() * 6,
        "only {following} of {} bursts start within 0.5 s of an input",
        bursts.len()
    );
}

#[test]
fn bad_specs_are_refused_with_the_known_names() {
    let mut bad = spec("fsync-huge", "mixed", 1, 10);
    let err = synth::generate(&bad).unwrap_err();
    assert!(err.contains("fsync-huge") && err.contains("fsync-heavy") && err.contains("e-flat"), "{err}");
    bad.io_profile = "e-flat".into();
    bad.user_profile = "sleeper".into();
    let err = synth::generate(&bad).unwrap_err();
    assert!(err.contains("sleeper") && err.contains("reader") && err.contains("watcher"), "{err}");
    for app in ["", "a/b", "..", "x\0y"] {
        let err = synth::generate(&SynthSpec { app: app.into(), ..spec("e-flat", "mixed", 1, 10) }).unwrap_err();
        assert!(err.contains("app name"), "{app:?}: {err}");
    }
    for duration in [Duration::ZERO, synth::MAX_DURATION + Duration::from_secs(1)] {
        let err = synth::generate(&SynthSpec { duration, ..spec("e-flat", "mixed", 1, 10) }).unwrap_err();
        assert!(err.contains("duration"), "{err}");
    }
    let names = synth::profile_names();
    for name in
        ["fsync-heavy", "fsync-light", "fsync-moderate", "e-peak", "e-plateau", "e-flat", "reader", "scroller", "mixed"]
    {
        assert!(names.contains(&name), "{name} missing from {names:?}");
        assert!(synth::profile_summary(name).is_some(), "{name}");
    }
}

#[test]
fn every_suite_entry_generates_and_round_trips() {
    let suite = synth::suite();
    let names: Vec<&str> = suite.iter().map(|(n, _)| n.as_str()).collect();
    for app in ["FB", "PA", "AB", "NF", "TT", "GM", "CR", "FL", "WB", "WC", "FB-u1", "FB-u5"] {
        assert!(names.contains(&app), "{app} missing from {names:?}");
    }
    assert_eq!(suite.len(), 15);
    let seeds: std::collections::HashSet<u64> = suite.iter().map(|(_, s)| s.seed).collect();
    assert_eq!(seeds.len(), suite.len(), "suite seeds must differ");
    for (name, spec) in &suite {
        assert_eq!(spec.duration, Duration::from_secs(300), "{name}");
        let events = synth::generate(spec).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(events.iter().all(|e| *e.app == *spec.app), "{name}");
        let text = to_text(&events);
        let back: Vec<TraceEvent> = TextReader::new(text.as_slice()).collect::<Result<_, _>>().unwrap();
        assert_eq!(back, events, "{name}: text round trip");
        let mut w = BinaryWriter::new(Vec::new()).unwrap();
        events.iter().for_each(|e| w.write_event(e).unwrap());
        let binary = w.finish().unwrap();
        let back: Vec<TraceEvent> = BinaryReader::new(binary.as_slice()).collect::<Result<_, _>>().unwrap();
        assert_eq!(back, events, "{name}: binary round trip");
    }
    let fb = &suite.iter().find(|(n, _)| n == "FB").unwrap().1;
    assert_eq!(fb.app, "com.facebook.katana");
}

#[test]
fn suite_traces_replay_without_a_skipped_event() {
    // Every operation refers to a file or directory the trace made before: nothing is skipped as an
    // unknown path or refused by the engine (no mkdir of an existing directory, no read past a delete).
    for (name, spec) in
        synth::suite().into_iter().filter(|(n, _)| ["TT", "FB", "WB", "AB", "WC", "PA"].contains(&n.as_str()))
    {
        let events = synth::generate(&spec).unwrap();
        let count = events.len() as u64;
        let metrics = Replayer::run(ReplayOptions::default(), events.into_iter().map(Ok))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(metrics.events_skipped, 0, "{name}: {:?}", metrics.skip_reasons);
        assert_eq!(metrics.events_replayed, count, "{name}");
        assert!(metrics.fsync_absorbed + metrics.fsync_honoured > 0, "{name}");
    }
}
