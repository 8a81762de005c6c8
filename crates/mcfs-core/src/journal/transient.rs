//! Files born and gone within an apply run: SQLite's rollback journal
//! (`t.db-journal`) is created, written and unlinked in every transaction of
//! the app, so a run of many waiting transactions holds it many times over.
//! Applied op by op, each create after an unlink of one name (and each
//! unlink after its create) starts a group: two barriers and a progress
//! record, for a file that no longer exists when the run ends. The live run
//! issues none of these ops instead (`Elision`).
//!
//! The rule: after an unlink of `p` (the *anchor*, issued), a *span* is a
//! create of a regular file at `p`, data ops on `p` and an unlink of `p`,
//! during which no other op touches `p` or a path below it and no namespace
//! op touches a path above it; a span is elided when the run later sets the
//! times of `p`'s parent with no namespace op on the parent or above it in
//! between. An elided unlink is the anchor of the next span of `p`.
//!
//! Invariant (argued in docs/JOURNAL.md, "Files born and gone within a
//! run"): the run without its elided ops ends in the state the whole run
//! ends in, up to ctimes: `p` is absent after the anchor and after every
//! span, nothing else in a span reads or re-points `p`, and the parent's
//! times are set afterwards by an op that both versions issue. The elided
//! ops stay in the log until the run is applied; `apply` counts their
//! touches in its groups (so no later op of the group depends on them), and
//! recovery, which never elides, replays them correctly from any resume
//! point.

use super::group::{names, touches};
use super::{JournalOp, RunTxn, TxnOps};
use crate::types::FileKind;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// An op of the run: its transaction's position in the run, its index.
type OpAt = (usize, u64);

/// Which ops of a run the live apply does not issue.
#[derive(Default, Debug)]
pub struct Elision {
    /// An elided op → the issued anchor its chain of spans hangs on.
    elided: HashMap<OpAt, OpAt>,
    /// Anchors the store refused: their spans are issued after all.
    refused: HashSet<OpAt>,
}

impl Elision {
    pub fn elides(&self, at: OpAt) -> bool {
        self.elided.get(&at).is_some_and(|anchor| !self.refused.contains(anchor))
    }

    /// Op `at` was refused for good. If it anchors spans, `p` may still
    /// exist (a directory in the way, a change behind mcfs's back), so the
    /// spans after it are issued and meet what a clean apply meets.
    pub fn refused(&mut self, at: OpAt) {
        self.refused.insert(at);
    }
}

/// A name between its anchor and the end of a span.
struct Open {
    /// The issued unlink the chain started from.
    anchor: OpAt,
    /// The span's ops so far (the create first).
    ops: Vec<OpAt>,
}

/// A finished span, elided once the run sets its parent's times.
struct Ended {
    anchor: OpAt,
    ops: Vec<OpAt>,
}

/// The elision for the ops of `run` from each transaction's start
/// (`None`: applied already). Recovery reads ops back from the log and
/// elides nothing.
pub fn plan(run: &[RunTxn], starts: &[Option<u64>]) -> Elision {
    let mut planner = Planner::default();
    for (pos, txn) in run.iter().enumerate() {
        let Some(start) = starts[pos] else { continue };
        let TxnOps::Held(ops) = txn.ops else { return Elision::default() };
        for (index, op) in ops.iter().enumerate().skip(start as usize) {
            planner.step((pos, index as u64), op);
        }
    }
    planner.elision
}

#[derive(Default)]
struct Planner {
    /// Names after an anchor (no span yet, or a span under way), by path.
    open: BTreeMap<Key, Open>,
    /// Finished spans by the parent whose times they wait for.
    ended: BTreeMap<Key, Vec<Ended>>,
    elision: Elision,
}

impl Planner {
    fn step(&mut self, at: OpAt, op: &JournalOp) {
        if self.open.is_empty() && self.ended.is_empty() && !matches!(op, JournalOp::RemoveFile { .. }) {
            // Nothing to extend, end or forget: only an unlink starts a chain.
            return;
        }
        let [Some((path, _)), None] = touches(op) else { return self.forget_around(op) };
        let Some(p) = key(path) else { return self.forget_all() };
        let in_span = self.open.get(&p).is_some_and(|o| !o.ops.is_empty());
        match op {
            JournalOp::RemoveFile { .. } => {
                self.forget_related(&p, true, false);
                let anchor = match self.open.remove(&p) {
                    Some(mut open) if in_span => {
                        open.ops.push(at);
                        let dir = parent(&p).to_vec();
                        self.ended.entry(dir).or_default().push(Ended { anchor: open.anchor, ops: open.ops });
                        open.anchor
                    }
                    _ => at,
                };
                self.open.insert(p, Open { anchor, ops: Vec::new() });
            }
            JournalOp::Create { kind: FileKind::File, .. } if self.open.contains_key(&p) => {
                self.forget_related(&p, true, false);
                if let Some(open) = self.open.get_mut(&p) {
                    open.ops.push(at);
                }
            }
            op if !op.is_namespace() && in_span => {
                if let Some(open) = self.open.get_mut(&p) {
                    open.ops.push(at);
                }
            }
            op => {
                if let JournalOp::SetTimes { .. } = op {
                    for span in self.ended.remove(&p).into_iter().flatten() {
                        self.elision.elided.extend(span.ops.into_iter().map(|o| (o, span.anchor)));
                    }
                }
                self.forget_related(&p, op.is_namespace(), true);
            }
        }
    }

    /// An op with two paths (link, rename) or one this module cannot key.
    fn forget_around(&mut self, op: &JournalOp) {
        for (path, _) in touches(op).into_iter().flatten() {
            match key(path) {
                Some(p) => self.forget_related(&p, op.is_namespace(), true),
                None => self.forget_all(),
            }
        }
    }

    fn forget_all(&mut self) {
        self.open.clear();
        self.ended.clear();
    }

    /// An op touched `p`: no span may run through `p` or a name above it
    /// (so none may be under way there), nor, for a namespace op, below it;
    /// and a namespace op at or above a parent leaves its finished spans
    /// without the times they wait for. `at_too`: also the name `p` itself.
    fn forget_related(&mut self, p: &[u8], namespace: bool, at_too: bool) {
        for above in ancestors(p) {
            self.open.remove(above);
        }
        if at_too {
            self.open.remove(p);
        }
        if namespace {
            below(&self.open, p).iter().for_each(|k| drop(self.open.remove(k)));
            self.ended.remove(p);
            below(&self.ended, p).iter().for_each(|k| drop(self.ended.remove(k)));
        }
    }
}

/// A path as the backend resolves it: its names joined by `/`, the root the
/// empty key. Compared byte by byte, where a `PathBuf` compares name by name
/// (each comparison splitting both paths): these maps are searched for every
/// name above every op's path.
type Key = Vec<u8>;

/// `path`'s key, if this module can judge it.
fn key(path: &Path) -> Option<Key> {
    names(path).map(|names| names.iter().map(|name| name.as_bytes()).collect::<Vec<_>>().join(&b'/'))
}

/// The keys of the names above `p`, nearest first (the root last; none above the root).
fn ancestors(p: &[u8]) -> impl Iterator<Item = &[u8]> {
    let slashes = p.iter().enumerate().rev().filter(|(_, byte)| **byte == b'/');
    slashes.map(|(at, _)| &p[..at]).chain((!p.is_empty()).then_some(&p[..0]))
}

/// The key of the directory that holds `p` (the root for the root).
fn parent(p: &[u8]) -> &[u8] {
    ancestors(p).next().unwrap_or_default()
}

/// The keys of `map` below `p`, not `p` itself: all but the root below the
/// root, else those that go on from `p` with a `/` (one range in byte order).
fn below<V>(map: &BTreeMap<Key, V>, p: &[u8]) -> Vec<Key> {
    if p.is_empty() {
        return map.keys().filter(|k| !k.is_empty()).cloned().collect();
    }
    let prefix = [p, b"/"].concat();
    map.range(prefix.clone()..).map(|(k, _)| k).take_while(|k| k.starts_with(&prefix)).cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::scenarios::held_run;
    use std::time::UNIX_EPOCH;

    fn op(s: &str) -> JournalOp {
        let w: Vec<&str> = s.split(' ').collect();
        let (a, b) = (w[1].into(), w.get(2).map(|p| (*p).into()));
        match w[0] {
            "create" => JournalOp::Create { path: a, kind: FileKind::File, perm: 0o644, rdev: 0 },
            "mkdir" => JournalOp::Create { path: a, kind: FileKind::Dir, perm: 0o755, rdev: 0 },
            "symlink" => JournalOp::Symlink { path: a, target: "x".into() },
            "write" => JournalOp::Write { path: a, offset: 0, data: vec![1; 8] },
            "chown" => JournalOp::SetOwner { path: a, uid: 1, gid: 1 },
            "times" => JournalOp::SetTimes { path: a, atime: UNIX_EPOCH, mtime: UNIX_EPOCH },
            "unlink" => JournalOp::RemoveFile { path: a },
            "rmdir" => JournalOp::RemoveDir { path: a },
            "link" => JournalOp::Link { existing: a, new: b.unwrap() },
            "rename" => JournalOp::Rename { from: a, to: b.unwrap() },
            other => panic!("{other}"),
        }
    }

    /// The indices of the ops elided from `txns` (one op stream, indices
    /// counted across transactions).
    fn elided(txns: &[&[&str]]) -> Vec<usize> {
        let held: Vec<Vec<JournalOp>> = txns.iter().map(|t| t.iter().map(|s| op(s)).collect()).collect();
        let run = held_run(&held);
        let e = plan(&run, &vec![Some(0); run.len()]);
        let mut flat = Vec::new();
        for (pos, ops) in held.iter().enumerate() {
            for index in 0..ops.len() {
                flat.push(e.elides((pos, index as u64)));
            }
        }
        flat.iter().enumerate().filter(|(_, e)| **e).map(|(i, _)| i).collect()
    }

    /// SQLite's rollback journal over three app transactions, each three
    /// commits (journal, database, unlink), as the engine emits them.
    const SQLITE: [&[&str]; 9] = [
        &["create d/j", "write d/j", "times d/j", "times d"],
        &["write d/db", "times d/db"],
        &["unlink d/j", "times d"],
        &["create d/j", "write d/j", "times d/j", "times d"],
        &["write d/db", "times d/db"],
        &["unlink d/j", "times d"],
        &["create d/j", "write d/j", "times d/j", "times d"],
        &["write d/db", "times d/db"],
        &["unlink d/j", "times d"],
    ];

    #[test]
    fn journal_transient_elides_the_rollback_journal_after_its_first_unlink() {
        // Ops 0-3 (the first create, before any anchor) and 6 (the anchor)
        // are issued; every later create, write, times and unlink of d/j goes.
        assert_eq!(elided(&SQLITE), vec![8, 9, 10, 14, 16, 17, 18, 22]);
        let with_trailing_create = [&SQLITE[..], &[&["create d/j", "write d/j", "times d"]]].concat();
        assert_eq!(elided(&with_trailing_create), vec![8, 9, 10, 14, 16, 17, 18, 22], "no unlink ends the last one");
    }

    #[test]
    fn journal_transient_needs_an_anchor_a_regular_file_and_the_parent_times() {
        assert_eq!(elided(&[&["create f", "write f", "unlink f", "times "]]), Vec::<usize>::new(), "no anchor");
        let span = |middle: &[&'static str], after: &[&'static str]| {
            let mut ops = vec!["unlink d/f", "create d/f", "write d/f"];
            ops.extend_from_slice(middle);
            ops.push("unlink d/f");
            ops.extend_from_slice(after);
            elided(&[&ops])
        };
        assert_eq!(span(&[], &["times d"]), vec![1, 2, 3], "the plain case");
        assert_eq!(span(&["chown d/f", "times d"], &["times d"]), vec![1, 2, 3, 5], "data ops on p and its parent");
        assert_eq!(span(&["create d/g", "unlink e/f"], &["times d"]), vec![1, 2, 5], "unrelated names");
        assert_eq!(span(&[], &[]), Vec::<usize>::new(), "the parent's times never set");
        assert_eq!(span(&[], &["times e"]), Vec::<usize>::new(), "another directory's times");
        assert_eq!(span(&[], &["rename d e", "times e"]), Vec::<usize>::new(), "the parent moved before its times");
        assert_eq!(span(&[], &["create d/g", "times d"]), vec![1, 2, 3], "a sibling between end and times");
        let mkdir = elided(&[&["unlink d/f", "mkdir d/f", "rmdir d/f", "times d"]]);
        assert_eq!(mkdir, Vec::<usize>::new(), "a directory is not a span");
        let symlink = elided(&[&["unlink d/f", "symlink d/f", "unlink d/f", "times d"]]);
        assert_eq!(symlink, Vec::<usize>::new(), "a symlink is not a span");
        let data_first = elided(&[&["unlink d/f", "write d/f", "create d/f", "unlink d/f", "times d"]]);
        assert_eq!(data_first, Vec::<usize>::new(), "a data op on the missing name");
    }

    #[test]
    fn journal_transient_keeps_spans_whose_name_is_read_or_re_pointed() {
        let span = |middle: &'static str| {
            elided(&[&["unlink d/f", "create d/f", "write d/f", middle, "unlink d/f", "times d"]])
        };
        for (middle, why) in [
            ("link d/f d/g", "a hard link keeps the file"),
            ("link d/g d/f", "a link onto the name"),
            ("rename d/f .mcfs/orphans/7", "an open file parked as an orphan"),
            ("rename d/g d/f", "a rename onto the name"),
            ("rename d e", "the parent moved"),
            ("rmdir d/f/x", "a name below"),
            ("mkdir d/f", "a namespace op on the name"),
        ] {
            assert_eq!(span(middle), Vec::<usize>::new(), "{middle}: {why}");
        }
        let after = |op: &'static str| elided(&[&["unlink d/f", "create d/f", "unlink d/f", op, "times d"]]);
        assert_eq!(after("link d/g d/f"), vec![1, 2], "a finished span is not read by later ops");
        let odd = elided(&[&["unlink d/f", "create d/f", "write ../f", "unlink d/f", "times d"]]);
        assert_eq!(odd, Vec::<usize>::new(), "a path it cannot judge forgets every span");
    }

    #[test]
    fn journal_transient_chains_hang_on_their_anchor_until_it_is_refused() {
        let ops: Vec<Vec<JournalOp>> = vec![["unlink f", "create f", "unlink f", "create f", "unlink f", "times "]
            .iter()
            .map(|s| op(s))
            .collect()];
        let run = held_run(&ops);
        let mut e = plan(&run, &[Some(0)]);
        assert_eq!(e.elided.len(), 4);
        assert!((1..5).all(|i| e.elides((0, i))) && !e.elides((0, 0)) && !e.elides((0, 5)));
        e.refused((0, 2));
        assert!(e.elides((0, 3)), "an elided unlink is never refused: the chain's anchor is op 0");
        e.refused((0, 0));
        assert!((1..5).all(|i| !e.elides((0, i))), "an anchor refused: every span after it is issued");
        let resumed = plan(&run, &[Some(2)]);
        assert!(!resumed.elides((0, 2)) && resumed.elides((0, 3)), "from a resume point, its first unlink anchors");
        let logged = [RunTxn { slot: 0, header: run[0].header, ops: TxnOps::Logged }];
        assert_eq!(plan(&logged, &[Some(0)]).elided.len(), 0, "recovery elides nothing");
    }

    #[test]
    fn journal_transient_keys_relate_by_whole_names() {
        let up: Vec<&[u8]> = ancestors(b"d/a/x").collect();
        assert_eq!(up, [&b"d/a"[..], b"d", b""]);
        assert_eq!((parent(b"d/a"), parent(b"d"), parent(b"")), (&b"d"[..], &b""[..], &b""[..]));
        let keys = ["", "d/a", "d/a-b", "d/a/x", "d/a/y/z", "d/a0", "d/b"];
        let map: BTreeMap<Key, ()> = keys.iter().map(|k| (k.as_bytes().to_vec(), ())).collect();
        let below =
            |p: &str| below(&map, p.as_bytes()).into_iter().map(|k| String::from_utf8(k).unwrap()).collect::<Vec<_>>();
        assert_eq!(below("d/a"), ["d/a/x", "d/a/y/z"], "`d/a-b` sorts between `d/a` and `d/a/x` but is not below");
        assert_eq!(below(""), &keys[1..], "below the root: every other name");
        assert_eq!(below("d/a/x"), Vec::<String>::new());
    }
}
