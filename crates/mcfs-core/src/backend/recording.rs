//! `RecordingBackend`: a `MemBackend` that logs every change made to it and
//! the `sync` barriers between them, and can rebuild the states a crash at
//! any point may leave behind. Crash tests run the engine on it, then run
//! recovery on each crash state and check the engine's invariants.
//!
//! The model, precisely:
//!
//! * **Ops.** Every mutating call that succeeds is one op, numbered from 0 in
//!   the order calls were made (calls are serialised). A `write_at` is split
//!   into one op per 4 KiB page of the file it touches, so a crash can tear
//!   a write at page boundaries (a page is written atomically, as a sector
//!   is). A `fallocate` is one op (file systems journal it as one change).
//!   A failed call changed nothing and is not recorded. The contents
//!   the backend held when wrapped are the initial, durable state.
//! * **Barriers.** A `sync` that returns after `p` ops makes ops `0..p`
//!   durable: they survive any crash that happens after it returned.
//! * **Cut `k`** (0 ≤ k ≤ `op_count()`) stands for every crash instant after op
//!   `k-1` was issued and before op `k` was — including the middle of a
//!   `sync` issued between them, so a barrier at exactly `k` has not yet
//!   taken effect at cut `k`. The durable prefix is `d = durable_prefix(k)`,
//!   the largest barrier `p < k` (0 if none).
//! * **Process crash** (the daemon dies, the kernel keeps what it was given):
//!   all `k` ops survive.
//! * **Power loss**: ops `0..d` survive; of ops `d..k`, any subset may
//!   survive. The state is the initial state with the surviving ops applied
//!   in their original order; an op that cannot apply to that state (a
//!   write to a file whose create was lost, ...) is skipped, as it would
//!   have failed.
//!
//! Why this is what POSIX allows: POSIX promises durability only through
//! fsync/sync, and promises nothing about the order or completeness in which
//! earlier, un-synced changes reach the disk. So after a power cut any subset
//! of them may be there, but nothing that was synced may be missing. Real
//! file systems give more (ext4 journals metadata in order), so their crash
//! states are among these. Not modelled: tearing inside a 4 KiB page,
//! garbage in blocks allocated but never written, and a file size that
//! survives without the data that grew it.

use super::{Backend, BackendAttr, BackendError, BackendLimits, MemBackend};
use crate::types::{FallocMode, FileKind, FsStats, PAGE_SIZE};
use parking_lot::Mutex;
use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::io;
use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

/// One recorded change (a `write_at` is recorded one page at a time).
pub type Op = super::Mutation;

/// The ops a successful `write_at` is recorded as: one per page touched.
fn write_pieces(path: &Path, offset: u64, data: &[u8]) -> Vec<Op> {
    let mut pieces = Vec::new();
    let mut done = 0;
    while done < data.len() {
        let at = offset + done as u64;
        let room = (PAGE_SIZE - at % PAGE_SIZE) as usize;
        let len = room.min(data.len() - done);
        pieces.push(Op::Write { path: path.to_owned(), offset: at, data: data[done..done + len].to_vec() });
        done += len;
    }
    pieces
}

/// An op and the backend's time stamp when it was applied, so a replay
/// stamps the same times.
struct Recorded {
    at: SystemTime,
    op: Op,
}

struct Log {
    initial: MemBackend,
    ops: Vec<Recorded>,
    /// Op counts at which a `sync` returned, ascending, no repeats.
    barriers: Vec<usize>,
}

/// One state a crash may leave (see the module comment).
pub struct CrashState {
    /// The cut: ops `0..cut` had been issued.
    pub cut: usize,
    /// Ops `0..durable` survived because a `sync` covered them.
    pub durable: usize,
    /// Which of the ops `durable..cut` survived, ascending.
    pub survivors: Vec<usize>,
    pub state: MemBackend,
}

impl CrashState {
    /// `cut 9, durable 4, survived [4, 6] of 4..9` — for failure messages.
    pub fn describe(&self) -> String {
        format!(
            "cut {}, durable {}, survived {:?} of {}..{}",
            self.cut, self.durable, self.survivors, self.durable, self.cut
        )
    }
}

/// A fault to inject: mutating calls whose op matches fail with `errno`.
struct Fault {
    matches: Box<dyn Fn(&Op) -> bool + Send + Sync>,
    errno: i32,
}

/// A `MemBackend` that records its changes (see the module comment).
pub struct RecordingBackend {
    live: MemBackend,
    log: Mutex<Log>,
    /// Shared, so that a predicate that blocks (a test pausing one call)
    /// runs with no lock held and other threads' calls go on.
    fault: Mutex<Option<Arc<Fault>>>,
}

impl RecordingBackend {
    /// Records changes made on top of `initial`, whose contents count as durable.
    pub fn new(initial: MemBackend) -> RecordingBackend {
        let log = Log { initial: initial.clone(), ops: Vec::new(), barriers: Vec::new() };
        RecordingBackend { live: initial, log: Mutex::new(log), fault: Mutex::new(None) }
    }

    /// From now on every mutating call whose op matches `predicate` fails
    /// with `errno` and changes nothing (a full or failing disk), until
    /// `clear_fault`. For fault-injection tests; a failed call is not recorded.
    pub fn fail_when(&self, predicate: impl Fn(&Op) -> bool + Send + Sync + 'static, errno: i32) {
        *self.fault.lock() = Some(Arc::new(Fault { matches: Box::new(predicate), errno }));
    }

    pub fn clear_fault(&self) {
        *self.fault.lock() = None;
    }

    /// The current state: every op applied (what a process crash leaves).
    /// Use it to read or to `set_now`; changes made through it directly are
    /// not recorded.
    pub fn live(&self) -> &MemBackend {
        &self.live
    }

    pub fn op_count(&self) -> usize {
        self.log.lock().ops.len()
    }

    /// Op counts at which a `sync` returned, ascending.
    pub fn barriers(&self) -> Vec<usize> {
        self.log.lock().barriers.clone()
    }

    /// How many ops survive any crash at cut `k`: the last barrier before `k`.
    pub fn durable_prefix(&self, k: usize) -> usize {
        durable_prefix(&self.log.lock().barriers, k)
    }

    /// Op `i`, for messages.
    pub fn op(&self, i: usize) -> Option<Op> {
        self.log.lock().ops.get(i).map(|r| r.op.clone())
    }

    /// Up to `max` distinct crash states at cut `k` (clamped to
    /// `op_count()`), in this order: exactly the durable prefix; all `k` ops
    /// (also the process-crash state); the prefixes in between (a random
    /// sample of them if there are too many); then other subsets of the
    /// un-synced ops — all of them if they fit in `max`, else random ones.
    /// The same `seed` gives the same states.
    pub fn crash_states(&self, k: usize, seed: u64, max: usize) -> Vec<CrashState> {
        let log = self.log.lock();
        let k = k.min(log.ops.len());
        let durable = durable_prefix(&log.barriers, k);
        let base = log.initial.clone();
        replay(&log.ops, &base, 0..durable);
        let choices = choose_survivors(k - durable, &mut SplitMix64(seed), max);
        // Build the prefix states shortest first, each extending the last.
        let mut built: Vec<Option<MemBackend>> = vec![None; choices.len()];
        let mut prefixes: Vec<usize> =
            (0..choices.len()).filter(|c| choices[*c].iter().enumerate().all(|(i, s)| i == *s)).collect();
        prefixes.sort_by_key(|c| choices[*c].len());
        let running = base.clone();
        let mut applied = 0;
        for c in prefixes {
            let len = choices[c].len();
            replay(&log.ops, &running, durable + applied..durable + len);
            applied = len;
            built[c] = Some(running.clone());
        }
        choices
            .into_iter()
            .zip(built)
            .map(|(survivors, state)| {
                let survivors: Vec<usize> = survivors.into_iter().map(|s| durable + s).collect();
                let state = state.unwrap_or_else(|| {
                    let state = base.clone();
                    replay(&log.ops, &state, survivors.iter().copied());
                    state
                });
                CrashState { cut: k, durable, survivors, state }
            })
            .collect()
    }

    /// Applies `op` to the live state and, if it succeeds, logs it as `ops`.
    fn record(&self, op: Op, logged_as: impl FnOnce(Op) -> Vec<Op>) -> io::Result<()> {
        let fault = self.fault.lock().clone();
        if let Some(fault) = fault.filter(|f| (f.matches)(&op)) {
            let context = format!("{op} (injected fault)");
            let kind = io::Error::from_raw_os_error(fault.errno).kind();
            return Err(io::Error::new(kind, BackendError { errno: fault.errno, context }));
        }
        let mut log = self.log.lock();
        op.apply(&self.live)?;
        let at = self.live.now();
        log.ops.extend(logged_as(op).into_iter().map(|op| Recorded { at, op }));
        Ok(())
    }

    fn record_one(&self, op: Op) -> io::Result<()> {
        self.record(op, |op| vec![op])
    }
}

fn durable_prefix(barriers: &[usize], k: usize) -> usize {
    barriers.iter().rev().find(|p| **p < k).copied().unwrap_or(0)
}

/// Applies the ops numbered `which` to `state`, each with its recorded time
/// stamp, skipping those that fail.
fn replay(ops: &[Recorded], state: &MemBackend, which: impl IntoIterator<Item = usize>) {
    for i in which {
        let recorded = &ops[i];
        state.set_now(recorded.at);
        // An op that cannot apply without a lost earlier op would have failed.
        let _ = recorded.op.apply(state);
    }
}

/// Which of `n` un-synced ops survive, for up to `max` states: each choice
/// is a list of op offsets (0..n), ascending; no two choices are equal.
fn choose_survivors(n: usize, rng: &mut SplitMix64, max: usize) -> Vec<Vec<usize>> {
    let mut chosen: Vec<Vec<usize>> = Vec::new();
    let mut seen: HashSet<Vec<usize>> = HashSet::new();
    let mut offer = |choice: Vec<usize>, chosen: &mut Vec<Vec<usize>>| {
        if chosen.len() < max && seen.insert(choice.clone()) {
            chosen.push(choice);
        }
    };
    offer(Vec::new(), &mut chosen);
    offer((0..n).collect(), &mut chosen);
    let inner = n.saturating_sub(1); // prefixes strictly between
    let budget = max.saturating_sub(chosen.len());
    let mut lengths: Vec<usize> = (1..n).collect();
    if inner > budget {
        // Keep half the budget for subsets that are not prefixes.
        let keep = budget.div_ceil(2);
        for i in 0..keep {
            let j = i + rng.below((lengths.len() - i) as u64) as usize;
            lengths.swap(i, j);
        }
        lengths.truncate(keep);
        lengths.sort_unstable();
    }
    for len in lengths {
        offer((0..len).collect(), &mut chosen);
    }
    let all_fit = n < 20 && (1usize << n) <= max;
    if all_fit {
        for mask in 0..1u64 << n {
            offer((0..n).filter(|i| mask & (1 << i) != 0).collect(), &mut chosen);
        }
    } else {
        let mut attempts = 8 * max;
        while chosen.len() < max && attempts > 0 {
            attempts -= 1;
            offer((0..n).filter(|_| rng.next() & 1 == 1).collect(), &mut chosen);
        }
    }
    chosen
}

/// A small deterministic random number generator (SplitMix64), so crash
/// states depend on the seed alone.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform enough in `0..n` for choosing test states (`n` > 0).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

impl Backend for RecordingBackend {
    fn stat(&self, path: &Path) -> io::Result<BackendAttr> {
        self.live.stat(path)
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<(OsString, FileKind)>> {
        self.live.list_dir(path)
    }

    fn read_at(&self, path: &Path, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.live.read_at(path, offset, buf)
    }

    fn write_at(&self, path: &Path, offset: u64, data: &[u8]) -> io::Result<()> {
        let op = Op::Write { path: path.to_owned(), offset, data: data.to_vec() };
        self.record(op, |_| write_pieces(path, offset, data))
    }

    fn set_len(&self, path: &Path, size: u64) -> io::Result<()> {
        self.record_one(Op::SetLen { path: path.to_owned(), size })
    }

    fn create(&self, path: &Path, kind: FileKind, perm: u32, rdev: u32) -> io::Result<()> {
        self.record_one(Op::Create { path: path.to_owned(), kind, perm, rdev })
    }

    fn symlink(&self, target: &OsStr, path: &Path) -> io::Result<()> {
        self.record_one(Op::Symlink { target: target.to_owned(), path: path.to_owned() })
    }

    fn read_link(&self, path: &Path) -> io::Result<OsString> {
        self.live.read_link(path)
    }

    fn link(&self, existing: &Path, new: &Path) -> io::Result<()> {
        self.record_one(Op::Link { existing: existing.to_owned(), new: new.to_owned() })
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.record_one(Op::RemoveFile { path: path.to_owned() })
    }

    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        self.record_one(Op::RemoveDir { path: path.to_owned() })
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.record_one(Op::Rename { from: from.to_owned(), to: to.to_owned() })
    }

    fn set_owner(&self, path: &Path, uid: u32, gid: u32) -> io::Result<()> {
        self.record_one(Op::SetOwner { path: path.to_owned(), uid, gid })
    }

    fn set_perm(&self, path: &Path, perm: u32) -> io::Result<()> {
        self.record_one(Op::SetPerm { path: path.to_owned(), perm })
    }

    fn set_times(&self, path: &Path, atime: SystemTime, mtime: SystemTime) -> io::Result<()> {
        self.record_one(Op::SetTimes { path: path.to_owned(), atime, mtime })
    }

    fn get_xattr(&self, path: &Path, name: &OsStr) -> io::Result<Option<Vec<u8>>> {
        self.live.get_xattr(path, name)
    }

    fn list_xattr(&self, path: &Path) -> io::Result<Vec<OsString>> {
        self.live.list_xattr(path)
    }

    fn set_xattr(&self, path: &Path, name: &OsStr, value: &[u8]) -> io::Result<()> {
        self.record_one(Op::SetXattr { path: path.to_owned(), name: name.to_owned(), value: value.to_vec() })
    }

    fn remove_xattr(&self, path: &Path, name: &OsStr) -> io::Result<()> {
        self.record_one(Op::RemoveXattr { path: path.to_owned(), name: name.to_owned() })
    }

    fn sync(&self) -> io::Result<()> {
        let mut log = self.log.lock();
        self.live.sync()?;
        let at = log.ops.len();
        if log.barriers.last() != Some(&at) {
            log.barriers.push(at);
        }
        Ok(())
    }

    fn statfs(&self) -> io::Result<FsStats> {
        self.live.statfs()
    }

    fn limits(&self) -> BackendLimits {
        self.live.limits()
    }

    fn check_xattrs(&self, kind: FileKind, xattrs: &[(&OsStr, &[u8])]) -> io::Result<()> {
        self.live.check_xattrs(kind, xattrs)
    }

    fn fallocate(&self, path: &Path, mode: FallocMode, offset: u64, len: u64) -> io::Result<()> {
        self.record_one(Op::Fallocate { path: path.to_owned(), mode, offset, len })
    }

    fn data_extents(&self, path: &Path) -> io::Result<Vec<std::ops::Range<u64>>> {
        self.live.data_extents(path)
    }
}
