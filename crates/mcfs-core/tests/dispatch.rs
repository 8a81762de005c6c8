//! Foreground-first dispatch (FastTrack §4.2, §4.4) on a manual clock: a
//! background (BG) request never overtakes a foreground (FG) request in
//! flight except through the aging bound, system requests never wait, and
//! BG work preempted at a segment boundary resumes exactly where it stopped.
//!
//! Threads stand for concurrent requests. Where a test shows that a BG
//! thread has *not* gone ahead, it gives the thread real time to misbehave
//! and checks the order of events, never a duration.

use mcfs_core::backend::{Op, RecordingBackend};
use mcfs_core::dispatch::{Dispatcher, IoPriorities, Step, Switches};
use mcfs_core::*;
use std::ffi::OsStr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

const FG: Caller = Caller { uid: 10001, gid: 10001, pid: 1 };
const BG: Caller = Caller { uid: 10002, gid: 10002, pid: 2 };
const AGING: Duration = Duration::from_millis(500);
/// Real time a blocked thread gets to show that it does not go ahead.
const GRACE: Duration = Duration::from_millis(50);

fn dispatcher(clock: &Arc<ManualClock>) -> Dispatcher {
    let switches = Switches { preempt_requests: true, hold_checkpoints: true };
    Dispatcher::new(clock.clone(), AGING, switches)
}

/// Waits (bounded) until `done` holds; panics naming `what` otherwise.
fn eventually(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn a_bg_request_waits_until_the_fg_request_in_flight_ends() {
    let clock = Arc::new(ManualClock::new());
    let d = dispatcher(&clock);
    let log = Mutex::new(Vec::new());
    thread::scope(|s| {
        let fg = d.admit(IoClass::Foreground, FG.uid);
        let bg = s.spawn(|| {
            let _a = d.admit(IoClass::Background, BG.uid);
            log.lock().unwrap().push("bg admitted");
        });
        thread::sleep(GRACE);
        log.lock().unwrap().push("fg done");
        drop(fg);
        bg.join().unwrap();
    });
    assert_eq!(*log.lock().unwrap(), ["fg done", "bg admitted"]);
    let stats = d.stats();
    assert_eq!((stats.fg_requests, stats.bg_requests, stats.bg_waits, stats.bg_aged), (1, 1, 1, 0));
}

#[test]
fn the_aging_bound_lets_a_bg_request_through_while_fg_work_goes_on() {
    let clock = Arc::new(ManualClock::new());
    let d = dispatcher(&clock);
    let admitted = AtomicBool::new(false);
    thread::scope(|s| {
        let _fg = d.admit(IoClass::Foreground, FG.uid);
        s.spawn(|| {
            let _a = d.admit(IoClass::Background, BG.uid);
            admitted.store(true, Ordering::SeqCst);
        });
        eventually("the BG request to start waiting", || d.stats().bg_waits == 1);
        clock.advance(AGING - Duration::from_millis(1));
        thread::sleep(GRACE);
        assert!(!admitted.load(Ordering::SeqCst), "admitted before the aging bound");
        clock.advance(Duration::from_millis(1));
        eventually("the aged BG request to be admitted", || admitted.load(Ordering::SeqCst));
    });
    let stats = d.stats();
    assert_eq!(stats.bg_aged, 1);
    assert_eq!(stats.bg_wait_ns, AGING.as_nanos() as u64);
}

#[test]
fn system_requests_neither_wait_nor_hold_anyone_back() {
    let clock = Arc::new(ManualClock::new());
    let d = dispatcher(&clock);
    let fg = d.admit(IoClass::Foreground, FG.uid);
    // Same thread: if this waited for the FG request, the test would hang.
    let sys = d.admit(IoClass::System, 0);
    drop(sys);
    drop(fg);
    let sys = d.admit(IoClass::System, 0);
    let bg = d.admit(IoClass::Background, BG.uid);
    drop((bg, sys));
    assert_eq!(d.stats().bg_waits, 0);
}

#[test]
fn an_fg_request_waiting_for_the_journal_does_not_hold_back_the_bg_commit_holding_it() {
    let clock = Arc::new(ManualClock::new());
    let d = dispatcher(&clock);
    let _fg = d.admit(IoClass::Foreground, FG.uid);
    assert_eq!(d.fg_in_flight(), 1);
    let inside = d.take_journal(|| d.fg_in_flight());
    assert_eq!(*inside, 0, "while it waits for the journal, the FG request is not in flight");
    assert_eq!(d.fg_in_flight(), 1);
}

/// A writer short of memory waits for the commit in progress without taking the journal.
#[test]
fn an_fg_request_waiting_for_the_commit_in_progress_neither_holds_it_back_nor_makes_it_give_way() {
    let clock = Arc::new(ManualClock::new());
    let d = dispatcher(&clock);
    let _fg = d.admit(IoClass::Foreground, FG.uid);
    let mut meanwhile = None;
    // The holder's step, as it would run while the FG request waits.
    d.wait_for_journal(|| meanwhile = Some((d.fg_in_flight(), d.background_work(|| d.commit_step(None)))));
    assert_eq!(meanwhile, Some((0, Step::GoOn)), "not in flight while waiting, and the commit goes on");
    assert_eq!(d.fg_in_flight(), 1, "in flight again after the wait");
    assert_eq!(d.stats().commits_given_way, 0);
}

#[test]
fn an_fg_request_takes_the_journal_before_waiting_bg_commits() {
    let clock = Arc::new(ManualClock::new());
    let d = dispatcher(&clock);
    let journal = Mutex::new(());
    let log = Mutex::new(Vec::new());
    let fg_admitted = AtomicBool::new(false);
    let held = journal.lock().unwrap(); // a BG commit in progress
    thread::scope(|s| {
        let fg = s.spawn(|| {
            let _a = d.admit(IoClass::Foreground, FG.uid);
            fg_admitted.store(true, Ordering::SeqCst);
            let _j = d.take_journal(|| journal.lock().unwrap());
            log.lock().unwrap().push("fg commits");
        });
        eventually("the FG request to wait for the journal", || {
            fg_admitted.load(Ordering::SeqCst) && d.fg_in_flight() == 0
        });
        let bg = s.spawn(|| {
            d.background_work(|| {
                let _j = d.take_journal(|| journal.lock().unwrap());
                log.lock().unwrap().push("bg commits");
            })
        });
        eventually("the BG commit to yield", || d.stats().journal_yields == 1);
        drop(held);
        fg.join().unwrap();
        bg.join().unwrap();
    });
    assert_eq!(*log.lock().unwrap(), ["fg commits", "bg commits"]);
    assert_eq!(d.stats().bg_aged, 0);
}

#[test]
fn switched_off_preemption_lets_bg_requests_straight_in() {
    let clock = Arc::new(ManualClock::new());
    let off = Switches { preempt_requests: false, hold_checkpoints: false };
    let d = Dispatcher::new(clock, AGING, off);
    let _fg = d.admit(IoClass::Foreground, FG.uid);
    let _bg = d.admit(IoClass::Background, BG.uid); // would hang the test if it waited
    assert_eq!(d.stats().bg_waits, 0);
}

fn engine(config: Config) -> (Arc<ManualClock>, Arc<Engine>) {
    let clock = Arc::new(ManualClock::new());
    let engine = Engine::start(Arc::new(MemBackend::new()), clock.clone(), config).expect("engine starts");
    (clock, Arc::new(engine))
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

#[test]
fn a_preempted_bg_write_resumes_where_it_stopped_and_loses_nothing() {
    let segment = 64 * 1024;
    let mut config = Config::default();
    config.fasttrack.segment_bytes = segment as u64;
    let (_clock, engine) = engine(config);
    engine.set_foreground(Some("uid:10001")).unwrap();
    let ino = engine.create(BG, ROOT_INO, OsStr::new("big"), 0o644, false).unwrap().ino;
    let data = pattern(16 * segment + 100);
    let bg_admitted = Barrier::new(2);
    let fg_admitted = Barrier::new(2);
    thread::scope(|s| {
        s.spawn(|| {
            let _a = engine.admit(BG);
            bg_admitted.wait();
            fg_admitted.wait();
            engine.write(Some(BG), ino, 0, &data).unwrap();
        });
        bg_admitted.wait();
        let fg = engine.admit(FG);
        fg_admitted.wait();
        eventually("the BG write to yield", || engine.dispatch_stats().bg_waits == 1);
        thread::sleep(GRACE);
        assert_eq!(engine.getattr(ino).unwrap().size, segment as u64, "stopped after its first segment");
        drop(fg);
    });
    assert_eq!(engine.getattr(ino).unwrap().size, data.len() as u64);
    assert_eq!(engine.read(ino, 0, data.len() as u32).unwrap(), data);
    engine.checkpoint().unwrap();
    assert_eq!(engine.read(ino, 0, data.len() as u32).unwrap(), data, "and it commits whole");
}

#[test]
fn a_background_checkpoint_waits_while_fg_requests_are_in_flight() {
    let config =
        Config { transaction_policy: "close-on-fsync".into(), checkpoint_segment_bytes: 4096, ..Config::default() };
    let (_clock, engine) = engine(config);
    engine.set_foreground(Some("uid:10001")).unwrap();
    let ino = engine.create(BG, ROOT_INO, OsStr::new("f"), 0o644, false).unwrap().ino;
    let data = pattern(256 * 1024);
    engine.write(Some(BG), ino, 0, &data).unwrap();
    engine.fsync(Some(BG), ino).unwrap();
    let fg = engine.admit(FG);
    let before = engine.stats().checkpoints;
    thread::scope(|s| {
        let tick = s.spawn(|| engine.tick());
        // It holds back before taking the journal (or, had it taken it already, at an apply segment).
        let held = || engine.dispatch_stats().journal_yields + engine.dispatch_stats().checkpoint_holds;
        eventually("the checkpoint to hold", || held() >= 1);
        thread::sleep(GRACE);
        assert!(!tick.is_finished(), "the checkpoint finished while FG work was in flight");
        drop(fg);
        tick.join().unwrap();
    });
    assert_eq!(engine.stats().checkpoints, before + 1);
    assert_eq!(engine.read(ino, 0, data.len() as u32).unwrap(), data);
}

/// What the dispatcher asked of threads' I/O priorities.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PrioritySet {
    /// The calling thread set its own.
    Own(IoClass),
    /// The thread of this id was raised to FG.
    Raised(u32),
}

/// The thread id every thread claims: only the BG commit's thread is ever raised in these tests.
const BG_THREAD: u32 = 7;

struct RecordedPriorities(Arc<Mutex<Vec<PrioritySet>>>);

impl IoPriorities for RecordedPriorities {
    fn set_own(&self, class: IoClass) {
        self.0.lock().unwrap().push(PrioritySet::Own(class));
    }
    fn own_thread(&self) -> u32 {
        BG_THREAD
    }
    fn raise_thread(&self, tid: u32) {
        self.0.lock().unwrap().push(PrioritySet::Raised(tid));
    }
}

/// A BG commit takes the journal and runs `alone`; once an FG request (admitted after that) waits
/// for the journal it runs `with_fg_waiting`, lets the journal go and ends; then the FG request
/// has the journal. Returns every I/O priority the dispatcher set, and those set before
/// `with_fg_waiting` ran.
fn bg_commit_with_an_fg_request_arriving(
    d: &Dispatcher,
    alone: impl FnOnce() + Send,
    with_fg_waiting: impl FnOnce() + Send,
) -> (Vec<PrioritySet>, Vec<PrioritySet>) {
    let set = Arc::new(Mutex::new(Vec::new()));
    d.set_io_priorities(Box::new(RecordedPriorities(set.clone())));
    let journal = Mutex::new(());
    let fg_admitted = AtomicBool::new(false);
    let bg_holds_journal = Barrier::new(2);
    let alone_done = Barrier::new(2);
    let mut set_before_fg_waited = Vec::new();
    thread::scope(|s| {
        let bg = s.spawn(|| {
            d.background_work(|| {
                let held = d.take_journal(|| journal.lock().unwrap());
                bg_holds_journal.wait();
                alone();
                alone_done.wait();
                eventually("the FG request to wait for the journal", || d.stats().fg_at_journal == 1);
                let before = set.lock().unwrap().clone();
                with_fg_waiting();
                drop(held);
                before
            })
        });
        bg_holds_journal.wait();
        alone_done.wait();
        let _a = d.admit(IoClass::Foreground, FG.uid);
        fg_admitted.store(true, Ordering::SeqCst);
        let _j = d.take_journal(|| journal.lock().unwrap());
        set_before_fg_waited = bg.join().unwrap();
    });
    assert!(fg_admitted.load(Ordering::SeqCst));
    let set = set.lock().unwrap().clone();
    (set, set_before_fg_waited)
}

#[test]
fn a_bg_commit_holding_the_journal_is_raised_as_soon_as_an_fg_request_waits_and_restored_as_it_lets_go() {
    let clock = Arc::new(ManualClock::new());
    let d = dispatcher(&clock);
    let set = bg_commit_with_an_fg_request_arriving(
        &d,
        || d.checkpoint_segment_boundary(),
        || {
            d.checkpoint_segment_boundary();
            d.checkpoint_segment_boundary();
        },
    );
    let (set, before) = set;
    let raised_then_restored = [PrioritySet::Raised(BG_THREAD), PrioritySet::Own(IoClass::Background)];
    assert_eq!(set, raised_then_restored, "nobody waits at first; raised once, then restored as it lets go");
    assert_eq!(before, raised_then_restored[..1], "raised as soon as the FG request waited");
    assert_eq!(d.stats().commits_boosted, 1);
}

#[test]
fn a_bg_commit_writing_its_journal_gives_way_to_an_fg_request_until_the_aging_bound() {
    let clock = Arc::new(ManualClock::new());
    let d = dispatcher(&clock);
    let steps = Mutex::new(Vec::new());
    let boosted_when_giving_way = Mutex::new(0);
    let set = bg_commit_with_an_fg_request_arriving(
        &d,
        || steps.lock().unwrap().push(d.commit_step(None)),
        || {
            steps.lock().unwrap().push(d.commit_step(None));
            *boosted_when_giving_way.lock().unwrap() = d.stats().commits_boosted;
            let gave_way_at = clock.now();
            clock.advance(AGING - Duration::from_millis(1));
            steps.lock().unwrap().push(d.commit_step(Some(gave_way_at)));
            clock.advance(Duration::from_millis(1));
            steps.lock().unwrap().push(d.commit_step(Some(gave_way_at)));
        },
    );
    let steps = steps.into_inner().unwrap();
    assert_eq!(steps[0], Step::GoOn, "nobody waits yet");
    assert_eq!(steps[1], Step::GiveWay, "a young BG commit gives way to the waiting FG request");
    assert_eq!(steps[2], Step::GiveWay, "and again, within the aging bound of its first giving way");
    assert_eq!(steps[3], Step::GoOn, "past the bound it goes on");
    let stats = d.stats();
    assert_eq!(stats.commits_given_way, 2);
    // The FG request also waits for the abort that giving way means, so that runs raised too.
    assert_eq!(*boosted_when_giving_way.lock().unwrap(), 1, "raised as it gives way");
    let (set, _) = set;
    assert_eq!(set, [PrioritySet::Raised(BG_THREAD), PrioritySet::Own(IoClass::Background)], "raised once, restored");
    assert_eq!(stats.commits_boosted, 1);
}

/// The journal lock knows no priorities: a BG commit already queued on it when an FG request
/// comes may win it, and then lets the FG request go first.
#[test]
fn a_bg_commit_queued_on_the_journal_lock_lets_a_later_fg_request_go_first() {
    let clock = Arc::new(ManualClock::new());
    let d = dispatcher(&clock);
    let journal = Mutex::new(());
    let order = Mutex::new(Vec::new());
    let (first_holds, second_queued) = (Barrier::new(2), Barrier::new(2));
    let second_at_lock = AtomicBool::new(false);
    thread::scope(|s| {
        let first = s.spawn(|| {
            d.background_work(|| {
                let held = d.take_journal(|| journal.lock().unwrap());
                first_holds.wait();
                second_queued.wait();
                eventually("the FG request to wait for the journal", || d.stats().fg_at_journal == 1);
                // Let the second BG commit reach the lock itself (it may win it).
                thread::sleep(GRACE);
                drop(held);
            })
        });
        first_holds.wait();
        let second = s.spawn(|| {
            d.background_work(|| {
                let mut queued = false;
                let _held = d.take_journal(|| {
                    if !std::mem::replace(&mut queued, true) {
                        second_queued.wait();
                        second_at_lock.store(true, Ordering::SeqCst);
                    }
                    journal.lock().unwrap()
                });
                order.lock().unwrap().push("BG");
            })
        });
        eventually("the second BG commit to reach the lock", || second_at_lock.load(Ordering::SeqCst));
        {
            // The FG request ends here: a BG commit also holds back while FG requests are in flight.
            let _a = d.admit(IoClass::Foreground, FG.uid);
            let _j = d.take_journal(|| journal.lock().unwrap());
            order.lock().unwrap().push("FG");
        }
        first.join().unwrap();
        second.join().unwrap();
    });
    assert_eq!(*order.lock().unwrap(), ["FG", "BG"]);
}

#[test]
fn a_bg_commit_gives_way_to_an_fg_fsync_and_then_commits_whole() {
    let config = Config::from_toml(
        "transaction_policy = \"close-on-fsync\"\n[[apps]]\nname = \"fg\"\nuids = [10001]\nmode = \"sync\"\n",
    )
    .expect("config");
    let backend = Arc::new(RecordingBackend::new(MemBackend::new()));
    let engine = Engine::start(backend.clone(), Arc::new(ManualClock::new()), config).expect("engine starts");
    engine.set_foreground(Some("fg")).unwrap();
    // Each app in a directory of its own, so neither app's data depends on the other's.
    let fg_dir = engine.mkdir(FG, ROOT_INO, OsStr::new("fg"), 0o755).unwrap().ino;
    let bg_dir = engine.mkdir(BG, ROOT_INO, OsStr::new("bg"), 0o755).unwrap().ino;
    engine.checkpoint().unwrap();
    // More than the journal streams at once (1 MiB), so the BG commit writes its journal mid-transaction.
    let bg_data = pattern(4 << 20);
    let bg_file = engine.create(BG, bg_dir, OsStr::new("data"), 0o644, false).unwrap().ino;
    engine.write(Some(BG), bg_file, 0, &bg_data).unwrap();
    engine.fsync(Some(BG), bg_file).unwrap(); // memory mode: BG's VCT closes, uncommitted
    let fg_file = engine.create(FG, fg_dir, OsStr::new("state"), 0o644, false).unwrap().ino;
    // The "fault" hook pauses the BG commit at its first journal write (and fails nothing).
    let (reached, paused) = (Arc::new(Barrier::new(2)), Arc::new(Barrier::new(2)));
    let armed = Arc::new(AtomicBool::new(true));
    let (r, p, a) = (reached.clone(), paused.clone(), armed.clone());
    let to_journal = |op: &Op| matches!(op, Op::Write { path, .. } if path.starts_with(".mcfs"));
    backend.fail_when(
        move |op| {
            if to_journal(op) && a.swap(false, Ordering::SeqCst) {
                r.wait();
                p.wait();
            }
            false
        },
        libc::EIO,
    );
    thread::scope(|s| {
        let tick = s.spawn(|| engine.tick());
        reached.wait();
        let fg = s.spawn(|| {
            let _a = engine.admit(FG);
            engine.write(Some(FG), fg_file, 0, b"fg state").unwrap();
            engine.fsync(Some(FG), fg_file).unwrap();
        });
        eventually("the FG fsync to wait for the journal", || engine.dispatch_stats().fg_at_journal == 1);
        paused.wait();
        fg.join().unwrap();
        tick.join().unwrap();
    });
    assert!(!armed.load(Ordering::SeqCst));
    assert_eq!(engine.dispatch_stats().commits_given_way, 1);
    // Both commits wait in the journal; the applier carries them out in commit order.
    engine.checkpoint().unwrap();
    let first_write_to = |name: &str| {
        (0..backend.op_count())
            .find(|&i| matches!(backend.op(i), Some(Op::Write { path, .. }) if path == Path::new(name)))
    };
    let (fg_at, bg_at) =
        (first_write_to("fg/state").expect("FG data applied"), first_write_to("bg/data").expect("BG data applied"));
    assert!(fg_at < bg_at, "the FG commit went first (op {fg_at} vs {bg_at})");
    let live = backend.live();
    let mut got = vec![0; bg_data.len()];
    assert_eq!(live.read_at(Path::new("bg/data"), 0, &mut got).unwrap(), bg_data.len());
    assert!(got == bg_data, "the BG commit, retried, wrote its data whole");
    assert_eq!(engine.read(fg_file, 0, 64).unwrap(), b"fg state");
    assert!(engine.is_quiet(), "nothing is left to commit");
}

#[test]
fn a_bg_commit_does_not_start_within_the_anticipation_after_an_fg_request() {
    let anticipation = Duration::from_millis(20);
    let clock = Arc::new(ManualClock::new());
    let d = dispatcher(&clock).with_anticipation(anticipation);
    drop(d.admit(IoClass::Foreground, FG.uid));
    let journal = Mutex::new(());
    let taken = AtomicBool::new(false);
    thread::scope(|s| {
        let bg = s.spawn(|| {
            d.background_work(|| {
                let _held = d.take_journal(|| journal.lock().unwrap());
                taken.store(true, Ordering::SeqCst);
            })
        });
        thread::sleep(GRACE);
        assert!(!taken.load(Ordering::SeqCst), "the BG commit started right after the FG request");
        clock.advance(anticipation);
        bg.join().unwrap();
    });
    assert!(taken.load(Ordering::SeqCst));
    assert_eq!(d.stats().bg_aged, 0, "it waited out the anticipation, not the aging bound");
}

#[test]
fn aged_bg_commits_go_ahead_of_busy_fg_work_at_most_one_per_aging_bound() {
    let clock = Arc::new(ManualClock::new());
    let d = dispatcher(&clock);
    let _fg = d.admit(IoClass::Foreground, FG.uid);
    let journal = Mutex::new(());
    let went = Mutex::new(Vec::new());
    thread::scope(|s| {
        let (d, journal, went, clock) = (&d, &journal, &went, &clock);
        for _ in 0..2 {
            s.spawn(move || {
                d.background_work(|| {
                    let _held = d.take_journal(|| journal.lock().unwrap());
                    went.lock().unwrap().push(clock.now());
                })
            });
        }
        eventually("both BG commits to wait", || d.stats().journal_yields == 2);
        clock.advance(AGING);
        eventually("one aged BG commit to go", || went.lock().unwrap().len() == 1);
        thread::sleep(GRACE);
        assert_eq!(went.lock().unwrap().len(), 1, "a second aged BG commit went within the same bound");
        clock.advance(AGING);
        eventually("the other to go a bound later", || went.lock().unwrap().len() == 2);
    });
    let went = went.into_inner().unwrap();
    assert_eq!(went[1].duration_since(went[0]).unwrap(), AGING);
}
