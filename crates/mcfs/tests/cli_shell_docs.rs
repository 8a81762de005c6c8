//! Shell completions and man pages (issue 13), generated from the parser's
//! own definitions: they name the real subcommands and flags, a shell
//! accepts the scripts, and `man` can render the pages.

mod common;

use common::mcfs_bin;
use std::process::{Command, Output};

fn mcfs(args: &[&str]) -> Output {
    Command::new(mcfs_bin()).args(args).output().expect("run mcfs")
}

fn stdout_of(args: &[&str]) -> String {
    let out = mcfs(args);
    assert!(out.status.success(), "mcfs {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8 script")
}

#[test]
fn completions_name_the_subcommands_and_bash_accepts_them() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let script = stdout_of(&["completions", shell]);
        for word in ["mount", "umount", "stat", "recover", "config", "--foreground"] {
            assert!(script.contains(word), "{shell} completion lacks {word}");
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcfs.bash");
    std::fs::write(&path, stdout_of(&["completions", "bash"])).unwrap();
    let checked = Command::new("bash").arg("-n").arg(&path).output().expect("run bash -n");
    assert!(checked.status.success(), "bash -n: {}", String::from_utf8_lossy(&checked.stderr));
    let bad = mcfs(&["completions", "tcsh"]);
    assert_eq!(bad.status.code(), Some(2), "an unknown shell is a usage error");
}

#[test]
fn man_pages_cover_every_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let out = mcfs(&["manpages", dir.path().to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for page in ["mcfs.1", "mcfs-mount.1", "mcfs-umount.1", "mcfs-stat.1", "mcfs-config-check.1"] {
        let text = std::fs::read_to_string(dir.path().join(page)).unwrap_or_else(|e| panic!("{page}: {e}"));
        assert!(text.starts_with(".ie") || text.contains(".TH"), "{page} is not a man page:\n{text}");
    }
    let mount = std::fs::read_to_string(dir.path().join("mcfs-mount.1")).unwrap();
    assert!(mount.contains("allow_other"), "mcfs-mount.1 lacks the -o option text");
    let missing = mcfs(&["manpages", dir.path().join("nowhere").to_str().unwrap()]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("nowhere: not a directory"));
}
