//! An fsx-style exerciser (after xfstests' fsx) on a real mcfs mount with a
//! tiny cache (reclaim and copy-on-write all the time) and tiny staleness
//! (VCTs close and checkpoints run every few milliseconds): random reads,
//! writes (aligned or not, crossing pages), mmap reads, mmap writes with
//! msync, truncates up and down, punch-holes, zero-ranges, fallocates, and
//! SEEK_DATA/SEEK_HOLE, each checked against an in-memory model of the file
//! right after it: `st_size`, the whole file read back (through an
//! `O_DIRECT` descriptor, so the daemon serves it, not the kernel's page
//! cache), `st_blocks` at least the pages holding data. At the end the
//! mount is unmounted and the backing file must equal the model byte for
//! byte. Collapse-range and insert-range are tried too: the kernel refuses
//! them for every FUSE file system (EOPNOTSUPP), and then nothing changes.
//!
//! `MCFS_FSX_SEED` replays a run (the seed is printed), `MCFS_FSX_OPS` sets
//! its length.
//!
//! A second test is the outside testers' repro for holes: a sparse file
//! reports its real `st_blocks` and its holes through the mount, and keeps
//! them in the backing store.

mod common;

use common::{Daemon, Dirs};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

const CONFIG: &str = "\
cache_size = 262144
max_stale_bytes = 65536
max_stale_seconds = 0.005
writeback_interval_seconds = 0.005
checkpoint_segment_bytes = 65536
";
const PAGE: u64 = 4096;
/// The file stays below this: twice the cache.
const MAX_FILE: u64 = 512 * 1024;
const DEFAULT_OPS: usize = 3000;
/// Operations shown when a check fails.
const HISTORY: usize = 40;

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|v| v.trim().parse().unwrap_or_else(|_| panic!("{name}={v:?} is not a number")))
}

/// The file under test, its model, and what happened to it lately.
struct Fsx {
    file: File,
    /// Opened with `O_DIRECT`: reads reach the daemon.
    direct: File,
    model: Vec<u8>,
    rng: StdRng,
    history: VecDeque<String>,
    ops: usize,
    seed: u64,
    mode: Mode,
}

impl Fsx {
    fn note(&mut self, what: String) {
        self.ops += 1;
        if self.history.len() == HISTORY {
            self.history.pop_front();
        }
        self.history.push_back(format!("{}: {what}", self.ops));
    }

    #[track_caller]
    fn fail(&self, why: String) -> ! {
        let history: Vec<&str> = self.history.iter().map(String::as_str).collect();
        panic!("fsx (MCFS_FSX_SEED={}) op {}: {why}\nlast operations:\n  {}", self.seed, self.ops, history.join("\n  "))
    }

    #[track_caller]
    fn ok<T>(&self, what: &str, result: io::Result<T>) -> T {
        result.unwrap_or_else(|e| self.fail(format!("{what}: {e}")))
    }

    fn size(&self) -> u64 {
        self.model.len() as u64
    }

    fn data(&mut self, len: u64) -> Vec<u8> {
        (0..len).map(|_| self.rng.gen::<u8>() | 1).collect()
    }

    /// An offset and length: page-aligned now and then, crossing pages,
    /// beyond the end now and then, within `MAX_FILE`.
    fn range(&mut self, max_len: u64) -> (u64, u64) {
        let r = &mut self.rng;
        let limit = (self.model.len() as u64 + 2 * PAGE).min(MAX_FILE - 1);
        let (offset, len) = match r.gen_range(0..4) {
            0 => (r.gen_range(0..limit / PAGE + 1) * PAGE, PAGE * r.gen_range(1..=max_len.div_ceil(PAGE))),
            // Just below one of the first page boundaries, crossing it.
            1 => (r.gen_range(1..8) * PAGE - r.gen_range(1..64), r.gen_range(2..256)),
            _ => (r.gen_range(0..=limit), r.gen_range(1..=max_len)),
        };
        let offset = offset.min(MAX_FILE - 1);
        (offset, len.clamp(1, MAX_FILE - offset))
    }

    fn step(&mut self) {
        match self.rng.gen_range(0..100) {
            0..=14 => self.read(),
            15..=34 => self.write(),
            35..=44 => self.map_read(),
            45..=54 => self.map_write(),
            55..=63 => self.truncate(),
            64..=72 => self.punch(),
            73..=79 => self.zero_range(),
            80..=86 => self.allocate(),
            87..=92 => self.seek(),
            93..=95 => self.shift(),
            _ => {
                self.note("fsync".into());
                self.ok("fsync", self.file.sync_all());
            }
        }
        self.check();
    }

    /// A range of at most 64 KiB inside the file, if it has any bytes.
    fn inside(&mut self) -> Option<(u64, u64)> {
        if self.model.is_empty() {
            return None;
        }
        let offset = self.rng.gen_range(0..self.size());
        Some((offset, self.rng.gen_range(1..=(self.size() - offset).min(64 * 1024))))
    }

    fn read(&mut self) {
        let Some((offset, len)) = self.inside() else { return };
        self.note(format!("read @{offset}+{len}"));
        let mut buf = vec![0; len as usize];
        self.ok("read", self.file.read_exact_at(&mut buf, offset));
        self.same(&buf, offset, "read");
    }

    fn write(&mut self) {
        let (offset, len) = self.range(48 * 1024);
        self.note(format!("write @{offset}+{len}"));
        let data = self.data(len);
        self.ok("write", self.file.write_all_at(&data, offset));
        self.put(offset, &data);
    }

    /// The model after a write of `data` at `offset`.
    fn put(&mut self, offset: u64, data: &[u8]) {
        let end = offset as usize + data.len();
        if self.model.len() < end {
            self.model.resize(end, 0);
        }
        self.model[offset as usize..end].copy_from_slice(data);
    }

    fn map_read(&mut self) {
        let Some((offset, len)) = self.inside() else { return };
        self.note(format!("mapread @{offset}+{len}"));
        let bytes = self.mapped(offset, len, |map| map.to_vec());
        self.same(&bytes, offset, "mmap read");
    }

    /// Writes through a shared mapping and msyncs, growing the file first
    /// if the mapping would reach past its end (as fsx does).
    fn map_write(&mut self) {
        let (offset, len) = self.range(32 * 1024);
        self.note(format!("mapwrite @{offset}+{len}"));
        if offset + len > self.size() {
            self.ok("truncate up for mmap", self.file.set_len(offset + len));
            self.model.resize((offset + len) as usize, 0);
        }
        let data = self.data(len);
        self.mapped(offset, len, |map| map.copy_from_slice(&data));
        self.put(offset, &data);
    }

    /// Runs `f` on bytes `offset..offset+len` of a shared read-write
    /// mapping of the file, then msyncs and unmaps it.
    fn mapped<T>(&self, offset: u64, len: u64, f: impl FnOnce(&mut [u8]) -> T) -> T {
        let start = offset / PAGE * PAGE;
        let map_len = (offset + len - start) as usize;
        let prot = libc::PROT_READ | libc::PROT_WRITE;
        // SAFETY: a fresh mapping of an open file, within its size.
        let ptr = unsafe {
            libc::mmap(std::ptr::null_mut(), map_len, prot, libc::MAP_SHARED, self.file.as_raw_fd(), start as i64)
        };
        if ptr == libc::MAP_FAILED {
            self.fail(format!("mmap @{start}+{map_len}: {}", io::Error::last_os_error()));
        }
        // SAFETY: the mapping is `map_len` bytes long and only used here.
        let bytes = unsafe { std::slice::from_raw_parts_mut(ptr.cast::<u8>(), map_len) };
        let out = f(&mut bytes[(offset - start) as usize..]);
        // SAFETY: the mapping made above.
        let synced = unsafe { libc::msync(ptr, map_len, libc::MS_SYNC) };
        let synced = if synced == 0 { Ok(()) } else { Err(io::Error::last_os_error()) };
        // SAFETY: unmapped once, nothing refers to it any more.
        unsafe { libc::munmap(ptr, map_len) };
        self.ok("msync", synced);
        out
    }

    fn truncate(&mut self) {
        let size = if self.rng.gen_bool(0.5) && !self.model.is_empty() {
            self.rng.gen_range(0..self.size())
        } else {
            self.rng.gen_range(0..MAX_FILE)
        };
        self.note(format!("truncate {} -> {size}", self.size()));
        self.ok("truncate", self.file.set_len(size));
        self.model.resize(size as usize, 0);
    }

    fn fallocate(&self, mode: i32, offset: u64, len: u64) -> io::Result<()> {
        // SAFETY: a valid descriptor and plain integers.
        let ret = unsafe { libc::fallocate(self.file.as_raw_fd(), mode, offset as i64, len as i64) };
        if ret == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Zeroes `offset..offset+len` of the model within its size.
    fn clear(&mut self, offset: u64, len: u64) {
        let end = (offset + len).min(self.size());
        if offset < end {
            self.model[offset as usize..end as usize].fill(0);
        }
    }

    fn punch(&mut self) {
        let (offset, len) = self.range(64 * 1024);
        self.note(format!("punch @{offset}+{len}"));
        self.ok("punch-hole", self.fallocate(libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE, offset, len));
        self.clear(offset, len);
    }

    fn zero_range(&mut self) {
        let (offset, len) = self.range(64 * 1024);
        let keep = self.rng.gen_bool(0.5);
        self.note(format!("zero-range @{offset}+{len}{}", if keep { " keep-size" } else { "" }));
        let mode = libc::FALLOC_FL_ZERO_RANGE | if keep { libc::FALLOC_FL_KEEP_SIZE } else { 0 };
        self.ok("zero-range", self.fallocate(mode, offset, len));
        if !keep && offset + len > self.size() {
            self.model.resize((offset + len) as usize, 0);
        }
        self.clear(offset, len);
    }

    fn allocate(&mut self) {
        let (offset, len) = self.range(128 * 1024);
        let keep = self.rng.gen_bool(0.5);
        self.note(format!("fallocate @{offset}+{len}{}", if keep { " keep-size" } else { "" }));
        self.ok("fallocate", self.fallocate(if keep { libc::FALLOC_FL_KEEP_SIZE } else { 0 }, offset, len));
        if !keep && offset + len > self.size() {
            self.model.resize((offset + len) as usize, 0);
        }
    }

    /// Collapse-range or insert-range of whole pages inside the file. The
    /// kernel refuses both for FUSE file systems; a kernel that passes them
    /// on gets them checked like the rest.
    fn shift(&mut self) {
        let pages = self.size() / PAGE;
        if pages < 2 {
            return;
        }
        let first = self.rng.gen_range(0..pages - 1);
        let count = self.rng.gen_range(1..pages - first).min(8);
        let (offset, len) = (first * PAGE, count * PAGE);
        let insert = self.rng.gen_bool(0.5) && self.size() + len <= MAX_FILE;
        self.note(format!("{} @{offset}+{len}", if insert { "insert-range" } else { "collapse-range" }));
        let mode = if insert { libc::FALLOC_FL_INSERT_RANGE } else { libc::FALLOC_FL_COLLAPSE_RANGE };
        match self.fallocate(mode, offset, len) {
            Ok(()) if insert => {
                self.model.splice(offset as usize..offset as usize, vec![0; len as usize]);
            }
            Ok(()) => {
                self.model.drain(offset as usize..(offset + len) as usize);
            }
            Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => {}
            Err(e) => self.fail(format!("{mode:#x}: {e}")),
        }
    }

    /// SEEK_DATA and SEEK_HOLE from a random offset: what lies before the
    /// data found, and in the hole found, reads as zeros.
    fn seek(&mut self) {
        if self.model.is_empty() {
            return;
        }
        let from = self.rng.gen_range(0..self.size());
        self.note(format!("seek data/hole from {from}"));
        let size = self.size();
        let data = self.ok("SEEK_DATA", self.lseek(from, libc::SEEK_DATA)).unwrap_or(size);
        let hole = self.ok("SEEK_HOLE", self.lseek(from, libc::SEEK_HOLE)).unwrap_or(size);
        let after_hole = self.ok("SEEK_DATA", self.lseek(hole, libc::SEEK_DATA)).unwrap_or(size);
        if data < from || hole < from || hole > self.size() {
            self.fail(format!("SEEK_DATA {from} -> {data}, SEEK_HOLE -> {hole}, size {}", self.size()));
        }
        for (what, range) in
            [("before the data SEEK_DATA found", from..data), ("in the hole SEEK_HOLE found", hole..after_hole)]
        {
            if let Some(at) = self.model[range.start as usize..range.end as usize].iter().position(|b| *b != 0) {
                self.fail(format!("byte {} {what} (from {from}) is not zero", range.start + at as u64));
            }
        }
    }

    /// `lseek`; `Ok(None)` for ENXIO (no data, or at the end).
    fn lseek(&self, offset: u64, whence: i32) -> io::Result<Option<u64>> {
        if offset >= self.size() {
            return Ok(None);
        }
        // SAFETY: a valid descriptor and plain integers.
        let at = unsafe { libc::lseek(self.file.as_raw_fd(), offset as i64, whence) };
        match at {
            -1 if io::Error::last_os_error().raw_os_error() == Some(libc::ENXIO) => Ok(None),
            -1 => Err(io::Error::last_os_error()),
            at => Ok(Some(at as u64)),
        }
    }

    /// The checks after every operation.
    fn check(&mut self) {
        let meta = self.ok("fstat", self.file.metadata());
        if meta.len() != self.size() {
            self.fail(format!("st_size {}, the model has {}", meta.len(), self.size()));
        }
        let mut whole = vec![0; self.model.len()];
        self.ok("read back through O_DIRECT", self.direct.read_exact_at(&mut whole, 0));
        self.same(&whole, 0, "the whole file read back");
        let data_pages = self.model.chunks(PAGE as usize).filter(|p| p.iter().any(|b| *b != 0)).count() as u64;
        if self.mode == Mode::Operation && meta.blocks() < data_pages * (PAGE / 512) {
            self.fail(format!("st_blocks {} for {data_pages} pages holding data", meta.blocks()));
        }
    }

    #[track_caller]
    fn same(&self, got: &[u8], offset: u64, what: &str) {
        let want = &self.model[offset as usize..offset as usize + got.len()];
        if let Some(at) = got.iter().zip(want).position(|(g, w)| g != w) {
            let at = offset + at as u64;
            self.fail(format!(
                "{what}: byte {at} is {:#04x}, the model has {:#04x}",
                got[(at - offset) as usize],
                self.model[at as usize]
            ));
        }
    }
}

#[test]
fn random_file_operations_match_a_model_under_constant_reclaim_and_checkpoints() {
    run_fsx(CONFIG, Mode::Operation);
}

/// The consistency mode a run mounts with.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Operation,
    /// The kernel's writeback cache holds writes: `st_blocks` counts only
    /// the pages it has handed over (docs/ENGINE.md, "Consistency modes").
    SyncPoint,
}

fn run_fsx(config: &str, mode: Mode) {
    let seed = env_u64("MCFS_FSX_SEED").unwrap_or_else(|| {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        common::mix(now.as_nanos() as u64 ^ u64::from(std::process::id()))
    });
    let ops = env_u64("MCFS_FSX_OPS").map_or(DEFAULT_OPS, |n| n as usize);
    println!("fsx: seed {seed}, {ops} operations (MCFS_FSX_SEED={seed} MCFS_FSX_OPS={ops} replays it)");
    let dirs = Dirs::new(Some(config));
    let daemon = Daemon::foreground(&dirs, &[]);
    let path = dirs.mnt.join("fsx.data");
    let file = OpenOptions::new().read(true).write(true).create_new(true).open(&path).expect("create the test file");
    let direct = OpenOptions::new().read(true).custom_flags(libc::O_DIRECT).open(&path).expect("open it with O_DIRECT");
    let mut fsx = Fsx {
        file,
        direct,
        model: Vec::new(),
        rng: StdRng::seed_from_u64(seed),
        history: VecDeque::new(),
        ops: 0,
        seed,
        mode,
    };
    let started = std::time::Instant::now();
    while fsx.ops < ops {
        fsx.step();
    }
    println!("fsx: {} operations in {:.1?}, final size {}", fsx.ops, started.elapsed(), fsx.size());
    let Fsx { file, direct, model, .. } = fsx;
    drop((file, direct));
    daemon.unmount();
    let backing = std::fs::read(dirs.backing.join("fsx.data")).expect("the backing file");
    let at = backing.iter().zip(&model).position(|(b, m)| b != m);
    assert!(
        backing.len() == model.len() && at.is_none(),
        "MCFS_FSX_SEED={seed}: the backing file after the unmount ({} bytes) differs from the model ({} bytes), first at {at:?}",
        backing.len(),
        model.len()
    );
}

/// The same in sync-point mode: the kernel's writeback cache holds the
/// writes and hands them over in an order of its own.
#[test]
fn random_file_operations_match_a_model_in_sync_point_mode() {
    run_fsx(&format!("{CONFIG}consistency = \"sync-point\"\n"), Mode::SyncPoint);
}

/// `lseek` through the mount; `None` for ENXIO.
fn seek(file: &File, offset: u64, whence: i32) -> Option<u64> {
    // SAFETY: a valid descriptor and plain integers.
    let at = unsafe { libc::lseek(file.as_raw_fd(), offset as i64, whence) };
    if at >= 0 {
        return Some(at as u64);
    }
    let e = io::Error::last_os_error();
    assert_eq!(e.raw_os_error(), Some(libc::ENXIO), "lseek {offset} whence {whence}: {e}");
    None
}

/// Regression: a 1 MiB hole reported 2049 blocks and SEEK_HOLE found none.
#[test]
fn holes_are_reported_through_the_mount_and_kept_in_the_backing_store() {
    let dirs = Dirs::new(Some(CONFIG));
    let daemon = Daemon::foreground(&dirs, &[]);
    let path = dirs.mnt.join("sparse");
    let file = OpenOptions::new().read(true).write(true).create_new(true).open(&path).unwrap();
    file.write_all_at(b"head", 0).unwrap();
    file.write_all_at(b"tail", 1 << 20).unwrap();
    file.write_all_at(&[7; 3 * PAGE as usize], 8 * PAGE).unwrap();
    // SAFETY: a valid descriptor and plain integers.
    let punched = unsafe {
        libc::fallocate(
            file.as_raw_fd(),
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            9 * PAGE as i64,
            PAGE as i64,
        )
    };
    assert_eq!(punched, 0, "punch-hole: {}", io::Error::last_os_error());
    let expect = |file: &File, blocks: u64, what: &str| {
        assert_eq!(file.metadata().unwrap().blocks(), blocks, "{what}: st_blocks");
        assert_eq!(seek(file, 0, libc::SEEK_HOLE), Some(PAGE), "{what}: the first hole");
        assert_eq!(seek(file, PAGE, libc::SEEK_DATA), Some(8 * PAGE), "{what}: the data after it");
        assert_eq!(seek(file, 8 * PAGE, libc::SEEK_HOLE), Some(9 * PAGE), "{what}: the punched page");
        assert_eq!(seek(file, 9 * PAGE, libc::SEEK_DATA), Some(10 * PAGE), "{what}: past the punched page");
        assert_eq!(seek(file, 11 * PAGE, libc::SEEK_DATA), Some(1 << 20), "{what}: the tail");
        assert_eq!(seek(file, (1 << 20) + 4, libc::SEEK_DATA), None, "{what}: at the end");
    };
    expect(&file, 4 * 8, "through the mount");
    drop(file);
    daemon.unmount();
    let backing = File::open(dirs.backing.join("sparse")).unwrap();
    expect(&backing, 4 * 8, "in the backing store after the unmount");
    let daemon = Daemon::foreground(&dirs, &[]);
    expect(&File::open(&path).unwrap(), 4 * 8, "through a new mount");
    daemon.unmount();
    assert!(Path::new(&dirs.backing).join("sparse").exists());
}
