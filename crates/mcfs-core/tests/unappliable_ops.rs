//! An op the backing store refuses for good at apply time (injected with
//! `RecordingBackend::fail_when`: an xattr the store has no room for, a
//! file larger than it allows, as ext4 refuses an 8 KiB xattr value with
//! ENOSPC and `truncate -s 20T` with EFBIG) is isolated: the checkpoint succeeds, every other
//! op — the other app's data in the same transaction included — reaches
//! the backing store, the app that owns the op gets the errno once, at its
//! next fsync of that file, and `stats()` counts and lists it.
//! Later checkpoints are not blocked, and recovery finds nothing left over.

use mcfs_core::backend::{Op, RecordingBackend};
use mcfs_core::journal::recover;
use mcfs_core::*;
use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;

const OWNER: Caller = Caller { uid: 10001, gid: 10001, pid: 11 };
const OTHER: Caller = Caller { uid: 10002, gid: 10002, pid: 12 };

fn content(backend: &MemBackend, path: &str) -> Vec<u8> {
    let mut buf = vec![0; 1 << 16];
    let n = backend.read_at(Path::new(path), 0, &mut buf).unwrap_or_else(|e| panic!("read {path}: {e}"));
    buf.truncate(n);
    buf
}

#[test]
fn an_op_the_store_cannot_hold_is_skipped_and_reported_to_its_app_once() {
    let recorder = Arc::new(RecordingBackend::new(MemBackend::new()));
    // The store has no room for this xattr (ext4: ENOSPC in the inode's xattr space).
    recorder.fail_when(|op| matches!(op, Op::SetXattr { name, .. } if name == OsStr::new("user.big")), libc::ENOSPC);
    let clock = Arc::new(ManualClock::new());
    let engine = Engine::start(recorder.clone(), clock, Config::default()).expect("engine starts");
    let f = engine.create(OWNER, ROOT_INO, OsStr::new("f"), 0o644, true).expect("create f").ino;
    let g = engine.create(OTHER, ROOT_INO, OsStr::new("g"), 0o644, true).expect("create g").ino;
    engine.write(Some(OWNER), f, 0, b"owner's data").expect("write f");
    // Small enough for the engine's check at the call: only the store refuses it, at apply time.
    engine.setxattr(OWNER, f, OsStr::new("user.big"), &[7; 100], XattrMode::Any).expect("setxattr in memory");
    engine.setxattr(OWNER, f, OsStr::new("user.small"), b"fits", XattrMode::Any).expect("setxattr");
    engine.write(Some(OTHER), g, 0, b"other app's data").expect("write g");

    engine.checkpoint().expect("the checkpoint succeeds despite the refused op");
    let backing = recorder.live();
    assert_eq!(content(backing, "f"), b"owner's data");
    assert_eq!(content(backing, "g"), b"other app's data", "the other app's data is committed");
    assert_eq!(backing.get_xattr(Path::new("f"), OsStr::new("user.small")).unwrap().as_deref(), Some(&b"fits"[..]));
    assert_eq!(backing.get_xattr(Path::new("f"), OsStr::new("user.big")).unwrap(), None);

    let stats = engine.stats();
    assert_eq!(stats.checkpoint_error, None, "nothing is left to retry");
    assert_eq!(stats.unapplied_ops, 1);
    let listed = &stats.unapplied_recent[0];
    assert_eq!((listed.app.as_str(), listed.op.as_str(), listed.errno), ("uid:10001", "setxattr f", libc::ENOSPC));

    // The owner hears of it once; the other app, and the owner on another file, never.
    assert_eq!(engine.fsync(Some(OTHER), f), Ok(()), "not the other app's op");
    assert_eq!(engine.fsync(Some(OWNER), g), Ok(()));
    assert_eq!(engine.fsync(Some(OWNER), f), Err(Errno::ENOSPC));
    assert_eq!(engine.fsync(Some(OWNER), f), Ok(()), "reported once");

    // A later refusal reaches the owner at its next fsync too; checkpoints go on.
    recorder.fail_when(|op| matches!(op, Op::SetLen { size, .. } if *size > 1 << 30), libc::EFBIG);
    let huge = SetAttr { size: Some(4 << 30), ..SetAttr::default() };
    engine.setattr(OWNER, f, &huge).expect("truncate up in memory");
    engine.write(Some(OTHER), g, 0, b"OTHER").expect("write g again");
    engine.checkpoint().expect("the next checkpoint succeeds too");
    assert_eq!(content(recorder.live(), "g"), b"OTHER app's data");
    assert_eq!(engine.fsync(Some(OWNER), f), Err(Errno::EFBIG), "fsync reports it");
    assert_eq!(engine.fsync(Some(OWNER), f), Ok(()));
    assert_eq!(engine.stats().unapplied_ops, 2);

    // Nothing is left for recovery: the journal was freed.
    let r = recover(recorder.live()).expect("recover");
    assert_eq!(r.replayed, None);
}
