//! Keeps a `write(2)` that the kernel split into several FUSE requests in
//! one VCT (never torn by a VCT boundary, so never torn by a crash).
//!
//! The kernel sends a buffered write in pieces: it stops a piece after a
//! partial first page it does not hold (so an unaligned write is split at
//! the first page boundary) and after `max_pages` pages. The front end knows
//! these rules and marks a piece that *may be followed* by more of the same
//! `write(2)` (`Piece::MayContinue`). A piece is a continuation when it comes
//! from the same thread, for the same file, at the offset where the marked
//! piece ended. While the kernel sends the pieces it holds the file's inode
//! lock, so nothing else changes that file in between.
//!
//! A VCT may close between two pieces (the policy, another app touching the
//! app's data, a checkpoint); it then stays *unsettled* and the rest of the
//! write still goes into it (`State::write_trailing`). An unsettled VCT is
//! not committed: a background commit leaves it (and what needs it) for
//! later, a commit somebody waits for waits until it settles. It settles
//! when the rest arrives, when the thread's write turns out to be over (a
//! piece that does not continue it), or when the rest has not come within
//! `settle_wait` (the pieces are then split: documented in ENGINE.md). A
//! write larger than `split_write_cap` may also be split, so that staleness and
//! memory stay bounded.
//!
//! Invariant: every mark names a VCT of its app that is open or closed and
//! not yet committed (commits settle the marks of what they take first).

use crate::state::State;
use crate::types::{Ino, InoHasher, PAGE_SIZE};
use crate::vct::{AppId, ClosedEntry, LogEntry};
use std::collections::{HashMap, HashSet};
use std::hash::BuildHasherDefault;
use std::time::{Duration, SystemTime};

/// How long a commit waits for the rest of a split write at least.
const SETTLE_WAIT: Duration = Duration::from_secs(1);
/// The most bytes of unfinished `write(2)`s kept whole at once (unless half the cache is less).
pub const MAX_WHOLE_WRITE: u64 = 8 << 20;

/// What the front end knows about one write request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Piece {
    /// The whole `write(2)`, or its last piece.
    Last,
    /// The kernel may send more of the same `write(2)` right after this.
    MayContinue,
}

/// The part of a `write(2)` received so far, whose rest may still come.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unfinished {
    pub app: AppId,
    pub ino: Ino,
    /// Where the next piece starts.
    pub next: u64,
    /// The VCT the write went into (it may have closed since).
    pub vct: u64,
    /// Bytes of the write so far.
    pub bytes: u64,
    /// When the last piece came.
    pub at: SystemTime,
}

/// The unfinished writes, one per writing thread.
#[derive(Default)]
pub struct SplitWrites {
    /// Hashed with `InoHasher`: looked up for every piece written.
    by_thread: HashMap<u32, Unfinished, BuildHasherDefault<InoHasher>>,
}

impl SplitWrites {
    /// The VCT a piece of thread `tid` must go into: the one its write
    /// started in, if the piece continues it (and it is still live).
    pub fn continued(&self, tid: u32, ino: Ino, offset: u64, now: SystemTime, wait: Duration) -> Option<Unfinished> {
        let u = self.by_thread.get(&tid)?;
        (u.ino == ino && u.next == offset && live(u, now, wait)).then_some(*u)
    }

    /// Records a piece of `len` bytes at `offset` written into `vct`: the
    /// write stays unfinished if more may follow and the unfinished writes
    /// of all threads together are not over `cap`.
    #[allow(clippy::too_many_arguments)]
    pub fn record(
        &mut self,
        tid: u32,
        app: AppId,
        ino: Ino,
        offset: u64,
        len: u64,
        vct: u64,
        piece: Piece,
        cap: u64,
        now: SystemTime,
    ) {
        let before = self.continued(tid, ino, offset, now, Duration::MAX).map_or(0, |u| u.bytes);
        let bytes = before + len;
        let others: u64 = self.by_thread.iter().filter(|(t, _)| **t != tid).map(|(_, u)| u.bytes).sum();
        if piece == Piece::MayContinue && others + bytes <= cap {
            self.by_thread.insert(tid, Unfinished { app, ino, next: offset + len, vct, bytes, at: now });
        } else {
            self.by_thread.remove(&tid);
        }
    }

    /// Thread `tid` sent a request that is no piece of a write (an fsync,
    /// say): any write of its is over.
    pub fn thread_moved_on(&mut self, tid: u32) {
        self.by_thread.remove(&tid);
    }

    /// Every write(2) to `ino` is over (the kernel let a request through
    /// that it sends only while no write(2) holds the file).
    pub fn file_done(&mut self, ino: Ino) {
        self.by_thread.retain(|_, u| u.ino != ino);
    }

    /// The VCTs that may still receive the rest of a write.
    pub fn unsettled(&self, now: SystemTime, wait: Duration) -> impl Iterator<Item = u64> + '_ {
        self.by_thread.values().filter(move |u| live(u, now, wait)).map(|u| u.vct)
    }

    /// When the first live write stops being waited for.
    pub fn next_expiry(&self, now: SystemTime, wait: Duration) -> Option<SystemTime> {
        self.by_thread.values().filter(|u| live(u, now, wait)).map(|u| u.at + wait).min()
    }

    /// Gives up waiting for the rest of every write into one of `vcts` (a
    /// commit takes them), or of every write (`None`: nothing more comes).
    pub fn settle(&mut self, vcts: Option<&dyn Fn(u64) -> bool>) {
        match vcts {
            Some(taken) => self.by_thread.retain(|_, u| !taken(u.vct)),
            None => self.by_thread.clear(),
        }
    }
}

impl State {
    /// How long a commit waits for the rest of a split write: well past the
    /// longest a request waits at admission (`fasttrack.aging_ms`).
    pub fn split_write_wait(&self) -> Duration {
        SETTLE_WAIT.max(Duration::from_millis(self.config.fasttrack.aging_ms.saturating_mul(2)))
    }

    /// The most the unfinished writes of all threads together keep whole (so
    /// the largest write kept whole). Their pieces never wait for a commit,
    /// so they may take an app past `max_stale_bytes` and the cache past its
    /// size by this much: half the cache, and at most `MAX_WHOLE_WRITE`.
    pub fn split_write_cap(&self) -> u64 {
        (self.config.cache_size / 2).min(MAX_WHOLE_WRITE)
    }

    /// The VCT the rest of thread `tid`'s write must go into, if a piece at
    /// `offset` of `ino` continues it.
    pub fn continued_write(&self, tid: u32, ino: Ino, offset: u64, now: SystemTime) -> Option<u64> {
        self.split_writes.continued(tid, ino, offset, now, self.split_write_wait()).map(|u| u.vct)
    }

    /// The closed VCTs a commit may not take now: those that may still
    /// receive the rest of a write, and every VCT that must commit after
    /// one of them (a later VCT of its app, or one depending on it).
    pub fn withheld(&self, now: SystemTime) -> HashSet<u64> {
        if self.closed.is_empty() {
            return HashSet::new(); // asked before every tick: skip the sets
        }
        let unsettled: HashSet<u64> = self.split_writes.unsettled(now, self.split_write_wait()).collect();
        let mut withheld = HashSet::new();
        let mut blocked_apps = HashSet::new();
        for v in &self.closed {
            if unsettled.contains(&v.id) || blocked_apps.contains(&v.app) || v.deps.iter().any(|d| withheld.contains(d))
            {
                withheld.insert(v.id);
                blocked_apps.insert(v.app);
            }
        }
        withheld
    }

    /// Bytes `[from, to)` of `ino`, just written into the cache, belong to
    /// the closed VCT `vct` (the rest of a write that started in it): its
    /// entries for those pages take the pages' new versions, and its times
    /// entry for `ino` moves after them with the new times.
    pub fn write_trailing(&mut self, vct: u64, ino: Ino, from: u64, to: u64) {
        let Some(at) = self.closed.iter().position(|v| v.id == vct) else { return };
        let Some(inode) = self.inodes.get_mut(&ino) else { return };
        let closed = &mut self.closed[at];
        let (size, atime, mtime) = (inode.attr.size, inode.attr.atime, inode.attr.mtime);
        let pages = from / PAGE_SIZE..to.div_ceil(PAGE_SIZE);
        // One pass over the VCT's entries per piece, not one per page: a
        // closed VCT of a large write holds tens of thousands of them.
        let mut in_vct: HashMap<(u64, u64), usize> = HashMap::new();
        for (at, e) in closed.entries.iter().enumerate() {
            if let ClosedEntry::Write { ino: i, page, slot, .. } = e {
                if *i == ino && pages.contains(page) {
                    in_vct.entry((*page, *slot)).or_insert(at);
                }
            }
        }
        for idx in pages {
            let (id, version) = self.cache.freeze(ino, idx).expect("just written");
            let len = size.saturating_sub(idx * PAGE_SIZE).min(PAGE_SIZE) as usize;
            let entry = in_vct.get(&(idx, id)).and_then(|at| match &mut closed.entries[*at] {
                ClosedEntry::Write { data, len, .. } => Some((data, len)),
                ClosedEntry::Other(_) => None,
            });
            match entry {
                Some((data, old_len)) => {
                    // The version the write copied away from.
                    self.cache.release(std::mem::replace(data, version));
                    *old_len = len;
                }
                None => {
                    self.cache.pin(ino, idx);
                    closed.entries.push(ClosedEntry::Write { ino, page: idx, slot: id, data: version, len });
                }
            }
        }
        closed.entries.retain(|e| !matches!(e, ClosedEntry::Other(LogEntry::SetTimes { ino: i, .. }) if *i == ino));
        closed.entries.push(ClosedEntry::Other(LogEntry::SetTimes { ino, atime, mtime }));
        closed.bytes += to - from;
        self.apps.closed_more(closed.app, to - from);
    }
}

fn live(u: &Unfinished, now: SystemTime, wait: Duration) -> bool {
    !crate::clock::aged(u.at, wait, now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    const WAIT: Duration = Duration::from_secs(1);

    fn t(ms: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(ms)
    }

    #[test]
    fn a_marked_piece_is_continued_by_the_same_thread_at_its_end_only() {
        let mut s = SplitWrites::default();
        s.record(7, 1, 42, 4050, 46, 3, Piece::MayContinue, 1 << 20, t(0));
        assert_eq!(s.continued(7, 42, 4096, t(1), WAIT).map(|u| (u.vct, u.bytes)), Some((3, 46)));
        assert!(s.continued(8, 42, 4096, t(1), WAIT).is_none(), "another thread");
        assert!(s.continued(7, 43, 4096, t(1), WAIT).is_none(), "another file");
        assert!(s.continued(7, 42, 8192, t(1), WAIT).is_none(), "another offset");
        assert!(s.continued(7, 42, 4096, t(1000), WAIT).is_none(), "too late");
        assert_eq!(s.unsettled(t(1), WAIT).collect::<Vec<_>>(), [3]);
        assert_eq!(s.next_expiry(t(1), WAIT), Some(t(1000)));
        s.record(7, 1, 42, 4096, 54, 3, Piece::Last, 1 << 20, t(2));
        assert_eq!(s.next_expiry(t(2), WAIT), None, "the last piece settles the write");
    }

    #[test]
    fn a_write_past_the_cap_or_a_thread_moving_on_settles() {
        let mut s = SplitWrites::default();
        s.record(7, 1, 42, 0, 4096, 3, Piece::MayContinue, 8192, t(0));
        s.record(7, 1, 42, 4096, 4096, 3, Piece::MayContinue, 8192, t(0));
        assert_eq!(s.continued(7, 42, 8192, t(0), WAIT).map(|u| u.bytes), Some(8192));
        s.record(7, 1, 42, 8192, 4096, 3, Piece::MayContinue, 8192, t(0));
        assert_eq!(s.next_expiry(t(0), WAIT), None, "12 KiB is over the 8 KiB cap");
        s.record(7, 1, 42, 0, 4096, 3, Piece::MayContinue, 8192, t(0));
        s.thread_moved_on(7);
        assert_eq!(s.next_expiry(t(0), WAIT), None);
        s.record(7, 1, 42, 0, 4096, 3, Piece::MayContinue, 8192, t(0));
        s.file_done(42);
        assert_eq!(s.next_expiry(t(0), WAIT), None, "the kernel let an fsync of the file through");
    }

    #[test]
    fn the_cap_bounds_all_threads_unfinished_writes_together() {
        let mut s = SplitWrites::default();
        s.record(7, 1, 42, 0, 6000, 3, Piece::MayContinue, 8192, t(0));
        s.record(8, 1, 43, 0, 4096, 3, Piece::MayContinue, 8192, t(0));
        assert!(s.continued(8, 43, 4096, t(0), WAIT).is_none(), "6000 + 4096 is over the cap");
        assert!(s.continued(7, 42, 6000, t(0), WAIT).is_some());
    }

    #[test]
    fn settling_the_vcts_a_commit_takes_keeps_the_others() {
        let mut s = SplitWrites::default();
        s.record(7, 1, 42, 0, 4096, 3, Piece::MayContinue, 1 << 20, t(0));
        s.record(8, 2, 43, 0, 4096, 5, Piece::MayContinue, 1 << 20, t(0));
        s.settle(Some(&|v| v == 3));
        assert_eq!(s.unsettled(t(0), WAIT).collect::<Vec<_>>(), [5]);
        s.settle(None);
        assert_eq!(s.next_expiry(t(0), WAIT), None);
    }
}
