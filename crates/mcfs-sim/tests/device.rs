//! The simulated device under the engine's backend calls (`SimBackend`) against hand-computed figures, and
//! the replay over it: latencies apps see, bytes at risk, byte-equal metrics across runs. The model alone
//! is tested in mcfs-device.

use mcfs_core::{AppConfig, Backend, Caller, Config, FileKind, ManualClock, SyncMode, ROOT_INO};
use mcfs_device::{DeviceProfile, METADATA_WRITE_BYTES};
use mcfs_sim::device::{CallCost, SimBackend};
use mcfs_sim::pattern;
use mcfs_sim::replay::{Metrics, ReplayOptions, Replayer, Timing, FIRST_APP_UID};
use mcfs_sim::text::TextReader;
use mcfs_sim::TraceEvent;
use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

const MS: u64 = 1_000_000;
const US: u64 = 1_000;

/// The device model's round test figures (reads take 1 µs per byte, writes 2 µs per byte) with a queue of
/// `queue_depth` slots.
fn profile(queue_depth: u32) -> DeviceProfile {
    let round = DeviceProfile::from_toml(include_str!("../../mcfs-device/tests/fixtures/round.toml"));
    DeviceProfile { queue_depth, ..round.expect("round profile parses") }
}

/// A backend on `profile` holding file `f` with 1000 bytes, and its clock moved on to 1 s so the device
/// is idle again.
fn backend_with_file(profile: DeviceProfile) -> (SimBackend, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new());
    let backend = SimBackend::new(profile, clock.clone());
    backend.create(Path::new("f"), FileKind::File, 0o644, 0).expect("create");
    backend.write_at(Path::new("f"), 0, &[7; 1000]).expect("write");
    clock.advance(Duration::from_secs(1));
    (backend, clock)
}

#[test]
fn a_single_read_takes_its_latency_and_its_transfer() {
    let (backend, _clock) = backend_with_file(profile(1));
    let setup = backend.report();
    assert_eq!((setup.metadata_writes, setup.writes, setup.bytes_written), (1, 1, METADATA_WRITE_BYTES + 1000));
    // The create's block: 200 µs + 4096 × 2 µs; the write behind it: 200 µs + 1000 × 2 µs.
    assert_eq!(setup.busy_until_ns, 200 * US + 8192 * US + 200 * US + 2000 * US);

    backend.begin_call();
    assert!(backend.stat(Path::new("f")).is_ok(), "stat is served from the metadata cache");
    assert!(!backend.end_call().issued_io);

    backend.begin_call();
    let mut buf = [0u8; 1000];
    assert_eq!(backend.read_at(Path::new("f"), 0, &mut buf).expect("read"), 1000);
    let cost = backend.end_call();
    assert!(cost.issued_io);
    assert_eq!(cost.latency_ns, 100 * US + 1000 * US);
    assert_eq!(backend.report().busy_until_ns, 1_000 * MS + 1_100 * US);
}

#[test]
fn a_request_queued_behind_another_starts_when_it_ends() {
    let (backend, _clock) = backend_with_file(profile(1));
    backend.begin_call();
    // The write is queued and the caller goes on; the read waits for the write, then for its own data.
    backend.write_at(Path::new("f"), 0, &[1; 1000]).expect("write");
    let mut buf = [0u8; 500];
    backend.read_at(Path::new("f"), 0, &mut buf).expect("read");
    assert_eq!(backend.end_call().latency_ns, (200 + 2000) * US + (100 + 500) * US);
}

#[test]
fn a_deeper_queue_overlaps_request_latencies() {
    // Three 1000-byte writes and a flush, in one call.
    let latency = |depth| {
        let (backend, _clock) = backend_with_file(profile(depth));
        backend.begin_call();
        for _ in 0..3 {
            backend.write_at(Path::new("f"), 0, &[1; 1000]).expect("write");
        }
        backend.sync().expect("sync");
        backend.end_call().latency_ns
    };
    // One at a time: 3 × (200 + 2000) µs, then the 1000 µs flush.
    assert_eq!(latency(1), 3 * 2200 * US + 1000 * US);
    // Two slots: the second write's latency runs during the first's transfer (ends at 4.2 ms); the third
    // takes the first slot when it frees at 2.2 ms, so its latency is hidden too: transfers end at 6.2 ms.
    assert_eq!(latency(2), 6200 * US + 1000 * US);
}

#[test]
fn a_flush_waits_for_work_another_caller_queued() {
    let (backend, clock) = backend_with_file(profile(4));
    // Background work: a write nobody waits for.
    backend.begin_call();
    backend.write_at(Path::new("f"), 0, &[1; 1000]).expect("write");
    assert_eq!(backend.end_call(), CallCost { issued_io: true, latency_ns: 0 });
    // An app's fsync 1 ms later waits for that write (ends at 2.2 ms), then flushes.
    clock.advance(Duration::from_millis(1));
    backend.begin_call();
    backend.sync().expect("sync");
    assert_eq!(backend.end_call().latency_ns, 1200 * US + 1000 * US);
    let report = backend.report();
    assert_eq!((report.flushes, report.requests), (1, 4));
    // Busy: the setup's two requests overlapped (create 0..8.392 ms, write 0..10.392 ms), then 3.2 ms.
    assert_eq!(report.busy_ns, 10_392 * US + 3200 * US);
}

/// App `com.a` writes 8 KiB at 1 s and fsyncs it; a tap at 5 s; app `com.b` writes 4 KiB at 20 s.
const TRACE: &str = "\
mcfs-trace 1
0.0  com.a 100 create /data/a/db
1.0  com.a 100 write  /data/a/db 0 8192
1.5  com.a 100 fsync  /data/a/db
5.0  -     0   tap    0.08
20.0 com.b 200 create /data/b/log
20.0 com.b 200 write  /data/b/log 0 4096
20.5 com.b 200 fdatasync /data/b/log
30.0 com.b 200 close  /data/b/log
";

fn events(text: &str) -> Vec<TraceEvent> {
    TextReader::new(text.as_bytes()).collect::<Result<_, _>>().expect("test trace parses")
}

fn options(mode: SyncMode, device: &str) -> ReplayOptions {
    let config = Config { mode, max_stale_seconds: 10.0, ..Config::default() };
    ReplayOptions { config, device: DeviceProfile::builtin(device).expect("built-in"), ..ReplayOptions::default() }
}

fn replay(text: &str, options: ReplayOptions) -> Metrics {
    Replayer::run(options, events(text).into_iter().map(Ok)).expect("replay succeeds")
}

#[test]
fn memory_mode_fsyncs_wait_for_nothing_and_sync_mode_fsyncs_wait_for_the_flash() {
    let memory = replay(TRACE, options(SyncMode::Memory, "emmc"));
    assert_eq!(memory.fsync_latency.count, 2, "{memory:#?}");
    assert_eq!((memory.fsync_latency.p99_ns, memory.stall_ns), (0, 0), "{memory:#?}");
    assert!(memory.device.flushes > 0 && memory.device.bytes_written >= 8192 + 4096, "{memory:#?}");

    let sync = replay(TRACE, options(SyncMode::Sync, "emmc"));
    let emmc = DeviceProfile::builtin("emmc").unwrap();
    assert_eq!(sync.fsync_latency.count, 2);
    // Each fsync commits: at least the data's transfer and one flush.
    let least = emmc.flush_latency_ns + 4096 * 1_000_000_000 / emmc.write_bytes_per_s;
    assert!(sync.fsync_latency.p50_ns >= least, "{:#?}", sync.fsync_latency);
    assert!(sync.apps["com.a"].fsync_latency.p50_ns >= least, "{:#?}", sync.apps["com.a"]);
    assert!(sync.stall_ns >= sync.fsync_latency.total_ns);
    assert_eq!(sync.stall_ns, sync.apps.values().map(|a| a.stall_ns).sum::<u64>());

    let ufs = replay(TRACE, options(SyncMode::Sync, "ufs"));
    assert!(ufs.fsync_latency.p99_ns < sync.fsync_latency.p99_ns, "UFS moves the data 3x faster");
    assert_eq!(ufs.device.bytes_written, sync.device.bytes_written, "same work on either device");
}

#[test]
fn bytes_at_risk_are_sampled_every_period_and_end_at_the_commit() {
    let m = replay(TRACE, options(SyncMode::Memory, "emmc"));
    let risk = &m.bytes_at_risk;
    assert_eq!(risk.sample_every_ns, 1_000_000_000);
    assert_eq!(risk.series.len(), 31, "0 s to 30 s: {risk:?}");
    // a's 8 KiB are at risk from 1 s until its staleness deadline (its VCT opened with the create at 0 s:
    // 10 s); b's 4 KiB from 20 s until its deadline at 30 s. A sample holds the value after its instant.
    let at = |s: usize| risk.series[s];
    assert_eq!(
        [at(0), at(1), at(9), at(10), at(19)],
        [(0, 0), (1_000_000_000, 8192), (9_000_000_000, 8192), (10_000_000_000, 0), (19_000_000_000, 0)]
    );
    assert_eq!((at(20).1, at(29).1, at(30).1), (4096, 4096, 0), "{risk:?}");
    assert_eq!(risk.max_bytes, 8192);
    assert_eq!(risk.mean_bytes, (8192 * 9 + 4096 * 10) / 30, "{risk:?}");

    let sync = replay(TRACE, options(SyncMode::Sync, "emmc"));
    assert_eq!(sync.bytes_at_risk.series[2], (2_000_000_000, 0), "sync mode commits at the fsync");
}

#[test]
fn a_background_checkpoint_delays_an_app_that_needs_the_device_behind_it() {
    // com.a (memory mode) leaves 32 MiB for its checkpoint at 10 s; com.b (sync mode) fsyncs at 10.1 s.
    let trace = |a_bytes: u64| {
        format!(
            "mcfs-trace 1\n\
             0.0  com.a 1 create /a\n\
             0.0  com.a 1 write /a 0 {a_bytes}\n\
             10.1 com.b 2 create /b\n\
             10.1 com.b 2 write /b 0 4096\n\
             10.1 com.b 2 fsync /b\n"
        )
    };
    let b_sync = AppConfig {
        name: "b".into(),
        uids: vec![FIRST_APP_UID + 1],
        mode: Some(SyncMode::Sync),
        max_stale_bytes: None,
        max_stale_seconds: None,
    };
    let mut opts = options(SyncMode::Memory, "emmc");
    opts.config.apps.push(b_sync);
    let quiet = replay(&trace(1), opts.clone());
    let busy = replay(&trace(32 << 20), opts);
    assert!(quiet.apps["com.b"].fsync_latency.max_ns < 50 * MS, "{:#?}", quiet.apps["com.b"]);
    // 32 MiB written at 46.23 MB/s take 0.73 s; the journal writes them once more before that.
    assert!(busy.apps["com.b"].fsync_latency.max_ns > 500 * MS, "{:#?}", busy.apps["com.b"]);
    assert_eq!(busy.apps["com.a"].stall_ns, 0, "nobody waits for background work");
}

#[test]
fn written_bytes_follow_the_file_offset_pattern() {
    let mut r = Replayer::new(ReplayOptions::default()).expect("engine starts");
    for e in events("mcfs-trace 1\n0 app 1 create /f\n0 app 1 write /f 1000 3000\n") {
        r.replay(&e);
    }
    let caller = Caller { uid: FIRST_APP_UID, gid: FIRST_APP_UID, pid: 1 };
    let ino = r.engine().lookup(caller, ROOT_INO, OsStr::new("f")).expect("f exists").ino;
    let data = r.engine().read(ino, 1000, 3000).expect("read");
    let mut expected = vec![0u8; 3000];
    pattern::fill(1000, &mut expected);
    assert_eq!(data, expected);
    // Memory mode: nothing of it reached the backing store yet, so the device wrote none of it:
    // the one data write is the engine start's, of the journal's progress slots.
    assert!(r.backend().store().stat(Path::new("f")).is_err());
    assert_eq!(r.backend().report().writes, 1, "only the engine start's writes: {:?}", r.backend().report());
}

#[test]
fn reads_of_never_written_ranges_cost_nothing_before_and_after_the_first_checkpoint() {
    // /f: 4 KiB at 0 and at 1 MiB, a hole between; /g: 1 MiB by truncate, never written.
    let setup = "mcfs-trace 2\n\
                 0 app 1 create /f\n\
                 0 app 1 write /f 0 4096\n\
                 0 app 1 write /f 1048576 4096\n\
                 0 app 1 create /g\n\
                 0 app 1 truncate /g 1048576\n";
    let opts = ReplayOptions { timing: Timing::OpenLoop, ..options(SyncMode::Memory, "emmc") };
    let mut r = Replayer::new(opts).expect("engine starts");
    for e in events(setup) {
        r.replay(&e);
    }
    let bytes_read_by = |r: &mut Replayer, line: &str| {
        let before = r.backend().report().bytes_read;
        for e in events(&format!("mcfs-trace 2\n{line}\n")) {
            r.replay(&e);
        }
        r.backend().report().bytes_read - before
    };
    assert_eq!(r.engine().stats().checkpoints, 0);
    assert_eq!(bytes_read_by(&mut r, "1 app 1 read /f 4096 65536"), 0, "hole of /f, before any checkpoint");
    assert_eq!(bytes_read_by(&mut r, "1 app 1 read /g 0 65536"), 0, "/g, before any checkpoint");
    // The staleness limit (10 s) checkpoints both files: they now exist on the backing store, holes and all.
    // (The checkpoint runs before the next event, here a mkdir, so its own reads are not counted below.)
    bytes_read_by(&mut r, "15 app 1 mkdir /d");
    assert_eq!(bytes_read_by(&mut r, "20 app 1 read /f 131072 65536"), 0, "hole of /f, after its checkpoint");
    assert_eq!(bytes_read_by(&mut r, "20 app 1 read /g 131072 65536"), 0, "/g, after its checkpoint");
    assert!(r.engine().stats().checkpoints >= 1, "{:?}", r.engine().stats());
    assert!(r.backend().store().stat(Path::new("f")).is_ok() && r.backend().store().stat(Path::new("g")).is_ok());
    // Past the end of file: nothing either.
    assert_eq!(bytes_read_by(&mut r, "21 app 1 read /f 2097152 4096"), 0);
}

#[test]
fn the_same_trace_gives_byte_equal_metrics_on_every_device_and_mode() {
    for device in DeviceProfile::BUILTIN {
        for mode in [SyncMode::Memory, SyncMode::Sync] {
            let json = || serde_json::to_string(&replay(TRACE, options(mode, device))).expect("serializes");
            let first = json();
            assert_eq!(first, json(), "{device} {mode:?}");
            assert!(first.contains("\"energy\":{\"total_nj\":"), "{first}");
        }
    }
}

#[test]
fn a_zero_sampling_period_is_refused() {
    let opts = ReplayOptions { sample_every: Duration::ZERO, ..ReplayOptions::default() };
    let err = Replayer::new(opts).err().expect("refused");
    assert!(err.to_string().contains("sample_every"), "{err}");
}
