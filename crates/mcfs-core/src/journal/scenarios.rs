//! Test fixtures shared by the journal's tests: a base tree with the awkward
//! cases (hard links, a symlink, a fifo, xattrs), hand-written transactions
//! for the hazards of in-place apply, a seeded generator of valid random
//! transactions, and the oracle (the ops applied straight to a copy).

use super::JournalOp;
use crate::backend::snapshot::TreeSnapshot;
use crate::backend::{Backend, MemBackend};
use crate::types::FileKind;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::ffi::OsStr;
use std::io;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub fn base_tree(b: &dyn Backend) {
    let file = |path: &str, perm: u32, content: &[u8]| {
        b.create(path.as_ref(), FileKind::File, perm, 0).unwrap();
        b.write_at(path.as_ref(), 0, content).unwrap();
    };
    file("a", 0o644, &b"alpha-".repeat(900));
    file("b", 0o600, b"bravo");
    b.link("b".as_ref(), "b_link".as_ref()).unwrap();
    file("c", 0o644, b"charlie");
    b.create("d".as_ref(), FileKind::Dir, 0o755, 0).unwrap();
    file("d/x", 0o644, b"x-content");
    b.create("e".as_ref(), FileKind::Dir, 0o755, 0).unwrap();
    b.symlink(OsStr::new("a"), "s".as_ref()).unwrap();
    b.create("f".as_ref(), FileKind::Fifo, 0o644, 0).unwrap();
    b.set_xattr("a".as_ref(), OsStr::new("user.old"), b"x").unwrap();
    b.sync().unwrap();
}

fn at(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_600_000_000 + secs)
}

fn write(path: &str, offset: u64, data: &[u8]) -> JournalOp {
    JournalOp::Write { path: path.into(), offset, data: data.to_vec() }
}

fn create(path: &str, kind: FileKind, perm: u32) -> JournalOp {
    JournalOp::Create { path: path.into(), kind, perm, rdev: 0 }
}

fn rename(from: &str, to: &str) -> JournalOp {
    JournalOp::Rename { from: from.into(), to: to.into() }
}

fn set_len(path: &str, size: u64) -> JournalOp {
    JournalOp::SetLen { path: path.into(), size }
}

/// Named transactions, each valid on `base_tree`.
pub fn scenarios() -> Vec<(&'static str, Vec<JournalOp>)> {
    use FileKind::{Dir, Fifo, File};
    vec![
        (
            "rename over a hard-linked target",
            vec![
                create("tmp", File, 0o644),
                write("tmp", 0, b"new bravo"),
                JournalOp::SetPerm { path: "tmp".into(), perm: 0o640 },
                rename("tmp", "b"),
                write("b", 4, b"XX"),
                JournalOp::SetTimes { path: "b".into(), atime: at(1), mtime: at(2) },
            ],
        ),
        (
            "rename a to b, then c to a",
            vec![rename("a", "b"), rename("c", "a"), write("a", 0, b"AA"), rename("b", "c")],
        ),
        (
            "unlink and re-create the same names",
            vec![
                JournalOp::RemoveFile { path: "a".into() },
                create("a", File, 0o600),
                write("a", 0, b"fresh"),
                JournalOp::RemoveFile { path: "c".into() },
                create("c", Fifo, 0o644),
                JournalOp::RemoveFile { path: "s".into() },
                JournalOp::Symlink { path: "s".into(), target: "c".into() },
                write("a", 5, b"er"),
            ],
        ),
        (
            "truncate and re-extend",
            vec![
                set_len("a", 2),
                write("a", 10, b"zz"),
                set_len("a", 6000),
                write("a", 5990, b"0123456789ABCDEF"),
                set_len("a", 3),
                set_len("a", 100),
                write("c", 0, b"C"),
                set_len("c", 0),
            ],
        ),
        (
            "mkdir and rmdir",
            vec![
                create("d2", Dir, 0o750),
                create("d2/f", File, 0o644),
                write("d2/f", 0, b"f"),
                rename("d/x", "d2/y"),
                JournalOp::RemoveDir { path: "e".into() },
                JournalOp::RemoveFile { path: "d2/f".into() },
                create("e", Dir, 0o700),
                create("e/z", File, 0o644),
                write("e/z", 0, b"zed"),
                JournalOp::RemoveDir { path: "d".into() },
                rename("d2", "d"),
            ],
        ),
        (
            "hard links",
            vec![
                JournalOp::Link { existing: "a".into(), new: "a2".into() },
                write("a2", 0, b"via link"),
                JournalOp::RemoveFile { path: "a".into() },
                rename("a2", "c"),
                JournalOp::Link { existing: "c".into(), new: "d/c".into() },
                JournalOp::SetOwner { path: "d/c".into(), uid: 1000, gid: 100 },
                JournalOp::Link { existing: "b".into(), new: "a".into() },
                write("b_link", 0, b"B"),
            ],
        ),
        (
            "attributes only",
            vec![
                JournalOp::SetXattr { path: "a".into(), name: "user.k".into(), value: b"v".to_vec() },
                JournalOp::RemoveXattr { path: "a".into(), name: "user.old".into() },
                JournalOp::SetOwner { path: "a".into(), uid: 1000, gid: 1000 },
                JournalOp::SetPerm { path: "a".into(), perm: 0o4750 },
                JournalOp::SetOwner { path: "a".into(), uid: 1001, gid: 1001 },
                JournalOp::SetTimes { path: "a".into(), atime: at(5), mtime: at(6) },
                JournalOp::SetPerm { path: "d".into(), perm: 0o700 },
                JournalOp::SetOwner { path: "s".into(), uid: 7, gid: 7 },
                JournalOp::SetXattr { path: "b".into(), name: "user.big".into(), value: vec![9; 1000] },
            ],
        ),
        ("empty", vec![]),
    ]
}

/// A random transaction that is valid on `base_tree` (each op is kept only
/// if it succeeds on a scratch copy, in order).
pub fn random_txn(seed: u64, len: usize) -> Vec<JournalOp> {
    const NAMES: [&str; 10] = ["a", "b", "c", "b_link", "d", "e", "d/x", "n1", "n2", "e/n3"];
    let mut rng = StdRng::seed_from_u64(seed);
    let scratch = MemBackend::new();
    base_tree(&scratch);
    let mut ops = Vec::new();
    let mut attempts = 0;
    while ops.len() < len && attempts < len * 50 {
        attempts += 1;
        let p = PathBuf::from(NAMES[rng.gen_range(0..NAMES.len())]);
        let q = PathBuf::from(NAMES[rng.gen_range(0..NAMES.len())]);
        let op = match rng.gen_range(0..14) {
            0..=2 => {
                let len = rng.gen_range(1..3000);
                let byte = rng.gen::<u8>() | 1;
                JournalOp::Write { path: p, offset: rng.gen_range(0..6000), data: vec![byte; len] }
            }
            3 => JournalOp::SetLen { path: p, size: rng.gen_range(0..9000) },
            4 => JournalOp::Create { path: p, kind: FileKind::File, perm: 0o644, rdev: 0 },
            5 => JournalOp::Create { path: p, kind: FileKind::Dir, perm: 0o755, rdev: 0 },
            6 => JournalOp::Symlink { path: p, target: q.into_os_string() },
            7 => JournalOp::Link { existing: p, new: q },
            8 => JournalOp::RemoveFile { path: p },
            9 => JournalOp::RemoveDir { path: p },
            10 | 11 => JournalOp::Rename { from: p, to: q },
            12 => JournalOp::SetPerm { path: p, perm: rng.gen_range(0..0o1000) },
            _ => JournalOp::SetXattr { path: p, name: "user.r".into(), value: vec![rng.gen(); 3] },
        };
        if apply_op(&scratch, &op).is_ok() {
            ops.push(op);
        }
    }
    ops
}

/// The ops applied straight to a copy of `b`: the post-transaction tree.
pub fn apply_directly(b: &MemBackend, ops: &[JournalOp]) -> TreeSnapshot {
    let applied = copy(b);
    for op in ops {
        apply_op(&applied, op).unwrap_or_else(|e| panic!("oracle: {op}: {e}"));
    }
    tree_of(&applied)
}

pub fn apply_op(b: &dyn Backend, op: &JournalOp) -> io::Result<()> {
    match op {
        JournalOp::Write { path, offset, data } => b.write_at(path, *offset, data),
        JournalOp::SetLen { path, size } => b.set_len(path, *size),
        JournalOp::Create { path, kind, perm, rdev } => b.create(path, *kind, *perm, *rdev),
        JournalOp::Symlink { path, target } => b.symlink(target, path),
        JournalOp::Link { existing, new } => b.link(existing, new),
        JournalOp::RemoveFile { path } => b.remove_file(path),
        JournalOp::RemoveDir { path } => b.remove_dir(path),
        JournalOp::Rename { from, to } => b.rename(from, to),
        JournalOp::SetOwner { path, uid, gid } => b.set_owner(path, *uid, *gid),
        JournalOp::SetPerm { path, perm } => b.set_perm(path, *perm),
        JournalOp::SetTimes { path, atime, mtime } => b.set_times(path, *atime, *mtime),
        JournalOp::SetXattr { path, name, value } => b.set_xattr(path, name, value),
        JournalOp::RemoveXattr { path, name } => b.remove_xattr(path, name),
    }
}

/// An independent copy of a whole memory tree.
pub fn copy(b: &MemBackend) -> MemBackend {
    MemBackend::clone(b)
}

/// The user-visible tree: everything but mcfs's own state directory.
pub fn tree_of(b: &MemBackend) -> TreeSnapshot {
    b.snapshot().without_prefix(crate::STATE_DIR)
}
