//! Which objects of a `DirBackend` changed since the last durability barrier,
//! so that `sync` can fsync exactly those instead of the whole file system.
//!
//! A mark is a canonical relative path plus the sequence number of the last
//! change recorded at it. A barrier takes a `Pending` snapshot (the paths and
//! the highest sequence number so far), makes those objects durable, and only
//! then calls `finish`, which clears the marks the snapshot covered; marks
//! added meanwhile have higher numbers and stay, and a failed barrier clears
//! nothing. Invariant: every change made since the last successful barrier
//! is either marked at the path its object now has (a rename carries the
//! marks at and below its source to its target) or covered by the overflow
//! flag. Past `TARGETED_LIMIT` marks the set stops naming paths and the next
//! barrier flushes the whole file system instead, which also bounds memory.
//! A new set starts overflowed: what an earlier process (a daemon that
//! crashed, say) left unflushed in the directory is unknown, and recovery
//! must not build on it until it is durable.

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Most objects a barrier fsyncs one by one. Each fsync on ext4 or f2fs
/// costs at least one journal commit and a device cache flush (about
/// 0.2–1 ms on flash), and the calls are serialized, while one `syncfs`
/// costs a single commit plus writing whatever else is dirty. Beyond a few
/// dozen objects — a large checkpoint, an unpacked archive — the per-object
/// commits add up to more than a busy `syncfs`, so the barrier switches.
pub(super) const TARGETED_LIMIT: usize = 64;

#[derive(Default)]
struct Marks {
    /// Canonical path → sequence number of its latest change. Ordered by
    /// components, so the marks at and below a path are one range.
    by_path: BTreeMap<PathBuf, u64>,
    /// The last sequence number given out (0: none yet).
    last_seq: u64,
    /// The latest change left unnamed because the set overflowed.
    overflow: Option<u64>,
}

impl Marks {
    fn next_seq(&mut self) -> u64 {
        self.last_seq += 1;
        self.last_seq
    }
}

/// What a barrier has to make durable.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Pending {
    /// The objects to fsync; `None`: flush the whole file system.
    pub(super) paths: Option<Vec<PathBuf>>,
    /// The highest sequence number the barrier covers (for `finish`).
    upto: u64,
}

/// The marks of one backend; safe to use from several threads.
pub(super) struct DirtySet {
    marks: Mutex<Marks>,
}

impl DirtySet {
    /// Knows nothing yet: the first barrier flushes everything.
    pub(super) fn new() -> DirtySet {
        DirtySet { marks: Mutex::new(Marks { overflow: Some(0), ..Marks::default() }) }
    }

    /// Records a change to the object at `key` (call it after the change).
    pub(super) fn mark(&self, key: &Path) {
        self.mark_all(&[key]);
    }

    /// Records changes to several objects at once.
    pub(super) fn mark_all(&self, keys: &[&Path]) {
        let mut marks = self.marks.lock();
        for key in keys {
            let seq = marks.next_seq();
            if marks.overflow.is_some() {
                marks.overflow = Some(seq);
            } else if marks.by_path.len() >= TARGETED_LIMIT && !marks.by_path.contains_key(*key) {
                marks.by_path.clear();
                marks.overflow = Some(seq);
            } else {
                marks.by_path.insert(key.to_path_buf(), seq);
            }
        }
    }

    /// Records a change to the directory holding `key` (none for the root).
    pub(super) fn mark_parent(&self, key: &Path) {
        if let Some(parent) = key.parent() {
            self.mark(parent);
        }
    }

    /// True if a change at exactly `key` is waiting for a barrier.
    pub(super) fn is_marked(&self, key: &Path) -> bool {
        self.marks.lock().by_path.contains_key(key)
    }

    /// After a successful rename of `from` to `to`: the marks at and below
    /// `from` now name objects at and below `to`. Marks at and below `to`
    /// named the replaced object, which is gone (the caller made a replaced
    /// object that lives on under another name durable first).
    pub(super) fn moved(&self, from: &Path, to: &Path) {
        let mut marks = self.marks.lock();
        let carried = take_subtree(&mut marks.by_path, from);
        take_subtree(&mut marks.by_path, to);
        for (key, seq) in carried {
            let below = key.strip_prefix(from).unwrap_or(Path::new(""));
            let moved = if below.as_os_str().is_empty() { to.to_path_buf() } else { to.join(below) };
            marks.by_path.insert(moved, seq);
        }
    }

    /// A snapshot for a barrier about to start.
    pub(super) fn pending(&self) -> Pending {
        let marks = self.marks.lock();
        let paths = match marks.overflow {
            Some(_) => None,
            None => Some(marks.by_path.keys().cloned().collect()),
        };
        Pending { paths, upto: marks.last_seq }
    }

    /// After the barrier of `done` succeeded: clears what it covered.
    pub(super) fn finish(&self, done: &Pending) {
        let mut marks = self.marks.lock();
        marks.by_path.retain(|_, seq| *seq > done.upto);
        if marks.overflow.is_some_and(|seq| seq <= done.upto) {
            marks.overflow = None;
        }
    }
}

/// Removes and returns the entries at and below `top`.
fn take_subtree(map: &mut BTreeMap<PathBuf, u64>, top: &Path) -> Vec<(PathBuf, u64)> {
    let keys: Vec<PathBuf> =
        map.range(top.to_path_buf()..).map(|(k, _)| k).take_while(|k| k.starts_with(top)).cloned().collect();
    keys.into_iter().filter_map(|k| map.remove(&k).map(|seq| (k, seq))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> PathBuf {
        PathBuf::from(s)
    }

    fn paths(set: &DirtySet) -> Vec<PathBuf> {
        set.pending().paths.expect("targeted")
    }

    /// A set after its first barrier.
    fn clean() -> DirtySet {
        let set = DirtySet::new();
        assert_eq!(set.pending().paths, None, "the first barrier flushes everything");
        set.finish(&set.pending());
        assert!(paths(&set).is_empty());
        set
    }

    #[test]
    fn a_rename_carries_the_marks_at_and_below_its_source() {
        let set = clean();
        for key in ["d", "d/a", "d/sub/b", "d b", "dx", "e/old", "e"] {
            set.mark(&p(key));
        }
        set.moved(&p("d"), &p("e"));
        // "d b" and "dx" only share a prefix of bytes with "d"; "e/old" was
        // below the replaced target.
        assert_eq!(paths(&set), [p("d b"), p("dx"), p("e"), p("e/a"), p("e/sub/b")]);
        // Renaming a name onto itself keeps its marks.
        set.moved(&p("e/a"), &p("e/a"));
        assert!(set.is_marked(&p("e/a")));
    }

    #[test]
    fn a_moved_mark_keeps_its_sequence_number() {
        let set = clean();
        set.mark(&p("a"));
        let before = set.pending();
        set.mark(&p("b"));
        set.moved(&p("a"), &p("c"));
        set.finish(&before);
        // "c" holds the change to the object once at "a", which the barrier covered.
        assert_eq!(paths(&set), [p("b")]);
    }

    #[test]
    fn marks_made_during_a_barrier_survive_it_and_a_failed_barrier_clears_nothing() {
        let set = clean();
        set.mark_all(&[&p("a"), &p("b")]);
        let first = set.pending();
        assert_eq!(first.paths.as_deref(), Some(&[p("a"), p("b")][..]));
        set.mark(&p("a")); // changed again while the barrier runs
        set.finish(&first);
        assert_eq!(paths(&set), [p("a")]);
        let _failed = set.pending();
        assert_eq!(paths(&set), [p("a")], "no finish: marks kept");
        set.finish(&set.pending());
        assert!(paths(&set).is_empty());
    }

    #[test]
    fn too_many_marks_switch_to_a_whole_file_system_flush_until_one_covers_them() {
        let set = clean();
        for i in 0..TARGETED_LIMIT {
            set.mark(&p(&format!("f{i}")));
        }
        set.mark(&p("f0")); // a path already marked does not count twice
        assert_eq!(paths(&set).len(), TARGETED_LIMIT);
        set.mark(&p("one-more"));
        let flush = set.pending();
        assert_eq!(flush.paths, None);
        assert!(!set.is_marked(&p("f0")), "no paths are kept once overflowed");
        set.mark(&p("during")); // arrives while the flush runs
        set.finish(&flush);
        assert_eq!(set.pending().paths, None, "a change after the flush started still needs one");
        set.finish(&set.pending());
        set.mark(&p("later"));
        assert_eq!(paths(&set), [p("later")], "targeted again once the overflow is covered");
    }

    #[test]
    fn the_root_has_no_parent_to_mark() {
        let set = clean();
        set.mark_parent(&p(""));
        set.mark_parent(&p("top"));
        set.mark_parent(&p("d/x"));
        assert_eq!(paths(&set), [p(""), p("d")]);
    }
}
