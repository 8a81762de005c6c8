//! FUSE requests the kernel sends a mount, counted by the kernel itself (the
//! `fuse:fuse_request_send` tracepoint, on this mount's connection only).
//! Issue 11: every request is a round trip ext4 never makes, so a request
//! mcfs has no use for must not be sent more than once per mount.

mod common;

use common::{ctl, require_root, Daemon, Dirs};
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

const TRACING: &str = "/sys/kernel/tracing";
const FUSE_OPEN: u32 = 14;
const FUSE_RELEASE: u32 = 18;
const FUSE_FLUSH: u32 = 25;
const FUSE_OPENDIR: u32 = 27;
const FUSE_RELEASEDIR: u32 = 29;
const CLOSES: usize = 40;

/// A tracefs instance of its own recording FUSE requests of one connection;
/// removed on drop.
struct RequestTrace {
    dir: PathBuf,
}

impl RequestTrace {
    /// `name`: the instance's, unique among the tests running at once.
    fn start(name: &str, mnt: &Path, opcode: u32) -> RequestTrace {
        require_root("it reads the kernel's FUSE tracepoint");
        mount_tracefs();
        assert!(
            Path::new(TRACING).join("events/fuse/fuse_request_send").is_dir(),
            "{TRACING}/events/fuse/fuse_request_send is missing: this test counts FUSE requests with the \
             kernel's tracepoint (mount tracefs on {TRACING}; the kernel needs CONFIG_FTRACE)"
        );
        // A FUSE connection's number is the minor of its mount's device.
        let connection = libc::minor(fs::metadata(mnt).expect("stat the mount").dev());
        let dir = Path::new(TRACING).join(format!("instances/mcfs-{name}-{}", std::process::id()));
        fs::create_dir(&dir).unwrap_or_else(|e| panic!("mkdir {}: {e}", dir.display()));
        let trace = RequestTrace { dir };
        let event = trace.dir.join("events/fuse/fuse_request_send");
        write(&event.join("filter"), &format!("connection == {connection} && opcode == {opcode}"));
        write(&event.join("enable"), "1");
        trace
    }

    /// Requests recorded so far.
    fn count(&self) -> usize {
        let text = fs::read_to_string(self.dir.join("trace")).expect("read the trace");
        assert!(!text.contains("LOST"), "the trace buffer overflowed");
        text.lines().filter(|l| l.contains("fuse_request_send:")).count()
    }
}

impl Drop for RequestTrace {
    fn drop(&mut self) {
        let _ = fs::write(self.dir.join("events/fuse/fuse_request_send/enable"), "0");
        let _ = fs::remove_dir(&self.dir);
    }
}

/// Mounts tracefs where the kernel offers it, unless it is mounted already.
fn mount_tracefs() {
    let events = Path::new(TRACING).join("events");
    if events.exists() || !Path::new(TRACING).is_dir() {
        return;
    }
    let status = std::process::Command::new("mount").args(["-t", "tracefs", "tracefs", TRACING]).status();
    assert!(
        matches!(status, Ok(s) if s.success()),
        "cannot mount tracefs on {TRACING} ({status:?}): this test counts FUSE requests with the kernel's tracepoint"
    );
}

fn write(path: &Path, text: &str) {
    fs::write(path, text).unwrap_or_else(|e| panic!("write {text:?} to {}: {e}", path.display()));
}

/// Opens, writes and closes a file `CLOSES` times.
fn write_and_close(mnt: &Path) {
    for n in 0..CLOSES {
        let mut f = File::create(mnt.join(format!("f{}", n % 4))).expect("create");
        f.write_all(b"data").expect("write");
    }
}

#[test]
fn a_close_costs_no_flush_unless_the_mount_records() {
    for consistency in ["operation", "sync-point"] {
        let dirs = Dirs::new(Some(&format!("consistency = \"{consistency}\"\n")));
        let daemon = Daemon::foreground(&dirs, &[]);
        let trace = RequestTrace::start(consistency, &dirs.mnt, FUSE_FLUSH);
        write_and_close(&dirs.mnt);
        let flushes = trace.count();
        drop(trace);
        daemon.unmount();
        assert!(flushes <= 1, "{consistency}: {flushes} FLUSH requests for {CLOSES} closes: at most the first");
        for n in 0..4 {
            assert_eq!(fs::read(dirs.backing.join(format!("f{n}"))).unwrap(), b"data", "{consistency}: f{n}");
        }
    }
}

#[test]
fn a_recording_mount_hears_every_close() {
    let dirs = Dirs::new(None);
    let recording = dirs.logs.join("trace.txt");
    let daemon = Daemon::foreground(&dirs, &["--record", recording.to_str().unwrap()]);
    let trace = RequestTrace::start("recording", &dirs.mnt, FUSE_FLUSH);
    write_and_close(&dirs.mnt);
    let flushes = trace.count();
    drop(trace);
    daemon.unmount();
    assert_eq!(flushes, CLOSES, "a close is an event of the recorded trace");
}

#[test]
fn listing_a_directory_costs_no_opendir_after_the_first() {
    for consistency in ["operation", "sync-point"] {
        let dirs = Dirs::new(Some(&format!("consistency = \"{consistency}\"\n")));
        let daemon = Daemon::foreground(&dirs, &[]);
        fs::create_dir(dirs.mnt.join("d")).unwrap();
        let opens = RequestTrace::start(&format!("opendir-{consistency}"), &dirs.mnt, FUSE_OPENDIR);
        let releases = RequestTrace::start(&format!("releasedir-{consistency}"), &dirs.mnt, FUSE_RELEASEDIR);
        for n in 0..CLOSES {
            File::create(dirs.mnt.join(format!("d/f{n}"))).expect("create");
            let names = fs::read_dir(dirs.mnt.join("d")).expect("readdir").count();
            assert_eq!(names, n + 1, "{consistency}: listing {n}");
        }
        let (opendirs, releasedirs) = (opens.count(), releases.count());
        drop((opens, releases));
        daemon.unmount();
        assert!(opendirs <= 1, "{consistency}: {opendirs} OPENDIR requests for {CLOSES} listings: at most the first");
        assert_eq!(releasedirs, 0, "{consistency}: no RELEASEDIR follows a refused OPENDIR");
    }
}

/// Opens each of the files `f0`..`f3` (made by `write_and_close`) for
/// reading and for appending, `CLOSES` times in all.
fn open_and_close(mnt: &Path) {
    for n in 0..CLOSES {
        let path = mnt.join(format!("f{}", n % 4));
        let mut text = String::new();
        File::open(&path).expect("open").read_to_string(&mut text).expect("read");
        assert!(text.starts_with("data"), "f{}: {text:?}", n % 4);
        OpenOptions::new().append(true).open(&path).expect("open to append").write_all(b"+").expect("append");
    }
}

#[test]
fn an_open_costs_no_open_or_release_unless_the_mount_needs_to_hear_of_it() {
    // Sync-point mode's handover counts write opens; a recorded trace has an event per open.
    for (name, config, record, hears) in [
        ("operation", "consistency = \"operation\"\n", false, false),
        ("sync-point", "consistency = \"sync-point\"\n", false, true),
        ("recording", "consistency = \"operation\"\n", true, true),
    ] {
        let dirs = Dirs::new(Some(config));
        let recording = dirs.logs.join("trace.txt");
        let args: &[&str] = if record { &["--record", recording.to_str().unwrap()] } else { &[] };
        let daemon = Daemon::foreground(&dirs, args);
        write_and_close(&dirs.mnt);
        let opens = RequestTrace::start(&format!("open-{name}"), &dirs.mnt, FUSE_OPEN);
        let releases = RequestTrace::start(&format!("release-{name}"), &dirs.mnt, FUSE_RELEASE);
        open_and_close(&dirs.mnt);
        // The files exist: each File::create is an OPEN too.
        write_and_close(&dirs.mnt);
        // RELEASE goes in the background: give the last ones time to be sent
        // (counted before the unmount, after which another test's mount may
        // take this connection's number).
        let expected_releases = if hears { 3 * CLOSES } else { 0 };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while releases.count() < expected_releases && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let (open_requests, release_requests) = (opens.count(), releases.count());
        drop((opens, releases));
        daemon.unmount();
        if hears {
            assert_eq!(open_requests, 3 * CLOSES, "{name}: an OPEN for each open");
            assert_eq!(release_requests, expected_releases, "{name}: a RELEASE for each close");
        } else {
            assert!(
                open_requests <= 1,
                "{name}: {open_requests} OPEN requests for {} opens: at most the first",
                3 * CLOSES
            );
            assert_eq!(release_requests, 0, "{name}: no RELEASE follows a refused OPEN, not even a created file's");
        }
        for n in 0..4 {
            let text = fs::read_to_string(dirs.backing.join(format!("f{n}"))).unwrap();
            assert_eq!(text, "data", "{name}: f{n} was written again last");
        }
    }
}

/// Without OPEN and RELEASE the engine keeps an unlinked file while the
/// kernel holds it open, and lets it go once the kernel forgets it.
#[test]
fn a_file_unlinked_while_open_lives_until_closed_without_open_requests() {
    let dirs = Dirs::new(Some("consistency = \"operation\"\n"));
    let daemon = Daemon::foreground(&dirs, &[]);
    write_and_close(&dirs.mnt);
    open_and_close(&dirs.mnt);
    // Both created once OPEN was refused: the engine counted an open for each
    // create that no RELEASE gives back.
    let (doomed, created) = (dirs.mnt.join("doomed"), dirs.mnt.join("created"));
    fs::write(&doomed, b"kept while open").unwrap();
    let mut created_file = File::create(&created).expect("create");
    created_file.write_all(b"kept too").expect("write");
    ctl(&dirs, &["checkpoint"]);
    let mut doomed_file = File::open(&doomed).expect("open");
    fs::remove_file(&doomed).expect("unlink while open");
    fs::remove_file(&created).expect("unlink the created file while open");
    ctl(&dirs, &["checkpoint"]);
    let orphans = dirs.backing.join(".mcfs/orphans");
    let count = || fs::read_dir(&orphans).expect("the orphans directory").count();
    assert_eq!(count(), 2, "both open files are orphans");
    let mut text = String::new();
    doomed_file.read_to_string(&mut text).expect("read after unlink");
    assert_eq!(text, "kept while open");
    drop((doomed_file, created_file));
    // The kernel forgets both after their last close (a FORGET it sends when
    // it gets to it); a checkpoint after that deletes their orphans.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while count() > 0 {
        assert!(std::time::Instant::now() < deadline, "{} orphans still kept after both files were closed", count());
        std::thread::sleep(std::time::Duration::from_millis(50));
        ctl(&dirs, &["checkpoint"]);
    }
    daemon.unmount();
}
