//! mcfs mounted and unmounted the system's way: an fstab line through
//! mount(8), `mount -t fuse.mcfs -o ...`, mount.fuse3's `mcfs#BACKING` form,
//! and plain umount(8). Each checks that the options took effect (`mcfs
//! stat`, the kernel's mount flags), that the mount has the type
//! `fuse.mcfs` (`findmnt -t fuse.mcfs`), and that data written before
//! `umount` is in the backing directory once the daemon is gone.
//!
//! mount(8) and umount(8) run /sbin/mount.fuse.mcfs and
//! /sbin/umount.fuse.mcfs, which scripts/setup.sh links to the release
//! build; the tests fail unless those lead to the mcfs under test.

mod common;

use common::{mcfs_bin, require_root, run_logged, stats, Daemon, Dirs, Finished};
use std::fs;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Keeps the data in memory until something checkpoints it, so that finding
/// it in the backing directory proves the unmount checkpointed.
const NO_TIMED_CHECKPOINT: &str = "max_stale_seconds=600,writeback_interval_seconds=600";

/// mount(8) and umount(8) must run the mcfs under test.
fn require_helpers() {
    require_root("mount(8) and umount(8) of FUSE file systems need root");
    let ours = mcfs_bin().canonicalize().expect("the mcfs under test exists");
    for link in ["/sbin/mount.fuse.mcfs", "/sbin/umount.fuse.mcfs"] {
        let found = fs::canonicalize(link).ok();
        assert_eq!(
            found.as_deref(),
            Some(ours.as_path()),
            "{link} must lead to the mcfs under test: run scripts/setup.sh, or scripts/install-helpers.sh {}",
            ours.display()
        );
    }
}

/// Runs a system command (mount, umount, findmnt...) to completion.
fn run(dirs: &Dirs, program: &str, args: &[&str]) -> Finished {
    let mut cmd = Command::new(program);
    cmd.args(args).stdin(Stdio::null());
    run_logged(cmd, &dirs.next_log(program.rsplit('/').next().unwrap_or(program)))
}

fn path(p: &Path) -> &str {
    p.to_str().expect("temporary paths are UTF-8")
}

/// The line `findmnt -t fuse.mcfs` prints for `dirs.mnt`: "TARGET SOURCE FSTYPE OPTIONS".
fn findmnt_line(dirs: &Dirs) -> String {
    let out = run(dirs, "findmnt", &["-t", "fuse.mcfs", "-n", "-r", "-o", "TARGET,SOURCE,FSTYPE,OPTIONS"]);
    let text = out.assert_success("findmnt -t fuse.mcfs");
    let line = text.lines().find(|line| line.split(' ').next() == Some(path(&dirs.mnt)));
    line.unwrap_or_else(|| panic!("findmnt -t fuse.mcfs does not list {}:\n{text}", dirs.mnt.display())).to_string()
}

fn cache_limit(dirs: &Dirs) -> u64 {
    stats(dirs)["cache_limit_bytes"].as_u64().expect("cache_limit_bytes in mcfs stat --json")
}

/// Writes `name` in the mount and checks it is still only in memory.
fn write_unsaved(dirs: &Dirs, name: &str, content: &str) -> PathBuf {
    fs::write(dirs.mnt.join(name), content).unwrap_or_else(|e| panic!("write {name} in the mount: {e}"));
    let stats = stats(dirs);
    assert_eq!(stats["checkpoints"], 0, "nothing may have checkpointed yet: {stats}");
    assert!(stats["cache_dirty_bytes"].as_u64() > Some(0), "{name} should be dirty in memory: {stats}");
    dirs.backing.join(name)
}

/// Waits until no daemon holds the backing directory's lock, i.e. it has exited.
fn wait_for_daemon_exit(dirs: &Dirs) {
    let lock = fs::File::open(dirs.backing.join(".mcfs/lock")).expect("open the backing lock");
    let start = Instant::now();
    // SAFETY: flock on a descriptor we own; the lock goes with the file.
    while unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        assert!(start.elapsed() < Duration::from_secs(120), "the daemon still holds the lock 120 s after umount");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// An fstab line of type fuse.mcfs, mounted by mount(8) from that fstab: the
/// options reach mcfs (an -o key overriding the config file's), mount(8)'s
/// own options are ignored, and umount(8) returns once everything is saved.
#[test]
fn an_fstab_line_mounts_with_its_options_and_umount_saves_everything() {
    require_helpers();
    let dirs = Dirs::new(Some("cache_size = 134217728\nmode = \"memory\"\n"));
    let config = dirs.config.as_deref().expect("a config file");
    let fstab = dirs.logs.join("fstab");
    let options = format!(
        "defaults,_netdev,nofail,noatime,x-systemd.requires=network.target,config={},cache_size=64M,{NO_TIMED_CHECKPOINT}",
        path(config)
    );
    let line = format!("# mcfs under test\n{} {} fuse.mcfs {options} 0 0\n", path(&dirs.backing), path(&dirs.mnt));
    fs::write(&fstab, line).expect("write the test fstab");

    run(&dirs, "mount", &["-T", path(&fstab), path(&dirs.mnt)]).assert_success("mount -T FSTAB MOUNTPOINT");
    let daemon = Daemon::started_elsewhere(&dirs);
    let line = findmnt_line(&dirs);
    assert!(line.contains(" fuse.mcfs "), "{line}");
    assert!(line.split(' ').nth(1) == Some(path(&dirs.backing)), "the source is the backing directory: {line}");
    assert_eq!(cache_limit(&dirs), 64 << 20, "-o cache_size=64M overrides the file's 128 MiB");
    let saved = write_unsaved(&dirs, "note.txt", "written before umount\n");

    run(&dirs, "umount", &[path(&dirs.mnt)]).assert_success("umount MOUNTPOINT");
    // The umount helper waited for the daemon: no waiting here.
    assert_eq!(fs::read_to_string(&saved).ok().as_deref(), Some("written before umount\n"));
    assert!(common::mount_type(&dirs.mnt).is_none(), "still mounted after umount");
    drop(daemon);
}

/// `mount -t fuse.mcfs -o ro,...`: the kernel makes the mount read-only
/// (EROFS) and lists it as a fuse.mcfs mount with the flags asked for.
#[test]
fn mount_t_fuse_mcfs_takes_kernel_flags_and_config_keys() {
    require_helpers();
    let dirs = Dirs::new(None);
    fs::write(dirs.backing.join("old.txt"), "from before\n").expect("seed the backing directory");
    let options = "ro,noexec,nosuid,nodev,cache_size=32M,fasttrack.aging_ms=200";
    run(&dirs, "mount", &["-t", "fuse.mcfs", "-o", options, path(&dirs.backing), path(&dirs.mnt)])
        .assert_success("mount -t fuse.mcfs");
    let daemon = Daemon::started_elsewhere(&dirs);
    let line = findmnt_line(&dirs);
    let kernel_options: Vec<&str> = line.split(' ').nth(3).unwrap_or("").split(',').collect();
    for flag in ["ro", "noexec", "nosuid", "nodev"] {
        assert!(kernel_options.contains(&flag), "{flag} missing: {line}");
    }
    assert_eq!(cache_limit(&dirs), 32 << 20);
    assert_eq!(fs::read_to_string(dirs.mnt.join("old.txt")).ok().as_deref(), Some("from before\n"));
    let refused = fs::write(dirs.mnt.join("new.txt"), "x").unwrap_err();
    assert_eq!(refused.raw_os_error(), Some(libc::EROFS), "{refused}");
    let refused = fs::remove_file(dirs.mnt.join("old.txt")).unwrap_err();
    assert_eq!(refused.raw_os_error(), Some(libc::EROFS), "{refused}");
    daemon.unmount();
    assert!(!dirs.backing.join("new.txt").exists());
}

/// mount.fuse3's `TYPE#SOURCE` form runs `mcfs SOURCE MOUNTPOINT -o ...`
/// (with `dev,suid` added for root). Here it finds the mcfs under test on
/// PATH. Then a umount that bypasses the helper (`umount -i`, what the
/// kernel does alone): the daemon sees its session end, checkpoints and exits.
#[test]
fn mount_fuse3_runs_mcfs_and_a_kernel_only_umount_still_saves_everything() {
    require_root("mount.fuse3 mounts FUSE file systems for root only");
    let dirs = Dirs::new(None);
    let bin_dir = mcfs_bin().parent().expect("the binary's directory");
    let search_path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let mut cmd = Command::new("mount.fuse3");
    let source = format!("mcfs#{}", path(&dirs.backing));
    let options = format!("allow_other,cache_size=48M,{NO_TIMED_CHECKPOINT}");
    cmd.args([source.as_str(), path(&dirs.mnt), "-o", options.as_str()]).env("PATH", search_path).stdin(Stdio::null());
    run_logged(cmd, &dirs.next_log("mount.fuse3")).assert_success("mount.fuse3 mcfs#BACKING MOUNTPOINT");
    let daemon = Daemon::started_elsewhere(&dirs);
    assert!(findmnt_line(&dirs).contains(" fuse.mcfs "));
    let mounts = fs::read_to_string("/proc/mounts").expect("read /proc/mounts");
    let entry = format!("{} {} fuse.mcfs ", path(&dirs.backing), path(&dirs.mnt));
    assert!(mounts.lines().any(|l| l.starts_with(&entry)), "no \"{entry}...\" in /proc/mounts:\n{mounts}");
    assert_eq!(cache_limit(&dirs), 48 << 20);
    let saved = write_unsaved(&dirs, "kept.txt", "acknowledged, so never lost\n");

    run(&dirs, "umount", &["-i", path(&dirs.mnt)]).assert_success("umount -i MOUNTPOINT");
    wait_for_daemon_exit(&dirs);
    assert_eq!(fs::read_to_string(&saved).ok().as_deref(), Some("acknowledged, so never lost\n"));
    let log = daemon.log_text();
    assert!(log.contains("everything is checkpointed"), "the daemon did not shut down cleanly:\n{log}");
}

/// A bad option given to mount(8) fails the mount with a message naming
/// it, and leaves nothing mounted.
#[test]
fn mount_refuses_a_bad_option_by_name() {
    require_helpers();
    let dirs = Dirs::new(None);
    for (options, wanted) in [
        ("cache_sise=64M", "unknown mount option \"cache_sise=64M\""),
        ("cache_size=1K", "option cache_size=1K: cache_size must be in 65536..=1125899906842624 bytes, got 1024"),
    ] {
        let out = run(&dirs, "mount", &["-t", "fuse.mcfs", "-o", options, path(&dirs.backing), path(&dirs.mnt)]);
        assert!(!out.status.success(), "mount -o {options} succeeded");
        assert!(out.output.contains(wanted), "mount -o {options}: want \"{wanted}\" in:\n{}", out.output);
        assert!(common::mount_type(&dirs.mnt).is_none(), "mount -o {options} left a mount");
    }
}
