//! The FastTrack study's workloads measured from the outside (docs/SYNTH.md, "FastTrack workloads"):
//! the same seed gives the same traces, each kind has the shape the paper gives it (Gallery's launch only
//! reads, Update writes more than it reads, Backup only reads), the sizes are the documented ones, the
//! setup creates everything the run reads, and the traces survive the text form and a live replay.
//! Seeds come from `MCFS_SEED` (printed) where any seed must do.

use std::collections::BTreeMap;

use mcfs_sim::live_replay::replay_into;
use mcfs_sim::synth::fasttrack::{generate, FastTrackKind, FastTrackSpec, FastTrackTraces, FULL_SCALE};
use mcfs_sim::text::{TextReader, TextWriter};
use mcfs_sim::{EventKind, PathBytes, TraceEvent};

const MIB: u64 = 1024 * 1024;

fn seed(test: &str) -> u64 {
    let seed = std::env::var("MCFS_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random::<u64>);
    eprintln!("{test}: MCFS_SEED={seed}");
    seed
}

fn traces(kind: FastTrackKind, seed: u64, scale: u64) -> FastTrackTraces {
    let spec = FastTrackSpec { kind, app: format!("com.example.{}", kind.name()), seed, scale_per_mille: scale };
    generate(&spec).unwrap_or_else(|e| panic!("{}: {e}", kind.name()))
}

/// Bytes read and written, and flushes, of a trace.
#[derive(Debug, Default, PartialEq)]
struct Volume {
    read: u64,
    written: u64,
    fsyncs: u64,
    creates: u64,
}

fn volume(events: &[TraceEvent]) -> Volume {
    let mut v = Volume::default();
    for e in events {
        match &e.kind {
            EventKind::Read { len, .. } => v.read += len,
            EventKind::Write { len, .. } => v.written += len,
            EventKind::Fsync { .. } => v.fsyncs += 1,
            EventKind::Create { .. } => v.creates += 1,
            _ => {}
        }
    }
    v
}

/// Size of every file the events leave (writes and truncates followed in order).
fn file_sizes(events: &[TraceEvent]) -> BTreeMap<PathBytes, u64> {
    let mut sizes = BTreeMap::new();
    for e in events {
        match &e.kind {
            EventKind::Create { path } => {
                sizes.entry(path.clone()).or_insert(0);
            }
            EventKind::Write { path, offset, len } => {
                let size = sizes.entry(path.clone()).or_insert(0);
                *size = (*size).max(offset + len);
            }
            EventKind::Truncate { path, size } => {
                sizes.insert(path.clone(), *size);
            }
            _ => {}
        }
    }
    sizes
}

fn to_text(events: &[TraceEvent]) -> Vec<u8> {
    let mut w = TextWriter::new(Vec::new()).unwrap();
    events.iter().for_each(|e| w.write_event(e).unwrap());
    w.finish().unwrap()
}

#[test]
fn the_same_seed_gives_the_same_traces_and_another_seed_other_sizes() {
    let s = seed("the_same_seed_gives_the_same_traces_and_another_seed_other_sizes");
    for kind in FastTrackKind::ALL {
        let a = traces(kind, s, FULL_SCALE);
        assert_eq!(a, traces(kind, s, FULL_SCALE), "{}", kind.name());
        assert_eq!(to_text(&a.run), to_text(&traces(kind, s, FULL_SCALE).run));
        let b = traces(kind, s.wrapping_add(1), FULL_SCALE);
        if kind != FastTrackKind::Update {
            // Update's sizes are fixed (one package); only its timing is drawn.
            assert_ne!(
                file_sizes(&a.setup).into_iter().chain(file_sizes(&a.run)).collect::<Vec<_>>(),
                file_sizes(&b.setup).into_iter().chain(file_sizes(&b.run)).collect::<Vec<_>>(),
                "{}: another seed draws other sizes",
                kind.name()
            );
        }
    }
}

#[test]
fn runs_start_with_their_lifecycle_event_and_stay_in_time_order() {
    let s = seed("runs_start_with_their_lifecycle_event_and_stay_in_time_order");
    for kind in FastTrackKind::ALL {
        let t = traces(kind, s, FULL_SCALE);
        let first = &t.run[0].kind;
        if kind.is_foreground() {
            assert_eq!(first, &EventKind::Foreground, "{}", kind.name());
        } else {
            assert_eq!(first, &EventKind::Background, "{}", kind.name());
        }
        for events in [&t.setup, &t.run] {
            assert!(events.windows(2).all(|w| w[0].time_ns <= w[1].time_ns), "{} out of order", kind.name());
            let app = format!("com.example.{}", kind.name());
            assert!(events.iter().all(|e| *e.app == *app), "{}: one app", kind.name());
        }
        let prefix = format!("/data/data/com.example.{}/", kind.name());
        for e in t.setup.iter().chain(&t.run) {
            if let EventKind::Read { path, .. } | EventKind::Write { path, .. } | EventKind::Mkdir { path } = &e.kind {
                assert!(path.starts_with(prefix.as_bytes()), "{}: {:?} outside the app", kind.name(), e.kind);
            }
        }
    }
}

#[test]
fn the_setup_creates_everything_the_run_reads() {
    let s = seed("the_setup_creates_everything_the_run_reads");
    for kind in FastTrackKind::ALL {
        let t = traces(kind, s, FULL_SCALE);
        let mut sizes = file_sizes(&t.setup);
        for e in &t.run {
            match &e.kind {
                EventKind::Read { path, offset, len } => {
                    let size = sizes.get(path).copied().unwrap_or_else(|| panic!("{}: {e:?} not created", kind.name()));
                    assert!(offset + len <= size, "{}: {e:?} reads past {size}", kind.name());
                }
                EventKind::Create { path } => {
                    sizes.entry(path.clone()).or_insert(0);
                }
                EventKind::Write { path, offset, len } => {
                    let size = sizes.entry(path.clone()).or_insert(0);
                    *size = (*size).max(offset + len);
                }
                EventKind::Truncate { path, size } => {
                    sizes.insert(path.clone(), *size);
                }
                _ => {}
            }
        }
        assert!(volume(&t.run).read + volume(&t.run).written > 0, "{}: the run does I/O", kind.name());
    }
}

#[test]
fn each_kind_has_the_shape_of_its_app() {
    let s = seed("each_kind_has_the_shape_of_its_app");
    let launch = traces(FastTrackKind::Launch, s, FULL_SCALE);
    let v = volume(&launch.run);
    assert_eq!((v.written, v.fsyncs, v.creates), (0, 0, 0), "Gallery's launch only reads: {v:?}");
    let images: Vec<_> = file_sizes(&launch.setup).into_iter().filter(|(p, _)| p.ends_with(b".jpg")).collect();
    assert_eq!(images.len(), 25, "Gallery preloads 25 images");
    assert!(images.iter().all(|(_, size)| (MIB / 2..=2 * MIB).contains(size)), "{images:?}");
    let libs = file_sizes(&launch.setup).into_iter().filter(|(p, _)| p.ends_with(b".so")).count();
    assert_eq!(libs, 10);
    assert_eq!(v.read, file_sizes(&launch.setup).values().sum::<u64>(), "every file read whole, once");

    let switch = volume(&traces(FastTrackKind::Switch, s, FULL_SCALE).run);
    assert_eq!((switch.read, switch.fsyncs, switch.creates), (0, 20, 20), "{switch:?}");
    assert!((12 * MIB..=20 * MIB).contains(&switch.written), "Camera writes about 16 MiB: {switch:?}");

    let load = volume(&traces(FastTrackKind::Load, s, FULL_SCALE).run);
    assert!(load.read > 4 * load.written && load.written > 0, "Game mixes reads and writes: {load:?}");
    assert!(load.fsyncs >= 1, "the save is flushed");

    let update = volume(&traces(FastTrackKind::Update, s, FULL_SCALE).run);
    assert!(update.written >= 2 * update.read, "Update is write-dominant: {update:?}");
    assert_eq!(update.written, 64 * MIB, "the package and its installed copy");

    let backup = traces(FastTrackKind::Backup, s, FULL_SCALE);
    let v = volume(&backup.run);
    assert_eq!((v.written, v.creates), (0, 0), "Backup only reads: {v:?}");
    assert!((160 * MIB..=224 * MIB).contains(&v.read), "about 192 MiB: {v:?}");
}

#[test]
fn repeated_reads_hit_a_hot_set_in_the_game_only() {
    let s = seed("repeated_reads_hit_a_hot_set_in_the_game_only");
    let reads_per_file = |kind| {
        let mut count: BTreeMap<PathBytes, u64> = BTreeMap::new();
        for e in &traces(kind, s, FULL_SCALE).run {
            if let EventKind::Read { path, offset: 0, .. } = &e.kind {
                *count.entry(path.clone()).or_default() += 1;
            }
        }
        count
    };
    let load = reads_per_file(FastTrackKind::Load);
    assert_eq!(load.values().filter(|&&n| n == 4).count(), 6, "six hot files read every round: {load:?}");
    for kind in [FastTrackKind::Launch, FastTrackKind::Backup] {
        assert!(reads_per_file(kind).values().all(|&n| n == 1), "{} reads each file once", kind.name());
    }
}

#[test]
fn scale_shrinks_every_file() {
    let s = seed("scale_shrinks_every_file");
    for kind in FastTrackKind::ALL {
        let full = traces(kind, s, FULL_SCALE);
        let half = traces(kind, s, FULL_SCALE / 2);
        let (full_v, half_v) = (volume(&full.run), volume(&half.run));
        let total = |v: &Volume| v.read + v.written;
        // Each size is rounded up to a page, so half is a little above half.
        assert!(total(&half_v) * 2 >= total(&full_v), "{}", kind.name());
        assert!(total(&half_v) * 2 <= total(&full_v) + 2 * 4096 * 200, "{}: {half_v:?} vs {full_v:?}", kind.name());
        let creates = |t: &FastTrackTraces| volume(&t.setup).creates + volume(&t.run).creates;
        assert_eq!(creates(&full), creates(&half), "{}: as many files, smaller", kind.name());
    }
}

#[test]
fn the_traces_read_back_from_text_and_replay_on_a_directory_without_a_skip() {
    let s = seed("the_traces_read_back_from_text_and_replay_on_a_directory_without_a_skip");
    let dir = tempfile::tempdir().unwrap();
    for kind in FastTrackKind::ALL {
        let t = traces(kind, s, 50);
        for events in [&t.setup, &t.run] {
            let back: Vec<TraceEvent> = TextReader::new(&to_text(events)[..]).map(Result::unwrap).collect();
            assert_eq!(&back, events);
        }
        let setup = replay_into(dir.path(), t.setup.iter().cloned().map(Ok)).unwrap();
        assert_eq!(setup.skipped, 0, "{}: {:?}", kind.name(), setup.skip_reasons);
        for round in 0..2 {
            let run = replay_into(dir.path(), t.run.iter().cloned().map(Ok)).unwrap();
            assert_eq!(run.skipped, 0, "{} round {round}: {:?}", kind.name(), run.skip_reasons);
            assert_eq!(run.left_open, 0, "{}", kind.name());
        }
    }
}
