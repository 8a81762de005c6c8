//! No torn writes after a crash (issue 10, item 5). The kernel sends an
//! unaligned `write(2)` to mcfs in two requests (split at the first page
//! boundary); a VCT that closed between them used to commit the first part
//! alone. Here threads append numbered records of odd sizes with
//! one `pwrite` each (fsync after each, absorbed in memory mode) while VCTs
//! close every few milliseconds; the daemon is SIGKILLed mid-stream. After
//! recovery every file must be a whole number of intact records, numbered
//! from 0: a prefix of the app's writes, never part of one. (The engine's
//! crash suite proves the same deterministically, for every crash state.)

mod common;

use common::{recover, Daemon, Dirs};
use std::fs::{self, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// VCTs close by age every 5 ms; the background thread commits them.
const CONFIG: &str = "max_stale_seconds = 0.005\nwriteback_interval_seconds = 0.005\n";
const WRITERS: usize = 8;
const ROUNDS: usize = 5;

/// `seq | len | payload`: `len` bytes determined by the writer and `seq`.
fn record(writer: usize, seq: u64) -> Vec<u8> {
    let len = 57 + (common::mix(seq ^ (writer as u64) << 40) % 3000) as usize;
    let mut out = Vec::with_capacity(len + 12);
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(&(len as u32).to_le_bytes());
    out.extend_from_slice(&common::pattern(seq * 31 + writer as u64, len));
    out
}

/// Appends records to `path` until the mount fails under it; returns how
/// many it tried (the last may have reached mcfs though its call failed).
fn append_until_killed(path: &Path, writer: usize, stop: &AtomicBool) -> u64 {
    let file = OpenOptions::new().create(true).truncate(true).read(true).write(true).open(path).expect("open");
    let (mut seq, mut end) = (0u64, 0u64);
    while !stop.load(Ordering::Relaxed) {
        let rec = record(writer, seq);
        seq += 1;
        if file.write_all_at(&rec, end).and_then(|()| file.sync_data()).is_err() {
            break;
        }
        end += rec.len() as u64;
    }
    seq
}

/// Checks that `content` is records 0, 1, 2, … whole; returns how many.
fn whole_records(content: &[u8], writer: usize, what: &str) -> u64 {
    let (mut at, mut seq) = (0usize, 0u64);
    while at < content.len() {
        let expected = record(writer, seq);
        let got = &content[at..content.len().min(at + expected.len())];
        assert!(
            got == expected.as_slice(),
            "{what}: record {seq} at byte {at} is torn or wrong ({} of its {} bytes are there, file ends at {})",
            got.len(),
            expected.len(),
            content.len()
        );
        at += expected.len();
        seq += 1;
    }
    seq
}

#[test]
fn unaligned_appends_are_whole_after_a_sigkill() {
    let dirs = Dirs::new(Some(CONFIG));
    for round in 0..ROUNDS {
        let daemon = Daemon::foreground(&dirs, &[]);
        let stop = Arc::new(AtomicBool::new(false));
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let (path, stop) = (dirs.mnt.join(format!("log{w}")), stop.clone());
                std::thread::spawn(move || append_until_killed(&path, w, &stop))
            })
            .collect();
        std::thread::sleep(Duration::from_millis(1500));
        daemon.kill();
        stop.store(true, Ordering::Relaxed);
        let written: Vec<u64> = writers.into_iter().map(|t| t.join().expect("writer")).collect();
        recover(&dirs);
        for (w, written) in written.iter().enumerate() {
            let path = dirs.backing.join(format!("log{w}"));
            let content = fs::read(&path).unwrap_or_default();
            let kept = whole_records(&content, w, &format!("round {round}, {}", path.display()));
            println!("round {round}, writer {w}: {kept} of {written} records tried survived, all whole");
            assert!(kept <= *written);
        }
    }
}
