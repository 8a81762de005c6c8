//! Runs the built `mcfs` binary on bad input: every failure must exit
//! non-zero before anything is started, with stderr naming the file at
//! fault and the cause. (Mount/FUSE end-to-end runs live elsewhere.)

use std::path::PathBuf;
use std::process::Output;

mod common;

use common::{run_cli as mcfs, stderr_of as stderr};

/// Asserts exit status 1 and that stderr mentions every `needle`.
fn assert_fails(out: &Output, needles: &[&str]) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(1), "stderr: {err}");
    assert!(err.starts_with("mcfs: "), "{err}");
    for n in needles {
        assert!(err.contains(n), "stderr lacks {n:?}: {err}");
    }
}

struct Setup {
    root: tempfile::TempDir,
}

impl Setup {
    /// A valid backing dir `back` and mount point `mnt`.
    fn new() -> Setup {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("back")).unwrap();
        std::fs::create_dir(root.path().join("mnt")).unwrap();
        Setup { root }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.root.path().join(name)
    }

    fn s(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }
}

#[test]
fn help_works_for_every_command() {
    let out = mcfs(&["--help"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for cmd in ["mount", "umount", "stat", "ctl", "recover"] {
        assert!(text.contains(cmd), "top-level help lacks {cmd}: {text}");
        let sub = mcfs(&[cmd, "--help"]);
        assert!(sub.status.success(), "{cmd} --help: {}", stderr(&sub));
        assert!(String::from_utf8_lossy(&sub.stdout).contains("Usage: mcfs"), "{cmd}");
    }
    for action in ["checkpoint", "battery", "mode"] {
        let sub = mcfs(&["ctl", "/m", action, "--help"]);
        assert!(sub.status.success(), "ctl {action} --help: {}", stderr(&sub));
    }
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["mount", "/only-one"][..],
        &["ctl", "/m", "battery", "101"],
        &["ctl", "/m", "mode", "app", "fast"],
        &["frobnicate"],
    ] {
        let out = mcfs(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn mount_with_missing_backing_dir() {
    let s = Setup::new();
    let out = mcfs(&["mount", &s.s("nope"), &s.s("mnt")]);
    assert_fails(&out, &[&s.s("nope"), "No such file or directory", "backing directory"]);
}

#[test]
fn mount_with_backing_that_is_a_file() {
    let s = Setup::new();
    std::fs::write(s.path("file"), b"x").unwrap();
    let out = mcfs(&["mount", &s.s("file"), &s.s("mnt")]);
    assert_fails(&out, &[&s.s("file"), "is not a directory"]);
}

#[test]
fn mount_with_missing_mount_point() {
    let s = Setup::new();
    let out = mcfs(&["mount", &s.s("back"), &s.s("gone")]);
    assert_fails(&out, &[&s.s("gone"), "No such file or directory", "mount point"]);
    assert!(!s.path("back/.mcfs").exists(), "nothing created on failure");
}

#[test]
fn mount_on_an_existing_mount_point() {
    let s = Setup::new();
    let out = mcfs(&["mount", &s.s("back"), "/proc"]);
    assert_fails(&out, &["/proc", "already a mount point"]);
}

#[test]
fn mount_with_unreadable_config() {
    let s = Setup::new();
    let out = mcfs(&["mount", "--config", &s.s("absent.toml"), &s.s("back"), &s.s("mnt")]);
    assert_fails(&out, &[&s.s("absent.toml"), "No such file or directory"]);
    // A directory cannot be read as a file either.
    let out = mcfs(&["mount", "--config", &s.s("mnt"), &s.s("back"), &s.s("mnt")]);
    assert_fails(&out, &[&s.s("mnt"), "directory"]);
}

#[test]
fn mount_with_invalid_config() {
    let s = Setup::new();
    std::fs::write(s.path("bad.toml"), "cache_size = 1048576\ndirty_high_ratio = \"lots\"\n").unwrap();
    let out = mcfs(&["mount", "-c", &s.s("bad.toml"), &s.s("back"), &s.s("mnt")]);
    assert_fails(&out, &[&s.s("bad.toml"), "line 2", "invalid type"]);
    std::fs::write(s.path("range.toml"), "low_battery_percent = 101\n").unwrap();
    let out = mcfs(&["mount", "-c", &s.s("range.toml"), &s.s("back"), &s.s("mnt")]);
    assert_fails(&out, &[&s.s("range.toml"), "low_battery_percent"]);
}

#[test]
fn mount_inside_the_backing_dir_is_refused() {
    let s = Setup::new();
    std::fs::create_dir(s.path("back/sub")).unwrap();
    let out = mcfs(&["mount", &s.s("back"), &s.s("back/sub")]);
    assert_fails(&out, &["inside the backing directory"]);
}

#[test]
fn commands_on_an_unserved_mount_point_say_no_daemon() {
    let s = Setup::new();
    let mnt = s.s("mnt");
    for args in
        [&["stat", &mnt][..], &["stat", "--json", &mnt], &["ctl", &mnt, "checkpoint"], &["ctl", &mnt, "battery", "50"]]
    {
        assert_fails(&mcfs(args), &["no mcfs daemon serves", &mnt]);
    }
    // umount without a daemon falls back to fusermount3 only for a real mount.
    assert_fails(&mcfs(&["umount", &s.s("mnt")]), &[&s.s("mnt"), "not mounted"]);
}

#[test]
fn recover_refuses_bad_dirs_and_a_live_daemon() {
    let s = Setup::new();
    assert_fails(&mcfs(&["recover", &s.s("nope")]), &[&s.s("nope"), "No such file"]);
    assert_fails(&mcfs(&["recover", &s.s("back")]), &[&s.s("back"), "not an mcfs backing store"]);

    // Hold the daemon's lock as a live daemon would.
    std::fs::create_dir(s.path("back/.mcfs")).unwrap();
    let lock = std::fs::File::create(s.path("back/.mcfs/lock")).unwrap();
    // SAFETY: flock on an fd we own.
    assert_eq!(unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&lock), libc::LOCK_EX) }, 0);
    assert_fails(&mcfs(&["recover", &s.s("back")]), &[&s.s("back"), "in use by a running mcfs daemon"]);
    // And a mount of the same backing dir is refused the same way.
    assert_fails(&mcfs(&["mount", &s.s("back"), &s.s("mnt")]), &["in use by a running mcfs daemon"]);
    drop(lock);
}

/// The backing directory's owner plants links in BACKING/.mcfs to files of
/// root's: `recover` and `mount` refuse, naming the link, and leave the
/// target as it was (they used to truncate it, write a pid or log lines in it).
#[test]
fn planted_links_in_the_state_dir_are_refused_and_followed_nowhere() {
    let s = Setup::new();
    let victim = s.path("victim");
    std::fs::write(&victim, b"root's file\n").unwrap();
    let victim_dir = s.path("victim-dir");
    std::fs::create_dir(&victim_dir).unwrap();
    let state = s.path("back/.mcfs");
    let untouched = || {
        assert_eq!(std::fs::read(&victim).unwrap(), b"root's file\n");
        assert_eq!(std::fs::read_dir(&victim_dir).unwrap().count(), 0);
    };

    std::os::unix::fs::symlink(&victim_dir, &state).unwrap();
    for args in [&["recover", &s.s("back")][..], &["mount", &s.s("back"), &s.s("mnt")]] {
        assert_fails(&mcfs(args), &[&format!("{}: is a symbolic link", state.display())]);
        untouched();
    }
    std::fs::remove_file(&state).unwrap();
    std::fs::create_dir(&state).unwrap();

    let lock = state.join("lock");
    std::os::unix::fs::symlink(&victim, &lock).unwrap();
    for args in [&["recover", &s.s("back")][..], &["mount", &s.s("back"), &s.s("mnt")]] {
        assert_fails(&mcfs(args), &[&format!("{}: is a symbolic link", lock.display())]);
        untouched();
    }
    std::fs::remove_file(&lock).unwrap();
    std::fs::hard_link(&victim, &lock).unwrap();
    assert_fails(&mcfs(&["recover", &s.s("back")]), &[&format!("{}: has 2 hard links", lock.display())]);
    untouched();
    std::fs::remove_file(&lock).unwrap();

    let log = state.join("mcfs.log");
    std::os::unix::fs::symlink(&victim, &log).unwrap();
    assert_fails(&mcfs(&["mount", &s.s("back"), &s.s("mnt")]), &[&format!("{}: is a symbolic link", log.display())]);
    untouched();
}

#[test]
fn version_says_commit_build_profile_and_fuse_protocol() {
    let short = mcfs(&["-V"]);
    let short = String::from_utf8_lossy(&short.stdout);
    assert!(short.starts_with("mcfs 0.") && short.contains("(commit "), "{short}");
    let long = mcfs(&["--version"]);
    assert!(long.status.success());
    let long = String::from_utf8_lossy(&long.stdout);
    let field = |name: &str| {
        let line = long.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("no {name} in {long}"));
        line[name.len()..].trim().to_string()
    };
    let commit = field("commit:");
    assert!(commit == "unknown" || (commit.len() == 12 && commit.chars().all(|c| c.is_ascii_hexdigit())), "{commit}");
    // The profile is the directory of target/ the binary under test was built into.
    let profile_dir = std::path::Path::new(env!("CARGO_BIN_EXE_mcfs")).parent().and_then(|d| d.file_name());
    assert_eq!(Some(std::ffi::OsStr::new(&field("build profile:"))), profile_dir);
    assert!(field("FUSE protocol:").starts_with("7."), "{long}");
}

#[test]
fn device_profile_help_lists_the_builtin_profiles_for_every_command() {
    for cmd in ["mount", "sim", "flashdev", "bench"] {
        let out = mcfs(&[cmd, "--help"]);
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(help.contains("--device-profile <PROFILE>"), "mcfs {cmd} --help:\n{help}");
        assert!(help.contains("emmc, emmc-cq, emmc-5.1, ufs-3.1, ufs-4.0, ufs"), "mcfs {cmd} --help:\n{help}");
        assert!(help.contains("Examples:"), "mcfs {cmd} --help:\n{help}");
        for old in ["--device ", "--profile ", "--flash "] {
            assert!(!help.contains(old), "mcfs {cmd} --help shows the old spelling {old}");
        }
    }
}
