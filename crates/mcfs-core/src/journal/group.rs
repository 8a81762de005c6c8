//! Which ops of a transaction may share one durable progress record. A
//! *group* starts at a progress record and collects the ops after it; a
//! namespace op may join only if none of its paths is related (equal, an
//! ancestor or a descendant) to a path an earlier op of the group touched.
//! `apply` also asks here whether a data op reaches through a name a rename
//! re-pointed since the last sync.
//!
//! Invariant: a `PathSet` never answers "unrelated" wrongly. When it cannot
//! be exact (a path it cannot key, or too many paths) it *saturates* and
//! calls every path related, which only costs syncs.

use super::JournalOp;
use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};

/// Paths a set holds before it saturates: bounds the memory of one group
/// (and the syncs saved per group hardly grow beyond it).
const MAX_PATHS: usize = 1 << 16;

/// The paths an op resolves. (A symlink's target is content, not a path.)
pub fn op_paths(op: &JournalOp) -> [Option<&Path>; 2] {
    match op {
        JournalOp::Link { existing: a, new: b } | JournalOp::Rename { from: a, to: b } => [Some(a), Some(b)],
        JournalOp::Write { path, .. }
        | JournalOp::SetLen { path, .. }
        | JournalOp::Create { path, .. }
        | JournalOp::Symlink { path, .. }
        | JournalOp::RemoveFile { path }
        | JournalOp::RemoveDir { path }
        | JournalOp::SetOwner { path, .. }
        | JournalOp::SetPerm { path, .. }
        | JournalOp::SetTimes { path, .. }
        | JournalOp::SetXattr { path, .. }
        | JournalOp::RemoveXattr { path, .. }
        | JournalOp::Fallocate { path, .. } => [Some(path), None],
    }
}

/// A set of backing paths that answers "is this path equal to, above or
/// below one of mine?" in time proportional to the path's depth.
#[derive(Default)]
pub struct PathSet {
    /// The paths inserted, as plain names.
    paths: HashSet<PathBuf>,
    /// Every proper ancestor of an inserted path (the root included).
    above: HashSet<PathBuf>,
    /// Stands for every path.
    saturated: bool,
}

impl PathSet {
    pub fn insert(&mut self, path: &Path) {
        if self.saturated {
            return;
        }
        let Some(key) = key(path) else {
            self.saturated = true;
            return;
        };
        if self.paths.len() >= MAX_PATHS {
            self.saturated = true;
            self.paths.clear();
            self.above.clear();
            return;
        }
        for ancestor in key.ancestors().skip(1) {
            if !self.above.insert(ancestor.to_owned()) {
                break; // its own ancestors are in already
            }
        }
        self.paths.insert(key);
    }

    pub fn insert_op(&mut self, op: &JournalOp) {
        op_paths(op).into_iter().flatten().for_each(|p| self.insert(p));
    }

    /// `path` is equal to, an ancestor of or a descendant of a path in the set.
    pub fn related(&self, path: &Path) -> bool {
        if self.saturated {
            return true;
        }
        if self.paths.is_empty() {
            return false;
        }
        let Some(key) = key(path) else { return true };
        self.above.contains(&key) || key.ancestors().any(|a| self.paths.contains(a))
    }

    pub fn related_op(&self, op: &JournalOp) -> bool {
        op_paths(op).into_iter().flatten().any(|p| self.related(p))
    }

    pub fn clear(&mut self) {
        self.paths.clear();
        self.above.clear();
        self.saturated = false;
    }
}

/// `path` as the backend resolves it: its plain names (`.` dropped). `None`
/// for `..` or an absolute path, which the relation cannot judge (the
/// backend refuses them anyway).
fn key(path: &Path) -> Option<PathBuf> {
    let mut key = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Normal(name) => key.push(name),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(paths: &[&str]) -> PathSet {
        let mut s = PathSet::default();
        paths.iter().for_each(|p| s.insert(Path::new(p)));
        s
    }

    #[test]
    fn journal_group_relation_is_equal_ancestor_or_descendant_by_name() {
        let s = set(&["d/x", "e", "./f/g/"]);
        for related in ["d/x", "d", "", "d/x/y", "e", "e/z/w", "f/g", "f", "./d/x", "d//x", "f/g/h"] {
            assert!(s.related(Path::new(related)), "{related:?} is related");
        }
        for unrelated in ["d/y", "d/xy", "dd", "ee", "f/h", "g", "x"] {
            assert!(!s.related(Path::new(unrelated)), "{unrelated:?} is unrelated");
        }
        assert!(!PathSet::default().related(Path::new("")), "an empty set relates to nothing");
        let root = set(&[""]);
        assert!(root.related(Path::new("any/path")), "the root is above everything");
    }

    #[test]
    fn journal_group_paths_it_cannot_judge_saturate_the_set() {
        let mut s = set(&["a"]);
        assert!(s.related(Path::new("../a")) && s.related(Path::new("/a")), "unjudgeable paths are related");
        s.insert(Path::new("x/../b"));
        assert!(s.related(Path::new("c")), "saturated: everything is related");
        s.clear();
        assert!(!s.related(Path::new("c")));
    }

    #[test]
    fn journal_group_set_saturates_instead_of_growing_without_bound() {
        let mut s = PathSet::default();
        for i in 0..MAX_PATHS {
            s.insert(Path::new(&format!("d/f{i}")));
        }
        assert!(!s.related(Path::new("d/g")));
        s.insert(Path::new("d/one-too-many"));
        assert!(s.related(Path::new("d/g")) && s.paths.is_empty(), "saturated and freed");
    }

    #[test]
    fn journal_group_op_paths_cover_both_names_of_link_and_rename() {
        let mut s = PathSet::default();
        s.insert_op(&JournalOp::Rename { from: "a".into(), to: "d/b".into() });
        assert!(s.related(Path::new("a")) && s.related(Path::new("d/b/c")) && s.related(Path::new("d")));
        let link = JournalOp::Link { existing: "x".into(), new: "a".into() };
        assert!(s.related_op(&link), "the new name of the link is related");
        let target = JournalOp::Symlink { path: "s".into(), target: "a".into() };
        assert!(!s.related_op(&target), "a symlink's target is not resolved");
    }
}
