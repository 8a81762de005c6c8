//! A `write(2)` the kernel split into several requests is never torn by a
//! VCT boundary (issue 10, item 5): whatever closes the VCT between its
//! pieces — the staleness policy's clock, another app touching the app's
//! data, the app's own staleness bound, a sync-mode fsync on another thread
//! — the backing store gets both pieces or neither. Manual clock, memory
//! backing store; the backing store is read at the points a crash could hit.

use mcfs_core::*;
use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Two threads of one app, and another app.
const WRITER: Caller = Caller { uid: 10001, gid: 10001, pid: 101 };
const SIBLING: Caller = Caller { uid: 10001, gid: 10001, pid: 102 };
const OTHER_APP: Caller = Caller { uid: 10002, gid: 10002, pid: 201 };

/// The kernel's pieces of `pwrite(fd, 100 bytes, 4050)` on a page it does not hold.
const FIRST: (u64, usize) = (4050, 46);
const REST: (u64, usize) = (4096, 54);

struct Fixture {
    backend: Arc<MemBackend>,
    clock: Arc<ManualClock>,
    engine: Arc<Engine>,
}

fn fixture(toml: &str) -> Fixture {
    let backend = Arc::new(MemBackend::new());
    let clock = Arc::new(ManualClock::new());
    let config = Config::from_toml(toml).expect("config");
    let engine = Arc::new(Engine::start(backend.clone(), clock.clone(), config).expect("engine starts"));
    Fixture { backend, clock, engine }
}

impl Fixture {
    /// `shared/` (mode 777) with the writer's file `shared/log` in it, committed.
    fn with_log(&self) -> Ino {
        let dir = self.engine.mkdir(WRITER, ROOT_INO, OsStr::new("shared"), 0o777).expect("mkdir").ino;
        let log = self.engine.create(WRITER, dir, OsStr::new("log"), 0o666, true).expect("create").ino;
        self.engine.checkpoint().expect("checkpoint");
        log
    }

    fn piece(&self, who: Caller, ino: Ino, (offset, len): (u64, usize), piece: Piece) {
        self.engine.write_piece(Some(who), ino, offset, &vec![b'w'; len], piece).expect("write");
    }

    /// The bytes of the split write the backing store holds durably (what
    /// a crash now would leave, recovered): 0, or all 100.
    fn durable_bytes_of_the_write(&self) -> usize {
        let mut buf = vec![0; 8192];
        let durable = mcfs_core::journal::recovered_copy(&self.backend).expect("recover a copy");
        let n = durable.read_at(Path::new("shared/log"), 0, &mut buf).expect("read backing");
        buf[..n].iter().filter(|b| **b == b'w').count()
    }

    /// An earlier write of the app (elsewhere in the file) becomes as old
    /// as the policy allows, so the next `tick` closes the app's VCT.
    fn age_the_open_vct(&self, log: Ino) {
        self.engine.write(Some(WRITER), log, 6000, b"earlier").expect("write");
        self.clock.advance(Duration::from_secs(120));
    }
}

#[test]
fn a_vct_closed_by_the_clock_between_the_pieces_commits_both() {
    let f = fixture("");
    let log = f.with_log();
    f.age_the_open_vct(log);
    f.piece(WRITER, log, FIRST, Piece::MayContinue);
    f.engine.tick();
    assert_eq!(f.durable_bytes_of_the_write(), 0, "the closed VCT waits for the rest of the write");
    f.piece(WRITER, log, REST, Piece::Last);
    assert_eq!(f.durable_bytes_of_the_write(), 0);
    f.engine.tick();
    assert_eq!(f.durable_bytes_of_the_write(), 100, "the VCT commits once the write is whole");
    assert_eq!(f.engine.stats().apps["uid:10001"].vcts_committed, 2, "mkdir+create, then the write in one VCT");
}

#[test]
fn another_app_touching_the_apps_data_between_the_pieces_waits_for_the_rest() {
    // Each app's VCT closes at its fsync: the other app's closes at once.
    let f = fixture("transaction_policy = \"close-on-fsync\"");
    let log = f.with_log();
    let dir = f.engine.lookup(WRITER, ROOT_INO, OsStr::new("shared")).expect("lookup").ino;
    f.engine.create(WRITER, dir, OsStr::new("new"), 0o644, true).expect("the writer's own create");
    f.piece(WRITER, log, FIRST, Piece::MayContinue);
    // A create in the directory the writer's open VCT changed closes that VCT.
    let theirs = f.engine.create(OTHER_APP, dir, OsStr::new("theirs"), 0o644, true).expect("create").ino;
    f.engine.fsync(Some(OTHER_APP), theirs).expect("fsync");
    f.engine.tick();
    let durable = |f: &Fixture| mcfs_core::journal::recovered_copy(&f.backend).expect("recover a copy");
    assert_eq!(f.durable_bytes_of_the_write(), 0);
    assert!(durable(&f).stat(Path::new("shared/theirs")).is_err(), "the other app's VCT needs the writer's first");
    f.piece(WRITER, log, REST, Piece::Last);
    f.engine.tick();
    assert_eq!(f.durable_bytes_of_the_write(), 100);
    assert!(durable(&f).stat(Path::new("shared/theirs")).is_ok());
}

#[test]
fn the_rest_of_a_write_does_not_wait_for_the_apps_staleness_bound() {
    let f = fixture("max_stale_bytes = 4096");
    let log = f.with_log();
    f.piece(WRITER, log, (0, 4000), Piece::Last);
    f.piece(WRITER, log, FIRST, Piece::MayContinue);
    // 4046 bytes are stale: the rest would take the app past 4096, but
    // committing before it would tear the write.
    f.piece(WRITER, log, REST, Piece::Last);
    assert_eq!(f.durable_bytes_of_the_write(), 0);
    f.piece(WRITER, log, (8192, 1), Piece::Last);
    // Its open VCT (the split write) and the next write fit under the bound.
    assert_eq!(f.durable_bytes_of_the_write(), 4000, "the next write commits the closed VCT first, not the open one");
    f.engine.checkpoint().expect("checkpoint");
    assert_eq!(f.durable_bytes_of_the_write(), 4100, "the split write commits whole");
}

#[test]
fn a_sync_fsync_on_another_thread_waits_for_the_rest_of_the_write() {
    let f = fixture("mode = \"sync\"");
    let log = f.with_log();
    f.piece(WRITER, log, FIRST, Piece::MayContinue);
    let engine = f.engine.clone();
    let fsync = std::thread::spawn(move || engine.sync_app(Some(SIBLING)));
    std::thread::sleep(Duration::from_millis(50));
    assert!(!fsync.is_finished(), "the clock does not move: only the rest of the write lets the fsync go");
    f.piece(WRITER, log, REST, Piece::Last);
    fsync.join().expect("fsync thread").expect("fsync");
    assert_eq!(f.durable_bytes_of_the_write(), 100, "durable as a whole, in the commit the fsync waited for");
}

#[test]
fn the_writers_own_fsync_ends_its_write_and_does_not_wait() {
    let f = fixture("mode = \"sync\"");
    let log = f.with_log();
    // A whole write(2) that happens to end like a first piece.
    f.piece(WRITER, log, FIRST, Piece::MayContinue);
    f.engine.fsync(Some(WRITER), log).expect("fsync returns at once");
    assert_eq!(f.durable_bytes_of_the_write(), 46);
}

#[test]
fn a_rest_that_never_comes_is_given_up_after_the_wait() {
    let f = fixture("");
    let log = f.with_log();
    f.age_the_open_vct(log);
    f.piece(WRITER, log, FIRST, Piece::MayContinue);
    f.engine.tick();
    assert_eq!(f.durable_bytes_of_the_write(), 0);
    assert_eq!(f.engine.next_tick_in(), Duration::from_secs(1), "the background thread looks again when the wait ends");
    f.clock.advance(Duration::from_secs(1));
    f.engine.tick();
    assert_eq!(f.durable_bytes_of_the_write(), 46, "a write(2) of exactly that shape, or a rest too late");
}

#[test]
fn a_rest_over_pages_the_closed_vct_holds_commits_its_newest_bytes() {
    let f = fixture("");
    let log = f.with_log();
    // Page 1 (the write at 6000) and page 2 are in the VCT before the split write.
    f.engine.write(Some(WRITER), log, 9000, b"older").expect("write");
    f.age_the_open_vct(log);
    f.piece(WRITER, log, FIRST, Piece::MayContinue);
    f.engine.tick();
    // The rest covers pages 1-3: two the closed VCT holds, one it does not.
    f.piece(WRITER, log, (4096, 3 * 4096), Piece::Last);
    f.engine.tick();
    let durable = mcfs_core::journal::recovered_copy(&f.backend).expect("recover a copy");
    let mut buf = vec![0; 20000];
    let n = durable.read_at(Path::new("shared/log"), 0, &mut buf).expect("read backing");
    assert_eq!(n, 4 * 4096, "the rest's new page is in");
    assert!(buf[4050..n].iter().all(|b| *b == b'w'), "every page holds the rest's bytes, none an older version");
    assert!(buf[..4050].iter().all(|b| *b == 0));
}
