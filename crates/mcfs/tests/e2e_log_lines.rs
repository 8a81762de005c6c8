//! The daemon's log reads well (issue 13): a clean unmount leaves no
//! warning, each checkpoint and each recovery is told in words at INFO, and
//! DEBUG is not drowned in a line per FUSE request (those are TRACE).

mod common;

use common::{ctl, Daemon, Dirs};
use std::fs;
use std::process::Command;
use std::time::{Duration, Instant};

fn daemon_log(dirs: &Dirs) -> String {
    fs::read_to_string(dirs.backing.join(".mcfs/mcfs.log")).expect("the daemon's log")
}

fn assert_no_warning(log: &str, after: &str) {
    let bad: Vec<&str> = log.lines().filter(|l| l.contains(" WARN ") || l.contains(" ERROR ")).collect();
    assert!(bad.is_empty(), "{after} logged:\n{}\n\nthe whole log:\n{log}", bad.join("\n"));
}

#[test]
fn a_clean_unmount_logs_no_warning() {
    let dirs = Dirs::new(None);
    let daemon = Daemon::daemonised(&dirs, &[]);
    fs::write(dirs.mnt.join("f"), b"data").expect("write through the mount");
    let all = common::stats(&dirs);
    let lock = fs::read_to_string(dirs.backing.join(".mcfs/lock")).expect("the lock file");
    assert_eq!(all["daemon"]["pid"].as_u64().map(|p| p.to_string()), Some(lock.trim().to_string()), "{all:#}");
    assert_eq!(all["daemon"]["log"].as_str(), dirs.backing.join(".mcfs/mcfs.log").to_str(), "{:#}", all["daemon"]);
    daemon.unmount();
    let log = daemon_log(&dirs);
    assert!(log.contains("engine shut down; everything is checkpointed"), "{log}");
    assert_no_warning(&log, "mcfs umount");

    // Unmounted from outside, as `umount MNT` or fusermount3 -u does it.
    let daemon = Daemon::daemonised(&dirs, &[]);
    let out = Command::new("fusermount3").arg("-u").arg(&dirs.mnt).output().expect("run fusermount3");
    assert!(out.status.success(), "fusermount3 -u: {}", String::from_utf8_lossy(&out.stderr));
    let start = Instant::now();
    while daemon_log(&dirs).matches("engine shut down; everything is checkpointed").count() < 2 {
        assert!(start.elapsed() < Duration::from_secs(60), "the daemon did not stop:\n{}", daemon_log(&dirs));
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(daemon);
    assert_no_warning(&daemon_log(&dirs), "fusermount3 -u");
}

#[test]
fn a_checkpoint_is_one_info_line_and_recovery_is_told_in_words() {
    let dirs = Dirs::new(None);
    let daemon = Daemon::foreground(&dirs, &[]);
    fs::write(dirs.mnt.join("f"), vec![7u8; 5000]).expect("write through the mount");
    ctl(&dirs, &["checkpoint"]);
    let log = daemon.log_path();
    daemon.unmount();
    let log = fs::read_to_string(log).expect("the daemon's log");
    let line = log
        .lines()
        .find(|l| l.contains(" INFO mcfs_core::checkpoint: checkpoint 1 (requested) committed uid:0 ("))
        .unwrap_or_else(|| panic!("no INFO line for the checkpoint:\n{log}"));
    assert!(line.contains(" written to the backing store in "), "{line}");
    assert!(
        log.lines().any(|l| l.ends_with(" INFO mcfs_core::engine: recovery: no committed transaction to replay")),
        "recovery in words:\n{log}"
    );
    assert!(!log.contains("RecoveryReport"), "no Debug struct:\n{log}");
}

#[test]
fn per_request_records_are_trace_not_debug() {
    let dirs = Dirs::new(None);
    let requests = |level: &str| {
        let daemon = Daemon::foreground_with_env(&dirs, &[], |_| vec![("MCFS_LOG".into(), level.into())]);
        for i in 0..20 {
            fs::write(dirs.mnt.join(format!("f{i}")), b"x").expect("write through the mount");
        }
        let log = daemon.log_path();
        daemon.unmount();
        let log = fs::read_to_string(log).expect("the daemon's log");
        // fuser's record per request, or the io_uring transport's.
        let per_request = |l: &&str| l.contains("fuser::request") || l.contains("mcfs_fuse::request");
        (log.lines().filter(per_request).count(), log)
    };
    let (at_debug, log) = requests("debug");
    assert_eq!(at_debug, 0, "DEBUG has per-request lines:\n{log}");
    assert!(log.contains(" DEBUG "), "DEBUG still has its own records:\n{log}");
    let (at_trace, log) = requests("trace");
    assert!(at_trace >= 20, "TRACE has a line per request ({at_trace}):\n{log}");
}
