//! A writer that finds dirty data past `dirty_high_ratio` while a commit is
//! in flight waits for that commit, which frees the memory, and commits
//! nothing itself: the background thread and a writer never both commit
//! (docs/ENGINE.md, "When VCTs close and checkpoints run").
//!
//! Threads stand for the background thread and a serving thread; where the
//! test shows the writer has not gone ahead, it gives it real time to
//! misbehave and checks the order of events, never a duration.

mod paused_journal;

use mcfs_core::backend::RecordingBackend;
use mcfs_core::*;
use paused_journal::pause_first_journal_write;
use std::ffi::OsStr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

const ME: Caller = Caller { uid: 10001, gid: 10001, pid: 1 };
const KIB: usize = 1024;
/// Only guards against a hang if the checkpoint never writes its journal.
const HANG_GUARD: Duration = Duration::from_secs(60);
/// Real time the writer gets to reach its wait (or to misbehave).
const GRACE: Duration = Duration::from_millis(100);

/// A 1 MiB cache (the high watermark at 768 KiB) and VCTs closing at
/// 512 KiB (half `max_stale_bytes`); each commit is applied at once, so it
/// makes its pages clean. The writer is the foreground app's, admitted as
/// such, and not spared at the watermark (FastTrack reclaim off): a
/// foreground writer waiting for the journal would make a background
/// commit give way.
fn config() -> Config {
    let mut config = Config {
        cache_size: 1 << 20,
        dirty_high_ratio: 0.75,
        max_stale_bytes: 1 << 20,
        apply_backlog_bytes: 0,
        ..Config::default()
    };
    config.fasttrack.reclaim = false;
    config
}

#[test]
fn a_writer_past_the_watermark_waits_for_the_commit_in_flight_instead_of_committing() {
    let backend = Arc::new(RecordingBackend::new(MemBackend::new()));
    let engine = Engine::start(backend.clone(), Arc::new(ManualClock::new()), config()).expect("engine starts");
    engine.set_foreground_uid(Some(ME.uid));
    let ino = engine.create(ME, ROOT_INO, OsStr::new("f"), 0o644, true).expect("create").ino;
    engine.write(Some(ME), ino, 0, &[1; 512 * KIB]).expect("first half MiB");
    assert_eq!(engine.stats().vcts_closed, 1, "the VCT closed at half max_stale_bytes");
    let checkpoints = engine.stats().checkpoints;

    let (reached, go_on) = pause_first_journal_write(&backend);
    let log = Mutex::new(Vec::new());
    thread::scope(|s| {
        let background = s.spawn(|| engine.tick());
        reached.recv_timeout(HANG_GUARD).expect("the background commit writes its journal");
        let writer = s.spawn(|| {
            let _admitted = engine.admit(ME);
            engine.write(Some(ME), ino, 512 * KIB as u64, &[2; 260 * KIB]).expect("write below the watermark");
            // 772 KiB dirty: past the watermark, with the first VCT's commit in flight.
            engine.write(Some(ME), ino, 772 * KIB as u64, &[3; 4 * KIB]).expect("write past the watermark");
            log.lock().unwrap().push("written");
        });
        thread::sleep(GRACE);
        log.lock().unwrap().push("commit let go on");
        drop(go_on);
        background.join().unwrap();
        writer.join().unwrap();
    });
    backend.clear_fault();

    assert_eq!(*log.lock().unwrap(), ["commit let go on", "written"], "the write waited for the commit");
    let stats = engine.stats();
    assert_eq!(stats.checkpoints, checkpoints + 1, "only the background commit ran");
    assert_eq!(engine.dispatch_stats().commits_given_way, 0, "the background commit went on");
    let size = backend.live().stat(Path::new("f")).expect("f in the backing store").size;
    assert_eq!(size, 512 * KIB as u64, "the backing store holds the first VCT only");
    assert_eq!(engine.bytes_at_risk(), 264 * KIB as u64, "the writer's data waits in its open VCT");
    let data = engine.read(ino, 0, 776 * KIB as u32).expect("read back");
    assert!(data[..512 * KIB].iter().all(|b| *b == 1) && data[512 * KIB..772 * KIB].iter().all(|b| *b == 2));
    assert!(data[772 * KIB..].iter().all(|b| *b == 3), "the write that waited");
}
