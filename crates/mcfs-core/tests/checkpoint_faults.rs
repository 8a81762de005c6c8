//! Checkpoints that the backing store fails (ENOSPC, EIO), injected with
//! `RecordingBackend::fail_when`: the caller gets the error with its errno,
//! `stats().checkpoint_error` reports it, the data stays readable from
//! memory, a later checkpoint (after the fault clears) commits it, an fsync
//! in sync mode returns the error, and a crash at any point of all this still
//! recovers to the old or the new contents — never anything else.

use mcfs_core::backend::{Op, RecordingBackend};
use mcfs_core::journal::recover;
use mcfs_core::*;
use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

const APP: Caller = Caller { uid: 10000, gid: 10000, pid: 7 };

/// Which backend writes fail.
#[derive(Clone, Copy, Debug)]
enum FaultAt {
    /// Writing the journal: the transaction never commits.
    Journal,
    /// Applying in place, after the commit record is durable.
    InPlace,
}

impl FaultAt {
    fn matches(self, op: &Op) -> bool {
        let Op::Write { path, .. } = op else { return false };
        match self {
            FaultAt::Journal => path == Path::new(".mcfs/journal"),
            FaultAt::InPlace => path == Path::new("f"),
        }
    }
}

fn bytes(pattern: u8, len: usize) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31) ^ pattern | 1).collect()
}

struct Setup {
    recorder: Arc<RecordingBackend>,
    clock: Arc<ManualClock>,
    engine: Engine,
    ino: Ino,
    old: Vec<u8>,
    new: Vec<u8>,
    /// Backend ops issued when the checkpoint of `old` returned.
    old_acknowledged: usize,
}

/// `f` holds `old` durably; `new` (longer, page-crossing) is written over it
/// in memory only.
fn setup(mode: SyncMode) -> Setup {
    let recorder = Arc::new(RecordingBackend::new(MemBackend::new()));
    let clock = Arc::new(ManualClock::new());
    let config = Config { mode, ..Config::default() };
    let engine = Engine::start(recorder.clone(), clock.clone(), config).expect("engine starts");
    let ino = engine.create(APP, ROOT_INO, OsStr::new("f"), 0o644, true).expect("create").ino;
    let (old, new) = (bytes(0x10, 8192), bytes(0x60, 4096 * 3 + 100));
    engine.write(Some(APP), ino, 0, &old).expect("write old");
    engine.checkpoint().expect("first checkpoint");
    let old_acknowledged = recorder.op_count();
    engine.write(Some(APP), ino, 0, &new).expect("write new");
    Setup { recorder, clock, engine, ino, old, new, old_acknowledged }
}

fn backing(backend: &MemBackend) -> Option<Vec<u8>> {
    let size = backend.stat(Path::new("f")).ok()?.size as usize;
    let mut buf = vec![0; size];
    let n = backend.read_at(Path::new("f"), 0, &mut buf).expect("read backing f");
    buf.truncate(n);
    Some(buf)
}

/// The failed checkpoint's aftermath, common to every way of running it.
fn assert_failed_but_kept(s: &Setup, result: FsResult<()>, errno: i32, what: &str) {
    assert_eq!(result, Err(Errno(errno)), "{what}: the error and its errno reach the caller");
    let stats = s.engine.stats();
    let error = stats.checkpoint_error.unwrap_or_else(|| panic!("{what}: stats().checkpoint_error is empty"));
    let cause = std::io::Error::from_raw_os_error(errno).to_string();
    assert!(error.contains(&cause), "{what}: checkpoint_error {error:?} names the cause {cause:?}");
    assert!(stats.checkpoint_failures >= 1, "{what}: the failure is counted");
    let read = s.engine.read(s.ino, 0, 1 << 20).expect("read from memory");
    assert!(read == s.new, "{what}: the new data stays readable from memory");
}

/// Commits after the fault clears and checks the backing store, then checks
/// every crash state of the whole run: `f` is old or new, and new once the
/// successful checkpoint had returned.
fn assert_commits_later_and_crash_safe(s: &Setup, commit: impl Fn(&Setup) -> FsResult<()>, what: &str) {
    s.recorder.clear_fault();
    commit(s).unwrap_or_else(|e| panic!("{what}: the checkpoint after the fault cleared failed: {e}"));
    let acknowledged = s.recorder.op_count();
    assert!(backing(s.recorder.live()) == Some(s.new.clone()), "{what}: the new data reached the backing store");
    for k in s.old_acknowledged..=acknowledged {
        for state in s.recorder.crash_states(k, k as u64, 16) {
            recover(&state.state).unwrap_or_else(|e| panic!("{what}: recover at {}: {e}", state.describe()));
            let f = backing(&state.state);
            let is_new = f.as_ref() == Some(&s.new);
            assert!(
                is_new || f.as_ref() == Some(&s.old),
                "{what}: crash at {} recovered f to neither old nor new contents ({:?} bytes)",
                state.describe(),
                f.map(|b| b.len())
            );
            assert!(
                is_new || k < acknowledged,
                "{what}: crash at {} lost an acknowledged checkpoint",
                state.describe()
            );
        }
    }
    assert_eq!(s.engine.stats().checkpoint_error, None, "{what}: the error clears after a good checkpoint");
}

#[test]
fn a_failed_checkpoint_reports_the_error_keeps_the_data_and_commits_later() {
    for errno in [libc::ENOSPC, libc::EIO] {
        for at in [FaultAt::Journal, FaultAt::InPlace] {
            let what = format!("{} while writing {at:?}", std::io::Error::from_raw_os_error(errno));
            let s = setup(SyncMode::Memory);
            s.recorder.fail_when(move |op| at.matches(op), errno);
            let result = s.engine.checkpoint();
            assert_failed_but_kept(&s, result, errno, &what);
            if let FaultAt::Journal = at {
                assert!(backing(s.recorder.live()) == Some(s.old.clone()), "{what}: nothing reached f");
            }
            assert_commits_later_and_crash_safe(&s, |s| s.engine.checkpoint(), &what);
        }
    }
}

#[test]
fn fsync_in_sync_mode_returns_the_journal_error() {
    for errno in [libc::ENOSPC, libc::EIO] {
        let what = format!("sync-mode fsync, {} while writing the journal", std::io::Error::from_raw_os_error(errno));
        let s = setup(SyncMode::Sync);
        s.recorder.fail_when(move |op| FaultAt::Journal.matches(op), errno);
        let result = s.engine.fsync(Some(APP), s.ino);
        assert_failed_but_kept(&s, result, errno, &what);
        // The retried fsync is durable in the journal; the checkpoint puts it in place.
        let fsync_then_apply = |s: &Setup| s.engine.fsync(Some(APP), s.ino).and_then(|()| s.engine.checkpoint());
        assert_commits_later_and_crash_safe(&s, fsync_then_apply, &what);
    }
}

/// A sync-mode fsync is done once its commit record is durable: it waits
/// for no in-place write, so an in-place failure is not its error. The
/// data survives a crash from the fsync on; the failure shows when the
/// backlog is applied (here at a requested checkpoint), and a later one
/// finishes it.
#[test]
fn fsync_in_sync_mode_does_not_wait_for_the_in_place_apply() {
    for errno in [libc::ENOSPC, libc::EIO] {
        let what = format!("sync-mode fsync, {} while applying", std::io::Error::from_raw_os_error(errno));
        let s = setup(SyncMode::Sync);
        s.recorder.fail_when(move |op| FaultAt::InPlace.matches(op), errno);
        s.engine.fsync(Some(APP), s.ino).unwrap_or_else(|e| panic!("{what}: fsync failed: {e}"));
        let fsynced = s.recorder.op_count();
        assert!(backing(s.recorder.live()) == Some(s.old.clone()), "{what}: nothing was written in place yet");
        // A sync returned after the last op: every op up to there is what any crash keeps.
        assert_eq!(s.recorder.barriers().last(), Some(&fsynced), "{what}: the fsync ended with the journal's sync");
        let kept = s.recorder.crash_states(fsynced, 7, 2).pop().expect("the state with every op").state;
        recover(&kept).unwrap_or_else(|e| panic!("{what}: recover: {e}"));
        assert!(backing(&kept) == Some(s.new.clone()), "{what}: a crash after the fsync lost its data");
        let result = s.engine.checkpoint();
        assert_failed_but_kept(&s, result, errno, &what);
        assert_commits_later_and_crash_safe(&s, |s| s.engine.checkpoint(), &what);
    }
}

#[test]
fn the_background_checkpointer_retries_after_a_failure() {
    let s = setup(SyncMode::Memory);
    s.recorder.fail_when(|op| FaultAt::InPlace.matches(op), libc::ENOSPC);
    // The staleness limit (120 s by default) closes the VCT; tick commits.
    s.clock.advance(Duration::from_secs(121));
    s.engine.tick();
    // The transaction waits in the journal until its backlog is due.
    assert_eq!(s.engine.stats().checkpoint_error, None, "nothing was applied yet");
    s.clock.advance(Duration::from_secs(6));
    s.engine.tick();
    let stats = s.engine.stats();
    assert!(stats.checkpoint_error.is_some(), "the background failure is reported");
    assert!(s.engine.read(s.ino, 0, 1 << 20).unwrap() == s.new);
    s.recorder.clear_fault();
    // Past any back-off, the next tick finishes the job.
    s.clock.advance(Duration::from_secs(3600));
    s.engine.tick();
    assert_eq!(s.engine.stats().checkpoint_error, None, "a later tick commits and clears the error");
    assert!(backing(s.recorder.live()) == Some(s.new.clone()), "the data reached the backing store");
}
