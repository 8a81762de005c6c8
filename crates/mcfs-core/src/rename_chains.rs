//! A pre-pass over the closed entries of one batch, which commits as one
//! transaction (only its start and its end can be seen after a crash), that
//! merges what an inode does through names that exist only in between:
//! renames `a→b, b→c` become `a→c` (at the place of the second), `a→b, b→a`
//! disappears; a link whose name is unlinked again disappears; a rename
//! `a→b` followed by an unlink of `b` becomes an unlink of `a`; an exchange
//! of a name with itself disappears. And of the times set on one inode (the
//! engine sets them at the end of every VCT that changed it) only the last
//! is kept: they are absolute values, nothing reads them in between. The apply gives an op whose
//! name an earlier op of its group bound a group of its own (two barriers):
//! a file renamed 10,000 times in a row (a log rotated in a loop) would cost
//! 20,000, stress-ng `--dirdeep`'s link-then-unlink at every level two each.
//!
//! Invariant: compiling the merged entries from the batch's starting tree
//! gives every other entry the same inode behind the same (parent, name) as
//! compiling them all, and ends in the same tree. A step of inode `x` to a
//! name `b` (a rename that replaced nothing, or a link: `b` was free) is
//! only merged into `x`'s next step away from `b` if no entry in between
//! names `b` or where the chain started (creates, links, unlinks, renames,
//! exchanges there) and none removes the directory it started in (an rmdir,
//! or a rename over it: both need it empty, and a merged `x` would still be
//! in it): so in between `x` may stay where it was (entries name inodes, not
//! paths, so they reach `x` either way), and the names the chain passed
//! through are free again at its end.

use crate::types::{Ino, InoMap};
use crate::vct::{AppId, ClosedEntry, ClosedVct, LogEntry};
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;

/// A directory entry: (parent inode, name).
type Name = (Ino, OsString);

/// What becomes of one entry of the batch.
enum Merge {
    /// Taken over by a later step of its chain, or cancelled out.
    Drop,
    /// The step that now does what its chain did.
    Replace(LogEntry),
}

/// Steps of one inode through names, each leaving the name the last one
/// bound, which no other entry named meanwhile.
struct Chain {
    ino: Ino,
    /// Where the inode was before the first step; `None` if the first step
    /// was a link (the inode keeps its other names throughout).
    start: Option<Name>,
    /// Position of the last step in the batch.
    last: usize,
}

/// The merges found in one batch (see the module comment), by position:
/// in order, so that the entries meet them in one pass.
#[derive(Default)]
pub struct RenameChains {
    merges: BTreeMap<usize, Merge>,
}

impl RenameChains {
    pub fn of(batch: &[ClosedVct]) -> RenameChains {
        let mut finder = Finder::default();
        for (position, (_, entry)) in flat(batch).enumerate() {
            if let ClosedEntry::Other(entry) = entry {
                finder.entry(position, entry);
            }
        }
        RenameChains { merges: finder.merges }
    }

    /// The batch's entries, in order, with the merges made: each with the
    /// app whose VCT it came from.
    pub fn entries<'b>(&'b self, batch: &'b [ClosedVct]) -> impl Iterator<Item = (AppId, Cow<'b, ClosedEntry>)> + 'b {
        let mut merges = self.merges.iter().peekable();
        flat(batch).enumerate().filter_map(move |(position, (app, entry))| {
            match merges.next_if(|(at, _)| **at == position).map(|(_, merge)| merge) {
                None => Some((app, Cow::Borrowed(entry))),
                Some(Merge::Drop) => None,
                Some(Merge::Replace(merged)) => Some((app, Cow::Owned(ClosedEntry::Other(merged.clone())))),
            }
        })
    }
}

fn flat(batch: &[ClosedVct]) -> impl Iterator<Item = (AppId, &ClosedEntry)> {
    batch.iter().flat_map(|v| v.entries.iter().map(move |e| (v.app, e)))
}

#[derive(Default)]
struct Finder {
    /// Open chains, by the name their last step bound.
    chains: HashMap<Name, Chain>,
    /// Where each chain with a start started: start → the name it is at
    /// (ordered, so the chains that started in one directory are one range).
    starts: BTreeMap<Name, Name>,
    /// Where the latest times of each inode were set.
    last_times: InoMap<usize>,
    merges: BTreeMap<usize, Merge>,
}

impl Finder {
    fn entry(&mut self, position: usize, entry: &LogEntry) {
        match entry {
            LogEntry::Rename { ino, parent, name, new_parent, new_name, replaced } => {
                let (from, to) = ((*parent, name.clone()), (*new_parent, new_name.clone()));
                if let Some(replaced) = replaced {
                    // It may be an (empty) directory.
                    self.end_chains_started_in(*replaced);
                }
                if !self.step(*ino, position, &from, &to, *replaced) {
                    self.touch(&from);
                    self.touch(&to);
                    if replaced.is_none() {
                        self.open(to, Chain { ino: *ino, start: Some(from), last: position });
                    }
                }
            }
            LogEntry::Link { ino, parent, name } => {
                let at = (*parent, name.clone());
                self.touch(&at);
                self.open(at, Chain { ino: *ino, start: None, last: position });
            }
            LogEntry::Unlink { ino, parent, name } => {
                let at = (*parent, name.clone());
                match self.close(*ino, &at) {
                    // Linked, then unlinked: neither happened.
                    Some(Chain { start: None, last, .. }) => {
                        self.merges.insert(last, Merge::Drop);
                        self.merges.insert(position, Merge::Drop);
                    }
                    // Renamed, then unlinked: unlinked where it was.
                    Some(Chain { start: Some((parent, name)), last, .. }) => {
                        self.merges.insert(last, Merge::Drop);
                        let unlink = LogEntry::Unlink { ino: *ino, parent, name };
                        self.merges.insert(position, Merge::Replace(unlink));
                    }
                    None => self.touch(&at),
                }
            }
            LogEntry::SetTimes { ino, .. } => {
                if let Some(earlier) = self.last_times.insert(*ino, position) {
                    self.merges.insert(earlier, Merge::Drop);
                }
            }
            LogEntry::Rmdir { ino, parent, name } => {
                self.touch(&(*parent, name.clone()));
                self.end_chains_started_in(*ino);
            }
            // Swapping a name with itself changes nothing.
            LogEntry::Exchange { parent, name, new_parent, new_name } if (parent, name) == (new_parent, new_name) => {
                self.merges.insert(position, Merge::Drop);
            }
            // With no chain open, a name touched ends none.
            other if !self.none_open() => {
                for name in names_touched(other) {
                    self.touch(&name);
                }
            }
            _ => {}
        }
    }

    /// Merges the rename `ino: from→to` at `position` into the rename chain
    /// that bound `from`, if there is one; false if there is not. (A link's
    /// name renamed on is not merged: the link, moved later, could find its
    /// inode without a name in between, once its other names were unlinked.)
    fn step(&mut self, ino: Ino, position: usize, from: &Name, to: &Name, replaced: Option<Ino>) -> bool {
        if self.chains.get(from).is_none_or(|c| c.start.is_none()) {
            return false;
        }
        let Some(Chain { start: Some((parent, name)), last, .. }) = self.close(ino, from) else { return false };
        self.merges.insert(last, Merge::Drop);
        if (parent, &name) == (to.0, &to.1) {
            // Back where it started: nothing happened to it at all.
            self.merges.insert(position, Merge::Drop);
            return true;
        }
        self.touch(to);
        let merged =
            LogEntry::Rename { ino, parent, name: name.clone(), new_parent: to.0, new_name: to.1.clone(), replaced };
        self.merges.insert(position, Merge::Replace(merged));
        if replaced.is_none() {
            self.open(to.clone(), Chain { ino, start: Some((parent, name)), last: position });
        }
        true
    }

    fn open(&mut self, at: Name, chain: Chain) {
        if let Some(start) = &chain.start {
            self.starts.insert(start.clone(), at.clone());
        }
        self.chains.insert(at, chain);
    }

    /// Ends the chain of `ino` at `at`, if there is one, and returns it.
    fn close(&mut self, ino: Ino, at: &Name) -> Option<Chain> {
        if self.chains.get(at)?.ino != ino {
            return None;
        }
        let chain = self.chains.remove(at)?;
        if let Some(start) = &chain.start {
            self.starts.remove(start);
        }
        Some(chain)
    }

    /// `dir` is removed: the chains that started in it end, so their first
    /// steps move their inodes out of it before it goes.
    fn end_chains_started_in(&mut self, dir: Ino) {
        let starts: Vec<Name> = self
            .starts
            .range((dir, OsString::new())..)
            .take_while(|(start, _)| start.0 == dir)
            .map(|(s, _)| s.clone())
            .collect();
        for start in starts {
            self.touch(&start);
        }
    }

    fn none_open(&self) -> bool {
        self.chains.is_empty() && self.starts.is_empty()
    }

    /// An entry names `name`: a chain at it, or that started at it, ends.
    fn touch(&mut self, name: &Name) {
        if self.none_open() {
            return;
        }
        if let Some(chain) = self.chains.remove(name) {
            if let Some(start) = &chain.start {
                self.starts.remove(start);
            }
        }
        if let Some(at) = self.starts.remove(name) {
            self.chains.remove(&at);
        }
    }
}

/// The directory entries a (non-rename) log entry adds, removes or swaps.
fn names_touched(entry: &LogEntry) -> Vec<Name> {
    match entry {
        LogEntry::Create { parent, name, .. }
        | LogEntry::Symlink { parent, name, .. }
        | LogEntry::Link { parent, name, .. }
        | LogEntry::Unlink { parent, name, .. }
        | LogEntry::Rmdir { parent, name, .. } => vec![(*parent, name.clone())],
        LogEntry::Rename { parent, name, new_parent, new_name, .. }
        | LogEntry::Exchange { parent, name, new_parent, new_name } => {
            vec![(*parent, name.clone()), (*new_parent, new_name.clone())]
        }
        LogEntry::Write { .. }
        | LogEntry::SetLen { .. }
        | LogEntry::SetPerm { .. }
        | LogEntry::SetOwner { .. }
        | LogEntry::SetTimes { .. }
        | LogEntry::SetXattr { .. }
        | LogEntry::RemoveXattr { .. }
        | LogEntry::Fallocate { .. }
        // An O_TMPFILE file is made with no name; its link is a Link.
        | LogEntry::Tmpfile { .. } => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::committed::CommittedTree;
    use crate::compile::Compiler;
    use crate::journal::JournalOp;
    use crate::types::InoSet;
    use crate::types::{FileKind, ROOT_INO};

    const DIR: Ino = 2;

    fn rename(ino: Ino, from: &str, to: &str, replaced: Option<Ino>) -> LogEntry {
        let (parent, new_parent) = (DIR, DIR);
        LogEntry::Rename { ino, parent, name: from.into(), new_parent, new_name: to.into(), replaced }
    }

    fn create(ino: Ino, name: &str) -> LogEntry {
        let (kind, perm, rdev, uid, gid) = (FileKind::File, 0o644, 0, 0, 0);
        LogEntry::Create { ino, parent: DIR, name: name.into(), kind, perm, rdev, uid, gid }
    }

    fn batch(entries: Vec<LogEntry>) -> Vec<ClosedVct> {
        let half = entries.len() / 2;
        let mut entries: Vec<ClosedEntry> = entries.into_iter().map(ClosedEntry::Other).collect();
        let second = entries.split_off(half);
        // Two VCTs of two apps: chains cross VCTs (the batch commits whole).
        [(0, entries), (1, second)]
            .into_iter()
            .map(|(app, entries)| ClosedVct {
                app,
                id: app as u64,
                entries,
                bytes: 0,
                first_entry_at: None,
                deps: vec![],
                age: 0,
            })
            .collect()
    }

    /// A tree with `d` (inode 2) holding `a` (10), `b` (11) and `c` (12).
    fn tree() -> CommittedTree {
        let mut tree = CommittedTree::default();
        tree.add_link(DIR, ROOT_INO, "d".as_ref());
        for (ino, name) in [(10, "a"), (11, "b"), (12, "c")] {
            tree.add_link(ino, DIR, name.as_ref());
        }
        tree
    }

    /// Compiles `entries` (merged or not): the ops, and where each inode ends.
    fn compile(batch: &[ClosedVct], merged: bool) -> (Vec<JournalOp>, Vec<Option<std::path::PathBuf>>) {
        let mut tree = tree();
        let skip = InoSet::default();
        let mut compiler = Compiler::new(&mut tree, &|_| false, false, &skip);
        let chains = if merged { RenameChains::of(batch) } else { RenameChains::default() };
        for (_, entry) in chains.entries(batch) {
            compiler.entry(&entry);
        }
        let ops = std::mem::take(&mut compiler.ops);
        (ops, (10..=13).map(|ino| tree.path(ino)).collect())
    }

    fn renames(ops: &[JournalOp]) -> Vec<String> {
        ops.iter().filter(|op| matches!(op, JournalOp::Rename { .. })).map(|op| op.to_string()).collect()
    }

    #[test]
    fn a_rename_chain_through_free_names_becomes_one_rename() {
        let mut entries: Vec<LogEntry> =
            (0..100).map(|i| rename(10, &format!("n{i}"), &format!("n{}", i + 1), None)).collect();
        entries[0] = rename(10, "a", "n1", None);
        let b = batch(entries);
        let (ops, ends) = compile(&b, true);
        assert_eq!(renames(&ops), ["rename d/a -> d/n100"]);
        assert_eq!(ends, compile(&b, false).1);
    }

    #[test]
    fn a_rename_there_and_back_disappears_but_not_when_a_name_was_used_between() {
        let there_and_back = batch(vec![rename(10, "a", "x", None), rename(10, "x", "a", None)]);
        assert!(compile(&there_and_back, true).0.is_empty());
        assert_eq!(compile(&there_and_back, true).1, compile(&there_and_back, false).1);
        // The old name is taken and freed again in between: nothing may merge.
        let reused = batch(vec![
            rename(10, "a", "x", None),
            create(13, "a"),
            rename(13, "a", "y", None),
            rename(10, "x", "z", None),
        ]);
        let (merged, ends) = compile(&reused, true);
        assert_eq!(renames(&merged), renames(&compile(&reused, false).0));
        assert_eq!(ends, compile(&reused, false).1);
    }

    #[test]
    fn a_rename_over_a_file_is_kept_as_a_chain_end() {
        // a→x, then x over b (replacing 11), then b→y: the rename over b stays.
        let b = batch(vec![rename(10, "a", "x", None), rename(10, "x", "b", Some(11)), rename(10, "b", "y", None)]);
        let (ops, ends) = compile(&b, true);
        assert_eq!(renames(&ops), ["rename d/a -> d/b", "rename d/b -> d/y"]);
        assert_eq!(ends, compile(&b, false).1);
    }

    #[test]
    fn an_exchange_of_a_name_with_itself_disappears() {
        let exchange = LogEntry::Exchange { parent: DIR, name: "a".into(), new_parent: DIR, new_name: "a".into() };
        let b = batch(vec![rename(11, "b", "x", None), exchange, rename(11, "x", "y", None)]);
        assert_eq!(renames(&compile(&b, true).0), ["rename d/b -> d/y"]);
    }

    fn link(ino: Ino, name: &str) -> LogEntry {
        LogEntry::Link { ino, parent: DIR, name: name.into() }
    }

    fn unlink(ino: Ino, name: &str) -> LogEntry {
        LogEntry::Unlink { ino, parent: DIR, name: name.into() }
    }

    fn namespace(ops: &[JournalOp]) -> Vec<String> {
        ops.iter().filter(|op| op.is_namespace()).map(|op| op.to_string()).collect()
    }

    #[test]
    fn a_link_whose_name_goes_away_again_disappears() {
        // stress-ng --dirdeep at every level: links, one of them unlinked at once.
        let b = batch(vec![link(10, "l1"), link(10, "u"), unlink(10, "u"), link(10, "t"), unlink(10, "l1")]);
        let (ops, ends) = compile(&b, true);
        assert_eq!(namespace(&ops), ["link d/a -> d/t"]);
        assert_eq!(ends, compile(&b, false).1);
        // A link's name renamed on is kept (the rename then unlink becomes an unlink).
        let moved = batch(vec![link(10, "x"), rename(10, "x", "y", None), unlink(10, "y")]);
        assert_eq!(namespace(&compile(&moved, true).0), ["link d/a -> d/x", "unlink d/x"]);
        assert_eq!(compile(&moved, true).1, compile(&moved, false).1);
    }

    #[test]
    fn a_rename_then_an_unlink_is_an_unlink_where_it_started() {
        let b = batch(vec![rename(11, "b", "x", None), rename(11, "x", "y", None), unlink(11, "y")]);
        let (ops, ends) = compile(&b, true);
        assert_eq!(namespace(&ops), ["unlink d/b"]);
        assert_eq!(ends, compile(&b, false).1);
        // Its last name taken over by another rename in between: kept.
        let taken = batch(vec![rename(11, "b", "x", None), rename(12, "c", "b", None), unlink(11, "x")]);
        assert_eq!(namespace(&compile(&taken, true).0), namespace(&compile(&taken, false).0));
    }

    /// Regression (seed 823339547035): `s/j` renamed out of `s`, `s`
    /// removed, then `j` unlinked. Merged into "unlink `s/j`" after the
    /// rmdir, `j` was still in `s` when the rmdir ran: the backing store
    /// refused it, and `s` and `j` survived the commit.
    #[test]
    fn a_chain_ends_when_the_directory_it_started_in_is_removed() {
        let (kind, perm, rdev, uid, gid) = (FileKind::Dir, 0o755, 0, 0, 0);
        let mkdir =
            |ino, name: &str| LogEntry::Create { ino, parent: DIR, name: name.into(), kind, perm, rdev, uid, gid };
        let kind = FileKind::File;
        let create_j = LogEntry::Create { ino: 21, parent: 20, name: "j".into(), kind, perm, rdev, uid, gid };
        let out_of_s = LogEntry::Rename {
            ino: 21,
            parent: 20,
            name: "j".into(),
            new_parent: DIR,
            new_name: "f".into(),
            replaced: None,
        };
        let rmdir_s = LogEntry::Rmdir { ino: 20, parent: DIR, name: "s".into() };
        let removed = batch(vec![mkdir(20, "s"), create_j.clone(), out_of_s.clone(), rmdir_s, unlink(21, "f")]);
        let expected = ["create d/s", "create d/s/j", "rename d/s/j -> d/f", "rmdir d/s", "unlink d/f"];
        assert_eq!(namespace(&compile(&removed, true).0), expected);
        // A directory renamed over `s` needs it empty just the same.
        let over_s = LogEntry::Rename {
            ino: 22,
            parent: DIR,
            name: "t".into(),
            new_parent: DIR,
            new_name: "s".into(),
            replaced: Some(20),
        };
        let replaced =
            batch(vec![mkdir(20, "s"), create_j, out_of_s, mkdir(22, "t"), over_s, rename(21, "f", "g", None)]);
        assert_eq!(namespace(&compile(&replaced, true).0), namespace(&compile(&replaced, false).0));
    }

    #[test]
    fn only_the_last_times_set_on_an_inode_are_kept() {
        let at = |secs| std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
        let times = |ino, secs| LogEntry::SetTimes { ino, atime: at(secs), mtime: at(secs) };
        let b = batch(vec![times(10, 1), times(11, 2), rename(10, "a", "x", None), times(10, 3), times(11, 4)]);
        let set: Vec<(String, std::time::SystemTime)> = compile(&b, true)
            .0
            .into_iter()
            .filter_map(|op| match op {
                JournalOp::SetTimes { path, atime, .. } => Some((path.display().to_string(), atime)),
                _ => None,
            })
            .collect();
        assert_eq!(set, [("d/x".to_string(), at(3)), ("d/b".to_string(), at(4))]);
    }

    #[test]
    fn chains_of_two_inodes_that_swap_names_are_not_merged() {
        // The classic swap through a temporary name: each step needs the last.
        let swap = batch(vec![rename(10, "a", "t", None), rename(11, "b", "a", None), rename(10, "t", "b", None)]);
        let (ops, ends) = compile(&swap, true);
        assert_eq!(renames(&ops).len(), 3);
        assert_eq!(ends, compile(&swap, false).1);
    }
}
