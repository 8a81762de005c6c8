//! Checkpoints under an idle predictor (MobiFS §5.3–5.4) through the engine's
//! public API, over an in-memory backing store and a manual clock: closed
//! VCTs wait for predicted idle time, the scheduler picks what fits, and the
//! staleness limit, sync mode and cross-app dependencies override it.

use mcfs_core::*;
use std::ffi::OsStr;
use std::sync::Arc;
use std::time::Duration;

const A: Caller = Caller { uid: 10001, gid: 10001, pid: 1 };
const B: Caller = Caller { uid: 10002, gid: 10002, pid: 2 };

struct Fixture {
    clock: Arc<ManualClock>,
    engine: Engine,
}

/// LMM predictor, VCTs closed by every fsync, and a write rate of 1 MiB/s
/// so flush times are easy to reason about.
fn fixture() -> Fixture {
    let config = Config {
        idle_predictor: "last-min".into(),
        transaction_policy: "close-on-fsync".into(),
        checkpoint_write_rate: 1024.0 * 1024.0,
        max_stale_seconds: 60.0,
        ..Config::default()
    };
    let clock = Arc::new(ManualClock::new());
    let engine = Engine::start(Arc::new(MemBackend::new()), clock.clone(), config).expect("engine starts");
    Fixture { clock, engine }
}

impl Fixture {
    /// A file in the app's own directory, committed (the directory is made
    /// and committed first, so that the app does not depend on another
    /// through a shared parent). Each app has two VCTs committed after it.
    fn file(&self, who: Caller, name: &str) -> Ino {
        let dir = format!("dir{}", who.uid);
        let dir = match self.engine.lookup(who, ROOT_INO, OsStr::new(&dir)) {
            Ok(attr) => attr.ino,
            Err(_) => {
                let ino = self.engine.mkdir(who, ROOT_INO, OsStr::new(&dir), 0o755).expect("mkdir").ino;
                self.engine.checkpoint().expect("checkpoint");
                ino
            }
        };
        let ino = self.engine.create(who, dir, OsStr::new(name), 0o644, false).expect("create").ino;
        self.engine.checkpoint().expect("checkpoint");
        ino
    }

    fn dir_of(&self, who: Caller) -> Ino {
        self.engine.lookup(who, ROOT_INO, OsStr::new(&format!("dir{}", who.uid))).expect("app dir").ino
    }

    /// Writes `kib` KiB into `ino` and fsyncs: one closed VCT of its app.
    fn closed_vct(&self, who: Caller, ino: Ino, kib: usize) {
        self.engine.write(Some(who), ino, 0, &vec![7; kib * 1024]).unwrap();
        self.engine.fsync(Some(who), ino).unwrap();
    }

    fn wait(&self, ms: u64) {
        self.clock.advance(Duration::from_millis(ms));
    }

    /// Inputs 1 s apart (LMM then predicts 1 s windows), ending now.
    fn user_taps(&self, n: usize) {
        for _ in 0..n {
            self.wait(1000);
            self.engine.user_input();
        }
    }

    /// VCTs of the app committed since it made its file.
    fn committed(&self, who: Caller) -> u64 {
        let s = self.engine.stats();
        s.apps.get(&format!("uid:{}", who.uid)).map_or(0, |a| a.vcts_committed) - 2
    }
}

#[test]
fn closed_vcts_wait_for_a_predicted_idle_window() {
    let f = fixture();
    let ino = f.file(A, "a");
    f.closed_vct(A, ino, 4);
    f.engine.tick();
    assert_eq!(f.committed(A), 0, "no input seen: no idle window predicted");
    assert_eq!(f.engine.next_tick_in(), Duration::from_millis(100), "polls the predictor while VCTs wait");
    f.user_taps(3);
    f.engine.tick();
    assert_eq!(f.committed(A), 1, "the window after the taps is used");
    let idle = f.engine.stats().idle.expect("a predictor is configured");
    assert_eq!(idle.predictions, 1);
    f.wait(500);
    f.engine.user_input();
    assert_eq!(f.engine.stats().idle.unwrap().conflicts, 1, "a tap inside the 1 s window is a responsive conflict");
}

#[test]
fn the_staleness_limit_overrides_waiting() {
    let f = fixture();
    let ino = f.file(A, "a");
    f.closed_vct(A, ino, 4);
    f.wait(59_000);
    f.engine.tick();
    assert_eq!(f.committed(A), 0);
    f.wait(1_000);
    f.engine.tick();
    assert_eq!(f.committed(A), 1, "60 s old: committed without an idle window");
}

#[test]
fn the_scheduler_commits_what_fits_and_ages_the_rest() {
    let f = fixture();
    let (a, b) = (f.file(A, "a"), f.file(B, "b"));
    f.closed_vct(A, a, 2048); // 2 s at 1 MiB/s: longer than the 1 s window
    f.closed_vct(B, b, 100); // ~0.1 s: fits
    f.user_taps(3);
    f.engine.tick();
    assert_eq!((f.committed(A), f.committed(B)), (0, 1), "B's VCT fits the window, A's does not");
    // Next window: A has aged into a higher queue; nothing else waits, so
    // rule 2's fallback commits it even though it does not fit.
    f.user_taps(2);
    f.engine.tick();
    assert_eq!(f.committed(A), 1);
}

#[test]
fn a_dependency_on_another_apps_waiting_vct_is_committed_first() {
    let f = fixture();
    let (a, b) = (f.file(A, "a"), f.file(B, "b"));
    f.closed_vct(A, a, 2048); // does not fit a 1 s window
                              // B renames A's file: B's VCT depends on A's (A's open VCT had no entry
                              // left, so the dependency is on the closed one).
    let dir = f.dir_of(A);
    f.engine.rename(B, dir, OsStr::new("a"), dir, OsStr::new("renamed"), RenameMode::Replace).unwrap();
    f.closed_vct(B, b, 4);
    f.user_taps(3);
    f.engine.tick();
    assert_eq!((f.committed(A), f.committed(B)), (1, 1), "B's fitting VCT takes A's along");
}

#[test]
fn without_a_predictor_everything_commits_at_once() {
    let config = Config { transaction_policy: "close-on-fsync".into(), ..Config::default() };
    let clock = Arc::new(ManualClock::new());
    let engine = Engine::start(Arc::new(MemBackend::new()), clock, config).unwrap();
    let ino = engine.create(A, ROOT_INO, OsStr::new("a"), 0o644, false).unwrap().ino;
    engine.write(Some(A), ino, 0, b"x").unwrap();
    engine.fsync(Some(A), ino).unwrap();
    assert_eq!(engine.next_tick_in(), Duration::ZERO);
    engine.tick();
    assert_eq!(engine.stats().vcts_committed, 1);
    assert!(engine.stats().idle.is_none());
}
