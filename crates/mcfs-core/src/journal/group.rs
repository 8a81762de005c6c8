//! Which ops of a transaction may share one durable progress record. A
//! *group* starts at a progress record and collects the ops after it; a
//! namespace op may join unless one of its paths meets a path an earlier op
//! of the group touched in a way replay could not tell apart (`admits`, and
//! docs/JOURNAL.md for why each allowed case is safe). `apply` also asks
//! here whether a data op reaches through a name a rename re-pointed since
//! the last sync.
//!
//! Invariant: a `PathSet` never under-reports how a path and the paths above
//! and below it were touched. When it cannot be exact (a path it cannot key,
//! or too many names) it *saturates* and reports every touch everywhere,
//! which only costs syncs. An empty set reports nothing, for any path.

use super::JournalOp;
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// How the ops of a group touched a path: a union of these bits.
pub type Touch = u8;
/// A Create of a directory made the name.
pub const MADE_DIR: Touch = 1;
/// Another op bound the name: a create of another kind, a symlink, the new
/// name of a link, the target of a rename.
pub const BOUND: Touch = 2;
/// The name went away: an unlink, an rmdir, the source of a rename.
pub const UNBOUND: Touch = 4;
/// The existing name of a link (read, not changed).
pub const LINKED_FROM: Touch = 8;
/// The owner of the object set.
pub const OWNER: Touch = 16;
/// Data, size, permission bits, times or xattrs of the object set.
pub const CONTENT: Touch = 32;
const EVERY_TOUCH: Touch = 63;

/// Names a set keeps before it saturates: bounds the memory of one group
/// (and the syncs saved per group hardly grow beyond it).
const MAX_NAMES: usize = 1 << 16;

/// The paths an op resolves, each with how it touches it. (A symlink's
/// target is content, not a path.)
pub fn touches(op: &JournalOp) -> [Option<(&Path, Touch)>; 2] {
    use crate::types::FileKind;
    fn one(path: &Path, touch: Touch) -> [Option<(&Path, Touch)>; 2] {
        [Some((path, touch)), None]
    }
    match op {
        JournalOp::Link { existing, new } => [Some((existing, LINKED_FROM)), Some((new, BOUND))],
        JournalOp::Rename { from, to } => [Some((from, UNBOUND)), Some((to, BOUND))],
        JournalOp::Create { path, kind: FileKind::Dir, .. } => one(path, MADE_DIR),
        JournalOp::Create { path, .. } | JournalOp::Symlink { path, .. } => one(path, BOUND),
        JournalOp::RemoveFile { path } | JournalOp::RemoveDir { path } => one(path, UNBOUND),
        JournalOp::SetOwner { path, .. } => one(path, OWNER),
        JournalOp::Write { path, .. }
        | JournalOp::WriteKnown { path, .. }
        | JournalOp::SetPerm { path, .. }
        | JournalOp::SetLen { path, .. }
        | JournalOp::SetTimes { path, .. }
        | JournalOp::SetXattr { path, .. }
        | JournalOp::RemoveXattr { path, .. }
        | JournalOp::Fallocate { path, .. } => one(path, CONTENT),
    }
}

/// How a set touched one path (`at`), its proper ancestors (`above`) and
/// the paths strictly below it (`below`), each a union.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Around {
    pub at: Touch,
    pub above: Touch,
    pub below: Touch,
}

impl Around {
    fn any(self) -> bool {
        self.at | self.above | self.below != 0
    }
}

/// One name of the trie: what touched it, and the union of what touched
/// the names below it.
#[derive(Default)]
struct Node {
    /// Names apps chose: SipHash, not `InoHasher`, which is for input no
    /// app picks (one multiplication, so colliding names are easy to make).
    children: HashMap<OsString, usize>,
    at: Touch,
    below: Touch,
}

/// Touched backing paths, as a trie of names, so a query costs the length
/// of the path however deep it is.
pub struct PathSet {
    /// `nodes[0]` is the backing root.
    nodes: Vec<Node>,
    /// Stands for every touch of every path.
    saturated: bool,
    /// The last path inserted, byte for byte, and its node: an apply
    /// inserts one file's ops one after the other, then the next file's in
    /// the same directory. Touches only accumulate, so inserting that path
    /// again with touches it has changes nothing, and a path beside it
    /// needs only its own name looked up if its parent has the touch below
    /// it (what a node has below it, every ancestor has).
    last: Vec<u8>,
    last_at: usize,
    /// Where the last path's parent ends in `last` and the parent's node, if
    /// `last` is spelt plainly (its names joined by single slashes).
    last_parent: Option<(usize, usize)>,
}

impl Default for PathSet {
    fn default() -> PathSet {
        PathSet { nodes: vec![Node::default()], saturated: false, last: Vec::new(), last_at: 0, last_parent: None }
    }
}

impl PathSet {
    pub fn insert(&mut self, path: &Path, touch: Touch) {
        let bytes = path.as_os_str().as_bytes();
        if self.saturated {
            return;
        }
        if bytes == self.last && touch & !self.nodes[self.last_at].at == 0 {
            return;
        }
        if let Some((_, parent)) = self.last_parent.filter(|(_, parent)| touch & !self.nodes[*parent].below == 0) {
            if let Some(name) = self.sibling_name(bytes) {
                if let Some(at) = self.child(parent, name) {
                    self.nodes[at].at |= touch;
                    self.remember(bytes, at, self.last_parent);
                }
                return;
            }
        }
        let Some(names) = names(path) else {
            self.saturate();
            return;
        };
        let plain = names.iter().map(|name| name.len() + 1).sum::<usize>() == bytes.len() + 1;
        let mut at = 0;
        let mut parent = None;
        for name in &names {
            self.nodes[at].below |= touch;
            parent = Some((bytes.len() - name.len()).saturating_sub(1)).zip(Some(at));
            let Some(child) = self.child(at, name) else { return };
            at = child;
        }
        self.nodes[at].at |= touch;
        self.remember(bytes, at, parent.filter(|_| plain));
    }

    /// The node of name `name` below node `at`, made if missing; `None` if
    /// the set saturated instead.
    fn child(&mut self, at: usize, name: &OsStr) -> Option<usize> {
        if let Some(&child) = self.nodes[at].children.get(name) {
            return Some(child);
        }
        if self.nodes.len() >= MAX_NAMES {
            self.saturate();
            return None;
        }
        self.nodes.push(Node::default());
        let child = self.nodes.len() - 1;
        self.nodes[at].children.insert(name.to_owned(), child);
        Some(child)
    }

    /// `bytes`' last name, if `bytes` is a plainly spelt path beside the
    /// last one (in the same directory).
    fn sibling_name<'p>(&self, bytes: &'p [u8]) -> Option<&'p OsStr> {
        let (len, _) = self.last_parent?;
        let name = if len == 0 { bytes } else { bytes.strip_prefix(&self.last[..len])?.strip_prefix(b"/")? };
        crate::backend::relpath::is_plain_name(name).then(|| OsStr::from_bytes(name))
    }

    fn remember(&mut self, bytes: &[u8], at: usize, parent: Option<(usize, usize)>) {
        self.last.clear();
        self.last.extend_from_slice(bytes);
        self.last_at = at;
        self.last_parent = parent;
    }

    pub fn insert_op(&mut self, op: &JournalOp) {
        touches(op).into_iter().flatten().for_each(|(path, touch)| self.insert(path, touch));
    }

    /// How the set touched `path`, above it and below it.
    pub fn around(&self, path: &Path) -> Around {
        let every = Around { at: EVERY_TOUCH, above: EVERY_TOUCH, below: EVERY_TOUCH };
        if self.saturated {
            return every;
        }
        if self.nodes.len() == 1 && self.nodes[0].at == 0 {
            // Nothing touched (an apply asks this of its renames, mostly none).
            return Around::default();
        }
        let Some(names) = names(path) else { return every };
        let mut around = Around::default();
        let mut at = 0;
        for name in names {
            around.above |= self.nodes[at].at;
            match self.nodes[at].children.get(name) {
                Some(&child) => at = child,
                None => return around,
            }
        }
        around.at = self.nodes[at].at;
        around.below = self.nodes[at].below;
        around
    }

    /// `path` is equal to, an ancestor of or a descendant of a path in the set.
    pub fn related(&self, path: &Path) -> bool {
        self.around(path).any()
    }

    pub fn related_op(&self, op: &JournalOp) -> bool {
        touches(op).into_iter().flatten().any(|(path, _)| self.related(path))
    }

    /// May namespace op `op` join the group whose touches this set holds?
    /// Unrelated paths always may; a related one only in the cases
    /// docs/JOURNAL.md proves replay-safe:
    /// * below names the group only made as directories or chowned (their
    ///   binding does not change, or `op` cannot have happened without it);
    /// * an rmdir above names the group only removed (it cannot have
    ///   happened without them);
    /// * the existing name of a link, around names the group only read or
    ///   changed the object of (a link changes no name there).
    pub fn admits(&self, op: &JournalOp) -> bool {
        touches(op).into_iter().flatten().all(|(path, touch)| {
            let around = self.around(path);
            if touch == LINKED_FROM {
                return (around.at | around.above | around.below) & !(LINKED_FROM | OWNER | CONTENT) == 0;
            }
            let removes_dir = matches!(op, JournalOp::RemoveDir { .. });
            around.at == 0
                && around.above & !(MADE_DIR | OWNER) == 0
                && (around.below == 0 || (removes_dir && around.below == UNBOUND))
        })
    }

    pub fn clear(&mut self) {
        *self = PathSet::default();
    }

    fn saturate(&mut self) {
        self.clear();
        self.saturated = true;
    }
}

/// `path` as the backend resolves it: its plain names (`.` dropped). `None`
/// for `..` or an absolute path, which the relation cannot judge (the
/// backend refuses them anyway).
pub(super) fn names(path: &Path) -> Option<Vec<&OsStr>> {
    let mut names = Vec::with_capacity(crate::backend::relpath::USUAL_DEPTH);
    for part in crate::backend::relpath::parts(path)? {
        if part == ".." {
            return None;
        }
        names.push(part);
    }
    Some(names)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::FileKind;

    fn set(paths: &[&str]) -> PathSet {
        let mut s = PathSet::default();
        paths.iter().for_each(|p| s.insert(Path::new(p), CONTENT));
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
    fn journal_group_a_path_inserted_again_keeps_every_touch() {
        let mut s = set(&["d/x", "d/x"]);
        s.insert(Path::new("d/x"), UNBOUND);
        s.insert(Path::new("d/x"), CONTENT);
        assert_eq!(s.around(Path::new("d/x")).at, CONTENT | UNBOUND, "a new touch of the last path counts");
        assert_eq!(s.around(Path::new("d")).below, CONTENT | UNBOUND);
        s.clear();
        assert!(!s.related(Path::new("d/x")) && !s.related(Path::new("../a")), "empty: nothing is related");
        s.insert(Path::new("d/x"), CONTENT);
        assert!(s.related(Path::new("d/x")), "the last path is forgotten with the set");
    }

    #[test]
    fn journal_group_a_path_beside_the_last_one_is_kept_as_a_walk_from_the_root_keeps_it() {
        let mut s = set(&["d/e/x", "d/e/y", "top", "other"]);
        s.insert(Path::new("d/e/z"), UNBOUND);
        s.insert(Path::new("d/e/w"), UNBOUND);
        s.insert(Path::new("d/ev"), UNBOUND);
        s.insert(Path::new("d/e/./v"), UNBOUND);
        for (path, at, below) in [
            ("d/e/y", CONTENT, 0),
            ("d/e/w", UNBOUND, 0),
            ("d/e/v", UNBOUND, 0),
            ("d/ev", UNBOUND, 0),
            ("d/e", 0, CONTENT | UNBOUND),
            ("d", 0, CONTENT | UNBOUND),
            ("other", CONTENT, 0),
        ] {
            let around = s.around(Path::new(path));
            assert_eq!((around.at, around.below), (at, below), "{path}");
        }
        assert!(!s.related(Path::new("d/f")) && !s.related(Path::new("d/e/u")));
        s.insert(Path::new("d/e/.."), CONTENT);
        assert!(s.related(Path::new("x")), "a `..` beside the last path saturates the set too");
    }

    #[test]
    fn journal_group_paths_it_cannot_judge_saturate_the_set() {
        let mut s = set(&["a"]);
        assert!(s.related(Path::new("../a")) && s.related(Path::new("/a")), "unjudgeable paths are related");
        s.insert(Path::new("x/../b"), CONTENT);
        assert!(s.related(Path::new("c")), "saturated: everything is related");
        s.clear();
        assert!(!s.related(Path::new("c")));
    }

    #[test]
    fn journal_group_set_saturates_instead_of_growing_without_bound() {
        let mut s = PathSet::default();
        for i in 0..MAX_NAMES - 2 {
            s.insert(Path::new(&format!("d/f{i}")), CONTENT);
        }
        assert!(!s.related(Path::new("d/g")));
        s.insert(Path::new("d/one-too-many"), CONTENT);
        assert!(s.related(Path::new("d/g")) && s.nodes.len() == 1, "saturated and freed");
    }

    #[test]
    fn journal_group_touches_are_kept_per_path_above_and_below() {
        let mut s = PathSet::default();
        s.insert_op(&JournalOp::Rename { from: "a".into(), to: "d/b".into() });
        assert_eq!(s.around(Path::new("d/b/c")), Around { at: 0, above: BOUND, below: 0 });
        assert_eq!(s.around(Path::new("d")), Around { at: 0, above: 0, below: BOUND });
        assert_eq!(s.around(Path::new("a")).at, UNBOUND);
        let link = JournalOp::Link { existing: "x".into(), new: "a".into() };
        assert!(s.related_op(&link), "the new name of the link is related");
        let target = JournalOp::Symlink { path: "s".into(), target: "a".into() };
        assert!(!s.related_op(&target), "a symlink's target is not resolved");
    }

    #[test]
    fn journal_group_admits_only_the_proven_cases() {
        let op = |s: &str| -> JournalOp {
            let w: Vec<&str> = s.split(' ').collect();
            let (a, b) = (w[1].into(), w.get(2).map(|p| (*p).into()));
            match w[0] {
                "mkdir" => JournalOp::Create { path: a, kind: FileKind::Dir, perm: 0o755, rdev: 0 },
                "create" => JournalOp::Create { path: a, kind: FileKind::File, perm: 0o644, rdev: 0 },
                "chown" => JournalOp::SetOwner { path: a, uid: 1, gid: 1 },
                "chmod" => JournalOp::SetPerm { path: a, perm: 0o2755 },
                "times" => JournalOp::SetTimes { path: a, atime: std::time::UNIX_EPOCH, mtime: std::time::UNIX_EPOCH },
                "write" => JournalOp::Write { path: a, offset: 0, data: vec![1] },
                "unlink" => JournalOp::RemoveFile { path: a },
                "rmdir" => JournalOp::RemoveDir { path: a },
                "link" => JournalOp::Link { existing: a, new: b.unwrap() },
                "rename" => JournalOp::Rename { from: a, to: b.unwrap() },
                other => panic!("{other}"),
            }
        };
        let admits = |before: &[&str], next: &str| {
            let mut s = PathSet::default();
            before.iter().for_each(|o| s.insert_op(&op(o)));
            s.admits(&op(next))
        };
        assert!(admits(&["mkdir d", "chown d", "mkdir d/e", "chown d/e"], "create d/e/f"), "deep mkdir chain");
        assert!(admits(&["unlink d/e/f", "rmdir d/e/g"], "rmdir d/e"), "rmdir above removed names");
        assert!(admits(&["link f g1", "write f", "link f g2"], "link f g3"), "many links to one file");
        assert!(!admits(&["times d"], "create d/f"), "a create moves the times set above it");
        assert!(!admits(&["chmod d"], "create d/f"), "a set-gid bit set above is inherited");
        assert!(!admits(&["rename d e"], "create e/f"), "below a re-pointed name");
        assert!(!admits(&["create d/x"], "rmdir d"), "rmdir above a bound name");
        assert!(!admits(&["unlink d/x"], "rename d e"), "only an rmdir may follow removals below it");
        assert!(!admits(&["create f"], "link f g"), "a link from a name bound in the group");
        assert!(!admits(&["link f g"], "unlink f"), "a name a link read");
        assert!(!admits(&["mkdir d"], "mkdir d"), "equal names never share a group");
    }
}
