//! An apply carries a run of waiting transactions out in place with the
//! journal free: a commit made meanwhile (here a sync-mode fsync) goes
//! through at once instead of waiting for the apply's device time, and
//! waits for the next run. Held on a paused backend, not on timing.

mod recovered;

use mcfs_core::backend::{Op, RecordingBackend};
use mcfs_core::*;
use recovered::durable_contents;
use std::ffi::OsStr;
use std::path::Path;
use std::sync::mpsc::channel;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

const A: Caller = Caller { uid: 10001, gid: 10001, pid: 1 };
/// Only guards against a hang: the commit under test never waits for the paused apply.
const HANG_GUARD: Duration = Duration::from_secs(60);

#[test]
fn a_commit_goes_through_while_the_backlog_is_applied_and_waits_for_the_next_run() {
    let config = Config::from_toml(
        "transaction_policy = \"close-on-fsync\"\n[[apps]]\nname = \"a\"\nuids = [10001]\nmode = \"sync\"\n",
    )
    .expect("config");
    let backend = Arc::new(RecordingBackend::new(MemBackend::new()));
    let engine = Engine::start(backend.clone(), Arc::new(ManualClock::new()), config).expect("engine starts");
    let first = engine.create(A, ROOT_INO, OsStr::new("first"), 0o644, false).unwrap().ino;
    engine.write(Some(A), first, 0, &[1; 10_000]).unwrap();
    engine.fsync(Some(A), first).unwrap();
    assert_eq!(engine.waiting_transactions().0, 1, "a sync-mode fsync commits; the apply comes later");

    // The apply's first change to the app's file waits until the test lets it go on.
    let (reached_tx, reached) = channel();
    let (go_on, go_on_rx) = channel::<()>();
    let pause = Mutex::new(Some((reached_tx, go_on_rx)));
    backend.fail_when(
        move |op| {
            let of_app = matches!(op, Op::Create { path, .. } | Op::Write { path, .. } if path == Path::new("first"));
            if let Some((reached, go_on)) = of_app.then(|| pause.lock().unwrap().take()).flatten() {
                let _ = reached.send(());
                let _ = go_on.recv(); // returns at once if the test dropped its sender
            }
            false
        },
        libc::EIO,
    );
    thread::scope(|s| {
        let apply = s.spawn(|| engine.checkpoint());
        reached.recv_timeout(HANG_GUARD).expect("the checkpoint applies the waiting transaction");
        let (done_tx, done) = channel();
        let engine = &engine;
        s.spawn(move || {
            let second = engine.create(A, ROOT_INO, OsStr::new("second"), 0o644, false).unwrap().ino;
            engine.write(Some(A), second, 0, &[2; 3000]).unwrap();
            done_tx.send(engine.fsync(Some(A), second)).unwrap();
        });
        let committed = done.recv_timeout(HANG_GUARD);
        // Before any assertion: a failing one must not leave the apply paused.
        drop(go_on);
        committed.expect("the fsync's commit waited for the paused apply").expect("the fsync");
        assert_eq!(
            durable_contents(backend.live(), "second"),
            Some(vec![2; 3000]),
            "the commit made during the run is durable"
        );
        apply.join().unwrap().expect("the paused checkpoint");
    });
    backend.clear_fault();
    engine.check_invariants().expect("invariants after the run");
    assert_eq!(
        engine.waiting_transactions().0,
        1,
        "the run applied only what waited when it started; the later commit waits for the next"
    );
    assert!(backend.live().stat(Path::new("second")).is_err(), "the later commit is not applied yet");
    engine.checkpoint().unwrap();
    engine.check_invariants().expect("invariants after the next run");
    assert_eq!(engine.waiting_transactions().0, 0);
    engine.shutdown().unwrap();
    for (path, want) in [("first", vec![1; 10_000]), ("second", vec![2; 3000])] {
        let mut buf = vec![0; want.len() + 1];
        let n = backend.live().read_at(Path::new(path), 0, &mut buf).unwrap();
        assert_eq!(&buf[..n], &want[..], "{path} in the backing store");
    }
}
