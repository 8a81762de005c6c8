//! `TreeSnapshot`: what a backing tree holds, in a form two trees can be
//! compared by — for each path its kind, content, permission bits, owner,
//! device number, symlink target, extended attributes, modification time and
//! which other names are hard links to the same inode.
//!
//! File content is kept as a digest over the non-zero bytes, position by
//! position, plus the size: a hole and written zeros compare equal (as they
//! read equal), and a snapshot of a large sparse file stays small.

use crate::types::FileKind;
use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Identity of an inode while a snapshot is taken (device, inode number).
pub(crate) type InodeKey = (u64, u64);

/// Size and digest of a regular file's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ContentDigest {
    pub size: u64,
    pub hash: u64,
}

/// Builds a `ContentDigest` from a file read page by page, in order.
pub(crate) struct ContentHasher {
    hasher: DefaultHasher,
}

impl ContentHasher {
    pub(crate) fn new() -> ContentHasher {
        ContentHasher { hasher: DefaultHasher::new() }
    }

    /// Feeds the bytes stored at page `index` (possibly a short last page).
    /// Trailing zeros are dropped and all-zero pages skipped, so the digest
    /// does not depend on how zeros are stored.
    pub(crate) fn page(&mut self, index: u64, bytes: &[u8]) {
        let used = bytes.iter().rposition(|b| *b != 0).map_or(0, |last| last + 1);
        if used > 0 {
            index.hash(&mut self.hasher);
            bytes[..used].hash(&mut self.hasher);
        }
    }

    /// Feeds a page written without its content (`Backend::write_unkept_at`):
    /// unlike any page of bytes (a slice hashes its length, at most a page).
    pub(crate) fn unkept(&mut self, index: u64) {
        index.hash(&mut self.hasher);
        u64::MAX.hash(&mut self.hasher);
    }

    pub(crate) fn finish(self, size: u64) -> ContentDigest {
        ContentDigest { size, hash: self.hasher.finish() }
    }
}

/// One name in a snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotEntry {
    pub kind: FileKind,
    /// Permission bits with set-uid, set-gid and sticky.
    pub perm: u32,
    pub uid: u32,
    pub gid: u32,
    /// Device number of character and block devices, 0 otherwise.
    pub rdev: u32,
    /// Regular files only.
    pub content: Option<ContentDigest>,
    /// Symlinks only.
    pub target: Option<OsString>,
    pub xattrs: BTreeMap<OsString, Vec<u8>>,
    /// `None` once `TreeSnapshot::without_times` dropped it.
    pub mtime: Option<SystemTime>,
    /// The first name, in path order, of this entry's inode: the entry's own
    /// path unless it is a hard link to a name that sorts before it.
    pub first_link: PathBuf,
}

/// A whole tree: relative path (the root is `""`) → entry.
#[derive(Clone, Debug, Default)]
pub struct TreeSnapshot {
    entries: BTreeMap<PathBuf, SnapshotEntry>,
    /// Kept so hard-link grouping can be recomputed after filtering.
    inodes: BTreeMap<PathBuf, InodeKey>,
}

impl PartialEq for TreeSnapshot {
    fn eq(&self, other: &TreeSnapshot) -> bool {
        self.entries == other.entries
    }
}

impl Eq for TreeSnapshot {}

impl TreeSnapshot {
    /// Adds one name; call `finish` once all are in.
    pub(crate) fn insert(&mut self, path: PathBuf, inode: InodeKey, mut entry: SnapshotEntry) {
        entry.first_link = path.clone();
        self.inodes.insert(path.clone(), inode);
        self.entries.insert(path, entry);
    }

    /// Sets `first_link` from the inode identities.
    pub(crate) fn finish(mut self) -> TreeSnapshot {
        let mut first: HashMap<InodeKey, PathBuf> = HashMap::new();
        for (path, entry) in self.entries.iter_mut() {
            let inode = self.inodes[path];
            entry.first_link = first.entry(inode).or_insert_with(|| path.clone()).clone();
        }
        self
    }

    pub fn entries(&self) -> &BTreeMap<PathBuf, SnapshotEntry> {
        &self.entries
    }

    pub fn get(&self, path: impl AsRef<Path>) -> Option<&SnapshotEntry> {
        self.entries.get(path.as_ref())
    }

    /// The same snapshot with every modification time dropped.
    pub fn without_times(mut self) -> TreeSnapshot {
        for entry in self.entries.values_mut() {
            entry.mtime = None;
        }
        self
    }

    /// The same snapshot without `prefix` and everything under it (for
    /// example the engine's own `.mcfs` directory).
    pub fn without_prefix(mut self, prefix: impl AsRef<Path>) -> TreeSnapshot {
        let prefix = prefix.as_ref();
        self.entries.retain(|path, _| !path.starts_with(prefix));
        self.inodes.retain(|path, _| !path.starts_with(prefix));
        self.finish()
    }

    /// Every difference between `self` and `other`, one line each, as
    /// `path: what: <self's value> vs <other's value>`. Empty when equal.
    pub fn diff(&self, other: &TreeSnapshot) -> Vec<String> {
        let mut out = Vec::new();
        let mut paths: Vec<&PathBuf> = self.entries.keys().chain(other.entries.keys()).collect();
        paths.sort();
        paths.dedup();
        for path in paths {
            let shown = path.display();
            match (self.entries.get(path), other.entries.get(path)) {
                (Some(a), None) => out.push(format!("{shown}: only in the first tree ({:?})", a.kind)),
                (None, Some(b)) => out.push(format!("{shown}: only in the second tree ({:?})", b.kind)),
                (Some(a), Some(b)) => {
                    for (what, left, right) in entry_differences(a, b) {
                        out.push(format!("{shown}: {what}: {left} vs {right}"));
                    }
                }
                (None, None) => {}
            }
        }
        out
    }
}

/// Field-by-field differences of two entries: (field, self, other).
fn entry_differences(a: &SnapshotEntry, b: &SnapshotEntry) -> Vec<(&'static str, String, String)> {
    let mut out = Vec::new();
    let mut check = |what: &'static str, left: String, right: String| {
        if left != right {
            out.push((what, left, right));
        }
    };
    check("kind", format!("{:?}", a.kind), format!("{:?}", b.kind));
    check("perm", format!("{:o}", a.perm), format!("{:o}", b.perm));
    check("owner", format!("{}:{}", a.uid, a.gid), format!("{}:{}", b.uid, b.gid));
    check("rdev", a.rdev.to_string(), b.rdev.to_string());
    check("content", format!("{:?}", a.content), format!("{:?}", b.content));
    check("symlink target", format!("{:?}", a.target), format!("{:?}", b.target));
    check("xattrs", format!("{:?}", a.xattrs), format!("{:?}", b.xattrs));
    check("mtime", format!("{:?}", a.mtime), format!("{:?}", b.mtime));
    check("hard link of", a.first_link.display().to_string(), b.first_link.display().to_string());
    out
}

impl fmt::Display for TreeSnapshot {
    /// One line per path: kind, perm, owner and the kind's payload.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (path, e) in &self.entries {
            write!(f, "{:?} {:?} {:o} {}:{}", path, e.kind, e.perm, e.uid, e.gid)?;
            if let Some(c) = e.content {
                write!(f, " size={} hash={:016x}", c.size, c.hash)?;
            }
            if let Some(t) = &e.target {
                write!(f, " -> {t:?}")?;
            }
            if &e.first_link != path {
                write!(f, " (link of {:?})", e.first_link)?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(kind: FileKind) -> SnapshotEntry {
        SnapshotEntry {
            kind,
            perm: 0o644,
            uid: 0,
            gid: 0,
            rdev: 0,
            content: None,
            target: None,
            xattrs: BTreeMap::new(),
            mtime: Some(SystemTime::UNIX_EPOCH),
            first_link: PathBuf::new(),
        }
    }

    #[test]
    fn digest_ignores_how_zeros_are_stored() {
        let mut sparse = ContentHasher::new();
        sparse.page(3, &[0, 7, 0, 0]);
        let mut dense = ContentHasher::new();
        dense.page(0, &[0; 16]);
        dense.page(3, &[0, 7]);
        assert_eq!(sparse.finish(20), dense.finish(20));
        let mut moved = ContentHasher::new();
        moved.page(2, &[0, 7]);
        let mut same = ContentHasher::new();
        same.page(3, &[0, 7]);
        assert_ne!(moved.finish(20), same.finish(20));
    }

    #[test]
    fn hard_link_grouping_and_filtering() {
        let mut snap = TreeSnapshot::default();
        snap.insert("".into(), (0, 1), entry(FileKind::Dir));
        snap.insert("b".into(), (0, 2), entry(FileKind::File));
        snap.insert(".mcfs".into(), (0, 3), entry(FileKind::Dir));
        snap.insert(".mcfs/a".into(), (0, 2), entry(FileKind::File));
        let snap = snap.finish();
        assert_eq!(snap.get("b").unwrap().first_link, PathBuf::from(".mcfs/a"));
        let user = snap.without_prefix(".mcfs");
        assert_eq!(user.entries().len(), 2);
        assert_eq!(user.get("b").unwrap().first_link, PathBuf::from("b"));
    }

    #[test]
    fn diff_names_each_difference() {
        let mut a = TreeSnapshot::default();
        a.insert("f".into(), (0, 2), entry(FileKind::File));
        a.insert("g".into(), (0, 3), entry(FileKind::File));
        let a = a.finish();
        let mut b = TreeSnapshot::default();
        let mut changed = entry(FileKind::File);
        changed.perm = 0o600;
        changed.mtime = Some(SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1));
        b.insert("f".into(), (0, 2), changed);
        b.insert("h".into(), (0, 3), entry(FileKind::Dir));
        let b = b.finish();
        let d = a.diff(&b);
        assert_eq!(d.len(), 4, "{d:#?}");
        assert!(d[0].starts_with("f: perm: 644 vs 600"), "{d:#?}");
        assert!(d[1].starts_with("f: mtime"), "{d:#?}");
        assert_eq!(d[2], "g: only in the first tree (File)");
        assert_eq!(d[3], "h: only in the second tree (Dir)");
        assert_eq!(a.clone().without_times().diff(&a.without_times()), Vec::<String>::new());
    }
}
