//! The page cache's hot paths under pressure: a cache of 1,024 pages over a 4,096-page file, so most
//! accesses miss and every fill or write reclaims. `reads`: random cached-or-missed 4 KiB reads of a
//! committed file (fill, insert, evict); `writes`: random 4 KiB writes with an fsync every 8 (memory
//! mode) and the background step every 64 (pin, copy-on-write, unpin at commit, checkpoints when dirty
//! pages fill the cache). Both in the foreground app, with a background app's pages in the cache too,
//! so FastTrack's order has two apps to pick from. Rounds alternate; medians are printed. Run with
//! `cargo bench -p mcfs-core --bench cache_reclaim`; results go to docs/BENCHMARKS.md.
//! `MCFS_BENCH_ROUNDS` (default 5) sets the rounds (1 to count instructions under callgrind).

use mcfs_core::{Caller, Config, Engine, ManualClock, MemBackend, ROOT_INO};
use std::ffi::OsStr;
use std::sync::Arc;
use std::time::{Duration, Instant};

const FG: Caller = Caller { uid: 10001, gid: 10001, pid: 1 };
const BG: Caller = Caller { uid: 10002, gid: 10002, pid: 2 };
const FILE_PAGES: u64 = 4096;
const OPS: u64 = 200_000;

fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// An engine with a 4 MiB cache, the foreground app's 16 MiB file and a background app's 1 MiB
/// file, both written and committed.
fn setup() -> (Engine, Arc<ManualClock>, u64) {
    let config = Config { cache_size: 1024 * 4096, ..Config::default() };
    let clock = Arc::new(ManualClock::new());
    let engine = Engine::start(Arc::new(MemBackend::new()), clock.clone(), config).expect("engine");
    engine.set_foreground(Some("uid:10001")).expect("foreground app");
    let page = vec![7u8; 4096];
    let fg = engine.create(FG, ROOT_INO, OsStr::new("fg"), 0o644, false).expect("create").ino;
    let bg = engine.create(BG, ROOT_INO, OsStr::new("bg"), 0o644, false).expect("create").ino;
    for p in 0..FILE_PAGES {
        engine.write(Some(FG), fg, p * 4096, &page).expect("write");
    }
    for p in 0..256 {
        engine.write(Some(BG), bg, p * 4096, &page).expect("write");
    }
    engine.checkpoint().expect("checkpoint");
    (engine, clock, fg)
}

/// Nanoseconds per random 4 KiB read.
fn reads(seed: u64) -> f64 {
    let (engine, _clock, ino) = setup();
    let mut x = seed;
    let start = Instant::now();
    for _ in 0..OPS {
        engine.read(ino, (xorshift(&mut x) % FILE_PAGES) * 4096, 4096).expect("read");
    }
    start.elapsed().as_nanos() as f64 / OPS as f64
}

/// Nanoseconds per random 4 KiB write, fsyncs and background steps included.
fn writes(seed: u64) -> f64 {
    let (engine, clock, ino) = setup();
    let page = vec![9u8; 4096];
    let mut x = seed;
    let start = Instant::now();
    for i in 0..OPS {
        if i % 64 == 0 {
            engine.tick();
        }
        engine.write(Some(FG), ino, (xorshift(&mut x) % FILE_PAGES) * 4096, &page).expect("write");
        if i % 8 == 7 {
            engine.fsync(Some(FG), ino).expect("fsync");
            clock.advance(Duration::from_millis(1));
        }
    }
    start.elapsed().as_nanos() as f64 / OPS as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let rounds = std::env::var("MCFS_BENCH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(5);
    let (mut r, mut w) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let seed = 0x9E37_79B9_7F4A_7C15 ^ round as u64;
        r.push(reads(seed));
        w.push(writes(seed));
    }
    println!("reads:  median {:.0} ns/read (rounds: {r:.0?})", median(r.clone()));
    println!("writes: median {:.0} ns/write (rounds: {w:.0?})", median(w.clone()));
}
