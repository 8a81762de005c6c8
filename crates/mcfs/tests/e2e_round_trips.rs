//! FUSE requests the kernel sends a mount, counted by the kernel itself (the
//! `fuse:fuse_request_send` tracepoint, on this mount's connection only).
//! Issue 11: every request is a round trip ext4 never makes, so a request
//! mcfs has no use for must not be sent more than once per mount.

mod common;

use common::{require_root, Daemon, Dirs};
use std::fs::{self, File};
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

const TRACING: &str = "/sys/kernel/tracing";
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
