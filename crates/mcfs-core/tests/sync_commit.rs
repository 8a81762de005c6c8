//! A sync-mode fsync commits its app's data and what that data depends on,
//! not other apps' independent data: an app's durable fsync does not wait
//! for (nor write out) a background app's pile of writes.

mod recovered;

use mcfs_core::*;
use recovered::durable_contents;
use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;

const A: Caller = Caller { uid: 10001, gid: 10001, pid: 1 };
const B: Caller = Caller { uid: 10002, gid: 10002, pid: 2 };

fn engine() -> (Arc<MemBackend>, Engine) {
    let config = Config::from_toml(
        "transaction_policy = \"close-on-fsync\"\n[[apps]]\nname = \"a\"\nuids = [10001]\nmode = \"sync\"\n",
    )
    .expect("config");
    let backend = Arc::new(MemBackend::new());
    let engine = Engine::start(backend.clone(), Arc::new(ManualClock::new()), config).expect("engine starts");
    (backend, engine)
}

fn committed(engine: &Engine, app: &str) -> u64 {
    engine.stats().apps[app].vcts_committed
}

#[test]
fn a_sync_fsync_leaves_other_apps_independent_data_in_memory() {
    let (backend, engine) = engine();
    let dir_a = engine.mkdir(A, ROOT_INO, OsStr::new("a"), 0o755).unwrap().ino;
    let dir_b = engine.mkdir(B, ROOT_INO, OsStr::new("b"), 0o755).unwrap().ino;
    engine.checkpoint().unwrap();
    let fb = engine.create(B, dir_b, OsStr::new("big"), 0o644, false).unwrap().ino;
    engine.write(Some(B), fb, 0, &vec![2; 1 << 20]).unwrap();
    engine.fsync(Some(B), fb).unwrap(); // memory mode: B's VCT closes and waits
    let fa = engine.create(A, dir_a, OsStr::new("small"), 0o644, false).unwrap().ino;
    engine.write(Some(A), fa, 0, b"durable").unwrap();
    let b_before = committed(&engine, "uid:10002");
    engine.fsync(Some(A), fa).unwrap();
    assert!(committed(&engine, "a") > 0);
    assert_eq!(committed(&engine, "uid:10002"), b_before, "B's independent VCT was not A's to commit");
    assert_eq!(durable_contents(&backend, "a/small").expect("A's data is durable"), b"durable".to_vec());
    assert!(durable_contents(&backend, "b/big").is_none_or(|d| d.is_empty()), "B's data stays in memory");
}

#[test]
fn a_sync_fsync_commits_the_other_apps_data_it_depends_on() {
    let (backend, engine) = engine();
    let dir = engine.mkdir(B, ROOT_INO, OsStr::new("shared"), 0o777).unwrap().ino;
    engine.fsync(Some(B), dir).unwrap(); // B's mkdir closes in its own VCT, uncommitted
    let fa = engine.create(A, dir, OsStr::new("inside"), 0o644, false).unwrap().ino;
    engine.write(Some(A), fa, 0, b"needs B's mkdir").unwrap();
    engine.fsync(Some(A), fa).unwrap();
    assert!(committed(&engine, "uid:10002") > 0, "A's file needs B's directory committed first");
    assert_eq!(durable_contents(&backend, "shared/inside").expect("A's data is durable"), b"needs B's mkdir".to_vec());
}

/// Issue 10, item 6: a sync-mode app's fsync of a file another app (in
/// memory mode) created is durable. The data is charged to the file's app
/// (10001, memory mode); before, the fsync was that app's and was absorbed,
/// and a crash brought the old content back.
#[test]
fn a_sync_callers_fsync_of_another_apps_file_is_durable() {
    let config = Config::from_toml("[[apps]]\nname = \"b\"\nuids = [10002]\nmode = \"sync\"\n").expect("config");
    let backend = Arc::new(MemBackend::new());
    let engine = Engine::start(backend.clone(), Arc::new(ManualClock::new()), config).expect("engine starts");
    let f = engine.create(A, ROOT_INO, OsStr::new("shared"), 0o666, false).unwrap().ino;
    engine.write(Some(A), f, 0, b"old content").unwrap();
    engine.checkpoint().unwrap();
    engine.write(Some(B), f, 0, b"NEW").unwrap();
    engine.fsync(Some(B), f).unwrap();
    assert_eq!(
        durable_contents(&backend, "shared").unwrap(),
        b"NEW content".to_vec(),
        "durable when the fsync returned"
    );
    let b = &engine.stats().apps["b"];
    assert_eq!((b.fsync_honoured, b.fsync_absorbed), (1, 0), "B's fsync, honoured");
    // A memory-mode caller's fsync of the same file stays absorbed.
    engine.write(Some(A), f, 0, b"mem").unwrap();
    engine.fsync(Some(A), f).unwrap();
    assert_eq!(durable_contents(&backend, "shared").unwrap(), b"NEW content".to_vec());
}

/// Issue 12: SQLite's DELETE journal mode in a sync-mode app. Each app
/// transaction creates, writes and fsyncs `t.db-journal`, writes and fsyncs
/// the database, and unlinks the journal (closed and forgotten first; an
/// open one is parked as an orphan, which is not elided): three commits. Applied as one run, the journals born and gone within it
/// are not issued in place, and what a crash would leave at any commit is
/// the database as committed, with no journal.
#[test]
fn sqlite_delete_journals_born_and_gone_within_a_run_are_not_written_in_place() {
    let (backend, engine) = engine();
    let dir = engine.mkdir(A, ROOT_INO, OsStr::new("app"), 0o755).unwrap().ino;
    let db = engine.create(A, dir, OsStr::new("t.db"), 0o644, false).unwrap().ino;
    engine.fsync(Some(A), db).unwrap();
    let journal = OsStr::new("t.db-journal");
    for n in 1..=10u8 {
        let j = engine.create(A, dir, journal, 0o644, false).unwrap().ino;
        engine.write(Some(A), j, 0, &[n; 4608]).unwrap();
        engine.fsync(Some(A), j).unwrap();
        engine.write(Some(A), db, 0, &[n; 4096]).unwrap();
        engine.fsync(Some(A), db).unwrap();
        engine.release(j);
        engine.forget(j, 1); // the kernel's reference goes before the unlink
        engine.unlink(A, dir, journal).unwrap();
        engine.fsync(Some(A), dir).unwrap();
        assert_eq!(durable_contents(&backend, "app/t.db"), Some(vec![n; 4096]), "txn {n} is durable");
        assert_eq!(durable_contents(&backend, "app/t.db-journal"), None, "txn {n}: no journal is left");
    }
    engine.checkpoint().unwrap();
    assert_eq!(engine.stats().journal_waiting_transactions, 0);
    let elided = engine.stats().elided_ops;
    assert!(elided >= 9 * 3, "the journals after the first are not issued: {elided} ops elided");
    assert!(backend.stat(Path::new("app/t.db-journal")).is_err());
    assert_eq!(durable_contents(&backend, "app/t.db"), Some(vec![10; 4096]));
}

/// A file deleted while its data waits in the journal to be applied: its
/// pages leave the cache at once (nothing can read them; the journal's ops
/// hold what the apply writes), and the apply still leaves the backing
/// store as the commits say. A file deleted before its data was committed
/// is never journaled at all.
#[test]
fn a_file_deleted_while_its_data_waits_to_be_applied_frees_its_pages_at_once() {
    let (backend, engine) = engine();
    let mib = 1 << 20;
    let f = engine.create(A, ROOT_INO, OsStr::new("f"), 0o644, false).unwrap().ino;
    engine.write(Some(A), f, 0, &vec![7; mib]).unwrap();
    engine.fsync(Some(A), f).unwrap();
    let stats = engine.stats();
    assert_eq!(stats.journal_waiting_transactions, 1, "the fsync committed; the apply comes later");
    assert!(stats.cache_dirty_bytes >= mib as u64, "the waiting pages are pinned: {}", stats.cache_dirty_bytes);
    engine.release(f);
    engine.forget(f, 1);
    engine.unlink(A, ROOT_INO, OsStr::new("f")).unwrap();
    let stats = engine.stats();
    assert_eq!(stats.journal_waiting_transactions, 1, "still waiting");
    assert!(
        stats.cache_dirty_bytes < 64 << 10,
        "the deleted file's pages are gone: {} bytes dirty",
        stats.cache_dirty_bytes
    );
    engine.check_invariants().unwrap();

    // Written, then deleted before any commit of its data.
    let g = engine.create(A, ROOT_INO, OsStr::new("g"), 0o644, false).unwrap().ino;
    engine.write(Some(A), g, 0, &vec![8; mib]).unwrap();
    engine.release(g);
    engine.forget(g, 1);
    engine.unlink(A, ROOT_INO, OsStr::new("g")).unwrap();
    assert!(engine.stats().cache_dirty_bytes < 64 << 10, "g's pages are gone");
    let journaled = engine.stats().journal_bytes;
    engine.fsync(Some(A), ROOT_INO).unwrap();
    assert!(engine.stats().journal_bytes - journaled < 64 << 10, "g's data is never journaled");
    engine.check_invariants().unwrap();
    engine.checkpoint().unwrap();
    engine.check_invariants().unwrap();
    assert_eq!(durable_contents(&backend, "f"), None);
    assert_eq!(durable_contents(&backend, "g"), None);
    assert!(backend.stat(Path::new("f")).is_err() && backend.stat(Path::new("g")).is_err());
}
