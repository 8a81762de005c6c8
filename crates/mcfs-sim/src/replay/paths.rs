//! The replayer's view of the namespace: trace path (as a `file_calls::key_of` key) → inode number.
//!
//! Invariant: every entry names an inode the engine holds under that path, and holds exactly one kernel
//! reference on it (taken by the `create`/`mkdir` that made it, given back with `forget` when the entry
//! goes), so unlinked files are dropped by the engine as on a real mount. The root is the empty key.
//! `dirs` holds the keys `insert_dir` made (directories), so a rename looks for entries below only when it
//! moves a directory.

use super::Fast;
use mcfs_core::{Ino, ROOT_INO};
use std::collections::{HashMap, HashSet};

pub struct PathTable {
    inodes: HashMap<Vec<u8>, Ino, Fast>,
    dirs: HashSet<Vec<u8>, Fast>,
}

impl PathTable {
    pub fn new() -> PathTable {
        PathTable { inodes: HashMap::from_iter([(Vec::new(), ROOT_INO)]), dirs: HashSet::from_iter([Vec::new()]) }
    }

    pub fn get(&self, key: &[u8]) -> Option<Ino> {
        self.inodes.get(key).copied()
    }

    pub fn insert(&mut self, key: Vec<u8>, ino: Ino) {
        self.inodes.insert(key, ino);
    }

    /// `insert` for a directory.
    pub fn insert_dir(&mut self, key: Vec<u8>, ino: Ino) {
        self.dirs.insert(key.clone());
        self.inodes.insert(key, ino);
    }

    pub fn remove(&mut self, key: &[u8]) -> Option<Ino> {
        self.dirs.remove(key);
        self.inodes.remove(key)
    }

    /// Moves `from` and everything below it to `to`; returns the inode `to` named before, whose entry (and
    /// so its reference) is gone. The engine has checked the rename, so a replaced directory was empty.
    pub fn rename(&mut self, from: &[u8], to: &[u8]) -> Option<Ino> {
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
}
