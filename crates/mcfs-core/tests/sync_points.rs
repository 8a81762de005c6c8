//! Sync-point consistency (`consistency = "sync-point"`, issue 11 item 4):
//! the transactioning policy places VCT boundaries only at the app's sync
//! points (fsync, fdatasync, fsyncdir, rename, unlink, rmdir, link); between
//! them only a limit reached closes a VCT; and a crash (an engine restarted
//! on the same backing store without its orderly stop) brings back the
//! state of a sync point. All on a manual clock.

use mcfs_core::*;
use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

const APP: Caller = Caller { uid: 10001, gid: 10001, pid: 7 };

struct Fixture {
    backend: Arc<MemBackend>,
    clock: Arc<ManualClock>,
    engine: Engine,
}

/// `ext4-like` closes an app's VCT every 5 s whatever the app does: in
/// operation mode on the clock, in sync-point mode at the first sync point
/// after that (the limits stay at their defaults: 120 s, 128 MiB).
fn fixture(consistency: &str) -> Fixture {
    let config = Config::from_toml(&format!("consistency = \"{consistency}\"\ntransaction_policy = \"ext4-like\"\n"))
        .expect("config");
    let backend = Arc::new(MemBackend::new());
    let clock = Arc::new(ManualClock::new());
    let engine = Engine::start(backend.clone(), clock.clone(), config.clone()).expect("engine starts");
    Fixture { backend, clock, engine }
}

impl Fixture {
    fn closed(&self) -> u64 {
        self.engine.stats().apps["uid:10001"].vcts_closed
    }

    /// The daemon dies: the next engine recovers from what the backing store has.
    fn crash_and_restart(self) -> Fixture {
        let config = Config { consistency: Consistency::SyncPoint, ..Config::default() };
        let engine = Engine::start(self.backend.clone(), self.clock.clone(), config).expect("restart");
        drop(self.engine);
        Fixture { engine, ..self }
    }

    fn contents(&self, path: &str) -> Option<Vec<u8>> {
        let size = self.backend.stat(Path::new(path)).ok()?.size as usize;
        let mut buf = vec![0; size];
        let n = self.backend.read_at(Path::new(path), 0, &mut buf).ok()?;
        buf.truncate(n);
        Some(buf)
    }
}

#[test]
fn between_sync_points_the_policy_places_no_boundary() {
    for (consistency, closed_by_the_clock) in [("operation", 1), ("sync-point", 0)] {
        let f = fixture(consistency);
        let file = f.engine.create(APP, ROOT_INO, OsStr::new("f"), 0o644, false).unwrap().ino;
        f.engine.tick(); // the policy's period starts
        f.engine.write(Some(APP), file, 0, b"one").unwrap();
        f.clock.advance(Duration::from_secs(6));
        f.engine.tick();
        f.engine.write(Some(APP), file, 3, b"two").unwrap();
        assert_eq!(f.closed(), closed_by_the_clock, "{consistency}: the period ended between sync points");
        f.engine.fsync(Some(APP), file).unwrap();
        if consistency == "sync-point" {
            assert_eq!(f.closed(), 1, "the boundary the clock asked for falls at the fsync");
        }
    }
}

#[test]
fn a_namespace_operation_is_a_sync_point_and_its_boundary_falls_before_it() {
    for op in ["rename", "unlink", "link", "rmdir"] {
        let f = fixture("sync-point");
        let dir = f.engine.mkdir(APP, ROOT_INO, OsStr::new("d"), 0o755).unwrap().ino;
        let tmp = f.engine.create(APP, ROOT_INO, OsStr::new("tmp"), 0o644, false).unwrap().ino;
        f.engine.tick();
        f.engine.write(Some(APP), tmp, 0, b"new contents").unwrap();
        f.clock.advance(Duration::from_secs(6));
        f.engine.tick();
        assert_eq!(f.closed(), 0, "{op}: no boundary between sync points");
        match op {
            "rename" => {
                f.engine.rename(APP, ROOT_INO, OsStr::new("tmp"), ROOT_INO, OsStr::new("f"), RenameMode::Replace)
            }
            "unlink" => f.engine.unlink(APP, ROOT_INO, OsStr::new("tmp")),
            "link" => f.engine.link(APP, tmp, dir, OsStr::new("l")).map(drop),
            _ => f.engine.rmdir(APP, ROOT_INO, OsStr::new("d")),
        }
        .unwrap();
        assert_eq!(f.closed(), 1, "{op}: the boundary falls at the sync point");
        // The operation itself went into the next VCT.
        f.engine.tick();
        assert!(f.contents("tmp").is_some_and(|d| d == b"new contents"), "{op}: the data before the sync point");
        assert!(f.contents("f").is_none(), "{op}: the rename is after the boundary");
        assert!(f.backend.stat(Path::new("d")).is_ok(), "{op}: the rmdir is after the boundary");
    }
}

/// A limit reached still closes the VCT between sync points (bounded
/// staleness wins; the documented exception), and a VCT halfway to one
/// closes at the next sync point even under a policy that would wait.
#[test]
fn limits_close_between_sync_points_and_halfway_closes_at_one() {
    let config = Config::from_toml("consistency = \"sync-point\"\nmax_stale_seconds = 10\n").expect("config");
    let clock = Arc::new(ManualClock::new());
    let engine = Engine::start(Arc::new(MemBackend::new()), clock.clone(), config).expect("engine starts");
    let closed = || engine.stats().apps["uid:10001"].vcts_closed;
    let file = engine.create(APP, ROOT_INO, OsStr::new("f"), 0o644, false).unwrap().ino;
    engine.write(Some(APP), file, 0, b"x").unwrap();
    clock.advance(Duration::from_secs(4));
    engine.fsync(Some(APP), file).unwrap();
    assert_eq!(closed(), 0, "4 s old: not due yet");
    clock.advance(Duration::from_secs(2));
    engine.tick();
    assert_eq!(closed(), 0, "6 s old: halfway, but no sync point");
    engine.fsync(Some(APP), file).unwrap();
    assert_eq!(closed(), 1, "halfway to the age limit: the sync point closes it");
    engine.write(Some(APP), file, 0, b"y").unwrap();
    clock.advance(Duration::from_secs(10));
    engine.tick();
    assert_eq!(closed(), 2, "the age limit itself closes it between sync points");
}

/// After a crash the app's files are as they were at its last sync point
/// that became a boundary, not at a moment in between (operation mode, for
/// contrast, keeps the boundary the clock placed between two writes).
#[test]
fn a_crash_restores_the_state_of_a_sync_point() {
    for (consistency, after_crash) in [("sync-point", b"AAAA"), ("operation", b"AABB")] {
        let f = fixture(consistency);
        let file = f.engine.create(APP, ROOT_INO, OsStr::new("db"), 0o644, false).unwrap().ino;
        f.engine.tick();
        f.engine.write(Some(APP), file, 0, b"AAAA").unwrap();
        f.engine.fsync(Some(APP), file).unwrap(); // a boundary: "AAAA"
                                                  // Written after the sync point; the policy's period ends in
                                                  // between, and the background thread commits what is closed.
        f.engine.write(Some(APP), file, 2, b"BB").unwrap();
        f.clock.advance(Duration::from_secs(6));
        f.engine.tick();
        f.engine.write(Some(APP), file, 0, b"CC").unwrap();
        f.engine.tick();
        let f = f.crash_and_restart();
        assert_eq!(f.contents("db").expect("the file"), after_crash, "{consistency}");
        let file = f.engine.lookup(APP, ROOT_INO, OsStr::new("db")).unwrap();
        assert_eq!(f.engine.read(file.ino, 0, 16).unwrap(), after_crash, "{consistency}");
    }
}
