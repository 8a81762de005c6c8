//! FastTrack's page reclaimer (seed 001 §4.3) through the engine's public
//! API, over an in-memory backing store that counts the bytes read from each
//! file (a cache miss reads the backing store, a hit does not). App A is in
//! the foreground and re-reads a hot file while background app B streams or
//! writes more than the cache holds: with `fasttrack.reclaim` on, A's pages
//! stay cached (B's clean pages go first, then B's dirty pages after a
//! checkpoint of B alone); with it off, plain LRU evicts A's pages.

use mcfs_core::backend::{BackendAttr, BackendLimits, MemBackend};
use mcfs_core::*;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

const A: Caller = Caller { uid: 10001, gid: 0, pid: 1 };
const B: Caller = Caller { uid: 10002, gid: 0, pid: 2 };
/// A system service (uid below 10000): never spared by reclaim.
const SERVICE: Caller = Caller { uid: 1000, gid: 0, pid: 3 };

const PAGE: usize = PAGE_SIZE as usize;
const CACHE_PAGES: usize = 64;
const HOT_LEN: usize = 16 * PAGE;
/// Four times the cache.
const STREAM_LEN: usize = 4 * CACHE_PAGES * PAGE;
/// Twice the cache.
const WRITE_LEN: usize = 2 * CACHE_PAGES * PAGE;
const CHUNK: usize = 128 * 1024;

/// A `MemBackend` that counts the bytes read from each path.
struct CountingBackend {
    inner: MemBackend,
    read: Mutex<HashMap<PathBuf, u64>>,
}

impl Backend for CountingBackend {
    fn stat(&self, path: &Path) -> io::Result<BackendAttr> {
        self.inner.stat(path)
    }
    fn list_dir(&self, path: &Path) -> io::Result<Vec<(OsString, FileKind)>> {
        self.inner.list_dir(path)
    }
    fn read_at(&self, path: &Path, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read_at(path, offset, buf)?;
        *self.read.lock().entry(path.to_owned()).or_default() += n as u64;
        Ok(n)
    }
    fn write_at(&self, path: &Path, offset: u64, data: &[u8]) -> io::Result<()> {
        self.inner.write_at(path, offset, data)
    }
    fn set_len(&self, path: &Path, size: u64) -> io::Result<()> {
        self.inner.set_len(path, size)
    }
    fn create(&self, path: &Path, kind: FileKind, perm: u32, rdev: u32) -> io::Result<()> {
        self.inner.create(path, kind, perm, rdev)
    }
    fn symlink(&self, target: &OsStr, path: &Path) -> io::Result<()> {
        self.inner.symlink(target, path)
    }
    fn read_link(&self, path: &Path) -> io::Result<OsString> {
        self.inner.read_link(path)
    }
    fn link(&self, existing: &Path, new: &Path) -> io::Result<()> {
        self.inner.link(existing, new)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.inner.remove_file(path)
    }
    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        self.inner.remove_dir(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to)
    }
    fn set_owner(&self, path: &Path, uid: u32, gid: u32) -> io::Result<()> {
        self.inner.set_owner(path, uid, gid)
    }
    fn set_perm(&self, path: &Path, perm: u32) -> io::Result<()> {
        self.inner.set_perm(path, perm)
    }
    fn set_times(&self, path: &Path, atime: SystemTime, mtime: SystemTime) -> io::Result<()> {
        self.inner.set_times(path, atime, mtime)
    }
    fn get_xattr(&self, path: &Path, name: &OsStr) -> io::Result<Option<Vec<u8>>> {
        self.inner.get_xattr(path, name)
    }
    fn list_xattr(&self, path: &Path) -> io::Result<Vec<OsString>> {
        self.inner.list_xattr(path)
    }
    fn set_xattr(&self, path: &Path, name: &OsStr, value: &[u8]) -> io::Result<()> {
        self.inner.set_xattr(path, name, value)
    }
    fn remove_xattr(&self, path: &Path, name: &OsStr) -> io::Result<()> {
        self.inner.remove_xattr(path, name)
    }
    fn sync(&self) -> io::Result<()> {
        self.inner.sync()
    }
    fn statfs(&self) -> io::Result<FsStats> {
        self.inner.statfs()
    }
    fn limits(&self) -> BackendLimits {
        self.inner.limits()
    }
    fn check_xattrs(&self, kind: FileKind, xattrs: &[(&OsStr, &[u8])]) -> io::Result<()> {
        self.inner.check_xattrs(kind, xattrs)
    }
    fn fallocate(&self, path: &Path, mode: FallocMode, offset: u64, len: u64) -> io::Result<()> {
        self.inner.fallocate(path, mode, offset, len)
    }
    fn data_extents(&self, path: &Path) -> io::Result<Vec<std::ops::Range<u64>>> {
        self.inner.data_extents(path)
    }
}

/// Distinct bytes per file and offset, so a misplaced page shows.
fn pattern(seed: u8, len: usize) -> Vec<u8> {
    (0..len).map(|i| ((i as u32).wrapping_mul(2_654_435_761).rotate_right(13) as u8) ^ seed).collect()
}

struct Fixture {
    backend: Arc<CountingBackend>,
    engine: Engine,
}

/// A backing store with `hot` (the hot app's), `stream` and `out` (B's)
/// and `note` (A's), and an engine with a 64-page cache over it.
fn fixture(reclaim: bool, hot_owner: Caller) -> Fixture {
    let backend = Arc::new(CountingBackend { inner: MemBackend::new(), read: Mutex::new(HashMap::new()) });
    let files = [
        ("hot", hot_owner, pattern(1, HOT_LEN)),
        ("stream", B, pattern(2, STREAM_LEN)),
        ("out", B, Vec::new()),
        ("note", A, Vec::new()),
    ];
    for (name, owner, data) in files {
        let path = Path::new(name);
        backend.create(path, FileKind::File, 0o644, 0).expect("create");
        backend.write_at(path, 0, &data).expect("write");
        backend.set_owner(path, owner.uid, owner.gid).expect("chown");
    }
    let mut config = Config {
        cache_size: (CACHE_PAGES * PAGE) as u64,
        // Reclaim, not the dirty high watermark, must decide what goes.
        dirty_high_ratio: 1.0,
        ..Config::default()
    };
    config.fasttrack.reclaim = reclaim;
    let engine = Engine::start(backend.clone(), Arc::new(ManualClock::new()), config).expect("engine starts");
    Fixture { backend, engine }
}

impl Fixture {
    fn ino(&self, name: &str) -> Ino {
        self.engine.lookup(A, ROOT_INO, OsStr::new(name)).expect("lookup").ino
    }

    /// Bytes read from the backing file `name` so far.
    fn backing_reads(&self, name: &str) -> u64 {
        self.backend.read.lock().get(Path::new(name)).copied().unwrap_or(0)
    }

    /// Reads a whole file as `who`, one admitted request per chunk.
    fn read_all(&self, who: Caller, name: &str) -> Vec<u8> {
        let ino = self.ino(name);
        let mut out = Vec::new();
        loop {
            let _admitted = self.engine.admit(who);
            let got = self.engine.read(ino, out.len() as u64, CHUNK as u32).expect("read");
            if got.is_empty() {
                return out;
            }
            out.extend_from_slice(&got);
        }
    }

    /// Writes `data` as `who`, one admitted request per chunk.
    fn write_all(&self, who: Caller, name: &str, data: &[u8]) {
        let ino = self.ino(name);
        for (i, chunk) in data.chunks(16 * 1024).enumerate() {
            let _admitted = self.engine.admit(who);
            self.engine.write(Some(who), ino, (i * 16 * 1024) as u64, chunk).expect("write");
        }
    }

    /// Backing bytes of `name` (what is committed).
    fn backing(&self, name: &str) -> Vec<u8> {
        let len = self.backend.stat(Path::new(name)).expect("stat").size as usize;
        let mut buf = vec![0; len];
        let n = self.backend.inner.read_at(Path::new(name), 0, &mut buf).expect("read");
        assert_eq!(n, len);
        buf
    }

    fn app(&self, who: Caller) -> AppStats {
        self.engine.stats().apps.get(&format!("uid:{}", who.uid)).cloned().unwrap_or_default()
    }

    /// The cache is within its limit and one fill from the backing store.
    fn assert_bounded(&self) {
        self.assert_within(32 * PAGE_SIZE);
    }

    fn assert_within(&self, slack: u64) {
        let s = self.engine.stats();
        assert!(
            s.cache_total_bytes <= s.cache_limit_bytes + slack,
            "cache {} over {} + {slack}",
            s.cache_total_bytes,
            s.cache_limit_bytes
        );
    }
}

/// The hot app reads its file, B streams four caches' worth, the hot app
/// reads its file again; returns the bytes that second read took from the
/// backing store.
fn hot_reread_after_stream(reclaim: bool, hot_app: Caller) -> u64 {
    let f = fixture(reclaim, hot_app);
    f.engine.set_foreground(Some(&format!("uid:{}", hot_app.uid))).expect("foreground");
    assert_eq!(f.read_all(hot_app, "hot"), pattern(1, HOT_LEN));
    assert_eq!(f.backing_reads("hot"), HOT_LEN as u64, "the first read misses");
    assert_eq!(f.read_all(B, "stream"), pattern(2, STREAM_LEN), "the stream reads back byte-exact");
    assert_eq!(f.backing_reads("stream"), STREAM_LEN as u64);
    f.assert_bounded();
    let before = f.backing_reads("hot");
    assert_eq!(f.read_all(hot_app, "hot"), pattern(1, HOT_LEN));
    f.backing_reads("hot") - before
}

#[test]
fn a_background_stream_does_not_evict_the_foreground_apps_pages() {
    assert_eq!(hot_reread_after_stream(true, A), 0, "PR on: every page of A's hot file is still cached");
    assert_eq!(hot_reread_after_stream(false, A), HOT_LEN as u64, "PR off: LRU evicted all of A's pages");
}

#[test]
fn a_system_app_in_front_is_not_spared() {
    assert_eq!(hot_reread_after_stream(true, SERVICE), HOT_LEN as u64, "system apps count as background for reclaim");
}

#[test]
fn no_foreground_app_means_plain_lru() {
    let f = fixture(true, A);
    f.read_all(A, "hot");
    f.read_all(B, "stream");
    let before = f.backing_reads("hot");
    f.read_all(A, "hot");
    assert_eq!(f.backing_reads("hot") - before, HOT_LEN as u64);
}

/// What the write scenario left: bytes A's second read of its hot file took
/// from the backing store, and A's uncommitted bytes after B's writes.
struct AfterWrites {
    hot_reread: u64,
    a_stale_bytes: u64,
}

/// A reads its hot file and leaves one page of `note` uncommitted; B writes
/// twice the cache into `out`; B reads `out` back and A its hot file.
fn hot_reread_after_writes(reclaim: bool) -> AfterWrites {
    let f = fixture(reclaim, A);
    f.engine.set_foreground(Some("uid:10001")).expect("foreground");
    f.read_all(A, "hot");
    f.write_all(A, "note", &pattern(3, PAGE));
    let data = pattern(4, WRITE_LEN);
    f.write_all(B, "out", &data);
    f.assert_bounded();
    let a_stale_bytes = f.app(A).stale_bytes;
    let b = f.app(B);
    assert!(b.vcts_committed >= 1 && b.bytes_flushed > 0, "B's dirty pages were committed: {b:?}");
    let committed = f.backing("out");
    assert!(!committed.is_empty(), "B's writes reached the backing store");
    assert_eq!(committed[..], data[..committed.len()], "what B committed is a byte-exact prefix");
    assert_eq!(f.read_all(B, "out"), data, "B reads its writes back byte-exact");
    assert!(f.backing_reads("out") > 0, "B's committed pages were dropped and read back from the backing store");
    let before = f.backing_reads("hot");
    assert_eq!(f.read_all(A, "hot"), pattern(1, HOT_LEN));
    let hot_reread = f.backing_reads("hot") - before;
    f.engine.checkpoint().expect("checkpoint");
    assert_eq!(f.backing("out"), data);
    assert_eq!(f.backing("note"), pattern(3, PAGE));
    AfterWrites { hot_reread, a_stale_bytes }
}

#[test]
fn background_dirty_pages_are_committed_and_dropped_before_foreground_clean_pages() {
    let on = hot_reread_after_writes(true);
    assert_eq!(on.hot_reread, 0, "PR on: A's clean pages stayed while B's dirty ones went");
    assert_eq!(on.a_stale_bytes, PAGE_SIZE, "the background checkpoint left A's open VCT alone");
    let off = hot_reread_after_writes(false);
    assert_eq!(off.hot_reread, HOT_LEN as u64, "PR off: A's clean pages went first");
    assert_eq!(off.a_stale_bytes, 0, "PR off: the memory checkpoint committed every app");
}

/// B reads A's uncommitted pages, so they are B's (background) dirty pages
/// held by A's open VCT: a background checkpoint cannot free them, and the
/// writer then commits everything rather than overshoot the cache.
#[test]
fn a_background_checkpoint_that_frees_too_little_is_followed_by_a_full_one() {
    let f = fixture(true, A);
    f.engine.set_foreground(Some("uid:10001")).expect("foreground");
    let note = pattern(3, 56 * PAGE);
    f.write_all(A, "note", &note);
    assert_eq!(f.app(A).stale_bytes, note.len() as u64);
    assert_eq!(f.read_all(B, "note"), note);
    let out = pattern(4, 16 * PAGE);
    let ino = f.ino("out");
    {
        let _admitted = f.engine.admit(B);
        f.engine.write(Some(B), ino, 0, &out).expect("write one segment");
    }
    f.assert_within(0); // a writer never overshoots
    assert_eq!(f.app(A).stale_bytes, 0, "the full checkpoint committed A's open VCT too");
    assert_eq!(f.backing("note"), note);
    assert_eq!(f.read_all(B, "out"), out);
}

/// Reads cannot wait for a checkpoint. With B's dirty pages in the cache,
/// A's long read takes A's own older pages, and B's long read takes B's
/// clean pages, so the cache stays within one fill of its limit and B's
/// read leaves A's latest pages cached.
#[test]
fn reads_beside_background_dirty_pages_stay_within_one_fill() {
    let f = fixture(true, A);
    f.engine.set_foreground(Some("uid:10001")).expect("foreground");
    let out = pattern(4, 32 * PAGE);
    f.write_all(B, "out", &out);
    assert_eq!(f.read_all(A, "stream"), pattern(2, STREAM_LEN));
    f.assert_bounded();
    assert_eq!(f.read_all(A, "hot"), pattern(1, HOT_LEN));
    assert_eq!(f.read_all(B, "stream"), pattern(2, STREAM_LEN));
    f.assert_bounded();
    let before = f.backing_reads("hot");
    assert_eq!(f.read_all(A, "hot"), pattern(1, HOT_LEN));
    assert_eq!(f.backing_reads("hot"), before, "B's read took none of A's pages");
    assert_eq!(f.read_all(B, "out"), out);
}

/// The foreground app never waits for background apps' dirty data: with the
/// cache full of B's dirty pages, A's write commits none of them (it takes
/// A's own least recently used clean pages instead), and the background
/// thread commits B's pages.
#[test]
fn a_foreground_writer_leaves_background_dirty_pages_to_the_background_thread() {
    let f = fixture(true, A);
    f.engine.set_foreground(Some("uid:10001")).expect("foreground");
    assert_eq!(f.read_all(A, "hot"), pattern(1, HOT_LEN));
    let out = pattern(4, CACHE_PAGES * PAGE - HOT_LEN - 4 * PAGE);
    f.write_all(B, "out", &out);
    let b_committed = f.app(B).vcts_committed;
    let note = pattern(3, 8 * PAGE);
    f.write_all(A, "note", &note);
    assert_eq!(f.app(B).vcts_committed, b_committed, "A's write committed none of B's data");
    let s = f.engine.stats();
    assert!(s.cache_total_bytes <= s.cache_limit_bytes, "A made room with its own clean pages");
    f.engine.tick();
    assert!(f.app(B).vcts_committed > b_committed, "the background thread committed B's pages");
    assert_eq!(f.backing("out"), out);
    assert_eq!(f.app(A).stale_bytes, note.len() as u64, "and left A's open VCT alone");
    assert_eq!(f.read_all(A, "note"), note);
}

/// The foreground app writes past the cache limit rather than wait for the
/// background apps' commit (its overshoot); once everything is committed,
/// the pages that became clean go at once, not at the next fill, so the
/// cache is back within its limit and stays there while nothing happens.
#[test]
fn the_foreground_writers_overshoot_ends_with_its_commit() {
    let f = fixture(true, A);
    f.engine.set_foreground(Some("uid:10001")).expect("foreground");
    f.write_all(B, "out", &pattern(4, 32 * PAGE));
    let note = pattern(3, 80 * PAGE);
    f.write_all(A, "note", &note);
    let s = f.engine.stats();
    assert!(s.cache_total_bytes > s.cache_limit_bytes + 32 * PAGE_SIZE, "the foreground writer overshoots");
    f.engine.checkpoint().expect("checkpoint");
    f.assert_within(0);
    assert_eq!(f.engine.check_invariants(), Ok(()));
    assert_eq!(f.read_all(A, "note"), note);
}
