//! `mcfs mount -o` and the mount helper command lines, where they fail
//! before anything is mounted: an unknown option is named, a bad value
//! names the key and its range exactly as the config file's check does, and
//! nothing is created in the backing directory. No FUSE needed.

mod common;

use common::{mcfs_bin, run_cli, stderr_of};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

struct Paths {
    _root: tempfile::TempDir,
    backing: PathBuf,
    mnt: PathBuf,
}

impl Paths {
    fn new() -> Paths {
        let root = tempfile::tempdir().unwrap();
        let (backing, mnt) = (root.path().join("backing"), root.path().join("mnt"));
        std::fs::create_dir(&backing).unwrap();
        std::fs::create_dir(&mnt).unwrap();
        Paths { _root: root, backing, mnt }
    }

    fn b(&self) -> &str {
        self.backing.to_str().unwrap()
    }

    fn m(&self) -> &str {
        self.mnt.to_str().unwrap()
    }

    /// `mcfs mount -o OPTIONS BACKING MNT`, which must fail with exit status 1
    /// and leave the backing directory untouched; returns stderr.
    fn refused(&self, options: &str) -> String {
        let out = run_cli(&["mount", "-o", options, self.b(), self.m()]);
        self.assert_refused(&out, options)
    }

    fn assert_refused(&self, out: &Output, what: &str) -> String {
        let err = stderr_of(out);
        assert_eq!(out.status.code(), Some(1), "{what}: {err}");
        assert!(!self.backing.join(".mcfs").exists(), "{what}: the backing directory was touched");
        err
    }
}

/// `mcfs` started under another program name, as mount(8) starts its helpers.
fn run_as(name: &str, args: &[&str]) -> Output {
    Command::new(mcfs_bin()).arg0(name).args(args).stdin(Stdio::null()).env_remove("MCFS_LOG").output().unwrap()
}

#[test]
fn an_unknown_option_is_named() {
    let p = Paths::new();
    for option in ["cache_sise=64M", "nonempty", "fasttrack.agin_ms=5", "allow_root"] {
        let err = p.refused(&format!("rw,{option},noatime"));
        assert_eq!(
            err.trim_end(),
            format!("mcfs: unknown mount option \"{option}\" (see mcfs mount --help and docs/CONFIG.md)")
        );
    }
}

/// The error of `-o KEY=VALUE` is the config file's error for `KEY = VALUE`,
/// after the option's name.
#[test]
fn a_bad_value_fails_as_the_same_key_in_the_config_file() {
    let p = Paths::new();
    for (option, file_line, range) in [
        ("cache_size=1K", "cache_size = 1024", "65536..=1125899906842624 bytes, got 1024"),
        ("dirty_high_ratio=2", "dirty_high_ratio = 2.0", "(0, 1], got 2.0"),
        ("low_battery_percent=101", "low_battery_percent = 101", "0..=100, got 101"),
        ("max_stale_seconds=0", "max_stale_seconds = 0", "0.001..=1000000000.0 seconds, got 0.0"),
        ("fasttrack.segment_bytes=1K", "[fasttrack]\nsegment_bytes = 1024", "4096..=1125899906842624 bytes, got 1024"),
    ] {
        let from_option = p.refused(option);
        assert!(from_option.contains(range), "{option}: {from_option}");
        let config = p.backing.parent().unwrap().join("bad.toml");
        std::fs::write(&config, file_line).unwrap();
        let from_file = stderr_of(&run_cli(&["mount", "--config", config.to_str().unwrap(), p.b(), p.m()]));
        let cause = from_file.strip_prefix(&format!("mcfs: {}: ", config.display())).expect("names the file");
        assert_eq!(from_option, format!("mcfs: option {option}: {cause}"));
    }
    let err = p.refused("mode=lazy");
    assert!(err.starts_with("mcfs: option mode=lazy: ") && err.contains("`memory`"), "{err}");
}

#[test]
fn options_that_need_a_value_or_have_a_flag_twin_say_so() {
    let p = Paths::new();
    for (options, wanted) in [
        ("cache_size", "option cache_size needs a value: -o cache_size=VALUE"),
        ("ro=yes", "option ro takes no value"),
        ("threads=0", "option threads must be in 1..=256"),
        ("sync", "use -o mode=sync"),
        ("fsname=", "option fsname needs a value"),
    ] {
        let err = p.refused(options);
        assert!(err.contains(wanted), "-o {options}: want \"{wanted}\" in: {err}");
    }
    let out = run_cli(&["mount", "--config", "/etc/x.toml", "-o", "config=/etc/y.toml", p.b(), p.m()]);
    assert!(p.assert_refused(&out, "config twice").contains("--config and -o config= both given"));
    let out = run_cli(&["mount", "--threads", "4", "-o", "threads=8", p.b(), p.m()]);
    assert!(p.assert_refused(&out, "threads twice").contains("--threads and -o threads= both given"));
}

/// The command lines mount(8) and mount.fuse3 use reach the same checks.
#[test]
fn helper_command_lines_are_mcfs_mount() {
    let p = Paths::new();
    let by_mount = run_as("mount.fuse.mcfs", &[p.b(), p.m(), "-o", "rw,bogus"]);
    assert!(p.assert_refused(&by_mount, "mount.fuse.mcfs").contains("unknown mount option \"bogus\""));
    let by_mount_fuse3 = run_cli(&[p.b(), p.m(), "-o", "rw,cache_size=1K,dev,suid"]);
    assert!(p.assert_refused(&by_mount_fuse3, "mcfs SRC MNT").contains("option cache_size=1K: cache_size must be"));

    let fake = run_as("/sbin/mount.fuse.mcfs", &[p.b(), p.m(), "-f", "-o", "ro"]);
    assert!(fake.status.success(), "mount -f: {}", stderr_of(&fake));
    assert!(!p.backing.join(".mcfs").exists(), "mount -f must not do anything");

    let usage = run_as("mount.fuse.mcfs", &[p.b()]);
    assert_eq!(usage.status.code(), Some(2));
    assert!(stderr_of(&usage).contains("usage: mount.fuse.mcfs SOURCE MOUNTPOINT"), "{}", stderr_of(&usage));
    let not_mounted = run_as("umount.fuse.mcfs", &[p.m()]);
    assert_eq!(not_mounted.status.code(), Some(1));
    let err = stderr_of(&not_mounted);
    assert!(err.contains(&format!("{}: not mounted", Path::new(p.m()).display())), "{err}");
}

#[test]
fn mount_help_shows_the_options_and_an_fstab_example() {
    let out = run_cli(&["mount", "--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    for wanted in ["-o <OPTION[,OPTION...]>", "fuse.mcfs", "cache_size=256M", "allow_other", "umount /mnt/data"] {
        assert!(help.contains(wanted), "mcfs mount --help lacks \"{wanted}\":\n{help}");
    }
}
