//! mcfs under systemd (issue 13): `mcfs mount --foreground` speaks the
//! sd_notify protocol to the socket NOTIFY_SOCKET names — READY=1 once the
//! mount is live, STOPPING=1 when SIGTERM starts the final checkpoint,
//! WATCHDOG=1 pings when WATCHDOG_USEC is set (a WATCHDOG_PID of another
//! process turns them off: `sd_notify`'s unit tests) — and logs in the journal's
//! format when JOURNAL_STREAM says stderr is the journal. The test plays
//! systemd: it binds the datagram socket and reads what arrives.

mod common;

use common::{fuse_mounted, Daemon, Dirs};
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

/// A guard against hangs, not a performance assertion.
const DEADLINE: Duration = Duration::from_secs(60);

/// One datagram, and whether the mount was live when it arrived.
struct Notice {
    text: String,
    mounted: bool,
}

impl Notice {
    fn has(&self, field: &str) -> bool {
        self.text.lines().any(|line| line == field)
    }
}

/// The service manager's end: a datagram socket in the test's directory,
/// read by a thread that notes, as each datagram arrives, whether `mnt` is
/// a FUSE mount at that moment.
struct FakeSystemd {
    path: PathBuf,
    notices: Receiver<Notice>,
    seen: Vec<Notice>,
}

impl FakeSystemd {
    fn listen(dirs: &Dirs) -> FakeSystemd {
        let path = dirs.logs.join("notify.sock");
        let socket = UnixDatagram::bind(&path).unwrap_or_else(|e| panic!("bind {}: {e}", path.display()));
        let (tx, notices) = mpsc::channel();
        let mnt = dirs.mnt.clone();
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 4096];
            while let Ok(n) = socket.recv(&mut buf) {
                let notice =
                    Notice { text: String::from_utf8_lossy(&buf[..n]).into_owned(), mounted: fuse_mounted(&mnt) };
                if tx.send(notice).is_err() {
                    return;
                }
            }
        });
        FakeSystemd { path, notices, seen: Vec::new() }
    }

    fn env(&self, extra: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut env = vec![("NOTIFY_SOCKET".to_string(), self.path.display().to_string())];
        env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        env
    }

    /// Waits (with a deadline) until a datagram with `field` has arrived; returns its index in `seen`.
    fn wait_for(&mut self, field: &str) -> usize {
        self.wait_for_count(field, 1)
    }

    /// Waits until `count` datagrams with `field` have arrived; returns the index of the last.
    fn wait_for_count(&mut self, field: &str, count: usize) -> usize {
        let start = Instant::now();
        loop {
            let found: Vec<usize> = (0..self.seen.len()).filter(|&i| self.seen[i].has(field)).collect();
            if found.len() >= count {
                return found[count - 1];
            }
            let left = DEADLINE.checked_sub(start.elapsed()).unwrap_or_default();
            match self.notices.recv_timeout(left) {
                Ok(notice) => self.seen.push(notice),
                Err(_) => panic!("no {count} × {field} within {DEADLINE:?}; received: {:#?}", self.texts()),
            }
        }
    }

    fn texts(&self) -> Vec<&str> {
        self.seen.iter().map(|n| n.text.as_str()).collect()
    }
}

#[test]
fn ready_once_the_mount_is_live_then_stopping_on_sigterm() {
    let dirs = Dirs::new(None);
    let mut systemd = FakeSystemd::listen(&dirs);
    let daemon = Daemon::foreground_with_env(&dirs, &[], |_| systemd.env(&[]));
    let ready = systemd.wait_for("READY=1");
    let notice = &systemd.seen[ready];
    assert!(notice.mounted, "READY=1 came before {} was mounted: {:?}", dirs.mnt.display(), notice.text);
    let mnt = dirs.mnt.display().to_string();
    assert!(
        notice.text.contains(&format!("STATUS=serving {} on {mnt}\n", dirs.backing.display())),
        "{:?}",
        notice.text
    );
    assert!(notice.text.lines().any(|l| l.starts_with("MAINPID=")), "{:?}", notice.text);
    assert!(systemd.seen[..ready].iter().all(|n| !n.has("STOPPING=1")), "{:#?}", systemd.texts());

    std::fs::write(dirs.mnt.join("kept"), b"checkpointed on SIGTERM").expect("write through the mount");
    daemon.terminate();
    let stopping = systemd.wait_for("STOPPING=1");
    assert!(stopping > ready, "STOPPING=1 after READY=1: {:#?}", systemd.texts());
    let text = &systemd.seen[stopping].text;
    assert!(text.contains(&format!("STATUS=SIGTERM: checkpointing and unmounting {mnt}\n")), "{text:?}");
    assert_eq!(std::fs::read(dirs.backing.join("kept")).expect("the checkpointed file"), b"checkpointed on SIGTERM");
}

#[test]
fn watchdog_pings_come_at_half_the_timeout_with_the_status() {
    let dirs = Dirs::new(None);
    let mut systemd = FakeSystemd::listen(&dirs);
    // 200 ms: a ping every 100 ms.
    let daemon = Daemon::foreground_with_env(&dirs, &[], |_| systemd.env(&[("WATCHDOG_USEC", "200000")]));
    let third = systemd.wait_for_count("WATCHDOG=1", 3);
    let ping = &systemd.seen[third].text;
    let status = format!("STATUS=serving {}: ", dirs.mnt.display());
    assert!(ping.lines().any(|l| l.starts_with(&status) && l.contains("not committed yet")), "{ping:?}");
    daemon.unmount();
    let stopping = systemd.wait_for("STOPPING=1");
    let text = &systemd.seen[stopping].text;
    assert!(text.contains(&format!("{} was unmounted; final checkpoint", dirs.mnt.display())), "{text:?}");
}

/// JOURNAL_STREAM names the daemon's stderr: the log is in the journal's
/// format, every line with a "<N>" priority and no timestamp.
#[test]
fn stderr_named_by_journal_stream_gets_the_journal_format() {
    let dirs = Dirs::new(None);
    let daemon = Daemon::foreground_with_env(&dirs, &[], journal_stream);
    std::fs::write(dirs.mnt.join("f"), b"x").expect("write through the mount");
    common::ctl(&dirs, &["checkpoint"]);
    let all = common::stats(&dirs);
    assert_eq!(all["daemon"]["log"], "journal", "mcfs stat says where the log goes:\n{:#}", all["daemon"]);
    assert_eq!(all["daemon"]["pid"].as_u64(), daemon.pid().map(u64::from), "and the daemon's pid");
    let log = daemon.log_path();
    daemon.unmount();
    let log = std::fs::read_to_string(log).expect("the daemon's log");
    assert!(log.contains("<6>mcfs::daemon: engine shut down; everything is checkpointed\n"), "{log}");
    let mounted = format!("<6>mcfs::daemon: mounted {} on {} (pid ", dirs.backing.display(), dirs.mnt.display());
    assert!(log.lines().any(|l| l.starts_with(&mounted)), "{log}");
    assert!(
        log.lines().any(|l| l.starts_with("<6>mcfs_core::checkpoint: checkpoint 1 (requested) committed ")),
        "{log}"
    );
    for line in log.lines() {
        let priority = line.strip_prefix('<').and_then(|rest| rest.split_once('>')).map(|(n, _)| n);
        assert!(matches!(priority, Some("3" | "4" | "5" | "6" | "7")), "a line without a priority: {line:?}\n{log}");
        assert!(!line.contains(" INFO ") && !line.contains("Z "), "a timestamp or level word: {line:?}");
    }
}

/// JOURNAL_STREAM set to the "DEV:INODE" of `log`.
fn journal_stream(log: &Path) -> Vec<(String, String)> {
    let meta = std::fs::metadata(log).expect("the daemon's log");
    vec![("JOURNAL_STREAM".into(), format!("{}:{}", meta.dev(), meta.ino()))]
}

/// packaging/systemd/, shipped with mcfs.
fn packaging(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packaging/systemd").join(file)
}

/// Where the unit expects mcfs to be installed.
const INSTALLED_MCFS: &str = "/usr/local/bin/mcfs";

/// The unit with the built binary in place of the installed one.
fn unit_text() -> String {
    let path = packaging("mcfs@.service");
    let unit = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(unit.contains(INSTALLED_MCFS), "the unit runs {INSTALLED_MCFS}:\n{unit}");
    unit.replace(INSTALLED_MCFS, &common::mcfs_bin().display().to_string())
}

#[test]
fn the_shipped_unit_passes_systemd_analyze_verify() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let unit = dir.path().join("mcfs@mnt-data.service");
    std::fs::write(&unit, unit_text()).expect("write the unit");
    let out = std::process::Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(&unit)
        .output()
        .expect("run systemd-analyze (package systemd; scripts/setup.sh installs it)");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && stderr.trim().is_empty(), "systemd-analyze verify ({}):\n{stderr}", out.status);
}

/// ExecStart of the shipped unit, expanded as systemd does for the parts it
/// uses ("$VAR" split at spaces, "${VAR}" one word, %f the unescaped
/// instance path), with the environment file of the example: it mounts,
/// says READY=1 and stops on SIGTERM.
#[test]
fn the_shipped_unit_command_line_mounts_and_stops_under_notify() {
    let dirs = Dirs::new(None);
    let mut env: Vec<(String, String)> = std::fs::read_to_string(packaging("mcfs.env.example"))
        .expect("the example environment file")
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    assert!(env.iter().any(|(k, _)| k == "MCFS_BACKING"), "the example sets MCFS_BACKING: {env:?}");
    env.retain(|(k, _)| k != "MCFS_BACKING");
    env.push(("MCFS_BACKING".into(), dirs.backing.display().to_string()));

    let unit = unit_text();
    let exec = unit.lines().find_map(|l| l.strip_prefix("ExecStart=")).expect("an ExecStart line");
    let var = |name: &str| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()).unwrap_or_default();
    let mut words: Vec<String> = Vec::new();
    for word in exec.split_whitespace() {
        match word {
            "%f" => words.push(dirs.mnt.display().to_string()),
            w if w.starts_with("${") => words.push(var(&w[2..w.len() - 1])),
            w if w.starts_with('$') => words.extend(var(&w[1..]).split_whitespace().map(String::from)),
            w => words.push(w.to_string()),
        }
    }
    assert_eq!(words[0], common::mcfs_bin().display().to_string(), "{exec}");
    assert!(words.contains(&"--foreground".to_string()), "Type=notify needs the daemon in the foreground: {exec}");

    let mut systemd = FakeSystemd::listen(&dirs);
    let daemon = Daemon::foreground_with_args(&dirs, &words[1..], |_| {
        let mut all = systemd.env(&[]);
        all.extend(env.iter().cloned());
        all
    });
    let ready = systemd.wait_for("READY=1");
    assert!(systemd.seen[ready].mounted, "{:?}", systemd.seen[ready].text);
    daemon.terminate();
    systemd.wait_for("STOPPING=1");
    assert_cleanup_succeeds(&unit, &dirs.mnt);

    // A crash leaves a dead mount, which the cleanup removes for the restart.
    let daemon = Daemon::foreground_with_args(&dirs, &words[1..], |_| env.clone());
    let pid = daemon.pid().expect("a foreground daemon") as libc::pid_t;
    // SAFETY: kill has no memory preconditions; the pid is our unreaped child.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    let start = Instant::now();
    while std::fs::metadata(&dirs.mnt).err().and_then(|e| e.raw_os_error()) != Some(libc::ENOTCONN) {
        assert!(start.elapsed() < DEADLINE, "the killed daemon's mount did not go dead");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_cleanup_succeeds(&unit, &dirs.mnt);
    assert!(!fuse_mounted(&dirs.mnt), "ExecStopPost left the dead mount");
    drop(daemon);
}

/// Runs the unit's ExecStopPost for `mnt` (its quoting is the shell's).
fn assert_cleanup_succeeds(unit: &str, mnt: &Path) {
    let line = unit.lines().find_map(|l| l.strip_prefix("ExecStopPost=")).expect("an ExecStopPost line");
    let line = line.replace("%f", &mnt.display().to_string());
    let out = std::process::Command::new("sh").arg("-c").arg(&line).output().expect("run sh");
    assert!(out.status.success(), "{line}: {}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
}

/// An error before the daemon starts reaches the journal as an error (<3>).
#[test]
fn a_refused_mount_is_an_error_in_the_journal() {
    let dirs = Dirs::new(None);
    let missing = dirs.backing.join("missing");
    let err = dirs.logs.join("refused.err");
    let file = std::fs::File::create(&err).expect("create the stderr file");
    let out = std::process::Command::new(common::mcfs_bin())
        .args(["mount", "--foreground"])
        .arg(&missing)
        .arg(&dirs.mnt)
        .envs(journal_stream(&err))
        .stdin(std::process::Stdio::null())
        .stderr(file)
        .status()
        .expect("run mcfs");
    assert_eq!(out.code(), Some(1));
    let text = std::fs::read_to_string(&err).expect("its stderr");
    assert!(text.starts_with(&format!("<3>mcfs: backing directory {}: No such file", missing.display())), "{text}");
}
