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

    /// What a mount after a crash now would find at `path` (the journal's
    /// waiting transactions recovered).
    fn contents(&self, path: &str) -> Option<Vec<u8>> {
        let durable = mcfs_core::journal::recovered_copy(&self.backend).expect("recover a copy");
        let size = durable.stat(Path::new(path)).ok()?.size as usize;
        let mut buf = vec![0; size];
        let n = durable.read_at(Path::new(path), 0, &mut buf).ok()?;
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
        let durable = mcfs_core::journal::recovered_copy(&f.backend).expect("recover a copy");
        assert!(durable.stat(Path::new("d")).is_ok(), "{op}: the rmdir is after the boundary");
    }
}

/// A limit reached still closes the VCT between sync points (bounded
/// staleness wins; the documented exception), and a VCT halfway to one
/// closes at the next sync point even under a policy that would wait.
/// An app changing another app's object is told so (the FUSE adapter then
/// has the kernel hand everything over first), and in sync-point mode its
/// own VCT ends right after, so a later writeback of the other app's file
/// finds no open VCT of it to close halfway.
#[test]
fn changing_another_apps_file_ends_the_changers_vct_in_sync_point_mode() {
    const OTHER: Caller = Caller { uid: 10002, gid: 10002, pid: 8 };
    for (consistency, changer_closes) in [("operation", 0), ("sync-point", 1)] {
        let f = fixture(consistency);
        let shared = f.engine.mkdir(APP, ROOT_INO, OsStr::new("shared"), 0o777).unwrap().ino;
        let file = f.engine.create(APP, shared, OsStr::new("f"), 0o666, false).unwrap().ino;
        let own = f.engine.create(OTHER, ROOT_INO, OsStr::new("own"), 0o644, false).unwrap().ino;
        f.engine.checkpoint().unwrap();
        assert!(f.engine.touches_other_apps(OTHER, &[file], &[]), "{consistency}: APP's file");
        assert!(f.engine.touches_other_apps(OTHER, &[], &[(shared, OsStr::new("f"))]), "{consistency}: by name");
        assert!(!f.engine.touches_other_apps(OTHER, &[own], &[]), "{consistency}: its own file");
        assert!(!f.engine.touches_other_apps(APP, &[file, shared], &[]), "{consistency}: APP's own");
        let closed_by_other = || f.engine.stats().apps["uid:10002"].vcts_closed;
        let before = closed_by_other();
        f.engine.setattr(OTHER, file, &SetAttr { perm: Some(0o600), ..SetAttr::default() }).unwrap();
        assert_eq!(closed_by_other() - before, changer_closes, "{consistency}: the chmod of APP's file");
        // A write of APP's depends on the chmod: in operation mode it closes
        // OTHER's VCT there; in sync-point mode that VCT is closed already.
        f.engine.write(None, file, 0, b"x").unwrap();
        assert_eq!(closed_by_other() - before, 1, "{consistency}: APP's writeback");
    }
}

/// The times the kernel sends with a writeback (a SETATTR of times only,
/// from whichever process wrote back) are logged in the file's app in
/// sync-point mode, like the data; in operation mode in the caller's.
#[test]
fn times_alone_go_with_the_files_data_in_sync_point_mode() {
    const OTHER: Caller = Caller { uid: 10002, gid: 10002, pid: 8 };
    for (consistency, logged_by_app) in [("operation", false), ("sync-point", true)] {
        let f = fixture(consistency);
        let file = f.engine.create(APP, ROOT_INO, OsStr::new("f"), 0o666, false).unwrap().ino;
        f.engine.create(OTHER, ROOT_INO, OsStr::new("other"), 0o644, false).unwrap();
        f.engine.checkpoint().unwrap();
        let committed = |uid: &str| f.engine.stats().apps[uid].vcts_committed;
        let (app_before, other_before) = (committed("uid:10001"), committed("uid:10002"));
        let times = SetAttr { mtime: Some(SetTime::Now), atime: Some(SetTime::Now), ..SetAttr::default() };
        assert!(times.sets_only_times());
        f.engine.setattr(OTHER, file, &times).unwrap();
        f.engine.checkpoint().unwrap();
        let in_app = committed("uid:10001") - app_before;
        let in_other = committed("uid:10002") - other_before;
        assert_eq!((in_app, in_other), if logged_by_app { (1, 0) } else { (0, 1) }, "{consistency}");
    }
}

/// Sync-point mode under the default policy with a 10 s age limit; the
/// app has written a byte of file `f` (returned) just now.
fn ten_second_limit() -> (Engine, Arc<ManualClock>, Ino) {
    let config = Config::from_toml("consistency = \"sync-point\"\nmax_stale_seconds = 10\n").expect("config");
    let clock = Arc::new(ManualClock::new());
    let engine = Engine::start(Arc::new(MemBackend::new()), clock.clone(), config).expect("engine starts");
    let file = engine.create(APP, ROOT_INO, OsStr::new("f"), 0o644, false).unwrap().ino;
    engine.write(Some(APP), file, 0, b"x").unwrap();
    (engine, clock, file)
}

#[test]
fn limits_close_between_sync_points_and_halfway_closes_at_one() {
    let (engine, clock, file) = ten_second_limit();
    let closed = || engine.stats().apps["uid:10001"].vcts_closed;
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

#[test]
fn after_a_limit_closed_a_vct_the_next_close_at_half_the_byte_limit_until_a_sync_point() {
    let config = Config::from_toml("consistency = \"sync-point\"\nmax_stale_bytes = 65536\n").expect("config");
    let engine = Engine::start(Arc::new(MemBackend::new()), Arc::new(ManualClock::new()), config).unwrap();
    let closed = || engine.stats().apps["uid:10001"].vcts_closed;
    let file = engine.create(APP, ROOT_INO, OsStr::new("f"), 0o644, false).unwrap().ino;
    let mut at = 0;
    let mut write = |pages: u64| {
        for _ in 0..pages {
            engine.write(None, file, at, &[7; 4096]).unwrap();
            at += 4096;
        }
    };
    write(8);
    assert_eq!(closed(), 0, "half the limit, no sync point: no boundary");
    write(8);
    assert_eq!(closed(), 1, "the limit closes it");
    write(8);
    assert_eq!(closed(), 2, "after a limit's boundary, half the limit closes the next");
    engine.fsync(Some(APP), file).unwrap();
    engine.tick(); // the background thread commits what closed
    let at_sync_point = closed();
    write(8);
    assert_eq!(closed(), at_sync_point, "a sync point restores the full limit");
    write(8);
    assert_eq!(closed(), at_sync_point + 1);
    engine.fsync(Some(APP), file).unwrap();
    engine.tick();
    // Writes that end short of the limit: the writer past it commits its
    // open VCT first, a boundary between sync points too.
    let mut at = at + 100;
    let before = closed();
    for _ in 0..16 {
        engine.write(None, file, at, &[8; 4000]).unwrap();
        at += 4000;
    }
    assert_eq!(closed(), before, "64,000 bytes: short of the limit");
    engine.write(None, file, at, &[8; 4000]).unwrap();
    at += 4000;
    assert_eq!(closed(), before + 1, "the writer past the limit committed the open VCT");
    for _ in 0..8 {
        engine.write(None, file, at, &[8; 4000]).unwrap();
        at += 4000;
    }
    assert_eq!(closed(), before + 2, "36,000 bytes: past half the limit, the next closes");
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

/// The kernel's writeback cache between the app and the engine: the app's
/// writes dirty pages the kernel holds; its writeback sends any of them at
/// any time, in any order, each page as it is then; a truncate goes at once
/// and drops the dirty pages past the new end; an fsync first hands over
/// every dirty page (the FUSE adapter's handover). With a policy that wants
/// a boundary every 5 s, a crash at any moment must leave each file as it
/// was at one of the app's sync points — in operation mode it does not.
#[test]
fn a_crash_between_reordered_writebacks_finds_a_sync_points_state() {
    use rand::{Rng, SeedableRng};
    const FILES: usize = 3;
    let seed = std::env::var("MCFS_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random::<u64>);
    println!("seed {seed} (replay with MCFS_SEED={seed})");
    let mut not_a_sync_point = 0;
    // 40 rounds, and more while operation mode has shown no cut yet: a few
    // seeds' first 40 rounds never cut it (16919501526911423247).
    let mut round = 0u64;
    while round < 40 || (not_a_sync_point == 0 && round < 400) {
        for consistency in ["sync-point", "operation"] {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed.wrapping_add(round));
            let f = fixture(consistency);
            let inos: Vec<Ino> = (0..FILES)
                .map(|i| f.engine.create(APP, ROOT_INO, OsStr::new(&format!("f{i}")), 0o644, false).unwrap().ino)
                .collect();
            f.engine.checkpoint().unwrap();
            let mut app_view = vec![Vec::<u8>::new(); FILES];
            let mut dirty: Vec<(usize, u64)> = Vec::new();
            let mut sync_points = vec![app_view.clone()];
            let write_back = |f: &Fixture, view: &[Vec<u8>], (i, page): (usize, u64)| {
                let start = (page * 4096) as usize;
                if start < view[i].len() {
                    let end = (start + 4096).min(view[i].len());
                    f.engine.write(None, inos[i], start as u64, &view[i][start..end]).unwrap();
                }
            };
            for _ in 0..rng.gen_range(5..45) {
                let i = rng.gen_range(0..FILES);
                match rng.gen_range(0..10) {
                    0..=4 => {
                        let offset = rng.gen_range(0..5 * 4096);
                        let data: Vec<u8> = (0..rng.gen_range(1..6000)).map(|_| rng.gen_range(1..=255)).collect();
                        let end = offset + data.len();
                        if app_view[i].len() < end {
                            app_view[i].resize(end, 0);
                        }
                        app_view[i][offset..end].copy_from_slice(&data);
                        for page in offset as u64 / 4096..=(end as u64 - 1) / 4096 {
                            if !dirty.contains(&(i, page)) {
                                dirty.push((i, page));
                            }
                        }
                    }
                    5 => {
                        let size = rng.gen_range(0..4 * 4096);
                        app_view[i].resize(size, 0);
                        dirty.retain(|&(j, page)| j != i || page * 4096 < size as u64);
                        let set = SetAttr { size: Some(size as u64), ..SetAttr::default() };
                        f.engine.setattr(APP, inos[i], &set).unwrap();
                    }
                    6..=7 => {
                        // The kernel's writeback: some dirty pages, in any order.
                        for _ in 0..rng.gen_range(0..=dirty.len()) {
                            let page = dirty.swap_remove(rng.gen_range(0..dirty.len()));
                            write_back(&f, &app_view, page);
                        }
                        // At most 45 steps of 2.5 s: no VCT reaches the 120 s age limit.
                        f.clock.advance(Duration::from_millis(rng.gen_range(0..2500)));
                        f.engine.tick();
                    }
                    _ => {
                        while !dirty.is_empty() {
                            let page = dirty.swap_remove(rng.gen_range(0..dirty.len()));
                            write_back(&f, &app_view, page);
                        }
                        f.engine.fsync(Some(APP), inos[i]).unwrap();
                        sync_points.push(app_view.clone());
                    }
                }
            }
            let f = f.crash_and_restart();
            let recovered: Vec<Vec<u8>> =
                (0..FILES).map(|i| f.contents(&format!("f{i}")).unwrap_or_default()).collect();
            if !sync_points.contains(&recovered) {
                assert_eq!(consistency, "operation", "round {round}: not the state of any sync point (seed {seed})");
                not_a_sync_point += 1;
            }
        }
        round += 1;
    }
    assert!(not_a_sync_point > 0, "operation mode never cut between sync points: the test shows nothing (seed {seed})");
}

#[test]
fn a_handover_is_needed_only_where_a_boundary_may_fall_and_none_falls_without_one() {
    let (engine, clock, file) = ten_second_limit();
    let closed = || engine.stats().apps["uid:10001"].vcts_closed;
    clock.advance(Duration::from_secs(4));
    assert!(!engine.boundary_possible(APP), "staleness-limit, 4 s of 10: no sync point can close it");
    clock.advance(Duration::from_secs(2));
    assert!(engine.boundary_possible(APP), "6 s: halfway, a sync point closes it");
    // A sync point run without a handover places no boundary, even when due.
    Engine::without_boundary(|| engine.fsync(Some(APP), file)).unwrap();
    let unlinked = engine.create(APP, ROOT_INO, OsStr::new("g"), 0o644, false).unwrap().ino;
    Engine::without_boundary(|| engine.unlink(APP, ROOT_INO, OsStr::new("g"))).unwrap();
    assert_eq!(closed(), 0, "no boundary without a handover");
    assert!(engine.getattr(unlinked).is_ok_and(|a| a.nlink == 0), "the unlink itself was done");
    engine.fsync(Some(APP), file).unwrap();
    assert_eq!(closed(), 1, "the next sync point with its handover closes it");
}

#[test]
fn every_sync_point_needs_a_handover_under_a_policy_that_may_close_there_or_in_sync_mode() {
    for toml in ["transaction_policy = \"close-on-fsync\"\n", "mode = \"sync\"\n"] {
        let config = Config::from_toml(&format!("consistency = \"sync-point\"\n{toml}")).expect("config");
        let engine = Engine::start(Arc::new(MemBackend::new()), Arc::new(ManualClock::new()), config).expect("starts");
        assert!(engine.boundary_possible(APP), "{toml}");
    }
}

/// A writeback's WRITE (no caller) leaves the file's mtime to the kernel,
/// which keeps the time of the app's write and sends it in a SETATTR; it
/// still changes the ctime, which stays the engine's. An app's own write
/// (a caller) stamps both, as in operation mode.
#[test]
fn a_writeback_leaves_the_mtime_to_the_kernel_and_changes_the_ctime() {
    let f = fixture("sync-point");
    let file = f.engine.create(APP, ROOT_INO, OsStr::new("f"), 0o644, false).unwrap().ino;
    let created = f.engine.getattr(file).unwrap();
    f.clock.advance(Duration::from_secs(1));
    f.engine.write(None, file, 0, b"from the kernel's cache").unwrap();
    let written_back = f.engine.getattr(file).unwrap();
    assert_eq!(written_back.mtime, created.mtime, "the kernel's time, unchanged");
    assert_eq!(written_back.ctime, created.ctime + Duration::from_secs(1), "the engine's ctime");
    let kernels_time = created.mtime + Duration::from_millis(500);
    let times = SetAttr { mtime: Some(SetTime::At(kernels_time)), ..SetAttr::default() };
    assert_eq!(f.engine.setattr(APP, file, &times).unwrap().mtime, kernels_time, "the SETATTR that follows");
    f.clock.advance(Duration::from_secs(1));
    f.engine.write(Some(APP), file, 0, b"direct").unwrap();
    let direct = f.engine.getattr(file).unwrap();
    assert_eq!(direct.mtime, created.mtime + Duration::from_secs(2), "a caller's write stamps the mtime");
    assert_eq!(direct.ctime, direct.mtime);
}
