//! The daemon's log can neither take the daemon down nor grow without
//! bound: a log the backing file system cannot take any more (it is full)
//! loses records, counted in `mcfs stat`, while the mount keeps serving and
//! what was checkpointed stays; and ten thousand ioctls from an app (Python's
//! `open()` sends one) add next to nothing to the log.

mod common;

use common::{ctl, mcfs, pattern, stats, Daemon, Dirs};
use std::fs;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A small tmpfs mounted on a test directory, unmounted when dropped.
struct Tmpfs {
    path: PathBuf,
}

impl Tmpfs {
    fn mount(path: &Path, size: &str) -> Tmpfs {
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size},mode=0755"), "tmpfs"])
            .arg(path)
            .output()
            .expect("run mount");
        assert!(out.status.success(), "mount tmpfs on {}: {}", path.display(), String::from_utf8_lossy(&out.stderr));
        Tmpfs { path: path.to_path_buf() }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.path).status();
    }
}

/// Writes `path` until the file system holding it is full.
fn fill(path: &Path) {
    let mut file = fs::File::create(path).unwrap_or_else(|e| panic!("create {}: {e}", path.display()));
    let chunk = vec![0xa5u8; 64 * 1024];
    loop {
        match file.write(&chunk) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => break,
            Err(e) => panic!("fill {}: {e}", path.display()),
        }
    }
    let _ = file.sync_all();
}

fn log_counter(all: &serde_json::Value, key: &str) -> u64 {
    all["log"][key].as_u64().unwrap_or_else(|| panic!("mcfs stat has no log.{key}:\n{all:#}"))
}

#[test]
fn a_full_backing_store_drops_log_records_but_the_daemon_serves_on() {
    common::require_root("it mounts a tmpfs as the backing store");
    let dirs = Dirs::new(None);
    let _tmpfs = Tmpfs::mount(&dirs.backing, "2m");
    // Trace logs a line per FUSE request: plenty of writes to fail.
    let daemon = Daemon::daemonised_with_env(&dirs, &[], &[("MCFS_LOG", "trace")]);
    let kept = pattern(7, 100_000);
    fs::write(dirs.mnt.join("kept"), &kept).expect("write through the mount");
    ctl(&dirs, &["checkpoint"]);

    let filler = dirs.backing.join("filler");
    fill(&filler);
    for i in 0..300 {
        let _ = fs::metadata(dirs.mnt.join(format!("absent-{i}")));
        assert_eq!(fs::read(dirs.mnt.join("kept")).expect("read through the mount"), kept, "round {i}");
    }
    let all = stats(&dirs);
    assert!(log_counter(&all, "dropped") > 0, "the log never hit the full file system:\n{:#}", all["log"]);
    assert!(log_counter(&all, "written") > 0, "{:#}", all["log"]);

    fs::remove_file(&filler).expect("free the backing store");
    daemon.unmount();
    assert_eq!(fs::read(dirs.backing.join("kept")).expect("the checkpointed file"), kept);
}

#[test]
fn ten_thousand_ioctls_leave_the_log_bounded() {
    let dirs = Dirs::new(None);
    let daemon = Daemon::daemonised(&dirs, &[]);
    let file = dirs.mnt.join("tty-probe");
    fs::write(&file, b"not a terminal").expect("write through the mount");
    let log = dirs.backing.join(".mcfs/mcfs.log");
    let before = fs::metadata(&log).expect("the daemon's log").len();

    let probe = fs::File::open(&file).expect("open through the mount");
    let mut termios: libc::termios = unsafe { std::mem::zeroed() };
    for i in 0..10_000 {
        // SAFETY: TCGETS fills a termios, which `termios` is.
        let got = unsafe { libc::ioctl(probe.as_raw_fd(), libc::TCGETS, &mut termios) };
        let errno = std::io::Error::last_os_error().raw_os_error();
        assert_eq!((got, errno), (-1, Some(libc::ENOTTY)), "ioctl {i}: ENOTTY, as ext4 answers");
    }
    drop(probe);
    let grown = fs::metadata(&log).expect("the daemon's log").len() - before;
    assert!(grown < 4096, "10,000 ioctls grew the log by {grown} bytes:\n{}", daemon.log_text());
    let table = mcfs(&dirs, &["stat", &dirs.mnt.display().to_string()]).assert_success("mcfs stat");
    assert!(table.contains("\nlog\n  records written "), "the table shows the log counters:\n{table}");
    daemon.unmount();
}
