//! The foreground app on a live mount (FastTrack's app status detector and
//! foreground-first admission, seed 001 §4.1–4.2): set by hand with
//! `mcfs ctl MNT fg`, then followed from a tasks file (`--fg-tasks`) that
//! lists a process running as an app uid. Requests of the foreground app's
//! uid count as foreground, those of another app uid as background, and a
//! background app's large file stays byte-exact while the foreground app
//! keeps writing.

mod common;

use common::{ctl, mcfs, pattern, stats, Daemon, Dirs};
use std::fs::{self, Permissions};
use std::os::unix::fs::{chown, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const FG_UID: u32 = 10002;
const BG_UID: u32 = 10003;
/// The background app's large file: many FUSE writes, each applied in many segments.
const BIG_FILE_BYTES: usize = 8 << 20;
/// A guard against hangs, not a performance assertion.
const DEADLINE: Duration = Duration::from_secs(60);

/// A process that runs as `uid` until dropped (the foreground app's task).
struct AppTask {
    child: Child,
}

impl AppTask {
    fn start(uid: u32) -> AppTask {
        let id = uid.to_string();
        let child = Command::new("setpriv")
            .args(["--reuid", &id, "--regid", &id, "--clear-groups", "sleep", "600"])
            .stdin(Stdio::null())
            .spawn()
            .expect("run setpriv (util-linux)");
        let task = AppTask { child };
        // setpriv changes uid after it starts: list the task only once it runs as the app.
        wait_until("the task to run as its app uid", || real_uid(task.pid()) == Some(uid));
        task
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for AppTask {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn real_uid(pid: u32) -> Option<u32> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("Uid:"))?;
    line.split_whitespace().next()?.parse().ok()
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < DEADLINE, "gave up waiting for {what} after {DEADLINE:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `mcfs ctl MNT fg`: the foreground app's name, or `none`.
fn foreground(dirs: &Dirs) -> String {
    let mnt = dirs.mnt.display().to_string();
    mcfs(dirs, &["ctl", &mnt, "fg"]).assert_success("mcfs ctl fg").trim().to_string()
}

/// The dispatcher's counters from `mcfs stat --json`.
fn dispatch(dirs: &Dirs) -> (u64, u64, serde_json::Value) {
    let all = stats(dirs);
    let fasttrack = all["fasttrack"].clone();
    let count = |key: &str| {
        fasttrack[key].as_u64().unwrap_or_else(|| panic!("mcfs stat: fasttrack.{key} is not a number:\n{all:#}"))
    };
    (count("fg_requests"), count("bg_requests"), fasttrack.clone())
}

/// A directory in the mount owned by `uid`.
fn app_dir(mnt: &Path, name: &str, uid: u32) -> PathBuf {
    let dir = mnt.join(name);
    fs::create_dir(&dir).unwrap_or_else(|e| panic!("mkdir {}: {e}", dir.display()));
    chown(&dir, Some(uid), Some(uid)).unwrap_or_else(|e| panic!("chown {}: {e}", dir.display()));
    dir
}

/// `program args` as `uid`, which must succeed.
fn run_as(dirs: &Dirs, uid: u32, program: &str, args: &[&str]) {
    let mut cmd = Command::new(program);
    cmd.args(args).stdin(Stdio::null()).uid(uid).gid(uid);
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let log = dirs.logs.join(format!("as-{uid}-{program}-{}.log", RUNS.fetch_add(1, Ordering::Relaxed)));
    common::run_logged(cmd, &log).assert_success(&format!("{program} {} as uid {uid}", args.join(" ")));
}

/// The foreground app writing without pause until `stop` exists.
fn start_foreground_load(fg_dir: &Path, stop: &Path) -> Child {
    let script = format!(
        "while [ ! -e '{}' ]; do dd if=/dev/zero of='{}' bs=65536 count=16 conv=notrunc status=none || exit 1; done",
        stop.display(),
        fg_dir.join("load").display()
    );
    Command::new("sh").args(["-c", &script]).stdin(Stdio::null()).uid(FG_UID).gid(FG_UID).spawn().expect("run sh")
}

fn stop_foreground_load(mut load: Child, stop: &Path) {
    fs::write(stop, "").expect("create the stop file");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = load.try_wait().expect("wait for the load") {
            break status;
        }
        assert!(start.elapsed() < DEADLINE, "the foreground load did not stop");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "the foreground app's writes failed ({status})");
}

#[test]
fn foreground_app_is_set_followed_and_served_first() {
    common::require_root("it runs processes as app uids 10002 and 10003");
    let dirs = Dirs::new(None);
    // The apps' uids must reach the mount point and the source files inside the test directory.
    let top = dirs.mnt.parent().unwrap();
    fs::set_permissions(top, Permissions::from_mode(0o755)).expect("chmod the test directory");
    let tasks = dirs.logs.join("top-app-tasks");
    fs::write(&tasks, "").expect("create the tasks file");
    let tasks_arg = tasks.display().to_string();
    let mount_args = ["--allow-other", "--fg-tasks", tasks_arg.as_str()];
    let daemon = Daemon::foreground(&dirs, &mount_args);
    let mnt = dirs.mnt.display().to_string();

    // By hand; an empty tasks file chose nobody and, unchanged, does not override.
    assert_eq!(foreground(&dirs), "none");
    ctl(&dirs, &["fg", "uid:10001"]);
    assert_eq!(foreground(&dirs), "uid:10001");
    ctl(&dirs, &["fg", "none"]);
    assert_eq!(foreground(&dirs), "none");
    ctl(&dirs, &["fg", "uid:10001"]);
    // Several polls of the unchanged tasks file later, the manual setting still holds.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(foreground(&dirs), "uid:10001");
    assert_eq!(stats(&dirs)["fasttrack"]["foreground"], "uid:10001");
    let refused = mcfs(&dirs, &["ctl", &mnt, "fg", "no-such-app"]);
    assert!(!refused.status.success(), "an unknown app was accepted:\n{}", refused.output);
    assert!(refused.output.contains("no-such-app"), "the error names the app:\n{}", refused.output);
    assert_eq!(foreground(&dirs), "uid:10001", "a refused change changes nothing");

    // From the tasks file: it lists a task of uid 10002.
    let task = AppTask::start(FG_UID);
    fs::write(&tasks, format!("{}\n", task.pid())).expect("write the tasks file");
    wait_until("the tasks file to make uid:10002 foreground", || foreground(&dirs) == "uid:10002");
    let table = mcfs(&dirs, &["stat", &mnt]).assert_success("mcfs stat");
    assert!(table.contains("foreground app uid:10002"), "mcfs stat:\n{table}");

    // Requests of the foreground uid count as foreground, another app's as background.
    let fg_dir = app_dir(&dirs.mnt, "fg", FG_UID);
    let bg_dir = app_dir(&dirs.mnt, "bg", BG_UID);
    let (fg0, bg0, _) = dispatch(&dirs);
    let fg_small = format!("of={}", fg_dir.join("small").display());
    run_as(&dirs, FG_UID, "dd", &["if=/dev/zero", &fg_small, "bs=4096", "count=16", "conv=fsync", "status=none"]);
    let (fg1, bg1, _) = dispatch(&dirs);
    assert!(fg1 > fg0, "uid 10002's writes were not foreground requests ({fg0} -> {fg1})");
    assert_eq!(bg1, bg0, "nobody else used the mount");
    let bg_small = format!("of={}", bg_dir.join("small").display());
    run_as(&dirs, BG_UID, "dd", &["if=/dev/zero", &bg_small, "bs=4096", "count=16", "conv=fsync", "status=none"]);
    let (fg2, bg2, _) = dispatch(&dirs);
    assert!(bg2 > bg1, "uid 10003's writes were not background requests ({bg1} -> {bg2})");
    assert_eq!(fg2, fg1, "the foreground app was idle");

    // A background app's large file, written while the foreground app keeps writing.
    let content = pattern(0xF0F0, BIG_FILE_BYTES);
    let source = dirs.logs.join("big-source");
    fs::write(&source, &content).expect("write the source file");
    fs::set_permissions(&source, Permissions::from_mode(0o644)).expect("chmod the source file");
    let (big, stop) = (bg_dir.join("big"), dirs.logs.join("stop-load"));
    let load = start_foreground_load(&fg_dir, &stop);
    let (source_arg, big_arg) = (format!("if={}", source.display()), format!("of={}", big.display()));
    run_as(&dirs, BG_UID, "dd", &[&source_arg, &big_arg, "bs=1048576", "status=none"]);
    stop_foreground_load(load, &stop);
    let (_, _, after_write) = dispatch(&dirs);
    println!("dispatch after the background write under foreground load: {after_write}");
    daemon.unmount();

    // Remounted, so that the kernel has no cached pages: the background app reads
    // the file back through mcfs, from the backing store, while the foreground app writes.
    let daemon = Daemon::foreground(&dirs, &mount_args);
    assert_eq!(foreground(&dirs), "uid:10002", "the tasks file is read before the mount serves");
    let load = start_foreground_load(&fg_dir, &stop_again(&stop));
    run_as(&dirs, BG_UID, "cmp", &[&source.display().to_string(), &big.display().to_string()]);
    stop_foreground_load(load, &stop_again(&stop));
    let (_, _, after_read) = dispatch(&dirs);
    println!("dispatch after the background read under foreground load: {after_read}");
    daemon.unmount();
    let backing = fs::read(dirs.backing.join("bg/big")).expect("read the background file in the backing store");
    assert!(backing == content, "bg/big in the backing store differs from what the background app wrote");
    drop(task);
}

/// A second stop file for the second load (the first one still exists).
fn stop_again(stop: &Path) -> PathBuf {
    stop.with_extension("again")
}
