//! A read from a front end with its own page cache (`Engine::read_streamed`)
//! that misses a long run of pages (`file_io::STREAM_PAGES`) is served from
//! the backing store straight into the reply and not cached (a plain `read`
//! caches it: the simulator and FastTrack's reclaim rely on that);
//! it still shows everything the mount shows: cached (dirty) pages, pending
//! punched holes and truncates, and the file's end. Manual clock, memory
//! backing store.

use mcfs_core::backend::{Backend, MemBackend};
use mcfs_core::*;
use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;

const ME: Caller = Caller { uid: 10001, gid: 10001, pid: 42 };
const PAGE: u64 = PAGE_SIZE;
const PUNCH: i32 = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
/// Pages of the file that predates the mount: several streamed runs.
const PAGES: u64 = 300;

/// Bytes that are never zero and differ by position.
fn pattern(len: u64) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8 + 1).collect()
}

/// An engine over a backing store holding `f` (`PAGES` pages of `pattern`).
fn mounted() -> (Engine, Ino, Vec<u8>) {
    let backend = Arc::new(MemBackend::new());
    let data = pattern(PAGES * PAGE);
    backend.create(Path::new("f"), FileKind::File, 0o644, 0).unwrap();
    backend.write_at(Path::new("f"), 0, &data).unwrap();
    let engine = Engine::start(backend, Arc::new(ManualClock::new()), Config::default()).expect("engine starts");
    let ino = engine.lookup(ME, ROOT_INO, OsStr::new("f")).expect("lookup").ino;
    (engine, ino, data)
}

fn cached_bytes(engine: &Engine) -> u64 {
    engine.stats().cache_total_bytes
}

#[test]
fn a_long_miss_is_read_whole_and_not_cached_a_short_one_is_cached() {
    let (e, ino, data) = mounted();
    let got = e.read_streamed(ino, 0, (256 * PAGE) as u32).unwrap();
    assert!(got == data[..(256 * PAGE) as usize], "a 1 MiB read returns the backing data");
    assert_eq!(cached_bytes(&e), 0, "streamed, not cached");
    // Unaligned, across the file's end: fewer bytes, from the middle of a page.
    let got = e.read_streamed(ino, 100 * PAGE + 123, (250 * PAGE) as u32).unwrap();
    assert!(got == data[(100 * PAGE + 123) as usize..], "up to the end of the file");
    assert_eq!(e.read_streamed(ino, 5 * PAGE, 100).unwrap(), data[(5 * PAGE) as usize..(5 * PAGE + 100) as usize]);
    assert_eq!(cached_bytes(&e), PAGE, "a short read fills the cache as before");
    assert!(e.read(ino, 0, (256 * PAGE) as u32).unwrap() == data[..(256 * PAGE) as usize]);
    assert_eq!(cached_bytes(&e), 256 * PAGE, "a plain read caches what it reads");
    e.check_invariants().unwrap();
}

#[test]
fn a_streamed_read_shows_cached_pages_pending_holes_and_truncates() {
    let (e, ino, mut want) = mounted();
    // A dirty page in the middle of the run, a punched hole not yet
    // committed, and a truncate then an extension: the backing store still
    // has the old bytes of all three.
    e.write(Some(ME), ino, 40 * PAGE + 7, b"new bytes").unwrap();
    want[(40 * PAGE + 7) as usize..(40 * PAGE + 16) as usize].copy_from_slice(b"new bytes");
    e.fallocate(ino, 70 * PAGE + 5, 50 * PAGE, PUNCH).unwrap();
    want[(70 * PAGE + 5) as usize..(120 * PAGE + 5) as usize].fill(0);
    e.setattr(ME, ino, &SetAttr { size: Some(200 * PAGE + 9), ..SetAttr::default() }).unwrap();
    e.setattr(ME, ino, &SetAttr { size: Some(PAGES * PAGE), ..SetAttr::default() }).unwrap();
    want[(200 * PAGE + 9) as usize..].fill(0);
    e.check_invariants().unwrap();
    let got = e.read_streamed(ino, 0, (PAGES * PAGE) as u32).unwrap();
    assert_eq!(got.len(), want.len());
    let first_difference = got.iter().zip(&want).position(|(a, b)| a != b);
    assert_eq!(first_difference, None, "the read shows what the mount holds");
    // A plain read caches the run: backing data up to the cut, zeros past it.
    let (from, to) = (195 * PAGE, 215 * PAGE);
    assert!(e.read(ino, from, (to - from) as u32).unwrap() == want[from as usize..to as usize], "cached read");
    e.check_invariants().unwrap();
    e.checkpoint().unwrap();
    assert!(e.read_streamed(ino, 0, (PAGES * PAGE) as u32).unwrap() == want, "and the same once committed");
}
