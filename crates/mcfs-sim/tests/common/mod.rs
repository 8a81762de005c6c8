//! Shared helpers of the integration tests: a seeded generator of arbitrary events and the seed itself.

#![allow(dead_code)] // each test binary uses a different subset

use mcfs_sim::{EventKind, InputKind, PathBytes, TraceEvent};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The seed from `MCFS_SEED`, or a fresh one; printed so a failure can be replayed.
pub fn seeded_rng(test: &str) -> StdRng {
    let seed = std::env::var("MCFS_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random::<u64>);
    eprintln!("{test}: MCFS_SEED={seed}");
    StdRng::seed_from_u64(seed)
}

/// A path drawn mostly from a small pool (so the string table is exercised) and sometimes arbitrary bytes.
fn path(rng: &mut StdRng) -> PathBytes {
    const POOL: [&[u8]; 5] = [b"/data/a.db", b"/data/a.db-wal", b"/sd card/#x", b"", b"/\xff\x00\n\\"];
    if rng.gen_bool(0.8) {
        POOL[rng.gen_range(0..POOL.len())].into()
    } else {
        (0..rng.gen_range(0..12)).map(|_| rng.gen()).collect()
    }
}

fn number(rng: &mut StdRng) -> u64 {
    match rng.gen_range(0..3) {
        0 => rng.gen_range(0..4096),
        1 => rng.gen::<u64>() >> rng.gen_range(0..64),
        _ => u64::MAX,
    }
}

pub fn random_event(rng: &mut StdRng, time_ns: u64) -> TraceEvent {
    const APPS: [&str; 4] = ["com.twitter.android", "browser", "", "ünï côde"];
    let kind = match rng.gen_range(0..21) {
        0 => EventKind::Open { path: path(rng) },
        1 => EventKind::Create { path: path(rng) },
        2 => EventKind::Read { path: path(rng), offset: number(rng), len: number(rng) },
        3 => EventKind::Write { path: path(rng), offset: number(rng), len: number(rng) },
        4 => EventKind::Fsync { path: path(rng) },
        5 => EventKind::Fdatasync { path: path(rng) },
        6 => EventKind::Truncate { path: path(rng), size: number(rng) },
        7 => EventKind::Unlink { path: path(rng) },
        8 => EventKind::Rename { from: path(rng), to: path(rng) },
        9 => EventKind::Mkdir { path: path(rng) },
        10 => EventKind::Rmdir { path: path(rng) },
        11 => EventKind::Close { path: path(rng) },
        12 => EventKind::Input { input: InputKind::Tap, duration_ns: number(rng) },
        13 => EventKind::Input { input: InputKind::Drag, duration_ns: number(rng) },
        14 => EventKind::Launch,
        15 => EventKind::Foreground,
        16 => EventKind::Background,
        17 => EventKind::Exit,
        18 => EventKind::Battery { percent: rng.gen_range(0..=100) },
        19 => EventKind::Link { from: path(rng), to: path(rng) },
        _ => EventKind::Screen { on: rng.gen() },
    };
    TraceEvent { time_ns, app: APPS[rng.gen_range(0..APPS.len())].into(), pid: rng.gen(), kind }
}

/// A trace whose times mostly rise but sometimes jump anywhere (the formats must not assume order).
pub fn random_trace(rng: &mut StdRng, len: usize) -> Vec<TraceEvent> {
    let mut time = 0u64;
    (0..len)
        .map(|_| {
            time = if rng.gen_bool(0.05) { number(rng) } else { time.saturating_add(rng.gen_range(0..5_000_000_000)) };
            random_event(rng, time)
        })
        .collect()
}
