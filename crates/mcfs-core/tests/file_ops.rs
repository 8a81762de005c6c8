//! Times and space of the backing tree, and the file operations of issue
//! 10 through the engine's public API (in-memory backing store, manual
//! clock): exact times for every kind, holes kept and reported (`st_blocks`,
//! `SEEK_DATA`/`SEEK_HOLE`), punch-hole, zero-range, collapse and insert,
//! `O_TMPFILE` and `RENAME_WHITEOUT`.

use mcfs_core::backend::{mem_epoch, Backend, MemBackend, Op, RecordingBackend};
use mcfs_core::*;
use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

const ME: Caller = Caller { uid: 10001, gid: 10001, pid: 42 };
const PAGE: u64 = PAGE_SIZE;
const PUNCH: i32 = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;

struct Fixture {
    backend: Arc<MemBackend>,
    clock: Arc<ManualClock>,
    engine: Engine,
}

fn fixture() -> Fixture {
    fixture_on(MemBackend::new())
}

fn fixture_on(backend: MemBackend) -> Fixture {
    let backend = Arc::new(backend);
    let clock = Arc::new(ManualClock::new());
    let engine = Engine::start(backend.clone(), clock.clone(), Config::default()).expect("engine starts");
    Fixture { backend, clock, engine }
}

impl Fixture {
    fn create(&self, name: &str) -> Ino {
        let ino = self.engine.create(ME, ROOT_INO, OsStr::new(name), 0o644, true).expect("create").ino;
        self.engine.release(ino);
        ino
    }

    fn lookup(&self, name: &str) -> Ino {
        self.engine.lookup(ME, ROOT_INO, OsStr::new(name)).expect("lookup").ino
    }

    fn read_all(&self, ino: Ino) -> Vec<u8> {
        let size = self.engine.getattr(ino).unwrap().size;
        self.engine.read(ino, 0, size as u32).unwrap()
    }

    fn backing(&self, path: &str) -> Vec<u8> {
        let size = self.backend.stat(Path::new(path)).expect("in the backing store").size as usize;
        let mut buf = vec![0; size];
        assert_eq!(self.backend.read_at(Path::new(path), 0, &mut buf).unwrap(), size);
        buf
    }
}

/// `len` bytes that are never zero and differ by position (no period a
/// shift by whole pages could hide).
fn pattern(seed: u8, len: u64) -> Vec<u8> {
    (0..len).map(|i| ((i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40) as u8 ^ seed) | 1).collect()
}

/// Compares file contents, naming the first difference instead of printing them.
#[track_caller]
fn same(got: &[u8], want: &[u8], what: &str) {
    let at = got.iter().zip(want).position(|(g, w)| g != w);
    assert!(
        at.is_none() && got.len() == want.len(),
        "{what}: {} bytes, {} expected; first difference at {at:?}",
        got.len(),
        want.len()
    );
}

/// Regression: objects created but never written got the checkpoint's time.
#[test]
fn every_kind_reaches_the_backing_store_with_its_times_to_the_nanosecond() {
    let f = fixture();
    f.clock.advance(Duration::new(5, 123_456_789));
    let e = &f.engine;
    let dir = e.mkdir(ME, ROOT_INO, OsStr::new("d"), 0o755).unwrap().ino;
    f.create("empty");
    e.symlink(ME, ROOT_INO, OsStr::new("s"), OsStr::new("empty")).unwrap();
    e.mknod(ME, ROOT_INO, OsStr::new("q"), FileKind::Fifo, 0o600, 0).unwrap();
    e.checkpoint().unwrap();
    f.clock.advance(Duration::new(3, 7));
    // A directory whose entries change later gets that later time.
    e.mknod(ME, dir, OsStr::new("inner"), FileKind::File, 0o600, 0).unwrap();
    f.clock.advance(Duration::from_secs(60));
    e.checkpoint().unwrap();
    for name in ["d", "empty", "s", "q", "d/inner"] {
        let want = e.getattr(f.lookup_path(name)).unwrap();
        let got = f.backend.stat(Path::new(name)).unwrap();
        assert_eq!((got.mtime, got.atime), (want.mtime, want.atime), "{name}: backing vs mount");
        assert_ne!(got.mtime, mem_epoch(), "{name}: not the backing store's own time");
    }
    assert_eq!(f.backend.stat(Path::new("d")).unwrap().mtime, mem_epoch() + Duration::new(8, 123_456_796));
}

impl Fixture {
    fn lookup_path(&self, path: &str) -> Ino {
        path.split('/').fold(ROOT_INO, |dir, name| self.engine.lookup(ME, dir, OsStr::new(name)).unwrap().ino)
    }
}

/// Regression: `st_blocks` was derived from the size (2049 for a 1 MiB hole).
#[test]
fn st_blocks_counts_allocated_pages_only() {
    let f = fixture();
    let ino = f.create("sparse");
    f.engine.write(Some(ME), ino, 1 << 20, b"x").unwrap();
    assert_eq!(f.engine.getattr(ino).unwrap().blocks, 8, "one page holds data");
    f.engine.write(Some(ME), ino, 0, &[1; 8192]).unwrap();
    assert_eq!(f.engine.getattr(ino).unwrap().blocks, 24);
    f.engine.checkpoint().unwrap();
    assert_eq!(f.backend.stat(Path::new("sparse")).unwrap().blocks, 24, "the holes are kept in the backing store");
    f.engine.setattr(ME, ino, &SetAttr { size: Some(4097), ..SetAttr::default() }).unwrap();
    assert_eq!(f.engine.getattr(ino).unwrap().blocks, 16, "a shrink frees the pages past the end");
}

/// A file that predates the mount: its blocks and holes come from the
/// backing store, and every change since is merged in.
#[test]
fn seek_data_and_seek_hole_merge_the_backing_file_with_pending_changes() {
    let store = MemBackend::new();
    store.create(Path::new("f"), FileKind::File, 0o644, 0).unwrap();
    store.write_at(Path::new("f"), 0, &[7; 100]).unwrap();
    store.write_at(Path::new("f"), 5 * PAGE, &[7; 100]).unwrap();
    store.set_len(Path::new("f"), 12 * PAGE).unwrap();
    let f = fixture_on(store);
    let ino = f.lookup("f");
    let e = &f.engine;
    assert_eq!(e.getattr(ino).unwrap().blocks, 16);
    let seek = |offset: u64, whence: i32| e.lseek(ino, offset, whence);
    assert_eq!(seek(10, libc::SEEK_DATA), Ok(10));
    assert_eq!(seek(10, libc::SEEK_HOLE), Ok(PAGE));
    assert_eq!(seek(PAGE, libc::SEEK_DATA), Ok(5 * PAGE));
    e.write(Some(ME), ino, 9 * PAGE + 5, b"pending").unwrap();
    e.fallocate(ino, 0, PAGE, PUNCH).unwrap();
    assert_eq!(seek(0, libc::SEEK_DATA), Ok(5 * PAGE), "the punched page is a hole now");
    assert_eq!(seek(5 * PAGE, libc::SEEK_HOLE), Ok(6 * PAGE));
    assert_eq!(seek(6 * PAGE, libc::SEEK_DATA), Ok(9 * PAGE), "the pending write is data");
    assert_eq!(seek(9 * PAGE + 1, libc::SEEK_HOLE), Ok(10 * PAGE));
    assert_eq!(seek(10 * PAGE, libc::SEEK_DATA), Err(Errno::ENXIO), "no data up to the end");
    assert_eq!(seek(11 * PAGE, libc::SEEK_HOLE), Ok(11 * PAGE));
    assert_eq!(seek(12 * PAGE, libc::SEEK_HOLE), Err(Errno::ENXIO), "at the end");
    assert_eq!(seek(0, libc::SEEK_SET), Err(Errno::EINVAL));
    assert_eq!(e.getattr(ino).unwrap().blocks, 16);
    e.checkpoint().unwrap();
    assert_eq!(f.backend.data_extents(Path::new("f")).unwrap(), [5 * PAGE..6 * PAGE, 9 * PAGE..10 * PAGE]);
}

/// Punching holes in a file whose data is only in the backing store: reads
/// show zeros at once (the backing data is hidden, not read), the size
/// stays, and the backing file gets holes, not zero pages.
#[test]
fn punch_hole_hides_backing_data_until_it_commits_and_leaves_holes() {
    let f = fixture();
    let ino = f.create("f");
    let data = pattern(1, 5 * PAGE);
    f.engine.write(Some(ME), ino, 0, &data).unwrap();
    let f = f.restart(); // nothing of "f" is cached now
    let ino = f.lookup("f");
    f.engine.fallocate(ino, 100, 3 * PAGE, PUNCH).unwrap();
    let mut want = data.clone();
    want[100..(3 * PAGE + 100) as usize].fill(0);
    same(&f.read_all(ino), &want, "the mount shows the hole before it is committed");
    same(&f.backing("f"), &data, "the backing store has not changed yet");
    assert_eq!(f.engine.getattr(ino).unwrap().size, 5 * PAGE, "a punch keeps the size");
    f.engine.checkpoint().unwrap();
    same(&f.backing("f"), &want, "backing");
    assert_eq!(f.backend.data_extents(Path::new("f")).unwrap(), [0..PAGE, 3 * PAGE..5 * PAGE]);
    assert_eq!(f.engine.getattr(ino).unwrap().blocks, 24);
    assert_eq!(f.engine.fallocate(ino, 5 * PAGE, 10, PUNCH), Ok(()), "past the end: nothing to do");
}

impl Fixture {
    fn restart(self) -> Fixture {
        self.engine.shutdown().expect("clean shutdown");
        let engine = Engine::start(self.backend.clone(), self.clock.clone(), Config::default()).expect("restart");
        Fixture { backend: self.backend, clock: self.clock, engine }
    }
}

/// A punch in the open VCT drops the writes it covers and keeps the later
/// bytes of partly punched pages: the committed file is the file at close.
#[test]
fn writes_around_a_punch_in_one_vct_commit_as_the_mount_shows_them() {
    let f = fixture();
    let ino = f.create("f");
    let e = &f.engine;
    e.write(Some(ME), ino, 0, &pattern(2, 4 * PAGE)).unwrap();
    e.fallocate(ino, PAGE + 10, 2 * PAGE, PUNCH).unwrap();
    e.write(Some(ME), ino, PAGE + 20, b"after the punch").unwrap();
    e.write(Some(ME), ino, 2 * PAGE, b"in a punched page").unwrap();
    let shown = f.read_all(ino);
    e.checkpoint().unwrap();
    same(&f.backing("f"), &shown, "backing");
}

/// Regression (fsx seed 10403041508935043098): a zero-range that starts
/// past the end of file, in the page holding it, is replayed on the backing
/// file after that page's write, whose content is taken at close: bytes
/// written there after the zero-range must survive it.
#[test]
fn a_zero_range_past_the_end_keeps_later_writes_to_the_end_page() {
    for keep in [0, libc::FALLOC_FL_KEEP_SIZE] {
        let f = fixture();
        let ino = f.create("f");
        let e = &f.engine;
        e.write(Some(ME), ino, 0, &pattern(4, PAGE + 100)).unwrap();
        e.fallocate(ino, PAGE + 3000, 3 * PAGE, libc::FALLOC_FL_ZERO_RANGE | keep).unwrap();
        e.write(Some(ME), ino, PAGE + 2000, &pattern(5, 2000)).unwrap();
        let shown = f.read_all(ino);
        e.checkpoint().unwrap();
        same(&f.backing("f"), &shown, &format!("backing (zero-range mode {keep:#x})"));
    }
}

#[test]
fn zero_range_extends_unless_keep_size_and_reserves_without_data() {
    let f = fixture();
    let ino = f.create("f");
    let e = &f.engine;
    e.write(Some(ME), ino, 0, &pattern(3, 2 * PAGE)).unwrap();
    e.fallocate(ino, PAGE, 4 * PAGE, libc::FALLOC_FL_ZERO_RANGE | libc::FALLOC_FL_KEEP_SIZE).unwrap();
    assert_eq!(e.getattr(ino).unwrap().size, 2 * PAGE);
    e.fallocate(ino, 10, 3 * PAGE, libc::FALLOC_FL_ZERO_RANGE).unwrap();
    let attr = e.getattr(ino).unwrap();
    assert_eq!(attr.size, 3 * PAGE + 10);
    assert_eq!(attr.blocks, 5 * 8, "page 0 holds data, pages 1 to 4 are reserved");
    assert_eq!(e.lseek(ino, 0, libc::SEEK_HOLE), Ok(PAGE), "reserved pages are holes to SEEK_HOLE");
    let mut want = pattern(3, 10);
    want.resize((3 * PAGE + 10) as usize, 0);
    same(&f.read_all(ino), &want, "mount");
    e.fallocate(ino, 0, 8 * PAGE, 0).unwrap();
    assert_eq!(e.getattr(ino).unwrap().size, 8 * PAGE, "mode 0 extends");
    e.checkpoint().unwrap();
    want.resize(8 * PAGE as usize, 0);
    same(&f.backing("f"), &want, "backing");
}

#[test]
fn fallocate_refuses_what_linux_refuses() {
    let f = fixture();
    let ino = f.create("f");
    let e = &f.engine;
    e.write(Some(ME), ino, 0, &pattern(4, 3 * PAGE)).unwrap();
    let dir = e.mkdir(ME, ROOT_INO, OsStr::new("d"), 0o755).unwrap().ino;
    let fifo = e.mknod(ME, ROOT_INO, OsStr::new("q"), FileKind::Fifo, 0o600, 0).unwrap().ino;
    let collapse = libc::FALLOC_FL_COLLAPSE_RANGE;
    let insert = libc::FALLOC_FL_INSERT_RANGE;
    let cases = [
        (ino, 0, 0, 0, Errno::EINVAL),
        (ino, 0, 10, libc::FALLOC_FL_PUNCH_HOLE, Errno::ENOTSUP),
        (ino, 0, 10, PUNCH | libc::FALLOC_FL_ZERO_RANGE, Errno::ENOTSUP),
        (ino, 0, PAGE, collapse | libc::FALLOC_FL_KEEP_SIZE, Errno::EINVAL),
        (ino, 1, PAGE, collapse, Errno::EINVAL),
        (ino, PAGE, 2 * PAGE, collapse, Errno::EINVAL),
        (ino, 0, 100, insert, Errno::EINVAL),
        (ino, 3 * PAGE, PAGE, insert, Errno::EINVAL),
        (ino, 1 << 62, 1 << 62, 0, Errno::EFBIG),
        (dir, 0, 10, 0, Errno::EISDIR),
        (fifo, 0, 10, 0, Errno::ESPIPE),
    ];
    for (ino, offset, len, mode, errno) in cases {
        assert_eq!(e.fallocate(ino, offset, len, mode), Err(errno), "offset {offset} len {len} mode {mode:#x}");
    }
    same(&f.read_all(ino), &pattern(4, 3 * PAGE), "nothing refused changed the file");
}

#[test]
fn collapse_and_insert_shift_the_tail_and_keep_its_holes() {
    let f = fixture();
    let ino = f.create("f");
    let e = &f.engine;
    let mut want = pattern(5, 6 * PAGE + 100);
    e.write(Some(ME), ino, 0, &want).unwrap();
    e.fallocate(ino, 4 * PAGE, PAGE, PUNCH).unwrap();
    want[4 * PAGE as usize..5 * PAGE as usize].fill(0);
    e.fallocate(ino, PAGE, 2 * PAGE, libc::FALLOC_FL_COLLAPSE_RANGE).unwrap();
    want.drain(PAGE as usize..3 * PAGE as usize);
    same(&f.read_all(ino), &want, "after the collapse");
    assert_eq!(e.lseek(ino, 0, libc::SEEK_HOLE), Ok(2 * PAGE), "the punched page moved down, a hole still");
    e.fallocate(ino, PAGE, 3 * PAGE, libc::FALLOC_FL_INSERT_RANGE).unwrap();
    want.splice(PAGE as usize..PAGE as usize, vec![0; 3 * PAGE as usize]);
    same(&f.read_all(ino), &want, "after the insert");
    assert_eq!(e.getattr(ino).unwrap().size, want.len() as u64);
    assert_eq!(e.lseek(ino, PAGE, libc::SEEK_DATA), Ok(4 * PAGE), "the inserted range is a hole");
    e.checkpoint().unwrap();
    same(&f.backing("f"), &want, "backing");
}

/// An O_TMPFILE file lives as an orphan until it is linked into place;
/// one closed unnamed within a checkpoint leaves no trace at all.
#[test]
fn tmpfile_is_linked_into_place_or_vanishes() {
    let backend = Arc::new(RecordingBackend::new(MemBackend::new()));
    let clock = Arc::new(ManualClock::new());
    let e = Engine::start(backend.clone(), clock, Config::default()).unwrap();
    let tmp = e.tmpfile(ME, ROOT_INO, 0o600).unwrap();
    assert_eq!((tmp.nlink, tmp.kind, tmp.perm), (0, FileKind::File, 0o600));
    e.write(Some(ME), tmp.ino, 0, b"written before it had a name").unwrap();
    e.checkpoint().unwrap();
    let orphans = |b: &RecordingBackend| b.list_dir(Path::new(".mcfs/orphans")).unwrap().len();
    assert_eq!(orphans(&backend), 1, "kept as an orphan while unnamed");
    assert!(e.readdir(ROOT_INO, 0, usize::MAX).unwrap().is_empty(), "no name shows");
    let linked = e.link(ME, tmp.ino, ROOT_INO, OsStr::new("final")).unwrap();
    assert_eq!(linked.nlink, 1);
    e.release(tmp.ino);
    e.checkpoint().unwrap();
    let mut buf = [0; 28];
    backend.read_at(Path::new("final"), 0, &mut buf).unwrap();
    assert_eq!(&buf, b"written before it had a name");
    assert_eq!(orphans(&backend), 0, "moved into place, not linked twice");

    let ops_before = backend.op_count();
    let gone = e.tmpfile(ME, ROOT_INO, 0o600).unwrap().ino;
    e.write(Some(ME), gone, 0, b"scratch").unwrap();
    e.release(gone);
    e.forget(gone, 1);
    e.checkpoint().unwrap();
    let ops: Vec<Op> = (ops_before..backend.op_count()).filter_map(|i| backend.op(i)).collect();
    let user_data = |op: &Op| match op {
        Op::Create { .. } => true,
        Op::Write { path, .. } => !path.starts_with(".mcfs"),
        _ => false,
    };
    assert!(
        !ops.iter().any(user_data),
        "a tmpfile born and closed in one checkpoint reached the backing store: {ops:?}"
    );
    assert_eq!(orphans(&backend), 0);
}

/// RENAME_WHITEOUT: the rename, and a character device 0:0 at the old name.
#[test]
fn rename_whiteout_leaves_a_whiteout_at_the_old_name() {
    let f = fixture();
    let e = &f.engine;
    let ino = f.create("a");
    e.write(Some(ME), ino, 0, b"moved").unwrap();
    let result = e.rename(ME, ROOT_INO, OsStr::new("a"), ROOT_INO, OsStr::new("b"), RenameMode::Whiteout);
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        assert_eq!(result, Err(Errno::EPERM), "without root the backing store cannot hold a device node");
        return;
    }
    result.unwrap();
    let whiteout = e.getattr(f.lookup("a")).unwrap();
    assert_eq!((whiteout.kind, whiteout.rdev, whiteout.perm, whiteout.uid), (FileKind::CharDev, 0, 0, ME.uid));
    assert_eq!(f.read_all(f.lookup("b")), b"moved");
    let noreplace = RenameMode::WhiteoutNoReplace;
    assert_eq!(e.rename(ME, ROOT_INO, OsStr::new("b"), ROOT_INO, OsStr::new("a"), noreplace), Err(Errno::EEXIST));
    e.checkpoint().unwrap();
    let a = f.backend.stat(Path::new("a")).unwrap();
    assert_eq!((a.kind, a.rdev, a.perm), (FileKind::CharDev, 0, 0));
    assert_eq!(f.backing("b"), b"moved");
}
