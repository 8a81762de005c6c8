//! Backing space accounting (issue 10, item 2) on a 32 MiB in-memory
//! backing store: a file larger than half the free space still commits
//! (its journal copy and its applied copy never both need the room), a
//! write that can never be stored is refused with ENOSPC at the call (as
//! ext4's delayed allocation does), `statfs` shows free space net of what is
//! accepted and not committed, removing a file gives its space back to the
//! next writer, and nothing is left wedged: checkpoints and shutdown succeed.

use mcfs_core::*;
use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;

const APP: Caller = Caller { uid: 10001, gid: 10001, pid: 1 };
const OTHER: Caller = Caller { uid: 10002, gid: 10002, pid: 2 };
const MIB: u64 = 1 << 20;
const CHUNK: usize = 128 << 10;

struct Fixture {
    backend: Arc<MemBackend>,
    engine: Engine,
}

/// A 32 MiB backing store, and a cache that holds everything (memory is not the limit here).
fn fixture() -> Fixture {
    let backend = Arc::new(MemBackend::with_capacity(32 * MIB));
    let config = Config { cache_size: 256 * MIB, ..Config::default() };
    let engine = Engine::start(backend.clone(), Arc::new(ManualClock::new()), config).expect("engine starts");
    Fixture { backend, engine }
}

impl Fixture {
    /// Writes `bytes` to a new file `name` in 128 KiB writes; returns how
    /// many bytes were accepted before the first error, and that error.
    fn write_file(&self, who: Caller, name: &str, bytes: u64) -> (u64, Option<Errno>) {
        let ino = self.engine.create(who, ROOT_INO, OsStr::new(name), 0o644, true).expect("create").ino;
        let chunk = vec![0xa5u8; CHUNK];
        let mut done = 0;
        while done < bytes {
            let n = (bytes - done).min(CHUNK as u64) as usize;
            if let Err(e) = self.engine.write(Some(who), ino, done, &chunk[..n]) {
                return (done, Some(e));
            }
            done += n as u64;
        }
        // The file is closed and the kernel drops its reference.
        self.engine.release(ino);
        self.engine.forget(ino, 1);
        (done, None)
    }

    fn backing_size(&self, name: &str) -> Option<u64> {
        self.backend.stat(Path::new(name)).ok().map(|a| a.size)
    }

    fn free_bytes(&self) -> u64 {
        let s = self.engine.statfs().expect("statfs");
        s.bavail * u64::from(s.bsize)
    }
}

#[test]
fn a_file_larger_than_half_the_free_space_commits() {
    let f = fixture();
    assert_eq!(f.write_file(APP, "big", 20 * MIB), (20 * MIB, None));
    f.engine.checkpoint().expect("checkpoint: the journal and the file never both need 20 MiB");
    assert_eq!(f.backing_size("big"), Some(20 * MIB));
    // All but the zeros a segment keeps for the next commit to overwrite.
    let kept = Some(journal::SEGMENT_READY_BYTES);
    assert_eq!(f.backing_size(".mcfs/journal"), kept, "the journal gave its room back");
    assert!(f.engine.stats().checkpoint_error.is_none());
    f.engine.shutdown().expect("shutdown");
}

#[test]
fn a_write_that_can_never_be_stored_gets_enospc_and_nothing_wedges() {
    let f = fixture();
    let (accepted, error) = f.write_file(APP, "huge", 48 * MIB);
    assert_eq!(error, Some(Errno(libc::ENOSPC)), "after {accepted} bytes");
    assert!((28 * MIB..32 * MIB).contains(&accepted), "accepted {accepted} bytes of a 32 MiB store");
    // Another app still gets its data committed, and the accepted bytes are all stored.
    assert_eq!(f.write_file(OTHER, "small", 4096).1, None);
    f.engine.checkpoint().expect("checkpoint");
    assert_eq!(f.backing_size("huge"), Some(accepted));
    assert_eq!(f.backing_size("small"), Some(4096));
    f.engine.shutdown().expect("shutdown");
}

#[test]
fn statfs_is_net_of_what_is_accepted_and_not_committed() {
    let f = fixture();
    let before = f.free_bytes();
    assert_eq!(f.write_file(APP, "f", 4 * MIB), (4 * MIB, None));
    let accepted = f.free_bytes();
    assert!(before - accepted >= 4 * MIB, "free {before} before, {accepted} with 4 MiB accepted");
    f.engine.checkpoint().expect("checkpoint");
    // The same space, now used in the backing store; the block reserved for
    // the new file's inode the memory store does not take, and the journal
    // segment kept for reuse (ready for the next commit) it does.
    let committed = f.free_bytes();
    let kept = journal::SEGMENT_READY_BYTES;
    assert!(
        (accepted - kept..=accepted + 64 * 1024).contains(&committed),
        "{accepted} accepted, {committed} committed"
    );
}

#[test]
fn removing_a_file_gives_its_space_to_the_next_writer() {
    let f = fixture();
    assert_eq!(f.write_file(APP, "old", 24 * MIB), (24 * MIB, None));
    f.engine.checkpoint().expect("checkpoint");
    f.engine.unlink(APP, ROOT_INO, OsStr::new("old")).expect("rm");
    // The removal is not committed yet; the writer that needs its space commits it.
    assert_eq!(f.write_file(APP, "new", 24 * MIB), (24 * MIB, None));
    f.engine.checkpoint().expect("checkpoint");
    assert_eq!((f.backing_size("old"), f.backing_size("new")), (None, Some(24 * MIB)));
}

#[test]
fn fallocate_reserves_its_range_and_punching_gives_unwritten_pages_back() {
    let f = fixture();
    let before = f.free_bytes();
    let ino = f.engine.create(APP, ROOT_INO, OsStr::new("prealloc"), 0o644, true).expect("create").ino;
    assert_eq!(f.engine.fallocate(ino, 0, 48 * MIB, 0), Err(Errno(libc::ENOSPC)), "48 MiB do not fit");
    f.engine.fallocate(ino, 0, 8 * MIB, libc::FALLOC_FL_KEEP_SIZE).expect("8 MiB fit");
    assert!(before - f.free_bytes() >= 8 * MIB, "the allocation is reserved until it is committed");
    f.engine.checkpoint().expect("checkpoint");

    let data = f.engine.create(APP, ROOT_INO, OsStr::new("data"), 0o644, true).expect("create").ino;
    let committed = f.free_bytes();
    f.engine.write(Some(APP), data, 0, &vec![1u8; 4 * MIB as usize]).expect("write");
    assert!(committed - f.free_bytes() >= 4 * MIB);
    let punch = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
    f.engine.fallocate(data, 0, 4 * MIB, punch).expect("punch");
    assert!(committed - f.free_bytes() < MIB, "punched pages need no blocks: {} reserved", committed - f.free_bytes());
    f.engine.checkpoint().expect("checkpoint");
    f.engine.shutdown().expect("shutdown");
}
