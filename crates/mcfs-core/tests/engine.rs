//! Engine behaviour through its public API, over an in-memory backing store
//! and a manual clock.

use mcfs_core::*;
use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

const ME: Caller = Caller { uid: 10001, gid: 10001, pid: 42 };

struct Fixture {
    backend: Arc<MemBackend>,
    clock: Arc<ManualClock>,
    engine: Engine,
}

fn fixture(config: Config) -> Fixture {
    let backend = Arc::new(MemBackend::new());
    let clock = Arc::new(ManualClock::new());
    let engine = Engine::start(backend.clone(), clock.clone(), config).expect("engine starts");
    Fixture { backend, clock, engine }
}

impl Fixture {
    fn create(&self, parent: Ino, name: &str) -> Ino {
        let a = self.engine.create(ME, parent, OsStr::new(name), 0o644, true).expect("create");
        a.ino
    }

    /// `path` in the backing store as a crash now would leave it: committed
    /// transactions still waiting in the journal are recovered on a copy.
    fn backing(&self, path: &str) -> Option<Vec<u8>> {
        let durable = mcfs_core::journal::recovered_copy(&self.backend).expect("recover a copy");
        let p = Path::new(path);
        let size = durable.stat(p).ok()?.size as usize;
        let mut buf = vec![0; size];
        let n = durable.read_at(p, 0, &mut buf).expect("read backing");
        buf.truncate(n);
        Some(buf)
    }

    fn restart(self, config: Config) -> Fixture {
        self.engine.shutdown().expect("clean shutdown");
        let engine = Engine::start(self.backend.clone(), self.clock.clone(), config).expect("restart");
        Fixture { backend: self.backend, clock: self.clock, engine }
    }
}

#[test]
fn memory_mode_fsync_does_not_touch_the_backing_store_and_checkpoint_does() {
    let f = fixture(Config::default());
    let ino = f.create(ROOT_INO, "db");
    f.engine.write(Some(ME), ino, 0, b"hello").unwrap();
    f.engine.fsync(Some(ME), ino).unwrap();
    assert_eq!(f.backing("db"), None, "fsync in memory mode is absorbed");
    assert_eq!(f.engine.read(ino, 0, 100).unwrap(), b"hello");
    f.engine.checkpoint().unwrap();
    assert_eq!(f.backing("db").as_deref(), Some(&b"hello"[..]));
    let s = f.engine.stats();
    assert_eq!((s.fsync_absorbed, s.vcts_committed, s.checkpoints), (1, 1, 1));
}

#[test]
fn sync_mode_fsync_is_durable_before_it_returns() {
    let config = Config { mode: SyncMode::Sync, ..Config::default() };
    let f = fixture(config);
    let ino = f.create(ROOT_INO, "photo");
    f.engine.write(Some(ME), ino, 0, b"pixels").unwrap();
    f.engine.fsync(Some(ME), ino).unwrap();
    assert_eq!(f.backing("photo").as_deref(), Some(&b"pixels"[..]));
    assert_eq!(f.engine.stats().fsync_honoured, 1);
}

#[test]
fn low_battery_switches_every_app_to_sync_mode() {
    let f = fixture(Config::default());
    f.engine.set_battery(10);
    let ino = f.create(ROOT_INO, "notes");
    f.engine.write(Some(ME), ino, 0, b"x").unwrap();
    f.engine.fsync(Some(ME), ino).unwrap();
    assert_eq!(f.backing("notes").as_deref(), Some(&b"x"[..]));
    assert!(f.engine.stats().low_battery);
}

#[test]
fn namespace_changes_reach_the_backing_store_in_order() {
    let f = fixture(Config::default());
    let d = f.engine.mkdir(ME, ROOT_INO, OsStr::new("d"), 0o755).unwrap().ino;
    let a = f.create(d, "a");
    f.engine.write(Some(ME), a, 0, b"old").unwrap();
    f.engine.checkpoint().unwrap();
    // write-temp-then-rename over an existing file
    let t = f.create(d, "a.tmp");
    f.engine.write(Some(ME), t, 0, b"new contents").unwrap();
    f.engine.rename(ME, d, OsStr::new("a.tmp"), d, OsStr::new("a"), RenameMode::Replace).unwrap();
    // unlink and re-create the same name
    let j = f.create(ROOT_INO, "journal");
    f.engine.write(Some(ME), j, 0, b"first").unwrap();
    f.engine.unlink(ME, ROOT_INO, OsStr::new("journal")).unwrap();
    let j2 = f.create(ROOT_INO, "journal");
    f.engine.write(Some(ME), j2, 0, b"2nd").unwrap();
    // truncate and re-extend
    let g = f.create(ROOT_INO, "g");
    f.engine.write(Some(ME), g, 0, &[7u8; 10000]).unwrap();
    f.engine.setattr(ME, g, &SetAttr { size: Some(5), ..SetAttr::default() }).unwrap();
    f.engine.setattr(ME, g, &SetAttr { size: Some(9000), ..SetAttr::default() }).unwrap();
    f.engine.checkpoint().unwrap();
    assert_eq!(f.backing("d/a").as_deref(), Some(&b"new contents"[..]));
    assert_eq!(f.backing("d/a.tmp"), None);
    assert_eq!(f.backing("journal").as_deref(), Some(&b"2nd"[..]));
    let mut want = vec![7u8; 5];
    want.resize(9000, 0);
    assert!(f.backing("g") == Some(want.clone()), "g in the backing store");
    assert!(f.engine.read(g, 0, 20000).unwrap() == want);
}

#[test]
fn state_survives_a_restart_and_the_state_dir_stays_hidden() {
    let f = fixture(Config::default());
    let d = f.engine.mkdir(ME, ROOT_INO, OsStr::new("dir"), 0o750).unwrap().ino;
    let x = f.create(d, "x");
    f.engine.write(Some(ME), x, 4096 * 3, b"tail").unwrap();
    f.engine.symlink(ME, ROOT_INO, OsStr::new("link"), OsStr::new("dir/x")).unwrap();
    let f = f.restart(Config::default());
    let names: Vec<_> = f.engine.readdir(ROOT_INO, 0, usize::MAX).unwrap().into_iter().map(|e| e.name).collect();
    assert_eq!(names, ["dir", "link"], ".mcfs must not show");
    assert_eq!(f.engine.lookup(ME, ROOT_INO, OsStr::new(STATE_DIR)), Err(Errno::ENOENT));
    let d = f.engine.lookup(ME, ROOT_INO, OsStr::new("dir")).unwrap();
    assert_eq!(d.perm, 0o750);
    let x = f.engine.lookup(ME, d.ino, OsStr::new("x")).unwrap();
    assert_eq!(x.size, 4096 * 3 + 4);
    let data = f.engine.read(x.ino, 0, 1 << 20).unwrap();
    assert!(data[..4096 * 3].iter().all(|b| *b == 0));
    assert_eq!(&data[4096 * 3..], b"tail");
    let l = f.engine.lookup(ME, ROOT_INO, OsStr::new("link")).unwrap();
    assert_eq!(f.engine.readlink(l.ino).unwrap(), "dir/x");
}

#[test]
fn files_larger_than_the_cache_work_and_the_cache_stays_bounded() {
    let config = Config { cache_size: 256 * 1024, max_stale_bytes: 64 * 1024, ..Config::default() };
    let f = fixture(config);
    let ino = f.create(ROOT_INO, "big");
    let chunk: Vec<u8> = (0..65536u32).map(|i| (i % 251) as u8).collect();
    for i in 0..16u64 {
        f.engine.write(Some(ME), ino, i * 65536, &chunk).unwrap();
        let s = f.engine.stats();
        assert!(s.cache_total_bytes <= 256 * 1024 + 2 * 65536, "cache at {} bytes", s.cache_total_bytes);
    }
    for i in 0..16u64 {
        assert!(f.engine.read(ino, i * 65536, 65536).unwrap() == chunk, "chunk {i} differs");
    }
}

#[test]
fn staleness_limits_close_and_commit_vcts() {
    let config = Config { max_stale_bytes: 8192, max_stale_seconds: 120.0, ..Config::default() };
    let f = fixture(config);
    let ino = f.create(ROOT_INO, "log");
    f.engine.write(Some(ME), ino, 0, &[1u8; 100]).unwrap();
    f.engine.tick();
    assert_eq!(f.backing("log"), None, "neither limit reached yet");
    assert_eq!(f.engine.next_tick_in(), Duration::from_secs(60), "the writeback interval bounds a sleep");
    f.clock.advance(Duration::from_secs(90));
    assert_eq!(f.engine.next_tick_in(), Duration::from_secs(30), "wake exactly at the age limit");
    f.engine.tick();
    assert_eq!(f.backing("log"), None);
    f.clock.advance(Duration::from_secs(30));
    f.engine.tick();
    assert_eq!(f.backing("log").map(|d| d.len()), Some(100), "age limit");
    f.engine.write(Some(ME), ino, 0, &[2u8; 9000]).unwrap();
    assert_eq!(f.engine.next_tick_in(), Duration::ZERO, "byte limit closed the VCT");
    f.engine.tick();
    assert_eq!(f.backing("log").map(|d| d.len()), Some(9000));
}

#[test]
fn a_page_of_a_closed_vct_is_copied_on_write() {
    let f = fixture(Config::default());
    let ino = f.create(ROOT_INO, "f");
    f.engine.write(Some(ME), ino, 0, &[1u8; 4096]).unwrap();
    // Another app changing the file closes this app's open VCT (cross-app dependency).
    let other = Caller { uid: 10002, gid: 10002, pid: 7 };
    f.engine.setattr(other, ino, &SetAttr { perm: Some(0o600), ..SetAttr::default() }).unwrap();
    assert_eq!(f.engine.stats().vcts_closed, 1);
    f.engine.write(Some(ME), ino, 0, &[2u8; 10]).unwrap(); // copies the page
    assert_eq!(f.engine.stats().cache_total_bytes, 2 * 4096, "the closed VCT's version is a second page");
    f.engine.tick(); // commits the closed VCT only
    let on_disk = f.backing("f").unwrap();
    assert!(on_disk == vec![1u8; 4096], "the committed VCT holds its own version");
    assert_eq!(&f.engine.read(ino, 0, 10).unwrap(), &[2u8; 10]);
    let waiting = f.engine.stats().cache_total_bytes;
    assert_eq!(waiting, 4096, "the old version goes once committed: the journal's op holds its data");
    f.clock.advance(Duration::from_secs_f64(Config::default().apply_backlog_seconds));
    f.engine.tick(); // the backlog is due: applied
    assert_eq!(f.backing("f").unwrap()[..10], [1u8; 10], "the apply wrote the committed version");
    assert_eq!(f.engine.stats().cache_total_bytes, 4096);
}

/// A commit is done once its commit record is durable; the transaction
/// waits in the journal, its pages pinned in the cache, until the backlog
/// reaches its byte bound or its age bound, and is then applied in place.
#[test]
fn committed_transactions_wait_in_the_journal_until_the_backlog_is_due() {
    let config = Config { mode: SyncMode::Sync, apply_backlog_bytes: 64 << 10, ..Config::default() };
    let f = fixture(config);
    let ino = f.create(ROOT_INO, "db");
    let in_place = |f: &Fixture| {
        let mut buf = vec![0; 8192];
        let n = f.backend.read_at(Path::new("db"), 0, &mut buf).unwrap_or(0);
        buf.truncate(n);
        buf
    };
    for round in 0..3u8 {
        f.engine.write(Some(ME), ino, 0, &[round + 1; 4096]).unwrap();
        f.engine.fsync(Some(ME), ino).unwrap();
        assert_eq!(f.backing("db"), Some(vec![round + 1; 4096]), "round {round}: the fsync is durable");
        assert!(in_place(&f).is_empty(), "round {round}: nothing applied in place yet");
        assert_eq!(f.engine.read(ino, 0, 4096).unwrap(), vec![round + 1; 4096], "reads see the cache");
        f.engine.check_invariants().unwrap();
    }
    assert_eq!(f.engine.stats().checkpoints, 3);
    f.clock.advance(Duration::from_secs_f64(Config::default().apply_backlog_seconds));
    f.engine.tick();
    assert_eq!(in_place(&f), vec![3; 4096], "the age bound applied the backlog, the page's last version only");
    f.engine.check_invariants().unwrap();
    // The byte bound: a commit that brings the backlog to 64 KiB makes it
    // due at once; the background thread applies it, not the app's fsync.
    f.engine.write(Some(ME), ino, 0, &[9; 70_000]).unwrap();
    f.engine.fsync(Some(ME), ino).unwrap();
    assert_eq!(in_place(&f), vec![3; 4096], "the app's commit left the apply to the background thread");
    assert_eq!(f.engine.next_tick_in(), Duration::ZERO, "the backlog is due");
    f.engine.tick();
    assert_eq!(in_place(&f), vec![9; 8192], "the byte bound applied it without waiting for the age bound");
    // Past eight times the byte bound, the committing app applies it itself: the
    // waiting ops, held in memory, stay bounded when the background thread
    // falls behind.
    // (A new file: appends to one the backing store has go in place, not into the journal.)
    let big = f.create(ROOT_INO, "big");
    f.engine.write(Some(ME), big, 0, &[10; 600_000]).unwrap();
    f.engine.fsync(Some(ME), big).unwrap();
    assert_eq!(
        f.backend.stat(Path::new("big")).map(|a| a.size).ok(),
        Some(600_000),
        "over the cap, the fsync applied the backlog"
    );
    assert_eq!(f.engine.stats().journal_waiting_transactions, 0);
    f.engine.check_invariants().unwrap();
}

/// The third bound: one segment per waiting transaction, and
/// `journal::POOL_SEGMENTS` of them. Once every one waits, the backlog is
/// due, and the background thread (not the committing app, which may be the
/// FG one) applies it, so the next commit reuses a segment instead of
/// creating one (growing the journal costs the backing file system a
/// metadata commit).
#[test]
fn the_backlog_is_applied_once_every_segment_of_the_pool_waits() {
    let f = fixture(Config { mode: SyncMode::Sync, ..Config::default() });
    let ino = f.create(ROOT_INO, "db");
    let pool = journal::POOL_SEGMENTS;
    let in_place = |f: &Fixture| f.backend.stat(Path::new("db")).map(|a| a.size).unwrap_or(0);
    for round in 0..pool {
        f.engine.write(Some(ME), ino, 0, &[round as u8 + 1; 100]).unwrap();
        f.engine.fsync(Some(ME), ino).unwrap();
        f.engine.check_invariants().unwrap();
        assert_eq!(in_place(&f), 0, "after commit {}: nothing applied by the committer", round + 1);
        assert_eq!(f.engine.next_tick_in().is_zero(), round + 1 == pool, "after commit {}", round + 1);
    }
    f.engine.tick();
    assert_eq!(in_place(&f), 100, "the background tick applied the full pool");
    let segments = |f: &Fixture| {
        let names = f.backend.list_dir(Path::new(".mcfs")).unwrap();
        names.iter().filter(|(n, _)| n.to_string_lossy().starts_with("journal")).count()
    };
    assert_eq!(segments(&f), pool);
    f.engine.write(Some(ME), ino, 0, b"next").unwrap();
    f.engine.fsync(Some(ME), ino).unwrap();
    assert_eq!(segments(&f), pool, "the next commit reused a segment");
    assert_eq!(f.backing("db").unwrap()[..4], *b"next");
}

#[test]
fn a_writer_at_its_staleness_bound_commits_before_it_goes_on() {
    let f = fixture(Config { max_stale_bytes: 64 * 1024, ..Config::default() });
    let ino = f.create(ROOT_INO, "log");
    for i in 0..64u64 {
        f.engine.write(Some(ME), ino, i * 4096, &[i as u8; 4096]).unwrap();
        let s = f.engine.stats();
        assert!(s.stale_bytes <= 64 * 1024, "after write {i}: {} bytes stale", s.stale_bytes);
    }
    assert!(f.engine.stats().checkpoints >= 3);
}

#[test]
fn a_vct_closes_at_half_the_byte_limit_so_the_writer_fills_the_other_half_while_it_commits() {
    let f = fixture(Config { max_stale_bytes: 64 * 1024, ..Config::default() });
    let ino = f.create(ROOT_INO, "log");
    let write = |i: u64| f.engine.write(Some(ME), ino, i * 4096, &[i as u8; 4096]).map(drop).unwrap();
    (0..8).for_each(write);
    assert_eq!(f.engine.next_tick_in(), Duration::ZERO, "32 KiB written: the VCT closed for the background thread");
    (8..16).for_each(write);
    assert_eq!(f.engine.stats().checkpoints, 0, "the other half fit: the writer did not commit");
    write(16);
    assert_eq!(f.engine.stats().checkpoints, 1, "past the bound the writer commits first");
    assert_eq!(f.backing("log").map(|d| d.len()), Some(16 * 4096), "both halves, before page 16");
}

#[test]
fn a_vct_that_mostly_rewrites_its_own_pages_stays_open_past_half_the_byte_limit() {
    let f = fixture(Config { max_stale_bytes: 64 * 1024, ..Config::default() });
    let ino = f.create(ROOT_INO, "state");
    // Four pages rewritten in turn (the MobiFS benchmark's pattern): 48 KiB
    // written, 16 KiB of it new, then 64 KiB, the limit.
    let round =
        |n: u8| (0..4).for_each(|page| f.engine.write(Some(ME), ino, page * 4096, &[n; 4096]).map(drop).unwrap());
    for n in 1..=3 {
        round(n);
        assert_eq!(f.engine.stats().vcts_closed, 0, "round {n}: overwrites keep the VCT open past half the limit");
    }
    round(4);
    f.engine.checkpoint().unwrap();
    let s = f.engine.stats();
    assert_eq!((s.vcts_closed, s.vcts_committed, s.checkpoints), (1, 1, 1), "one VCT, committed once");
    // Each commit's journal holds its distinct pages (16 KiB here) and a fixed overhead.
    assert!(s.journal_bytes < 16 * 4096, "the 64 KiB written were not journaled whole: {} bytes", s.journal_bytes);
    assert!(f.backing("state") == Some(vec![4u8; 4 * 4096]), "the last round's four pages");
}

#[test]
fn a_writer_at_its_staleness_bound_commits_only_its_closed_vcts_when_that_leaves_room() {
    let f = fixture(Config { max_stale_bytes: 64 * 1024, ..Config::default() });
    let ino = f.create(ROOT_INO, "log");
    f.engine.write(Some(ME), ino, 0, &[1; 32 * 1024]).unwrap(); // closes at half
    f.engine.write(Some(ME), ino, 32 * 1024, &[2; 20 * 1024]).unwrap();
    assert_eq!((f.engine.stats().vcts_closed, f.engine.stats().checkpoints), (1, 0));
    // 52 KiB stale and 16 more: past the bound, but the open VCT's 20 KiB and the write fit.
    f.engine.write(Some(ME), ino, 52 * 1024, &[3; 16 * 1024]).unwrap();
    assert_eq!(f.engine.stats().checkpoints, 1, "the writer committed first");
    assert_eq!(f.backing("log").map(|d| d.len()), Some(32 * 1024), "the closed VCT only");
    assert_eq!(f.engine.bytes_at_risk(), 36 * 1024, "the open VCT kept its 20 KiB and took the write");
}

/// A clock that moves on by a millisecond each time it is read: a commit,
/// which reads it several times, takes time on it.
struct Ticking(ManualClock);

impl Clock for Ticking {
    fn now(&self) -> std::time::SystemTime {
        self.0.advance(Duration::from_millis(1));
        self.0.now()
    }

    fn moves_by_itself(&self) -> bool {
        false
    }
}

#[test]
fn a_writer_that_commits_at_its_staleness_bound_counts_the_commit_as_stalled() {
    let config = Config { max_stale_bytes: 64 * 1024, ..Config::default() };
    let engine = Engine::start(Arc::new(MemBackend::new()), Arc::new(Ticking(ManualClock::new())), config).unwrap();
    let ino = engine.create(ME, ROOT_INO, OsStr::new("log"), 0o644, true).unwrap().ino;
    for i in 0..32u64 {
        engine.write(Some(ME), ino, i * 4096, &[i as u8; 4096]).unwrap();
    }
    let s = engine.stats();
    let stalled: f64 = s.apps.values().map(|a| a.stalled_seconds).sum();
    assert!(s.checkpoints >= 1, "the writer reached its bound");
    // Timing an empty wait reads the clock twice: one tick per commit.
    assert!(
        stalled >= 0.003 * s.checkpoints as f64,
        "{stalled} s stalled for {} commits: the commits were not timed",
        s.checkpoints
    );
}

/// FastTrack PA: while an FG app runs, a BG app's commits are long BG
/// operations that hold the journal, so a BG app may leave at most one
/// checkpoint segment uncommitted; the FG app, and any app when no FG app is
/// set or PA is off, keep their own bound.
#[test]
fn a_background_writer_commits_every_checkpoint_segment_while_a_foreground_app_runs() {
    const SEGMENT: u64 = 64 * 1024;
    let fg = Caller { uid: 10002, gid: 10002, pid: 43 };
    let most_stale = |preempt: bool, foreground: Option<u32>, writer: Caller| {
        let mut config = Config { max_stale_bytes: 1 << 30, checkpoint_segment_bytes: SEGMENT, ..Config::default() };
        config.fasttrack.preempt = preempt;
        let f = fixture(config);
        f.engine.setattr(ME, ROOT_INO, &SetAttr { perm: Some(0o777), ..SetAttr::default() }).unwrap();
        // Data is charged to the file's app: the writer's own file.
        let ino = f.engine.create(writer, ROOT_INO, OsStr::new("download"), 0o644, true).unwrap().ino;
        f.engine.set_foreground_uid(foreground);
        let mut most = 0;
        for i in 0..64u64 {
            f.engine.write(Some(writer), ino, i * 4096, &[i as u8; 4096]).unwrap();
            most = most.max(f.engine.stats().stale_bytes);
        }
        most
    };
    assert!(most_stale(true, Some(fg.uid), ME) <= SEGMENT, "a BG writer stays within one segment");
    assert_eq!(most_stale(true, Some(fg.uid), fg), 64 * 4096, "the FG writer keeps its own bound");
    assert_eq!(most_stale(true, None, ME), 64 * 4096, "no FG app: nothing to make way for");
    assert_eq!(most_stale(false, Some(fg.uid), ME), 64 * 4096, "PA off");
}

/// FastTrack PA: a background checkpoint of several apps' data while an FG
/// app runs goes in pieces of about one checkpoint segment (oldest VCTs
/// first), so an FG commit never waits for more than one piece; all of it is
/// committed in the end. Without an FG app it is one transaction.
#[test]
fn a_background_checkpoint_goes_in_segments_while_a_foreground_app_runs() {
    const SEGMENT: u64 = 64 * 1024;
    let commits_for_three_apps = |foreground: Option<u32>| {
        let config = Config {
            max_stale_bytes: 1 << 30,
            max_stale_seconds: 10.0,
            checkpoint_segment_bytes: SEGMENT,
            ..Config::default()
        };
        let f = fixture(config);
        f.engine.setattr(ME, ROOT_INO, &SetAttr { perm: Some(0o777), ..SetAttr::default() }).unwrap();
        f.engine.set_foreground_uid(foreground);
        for uid in [10011, 10012, 10013] {
            let app = Caller { uid, gid: uid, pid: uid };
            let name = format!("app{uid}");
            let ino = f.engine.create(app, ROOT_INO, OsStr::new(&name), 0o644, true).unwrap().ino;
            f.engine.write(Some(app), ino, 0, &[uid as u8; 48 * 1024]).unwrap();
        }
        f.clock.advance(Duration::from_secs(11));
        let before = f.engine.stats().checkpoints;
        f.engine.tick();
        for uid in [10011u32, 10012, 10013] {
            let data = f.backing(&format!("app{uid}")).unwrap_or_default();
            assert!(data == vec![uid as u8; 48 * 1024], "app{uid}'s data is committed whole");
        }
        f.engine.stats().checkpoints - before
    };
    assert_eq!(commits_for_three_apps(Some(10001)), 3, "48 KiB per app, 64 KiB segments: one app per commit");
    assert_eq!(commits_for_three_apps(None), 1, "no FG app: one transaction");
}

#[test]
fn open_unlinked_files_keep_their_data() {
    let f = fixture(Config::default());
    let ino = f.create(ROOT_INO, "tmp");
    f.engine.write(Some(ME), ino, 0, b"still here").unwrap();
    f.engine.checkpoint().unwrap();
    f.engine.unlink(ME, ROOT_INO, OsStr::new("tmp")).unwrap();
    f.engine.checkpoint().unwrap();
    assert_eq!(f.backing("tmp"), None);
    assert_eq!(f.engine.read(ino, 0, 100).unwrap(), b"still here");
    assert_eq!(f.engine.getattr(ino).unwrap().nlink, 0);
}

#[test]
fn rename_errors_follow_posix() {
    let f = fixture(Config::default());
    let d = f.engine.mkdir(ME, ROOT_INO, OsStr::new("d"), 0o755).unwrap().ino;
    f.create(d, "f");
    f.engine.mkdir(ME, d, OsStr::new("sub"), 0o755).unwrap();
    let r = |a: &str, b: &str, m| f.engine.rename(ME, d, OsStr::new(a), d, OsStr::new(b), m);
    assert_eq!(r("f", "sub", RenameMode::Replace), Err(Errno::EISDIR));
    assert_eq!(r("sub", "f", RenameMode::Replace), Err(Errno::ENOTDIR));
    assert_eq!(r("f", "sub", RenameMode::NoReplace), Err(Errno::EEXIST));
    assert_eq!(r("nope", "x", RenameMode::Replace), Err(Errno::ENOENT));
    assert_eq!(
        f.engine.rename(ME, ROOT_INO, OsStr::new("d"), d, OsStr::new("inner"), RenameMode::Replace),
        Err(Errno::EINVAL)
    );
    r("f", "sub", RenameMode::Exchange).unwrap();
    f.engine.checkpoint().unwrap();
    assert!(f.backend.stat(Path::new("d/f")).unwrap().kind == FileKind::Dir);
    assert!(f.backend.stat(Path::new("d/sub")).unwrap().kind == FileKind::File);
}

#[test]
fn files_born_and_gone_within_a_batch_cost_no_backing_operations() {
    let f = fixture(Config::default());
    let db = f.create(ROOT_INO, "db");
    for i in 0..50u64 {
        let j = f.create(ROOT_INO, "db-journal");
        f.engine.write(Some(ME), j, 0, &[9u8; 512]).unwrap();
        f.engine.release(j);
        f.engine.forget(j, 1);
        f.engine.write(Some(ME), db, i * 100, &[i as u8; 100]).unwrap();
        f.engine.unlink(ME, ROOT_INO, OsStr::new("db-journal")).unwrap();
    }
    f.engine.checkpoint().unwrap();
    let s = f.engine.stats();
    // Besides the zeros a new journal segment is prepared with, once.
    let limit = 5000 + 4096 * 3 + journal::SEGMENT_READY_BYTES;
    assert!(s.journal_bytes < limit, "journal got {} bytes for 5000 bytes of db data", s.journal_bytes);
    assert_eq!(f.backing("db-journal"), None);
    assert_eq!(f.backing("db").map(|d| d.len()), Some(5000));
}

#[test]
fn hard_links_in_the_backing_store_are_one_inode() {
    let f = fixture(Config::default());
    let a = f.create(ROOT_INO, "a");
    f.engine.write(Some(ME), a, 0, b"shared").unwrap();
    let d = f.engine.mkdir(ME, ROOT_INO, OsStr::new("d"), 0o755).unwrap().ino;
    f.engine.link(ME, a, d, OsStr::new("b")).unwrap();
    let f = f.restart(Config::default());
    let a = f.engine.lookup(ME, ROOT_INO, OsStr::new("a")).unwrap();
    let d = f.engine.lookup(ME, ROOT_INO, OsStr::new("d")).unwrap();
    let b = f.engine.lookup(ME, d.ino, OsStr::new("b")).unwrap();
    assert_eq!(a.ino, b.ino);
    assert_eq!(a.nlink, 2);
    f.engine.write(Some(ME), a.ino, 0, b"SHARED").unwrap();
    assert_eq!(f.engine.read(b.ino, 0, 6).unwrap(), b"SHARED");
}

#[test]
fn close_on_fsync_makes_every_fsync_a_vct_boundary() {
    let f = fixture(Config { transaction_policy: "close-on-fsync".into(), ..Config::default() });
    let ino = f.create(ROOT_INO, "db");
    f.engine.write(Some(ME), ino, 0, b"one").unwrap();
    f.engine.fsync(Some(ME), ino).unwrap();
    assert_eq!(f.engine.stats().vcts_closed, 1);
    f.engine.fsync(Some(ME), ino).unwrap();
    assert_eq!(f.engine.stats().vcts_closed, 1, "an fsync with nothing new closes nothing");
    assert_eq!(f.backing("db"), None, "closing is not committing: fsync stays asynchronous");
}

#[test]
fn one_apps_deadline_commits_only_that_app() {
    let f = fixture(Config { max_stale_seconds: 10.0, ..Config::default() });
    let other = Caller { uid: 10002, gid: 10002, pid: 7 };
    let a = f.create(ROOT_INO, "a");
    f.engine.write(Some(ME), a, 0, b"early").unwrap();
    f.clock.advance(Duration::from_secs(5));
    let b = f.engine.create(other, ROOT_INO, OsStr::new("b"), 0o644, true).unwrap().ino;
    f.engine.write(Some(other), b, 0, b"later").unwrap();
    f.clock.advance(Duration::from_secs(5));
    f.engine.tick();
    assert_eq!(f.backing("a").as_deref(), Some(&b"early"[..]));
    assert_eq!(f.backing("b"), None, "the other app's VCT is only 5 s old");
    assert_eq!(f.engine.next_tick_in(), Duration::from_secs(5));
}

#[test]
fn names_with_a_slash_or_nul_are_refused_and_sizes_past_off_t_too() {
    let f = fixture(Config::default());
    for bad in ["a/b", "nul\0"] {
        assert_eq!(f.engine.create(ME, ROOT_INO, OsStr::new(bad), 0o644, true).map(|a| a.ino), Err(Errno::EINVAL));
    }
    let ino = f.create(ROOT_INO, "f");
    assert_eq!(f.engine.write(Some(ME), ino, i64::MAX as u64, b"x"), Err(Errno::EFBIG));
    let huge = SetAttr { size: Some(u64::MAX), ..SetAttr::default() };
    assert_eq!(f.engine.setattr(ME, ino, &huge).map(|a| a.size), Err(Errno::EFBIG));
}

/// Byte `o` of a file is `o mod 251`: the known content of the store below
/// (the simulator's replays write it, `mcfs_sim::pattern`).
fn ramp_fill(offset: u64, buf: &mut [u8]) {
    buf.iter_mut().zip(offset..).for_each(|(b, o)| *b = (o % 251) as u8);
}

fn ramp_matches(offset: u64, data: &[u8]) -> bool {
    data.iter().zip(offset..).all(|(b, o)| *b == (o % 251) as u8)
}

/// Over a store that recreates the ramp (and keeps no journal payload, as
/// the simulator's data-less one), the cache holds pages of the ramp
/// without their bytes (`Page::Known` in `cache/tier.rs`): whatever is written over
/// them, cut off, zeroed or appended to, every byte reads back as written, from the
/// cache and from the store after the checkpoint.
#[test]
fn over_a_store_of_known_content_every_byte_reads_back_as_written() {
    let known = mcfs_core::backend::KnownContent { fill: ramp_fill, matches: ramp_matches };
    let backend = Arc::new(MemBackend::with_known_content(known).without_journal_payloads());
    let engine = Engine::start(backend.clone(), Arc::new(ManualClock::new()), Config::default()).expect("starts");
    let ino = engine.create(ME, ROOT_INO, OsStr::new("f"), 0o644, true).expect("create").ino;
    let mut want = vec![0; 5 * 4096];
    ramp_fill(0, &mut want);
    engine.write(Some(ME), ino, 0, &want).unwrap();
    engine.write(Some(ME), ino, 5000, b"xyz").unwrap(); // other bytes into a page of the ramp
    want[5000..5003].copy_from_slice(b"xyz");
    engine.write(Some(ME), ino, 8192, &want[8192..12288]).unwrap(); // the ramp over itself
    engine.setattr(ME, ino, &SetAttr { size: Some(4 * 4096 + 100), ..SetAttr::default() }).unwrap();
    want.truncate(4 * 4096 + 100);
    engine.setattr(ME, ino, &SetAttr { size: Some(5 * 4096), ..SetAttr::default() }).unwrap();
    want.resize(5 * 4096, 0); // the cut-off part reads as zeros
    for (at, len) in [(5 * 4096, 100), (5 * 4096 + 100, 50), (5 * 4096 + 300, 20)] {
        // Appends, the last after a hole.
        let mut appended = vec![0; len];
        ramp_fill(at, &mut appended);
        engine.write(Some(ME), ino, at, &appended).unwrap();
        want.resize(at as usize, 0);
        want.extend_from_slice(&appended);
    }
    assert_eq!(engine.read(ino, 0, 6 * 4096).unwrap(), want, "from the cache");
    engine.checkpoint().unwrap();
    assert_eq!(engine.read(ino, 0, 6 * 4096).unwrap(), want, "from the cache, after the checkpoint");
    let mut stored = vec![0xee; 6 * 4096];
    let n = backend.read_at(Path::new("f"), 0, &mut stored).expect("f is stored");
    assert_eq!(&stored[..n], &want[..], "from the store");
}
