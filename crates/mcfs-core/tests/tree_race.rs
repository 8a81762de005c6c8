//! A checkpoint compiles its journal transaction against a copy of the
//! committed tree (inode → backing path) and installs that copy once the
//! transaction is durable. A directory listed from the backing store for the
//! first time in between adds its names to the tree while the copy is out:
//! the install must keep them, or later checkpoints find no path for files
//! made under that directory and silently drop their creates and writes.

mod paused_journal;

use mcfs_core::backend::RecordingBackend;
use mcfs_core::*;
use paused_journal::pause_first_journal_write;
use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

const APP: Caller = Caller { uid: 10001, gid: 10001, pid: 1 };
/// Only guards against a hang if the checkpoint never writes its journal.
const HANG_GUARD: Duration = Duration::from_secs(60);

fn pattern(seed: u8, len: usize) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31) ^ seed).collect()
}

fn write_file(backend: &MemBackend, path: &str, data: &[u8]) {
    backend.create(Path::new(path), FileKind::File, 0o644, 0).expect("create in the backing store");
    backend.write_at(Path::new(path), 0, data).expect("write in the backing store");
}

/// Panics, saying `what`, unless the backing store holds exactly `want` at `path`.
fn assert_holds(backend: &MemBackend, path: &str, want: &[u8], what: &str) {
    let size = match backend.stat(Path::new(path)) {
        Ok(attr) => attr.size as usize,
        Err(e) => panic!("{what}: {path} is not in the backing store ({e})"),
    };
    let mut buf = vec![0; size];
    let n = backend.read_at(Path::new(path), 0, &mut buf).unwrap_or_else(|e| panic!("{what}: reading {path}: {e}"));
    buf.truncate(n);
    assert!(buf == want, "{what}: {path} holds {n} bytes that differ from the {} expected", want.len());
}

#[test]
fn a_directory_listed_while_a_checkpoint_compiles_keeps_its_new_files() {
    // `dir` must be found in a listing made during the compile, so it sits
    // one level below `top`: the root is listed by the first lookup.
    let initial = MemBackend::new();
    initial.create(Path::new("top"), FileKind::Dir, 0o755, 0).unwrap();
    initial.create(Path::new("top/dir"), FileKind::Dir, 0o755, 0).unwrap();
    let old = pattern(0x11, 5000);
    write_file(&initial, "top/dir/old", &old);
    write_file(&initial, "bg.log", b"");
    let backend = Arc::new(RecordingBackend::new(initial));
    let engine =
        Engine::start(backend.clone(), Arc::new(ManualClock::new()), Config::default()).expect("engine starts");

    let log = engine.lookup(APP, ROOT_INO, OsStr::new("bg.log")).expect("lookup bg.log").ino;
    let top = engine.lookup(APP, ROOT_INO, OsStr::new("top")).expect("lookup top").ino;
    let logged = pattern(0x22, 3000);
    engine.write(Some(APP), log, 0, &logged).expect("write bg.log");
    let checkpoints = engine.stats().checkpoints;

    let (reached, go_on) = pause_first_journal_write(&backend);
    let dir = thread::scope(|s| {
        let checkpoint = s.spawn(|| engine.checkpoint());
        reached.recv_timeout(HANG_GUARD).expect("the checkpoint writes its journal");
        // The checkpoint holds its copy of the tree; list `top` and `dir` now.
        let dir = engine.lookup(APP, top, OsStr::new("dir")).expect("lookup top/dir").ino;
        engine.lookup(APP, dir, OsStr::new("old")).expect("lookup top/dir/old");
        // Moved in and dropped: lets the checkpoint go on, and would on a panic above too.
        drop(go_on);
        checkpoint.join().unwrap().expect("the paused checkpoint");
        dir
    });
    backend.clear_fault();
    assert_eq!(engine.stats().checkpoints, checkpoints + 1, "the paused checkpoint committed");

    let new = engine.create(APP, dir, OsStr::new("new"), 0o644, true).expect("create top/dir/new").ino;
    let data = pattern(0x33, 5000);
    engine.write(Some(APP), new, 0, &data).expect("write top/dir/new");
    engine.release(new);
    engine.checkpoint().expect("checkpoint of top/dir/new");
    engine.shutdown().expect("shutdown");

    let store = backend.live();
    assert_holds(store, "top/dir/new", &data, "the file made under the directory listed meanwhile");
    assert_holds(store, "top/dir/old", &old, "the file listed during the compile");
    assert_holds(store, "bg.log", &logged, "the paused checkpoint's own write");
}
