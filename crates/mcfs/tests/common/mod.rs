//! Harness of the end-to-end tests: runs the built `mcfs` binary on a real
//! FUSE mount in a temporary directory, kills it, recovers and remounts.
//!
//! Invariant: a `Daemon` never outlives its test with the mount left behind;
//! its `Drop` unmounts (cleanly if the daemon lives, lazily if it is dead).
//! A machine without FUSE makes every test fail with a message that says so:
//! these tests are the proof that mcfs works, so they are never skipped.

#![allow(dead_code)] // each test binary uses a different part of the harness

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Longest a command (mount, recover, umount) may take before the test
/// declares it hung. A guard against hangs, not a performance assertion.
const COMMAND_DEADLINE: Duration = Duration::from_secs(120);
const POLL: Duration = Duration::from_millis(20);

pub fn mcfs_bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_mcfs"))
}

/// Fails the test unless this machine can mount FUSE file systems.
pub fn require_fuse() {
    assert!(
        Path::new("/dev/fuse").exists(),
        "/dev/fuse is missing: the end-to-end tests need FUSE (run scripts/setup.sh as root, \
         or give the container --device /dev/fuse --cap-add SYS_ADMIN)"
    );
    let found = std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|dir| dir.join("fusermount3").is_file()))
        .unwrap_or(false);
    assert!(found, "fusermount3 is not on PATH: install fuse3 (scripts/setup.sh does)");
}

/// Fails the test unless it runs as root (needed to act as other uids).
pub fn require_root(why: &str) {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    assert_eq!(euid, 0, "this test must run as root: {why}");
}

/// The seed of a randomized test: MCFS_SEED if set, otherwise fresh. Printed
/// so that a failing run can be replayed.
pub fn seed(test: &str) -> u64 {
    let seed = match std::env::var("MCFS_SEED") {
        Ok(text) => text.trim().parse().unwrap_or_else(|_| panic!("MCFS_SEED={text:?} is not a u64")),
        Err(_) => {
            let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
            (nanos as u64) ^ ((std::process::id() as u64) << 32)
        }
    };
    println!("{test}: seed {seed} (replay with MCFS_SEED={seed})");
    seed
}

/// A small, stable pseudo-random function (splitmix64), so that the
/// expected content of row or version `n` can be recomputed after a crash.
pub fn mix(n: u64) -> u64 {
    let mut z = n.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `len` bytes determined by `key`.
pub fn pattern(key: u64, len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 8);
    let mut i = 0u64;
    while out.len() < len {
        out.extend_from_slice(&mix(key.wrapping_mul(1_000_003).wrapping_add(i)).to_le_bytes());
        i += 1;
    }
    out.truncate(len);
    out
}

/// The directories of one test: backing store, mount point, optional config.
pub struct Dirs {
    pub backing: PathBuf,
    pub mnt: PathBuf,
    pub config: Option<PathBuf>,
    /// Daemon logs and command output.
    pub logs: PathBuf,
    /// Removed when the test passes, kept (and named) when it fails.
    root: Option<tempfile::TempDir>,
}

impl Dirs {
    pub fn new(config_toml: Option<&str>) -> Dirs {
        Dirs::with_backing_in(None, config_toml)
    }

    /// Like `new`, with the backing directory in `parent` (another file
    /// system) when given.
    pub fn with_backing_in(parent: Option<&Path>, config_toml: Option<&str>) -> Dirs {
        require_fuse();
        let root = tempfile::Builder::new().prefix("mcfs-e2e-").tempdir().expect("create a temp dir");
        let path = root.path().canonicalize().expect("canonical temp dir");
        let backing = parent.unwrap_or(&path).join("backing");
        let (mnt, logs) = (path.join("mnt"), path.join("logs"));
        for dir in [&backing, &mnt, &logs] {
            std::fs::create_dir(dir).unwrap_or_else(|e| panic!("mkdir {}: {e}", dir.display()));
        }
        let config = config_toml.map(|text| {
            let file = path.join("mcfs.toml");
            std::fs::write(&file, text).expect("write config");
            file
        });
        Dirs { backing, mnt, config, logs, root: Some(root) }
    }

    fn mount_args(&self, foreground: bool, extra: &[&str]) -> Vec<String> {
        let mut args = vec!["mount".to_string()];
        if foreground {
            args.push("--foreground".into());
        }
        if let Some(config) = &self.config {
            args.push("--config".into());
            args.push(config.display().to_string());
        }
        args.extend(extra.iter().map(|s| s.to_string()));
        args.push(self.backing.display().to_string());
        args.push(self.mnt.display().to_string());
        args
    }

    /// Where the output of the next command run goes.
    pub fn next_log(&self, what: &str) -> PathBuf {
        next_log(&self.logs, what)
    }
}

/// A fresh, numbered log file name in `logs`, in the order things ran.
fn next_log(logs: &Path, what: &str) -> PathBuf {
    let n = std::fs::read_dir(logs).map(|d| d.count()).unwrap_or(0);
    logs.join(format!("{n:03}-{what}.log"))
}

impl Drop for Dirs {
    fn drop(&mut self) {
        if std::thread::panicking() {
            if let Some(root) = self.root.take() {
                eprintln!("test failed: its directories and logs are kept in {}", root.keep().display());
            }
        }
    }
}

/// Output of a finished command.
pub struct Finished {
    pub status: ExitStatus,
    pub output: String,
}

impl Finished {
    pub fn assert_success(self, what: &str) -> String {
        assert!(self.status.success(), "{what} failed ({}):\n{}", self.status, self.output);
        self.output
    }
}

/// `mcfs ARGS` with stdin closed, not yet started.
fn mcfs_command<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Command {
    let mut cmd = Command::new(mcfs_bin());
    cmd.args(args).stdin(Stdio::null());
    cmd
}

/// Runs `mcfs ARGS` to completion (stdout and stderr together).
pub fn mcfs(dirs: &Dirs, args: &[&str]) -> Finished {
    let log = dirs.next_log(args.first().copied().unwrap_or("mcfs"));
    run_logged(mcfs_command(args), &log)
}

/// Starts a command with its stdout and stderr in `log`. Its stdin is
/// whatever `cmd` says (the test's own unless set).
fn spawn_logged(mut cmd: Command, log: &Path) -> Child {
    let out = File::create(log).unwrap_or_else(|e| panic!("create {}: {e}", log.display()));
    let err = out.try_clone().expect("dup log");
    cmd.stdout(out).stderr(err).spawn().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

/// Runs a command to completion with its output in `log`, failing the test if it hangs.
pub fn run_logged(cmd: Command, log: &Path) -> Finished {
    let description = format!("{cmd:?}");
    let mut child = spawn_logged(cmd, log);
    let status = wait_with_deadline(&mut child, &description);
    Finished { status, output: std::fs::read_to_string(log).unwrap_or_default() }
}

fn wait_with_deadline(child: &mut Child, description: &str) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait for a child") {
            return status;
        }
        if start.elapsed() > COMMAND_DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{description} did not finish within {COMMAND_DEADLINE:?}");
        }
        std::thread::sleep(POLL);
    }
}

/// `mcfs recover BACKING`, which must succeed; returns its report.
pub fn recover(dirs: &Dirs) -> String {
    let backing = dirs.backing.display().to_string();
    mcfs(dirs, &["recover", &backing]).assert_success("mcfs recover")
}

/// A crash during recovery: `mcfs recover` SIGKILLed after `delay` (if
/// still running), then run again to completion; returns the second report.
pub fn recover_after_interrupted_recovery(dirs: &Dirs, delay: Duration) -> String {
    let log = dirs.next_log("recover-killed");
    let backing = dirs.backing.display().to_string();
    let mut first = spawn_logged(mcfs_command(&["recover", &backing]), &log);
    std::thread::sleep(delay);
    let _ = first.kill();
    let status = first.wait().expect("reap mcfs recover");
    let output = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(status.success() || status.code().is_none(), "mcfs recover failed ({status}):\n{output}");
    recover(dirs)
}

/// `mcfs stat --json MOUNTPOINT`.
pub fn stats(dirs: &Dirs) -> serde_json::Value {
    let mnt = dirs.mnt.display().to_string();
    let text = mcfs(dirs, &["stat", "--json", &mnt]).assert_success("mcfs stat --json");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("mcfs stat --json printed no JSON ({e}):\n{text}"))
}

/// `mcfs ctl MOUNTPOINT ACTION...`, which must succeed.
pub fn ctl(dirs: &Dirs, action: &[&str]) {
    let mnt = dirs.mnt.display().to_string();
    let mut args = vec!["ctl", mnt.as_str()];
    args.extend_from_slice(action);
    mcfs(dirs, &args).assert_success(&format!("mcfs ctl {}", action.join(" ")));
}

/// Whether `path` is a mount point, and the file system type mounted there.
pub fn mount_type(path: &Path) -> Option<String> {
    let table = std::fs::read_to_string("/proc/self/mountinfo").expect("read /proc/self/mountinfo");
    let wanted = path.to_str().expect("utf-8 path");
    // Mount points are octal-escaped; later lines shadow earlier ones.
    table.lines().rev().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let mount_point = left.split(' ').nth(4)?;
        (unescape(mount_point) == wanted).then(|| right.split(' ').next().unwrap_or("").to_string())
    })
}

fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 3 < bytes.len() && bytes[i + 1..i + 4].iter().all(|b| (b'0'..=b'7').contains(b)) {
            out.push(u8::from_str_radix(&field[i + 1..i + 4], 8).unwrap_or(b'?'));
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub fn fuse_mounted(path: &Path) -> bool {
    mount_type(path).is_some_and(|t| t.starts_with("fuse"))
}

/// Detaches the mount at `mnt` (dead or busy) with `fusermount3 -u -z`.
fn lazy_unmount(mnt: &Path) -> Result<(), String> {
    let out = Command::new("fusermount3")
        .args(["-u", "-z", "--"])
        .arg(mnt)
        .output()
        .map_err(|e| format!("fusermount3: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("fusermount3 -u -z {}: {}", mnt.display(), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

/// A running mcfs serving `Dirs::mnt`.
pub struct Daemon {
    /// The foreground daemon; `None` when `mcfs mount` daemonised itself.
    child: Option<Child>,
    mnt: PathBuf,
    logs: PathBuf,
    log: PathBuf,
}

impl Daemon {
    /// `mcfs mount --foreground` as a child of the test: its pid is the
    /// daemon's, so the test can SIGKILL it.
    pub fn foreground(dirs: &Dirs, extra: &[&str]) -> Daemon {
        Daemon::foreground_with_env(dirs, extra, |_| Vec::new())
    }

    /// `foreground` with extra environment variables for the daemon; `env`
    /// is handed the daemon's log file (its stdout and stderr), which exists
    /// by then (to name it in JOURNAL_STREAM, say).
    pub fn foreground_with_env(
        dirs: &Dirs,
        extra: &[&str],
        env: impl FnOnce(&Path) -> Vec<(String, String)>,
    ) -> Daemon {
        Daemon::foreground_with_args(dirs, &dirs.mount_args(true, extra), env)
    }

    /// `mcfs ARGS` (a `mount --foreground` of `dirs`, spelled by the caller)
    /// as `foreground_with_env` runs it.
    pub fn foreground_with_args(
        dirs: &Dirs,
        args: &[String],
        env: impl FnOnce(&Path) -> Vec<(String, String)>,
    ) -> Daemon {
        let log = dirs.next_log("daemon");
        let mut cmd = mcfs_command(args);
        cmd.env("MCFS_LOG", std::env::var("MCFS_LOG").unwrap_or_else(|_| "info".into()));
        File::create(&log).unwrap_or_else(|e| panic!("create {}: {e}", log.display()));
        cmd.envs(env(&log));
        let child = spawn_logged(cmd, &log);
        let mut daemon = Daemon { child: Some(child), mnt: dirs.mnt.clone(), logs: dirs.logs.clone(), log };
        daemon.wait_until_mounted();
        daemon
    }

    /// `mcfs mount` as a user runs it: it returns once the mount is live.
    pub fn daemonised(dirs: &Dirs, extra: &[&str]) -> Daemon {
        Daemon::daemonised_with_env(dirs, extra, &[])
    }

    /// `daemonised` with extra environment variables for the daemon (`MCFS_LOG`, say).
    pub fn daemonised_with_env(dirs: &Dirs, extra: &[&str], env: &[(&str, &str)]) -> Daemon {
        let log = dirs.next_log("mount");
        let args = dirs.mount_args(false, extra);
        let mut cmd = mcfs_command(&args);
        cmd.envs(env.iter().copied());
        run_logged(cmd, &log).assert_success("mcfs mount");
        Daemon::started_elsewhere(dirs)
    }

    /// The daemon of a mount that has returned: `mcfs mount`'s, or one
    /// another program (mount(8), mount.fuse3) started on `dirs.mnt`.
    pub fn started_elsewhere(dirs: &Dirs) -> Daemon {
        assert!(fuse_mounted(&dirs.mnt), "the mount returned 0 but {} is not a FUSE mount", dirs.mnt.display());
        // The daemon itself logs into the backing directory.
        let log = dirs.backing.join(".mcfs/mcfs.log");
        Daemon { child: None, mnt: dirs.mnt.clone(), logs: dirs.logs.clone(), log }
    }

    fn wait_until_mounted(&mut self) {
        let start = Instant::now();
        while !fuse_mounted(&self.mnt) {
            let child = self.child.as_mut().expect("foreground daemon");
            if let Some(status) = child.try_wait().expect("wait for the daemon") {
                panic!("the daemon exited ({status}) before mounting:\n{}", self.log_text());
            }
            if start.elapsed() > COMMAND_DEADLINE {
                panic!("{} was not mounted within {COMMAND_DEADLINE:?}:\n{}", self.mnt.display(), self.log_text());
            }
            std::thread::sleep(POLL);
        }
    }

    /// The foreground daemon's pid (`None` when `mcfs mount` forked it).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Where the daemon logs (readable after it exited).
    pub fn log_path(&self) -> PathBuf {
        self.log.clone()
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGKILLs the daemon and detaches the dead mount it leaves, as a crash would.
    pub fn kill(self) {
        self.kill_then(|| ());
    }

    /// SIGKILLs the foreground daemon, runs `meanwhile` (joining an app that
    /// was writing, which now meets the dead mount's errors), then detaches
    /// the mount and returns what `meanwhile` did. An app still running
    /// after the detach would go on, by path, in the directory beneath the
    /// mount point: seen in CI, a DELETE-mode commit whose journal unlink
    /// and directory sync landed there was acknowledged although mcfs never
    /// saw them, and a rename writer wrote 50,000 versions there.
    pub fn kill_then<T>(mut self, meanwhile: impl FnOnce() -> T) -> T {
        let mut child = self.child.take().expect("only a foreground daemon can be killed");
        child.kill().expect("SIGKILL the daemon");
        let status = child.wait().expect("reap the daemon");
        assert!(status.code().is_none(), "the daemon exited ({status}) before it was killed:\n{}", self.log_text());
        let done = meanwhile();
        lazy_unmount(&self.mnt).unwrap_or_else(|e| panic!("{e}"));
        assert!(!fuse_mounted(&self.mnt), "{} is still mounted after fusermount3 -u -z", self.mnt.display());
        done
    }

    /// `mcfs umount`: checkpoint everything, unmount, wait for the daemon.
    pub fn unmount(mut self) {
        let finished = self.run_umount();
        let output = finished.assert_success("mcfs umount");
        assert!(!fuse_mounted(&self.mnt), "{} is still mounted after mcfs umount:\n{output}", self.mnt.display());
        if let Some(mut child) = self.child.take() {
            let status = wait_with_deadline(&mut child, "the unmounted daemon");
            assert!(status.success(), "the daemon exited with {status} after mcfs umount:\n{}", self.log_text());
        }
    }

    /// SIGTERMs the foreground daemon, as systemd stops a service: it must
    /// checkpoint, unmount and exit 0.
    pub fn terminate(mut self) {
        let mut child = self.child.take().expect("only a foreground daemon can be signalled");
        // SAFETY: kill has no memory preconditions; the pid is our unreaped child.
        assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) }, 0, "SIGTERM the daemon");
        let status = wait_with_deadline(&mut child, "the SIGTERMed daemon");
        assert!(status.success(), "the daemon exited with {status} after SIGTERM:\n{}", self.log_text());
        assert!(!fuse_mounted(&self.mnt), "{} is still mounted after SIGTERM", self.mnt.display());
    }

    fn run_umount(&self) -> Finished {
        let log = next_log(&self.logs, "umount");
        let mnt = self.mnt.display().to_string();
        run_logged(mcfs_command(&["umount", "--timeout", "60", &mnt]), &log)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if fuse_mounted(&self.mnt) && self.child.as_mut().is_none_or(|c| matches!(c.try_wait(), Ok(None))) {
            let _ = self.run_umount();
        }
        if let Some(mut child) = self.child.take() {
            if matches!(child.try_wait(), Ok(None)) {
                let _ = child.kill();
            }
            let _ = child.wait();
        }
        if fuse_mounted(&self.mnt) {
            if let Err(e) = lazy_unmount(&self.mnt) {
                eprintln!("cleanup: {e}");
            }
        }
    }
}

/// Runs `mcfs ARGS` to completion with the log settings cleared, for tests of the command line
/// (no mount, so no FUSE needed).
pub fn run_cli(args: &[&str]) -> std::process::Output {
    Command::new(mcfs_bin())
        .args(args)
        .env_remove("MCFS_LOG")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .expect("run mcfs")
}

/// A command's stderr as text.
/// The events of a trace file, text or binary.
pub fn read_trace(path: &Path) -> Vec<mcfs_sim::TraceEvent> {
    let bytes = std::fs::read(path).unwrap();
    let events: Result<Vec<_>, _> = if bytes.starts_with(mcfs_sim::binary::MAGIC) {
        mcfs_sim::binary::BinaryReader::new(bytes.as_slice()).collect()
    } else {
        mcfs_sim::text::TextReader::new(bytes.as_slice()).collect()
    };
    events.unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A small ext4 file system of its own: a sparse image file loop-mounted
/// (as scripts/pjdfstest.sh makes its reference), unmounted on drop.
pub struct Ext4Image {
    pub mnt: PathBuf,
    _dir: tempfile::TempDir,
}

impl Ext4Image {
    /// `size_mib` MiB (512 MiB and up get mke2fs's default layout: 4 KiB
    /// blocks, 256-byte inodes, as on a phone's data partition).
    pub fn new(size_mib: u64) -> Ext4Image {
        require_root("it loop-mounts an ext4 image");
        let dir = tempfile::Builder::new().prefix("mcfs-ext4-").tempdir().expect("create a temp dir");
        let image = dir.path().join("ext4.img");
        let file = File::create(&image).expect("create the image file");
        file.set_len(size_mib << 20).expect("size the image file");
        drop(file);
        let run = |program: &str, args: &[&std::ffi::OsStr]| {
            let out = Command::new(program).args(args).output().unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
            assert!(out.status.success(), "{program} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        };
        run("mkfs.ext4", &["-q".as_ref(), "-F".as_ref(), image.as_os_str()]);
        let mnt = dir.path().join("mnt");
        std::fs::create_dir(&mnt).expect("mkdir the image's mount point");
        run("mount", &["-o".as_ref(), "loop".as_ref(), image.as_os_str(), mnt.as_os_str()]);
        let ext4 = Ext4Image { mnt, _dir: dir };
        // Other uids of a test must reach into it.
        std::fs::set_permissions(&ext4.mnt, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
        std::fs::set_permissions(ext4._dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
        ext4
    }
}

impl Drop for Ext4Image {
    fn drop(&mut self) {
        let unmounted = Command::new("umount").arg(&self.mnt).status().is_ok_and(|s| s.success());
        if !unmounted {
            let _ = Command::new("umount").arg("-l").arg(&self.mnt).status();
        }
    }
}
