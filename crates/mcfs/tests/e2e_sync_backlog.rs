//! Issue 12, item 1: a sync-mode fsync returns once its transaction's commit
//! record is durable in the journal; the in-place apply comes later. Here the
//! backlog bounds are an hour and a gigabyte away, so every acknowledged
//! fsync is still waiting in the journal when the daemon is SIGKILLed:
//! recovery must bring each of them back, in order (later writes over
//! earlier ones of the same pages), and the remount must show them.

mod common;

use common::{pattern, recover, stats, Daemon, Dirs};
use std::fs::{self, OpenOptions};
use std::os::unix::fs::FileExt;

const CONFIG: &str = "mode = \"sync\"\nmax_stale_seconds = 3600\nwriteback_interval_seconds = 3600\n\
                      apply_backlog_seconds = 3600\napply_backlog_bytes = 1073741824\n";

/// 4 KiB records, each written and fsynced on its own; every third one
/// rewrites an earlier record, so waiting transactions share pages.
const RECORDS: u64 = 48;
const RECORD: usize = 4096;

fn offset_of(i: u64) -> u64 {
    let slot = if i % 3 == 2 { i / 2 } else { i };
    slot * RECORD as u64
}

#[test]
fn acknowledged_fsyncs_waiting_in_the_journal_survive_sigkill() {
    common::require_root("it mounts FUSE");
    let dirs = Dirs::new(Some(CONFIG));
    let daemon = Daemon::foreground(&dirs, &[]);
    let path = dirs.mnt.join("ledger");
    let file = OpenOptions::new().create(true).truncate(true).read(true).write(true).open(&path).expect("create");
    let mut expected = Vec::new();
    for i in 0..RECORDS {
        let record = pattern(i + 1, RECORD);
        let at = offset_of(i);
        file.write_all_at(&record, at).unwrap_or_else(|e| panic!("write record {i}: {e}"));
        file.sync_all().unwrap_or_else(|e| panic!("fsync record {i}: {e}"));
        let end = at as usize + RECORD;
        if expected.len() < end {
            expected.resize(end, 0);
        }
        expected[at as usize..end].copy_from_slice(&record);
    }
    let all = stats(&dirs);
    let waiting = all["journal_waiting_transactions"].as_u64().expect("journal_waiting_transactions");
    assert!(waiting >= RECORDS, "every fsync's transaction should still wait in the journal:\n{all:#}");
    let in_place = fs::read(dirs.backing.join("ledger")).unwrap_or_default();
    assert!(in_place.iter().all(|b| *b == 0), "nothing of the records is applied in place before the kill");

    daemon.kill();
    let report = recover(&dirs);
    println!("recover: {}", report.trim());
    assert!(report.contains("replayed committed transactions"), "recovery replayed the waiting ones: {report}");
    let recovered = fs::read(dirs.backing.join("ledger")).expect("the ledger is in the backing store");
    assert!(recovered == expected, "after SIGKILL and recovery the ledger lacks acknowledged records");

    let daemon = Daemon::foreground(&dirs, &[]);
    assert!(fs::read(dirs.mnt.join("ledger")).expect("read the remounted ledger") == expected);
    daemon.unmount();
}
