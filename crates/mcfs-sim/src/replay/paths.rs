//! The replayer's view of the namespace: trace path (as a `file_calls::key_of` key) → inode number.
//!
//! Invariant: every entry names an inode the engine holds under that path, and holds exactly one kernel
//! reference on it (taken by the `create`/`mkdir` that made it, given back with `forget` when the entry
//! goes), so unlinked files are dropped by the engine as on a real mount. The root is the empty key.
//! `dirs` holds the keys `insert_dir` made (directories), so a rename looks for entries below only when it
//! moves a directory. `recent` holds trace paths `resolve` found lately, as spelt (see `RecentPaths`).

use crate::file_calls::key_of;
use mcfs_core::backend::RecentPaths;
use mcfs_core::{FsResult, Ino, ROOT_INO};
use std::collections::{HashMap, HashSet};

/// Trace paths are names apps chose: hashed with SipHash (std's default), not `InoHasher` (see `Fast`).
pub struct PathTable {
    inodes: HashMap<Vec<u8>, Ino>,
    dirs: HashSet<Vec<u8>>,
    /// Trace paths `resolve` found lately, as the trace spelt them: events mostly name one of a few
    /// files. A removed or moved entry clears them (a new one changes no path's inode).
    recent: RecentPaths,
}

impl PathTable {
    pub fn new() -> PathTable {
        PathTable {
            inodes: HashMap::from_iter([(Vec::new(), ROOT_INO)]),
            dirs: HashSet::from_iter([Vec::new()]),
            recent: RecentPaths::default(),
        }
    }

    /// The inode a trace path names (`key_of` it), if the table has it.
    pub fn resolve(&mut self, path: &[u8]) -> FsResult<Option<Ino>> {
        if let Some(ino) = self.recent.get(path) {
            return Ok(Some(ino));
        }
        let Some(ino) = self.get(&key_of(path)?) else { return Ok(None) };
        self.recent.insert(path, ino);
        Ok(Some(ino))
    }

    pub fn get(&self, key: &[u8]) -> Option<Ino> {
        self.inodes.get(key).copied()
    }

    pub fn insert(&mut self, key: Vec<u8>, ino: Ino) {
        if self.inodes.insert(key, ino).is_some() {
            self.recent.clear();
        }
    }

    /// `insert` for a directory.
    pub fn insert_dir(&mut self, key: Vec<u8>, ino: Ino) {
        self.dirs.insert(key.clone());
        self.insert(key, ino);
    }

    pub fn remove(&mut self, key: &[u8]) -> Option<Ino> {
        self.recent.clear();
        self.dirs.remove(key);
        self.inodes.remove(key)
    }

    /// Moves `from` and everything below it to `to`; returns the inode `to` named before, whose entry (and
    /// so its reference) is gone. The engine has checked the rename, so a replaced directory was empty.
    pub fn rename(&mut self, from: &[u8], to: &[u8]) -> Option<Ino> {
        // `remove` forgets the recent paths, whether `to` was there or not.
        let replaced = self.remove(to);
        let mut moved = vec![from.to_vec()];
        if self.dirs.contains(from) {
            // A directory (rare): every key below it, found by a scan.
            let prefix = [from, b"/"].concat();
            moved.extend(self.inodes.keys().filter(|k| k.starts_with(&prefix)).cloned());
        }
        for old in moved {
            let new = [to, &old[from.len()..]].concat();
            if self.dirs.remove(&old) {
                self.dirs.insert(new.clone());
            }
            if let Some(ino) = self.inodes.remove(&old) {
                self.inodes.insert(new, ino);
            }
        }
        replaced
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rename_moves_a_subtree_but_not_its_name_siblings() {
        let mut t = PathTable::new();
        for (k, ino) in [("d", 2), ("d/e", 7)] {
            t.insert_dir(k.as_bytes().to_vec(), ino);
        }
        for (k, ino) in [("d/f", 3), ("d/e/g", 4), ("d-2", 5), ("x", 6)] {
            t.insert(k.as_bytes().to_vec(), ino);
        }
        assert_eq!(t.rename(b"d", b"x"), Some(6));
        assert_eq!((t.get(b"x"), t.get(b"x/f"), t.get(b"x/e/g")), (Some(2), Some(3), Some(4)));
        assert_eq!((t.get(b"d"), t.get(b"d/f"), t.get(b"d-2")), (None, None, Some(5)));
        // The moved subdirectory is still known as one: moving it again takes what is below it.
        assert_eq!(t.rename(b"x/e", b"y"), None);
        assert_eq!((t.get(b"y"), t.get(b"y/g"), t.get(b"x/e/g")), (Some(7), Some(4), None));
    }

    #[test]
    fn a_path_resolved_again_follows_the_changes_in_between() {
        let mut t = PathTable::new();
        t.insert(b"a".to_vec(), 2);
        assert_eq!(t.resolve(b"/a").unwrap(), Some(2));
        assert_eq!(t.resolve(b"/a").unwrap(), Some(2), "the same spelling again");
        assert_eq!(t.rename(b"a", b"b"), None);
        assert_eq!((t.resolve(b"/a").unwrap(), t.resolve(b"/b").unwrap()), (None, Some(2)));
        t.remove(b"b");
        assert_eq!(t.resolve(b"/b").unwrap(), None);
        t.insert(b"b".to_vec(), 3);
        assert_eq!(t.resolve(b"b/../b").unwrap(), Some(3));
        t.insert(b"c".to_vec(), 4);
        assert_eq!((t.resolve(b"b/../b").unwrap(), t.resolve(b"c").unwrap()), (Some(3), Some(4)), "a new entry");
        t.insert(b"b".to_vec(), 5);
        assert_eq!(t.resolve(b"b/../b").unwrap(), Some(5), "an entry replaced");
        assert!(t.resolve(b"b\x00").is_err(), "a NUL byte is refused, cached path or not");
    }
}
