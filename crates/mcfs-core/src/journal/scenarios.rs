//! Test fixtures shared by the journal's tests: a base tree with the awkward
//! cases (hard links, a symlink, a fifo, xattrs) on a store that allows
//! six names per file, hand-written transactions for the hazards of
//! in-place apply, a seeded generator of valid random transactions, and the
//! oracle (the ops applied straight to a copy, skipping what the store can
//! never hold).

use super::JournalOp;
use crate::backend::snapshot::TreeSnapshot;
use crate::backend::{Backend, MemBackend};
use crate::types::{FallocMode, FileKind};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::ffi::OsStr;
use std::io;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Most names a file of `base_tree` may have (`EMLINK` beyond).
pub const LINK_MAX: u32 = 6;

pub fn base_tree(b: &MemBackend) {
    b.set_link_max(LINK_MAX);
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

fn link(existing: &str, new: &str) -> JournalOp {
    JournalOp::Link { existing: existing.into(), new: new.into() }
}

fn unlink(path: &str) -> JournalOp {
    JournalOp::RemoveFile { path: path.into() }
}

fn rmdir(path: &str) -> JournalOp {
    JournalOp::RemoveDir { path: path.into() }
}

fn chown(path: &str) -> JournalOp {
    JournalOp::SetOwner { path: path.into(), uid: 1000, gid: 1000 }
}

fn times(path: &str, secs: u64) -> JournalOp {
    JournalOp::SetTimes { path: path.into(), atime: at(secs), mtime: at(secs) }
}

fn xattr(path: &str, name: &str, value: &[u8]) -> JournalOp {
    JournalOp::SetXattr { path: path.into(), name: name.into(), value: value.to_vec() }
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
        ("many creates in one directory", {
            let mut ops = many_creates("e", 5);
            // The directory's times were set in this group: a create in it splits.
            ops.extend([create("e/late", File, 0o600), write("e/late", 0, b"late")]);
            ops
        }),
        (
            "create, write and chmod the same files",
            vec![
                create("n1", File, 0o644),
                write("n1", 0, b"one"),
                create("n2", File, 0o600),
                JournalOp::SetPerm { path: "n1".into(), perm: 0o4755 },
                write("n2", 100, &[7; 9000]),
                JournalOp::SetOwner { path: "n1".into(), uid: 5, gid: 5 },
                write("n1", 5000, b"far"),
                set_len("n2", 4097),
                JournalOp::SetTimes { path: "n1".into(), atime: at(3), mtime: at(4) },
                JournalOp::SetXattr { path: "n2".into(), name: "user.n".into(), value: b"2".to_vec() },
                create("d/n3", Fifo, 0o640),
            ],
        ),
        (
            "mkdir, then create inside it",
            vec![
                create("d2", Dir, 0o750),
                create("d2/f", File, 0o644),
                write("d2/f", 0, b"f"),
                create("d2/sub", Dir, 0o700),
                create("d2/sub/g", File, 0o600),
                write("d2/sub/g", 0, b"g"),
                create("n", File, 0o644),
                JournalOp::SetPerm { path: "d2".into(), perm: 0o755 },
            ],
        ),
        (
            "rename a directory over an empty one, then create inside",
            vec![
                create("n", File, 0o644),
                write("d/x", 0, b"before the move"),
                rename("d", "e"),
                create("e/new", File, 0o644),
                write("e/new", 0, b"new"),
                write("e/x", 0, b"moved"),
                create("d", Dir, 0o700),
            ],
        ),
        (
            "rename a to b, then create a",
            vec![
                create("n", File, 0o644),
                rename("a", "b"),
                create("a", File, 0o600),
                write("a", 0, b"new a"),
                JournalOp::SetTimes { path: "b".into(), atime: at(1), mtime: at(1) },
                write("b_link", 0, b"old b"),
                rename("c", "e/c2"),
                write("e/c2", 0, b"C"),
                create("n2", File, 0o644),
            ],
        ),
        (
            "remove x, then create x",
            vec![
                JournalOp::RemoveFile { path: "b".into() },
                create("b", File, 0o600),
                write("b", 0, b"new b"),
                JournalOp::RemoveFile { path: "c".into() },
                create("c", Fifo, 0o644),
                JournalOp::RemoveDir { path: "e".into() },
                create("e", File, 0o644),
                write("b_link", 2, b"!"),
            ],
        ),
        (
            "hard links in one group",
            vec![
                JournalOp::Link { existing: "a".into(), new: "e/a1".into() },
                JournalOp::Link { existing: "b".into(), new: "e/b1".into() },
                write("e/a1", 0, b"via a1"),
                JournalOp::Link { existing: "c".into(), new: "d/c1".into() },
                write("b_link", 0, b"bl"),
                JournalOp::SetPerm { path: "e/b1".into(), perm: 0o640 },
                JournalOp::RemoveFile { path: "b_link".into() },
                JournalOp::RemoveFile { path: "c".into() },
                create("e/new", File, 0o644),
                JournalOp::Link { existing: "e/new".into(), new: "e/new2".into() },
                write("e/new2", 0, b"two names"),
            ],
        ),
        (
            "holes punched and zeroed between writes and truncates",
            vec![
                fallocate("a", FallocMode::PunchHole, 100, 9000),
                write("a", 4000, b"over the hole"),
                fallocate("a", FallocMode::ZeroRange { keep_size: false }, 5000, 6000),
                set_len("a", 3000),
                fallocate("a", FallocMode::Allocate { keep_size: false }, 0, 12288),
                create("tmp", File, 0o644),
                write("tmp", 0, &[7; 9000]),
                fallocate("tmp", FallocMode::ZeroRange { keep_size: true }, 4096, 20000),
                rename("tmp", "c"),
                fallocate("c", FallocMode::PunchHole, 0, 4096),
            ],
        ),
        ("deep mkdir chain, each directory chowned", {
            let mut ops = Vec::new();
            let mut dir = String::from("e");
            for depth in 0..6 {
                dir = format!("{dir}/n{depth}");
                ops.extend([create(&dir, Dir, 0o755), chown(&dir)]);
            }
            ops.extend([create(&format!("{dir}/f"), File, 0o644), write(&format!("{dir}/f"), 0, b"deep")]);
            while dir != "e" {
                ops.push(times(&dir, 3));
                dir.truncate(dir.rfind('/').unwrap_or(0));
            }
            ops
        }),
        ("rmdir chain above removed names", {
            let mut ops = vec![create("z", Dir, 0o755), create("z/y", Dir, 0o755), create("z/y/x", Dir, 0o700)];
            ops.extend([
                create("z/y/x/f", File, 0o644),
                write("z/y/x/f", 0, b"gone soon"),
                create("z/y/g", Fifo, 0o600),
            ]);
            ops.extend([unlink("z/y/x/f"), rmdir("z/y/x"), unlink("z/y/g"), rmdir("z/y"), rmdir("z")]);
            ops.extend([unlink("d/x"), rmdir("d"), write("c", 0, b"still here")]);
            ops
        }),
        (
            "remove inside a directory, then move it",
            vec![unlink("d/x"), rename("d", "d2"), create("d2/new", File, 0o600), write("d2/new", 0, b"n")],
        ),
        (
            "many links to one file",
            vec![
                link("a", "e/l1"),
                write("a", 0, b"through a"),
                link("a", "e/l2"),
                JournalOp::SetPerm { path: "e/l1".into(), perm: 0o600 },
                link("e/l1", "d/l3"),
                link("c", "e/c1"),
                unlink("e/l1"),
                unlink("e/l2"),
                link("d/l3", "e/l2"),
                write("e/c1", 1, b"C"),
            ],
        ),
        (
            "move a directory away, then create in its old name",
            vec![rename("d", "d2"), create("d/f", File, 0o644), write("d2/x", 0, b"moved")],
        ),
        ("rename over a name, then link from it", vec![rename("c", "b"), link("b", "e/b3"), write("e/b3", 0, b"c!")]),
        ("many creates in new directories", {
            let mut ops = vec![create("n1", Dir, 0o755), create("n2", Dir, 0o750)];
            for i in 0..3 {
                for dir in ["n1", "n2"] {
                    let path = format!("{dir}/f{i}");
                    ops.extend([create(&path, File, 0o644), chown(&path), write(&path, 0, path.as_bytes())]);
                }
            }
            ops.extend([create("n1/sub", Dir, 0o700), create("n1/sub/h", Fifo, 0o600), times("n1", 5), times("n2", 5)]);
            ops
        }),
        (
            "rename chains",
            vec![
                rename("a", "r1"),
                rename("r1", "r2"),
                rename("r2", "e/r3"),
                rename("c", "x"),
                rename("x", "c"),
                write("e/r3", 0, b"R"),
            ],
        ),
        (
            "ops the store cannot hold",
            vec![
                xattr("a", "foo.bar", b"1"),
                write("a", 0, b"still applied"),
                xattr("b", "user.big", &[7; 70_000]),
                set_len("c", 1 << 63),
                create(&"n".repeat(300), File, 0o644),
                write(&"n".repeat(300), 0, b"x"),
                create("nodir/f", File, 0o644),
                xattr("b", "user.ok", b"kept"),
                create("n", File, 0o600),
                write("n", 0, b"new"),
            ],
        ),
        (
            "a link refused for a link count later ops lower",
            vec![
                link("b", "x1"),
                link("b", "x2"),
                link("b", "x3"),
                link("b", "x"),
                create("e/n", File, 0o644),
                unlink("e/n"),
                link("b_link", "d/b2"),
                unlink("x"),
                write("b", 0, b"B"),
            ],
        ),
        ("empty", vec![]),
    ]
}

pub fn fallocate(path: &str, mode: FallocMode, offset: u64, len: u64) -> JournalOp {
    JournalOp::Fallocate { path: path.into(), mode, offset, len }
}

/// The shape the engine gives a checkpoint that creates `files` files in the
/// existing directory `dir`: per file a create, a chown and a write; at the
/// close of the VCT the times of every file, then of the directory.
pub fn many_creates(dir: &str, files: usize) -> Vec<JournalOp> {
    let name = |i: usize| format!("{dir}/f{i}");
    let mut ops = Vec::new();
    for i in 0..files {
        ops.push(create(&name(i), FileKind::File, 0o644));
        ops.push(JournalOp::SetOwner { path: name(i).into(), uid: 1000, gid: 1000 });
        ops.push(write(&name(i), 0, format!("file {i}").as_bytes()));
    }
    for i in 0..files {
        ops.push(JournalOp::SetTimes { path: name(i).into(), atime: at(i as u64), mtime: at(i as u64) });
    }
    ops.push(JournalOp::SetTimes { path: dir.into(), atime: at(0), mtime: at(0) });
    ops
}

/// An engine-shaped mix on `base_tree`, several VCTs in one transaction,
/// each ending with the times of what it changed: a new directory filled
/// with `files` files; atomic saves (write a temporary file, rename it over
/// the real name) in `e`; half of the new files removed; an in-place
/// overwrite and a hard link.
pub fn mixed_txn(files: usize) -> Vec<JournalOp> {
    let times = |path: &str, secs: u64| JournalOp::SetTimes { path: path.into(), atime: at(secs), mtime: at(secs) };
    let mut ops = vec![create("m", FileKind::Dir, 0o755)];
    ops.extend(many_creates("m", files));
    let saves = files / 4;
    for i in 0..saves {
        let tmp = format!("e/s{i}.tmp");
        ops.push(create(&tmp, FileKind::File, 0o600));
        ops.push(JournalOp::SetOwner { path: tmp.clone().into(), uid: 1000, gid: 1000 });
        ops.push(write(&tmp, 0, b"saved"));
        ops.push(rename(&tmp, &format!("e/s{i}")));
    }
    ops.extend((0..saves).map(|i| times(&format!("e/s{i}"), 7)));
    ops.push(times("e", 7));
    ops.extend((0..files).step_by(2).map(|i| JournalOp::RemoveFile { path: format!("m/f{i}").into() }));
    ops.push(times("m", 8));
    ops.push(write("a", 100, b"in place"));
    ops.push(set_len("a", 4000));
    ops.push(JournalOp::Link { existing: "c".into(), new: "m/c".into() });
    ops.push(times("a", 9));
    ops.push(times("m", 9));
    ops
}

/// A random transaction that is valid on `base_tree` (each op is kept only
/// if it succeeds on a scratch copy, in order).
pub fn random_txn(seed: u64, len: usize) -> Vec<JournalOp> {
    random_ops(seed, len, false)
}

/// `random_txn` with, now and then, a file created, written and unlinked,
/// then its directory's times set (SQLite's rollback journal, as the engine
/// emits it): the names repeat, so runs hold files born and gone in them.
pub fn random_txn_with_transient_files(seed: u64, len: usize) -> Vec<JournalOp> {
    random_ops(seed, len, true)
}

/// Create, write, unlink of `path` and the times of its directory, if
/// `path` is free and its directory exists on `scratch` (applied there).
fn transient_file(scratch: &MemBackend, rng: &mut StdRng) -> Option<Vec<JournalOp>> {
    const TRANSIENT: [(&str, &str); 3] = [("n1", ""), ("e/j", "e"), ("d/j", "d")];
    let (path, dir) = TRANSIENT[rng.gen_range(0..TRANSIENT.len())];
    let free = scratch.stat(path.as_ref()).is_err();
    let dir_exists = scratch.stat(dir.as_ref()).is_ok_and(|a| a.kind == FileKind::Dir);
    if !free || !dir_exists {
        return None;
    }
    let byte = rng.gen::<u8>() | 1;
    let ops = vec![
        create(path, FileKind::File, 0o644),
        JournalOp::Write { path: path.into(), offset: rng.gen_range(0..600), data: vec![byte; rng.gen_range(1..5000)] },
        JournalOp::RemoveFile { path: path.into() },
        times(dir, rng.gen_range(0..100)),
    ];
    ops.iter().all(|op| apply_op(scratch, op).is_ok()).then_some(ops)
}

fn random_ops(seed: u64, len: usize, transient_files: bool) -> Vec<JournalOp> {
    const NAMES: [&str; 10] = ["a", "b", "c", "b_link", "d", "e", "d/x", "n1", "n2", "e/n3"];
    let mut rng = StdRng::seed_from_u64(seed);
    let scratch = MemBackend::new();
    base_tree(&scratch);
    let mut ops = Vec::new();
    let mut attempts = 0;
    while ops.len() < len && attempts < len * 50 {
        attempts += 1;
        if transient_files && rng.gen_range(0..3) == 0 {
            ops.extend(transient_file(&scratch, &mut rng).unwrap_or_default());
            continue;
        }
        let p = PathBuf::from(NAMES[rng.gen_range(0..NAMES.len())]);
        let q = PathBuf::from(NAMES[rng.gen_range(0..NAMES.len())]);
        let op = match rng.gen_range(0..17) {
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
            13 => JournalOp::SetXattr { path: p, name: "user.r".into(), value: vec![rng.gen(); 3] },
            // Ops a store may refuse for good: an xattr namespace it lacks, a size beyond its limit.
            14 => JournalOp::SetXattr { path: p, name: "foo.r".into(), value: vec![1] },
            15 => JournalOp::SetLen { path: p, size: u64::MAX >> rng.gen_range(0..2) },
            _ => {
                let modes = [FallocMode::PunchHole, FallocMode::ZeroRange { keep_size: rng.gen() }];
                fallocate(
                    p.to_str().unwrap_or_default(),
                    modes[rng.gen_range(0..2)],
                    rng.gen_range(0..6000),
                    rng.gen_range(1..9000),
                )
            }
        };
        let kept = match apply_op(&scratch, &op) {
            Ok(()) => true,
            Err(e) => is_limit(&op, &e),
        };
        if kept {
            ops.push(op);
        }
    }
    ops
}

/// A limit of the store (not a missing object): the generator keeps such
/// ops, as the engine may emit them, and apply must skip them.
fn is_limit(op: &JournalOp, e: &io::Error) -> bool {
    let limits = [libc::EOPNOTSUPP, libc::EFBIG, libc::EMLINK, libc::ENAMETOOLONG, libc::E2BIG];
    let errno = crate::backend::errno_of(e);
    limits.contains(&errno) && super::refusal::cannot_hold(op, errno)
}

/// The ops applied straight to a copy of `b`: the post-transaction tree.
/// An op the store can never hold does nothing, as apply skips it.
pub fn apply_directly(b: &MemBackend, ops: &[JournalOp]) -> TreeSnapshot {
    let applied = copy(b);
    for op in ops {
        if let Err(e) = apply_op(&applied, op) {
            let errno = crate::backend::errno_of(&e);
            assert!(super::refusal::cannot_hold(op, errno), "oracle: {op}: {e}");
        }
    }
    tree_of(&applied)
}

pub fn apply_op(b: &dyn Backend, op: &JournalOp) -> io::Result<()> {
    match op {
        JournalOp::Write { path, offset, data } => b.write_at(path, *offset, data),
        JournalOp::WriteKnown { path, offset, len } => b.write_known_at(path, *offset, *len),
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
        JournalOp::Fallocate { path, mode, offset, len } => b.fallocate(path, *mode, *offset, *len),
    }
}

/// `txns` as an apply run of transactions held in memory (numbered from 1,
/// one segment each), for the planners' tests.
pub fn held_run(txns: &[Vec<JournalOp>]) -> Vec<super::RunTxn<'_>> {
    txns.iter()
        .enumerate()
        .map(|(i, ops)| super::RunTxn {
            slot: i,
            header: super::encode::TxnHeader {
                version: 2,
                seq: i as u64 + 1,
                payload_len: 0,
                op_count: ops.len() as u64,
                payload_crc: 0,
            },
            ops: super::TxnOps::Held(ops),
        })
        .collect()
}

/// An independent copy of a whole memory tree.
pub fn copy(b: &MemBackend) -> MemBackend {
    MemBackend::clone(b)
}

/// The user-visible tree: everything but mcfs's own state directory.
pub fn tree_of(b: &MemBackend) -> TreeSnapshot {
    b.snapshot().without_prefix(crate::STATE_DIR)
}
