//! `mcfs config check` (issue 13): a config and `-o` options are checked
//! exactly as `mcfs mount` checks them, without mounting; a bad one fails
//! with the same message mount would print.

mod common;

use common::mcfs_bin;
use std::path::Path;
use std::process::{Command, Output};

fn mcfs(args: &[&str]) -> Output {
    Command::new(mcfs_bin()).args(args).output().expect("run mcfs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[track_caller]
fn fails(out: &Output) -> String {
    assert_eq!(
        out.status.code(),
        Some(1),
        "want exit 1; stdout {:?}, stderr {:?}",
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stderr)
}

#[test]
fn a_good_config_and_options_pass() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mcfs.toml");
    std::fs::write(&file, "cache_size = 67108864\nmax_stale_seconds = 10.0\n").unwrap();
    let path = file.to_str().unwrap();

    let out = mcfs(&["config", "check", path]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), format!("{path}: ok\n"));

    let out = mcfs(&["config", "check", path, "-o", "cache_size=256M,fasttrack.aging_ms=200"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), format!("{path} with 2 -o options: ok\n"));

    let out = mcfs(&["config", "check", "-o", &format!("config={path}")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = mcfs(&["config", "check"]);
    assert_eq!(text(&out.stdout), "the defaults: ok\n");
}

#[test]
fn a_bad_config_fails_as_mount_would_fail_on_it() {
    let dir = tempfile::tempdir().unwrap();
    let (backing, mnt) = (dir.path().join("back"), dir.path().join("mnt"));
    std::fs::create_dir(&backing).unwrap();
    std::fs::create_dir(&mnt).unwrap();
    let bad = [
        ("range.toml", "max_stale_seconds = 1e308\n", "max_stale_seconds"),
        ("unknown.toml", "cache_sise = 1\n", "cache_sise"),
        ("syntax.toml", "cache_size = = 1\n", "line 1"),
    ];
    for (name, config, named) in bad {
        let file = dir.path().join(name);
        std::fs::write(&file, config).unwrap();
        let path = file.to_str().unwrap();
        let checked = fails(&mcfs(&["config", "check", path]));
        assert!(checked.contains(path) && checked.contains(named), "{name}: {checked}");
        let mounted = fails(&mcfs(&["mount", "-c", path, backing.to_str().unwrap(), mnt.to_str().unwrap()]));
        assert_eq!(checked, mounted, "{name}: config check and mount disagree");
    }
    assert!(!Path::new(&backing).join(".mcfs").exists(), "mount stopped before touching the backing directory");
}

#[test]
fn bad_options_are_named() {
    let checked = fails(&mcfs(&["config", "check", "-o", "max_stale_seconds=-1"]));
    assert!(checked.contains("max_stale_seconds"), "{checked}");
    let checked = fails(&mcfs(&["config", "check", "-o", "no_such_key=1"]));
    assert!(checked.contains("no_such_key"), "{checked}");
    let checked = fails(&mcfs(&["config", "check", "/etc/a.toml", "-o", "config=/etc/b.toml"]));
    assert!(checked.contains("FILE") && checked.contains("config"), "{checked}");
}
