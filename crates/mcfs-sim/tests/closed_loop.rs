//! Closed-loop replay on hand-built traces, in virtual time: a slow device delays the later operations of
//! the process that waited (by exactly what it waited, its think time kept) and nobody else's; open loop
//! keeps the recorded times and lets stalls pile up past the trace's length.

use mcfs_core::{AppConfig, Config, SyncMode};
use mcfs_device::DeviceProfile;
use mcfs_sim::replay::{Metrics, ReplayOptions, Replayer, Timing, FIRST_APP_UID};
use mcfs_sim::text::TextReader;
use std::fmt::Write;

const MS: u64 = 1_000_000;

fn replay(text: &str, timing: Timing, sync_uids: &[u32]) -> Metrics {
    let apps = sync_uids
        .iter()
        .map(|&uid| AppConfig {
            name: format!("sync{uid}"),
            uids: vec![uid],
            mode: Some(SyncMode::Sync),
            max_stale_bytes: None,
            max_stale_seconds: None,
        })
        .collect();
    let config = Config { max_stale_seconds: 10.0, apps, ..Config::default() };
    let options = ReplayOptions {
        config,
        device: DeviceProfile::builtin("emmc").expect("built-in"),
        timing,
        ..ReplayOptions::default()
    };
    Replayer::run(options, TextReader::new(text.as_bytes())).expect("replay succeeds")
}

/// One process in sync mode: `rounds` of (write 1 MiB, fsync) `gap_ms` apart, then a close (no I/O).
fn fsync_storm(rounds: u32, gap_ms: u32) -> String {
    let mut t = String::from("mcfs-trace 1\n0 com.db 1 create /db\n");
    for i in 0..rounds {
        let at = f64::from(i * gap_ms) / 1e3;
        let _ = writeln!(t, "{at:.3} com.db 1 write /db {} 1048576", u64::from(i) << 20);
        let _ = writeln!(t, "{at:.3} com.db 1 fsync /db");
    }
    let _ = writeln!(t, "{:.3} com.db 1 close /db", f64::from(rounds * gap_ms) / 1e3);
    t
}

/// com.db writes `bytes` and fsyncs them at 0, then the `rest` of the trace.
fn one_fsync(bytes: u64, rest: &str) -> String {
    format!("mcfs-trace 1\n0 com.db 1 create /db\n0 com.db 1 write /db 0 {bytes}\n0 com.db 1 fsync /db\n{rest}")
}

#[test]
fn a_slow_device_delays_the_waiting_process_by_what_it_waited_and_keeps_its_think_time() {
    let m = replay(&fsync_storm(20, 1), Timing::ClosedLoop, &[FIRST_APP_UID]);
    let app = &m.apps["com.db"];
    assert_eq!(m.timing, Timing::ClosedLoop);
    assert_eq!(m.trace_ns, 20 * MS);
    // Each 1 MiB fsync in sync mode takes tens of ms on eMMC, far more than the 1 ms think time.
    assert!(app.fsync_latency.p50_ns > 20 * MS, "{app:#?}");
    // Every event issued after the previous one completed plus the recorded gap, so the last one (the
    // close, which waits for nothing) issues at its recorded time plus everything the process waited.
    assert_eq!(app.delay_ns, app.stall_ns, "{app:#?}");
    assert_eq!(m.virtual_ns, m.trace_ns + app.stall_ns, "{m:#?}");
    // Nothing overlaps: the process never waits longer than the replay lasts.
    assert!(m.stall_ns <= m.virtual_ns);
}

#[test]
fn open_loop_keeps_recorded_times_and_piles_stalls_past_the_trace() {
    let open = replay(&fsync_storm(20, 1), Timing::OpenLoop, &[FIRST_APP_UID]);
    let closed = replay(&fsync_storm(20, 1), Timing::ClosedLoop, &[FIRST_APP_UID]);
    assert_eq!(open.timing, Timing::OpenLoop);
    assert_eq!((open.virtual_ns, open.trace_ns, open.apps["com.db"].delay_ns), (20 * MS, 20 * MS, 0));
    // Each fsync waits for the backlog of those before it: stalls sum past the length of the replay.
    assert!(open.stall_ns > 10 * open.virtual_ns, "{open:#?}");
    assert!(open.fsync_latency.p50_ns > 2 * closed.fsync_latency.p50_ns, "{open:#?}\n{closed:#?}");
    // The engine did the same work either way.
    assert_eq!((open.bytes_written, open.fsync_honoured), (closed.bytes_written, closed.fsync_honoured));
}

#[test]
fn a_slow_app_does_not_delay_another() {
    // com.db (sync mode) fsyncs 1 MiB at 0; com.notes (memory mode) writes at 1 ms and 2 s.
    let rest = "0.001 com.notes 2 create /n\n0.002 com.db 1 close /db\n\
                2 com.notes 2 write /n 0 4096\n2 com.notes 2 close /n\n";
    let m = replay(&one_fsync(1 << 20, rest), Timing::ClosedLoop, &[FIRST_APP_UID]);
    let (db, notes) = (&m.apps["com.db"], &m.apps["com.notes"]);
    assert!(db.delay_ns > 20 * MS && db.delay_ns == db.stall_ns, "{db:#?}");
    assert_eq!((notes.delay_ns, notes.stall_ns), (0, 0), "{notes:#?}");
    assert_eq!(m.virtual_ns, 2_000 * MS, "the last event is com.notes', on time");
}

#[test]
fn think_time_after_a_wait_is_the_recorded_gap() {
    // One fsync, then 3 s of think time before the close.
    let m = replay(&one_fsync(65536, "3 com.db 1 close /db\n"), Timing::ClosedLoop, &[FIRST_APP_UID]);
    let fsync = m.apps["com.db"].fsync_latency.max_ns;
    assert!(fsync > 0);
    assert_eq!(m.virtual_ns, 3_000 * MS + m.apps["com.db"].stall_ns);
    assert!(m.apps["com.db"].stall_ns >= fsync);
}
