//! After a clean `mcfs umount` the backing directory is an ordinary tree
//! holding exactly what the apps left (invariant 6): names, kinds, contents,
//! sizes, modes, owners, symlink targets, hard links, modification times (of
//! every kind of object, to the nanosecond).
//!
//! The test builds a tree through the mount (files of many sizes, a sparse
//! file, overwrites, truncations, renames of files and directories, unlinks,
//! symlinks, hard links, a FIFO, chmod/chown/utimens), records the expected
//! result in a model, unmounts, and compares the backing directory (minus
//! `.mcfs/`) with the model; then remounts and compares the mount again.

mod common;

use common::{pattern, Daemon, Dirs};
use std::collections::BTreeMap;
use std::ffi::CString;
use std::fs::{self, File, FileTimes, OpenOptions, Permissions};
use std::io::{Seek, SeekFrom, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{lchown, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

#[derive(Clone, Debug, PartialEq)]
enum Kind {
    File(Vec<u8>),
    Dir,
    Symlink(PathBuf),
    Fifo,
}

#[derive(Clone, Debug, PartialEq)]
struct Node {
    kind: Kind,
    /// Permission bits including setuid/setgid/sticky (not for symlinks).
    mode: u32,
    uid: u32,
    gid: u32,
}

/// The expected tree, by path relative to the root, plus the hard-link
/// groups (paths that must share one inode).
#[derive(Default)]
struct Model {
    nodes: BTreeMap<PathBuf, Node>,
    links: Vec<Vec<PathBuf>>,
}

/// Applies each change to the mount and to the model alike.
struct Builder<'a> {
    root: &'a Path,
    model: Model,
}

impl Builder<'_> {
    fn at(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// Changes the node at `rel` and, as the file system does, every hard
    /// link to the same inode.
    fn update(&mut self, rel: &str, change: impl FnOnce(&mut Node)) {
        let node = self.model.nodes.get_mut(Path::new(rel)).unwrap_or_else(|| panic!("model has no {rel}"));
        change(node);
        let node = node.clone();
        let group =
            self.model.links.iter().find(|g| g.iter().any(|p| p == Path::new(rel))).cloned().unwrap_or_default();
        for p in group {
            self.model.nodes.insert(p, node.clone());
        }
    }

    fn mkdir(&mut self, rel: &str, mode: u32) {
        fs::create_dir(self.at(rel)).unwrap_or_else(|e| panic!("mkdir {rel}: {e}"));
        self.model.nodes.insert(rel.into(), Node { kind: Kind::Dir, mode: 0, uid: 0, gid: 0 });
        self.chmod(rel, mode);
    }

    /// Writes `content` in `chunk`-sized writes (odd sizes cross pages).
    fn write_file(&mut self, rel: &str, content: &[u8], chunk: usize, mode: u32) {
        let mut f = File::create(self.at(rel)).unwrap_or_else(|e| panic!("create {rel}: {e}"));
        for piece in content.chunks(chunk.max(1)) {
            f.write_all(piece).unwrap_or_else(|e| panic!("write {rel}: {e}"));
        }
        self.model.nodes.insert(rel.into(), Node { kind: Kind::File(content.to_vec()), mode: 0, uid: 0, gid: 0 });
        self.chmod(rel, mode);
    }

    fn write_at(&mut self, rel: &str, offset: u64, data: &[u8]) {
        let mut f = OpenOptions::new().write(true).open(self.at(rel)).unwrap_or_else(|e| panic!("open {rel}: {e}"));
        f.seek(SeekFrom::Start(offset)).unwrap();
        f.write_all(data).unwrap_or_else(|e| panic!("write {rel} at {offset}: {e}"));
        self.update(rel, |node| {
            let Kind::File(content) = &mut node.kind else { panic!("{rel} is not a file") };
            let end = offset as usize + data.len();
            if content.len() < end {
                content.resize(end, 0);
            }
            content[offset as usize..end].copy_from_slice(data);
        });
    }

    fn truncate(&mut self, rel: &str, size: u64) {
        OpenOptions::new()
            .write(true)
            .open(self.at(rel))
            .and_then(|f| f.set_len(size))
            .unwrap_or_else(|e| panic!("truncate {rel} to {size}: {e}"));
        self.update(rel, |node| {
            let Kind::File(content) = &mut node.kind else { panic!("{rel} is not a file") };
            content.resize(size as usize, 0);
        });
    }

    fn chmod(&mut self, rel: &str, mode: u32) {
        fs::set_permissions(self.at(rel), Permissions::from_mode(mode)).unwrap_or_else(|e| panic!("chmod {rel}: {e}"));
        self.update(rel, |node| node.mode = mode);
    }

    fn chown(&mut self, rel: &str, uid: u32, gid: u32) {
        lchown(self.at(rel), Some(uid), Some(gid)).unwrap_or_else(|e| panic!("chown {rel}: {e}"));
        self.update(rel, |node| (node.uid, node.gid) = (uid, gid));
    }

    fn symlink(&mut self, rel: &str, target: &str) {
        std::os::unix::fs::symlink(target, self.at(rel)).unwrap_or_else(|e| panic!("symlink {rel}: {e}"));
        self.model.nodes.insert(rel.into(), Node { kind: Kind::Symlink(target.into()), mode: 0, uid: 0, gid: 0 });
    }

    fn mkfifo(&mut self, rel: &str, mode: u32) {
        let path = CString::new(self.at(rel).as_os_str().as_bytes()).unwrap();
        // SAFETY: `path` is a valid NUL-terminated string.
        assert_eq!(
            unsafe { libc::mkfifo(path.as_ptr(), 0o600) },
            0,
            "mkfifo {rel}: {}",
            std::io::Error::last_os_error()
        );
        self.model.nodes.insert(rel.into(), Node { kind: Kind::Fifo, mode: 0, uid: 0, gid: 0 });
        self.chmod(rel, mode);
    }

    fn hard_link(&mut self, existing: &str, new: &str) {
        fs::hard_link(self.at(existing), self.at(new)).unwrap_or_else(|e| panic!("link {existing} {new}: {e}"));
        let node = self.model.nodes[Path::new(existing)].clone();
        self.model.nodes.insert(new.into(), node);
        match self.model.links.iter_mut().find(|g| g.iter().any(|p| p == Path::new(existing))) {
            Some(group) => group.push(new.into()),
            None => self.model.links.push(vec![existing.into(), new.into()]),
        }
    }

    /// Renames a file or a whole directory (and everything under it).
    fn rename(&mut self, from: &str, to: &str) {
        fs::rename(self.at(from), self.at(to)).unwrap_or_else(|e| panic!("rename {from} {to}: {e}"));
        let (from, to) = (Path::new(from), Path::new(to));
        let moved: Vec<PathBuf> = self.model.nodes.keys().filter(|p| p.starts_with(from)).cloned().collect();
        self.model.nodes.retain(|p, _| !p.starts_with(to));
        for old in moved {
            let node = self.model.nodes.remove(&old).unwrap();
            let new = to.join(old.strip_prefix(from).unwrap());
            for group in &mut self.model.links {
                for p in group.iter_mut().filter(|p| **p == old) {
                    *p = new.clone();
                }
            }
            self.model.nodes.insert(new, node);
        }
    }

    fn unlink(&mut self, rel: &str) {
        fs::remove_file(self.at(rel)).unwrap_or_else(|e| panic!("unlink {rel}: {e}"));
        self.model.nodes.remove(Path::new(rel));
        for group in &mut self.model.links {
            group.retain(|p| p != Path::new(rel));
        }
        self.model.links.retain(|g| g.len() > 1);
    }

    fn rmdir(&mut self, rel: &str) {
        fs::remove_dir(self.at(rel)).unwrap_or_else(|e| panic!("rmdir {rel}: {e}"));
        self.model.nodes.remove(Path::new(rel));
    }
}

fn build_tree(mnt: &Path) -> Model {
    let mut b = Builder { root: mnt, model: Model::default() };
    b.mkdir("docs", 0o755);
    b.mkdir("docs/deep", 0o750);
    b.mkdir("docs/deep/deeper", 0o700);
    b.mkdir("shared", 0o1777);
    b.mkdir("setgid", 0o2775);
    b.mkdir("doomed", 0o755);

    for (i, size) in [0usize, 1, 4095, 4096, 4097, 65_537, (1 << 20) + 3].into_iter().enumerate() {
        b.write_file(&format!("docs/size_{size}"), &pattern(i as u64, size), 4096, 0o644);
    }
    b.write_file("docs/deep/big", &pattern(99, 5 << 20), 7777, 0o640);
    b.write_file("docs/deep/deeper/secret", b"only root reads this\n", 64, 0o600);
    b.write_file("readonly", b"read me\n", 64, 0o444);
    b.write_file("tool", b"#!/bin/sh\necho hi\n", 64, 0o755);
    b.write_file("setuid-tool", b"#!/bin/sh\n", 64, 0o4755);

    // A sparse file: 10 bytes after a 3 MiB hole.
    b.write_file("sparse", b"", 1, 0o644);
    b.write_at("sparse", 3 << 20, b"after hole");
    // Overwrites inside and across page boundaries, an append, truncations.
    b.write_at("docs/size_4096", 100, b"XYZ");
    b.write_at("docs/size_4097", 4090, &pattern(5, 20));
    b.write_at("docs/size_1", 1, b"appended");
    b.truncate(&format!("docs/size_{}", (1 << 20) + 3), 5000);
    b.truncate("docs/size_0", 10_000);

    // Renames: a file into a directory, over an existing file, a directory.
    b.write_file("moving", b"I moved\n", 64, 0o644);
    b.rename("moving", "docs/deep/moved");
    b.write_file("docs/old", b"old content\n", 64, 0o644);
    b.write_file("docs/new", b"new content wins\n", 64, 0o644);
    b.rename("docs/new", "docs/old");
    b.rename("docs/deep", "docs/renamed");

    // Things created and removed again must not reach the backing store.
    b.write_file("doomed/gone", &pattern(7, 9000), 4096, 0o644);
    b.unlink("doomed/gone");
    b.rmdir("doomed");

    b.symlink("link-relative", "docs/renamed/big");
    b.symlink("link-absolute", "/etc/hostname");
    b.symlink("link-dangling", "no/such/target");
    b.symlink("docs/link-dir", "renamed");

    b.write_file("hl-one", b"linked data\n", 64, 0o640);
    b.hard_link("hl-one", "docs/hl-two");
    b.hard_link("hl-one", "shared/hl-three");
    b.write_at("docs/hl-two", 0, b"LINKED");
    b.unlink("shared/hl-three");

    b.mkfifo("fifo", 0o620);

    b.chown("docs/renamed/moved", 12345, 23456);
    b.chown("shared", 1000, 1000);
    b.chown("link-dangling", 4242, 4343);
    b.chown("hl-one", 777, 778);
    b.model
}

/// A fixed mtime for one file, checked to the nanosecond after the unmount.
const FIXED_MTIME: Duration = Duration::new(1_000_000_000, 123_456_789);

fn set_fixed_mtime(path: &Path) {
    let times = FileTimes::new().set_modified(UNIX_EPOCH + FIXED_MTIME);
    File::options()
        .write(true)
        .open(path)
        .and_then(|f| f.set_times(times))
        .unwrap_or_else(|e| panic!("utimens {}: {e}", path.display()));
}

fn mtime(meta: &fs::Metadata) -> (i64, i64) {
    (meta.mtime(), meta.mtime_nsec())
}

/// Reads a tree from disk into the model's shape, skipping `skip` at the top.
/// Also returns inode numbers of regular files and the mtime of every entry.
/// (inode number, link count) of each regular file, to find hard links.
type Identities = BTreeMap<PathBuf, (u64, u64)>;
/// (seconds, nanoseconds) of each path's mtime.
type Mtimes = BTreeMap<PathBuf, (i64, i64)>;

fn read_tree(root: &Path, skip: Option<&str>) -> (Model, Identities, Mtimes) {
    let mut model = Model::default();
    let mut inodes = BTreeMap::new();
    let mut mtimes = BTreeMap::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(dir) = stack.pop() {
        let entries =
            fs::read_dir(root.join(&dir)).unwrap_or_else(|e| panic!("readdir {}: {e}", root.join(&dir).display()));
        for entry in entries {
            let entry = entry.expect("directory entry");
            let rel = dir.join(entry.file_name());
            if dir.as_os_str().is_empty() && skip.is_some_and(|s| entry.file_name() == s) {
                continue;
            }
            let path = root.join(&rel);
            let meta = fs::symlink_metadata(&path).unwrap_or_else(|e| panic!("lstat {}: {e}", path.display()));
            let ft = meta.file_type();
            let kind = if ft.is_dir() {
                stack.push(rel.clone());
                Kind::Dir
            } else if ft.is_symlink() {
                Kind::Symlink(fs::read_link(&path).expect("readlink"))
            } else if ft.is_file() {
                let content = fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
                assert_eq!(content.len() as u64, meta.len(), "{}: st_size differs from the bytes read", path.display());
                inodes.insert(rel.clone(), (meta.ino(), meta.nlink()));
                Kind::File(content)
            } else if std::os::unix::fs::FileTypeExt::is_fifo(&ft) {
                Kind::Fifo
            } else {
                panic!("{}: unexpected file type {ft:?}", path.display())
            };
            let mode = if ft.is_symlink() { 0 } else { meta.mode() & 0o7777 };
            mtimes.insert(rel.clone(), mtime(&meta));
            model.nodes.insert(rel, Node { kind, mode, uid: meta.uid(), gid: meta.gid() });
        }
    }
    (model, inodes, mtimes)
}

/// Compares a tree on disk with the model; every difference is listed.
fn compare(what: &str, root: &Path, skip: Option<&str>, expected: &Model) -> Mtimes {
    let (actual, inodes, mtimes) = read_tree(root, skip);
    let mut problems = Vec::new();
    for (path, want) in &expected.nodes {
        match actual.nodes.get(path) {
            None => problems.push(format!("{}: missing", path.display())),
            Some(got) if got != want => problems.push(describe_difference(path, want, got)),
            Some(_) => {}
        }
    }
    for path in actual.nodes.keys().filter(|p| !expected.nodes.contains_key(*p)) {
        problems.push(format!("{}: unexpected entry", path.display()));
    }
    for group in &expected.links {
        let found: Vec<_> = group.iter().map(|p| inodes.get(p).copied()).collect();
        let first = found[0];
        if found.iter().any(|f| f.is_none() || f.map(|(ino, _)| ino) != first.map(|(ino, _)| ino)) {
            problems.push(format!("hard links {group:?} do not share one inode: {found:?}"));
        } else if found.iter().any(|f| f.map(|(_, nlink)| nlink) != Some(group.len() as u64)) {
            problems.push(format!("hard links {group:?}: link counts {found:?}, expected {}", group.len()));
        }
    }
    assert!(
        problems.is_empty(),
        "{what} ({}) differs from what was written:\n  {}",
        root.display(),
        problems.join("\n  ")
    );
    mtimes
}

fn describe_difference(path: &Path, want: &Node, got: &Node) -> String {
    let mut parts = Vec::new();
    match (&want.kind, &got.kind) {
        (Kind::File(a), Kind::File(b)) if a != b => {
            let at = a.iter().zip(b).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len()));
            parts.push(format!(
                "content: {} bytes expected, {} found, first difference at byte {at}",
                a.len(),
                b.len()
            ));
        }
        (a, b) if std::mem::discriminant(a) != std::mem::discriminant(b) => {
            parts.push(format!("kind {a:?} expected, {b:?} found"))
        }
        (a, b) if a != b => parts.push(format!("{a:?} expected, {b:?} found")),
        _ => {}
    }
    if want.mode != got.mode {
        parts.push(format!("mode {:o} expected, {:o} found", want.mode, got.mode));
    }
    if (want.uid, want.gid) != (got.uid, got.gid) {
        parts.push(format!("owner {}:{} expected, {}:{} found", want.uid, want.gid, got.uid, got.gid));
    }
    format!("{}: {}", path.display(), parts.join("; "))
}

#[test]
fn clean_unmount_leaves_a_plain_identical_tree() {
    common::require_root("it chowns files to other users and expects the backing store to keep owners");
    let dirs = Dirs::new(None);
    let daemon = Daemon::daemonised(&dirs, &[]);

    let expected = build_tree(&dirs.mnt);
    set_fixed_mtime(&dirs.mnt.join("readonly"));
    let names: Vec<_> = fs::read_dir(&dirs.mnt).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(!names.iter().any(|n| n == ".mcfs"), "the mount shows mcfs's own state directory: {names:?}");
    let mount_mtimes = compare("the mount", &dirs.mnt, None, &expected);

    daemon.unmount();
    assert!(dirs.backing.join(".mcfs").is_dir(), "the backing directory lost .mcfs/");
    let backing_mtimes = compare("the backing directory after mcfs umount", &dirs.backing, Some(".mcfs"), &expected);
    let fixed = backing_mtimes[Path::new("readonly")];
    assert_eq!(
        fixed,
        (FIXED_MTIME.as_secs() as i64, FIXED_MTIME.subsec_nanos() as i64),
        "mtime set with utimensat, in the backing directory"
    );
    let moved: Vec<_> = mount_mtimes
        .iter()
        .filter(|(p, t)| backing_mtimes.get(*p) != Some(t))
        .map(|(p, t)| (p, t, backing_mtimes.get(p)))
        .collect();
    assert!(
        moved.is_empty(),
        "mtimes in the backing directory differ from what the mount showed (path, mount, backing): {moved:?}"
    );

    // The plain tree is also what a new mount serves.
    let daemon = Daemon::daemonised(&dirs, &[]);
    compare("the mount after remounting", &dirs.mnt, None, &expected);
    daemon.unmount();
}
