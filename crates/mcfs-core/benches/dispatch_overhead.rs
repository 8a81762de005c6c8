//! What FastTrack's admission costs a request that does not wait: the same stream of 4 KiB writes through
//! the engine, each call bare (as with every `[fasttrack]` switch off), admitted as a foreground request,
//! and admitted as a background one with no foreground request in flight. Rounds alternate so a noisy
//! machine hits all three alike; medians and ratios are printed. Run with
//! `cargo bench -p mcfs-core --bench dispatch_overhead`; results go to docs/BENCHMARKS.md.

use mcfs_core::{Caller, Config, Engine, ManualClock, MemBackend, ROOT_INO};
use std::ffi::OsStr;
use std::sync::Arc;
use std::time::Instant;

const FG: Caller = Caller { uid: 10001, gid: 10001, pid: 1 };
const BG: Caller = Caller { uid: 10002, gid: 10002, pid: 2 };
const WRITES: u64 = 200_000;
const ROUNDS: usize = 7;

/// Nanoseconds per write of one round; `admit_as` admits each write first.
fn round(admit_as: Option<Caller>) -> f64 {
    let clock = Arc::new(ManualClock::new());
    let engine = Engine::start(Arc::new(MemBackend::new()), clock, Config::default()).expect("engine");
    engine.set_foreground(Some("uid:10001")).expect("foreground app");
    let who = admit_as.unwrap_or(FG);
    let ino = engine.create(who, ROOT_INO, OsStr::new("f"), 0o644, false).expect("create").ino;
    let page = vec![7u8; 4096];
    let start = Instant::now();
    for i in 0..WRITES {
        let _admission = admit_as.map(|c| engine.admit(c));
        engine.write(Some(who), ino, (i % 2048) * 4096, &page).expect("write");
    }
    start.elapsed().as_nanos() as f64 / WRITES as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let (mut bare, mut fg, mut bg) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        bare.push(round(None));
        fg.push(round(Some(FG)));
        bg.push(round(Some(BG)));
    }
    let (b, f, g) = (median(bare.clone()), median(fg.clone()), median(bg.clone()));
    println!("bare:          median {b:.0} ns/write (rounds: {bare:.0?})");
    println!("admitted FG:   median {f:.0} ns/write (rounds: {fg:.0?})");
    println!("admitted BG:   median {g:.0} ns/write (rounds: {bg:.0?})");
    println!("FG / bare = {:.3}, BG / bare = {:.3}", f / b, g / b);
}
