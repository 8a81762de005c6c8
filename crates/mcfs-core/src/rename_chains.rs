//! A pre-pass over the closed entries of one batch, which commits as one
//! transaction (only its start and its end can be seen after a crash), that
//! merges the renames of an inode through names that exist only in between:
//! `a→b, b→c` becomes `a→c` at the place of the second rename, and `a→b, b→a`
//! disappears (so does an exchange of a name with itself). The apply gives each rename whose source an earlier op of its
//! group touched a group of its own (two barriers); a file renamed 10,000
//! times in a row (stress-ng `--rename`, a log rotated in a loop) would cost
//! 20,000.
//!
//! Invariant: compiling the merged entries from the batch's starting tree
//! gives every other entry the same inode behind the same (parent, name) as
//! compiling them all, and ends in the same tree. A rename `x: a→b` is only
//! dropped if it replaced nothing (`b` was free), its inode's next rename
//! starts at `b`, and no entry in between names `a` or `b` (creates, links,
//! unlinks, renames, exchanges there): so in between, `x` may stay at `a`
//! (entries name inodes, not paths, so they reach `x` either way), and `a`
//! is free again when the merged rename leaves it.

use crate::types::Ino;
use crate::vct::{AppId, ClosedEntry, ClosedVct, LogEntry};
use std::borrow::Cow;
use std::collections::HashMap;
use std::ffi::OsString;

/// A directory entry: (parent inode, name).
type Name = (Ino, OsString);

/// What becomes of one entry of the batch.
enum Merge {
    /// A rename the next rename of its inode takes over, or half of a pair
    /// that cancels out.
    Drop,
    /// A rename that now starts where its chain started.
    From(Name),
}

/// A run of renames of one inode, each starting where the last one ended.
struct Chain {
    /// Where the first rename of the run started.
    start: Name,
    /// Where the last one ended.
    at: Name,
    /// Position of the last one in the batch.
    last: usize,
    /// The last one replaced nothing, so dropping it loses nothing.
    extendable: bool,
}

/// The merges found in one batch (see the module comment).
#[derive(Default)]
pub struct RenameChains {
    merges: HashMap<usize, Merge>,
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
        flat(batch).enumerate().filter_map(|(position, (app, entry))| match (self.merges.get(&position), entry) {
            (None, _) => Some((app, Cow::Borrowed(entry))),
            (Some(Merge::Drop), _) => None,
            (
                Some(Merge::From((parent, name))),
                ClosedEntry::Other(LogEntry::Rename { ino, new_parent, new_name, replaced, .. }),
            ) => {
                let rename = LogEntry::Rename {
                    ino: *ino,
                    parent: *parent,
                    name: name.clone(),
                    new_parent: *new_parent,
                    new_name: new_name.clone(),
                    replaced: *replaced,
                };
                Some((app, Cow::Owned(ClosedEntry::Other(rename))))
            }
            (Some(Merge::From(_)), _) => Some((app, Cow::Borrowed(entry))),
        })
    }
}

fn flat(batch: &[ClosedVct]) -> impl Iterator<Item = (AppId, &ClosedEntry)> {
    batch.iter().flat_map(|v| v.entries.iter().map(move |e| (v.app, e)))
}

#[derive(Default)]
struct Finder {
    chains: HashMap<Ino, Chain>,
    /// The names a chain needs left alone (its start and where it is), with its inode.
    watched: HashMap<Name, Ino>,
    merges: HashMap<usize, Merge>,
}

impl Finder {
    fn entry(&mut self, position: usize, entry: &LogEntry) {
        if let LogEntry::Exchange { parent, name, new_parent, new_name } = entry {
            if (parent, name) == (new_parent, new_name) {
                self.merges.insert(position, Merge::Drop);
                return;
            }
        }
        if let LogEntry::Rename { ino, parent, name, new_parent, new_name, replaced } = entry {
            let from = (*parent, name.clone());
            let to = (*new_parent, new_name.clone());
            if !self.extend(*ino, position, &from, &to, replaced.is_none()) {
                self.touch(&from);
                self.touch(&to);
                self.end_chain(*ino);
                let chain =
                    Chain { start: from.clone(), at: to.clone(), last: position, extendable: replaced.is_none() };
                self.watched.insert(from, *ino);
                self.watched.insert(to, *ino);
                self.chains.insert(*ino, chain);
            }
            return;
        }
        for name in names_touched(entry) {
            self.touch(&name);
        }
    }

    /// Merges the rename `ino: from→to` at `position` into the chain of
    /// `ino` if it continues it; false if it does not.
    fn extend(&mut self, ino: Ino, position: usize, from: &Name, to: &Name, replaces_nothing: bool) -> bool {
        let Some(chain) = self.chains.get(&ino).filter(|c| c.extendable && c.at == *from) else {
            return false;
        };
        let (start, last) = (chain.start.clone(), chain.last);
        if self.watched.get(to).is_some_and(|watcher| *watcher != ino) {
            self.touch(to);
        }
        self.merges.insert(last, Merge::Drop);
        self.watched.remove(from);
        if *to == start {
            // Back where it started: nothing happened to it at all.
            self.merges.insert(position, Merge::Drop);
            self.end_chain(ino);
            return true;
        }
        self.merges.insert(position, Merge::From(start));
        self.watched.insert(to.clone(), ino);
        let chain = self.chains.get_mut(&ino).expect("checked above");
        (chain.at, chain.last, chain.extendable) = (to.clone(), position, replaces_nothing);
        true
    }

    /// An entry names `name`: a chain watching it ends where it is.
    fn touch(&mut self, name: &Name) {
        if let Some(ino) = self.watched.get(name).copied() {
            self.end_chain(ino);
        }
    }

    fn end_chain(&mut self, ino: Ino) {
        if let Some(chain) = self.chains.remove(&ino) {
            self.watched.remove(&chain.start);
            self.watched.remove(&chain.at);
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
        | LogEntry::RemoveXattr { .. } => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::committed::CommittedTree;
    use crate::compile::Compiler;
    use crate::journal::JournalOp;
    use crate::types::{FileKind, ROOT_INO};
    use std::collections::HashSet;

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
        let skip = HashSet::new();
        let mut compiler =
            Compiler { tree: &mut tree, still_live: &|_| false, preserve_owner: false, skip: &skip, ops: Vec::new() };
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

    #[test]
    fn chains_of_two_inodes_that_swap_names_are_not_merged() {
        // The classic swap through a temporary name: each step needs the last.
        let swap = batch(vec![rename(10, "a", "t", None), rename(11, "b", "a", None), rename(10, "t", "b", None)]);
        let (ops, ends) = compile(&swap, true);
        assert_eq!(renames(&ops).len(), 3);
        assert_eq!(ends, compile(&swap, false).1);
    }
}
