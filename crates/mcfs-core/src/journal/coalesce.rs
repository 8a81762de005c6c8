//! Coalescing of an apply run: when several waiting transactions write the
//! same bytes of the same file, only the last version goes home. A reverse
//! pass over the run's held ops keeps, per backing path, the byte ranges
//! later writes cover; a write keeps only the pieces nothing later covers.
//!
//! Invariant: a byte a write leaves out is written again, later in the same
//! run, through the same path while that path still names the same object:
//! a namespace op touching the path, a path above it or below it (a rename,
//! a link, an unlink, a create) ends what the writes after it can cover for
//! the writes before it. No op moves or copies data within or between files,
//! so the last write of a byte decides its content whatever ran in between
//! (docs/JOURNAL.md, "Coalescing").

use super::group::{touches, LINKED_FROM};
use super::{RunTxn, TxnOps};
use std::collections::{BTreeMap, HashMap};
use std::ffi::OsStr;
use std::path::Path;

/// What each write of a run still has to write.
#[derive(Default, Debug)]
pub struct Plan {
    /// (position in the run, op index) → the file byte ranges to write;
    /// writes not listed are written whole.
    trimmed: HashMap<(usize, u64), Vec<(u64, u64)>>,
}

impl Plan {
    /// The ranges op `index` of the run's transaction `pos` writes, if not all of it.
    pub fn pieces(&self, pos: usize, index: u64) -> Option<&[(u64, u64)]> {
        self.trimmed.get(&(pos, index)).map(Vec::as_slice)
    }
}

/// Disjoint byte ranges, merged: start → end.
#[derive(Default)]
struct Ranges(BTreeMap<u64, u64>);

impl Ranges {
    /// Whether some of `[start, end)` is in the set.
    fn overlaps(&self, start: u64, end: u64) -> bool {
        self.0.range(..end).next_back().is_some_and(|(_, e)| *e > start)
    }

    /// The parts of `[start, end)` not in the set.
    fn uncovered(&self, start: u64, end: u64) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut at = start;
        // The range that may begin before `start`, then every one inside.
        let first = self.0.range(..=start).next_back().map(|(s, e)| (*s, *e));
        for (s, e) in first.into_iter().chain(self.0.range(start + 1..end).map(|(s, e)| (*s, *e))) {
            if e <= at {
                continue;
            }
            if s > at {
                out.push((at, s.min(end)));
            }
            at = at.max(e);
            if at >= end {
                return out;
            }
        }
        if at < end {
            out.push((at, end));
        }
        out
    }

    fn add(&mut self, mut start: u64, mut end: u64) {
        if let Some((s, e)) = self.0.range(..=start).next_back().map(|(s, e)| (*s, *e)) {
            if e >= start {
                start = s;
                end = end.max(e);
            }
        }
        let overlapping: Vec<(u64, u64)> = self.0.range(start..=end).map(|(s, e)| (*s, *e)).collect();
        for (s, e) in overlapping {
            self.0.remove(&s);
            end = end.max(e);
        }
        self.0.insert(start, end);
    }
}

/// The plan for the ops of `run` from each transaction's start (`None`:
/// applied already). Ops read back from the log (recovery) are not
/// coalesced: recovery replays every write.
pub fn plan(run: &[RunTxn], starts: &[Option<u64>]) -> Plan {
    let mut plan = Plan::default();
    // Keyed by the path's bytes, which hash in one go (a `Path` hashes name
    // by name): the engine spells each path one way, and a path spelt two
    // ways would only be coalesced less.
    let mut later: HashMap<&OsStr, Ranges> = HashMap::new();
    for (pos, txn) in run.iter().enumerate().rev() {
        let (TxnOps::Held(ops), Some(start)) = (&txn.ops, starts[pos]) else { continue };
        for (index, op) in ops.iter().enumerate().skip(start as usize).rev() {
            // A write, of bytes held or of known content alike.
            if let Some((path, offset, end)) = op.written().filter(|(_, offset, end)| end > offset) {
                let covered = later.entry(path.as_os_str()).or_default();
                if covered.overlaps(offset, end) {
                    plan.trimmed.insert((pos, index as u64), covered.uncovered(offset, end));
                }
                covered.add(offset, end);
            } else if op.is_namespace() {
                // The existing name of a link keeps naming its object.
                for (path, _) in touches(op).into_iter().flatten().filter(|(_, t)| *t != LINKED_FROM) {
                    later.retain(|written, _| !related(Path::new(written), path));
                }
            }
        }
    }
    plan
}

/// Equal, or one above the other.
fn related(a: &Path, b: &Path) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::scenarios::held_run;
    use crate::journal::JournalOp;
    use crate::types::FileKind;

    fn w(path: &str, offset: u64, len: usize) -> JournalOp {
        JournalOp::Write { path: path.into(), offset, data: vec![7; len] }
    }

    fn plan_of(txns: &[Vec<JournalOp>]) -> Plan {
        plan(&held_run(txns), &vec![Some(0); txns.len()])
    }

    #[test]
    fn journal_coalesce_ranges_subtract_and_merge() {
        let mut r = Ranges::default();
        r.add(10, 20);
        r.add(30, 40);
        assert_eq!(r.uncovered(0, 50), vec![(0, 10), (20, 30), (40, 50)]);
        assert_eq!(r.uncovered(12, 18), vec![]);
        assert_eq!(r.uncovered(15, 35), vec![(20, 30)]);
        let cases = [(0, 10, false), (20, 30, false), (40, 50, false), (9, 11, true), (19, 31, true)];
        for (start, end, overlaps) in cases {
            assert_eq!(r.overlaps(start, end), overlaps, "{start}..{end}");
            assert_eq!(r.uncovered(start, end) != [(start, end)], overlaps, "{start}..{end}");
        }
        r.add(20, 30);
        assert_eq!(r.0.len(), 1, "touching ranges merge");
        assert_eq!(r.uncovered(5, 45), vec![(5, 10), (40, 45)]);
    }

    #[test]
    fn journal_coalesce_keeps_only_the_last_version_of_each_byte() {
        let plan = plan_of(&[vec![w("f", 0, 8192), w("g", 0, 10)], vec![w("f", 4096, 4096)], vec![w("f", 0, 100)]]);
        assert_eq!(plan.pieces(0, 0), Some(&[(100, 4096)][..]), "txn 1's write keeps what nothing later covers");
        assert_eq!(plan.pieces(0, 1), None, "another file is written whole");
        assert_eq!(plan.pieces(1, 0), None, "nothing after txn 2 covers its page");
        assert_eq!(plan.pieces(2, 0), None, "the last version is written whole");
        let gone = plan_of(&[vec![w("f", 0, 4096)], vec![w("f", 0, 4096)]]);
        assert_eq!(gone.pieces(0, 0), Some(&[][..]), "a page written twice goes home once");
    }

    #[test]
    fn journal_coalesce_stops_at_namespace_ops_on_the_path_or_around_it() {
        let create = |p: &str| JournalOp::Create { path: p.into(), kind: FileKind::File, perm: 0o644, rdev: 0 };
        let rename = |a: &str, b: &str| JournalOp::Rename { from: a.into(), to: b.into() };
        let unlink = |p: &str| JournalOp::RemoveFile { path: p.into() };
        let link = |a: &str, b: &str| JournalOp::Link { existing: a.into(), new: b.into() };
        for between in [unlink("d/f"), create("d/f"), rename("d", "e"), rename("x", "d/f"), link("x", "d/f")] {
            let plan = plan_of(&[vec![w("d/f", 0, 4096)], vec![between.clone(), w("d/f", 0, 4096)]]);
            assert_eq!(plan.pieces(0, 0), None, "{between} changes what d/f names");
        }
        for unrelated in [unlink("d/g"), create("e/f"), rename("x", "y"), link("d/f", "g")] {
            let plan = plan_of(&[vec![w("d/f", 0, 4096)], vec![unrelated.clone(), w("d/f", 0, 4096)]]);
            assert_eq!(plan.pieces(0, 0), Some(&[][..]), "{unrelated} leaves d/f alone");
        }
        let truncated =
            plan_of(&[vec![w("f", 0, 4096), JournalOp::SetLen { path: "f".into(), size: 0 }, w("f", 0, 4096)]]);
        assert_eq!(truncated.pieces(0, 0), Some(&[][..]), "a truncate in between moves no data");
    }
}
