//! Where each inode is in the backing store as of the last commit: the
//! checkpointer turns inode numbers in write logs into backing paths with it,
//! and cache misses read file data through it.
//!
//! While committed transactions wait in the journal, `Committed` holds the
//! tree the backing store has (before them) and the tree they lead to. The
//! backing store is the tree before them until the applier runs, so readers
//! use that one (the pages the waiting transactions write are pinned in the
//! cache, and their truncates and punched holes are still pending in the
//! inodes). While the applier runs, a reader may use a path that is the same
//! before and after the run; only an inode the run moves has to wait for the
//! apply to end. Commits go on during a run: the tree they lead to is newer
//! than the run's end, which the backing store has once the run is applied.

use crate::types::{Ino, InoMap, ROOT_INO};
use crate::STATE_DIR;
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::hash::{BuildHasher, Hash};
use std::path::PathBuf;
use std::sync::Arc;

/// Directory (inside `STATE_DIR`) holding files unlinked while still open.
pub const ORPHAN_DIR: &str = "orphans";

/// A tree is maps shared with the trees copied from it (`base`) and what it
/// changed of them since (`changes`): a checkpoint's copy of the tree
/// (`Committed::begin_compile`) costs what its transaction changes, not a
/// copy of every name, and the backing store's tree takes the changes of a
/// run into its maps (`Committed::end_run`). A tree that shares its maps with
/// no other and has no changes of its own changes them in place.
#[derive(Clone, Default)]
pub struct CommittedTree {
    base: Arc<Maps>,
    changes: Changes,
}

#[derive(Clone, Default)]
struct Maps {
    /// The names of each inode. Directories have one.
    links: InoMap<Links>,
    /// The inode behind each name.
    entries: HashMap<(Ino, Name), Ino>,
    /// Inodes kept at `.mcfs/orphans/<ino>` after losing their last name.
    orphans: InoMap<()>,
}

/// The values a tree changed of its base's maps (`None`: removed).
#[derive(Clone, Default)]
struct Changes {
    links: InoMap<Option<Links>>,
    entries: HashMap<(Ino, Name), Option<Ino>>,
    orphans: InoMap<Option<()>>,
}

impl Changes {
    fn is_empty(&self) -> bool {
        self.links.is_empty() && self.entries.is_empty() && self.orphans.is_empty()
    }
}

/// The value of `key` in a base map with `changes` over it.
fn layered<'a, K: Hash + Eq, V, S: BuildHasher>(
    changes: &'a HashMap<K, Option<V>, S>,
    base: &'a HashMap<K, V, S>,
    key: &K,
) -> Option<&'a V> {
    match changes.get(key) {
        Some(changed) => changed.as_ref(),
        None => base.get(key),
    }
}

/// Sets (or removes) `key` in a map.
fn put<K: Hash + Eq, V, S: BuildHasher>(map: &mut HashMap<K, V, S>, key: K, value: Option<V>) {
    match value {
        Some(value) => map.insert(key, value),
        None => map.remove(&key),
    };
}

/// Notes a change of `key` over `base`; a key the base lacks is removed
/// outright, so that the changes of a tree hold no more than it has.
fn change<K: Hash + Eq, V, S: BuildHasher>(
    changes: &mut HashMap<K, Option<V>, S>,
    base: &HashMap<K, V, S>,
    key: K,
    value: Option<V>,
) {
    if value.is_none() && !base.contains_key(&key) {
        changes.remove(&key);
    } else {
        changes.insert(key, value);
    }
}

/// A name in a directory, shared by the trees that hold it.
type Name = Arc<OsStr>;
/// (parent, name).
type Link = (Ino, Name);

/// The names of one inode, oldest first: the first is the one `path`
/// follows; the rest (hard links, rare) are apart so that the common inode
/// with one name needs no allocation of its own.
#[derive(Clone)]
struct Links {
    first: Link,
    more: Vec<Link>,
}

impl Links {
    fn iter(&self) -> impl Iterator<Item = &Link> {
        std::iter::once(&self.first).chain(&self.more)
    }

    /// Keeps the names `keep` says to, in order; `None` if none is left.
    fn retain(self, keep: impl Fn(&Link) -> bool) -> Option<Links> {
        let mut kept = std::iter::once(self.first).chain(self.more).filter(|link| keep(link));
        let first = kept.next()?;
        Some(Links { first, more: kept.collect() })
    }
}

impl CommittedTree {
    /// The backing path of an inode (through any of its names), if it has one.
    pub fn path(&self, ino: Ino) -> Option<PathBuf> {
        if self.is_orphan(ino) {
            return Some(orphan_path(ino));
        }
        let mut names: Vec<&OsStr> = Vec::new();
        let mut at = ino;
        while at != ROOT_INO {
            let (parent, name) = &self.links(at)?.first;
            names.push(name);
            at = *parent;
            if names.len() > 4096 {
                return None; // a cycle would be a bug; never loop forever
            }
        }
        // Sized once: pushing name by name would grow the buffer as it goes.
        let mut path = PathBuf::with_capacity(names.iter().map(|n| n.len() + 1).sum());
        names.iter().rev().for_each(|name| path.push(name));
        Some(path)
    }

    /// The backing path of `name` inside directory `parent`.
    pub fn child_path(&self, parent: Ino, name: &OsStr) -> Option<PathBuf> {
        self.path(parent).map(|p| p.join(name))
    }

    pub fn add_link(&mut self, ino: Ino, parent: Ino, name: &OsStr) {
        if self.is_orphan(ino) {
            self.set_orphan(ino, None);
        }
        let link = (parent, Name::from(name));
        self.set_entry(link.clone(), Some(ino));
        let links = match self.links(ino) {
            Some(links) => {
                let mut links = links.clone();
                links.more.push(link);
                links
            }
            None => Links { first: link, more: Vec::new() },
        };
        self.set_links(ino, Some(links));
    }

    /// Removes one name; returns true if the inode has no name left.
    pub fn remove_link(&mut self, ino: Ino, parent: Ino, name: &OsStr) -> bool {
        self.set_entry((parent, Name::from(name)), None);
        let Some(names) = self.links(ino).cloned() else { return true };
        let left = names.retain(|(p, n)| !(*p == parent && **n == *name));
        let gone = left.is_none();
        self.set_links(ino, left);
        gone
    }

    pub fn make_orphan(&mut self, ino: Ino) {
        self.drop_names(ino);
        self.set_orphan(ino, Some(()));
    }

    fn drop_names(&mut self, ino: Ino) {
        if let Some(links) = self.links(ino).cloned() {
            self.set_links(ino, None);
            for link in links.iter() {
                self.set_entry(link.clone(), None);
            }
        }
    }

    /// RENAME_EXCHANGE: the two names trade inodes.
    pub fn swap_entries(&mut self, p1: Ino, n1: &OsStr, p2: Ino, n2: &OsStr) {
        let a = self.entry(&(p1, Name::from(n1)));
        let b = self.entry(&(p2, Name::from(n2)));
        if let (Some(a), Some(b)) = (a, b) {
            self.remove_link(a, p1, n1);
            self.remove_link(b, p2, n2);
            self.add_link(a, p2, n2);
            self.add_link(b, p1, n1);
        }
    }

    pub fn is_orphan(&self, ino: Ino) -> bool {
        layered(&self.changes.orphans, &self.base.orphans, &ino).is_some()
    }

    pub fn forget(&mut self, ino: Ino) {
        self.drop_names(ino);
        if self.is_orphan(ino) {
            self.set_orphan(ino, None);
        }
    }

    fn links(&self, ino: Ino) -> Option<&Links> {
        layered(&self.changes.links, &self.base.links, &ino)
    }

    fn entry(&self, link: &Link) -> Option<Ino> {
        layered(&self.changes.entries, &self.base.entries, link).copied()
    }

    /// The maps to change in place: this tree's alone, and no changes over them.
    fn own_maps(&mut self) -> Option<&mut Maps> {
        if !self.changes.is_empty() {
            return None;
        }
        Arc::get_mut(&mut self.base)
    }

    fn set_links(&mut self, ino: Ino, links: Option<Links>) {
        match self.own_maps() {
            Some(maps) => put(&mut maps.links, ino, links),
            None => change(&mut self.changes.links, &self.base.links, ino, links),
        }
    }

    fn set_entry(&mut self, link: Link, ino: Option<Ino>) {
        match self.own_maps() {
            Some(maps) => put(&mut maps.entries, link, ino),
            None => change(&mut self.changes.entries, &self.base.entries, link, ino),
        }
    }

    fn set_orphan(&mut self, ino: Ino, orphan: Option<()>) {
        match self.own_maps() {
            Some(maps) => put(&mut maps.orphans, ino, orphan),
            None => change(&mut self.changes.orphans, &self.base.orphans, ino, orphan),
        }
    }

    /// Takes the changes into the maps (copying them first if another tree
    /// shares them).
    fn flatten(&mut self) {
        if self.changes.is_empty() {
            return;
        }
        let maps = Arc::make_mut(&mut self.base);
        self.changes.links.drain().for_each(|(ino, links)| put(&mut maps.links, ino, links));
        self.changes.entries.drain().for_each(|(link, ino)| put(&mut maps.entries, link, ino));
        self.changes.orphans.drain().for_each(|(ino, orphan)| put(&mut maps.orphans, ino, orphan));
    }
}

/// The transaction being applied moves this inode: wait for it.
#[derive(Debug, PartialEq, Eq)]
pub struct Moving;

#[derive(Default)]
pub struct Committed {
    /// The tree the backing store has (before the transactions waiting).
    pub before: CommittedTree,
    /// While the applier carries a run of waiting transactions out in
    /// place: the tree the run leads to (`None` if it is `before`: a run
    /// resuming after a failure).
    run_end: Option<CommittedTree>,
    /// While transactions wait that no run has taken: the tree they lead to.
    after: Option<CommittedTree>,
    /// While a checkpoint compiles its transaction against a copy of the
    /// tree: the names found in the backing store meanwhile, which the copy
    /// gets when it is installed (else they would be lost, and the inodes
    /// under them unreachable to later checkpoints).
    found_while_compiling: Option<Vec<(Ino, Ino, OsString)>>,
}

impl Committed {
    /// The tree as of the newest durable commit.
    pub fn latest(&self) -> &CommittedTree {
        self.after.as_ref().or(self.run_end.as_ref()).unwrap_or(&self.before)
    }

    /// A backing path for reading `ino` that is valid throughout the apply
    /// in flight, if any; `Ok(None)` if the inode is not in the backing store.
    pub fn stable_path(&self, ino: Ino) -> Result<Option<PathBuf>, Moving> {
        let before = self.before.path(ino);
        match &self.run_end {
            Some(end) if end.path(ino) != before => Err(Moving),
            _ => Ok(before),
        }
    }

    /// The applier takes every waiting transaction as its run (the journal
    /// locked, so that no commit comes in between).
    pub fn start_run(&mut self) {
        self.run_end = self.after.take();
    }

    /// The run ended: the backing store has its end (after a failure too:
    /// the apply may have moved names, and its transactions are durable, so
    /// the retry or recovery finishes them).
    pub fn end_run(&mut self) {
        if let Some(end) = self.run_end.take() {
            self.before = end;
            self.before.flatten();
        }
    }

    /// Records a name found in the backing store (in both trees, and in the
    /// copy a checkpoint is compiling against).
    pub fn add_link(&mut self, ino: Ino, parent: Ino, name: &OsStr) {
        self.before.add_link(ino, parent, name);
        for tree in [&mut self.run_end, &mut self.after].into_iter().flatten() {
            tree.add_link(ino, parent, name);
        }
        if let Some(found) = &mut self.found_while_compiling {
            found.push((ino, parent, name.to_owned()));
        }
    }

    /// The tree a checkpoint compiles its transaction against (the newest).
    pub fn begin_compile(&mut self) -> CommittedTree {
        self.found_while_compiling = Some(Vec::new());
        self.latest().clone()
    }

    /// The compiled transaction is durable: `tree` (with the names found
    /// meanwhile) is what its apply leads to.
    pub fn install(&mut self, mut tree: CommittedTree) {
        for (ino, parent, name) in self.found_while_compiling.take().unwrap_or_default() {
            if tree.entry(&(parent, Name::from(name.as_os_str()))).is_none() {
                tree.add_link(ino, parent, &name);
            }
        }
        self.after = Some(tree);
    }

    /// The compiled transaction was dropped.
    pub fn abandon_compile(&mut self) {
        self.found_while_compiling = None;
    }
}

pub fn orphan_path(ino: Ino) -> PathBuf {
    PathBuf::from(STATE_DIR).join(ORPHAN_DIR).join(ino.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_follow_parents_and_orphans() {
        let mut t = CommittedTree::default();
        t.add_link(2, ROOT_INO, OsStr::new("d"));
        t.add_link(3, 2, OsStr::new("f"));
        t.add_link(3, ROOT_INO, OsStr::new("g"));
        assert_eq!(t.path(ROOT_INO), Some(PathBuf::new()));
        assert_eq!(t.path(3), Some(PathBuf::from("d/f")));
        assert!(!t.remove_link(3, 2, OsStr::new("f")));
        assert_eq!(t.path(3), Some(PathBuf::from("g")));
        assert!(t.remove_link(3, ROOT_INO, OsStr::new("g")));
        assert_eq!(t.path(3), None);
        t.make_orphan(3);
        assert_eq!(t.path(3), Some(PathBuf::from(".mcfs/orphans/3")));
    }

    #[test]
    fn a_copy_and_its_original_change_apart() {
        let mut t = CommittedTree::default();
        t.add_link(2, ROOT_INO, OsStr::new("a"));
        let mut copy = t.clone();
        copy.make_orphan(2);
        t.add_link(3, ROOT_INO, OsStr::new("c"));
        assert_eq!(t.path(2), Some(PathBuf::from("a")));
        assert_eq!((copy.path(2), copy.path(3)), (Some(orphan_path(2)), None));
        drop(t);
        copy.flatten();
        assert!(copy.changes.is_empty());
        assert_eq!(copy.path(2), Some(orphan_path(2)));
        assert_eq!(copy.entry(&(ROOT_INO, Name::from(OsStr::new("a")))), None);
        copy.add_link(2, ROOT_INO, OsStr::new("b"));
        assert!(copy.changes.is_empty(), "maps of its own change in place");
        assert_eq!(copy.path(2), Some(PathBuf::from("b")));
    }

    #[test]
    fn readers_wait_only_for_inodes_the_transaction_moves() {
        let mut c = Committed::default();
        c.add_link(2, ROOT_INO, OsStr::new("a"));
        c.add_link(3, ROOT_INO, OsStr::new("b"));
        let mut after = c.begin_compile();
        after.remove_link(2, ROOT_INO, OsStr::new("a"));
        after.add_link(2, ROOT_INO, OsStr::new("z"));
        c.install(after);
        assert_eq!(c.stable_path(2), Ok(Some(PathBuf::from("a"))), "waiting: the backing store has the old name");
        c.start_run();
        assert_eq!(c.stable_path(2), Err(Moving));
        assert_eq!(c.stable_path(3), Ok(Some(PathBuf::from("b"))));
        assert_eq!(c.latest().path(2), Some(PathBuf::from("z")));
    }

    #[test]
    fn a_commit_during_a_run_is_newest_and_the_run_end_is_what_the_store_gets() {
        let mut c = Committed::default();
        c.add_link(2, ROOT_INO, OsStr::new("a"));
        let mut first = c.begin_compile();
        first.remove_link(2, ROOT_INO, OsStr::new("a"));
        first.add_link(2, ROOT_INO, OsStr::new("b"));
        c.install(first);
        c.start_run();
        // Committed while the run applies: compiled against the run's end.
        let mut second = c.begin_compile();
        assert_eq!(second.path(2), Some(PathBuf::from("b")));
        second.remove_link(2, ROOT_INO, OsStr::new("b"));
        second.add_link(2, ROOT_INO, OsStr::new("c"));
        c.install(second);
        assert_eq!(c.latest().path(2), Some(PathBuf::from("c")));
        assert_eq!(c.stable_path(2), Err(Moving), "the run moves it from a to b");
        c.add_link(4, ROOT_INO, OsStr::new("found"));
        c.end_run();
        assert_eq!(c.stable_path(2), Ok(Some(PathBuf::from("b"))), "the store has the run's end");
        assert_eq!(c.latest().path(2), Some(PathBuf::from("c")), "the later commit still waits");
        for tree in [&c.before, c.latest()] {
            assert_eq!(tree.path(4), Some(PathBuf::from("found")), "a name found during the run is in every tree");
        }
        c.start_run();
        c.end_run();
        assert_eq!(c.before.path(2), Some(PathBuf::from("c")));
    }

    #[test]
    fn names_found_while_a_checkpoint_compiles_survive_its_install() {
        let mut c = Committed::default();
        c.add_link(2, ROOT_INO, OsStr::new("a"));
        let mut compiled = c.begin_compile();
        compiled.add_link(3, ROOT_INO, OsStr::new("new")); // the transaction creates "new"
        c.add_link(4, 2, OsStr::new("found")); // a directory is listed meanwhile
        c.install(compiled);
        c.start_run();
        c.end_run();
        assert_eq!(c.before.path(4), Some(PathBuf::from("a/found")));
        assert_eq!(c.before.path(3), Some(PathBuf::from("new")));
    }

    #[test]
    fn exchange_swaps_the_inodes_behind_two_names() {
        let mut t = CommittedTree::default();
        t.add_link(2, ROOT_INO, OsStr::new("a"));
        t.add_link(3, ROOT_INO, OsStr::new("b"));
        t.swap_entries(ROOT_INO, OsStr::new("a"), ROOT_INO, OsStr::new("b"));
        assert_eq!(t.path(2), Some(PathBuf::from("b")));
        assert_eq!(t.path(3), Some(PathBuf::from("a")));
    }
}
