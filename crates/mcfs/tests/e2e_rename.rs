//! The write-temp-then-rename pattern on a real mcfs mount, with the daemon
//! SIGKILLed at random moments.
//!
//! A writer replaces `file` again and again: it writes the whole new version
//! to `file.tmp`, fsyncs it and renames it over `file`. After each kill and
//! recovery `file` must hold one complete version — never empty, never a
//! mix of two — no older than the version an earlier recovery showed and no
//! newer than the writer reached, and the versions lost may hold no more
//! than about max_stale_bytes of writes (bounded staleness). Every other
//! round, `mcfs recover` is itself SIGKILLed at a random moment first.

mod common;

use common::{ctl, mix, pattern, recover, recover_after_interrupted_recovery, Daemon, Dirs};
use rand::{Rng, SeedableRng};
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::Duration;

const KILL_ROUNDS: usize = 4;
const MAX_VERSIONS_PER_ROUND: u64 = 50_000;

/// The bytes bound of invariant 2 ("bounded staleness"), as in CONFIG.
const MAX_STALE_BYTES: u64 = 1 << 20;
const CONFIG: &str = "\
max_stale_bytes = 1048576
max_stale_seconds = 0.25
writeback_interval_seconds = 0.2
";

/// Version `v` of the file: a header naming it, a body whose size and bytes
/// follow from `v` (1 byte to ~192 KiB, so versions straddle pages), a trailer.
fn version_content(v: u64) -> Vec<u8> {
    let mut out = format!("mcfs-version {v:020}\n").into_bytes();
    out.extend(pattern(v, 1 + (mix(v) % 196_608) as usize));
    out.extend(format!("\nend {v:020}\n").into_bytes());
    out
}

/// Which complete version `content` is, or why it is none.
fn parse_version(content: &[u8]) -> Result<u64, String> {
    let header = content.get(..34).ok_or_else(|| format!("{} bytes: too short for a header", content.len()))?;
    let v: u64 = std::str::from_utf8(header)
        .ok()
        .and_then(|h| h.strip_prefix("mcfs-version "))
        .and_then(|h| h.trim_end().parse().ok())
        .ok_or_else(|| format!("bad header {:?}", String::from_utf8_lossy(header)))?;
    let expected = version_content(v);
    if content != expected.as_slice() {
        let first_diff =
            content.iter().zip(&expected).position(|(a, b)| a != b).unwrap_or(content.len().min(expected.len()));
        return Err(format!(
            "version {v} is torn: {} bytes, expected {}, first difference at byte {first_diff}",
            content.len(),
            expected.len()
        ));
    }
    Ok(v)
}

fn replace(dir: &Path, v: u64) -> std::io::Result<()> {
    let tmp = dir.join("file.tmp");
    let mut f = File::create(&tmp)?;
    f.write_all(&version_content(v))?;
    f.sync_all()?;
    drop(f);
    fs::rename(&tmp, dir.join("file"))
}

/// Replaces the file with versions `first..` until an error (the daemon
/// died); returns the last version whose rename returned.
fn replace_until_error(dir: PathBuf, first: u64) -> u64 {
    let mut acked = first - 1;
    for v in first..first + MAX_VERSIONS_PER_ROUND {
        if replace(&dir, v).is_err() {
            break;
        }
        acked = v;
    }
    acked
}

fn current_version(mnt: &Path) -> u64 {
    let path = mnt.join("file");
    let content =
        fs::read(&path).unwrap_or_else(|e| panic!("{}: {e} (the file must survive every crash)", path.display()));
    parse_version(&content).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn rename_replacement_is_atomic_across_sigkill() {
    rename_replacement_survives_sigkill("operation");
}

/// With the kernel's writeback cache the new version's pages reach the
/// daemon at the fsync or later, the rename before them: the rename is a
/// sync point, and the kernel hands them over first.
#[test]
fn rename_replacement_is_atomic_across_sigkill_in_sync_point_mode() {
    rename_replacement_survives_sigkill("sync-point");
}

fn rename_replacement_survives_sigkill(consistency: &str) {
    let seed = common::seed(&format!("rename_replacement_{consistency}"));
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let dirs = Dirs::new(Some(&format!("{CONFIG}consistency = \"{consistency}\"\n")));

    // Version 0 is committed before any kill: every recovery must find a version.
    let daemon = Daemon::foreground(&dirs, &[]);
    replace(&dirs.mnt, 0).expect("write version 0");
    ctl(&dirs, &["checkpoint"]);
    let mut daemon = Some(daemon);

    let mut seen = 0;
    for round in 1..=KILL_ROUNDS {
        let live = daemon.take().expect("a mounted daemon");
        let (mnt, first) = (dirs.mnt.clone(), seen + 1);
        let writer = thread::spawn(move || replace_until_error(mnt, first));
        let delay = Duration::from_millis(rng.gen_range(30..1200));
        thread::sleep(delay);
        let acked = live.kill_then(|| writer.join().expect("writer thread"));

        // Every other round, recovery itself is killed once first.
        let report = if round % 2 == 0 {
            recover_after_interrupted_recovery(&dirs, Duration::from_millis(rng.gen_range(0..150)))
        } else {
            recover(&dirs)
        };
        // The recovered backing directory is a plain tree: check it there too.
        let in_backing = parse_version(&fs::read(dirs.backing.join("file")).expect("file in the backing directory"))
            .unwrap_or_else(|e| panic!("backing file after recover: {e}"));
        daemon = Some(Daemon::foreground(&dirs, &[]));
        let v = current_version(&dirs.mnt);
        println!(
            "rename round {round}: killed after {delay:?}; version acknowledged {acked}, present {v}; recover: {}",
            report.trim().replace('\n', " | ")
        );
        assert_eq!(v, in_backing, "round {round}: the mount shows another version than the backing directory");
        assert!(v >= seen, "round {round}: version {seen} had survived an earlier crash, now version {v}");
        assert!(v <= acked + 1, "round {round}: version {v} present but the writer reached only {acked}");
        // Bounded staleness: what a crash takes is at most max_stale_bytes of
        // the app's writes. Twice that, plus one version, absorbs accounting
        // details (page rounding, the write in flight).
        let lost: u64 = (v + 1..=acked).map(|lost| version_content(lost).len() as u64).sum();
        let allowed = 2 * MAX_STALE_BYTES + version_content(acked).len() as u64;
        assert!(
            lost <= allowed,
            "round {round}: the crash lost versions {}..={acked}, {lost} bytes of acknowledged writes; \
             max_stale_bytes is {MAX_STALE_BYTES}",
            v + 1
        );
        seen = v;
    }

    // After a clean unmount the last acknowledged version is the one on disk.
    let last = seen + 3;
    for v in seen + 1..=last {
        replace(&dirs.mnt, v).expect("replace");
    }
    daemon.take().expect("a mounted daemon").unmount();
    let on_disk = fs::read(dirs.backing.join("file")).expect("file in the backing directory");
    assert_eq!(parse_version(&on_disk), Ok(last), "backing file after a clean unmount");
    assert!(!dirs.backing.join("file.tmp").exists(), "file.tmp was renamed away, yet it is in the backing directory");
}

#[test]
fn version_parser_rejects_torn_and_empty_files() {
    let good = version_content(7);
    assert_eq!(parse_version(&good), Ok(7));
    assert!(parse_version(b"").is_err());
    assert!(parse_version(&good[..good.len() - 1]).is_err());
    let mut mixed = good.clone();
    let other = version_content(8);
    let cut = 40.min(other.len());
    mixed[34..cut].copy_from_slice(&other[34..cut]);
    assert!(parse_version(&mixed).is_err());
}
