//! Sync mode gives an app POSIX durability (invariant 3): once its fsync has
//! returned, its data survives a SIGKILL of the daemon, even though the
//! other apps on the same mount are in memory mode with checkpoints an hour
//! apart. One app is in sync mode by the config file, another is switched
//! with `mcfs ctl MOUNTPOINT mode uid:N sync`; each writes as its own uid.

mod common;

use common::{ctl, pattern, recover, stats, Daemon, Dirs};
use std::fs::{self, File, Permissions};
use std::os::unix::fs::{chown, MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

const BANK_UID: u32 = 10042;
const NOTES_UID: u32 = 10043;

/// Memory mode everywhere but for the app `name` (uid `uid`), and no timed
/// checkpoint during the test.
fn config_with_sync_app(name: &str, uid: u32) -> String {
    format!(
        "mode = \"memory\"\nmax_stale_seconds = 3600\nwriteback_interval_seconds = 3600\n\n\
         [[apps]]\nname = \"{name}\"\nuids = [{uid}]\nmode = \"sync\"\n"
    )
}

/// A directory in the mount owned by `uid`, committed before the test writes.
fn app_dir(mnt: &Path, name: &str, uid: u32) {
    let dir = mnt.join(name);
    fs::create_dir(&dir).unwrap_or_else(|e| panic!("mkdir {}: {e}", dir.display()));
    chown(&dir, Some(uid), Some(uid)).unwrap_or_else(|e| panic!("chown {}: {e}", dir.display()));
}

/// `dd ... conv=fsync` as `uid`: writes `content` to `target`, fsyncs, exits.
fn write_and_fsync_as(dirs: &Dirs, uid: u32, target: &Path, content: &[u8]) {
    let source = dirs.logs.join(format!("source-{uid}"));
    fs::write(&source, content).expect("write the source file");
    let mut cmd = Command::new("dd");
    cmd.arg(format!("of={}", target.display()))
        .args(["bs=65536", "iflag=fullblock", "conv=fsync", "status=none"])
        .stdin(File::open(&source).expect("open the source"))
        .uid(uid)
        .gid(uid);
    let log = dirs.logs.join(format!("dd-{uid}.log"));
    common::run_logged(cmd, &log).assert_success(&format!("dd conv=fsync as uid {uid} to {}", target.display()));
}

fn app_stat<'a>(all: &'a serde_json::Value, app: &str) -> &'a serde_json::Value {
    all["apps"].get(app).unwrap_or_else(|| panic!("mcfs stat has no app {app:?}:\n{all:#}"))
}

fn counter(all: &serde_json::Value, app: &str, key: &str) -> u64 {
    app_stat(all, app)[key].as_u64().unwrap_or_else(|| panic!("mcfs stat: {app}.{key} is not a number:\n{all:#}"))
}

fn assert_file(path: &Path, content: &[u8], uid: u32) {
    let found = fs::read(path).unwrap_or_else(|e| panic!("{}: {e} (it was fsynced in sync mode)", path.display()));
    assert!(
        found == content,
        "{}: {} bytes, expected the {} bytes fsynced in sync mode",
        path.display(),
        found.len(),
        content.len()
    );
    let owner = fs::metadata(path).unwrap().uid();
    assert_eq!(owner, uid, "{}: owner", path.display());
}

#[test]
fn sync_mode_fsync_survives_sigkill() {
    common::require_root("it writes as app uids 10042 and 10043");
    let dirs = Dirs::new(Some(&config_with_sync_app("bank", BANK_UID)));
    // The apps' uids must reach the mount point inside the test directory.
    let top = dirs.mnt.parent().unwrap();
    fs::set_permissions(top, Permissions::from_mode(0o755)).expect("chmod the test directory");
    let daemon = Daemon::foreground(&dirs, &["--allow-other"]);

    app_dir(&dirs.mnt, "bank", BANK_UID);
    app_dir(&dirs.mnt, "notes", NOTES_UID);
    ctl(&dirs, &["checkpoint"]);
    ctl(&dirs, &["mode", &format!("uid:{NOTES_UID}"), "sync"]);

    let ledger = pattern(1, 300_001);
    let notes = pattern(2, 70_000);
    let scratch = pattern(3, 50_000);
    write_and_fsync_as(&dirs, BANK_UID, &dirs.mnt.join("bank/ledger"), &ledger);
    write_and_fsync_as(&dirs, NOTES_UID, &dirs.mnt.join("notes/today"), &notes);
    write_and_fsync_as(&dirs, 0, &dirs.mnt.join("scratch"), &scratch);

    let all = stats(&dirs);
    assert_eq!(app_stat(&all, "bank")["mode"], "sync", "mode of the app configured as sync:\n{all:#}");
    assert!(
        counter(&all, "bank", "bytes_written") >= ledger.len() as u64,
        "bank's writes did not reach mcfs:\n{all:#}"
    );
    assert!(counter(&all, "bank", "fsync_honoured") >= 1, "bank's fsync was not honoured:\n{all:#}");
    assert_eq!(counter(&all, "bank", "fsync_absorbed"), 0, "bank's fsync was absorbed:\n{all:#}");
    let notes_app = format!("uid:{NOTES_UID}");
    assert!(
        counter(&all, &notes_app, "fsync_honoured") >= 1,
        "fsync after `ctl mode {notes_app} sync` was not honoured:\n{all:#}"
    );
    assert!(
        counter(&all, "uid:0", "fsync_absorbed") >= 1,
        "root (memory mode) had its fsync honoured instead of absorbed:\n{all:#}"
    );

    daemon.kill();
    let report = recover(&dirs);
    println!("recover: {}", report.trim());
    assert_file(&dirs.backing.join("bank/ledger"), &ledger, BANK_UID);
    assert_file(&dirs.backing.join("notes/today"), &notes, NOTES_UID);
    let scratch_survived = fs::read(dirs.backing.join("scratch")).map(|c| c == scratch).unwrap_or(false);
    println!("memory-mode file survived the kill: {scratch_survived} (not required: its checkpoint was an hour away)");

    let daemon = Daemon::foreground(&dirs, &["--allow-other"]);
    assert_file(&dirs.mnt.join("bank/ledger"), &ledger, BANK_UID);
    assert_file(&dirs.mnt.join("notes/today"), &notes, NOTES_UID);
    daemon.unmount();
}

/// Issue 10, item 6: a sync-mode app (uid 10002) overwrites and fsyncs a
/// file a memory-mode app (uid 10001) created. The data goes to 10001's
/// write log (data is charged to the file's app); the fsync must still make
/// it durable. Before, it was absorbed as 10001's, and after a SIGKILL the
/// old content was back.
#[test]
fn a_sync_apps_fsync_of_another_apps_file_survives_sigkill() {
    common::require_root("it writes as app uids 10001 and 10002");
    let dirs = Dirs::new(Some(&config_with_sync_app("editor", 10002)));
    let top = dirs.mnt.parent().unwrap();
    fs::set_permissions(top, Permissions::from_mode(0o755)).expect("chmod the test directory");
    let daemon = Daemon::foreground(&dirs, &["--allow-other"]);
    app_dir(&dirs.mnt, "shared", 10001);
    let doc = dirs.mnt.join("shared/doc");
    write_and_fsync_as(&dirs, 10001, &doc, &pattern(4, 20_000));
    fs::set_permissions(&doc, Permissions::from_mode(0o666)).expect("chmod the shared file");
    ctl(&dirs, &["checkpoint"]);

    let edited = pattern(5, 30_001);
    write_and_fsync_as(&dirs, 10002, &doc, &edited);
    let all = stats(&dirs);
    assert!(counter(&all, "editor", "fsync_honoured") >= 1, "the editor's fsync was not honoured:\n{all:#}");

    daemon.kill();
    recover(&dirs);
    assert_file(&dirs.backing.join("shared/doc"), &edited, 10001);
}
