//! The replayer's view of the namespace: normalized trace path → inode number.
//!
//! Invariant: every entry names an inode the engine holds under that path, and holds exactly one kernel
//! reference on it (taken by the `create`/`mkdir` that made it, given back with `forget` when the entry
//! goes), so unlinked files are dropped by the engine as on a real mount. The root is the empty key.

use mcfs_core::{Ino, ROOT_INO};
use std::collections::BTreeMap;

/// A path reduced to its names joined by `/`: no leading, trailing or doubled slashes, no `.`, and `..`
/// resolved lexically (it stops at the root, as in the kernel). Relative paths are taken from the root.
pub fn normalize(path: &[u8]) -> Vec<u8> {
    let mut names: Vec<&[u8]> = Vec::new();
    for name in path.split(|b| *b == b'/') {
        match name {
            b"" | b"." => {}
            b".." => {
                names.pop();
            }
            name => names.push(name),
        }
    }
    names.join(&b'/')
}

/// Splits a normalized key into its parent's key and its last name; `None` for the root.
pub fn split_last(key: &[u8]) -> Option<(&[u8], &[u8])> {
    if key.is_empty() {
        return None;
    }
    Some(match key.iter().rposition(|b| *b == b'/') {
        Some(slash) => (&key[..slash], &key[slash + 1..]),
        None => (&[][..], key),
    })
}

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
    fn normalize_drops_dots_and_extra_slashes() {
        assert_eq!(normalize(b"/a//b/./c/"), b"a/b/c");
        assert_eq!(normalize(b"a/b/../c"), b"a/c");
        assert_eq!(normalize(b"/../.."), b"");
        assert_eq!(split_last(b"a/b/c"), Some((&b"a/b"[..], &b"c"[..])));
        assert_eq!(split_last(b"a"), Some((&b""[..], &b"a"[..])));
        assert_eq!(split_last(b""), None);
    }

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
