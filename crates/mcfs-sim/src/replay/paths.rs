//! The replayer's view of the namespace: trace path (as a `file_calls::key_of` key) → inode number.
//!
//! Invariant: every entry names an inode the engine holds under that path, and holds exactly one kernel
//! reference on it (taken by the `create`/`mkdir` that made it, given back with `forget` when the entry
//! goes), so unlinked files are dropped by the engine as on a real mount. The root is the empty key.

use mcfs_core::{Ino, ROOT_INO};
use std::collections::BTreeMap;

pub struct PathTable {
    inodes: BTreeMap<Vec<u8>, Ino>,
}

impl PathTable {
    pub fn new() -> PathTable {
        PathTable { inodes: BTreeMap::from([(Vec::new(), ROOT_INO)]) }
    }

    pub fn get(&self, key: &[u8]) -> Option<Ino> {
        self.inodes.get(key).copied()
    }

    pub fn insert(&mut self, key: Vec<u8>, ino: Ino) {
        self.inodes.insert(key, ino);
    }

    pub fn remove(&mut self, key: &[u8]) -> Option<Ino> {
        self.inodes.remove(key)
    }

    /// Moves `from` and everything below it to `to`; returns the inode `to` named before, whose entry (and
    /// so its reference) is gone. The engine has checked the rename, so a replaced directory was empty.
    pub fn rename(&mut self, from: &[u8], to: &[u8]) -> Option<Ino> {
        let replaced = self.inodes.remove(to);
        let prefix = [from, b"/"].concat();
        // Descendants sort together right after `from/` (names such as `from-x` sort before it).
        let below = self.inodes.range(prefix.clone()..).map(|(k, _)| k).take_while(|k| k.starts_with(&prefix));
        let moved: Vec<Vec<u8>> = std::iter::once(from.to_vec()).chain(below.cloned()).collect();
        for old in moved {
            if let Some(ino) = self.inodes.remove(&old) {
                self.inodes.insert([to, &old[from.len()..]].concat(), ino);
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
        for (k, ino) in [("d", 2), ("d/f", 3), ("d/e/g", 4), ("d-2", 5), ("x", 6)] {
            t.insert(k.as_bytes().to_vec(), ino);
        }
        assert_eq!(t.rename(b"d", b"x"), Some(6));
        assert_eq!((t.get(b"x"), t.get(b"x/f"), t.get(b"x/e/g")), (Some(2), Some(3), Some(4)));
        assert_eq!((t.get(b"d"), t.get(b"d/f"), t.get(b"d-2")), (None, None, Some(5)));
    }
}
