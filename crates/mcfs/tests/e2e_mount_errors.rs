//! A mount that fails names the file it tripped on and says what to do
//! (issue 13): "Permission denied (os error 13)" alone does not say that
//! /dev/fuse was the file.
//!
//! The user is one the FUSE device is closed to: in a private mount
//! namespace a root-owned file of mode 0600 is bound over /dev/fuse, and
//! mcfs runs there as uid 10001. fuser opens /dev/fuse and gets EACCES, as it
//! would on a machine whose device is root's only; the real device and every
//! other process are untouched.

mod common;

use common::Dirs;
use std::fs::{self, Permissions};
use std::os::unix::fs::{chown, PermissionsExt};
use std::process::Command;

const USER: u32 = 10001;

#[test]
fn a_closed_dev_fuse_is_named_with_what_to_do() {
    common::require_root("it binds a file over /dev/fuse in a private mount namespace and runs mcfs as uid 10001");
    let dirs = Dirs::new(None);
    let root = dirs.mnt.parent().expect("the test's directory");
    fs::set_permissions(root, Permissions::from_mode(0o755)).expect("chmod the test directory");
    for dir in [&dirs.backing, &dirs.mnt] {
        chown(dir, Some(USER), Some(USER)).expect("chown to the mounting user");
    }
    let closed_device = root.join("closed-fuse");
    fs::write(&closed_device, b"").expect("create the stand-in device");
    fs::set_permissions(&closed_device, Permissions::from_mode(0o600)).expect("chmod 0600");

    let id = USER.to_string();
    let script = r#"mount --bind "$1" /dev/fuse && shift && exec setpriv --reuid "$1" --regid "$1" --clear-groups -- "$2" mount --foreground "$3" "$4""#;
    let out = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", script, "sh"])
        .arg(&closed_device)
        .arg(&id)
        .arg(common::mcfs_bin())
        .arg(&dirs.backing)
        .arg(&dirs.mnt)
        .env_remove("MCFS_LOG")
        .output()
        .expect("run unshare (util-linux)");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "mcfs mount must fail:\n{stderr}");
    let error = stderr.lines().find(|l| l.starts_with("mcfs: ")).unwrap_or_else(|| panic!("no error line:\n{stderr}"));
    let expected =
        format!("mcfs: cannot mount mcfs on {}: /dev/fuse: Permission denied (os error 13): ", dirs.mnt.display());
    assert!(error.starts_with(&expected), "the error must name /dev/fuse and the cause:\n{error}");
    assert!(error.contains(&format!("uid {USER} may not open the FUSE device")), "{error}");
    assert!(error.contains("mode 0600"), "the device's mode is shown:\n{error}");
    assert!(error.contains("0666") && error.contains("group"), "it says what to do:\n{error}");
    assert!(fs::read_dir(&dirs.mnt).expect("the mount point").next().is_none(), "nothing was mounted");
}
