//! The transactioning policy's cost on the engine's write path: the same SQLite-like write stream (4 KiB
//! pages at seeded random offsets of an 8 MiB file, an fsync every 8 writes, in memory mode) through the
//! engine with `staleness-limit` (the default, which only compares two limits) and with `tpl` (which
//! samples the e curve and fits a line on every write). As on a mount, the background step (`tick`)
//! commits closed VCTs every 64 writes; only the app's calls are timed, since on a mount the background
//! thread runs them beside the app. Rounds alternate between the two so a noisy machine hits both alike;
//! the medians and their ratio are printed. Run with
//! `cargo bench -p mcfs-core --bench policy_overhead`; results go to docs/BENCHMARKS.md. The mount adds a
//! FUSE round trip per write on top, so this ratio bounds the overhead a live mount can see.

use mcfs_core::{Caller, Config, Engine, ManualClock, MemBackend, ROOT_INO};
use std::ffi::OsStr;
use std::sync::Arc;
use std::time::{Duration, Instant};

const ME: Caller = Caller { uid: 10001, gid: 10001, pid: 1 };
const WRITES: u64 = 200_000;
const PAGES: u64 = 2048;
const ROUNDS: usize = 7;

/// Nanoseconds per write (fsyncs included) of one round under `policy`.
fn round(policy: &str, seed: u64) -> f64 {
    let config = Config { transaction_policy: policy.into(), ..Config::default() };
    let clock = Arc::new(ManualClock::new());
    let engine = Engine::start(Arc::new(MemBackend::new()), clock.clone(), config).expect("engine");
    let ino = engine.create(ME, ROOT_INO, OsStr::new("db"), 0o644, false).expect("create").ino;
    let page = vec![7u8; 4096];
    let mut x = seed;
    let mut app_time = Duration::ZERO;
    for i in 0..WRITES {
        if i % 64 == 0 {
            engine.tick();
        }
        let start = Instant::now();
        // xorshift: the same offsets for both policies in a round.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        engine.write(Some(ME), ino, (x % PAGES) * 4096, &page).expect("write");
        if i % 8 == 7 {
            engine.fsync(Some(ME), ino).expect("fsync");
            clock.advance(Duration::from_millis(1));
        }
        app_time += start.elapsed();
    }
    app_time.as_nanos() as f64 / WRITES as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let (mut plain, mut tpl) = (Vec::new(), Vec::new());
    for r in 0..ROUNDS {
        let seed = 0x9E37_79B9_7F4A_7C15 ^ r as u64;
        plain.push(round("staleness-limit", seed));
        tpl.push(round("tpl", seed));
    }
    let (p, t) = (median(plain.clone()), median(tpl.clone()));
    println!("staleness-limit: median {p:.0} ns/write (rounds: {plain:.0?})");
    println!("tpl:             median {t:.0} ns/write (rounds: {tpl:.0?})");
    println!("tpl / staleness-limit = {:.3}", t / p);
}
