//! `mcfs flashdev` on real FUSE mounts: files pass through byte-exact, fsync and the namespace
//! operations behave, an ext4 image loop-mounted from inside the mount works, mcfs runs on top of it,
//! and the stats file classes requests by the calling thread's I/O priority. Every way of ending the
//! mount is used once: `mcfs umount`, `fusermount3 -u` and SIGTERM.
//!
//! No timing assertions: the device's delays only make these tests slower; what is asserted is
//! content, errno and counts. Needs FUSE (and root for the loop mount); fails, never skips, without.

mod common;

use common::{mcfs, pattern, require_root, run_logged, seed, Dirs};
use mcfs_core::app_status::IoClass;
use mcfs_core::ioprio::{self, IoPriority};
use rand::{Rng, SeedableRng};
use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Longest the tests wait for a mount to appear or a daemon to end: a guard against hangs only.
const DEADLINE: Duration = Duration::from_secs(120);
const POLL: Duration = Duration::from_millis(20);

fn is_mounted(path: &Path) -> bool {
    Command::new("mountpoint").arg("-q").arg(path).status().is_ok_and(|s| s.success())
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < DEADLINE, "{what} did not happen within {DEADLINE:?}");
        std::thread::sleep(POLL);
    }
}

/// A flashdev mount of `dirs.backing` on `dirs.mnt`; unmounted (lazily if need be) when dropped.
struct FlashMount {
    mnt: PathBuf,
    stats: PathBuf,
    /// The foreground daemon, when the test started it as its child.
    child: Option<Child>,
    /// The daemon's log.
    log: PathBuf,
}

impl FlashMount {
    /// `mcfs flashdev --foreground` as a child of the test, with `--stats` in the logs directory.
    fn foreground(dirs: &Dirs, extra: &[&str]) -> FlashMount {
        let stats = dirs.logs.join("flashdev-stats.json");
        let log = dirs.logs.join("flashdev.log");
        let out = File::create(&log).expect("create the daemon log");
        let err = out.try_clone().expect("dup the daemon log");
        let child = Command::new(common::mcfs_bin())
            .arg("flashdev")
            .arg("--foreground")
            .arg("--stats")
            .arg(&stats)
            .args(extra)
            .arg(&dirs.backing)
            .arg(&dirs.mnt)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .expect("run mcfs flashdev");
        let mut mount = FlashMount { mnt: dirs.mnt.clone(), stats, child: Some(child), log };
        wait_for("the flashdev mount", || {
            if let Some(status) = mount.child.as_mut().and_then(|c| c.try_wait().expect("wait")) {
                panic!("mcfs flashdev exited ({status}) before mounting:\n{}", mount.log_text());
            }
            is_mounted(&mount.mnt)
        });
        mount
    }

    /// `mcfs flashdev` as a user runs it: it returns once the mount is live.
    fn daemonised(dirs: &Dirs, extra: &[&str]) -> FlashMount {
        let stats = dirs.logs.join("flashdev-stats.json");
        let log = dirs.logs.join("flashdev.log");
        let mut args = vec!["flashdev".to_string(), "--stats".into(), stats.display().to_string()];
        args.extend(["--log".into(), log.display().to_string()]);
        args.extend(extra.iter().map(|s| s.to_string()));
        args.extend([dirs.backing.display().to_string(), dirs.mnt.display().to_string()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        mcfs(dirs, &args).assert_success("mcfs flashdev");
        assert!(is_mounted(&dirs.mnt), "mcfs flashdev returned 0 but {} is not mounted", dirs.mnt.display());
        FlashMount { mnt: dirs.mnt.clone(), stats, child: None, log }
    }

    fn log_text(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn path(&self, name: &str) -> PathBuf {
        self.mnt.join(name)
    }

    /// The stats file as JSON.
    fn stats(&self) -> serde_json::Value {
        let text = fs::read_to_string(&self.stats).unwrap_or_else(|e| panic!("{}: {e}", self.stats.display()));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: not JSON ({e}):\n{text}", self.stats.display()))
    }

    /// Ends the mount with `how` and waits for the daemon to exit 0; returns the final stats.
    fn end(mut self, how: End, dirs: &Dirs) -> serde_json::Value {
        let mnt = self.mnt.display().to_string();
        match how {
            End::McfsUmount => {
                mcfs(dirs, &["umount", "--timeout", "60", &mnt]).assert_success("mcfs umount");
            }
            End::Fusermount => {
                let log = dirs.logs.join("fusermount3.log");
                let mut cmd = Command::new("fusermount3");
                cmd.args(["-u", "--", &mnt]);
                run_logged(cmd, &log).assert_success("fusermount3 -u");
            }
            End::Sigterm => {
                let child = self.child.as_ref().expect("SIGTERM needs the foreground daemon");
                // SAFETY: kill has no memory preconditions; the pid is our unreaped child.
                assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) }, 0);
            }
        }
        if let Some(child) = self.child.as_mut() {
            let mut status = None;
            wait_for("the daemon's exit", || {
                status = child.try_wait().expect("wait");
                status.is_some()
            });
            let status = status.expect("exited");
            assert!(status.success(), "the daemon exited with {status}:\n{}", self.log_text());
            self.child = None;
        }
        assert!(!is_mounted(&self.mnt), "{} is still mounted", self.mnt.display());
        self.stats()
    }
}

enum End {
    McfsUmount,
    Fusermount,
    Sigterm,
}

impl Drop for FlashMount {
    fn drop(&mut self) {
        if is_mounted(&self.mnt) {
            let _ = Command::new("fusermount3").args(["-u", "-z", "--"]).arg(&self.mnt).status();
        }
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The counters of one class and kind of command in a stats report.
fn commands(stats: &serde_json::Value, class: &str, kind: &str) -> u64 {
    stats["device"][class][kind]["commands"].as_u64().unwrap_or_else(|| panic!("no {class}.{kind} in {stats}"))
}

fn bytes(stats: &serde_json::Value, class: &str, kind: &str) -> u64 {
    stats["device"][class][kind]["bytes"].as_u64().unwrap_or_else(|| panic!("no {class}.{kind} in {stats}"))
}

fn requests(stats: &serde_json::Value, class: &str) -> u64 {
    stats["requests"][class].as_u64().unwrap_or_else(|| panic!("no requests.{class} in {stats}"))
}

fn all_commands(stats: &serde_json::Value, kind: &str) -> u64 {
    commands(stats, "foreground", kind) + commands(stats, "background", kind)
}

#[test]
fn files_pass_through_byte_exact_and_every_read_reaches_the_device() {
    let seed = seed("files_pass_through_byte_exact_and_every_read_reaches_the_device");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let dirs = Dirs::new(None);
    let flash = FlashMount::daemonised(&dirs, &["--profile", "ufs", "--scheduler", "fifo"]);
    let sizes = [0usize, 1, 4095, 4096, 65_537, 3 << 20];
    let mut total = 0u64;
    for (n, &size) in sizes.iter().enumerate() {
        let content = pattern(rng.gen(), size);
        let name = format!("file-{n}");
        let mut f = File::create(flash.path(&name)).expect("create through the mount");
        f.write_all(&content).expect("write");
        f.sync_all().expect("fsync");
        drop(f);
        assert_eq!(fs::read(dirs.backing.join(&name)).expect("backing copy"), content, "{name} in BACKING");
        // Twice: direct I/O, so the second read is not served from a page cache above the device.
        for _ in 0..2 {
            assert_eq!(fs::read(flash.path(&name)).expect("read back"), content, "{name} through the mount");
        }
        total += size as u64;
    }
    // Overwrite in the middle, read at an offset.
    let f = OpenOptions::new().read(true).write(true).open(flash.path("file-5")).expect("reopen");
    f.write_all_at(b"middle", 1 << 20).expect("pwrite");
    let mut back = [0u8; 6];
    f.read_exact_at(&mut back, 1 << 20).expect("pread");
    assert_eq!(&back, b"middle");
    f.sync_data().expect("fdatasync");
    drop(f);
    let backing = fs::read(dirs.backing.join("file-5")).expect("backing copy");
    assert_eq!(&backing[1 << 20..(1 << 20) + 6], b"middle");
    direct_io_round_trip(&flash.path("direct"), &pattern(rng.gen(), 64 << 10));

    let stats = flash.end(End::McfsUmount, &dirs);
    assert_eq!(stats["profile"], "ufs");
    assert_eq!(stats["scheduler_policy"], "fifo");
    let fsyncs = sizes.len() as u64 + 1;
    assert!(all_commands(&stats, "flush") >= fsyncs, "one flush per fsync and fdatasync: {stats}");
    let read = bytes(&stats, "foreground", "read") + bytes(&stats, "background", "read");
    let written = bytes(&stats, "foreground", "write") + bytes(&stats, "background", "write");
    assert!(read >= 2 * total, "every read reached the device: {read} < 2 * {total}");
    assert!(written >= total, "every write reached the device: {written} < {total}");
    assert_eq!(stats["pending"], 0);
}

/// O_DIRECT, as a loop device with `--direct-io=on` uses it: written and read back exactly.
fn direct_io_round_trip(path: &Path, content: &[u8]) {
    use std::os::unix::fs::OpenOptionsExt;
    #[repr(align(4096))]
    struct Aligned([u8; 64 << 10]);
    let mut buf = Box::new(Aligned([0; 64 << 10]));
    buf.0.copy_from_slice(content);
    let f = OpenOptions::new().read(true).write(true).create(true).custom_flags(libc::O_DIRECT).open(path);
    let f = f.expect("open with O_DIRECT");
    f.write_all_at(&buf.0, 0).expect("O_DIRECT write");
    buf.0.fill(0);
    f.read_exact_at(&mut buf.0, 0).expect("O_DIRECT read");
    assert!(buf.0[..] == *content, "O_DIRECT data differs");
}

#[test]
fn namespace_operations_pass_through_with_their_errnos() {
    let dirs = Dirs::new(None);
    let flash = FlashMount::foreground(&dirs, &[]);
    let m = |name: &str| flash.path(name);
    let b = |name: &str| dirs.backing.join(name);

    fs::create_dir(m("d")).expect("mkdir");
    assert_eq!(fs::create_dir(m("d")).expect_err("mkdir twice").kind(), ErrorKind::AlreadyExists);
    fs::write(m("d/f"), b"one").expect("create");
    assert_eq!(fs::remove_dir(m("d")).expect_err("rmdir non-empty").raw_os_error(), Some(libc::ENOTEMPTY));
    assert_eq!(fs::read(m("missing")).expect_err("ENOENT").kind(), ErrorKind::NotFound);

    fs::rename(m("d/f"), m("g")).expect("rename across directories");
    assert!(!b("d/f").exists() && fs::read(b("g")).expect("moved") == b"one");
    fs::rename(m("d"), m("e")).expect("rename a directory");
    fs::write(m("e/inner"), b"two").expect("create under the renamed directory");
    assert_eq!(fs::read(b("e/inner")).expect("backing"), b"two");

    std::os::unix::fs::symlink("g", m("link")).expect("symlink");
    assert_eq!(fs::read_link(m("link")).expect("readlink"), Path::new("g"));
    assert_eq!(fs::read(m("link")).expect("through the link"), b"one");
    assert_eq!(fs::read_link(b("link")).expect("backing link"), Path::new("g"));
    fs::hard_link(m("g"), m("g2")).expect("link");
    assert_eq!(std::os::unix::fs::MetadataExt::nlink(&fs::metadata(m("g")).expect("stat")), 2);

    let c = |p: PathBuf| std::ffi::CString::new(p.into_os_string().into_encoded_bytes()).expect("path");
    let rename2 = |from: &str, to: &str, flags: libc::c_uint| {
        let (from, to) = (c(m(from)), c(m(to)));
        // SAFETY: NUL-terminated paths.
        let r = unsafe { libc::renameat2(libc::AT_FDCWD, from.as_ptr(), libc::AT_FDCWD, to.as_ptr(), flags) };
        if r == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    };
    let err = rename2("g", "e/inner", libc::RENAME_NOREPLACE).expect_err("noreplace over a file");
    assert_eq!(err.raw_os_error(), Some(libc::EEXIST));
    rename2("g", "e/inner", libc::RENAME_EXCHANGE).expect("exchange");
    assert_eq!((fs::read(b("g")).unwrap(), fs::read(b("e/inner")).unwrap()), (b"two".to_vec(), b"one".to_vec()));

    fs::remove_file(m("g2")).expect("unlink");
    fs::remove_file(m("link")).expect("unlink a symlink");
    assert!(!b("g2").exists() && !b("link").exists());
    let mut names: Vec<String> = fs::read_dir(&flash.mnt)
        .expect("readdir")
        .map(|e| e.expect("entry").file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["e", "g"]);
    fs::remove_file(m("e/inner")).expect("unlink");
    fs::remove_dir(m("e")).expect("rmdir");
    assert!(!b("e").exists());

    // Attributes: chmod, truncate, utimes.
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(m("g"), fs::Permissions::from_mode(0o600)).expect("chmod");
    assert_eq!(fs::metadata(b("g")).expect("stat").permissions().mode() & 0o777, 0o600);
    File::options().write(true).open(m("g")).expect("open").set_len(10_000).expect("truncate");
    assert_eq!(fs::metadata(b("g")).expect("stat").len(), 10_000);

    let stats = flash.end(End::Fusermount, &dirs);
    assert!(all_commands(&stats, "write") >= 10, "metadata changes are charged as writes: {stats}");
}

#[test]
fn an_ext4_image_loop_mounted_from_the_mount_works() {
    require_root("it loop-mounts an ext4 image");
    let dirs = Dirs::new(None);
    let flash = FlashMount::foreground(&dirs, &["--profile", "ufs"]);
    let image = flash.path("ext4.img");
    File::create(&image).expect("create the image").set_len(32 << 20).expect("size the image");
    let run = |what: &str, cmd: &mut Command| {
        let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e} (install e2fsprogs / util-linux)"));
        assert!(out.status.success(), "{what} failed: {}", String::from_utf8_lossy(&out.stderr));
    };
    run("mkfs.ext4", Command::new("mkfs.ext4").args(["-q", "-F"]).arg(&image));
    let ext4 = dirs.logs.join("ext4-mnt");
    fs::create_dir(&ext4).expect("mkdir");
    let content = pattern(7, 5 << 20);
    run("mount -o loop", Command::new("mount").args(["-o", "loop"]).arg(&image).arg(&ext4));
    let written = (|| {
        fs::write(ext4.join("data"), &content)?;
        File::open(ext4.join("data"))?.sync_all()
    })();
    umount(&ext4);
    written.expect("write into the ext4 image");
    let in_backing = fs::read(dirs.backing.join("ext4.img")).expect("read the image in BACKING");
    // ext4 blocks are at least 1 KiB (small file systems use 1 KiB blocks).
    assert!(in_backing.chunks(1024).any(|block| block.starts_with(&content[..64])), "the data reached BACKING");

    run("mount -o loop (again)", Command::new("mount").args(["-o", "loop,ro"]).arg(&image).arg(&ext4));
    let back = fs::read(ext4.join("data"));
    umount(&ext4);
    assert!(back.expect("read back from the ext4 image") == content, "ext4 data differs after a remount");

    let stats = flash.end(End::Sigterm, &dirs);
    assert!(all_commands(&stats, "read") > 0 && all_commands(&stats, "write") > 0, "{stats}");
    assert!(all_commands(&stats, "flush") > 0, "ext4's journal commits flush: {stats}");
}

/// Unmounts `mnt`, again after a moment while it is busy: a child another
/// test forks holds a copy of every open descriptor until it execs, and one
/// of this test's files may be among them.
fn umount(mnt: &Path) {
    let mut last = String::new();
    for _ in 0..20 {
        let out = Command::new("umount").arg(mnt).output().expect("run umount (util-linux)");
        if out.status.success() {
            return;
        }
        last = String::from_utf8_lossy(&out.stderr).into_owned();
        if !last.contains("busy") {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("umount {} failed: {last}", mnt.display());
}

#[test]
fn mcfs_runs_with_its_backing_store_on_the_emulated_flash() {
    let dirs = Dirs::new(None);
    let flash = FlashMount::foreground(&dirs, &["--profile", "emmc"]);
    let backing = flash.path("mcfs-backing");
    let mcfs_mnt = dirs.logs.join("mcfs-mnt");
    fs::create_dir(&backing).expect("mkdir backing");
    fs::create_dir(&mcfs_mnt).expect("mkdir mount point");
    let (b, m) = (backing.display().to_string(), mcfs_mnt.display().to_string());
    mcfs(&dirs, &["mount", &b, &m]).assert_success("mcfs mount over flashdev");
    let content = pattern(11, 300_000);
    let written =
        fs::write(mcfs_mnt.join("app.db"), &content).and_then(|()| File::open(mcfs_mnt.join("app.db"))?.sync_all());
    mcfs(&dirs, &["umount", "--timeout", "60", &m]).assert_success("mcfs umount");
    written.expect("write through mcfs");
    assert_eq!(fs::read(dirs.backing.join("mcfs-backing/app.db")).expect("on the flash's backing"), content);
    let stats = flash.end(End::McfsUmount, &dirs);
    assert!(all_commands(&stats, "write") > 0, "mcfs's checkpoint reached the device: {stats}");
}

#[test]
fn requests_are_classed_by_the_callers_io_priority() {
    const FG_WRITES: u64 = 40;
    const BG_READS: u64 = 40;
    let dirs = Dirs::new(None);
    let flash = FlashMount::foreground(&dirs, &["--scheduler", "priority"]);
    fs::write(flash.path("bg-input"), pattern(3, 4096)).expect("prepare");
    let fg_path = flash.path("fg-output");
    let foreground = std::thread::spawn(move || {
        ioprio::set_current_thread(IoPriority::for_class(IoClass::Foreground)).expect("ioprio_set");
        let f = File::create(&fg_path).expect("create");
        for i in 0..FG_WRITES {
            f.write_all_at(&pattern(i, 4096), i * 4096).expect("write");
        }
    });
    let bg_path = flash.path("bg-input");
    let background = std::thread::spawn(move || {
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() } as u32;
        let inherited = ioprio::of_thread(tid).expect("ioprio_get");
        assert!(!inherited.is_foreground(), "run the tests without a high I/O priority (ionice): {inherited:?}");
        let mut f = File::open(&bg_path).expect("open");
        let mut buf = vec![0u8; 4096];
        for _ in 0..BG_READS {
            f.read_exact(&mut buf).expect("read");
            std::io::Seek::rewind(&mut f).expect("rewind");
        }
    });
    foreground.join().expect("foreground thread");
    background.join().expect("background thread");

    // The stats file is rewritten every second while mounted.
    wait_for("the running counts in the stats file", || {
        fs::read_to_string(&flash.stats)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .is_some_and(|s| requests(&s, "foreground") >= FG_WRITES)
    });
    let stats = flash.end(End::Sigterm, &dirs);
    assert!(commands(&stats, "foreground", "write") >= FG_WRITES, "{stats}");
    assert_eq!(commands(&stats, "foreground", "read"), 0, "the foreground thread only wrote: {stats}");
    assert!(commands(&stats, "background", "read") >= BG_READS, "{stats}");
    assert!(requests(&stats, "background") >= BG_READS, "{stats}");
}
