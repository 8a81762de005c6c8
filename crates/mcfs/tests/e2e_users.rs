//! Every user controls their own mount, whoever mounted before: root and two
//! unprivileged users (`tests`, made by scripts/setup.sh, and `nobody`)
//! mount in turn, in two orders, and each runs `mcfs stat`, `mcfs ctl …
//! checkpoint` and `mcfs umount` on their mount as themselves. And a
//! daemon killed with SIGKILL leaves a socket file behind that the next
//! daemon at the same mount point replaces.

mod common;

use common::{mcfs_bin, run_logged, Dirs, Finished};
use std::ffi::CString;
use std::fs::{self, Permissions};
use std::os::unix::fs::{chown, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A user the test acts as.
#[derive(Clone, Copy, Debug)]
struct User {
    uid: u32,
    gid: u32,
}

const ROOT: User = User { uid: 0, gid: 0 };

fn user(name: &str) -> User {
    let c_name = CString::new(name).unwrap();
    // SAFETY: getpwnam reads the passwd database; the result is copied at once.
    let entry = unsafe { libc::getpwnam(c_name.as_ptr()) };
    assert!(!entry.is_null(), "no user {name:?}: run scripts/setup.sh as root (it creates the test users)");
    // SAFETY: non-null, points at a passwd entry.
    let entry = unsafe { &*entry };
    User { uid: entry.pw_uid, gid: entry.pw_gid }
}

/// A mount made by `owner` on test directories `owner` owns.
struct Mount {
    dirs: Dirs,
    owner: User,
}

impl Mount {
    fn new(owner: User) -> Mount {
        let dirs = Dirs::new(None);
        let top = dirs.mnt.parent().unwrap();
        fs::set_permissions(top, Permissions::from_mode(0o755)).expect("chmod the test directory");
        for dir in [&dirs.backing, &dirs.mnt] {
            chown(dir, Some(owner.uid), Some(owner.gid)).unwrap_or_else(|e| panic!("chown {}: {e}", dir.display()));
        }
        Mount { dirs, owner }
    }

    fn mnt(&self) -> String {
        self.dirs.mnt.display().to_string()
    }

    /// `mcfs ARGS` run as the mount's owner.
    fn mcfs(&self, args: &[&str]) -> Finished {
        let mut cmd = Command::new(mcfs_bin());
        cmd.args(args).stdin(Stdio::null()).uid(self.owner.uid).gid(self.owner.gid);
        let n = fs::read_dir(&self.dirs.logs).map(|d| d.count()).unwrap_or(0);
        run_logged(cmd, &self.dirs.logs.join(format!("{n:03}-{}-uid{}.log", args[0], self.owner.uid)))
    }

    fn mount(&self) {
        let (backing, mnt) = (self.dirs.backing.display().to_string(), self.mnt());
        self.mcfs(&["mount", &backing, &mnt]).assert_success(&format!("mcfs mount as uid {}", self.owner.uid));
    }

    /// Writes `name` in the mount as the owner (only they may use a user's mount).
    fn write(&self, name: &str, content: &str) {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "printf %s \"$0\" > \"$1\"", content])
            .arg(self.dirs.mnt.join(name))
            .uid(self.owner.uid)
            .gid(self.owner.gid);
        let log = self.dirs.logs.join(format!("write-{name}.log"));
        run_logged(cmd, &log).assert_success(&format!("write {name} as uid {}", self.owner.uid));
    }

    /// `mcfs stat`, `mcfs ctl checkpoint`: the file is in the backing store.
    fn stat_and_checkpoint(&self, name: &str, content: &str) {
        let uid = self.owner.uid;
        let table = self.mcfs(&["stat", &self.mnt()]).assert_success(&format!("mcfs stat as uid {uid}"));
        assert!(table.contains(&format!("mcfs on {}", self.mnt())), "{table}");
        self.mcfs(&["ctl", &self.mnt(), "checkpoint"]).assert_success(&format!("mcfs ctl checkpoint as uid {uid}"));
        assert_eq!(fs::read_to_string(self.dirs.backing.join(name)).unwrap_or_default(), content, "uid {uid}");
    }

    fn unmount(&self) {
        let uid = self.owner.uid;
        self.mcfs(&["umount", &self.mnt()]).assert_success(&format!("mcfs umount as uid {uid}"));
        assert!(!is_mounted(&self.dirs.mnt), "{} is still mounted after umount as uid {uid}", self.mnt());
    }

    /// The daemon's pid, from the backing lock.
    fn daemon_pid(&self) -> i32 {
        let text = fs::read_to_string(self.dirs.backing.join(".mcfs/lock")).expect("the backing lock");
        text.trim().parse().unwrap_or_else(|_| panic!("lock file holds {text:?}"))
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        if is_mounted(&self.dirs.mnt) {
            let _ = Command::new("fusermount3").args(["-u", "-z", "--"]).arg(&self.dirs.mnt).status();
        }
    }
}

fn is_mounted(path: &Path) -> bool {
    let wanted = path.to_str().expect("utf-8 path");
    fs::read_to_string("/proc/self/mountinfo")
        .expect("read mountinfo")
        .lines()
        .any(|line| line.split(' ').nth(4) == Some(wanted))
}

/// Fails the test unless users other than root may mount FUSE file systems.
fn require_user_mounts() {
    common::require_root("it mounts as other users");
    let mode = fs::metadata("/dev/fuse").map(|m| m.permissions().mode() & 0o777).unwrap_or(0);
    assert_eq!(mode, 0o666, "/dev/fuse is mode {mode:o}: users cannot mount (run scripts/setup.sh as root)");
}

/// Mounts in the order given, then checks every mount as its owner, last mounted first.
fn mount_in_order(owners: &[User]) {
    require_user_mounts();
    let mounts: Vec<Mount> = owners.iter().map(|&owner| Mount::new(owner)).collect();
    for (i, m) in mounts.iter().enumerate() {
        m.mount();
        m.write("f", &format!("data of mount {i}"));
    }
    for (i, m) in mounts.iter().enumerate().rev() {
        m.stat_and_checkpoint("f", &format!("data of mount {i}"));
        m.unmount();
    }
}

#[test]
fn root_first_then_two_users() {
    mount_in_order(&[ROOT, user("tests"), user("nobody")]);
}

#[test]
fn users_before_and_after_root() {
    mount_in_order(&[user("nobody"), ROOT, user("tests")]);
}

#[test]
fn a_killed_daemons_socket_is_replaced_by_the_next_mount() {
    require_user_mounts();
    // Root mounts too, so that root's socket directory exists meanwhile.
    let root_mount = Mount::new(ROOT);
    root_mount.mount();
    let m = Mount::new(user("tests"));
    m.mount();
    m.write("f", "before the kill");
    m.stat_and_checkpoint("f", "before the kill");
    let sockets_before = sockets_for(&m.dirs.mnt);
    assert_eq!(sockets_before.len(), 1, "one socket for the mount: {sockets_before:?}");
    // SAFETY: kill has no memory preconditions.
    assert_eq!(unsafe { libc::kill(m.daemon_pid(), libc::SIGKILL) }, 0, "SIGKILL the daemon");
    let out = Command::new("fusermount3").args(["-u", "-z", "--"]).arg(&m.dirs.mnt).output().expect("fusermount3");
    assert!(out.status.success(), "fusermount3 -u -z: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(sockets_for(&m.dirs.mnt), sockets_before, "the dead daemon's socket file is left behind");

    let gone = m.mcfs(&["stat", &m.mnt()]);
    assert!(!gone.status.success() && gone.output.contains("no mcfs daemon serves"), "{}", gone.output);
    m.mount();
    m.write("g", "after the remount");
    m.stat_and_checkpoint("g", "after the remount");
    m.unmount();
    assert!(sockets_for(&m.dirs.mnt).is_empty(), "the socket goes with its daemon");
    root_mount.unmount();
}

/// Control sockets, in any socket directory, whose name ends with the escaped `mnt`.
fn sockets_for(mnt: &Path) -> Vec<PathBuf> {
    // The mount point's last two names, escaped as the socket name does ('-' is _2d, '/' is -).
    let mut names = mnt.iter().rev().take(2).map(|n| n.to_str().unwrap().replace('-', "_2d")).collect::<Vec<_>>();
    names.reverse();
    let suffix = format!("{}.sock", names.join("-"));
    let mut dirs: Vec<PathBuf> = vec!["/run/mcfs".into()];
    for parent in ["/tmp", "/run/user"] {
        for entry in fs::read_dir(parent).into_iter().flatten().flatten() {
            dirs.push(entry.path());
            dirs.push(entry.path().join("mcfs"));
        }
    }
    dirs.iter()
        .flat_map(|d| fs::read_dir(d).into_iter().flatten().flatten())
        .map(|e| e.path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.ends_with(&suffix)))
        .collect()
}
