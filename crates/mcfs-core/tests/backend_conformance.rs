//! One conformance suite for every `Backend`, written once and run against a
//! `DirBackend` in a fresh temporary directory (ext4 or tmpfs under /tmp), a
//! `MemBackend`, and a `RecordingBackend`; plus a randomized differential
//! test that runs the same calls on a `DirBackend` and a `MemBackend` and
//! requires the same errno for every call and the same tree at the end
//! (seed from `MCFS_SEED`, printed).
//!
//! Some checks need root (chown, device nodes); they are skipped otherwise.

use mcfs_core::backend::{errno_of, Backend, DirBackend, MemBackend, RecordingBackend, TreeSnapshot};
use mcfs_core::{FallocMode, FileKind};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::ffi::{OsStr, OsString};
use std::io;
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

/// A backend under test and whatever must live as long as it.
struct Fixture {
    backend: Box<dyn Backend>,
    _dir: Option<tempfile::TempDir>,
}

fn dir_fixture() -> Fixture {
    // A umask that would show if a backend let it through.
    unsafe { libc::umask(0o027) };
    let dir = tempfile::tempdir().expect("temporary directory");
    let backend = DirBackend::new(dir.path()).expect("backend on the temporary directory");
    // Same root as a fresh MemBackend.
    backend.set_perm(Path::new(""), 0o755).unwrap();
    Fixture { backend: Box::new(backend), _dir: Some(dir) }
}

fn mem_fixture() -> Fixture {
    Fixture { backend: Box::new(MemBackend::new()), _dir: None }
}

fn recording_fixture() -> Fixture {
    Fixture { backend: Box::new(RecordingBackend::new(MemBackend::new())), _dir: None }
}

fn is_root() -> bool {
    unsafe { libc::geteuid() == 0 }
}

fn p(s: &str) -> &Path {
    Path::new(s)
}

/// The errno of a call that must fail.
fn errno<T: std::fmt::Debug>(r: io::Result<T>) -> i32 {
    match r {
        Ok(v) => panic!("expected an error, got Ok({v:?})"),
        Err(e) => errno_of(&e),
    }
}

fn read_all(b: &dyn Backend, path: &str) -> Vec<u8> {
    let size = b.stat(p(path)).unwrap().size as usize;
    let mut buf = vec![0u8; size + 10];
    let n = b.read_at(p(path), 0, &mut buf).unwrap();
    buf.truncate(n);
    buf
}

fn new_file(b: &dyn Backend, path: &str, data: &[u8]) {
    b.create(p(path), FileKind::File, 0o644, 0).unwrap();
    b.write_at(p(path), 0, data).unwrap();
}

macro_rules! conformance_suite {
    ($($test:ident),* $(,)?) => {
        mod dir_backend {
            $( #[test] fn $test() { let f = super::dir_fixture(); super::suite::$test(&*f.backend) } )*
        }
        mod mem_backend {
            $( #[test] fn $test() { let f = super::mem_fixture(); super::suite::$test(&*f.backend) } )*
        }
        mod recording_backend {
            $( #[test] fn $test() { let f = super::recording_fixture(); super::suite::$test(&*f.backend) } )*
        }
    };
}

conformance_suite!(
    create_write_read,
    write_pieces_is_one_write_of_the_joined_bytes,
    create_truncates_only_regular_files,
    set_len_and_sparse_reads,
    exact_permissions_despite_umask,
    special_files,
    hard_links_and_nlink,
    rename_replaces_a_file,
    rename_replaces_an_empty_dir,
    rename_errors,
    remove_errors,
    symlinks,
    symlinked_directories_are_never_crossed,
    permissions_owner_and_times,
    extended_attributes,
    list_dir_kinds_and_errors,
    paths_must_stay_inside_the_root,
    statfs_and_sync,
    paths_longer_than_path_max,
    limits_are_what_the_store_refuses,
    xattr_sets_are_checked_as_setting_them_does,
    posix_acls_keep_the_mode_in_step,
    fallocate_keeps_holes_and_sizes,
    data_extents_of_sparse_files,
);

mod suite {
    use super::*;

    pub fn create_write_read(b: &dyn Backend) {
        b.create(p("f"), FileKind::File, 0o640, 0).unwrap();
        let a = b.stat(p("f")).unwrap();
        assert_eq!((a.kind, a.perm, a.size, a.nlink), (FileKind::File, 0o640, 0, 1));
        b.write_at(p("f"), 0, b"hello").unwrap();
        b.write_at(p("f"), 10, b"x").unwrap();
        assert_eq!(b.stat(p("f")).unwrap().size, 11);
        assert_eq!(read_all(b, "f"), b"hello\0\0\0\0\0x");
        let mut buf = [9u8; 4];
        assert_eq!(b.read_at(p("f"), 9, &mut buf).unwrap(), 2, "short only at end of file");
        assert_eq!(&buf[..2], b"\0x");
        assert_eq!(b.read_at(p("f"), 11, &mut buf).unwrap(), 0);
        assert_eq!(b.read_at(p("f"), 1000, &mut buf).unwrap(), 0);
        b.write_at(p("f"), 1, b"EL").unwrap();
        assert_eq!(&read_all(b, "f")[..5], b"hELlo");
        // write_at never creates
        assert_eq!(errno(b.write_at(p("nope"), 0, b"x")), libc::ENOENT);
        assert_eq!(errno(b.stat(p("nope"))), libc::ENOENT);
        assert_eq!(errno(b.write_at(p("nodir/f"), 0, b"x")), libc::ENOENT);
        assert_eq!(errno(b.read_at(p("nope"), 0, &mut buf)), libc::ENOENT);
    }

    /// Empty pieces among them, and more than one `pwritev` takes (1,024).
    pub fn write_pieces_is_one_write_of_the_joined_bytes(b: &dyn Backend) {
        new_file(b, "f", b"0123456789");
        let bytes: Vec<[u8; 3]> = (0..1500u32).map(|i| [i as u8, (i >> 8) as u8, 0xee]).collect();
        let mut pieces: Vec<&[u8]> = bytes.iter().map(|b| &b[..]).collect();
        pieces.insert(700, b"");
        pieces.push(b"");
        b.write_pieces_at(p("f"), 4, &pieces).unwrap();
        let mut want = b"0123".to_vec();
        want.extend(pieces.concat());
        assert_eq!(read_all(b, "f"), want);
        assert_eq!(errno(b.write_pieces_at(p("nope"), 0, &pieces)), libc::ENOENT);
    }

    pub fn create_truncates_only_regular_files(b: &dyn Backend) {
        new_file(b, "f", b"content");
        b.create(p("f"), FileKind::File, 0o600, 0).unwrap();
        let a = b.stat(p("f")).unwrap();
        assert_eq!((a.size, a.perm), (0, 0o600), "a replayed create truncates and sets the mode");
        b.create(p("d"), FileKind::Dir, 0o755, 0).unwrap();
        b.symlink(OsStr::new("f"), p("s")).unwrap();
        b.create(p("q"), FileKind::Fifo, 0o644, 0).unwrap();
        for existing in ["d", "s", "q", ""] {
            assert_eq!(errno(b.create(p(existing), FileKind::File, 0o644, 0)), libc::EEXIST, "file over {existing:?}");
            assert_eq!(errno(b.create(p(existing), FileKind::Dir, 0o755, 0)), libc::EEXIST, "dir over {existing:?}");
        }
        assert_eq!(errno(b.create(p("f"), FileKind::Dir, 0o755, 0)), libc::EEXIST);
        assert_eq!(errno(b.create(p("f"), FileKind::Fifo, 0o644, 0)), libc::EEXIST);
        assert_eq!(b.stat(p("s")).unwrap().kind, FileKind::Symlink, "the symlink was not followed");
        assert_eq!(errno(b.create(p("missing/f"), FileKind::File, 0o644, 0)), libc::ENOENT);
        assert_eq!(errno(b.create(p("f/g"), FileKind::File, 0o644, 0)), libc::ENOTDIR);
        assert_eq!(errno(b.create(p("x"), FileKind::Symlink, 0o777, 0)), libc::EINVAL);
    }

    pub fn set_len_and_sparse_reads(b: &dyn Backend) {
        new_file(b, "f", b"abc");
        let far = (1 << 20) + 5;
        b.write_at(p("f"), far, b"end").unwrap();
        assert_eq!(b.stat(p("f")).unwrap().size, far + 3);
        let mut buf = vec![7u8; 8192];
        assert_eq!(b.read_at(p("f"), 4096, &mut buf).unwrap(), 8192);
        assert!(buf.iter().all(|x| *x == 0), "a hole reads as zeros");
        b.set_len(p("f"), 2).unwrap();
        assert_eq!(read_all(b, "f"), b"ab");
        b.set_len(p("f"), 5000).unwrap();
        let data = read_all(b, "f");
        assert_eq!(data.len(), 5000);
        assert_eq!(&data[..2], b"ab");
        assert!(data[2..].iter().all(|x| *x == 0), "bytes cut off do not come back");
        b.set_len(p("f"), 0).unwrap();
        assert_eq!(b.stat(p("f")).unwrap().size, 0);
        assert_eq!(errno(b.set_len(p("nope"), 1)), libc::ENOENT);
        b.create(p("d"), FileKind::Dir, 0o755, 0).unwrap();
        assert_eq!(errno(b.set_len(p("d"), 1)), libc::EISDIR);
        assert_eq!(errno(b.write_at(p("d"), 0, b"x")), libc::EISDIR);
    }

    pub fn exact_permissions_despite_umask(b: &dyn Backend) {
        b.create(p("f"), FileKind::File, 0o777, 0).unwrap();
        b.create(p("d"), FileKind::Dir, 0o777, 0).unwrap();
        b.create(p("q"), FileKind::Fifo, 0o666, 0).unwrap();
        b.create(p("g"), FileKind::File, 0o2755, 0).unwrap();
        b.create(p("t"), FileKind::Dir, 0o1777, 0).unwrap();
        for (path, perm) in [("f", 0o777), ("d", 0o777), ("q", 0o666), ("g", 0o2755), ("t", 0o1777)] {
            assert_eq!(b.stat(p(path)).unwrap().perm, perm, "{path}");
        }
        // only permission bits are taken from the argument
        b.create(p("m"), FileKind::File, libc::S_IFDIR | 0o640, 0).unwrap();
        assert_eq!(b.stat(p("m")).unwrap().kind, FileKind::File);
        assert_eq!(b.stat(p("m")).unwrap().perm, 0o640);
    }

    pub fn special_files(b: &dyn Backend) {
        b.create(p("fifo"), FileKind::Fifo, 0o600, 0).unwrap();
        b.create(p("sock"), FileKind::Socket, 0o600, 0).unwrap();
        assert_eq!(b.stat(p("fifo")).unwrap().kind, FileKind::Fifo);
        assert_eq!(b.stat(p("sock")).unwrap().kind, FileKind::Socket);
        let mut buf = [0u8; 4];
        assert_eq!(errno(b.read_at(p("fifo"), 0, &mut buf)), libc::EINVAL, "never reads a fifo");
        assert_eq!(errno(b.write_at(p("sock"), 0, b"x")), libc::EINVAL);
        b.create(p("d"), FileKind::Dir, 0o755, 0).unwrap();
        assert_eq!(errno(b.read_at(p("d"), 0, &mut buf)), libc::EISDIR);
        if is_root() {
            let null = (1 << 8) | 3; // major 1, minor 3
            b.create(p("null"), FileKind::CharDev, 0o666, null).unwrap();
            b.create(p("blk"), FileKind::BlockDev, 0o600, (7 << 8) | 200).unwrap();
            let a = b.stat(p("null")).unwrap();
            assert_eq!((a.kind, a.rdev, a.perm), (FileKind::CharDev, null, 0o666));
            assert_eq!(b.stat(p("blk")).unwrap().rdev, (7 << 8) | 200);
            assert_eq!(errno(b.read_at(p("null"), 0, &mut buf)), libc::EINVAL, "never opens a device");
        }
    }

    pub fn hard_links_and_nlink(b: &dyn Backend) {
        new_file(b, "f", b"shared");
        b.create(p("d"), FileKind::Dir, 0o755, 0).unwrap();
        b.link(p("f"), p("d/g")).unwrap();
        assert_eq!(b.stat(p("f")).unwrap().nlink, 2);
        assert_eq!(b.stat(p("d/g")).unwrap().nlink, 2);
        b.write_at(p("d/g"), 0, b"S").unwrap();
        assert_eq!(read_all(b, "f"), b"Shared", "one inode behind both names");
        b.remove_file(p("f")).unwrap();
        assert_eq!(b.stat(p("d/g")).unwrap().nlink, 1);
        assert_eq!(read_all(b, "d/g"), b"Shared");
        assert_eq!(errno(b.link(p("d"), p("d2"))), libc::EPERM, "no hard links to directories");
        assert_eq!(errno(b.link(p("nope"), p("x"))), libc::ENOENT);
        new_file(b, "h", b"");
        assert_eq!(errno(b.link(p("h"), p("d/g"))), libc::EEXIST);
        assert_eq!(errno(b.link(p("h"), p("nodir/x"))), libc::ENOENT);
        // directories count their subdirectories
        let root_links = b.stat(p("")).unwrap().nlink;
        assert_eq!(b.stat(p("d")).unwrap().nlink, 2);
        b.create(p("d/e"), FileKind::Dir, 0o755, 0).unwrap();
        assert_eq!(b.stat(p("d")).unwrap().nlink, 3);
        b.remove_dir(p("d/e")).unwrap();
        assert_eq!(b.stat(p("d")).unwrap().nlink, 2);
        assert_eq!(b.stat(p("")).unwrap().nlink, root_links);
    }

    pub fn rename_replaces_a_file(b: &dyn Backend) {
        new_file(b, "a", b"AAA");
        new_file(b, "b", b"B");
        b.link(p("b"), p("c")).unwrap();
        b.rename(p("a"), p("b")).unwrap();
        assert_eq!(errno(b.stat(p("a"))), libc::ENOENT);
        assert_eq!(read_all(b, "b"), b"AAA");
        assert_eq!(b.stat(p("b")).unwrap().nlink, 1);
        assert_eq!(read_all(b, "c"), b"B", "the replaced inode lives on under its other name");
        assert_eq!(b.stat(p("c")).unwrap().nlink, 1);
        // renaming one name of an inode onto another name of it does nothing
        b.link(p("c"), p("c2")).unwrap();
        b.rename(p("c"), p("c2")).unwrap();
        assert_eq!(b.stat(p("c")).unwrap().nlink, 2);
        assert_eq!(b.stat(p("c2")).unwrap().nlink, 2);
        b.rename(p("c"), p("c")).unwrap();
        // into another directory, keeping content
        b.create(p("d"), FileKind::Dir, 0o755, 0).unwrap();
        b.rename(p("b"), p("d/moved")).unwrap();
        assert_eq!(read_all(b, "d/moved"), b"AAA");
        let names: Vec<OsString> = b.list_dir(p("")).unwrap().into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["c", "c2", "d"]);
    }

    pub fn rename_replaces_an_empty_dir(b: &dyn Backend) {
        b.create(p("src"), FileKind::Dir, 0o700, 0).unwrap();
        new_file(b, "src/file", b"x");
        b.create(p("src/sub"), FileKind::Dir, 0o755, 0).unwrap();
        b.create(p("dst"), FileKind::Dir, 0o755, 0).unwrap();
        let root_links = b.stat(p("")).unwrap().nlink;
        b.rename(p("src"), p("dst")).unwrap();
        assert_eq!(errno(b.stat(p("src"))), libc::ENOENT);
        let a = b.stat(p("dst")).unwrap();
        assert_eq!((a.kind, a.perm, a.nlink), (FileKind::Dir, 0o700, 3));
        assert_eq!(read_all(b, "dst/file"), b"x");
        assert_eq!(b.stat(p("")).unwrap().nlink, root_links - 1);
        // moving a directory to another parent moves its ".." link
        b.create(p("other"), FileKind::Dir, 0o755, 0).unwrap();
        b.rename(p("dst/sub"), p("other/sub")).unwrap();
        assert_eq!(b.stat(p("dst")).unwrap().nlink, 2);
        assert_eq!(b.stat(p("other")).unwrap().nlink, 3);
    }

    pub fn rename_errors(b: &dyn Backend) {
        new_file(b, "f", b"");
        b.create(p("d"), FileKind::Dir, 0o755, 0).unwrap();
        b.create(p("d/sub"), FileKind::Dir, 0o755, 0).unwrap();
        b.create(p("full"), FileKind::Dir, 0o755, 0).unwrap();
        new_file(b, "full/x", b"");
        b.create(p("empty"), FileKind::Dir, 0o755, 0).unwrap();
        assert_eq!(errno(b.rename(p("nope"), p("g"))), libc::ENOENT);
        assert_eq!(errno(b.rename(p("f"), p("nodir/g"))), libc::ENOENT);
        assert_eq!(errno(b.rename(p("f"), p("f/g"))), libc::ENOTDIR);
        assert_eq!(errno(b.rename(p("f"), p("empty"))), libc::EISDIR);
        assert_eq!(errno(b.rename(p("empty"), p("f"))), libc::ENOTDIR);
        assert_eq!(errno(b.rename(p("d"), p("full"))), libc::ENOTEMPTY);
        assert_eq!(errno(b.rename(p("d"), p("d/sub/inside"))), libc::EINVAL);
        assert_eq!(errno(b.rename(p("d"), p("d/sub"))), libc::EINVAL);
        assert_eq!(errno(b.rename(p("d/sub"), p("d"))), libc::ENOTEMPTY);
        assert_eq!(errno(b.rename(p(""), p("x"))), libc::EBUSY);
        assert_eq!(errno(b.rename(p("empty"), p(""))), libc::EBUSY);
        // nothing moved
        for path in ["f", "d/sub", "full/x", "empty"] {
            assert!(b.stat(p(path)).is_ok(), "{path}");
        }
    }

    pub fn remove_errors(b: &dyn Backend) {
        new_file(b, "f", b"");
        b.create(p("d"), FileKind::Dir, 0o755, 0).unwrap();
        new_file(b, "d/x", b"");
        assert_eq!(errno(b.remove_file(p("d"))), libc::EISDIR);
        assert_eq!(errno(b.remove_file(p("nope"))), libc::ENOENT);
        assert_eq!(errno(b.remove_dir(p("f"))), libc::ENOTDIR);
        assert_eq!(errno(b.remove_dir(p("d"))), libc::ENOTEMPTY);
        assert_eq!(errno(b.remove_dir(p("nope"))), libc::ENOENT);
        assert_eq!(errno(b.remove_dir(p(""))), libc::EBUSY);
        assert_eq!(errno(b.remove_file(p(""))), libc::EBUSY);
        assert_eq!(errno(b.remove_file(p("f/x"))), libc::ENOTDIR);
        b.remove_file(p("d/x")).unwrap();
        b.remove_dir(p("d")).unwrap();
        b.remove_file(p("f")).unwrap();
        assert!(b.list_dir(p("")).unwrap().is_empty());
    }

    pub fn symlinks(b: &dyn Backend) {
        new_file(b, "target", b"data");
        b.symlink(OsStr::new("target"), p("s")).unwrap();
        b.symlink(OsStr::new("../dangling/x"), p("dangling")).unwrap();
        let a = b.stat(p("s")).unwrap();
        assert_eq!((a.kind, a.size), (FileKind::Symlink, 6), "stat does not follow");
        assert_eq!(b.read_link(p("s")).unwrap(), "target");
        assert_eq!(b.read_link(p("dangling")).unwrap(), "../dangling/x");
        assert_eq!(errno(b.read_link(p("target"))), libc::EINVAL);
        assert_eq!(errno(b.read_link(p("nope"))), libc::ENOENT);
        assert_eq!(errno(b.symlink(OsStr::new("x"), p("target"))), libc::EEXIST);
        assert_eq!(errno(b.symlink(OsStr::new(""), p("empty"))), libc::ENOENT);
        let mut buf = [0u8; 4];
        assert_eq!(errno(b.read_at(p("s"), 0, &mut buf)), libc::ELOOP, "reads never follow a symlink");
        assert_eq!(errno(b.write_at(p("s"), 0, b"x")), libc::ELOOP);
        // chmod leaves symlinks alone; chown and utimens act on the link itself
        b.set_perm(p("s"), 0o600).unwrap();
        assert_eq!(b.stat(p("target")).unwrap().perm, 0o644);
        let when = UNIX_EPOCH + Duration::from_secs(1_000_000);
        b.set_times(p("s"), when, when).unwrap();
        assert_eq!(b.stat(p("s")).unwrap().mtime, when);
        assert_ne!(b.stat(p("target")).unwrap().mtime, when);
        if is_root() {
            b.set_owner(p("s"), 4242, 4343).unwrap();
            assert_eq!(b.stat(p("s")).unwrap().uid, 4242);
            assert_eq!(b.stat(p("target")).unwrap().uid, 0);
        }
        // a hard link to a symlink is a second symlink
        b.link(p("s"), p("s2")).unwrap();
        assert_eq!(b.read_link(p("s2")).unwrap(), "target");
        assert_eq!(b.stat(p("s")).unwrap().nlink, 2);
    }

    /// A directory on the way that is a symlink is never crossed, whatever
    /// the call: `ENOTDIR`, and the directory it leads to is untouched (on a
    /// real directory, the link could lead anywhere; see dir.rs's tests).
    pub fn symlinked_directories_are_never_crossed(b: &dyn Backend) {
        b.create(p("d"), FileKind::Dir, 0o755, 0).unwrap();
        b.create(p("d/sub"), FileKind::Dir, 0o755, 0).unwrap();
        new_file(b, "d/f", b"f");
        b.create(p("e"), FileKind::Dir, 0o755, 0).unwrap();
        b.symlink(OsStr::new("d"), p("s")).unwrap();
        b.symlink(OsStr::new("../d"), p("e/s")).unwrap();
        let when = UNIX_EPOCH + Duration::from_secs(1_000_000);
        // (After a read: with relatime the first read moves atime.)
        assert_eq!(read_all(b, "d/f"), b"f");
        let before = b.stat(p("d/f")).unwrap();
        let mut buf = [0u8; 1];
        for via in ["s", "e/s", "s/sub"] {
            let (x, f, sub) = (format!("{via}/x"), format!("{via}/f"), format!("{via}/sub"));
            let (x, f, sub) = (p(&x), p(&f), p(&sub));
            let key = OsStr::new("user.k");
            let calls: Vec<(&str, io::Result<()>)> = vec![
                ("create", b.create(x, FileKind::File, 0o644, 0)),
                ("mkdir", b.create(x, FileKind::Dir, 0o755, 0)),
                ("symlink", b.symlink(OsStr::new("t"), x)),
                ("link into", b.link(p("d/f"), x)),
                ("link from", b.link(f, p("y"))),
                ("rename into", b.rename(p("e"), x)),
                ("rename from", b.rename(f, p("y"))),
                ("unlink", b.remove_file(f)),
                ("rmdir", b.remove_dir(sub)),
                ("write", b.write_at(f, 0, b"x")),
                ("truncate", b.set_len(f, 0)),
                ("chmod", b.set_perm(f, 0o600)),
                ("chown", b.set_owner(f, 4242, 4242)),
                ("utimens", b.set_times(f, when, when)),
                ("setxattr", b.set_xattr(f, key, b"v")),
                ("removexattr", b.remove_xattr(f, key)),
                ("stat", b.stat(f).map(drop)),
                ("read", b.read_at(f, 0, &mut buf).map(drop)),
                ("readlink", b.read_link(f).map(drop)),
                ("list", b.list_dir(sub).map(drop)),
                ("getxattr", b.get_xattr(f, key).map(drop)),
                ("listxattr", b.list_xattr(f).map(drop)),
            ];
            for (what, result) in calls {
                assert_eq!(errno(result), libc::ENOTDIR, "{what} through {via}");
            }
        }
        let names: Vec<OsString> = b.list_dir(p("d")).unwrap().into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["f", "sub"]);
        assert_eq!(read_all(b, "d/f"), b"f");
        assert_eq!(b.stat(p("d/f")).unwrap(), before);
        assert_eq!(b.get_xattr(p("d/f"), OsStr::new("user.k")).unwrap(), None);
        assert_eq!(b.stat(p("e")).unwrap().kind, FileKind::Dir);
    }

    pub fn permissions_owner_and_times(b: &dyn Backend) {
        new_file(b, "f", b"x");
        b.create(p("d"), FileKind::Dir, 0o755, 0).unwrap();
        b.set_perm(p("f"), 0o4751).unwrap();
        assert_eq!(b.stat(p("f")).unwrap().perm, 0o4751);
        b.set_perm(p("f"), libc::S_IFREG | 0o600).unwrap();
        assert_eq!(b.stat(p("f")).unwrap().perm, 0o600);
        assert_eq!(errno(b.set_perm(p("nope"), 0o600)), libc::ENOENT);
        if is_root() {
            b.set_owner(p("f"), 1000, 1001).unwrap();
            let a = b.stat(p("f")).unwrap();
            assert_eq!((a.uid, a.gid), (1000, 1001));
            b.set_owner(p("f"), u32::MAX, 7).unwrap();
            let a = b.stat(p("f")).unwrap();
            assert_eq!((a.uid, a.gid), (1000, 7), "-1 keeps a value");
            // chown drops set-uid (and group-executable set-gid) of non-directories only
            b.set_perm(p("f"), 0o6755).unwrap();
            b.set_owner(p("f"), 0, 0).unwrap();
            assert_eq!(b.stat(p("f")).unwrap().perm, 0o755);
            b.set_perm(p("f"), 0o2745).unwrap();
            b.set_owner(p("f"), 0, 0).unwrap();
            assert_eq!(b.stat(p("f")).unwrap().perm, 0o2745);
            b.set_perm(p("d"), 0o6755).unwrap();
            b.set_owner(p("d"), 5, 5).unwrap();
            assert_eq!(b.stat(p("d")).unwrap().perm, 0o6755);
            assert_eq!(errno(b.set_owner(p("nope"), 0, 0)), libc::ENOENT);
            // a set-gid directory hands its group down; the mode stays exact
            b.set_owner(p("d"), 0, 55).unwrap();
            b.set_perm(p("d"), 0o2755).unwrap();
            new_file(b, "d/f", b"");
            b.create(p("d/sub"), FileKind::Dir, 0o750, 0).unwrap();
            b.symlink(OsStr::new("f"), p("d/s")).unwrap();
            for path in ["d/f", "d/sub", "d/s"] {
                assert_eq!(b.stat(p(path)).unwrap().gid, 55, "{path}");
            }
            assert_eq!(b.stat(p("d/sub")).unwrap().perm, 0o750);
        }
        let atime = UNIX_EPOCH + Duration::new(1_600_000_000, 123_456_789);
        let mtime = UNIX_EPOCH + Duration::new(1_500_000_000, 987_654_321);
        b.set_times(p("f"), atime, mtime).unwrap();
        let a = b.stat(p("f")).unwrap();
        assert_eq!((a.atime, a.mtime), (atime, mtime));
        let before_epoch = UNIX_EPOCH - Duration::from_millis(1500);
        b.set_times(p("d"), before_epoch, before_epoch).unwrap();
        assert_eq!(b.stat(p("d")).unwrap().mtime, before_epoch);
        assert_eq!(errno(b.set_times(p("nope"), atime, mtime)), libc::ENOENT);
    }

    pub fn extended_attributes(b: &dyn Backend) {
        new_file(b, "f", b"");
        b.create(p("d"), FileKind::Dir, 0o755, 0).unwrap();
        b.symlink(OsStr::new("f"), p("s")).unwrap();
        let name = |s: &str| OsString::from(s);
        let user_names = |path: &str| -> Vec<OsString> {
            let all = b.list_xattr(p(path)).unwrap();
            all.into_iter().filter(|n| n.to_string_lossy().starts_with("user.")).collect()
        };
        assert_eq!(b.get_xattr(p("f"), &name("user.a")).unwrap(), None);
        assert!(user_names("f").is_empty());
        b.set_xattr(p("f"), &name("user.b"), b"").unwrap();
        b.set_xattr(p("f"), &name("user.a"), b"one").unwrap();
        b.set_xattr(p("f"), &name("user.a"), b"two").unwrap();
        assert_eq!(b.get_xattr(p("f"), &name("user.a")).unwrap().as_deref(), Some(&b"two"[..]));
        assert_eq!(b.get_xattr(p("f"), &name("user.b")).unwrap().as_deref(), Some(&b""[..]));
        assert_eq!(user_names("f"), [name("user.a"), name("user.b")]);
        b.remove_xattr(p("f"), &name("user.a")).unwrap();
        b.remove_xattr(p("f"), &name("user.a")).unwrap(); // absent: not an error
        assert_eq!(b.get_xattr(p("f"), &name("user.a")).unwrap(), None);
        assert_eq!(user_names("f"), [name("user.b")]);
        let big = vec![0xa5u8; 1000];
        b.set_xattr(p("d"), &name("user.big"), &big).unwrap();
        assert_eq!(b.get_xattr(p("d"), &name("user.big")).unwrap(), Some(big));
        // user attributes exist only on files and directories
        assert_eq!(errno(b.set_xattr(p("s"), &name("user.a"), b"x")), libc::EPERM);
        assert_eq!(b.get_xattr(p("s"), &name("user.a")).unwrap(), None);
        assert_eq!(errno(b.set_xattr(p("f"), &name("nonamespace"), b"x")), libc::EOPNOTSUPP);
        assert_eq!(errno(b.set_xattr(p("f"), &name("user."), b"x")), libc::EINVAL);
        assert_eq!(errno(b.set_xattr(p("f"), &name(""), b"x")), libc::ERANGE);
        assert_eq!(errno(b.set_xattr(p("nope"), &name("nonamespace"), b"x")), libc::ENOENT, "lookup first");
        assert_eq!(errno(b.get_xattr(p("nope"), &name("user.a"))), libc::ENOENT);
        assert_eq!(errno(b.set_xattr(p("nope"), &name("user.a"), b"x")), libc::ENOENT);
        assert_eq!(errno(b.list_xattr(p("nope"))), libc::ENOENT);
        // attributes belong to the inode: a hard link sees them
        b.link(p("f"), p("g")).unwrap();
        assert_eq!(user_names("g"), [name("user.b")]);
    }

    pub fn list_dir_kinds_and_errors(b: &dyn Backend) {
        assert!(b.list_dir(p("")).unwrap().is_empty());
        b.create(p("d"), FileKind::Dir, 0o755, 0).unwrap();
        new_file(b, "d/f", b"");
        b.symlink(OsStr::new("f"), p("d/s")).unwrap();
        b.create(p("d/q"), FileKind::Fifo, 0o644, 0).unwrap();
        b.create(p("d/sub"), FileKind::Dir, 0o755, 0).unwrap();
        let listed = b.list_dir(p("d")).unwrap();
        let expected = [("f", FileKind::File), ("q", FileKind::Fifo), ("s", FileKind::Symlink), ("sub", FileKind::Dir)];
        let expected: Vec<(OsString, FileKind)> = expected.iter().map(|(n, k)| (OsString::from(n), *k)).collect();
        assert_eq!(listed, expected, "sorted by name, without . and ..");
        assert_eq!(b.list_dir(p("")).unwrap(), [(OsString::from("d"), FileKind::Dir)]);
        assert_eq!(errno(b.list_dir(p("d/f"))), libc::ENOTDIR);
        assert_eq!(errno(b.list_dir(p("nope"))), libc::ENOENT);
    }

    pub fn paths_must_stay_inside_the_root(b: &dyn Backend) {
        assert_eq!(errno(b.stat(p("/etc"))), libc::EINVAL);
        assert_eq!(errno(b.stat(p(".."))), libc::EINVAL);
        assert_eq!(errno(b.create(p("../x"), FileKind::File, 0o644, 0)), libc::EINVAL);
        assert_eq!(errno(b.rename(p("a"), p("/tmp/x"))), libc::EINVAL);
        assert_eq!(errno(b.stat(p(&"n".repeat(256)))), libc::ENAMETOOLONG);
        b.create(p("./d"), FileKind::Dir, 0o755, 0).unwrap();
        new_file(b, "d/./f", b"dotted");
        assert_eq!(read_all(b, "d/f/"), b"dotted");
        assert_eq!(b.stat(p("")).unwrap().kind, FileKind::Dir);
        assert_eq!(b.stat(p(".")).unwrap().kind, FileKind::Dir);
    }

    /// Every call works on a relative path longer than `PATH_MAX` (17 names
    /// of 250 bytes), where a real directory must be walked, not named.
    pub fn paths_longer_than_path_max(b: &dyn Backend) {
        let mut dir = String::new();
        for i in 0..17 {
            let name = format!("{i:02}{}", "d".repeat(248));
            dir = if dir.is_empty() { name } else { format!("{dir}/{name}") };
            b.create(p(&dir), FileKind::Dir, 0o750, 0).unwrap();
        }
        assert!(dir.len() > libc::PATH_MAX as usize);
        let deep = |name: &str| format!("{dir}/{name}");
        let (f, g, s) = (deep("f"), deep("g"), deep("s"));
        let (f, g, s) = (f.as_str(), g.as_str(), s.as_str());

        new_file(b, f, b"deep data");
        assert_eq!(read_all(b, f), b"deep data");
        b.set_len(p(f), 4).unwrap();
        assert_eq!(read_all(b, f), b"deep");
        let a = b.stat(p(f)).unwrap();
        assert_eq!((a.kind, a.perm, a.size, a.nlink), (FileKind::File, 0o644, 4, 1));
        assert_eq!(b.stat(p(&dir)).unwrap().perm, 0o750);
        b.create(p(f), FileKind::File, 0o644, 0).unwrap();
        assert_eq!(b.stat(p(f)).unwrap().size, 0, "create truncates at depth too");
        b.write_at(p(f), 0, b"deep").unwrap();
        assert_eq!(errno(b.create(p(&dir), FileKind::Dir, 0o755, 0)), libc::EEXIST);
        b.create(p(&deep("q")), FileKind::Fifo, 0o640, 0).unwrap();
        assert_eq!(b.stat(p(&deep("q"))).unwrap().perm, 0o640);

        b.link(p(f), p(g)).unwrap();
        assert_eq!(b.stat(p(f)).unwrap().nlink, 2);
        b.rename(p(g), p("shallow")).unwrap();
        assert_eq!(read_all(b, "shallow"), b"deep");
        b.rename(p("shallow"), p(&deep("h"))).unwrap();
        assert_eq!(read_all(b, &deep("h")), b"deep");
        assert_eq!(errno(b.rename(p(&deep("nope")), p(g))), libc::ENOENT);

        let target = "t".repeat(300);
        b.symlink(OsStr::new(&target), p(s)).unwrap();
        assert_eq!(b.read_link(p(s)).unwrap(), OsString::from(&target));
        assert_eq!(b.stat(p(s)).unwrap().kind, FileKind::Symlink);
        assert_eq!(errno(b.read_link(p(f))), libc::EINVAL);

        b.set_perm(p(f), 0o4640).unwrap();
        b.set_perm(p(s), 0o600).unwrap();
        assert_eq!(b.stat(p(f)).unwrap().perm, 0o4640);
        let when = UNIX_EPOCH + Duration::new(1_000_000, 5);
        b.set_times(p(f), when, when).unwrap();
        b.set_times(p(s), when + Duration::from_secs(1), when).unwrap();
        let (af, as_) = (b.stat(p(f)).unwrap(), b.stat(p(s)).unwrap());
        assert_eq!((af.atime, af.mtime), (when, when));
        assert_eq!(as_.atime, when + Duration::from_secs(1), "the symlink's own times");
        if is_root() {
            b.set_owner(p(f), 1000, 1001).unwrap();
            b.set_owner(p(s), 2000, 2001).unwrap();
            let (af, as_) = (b.stat(p(f)).unwrap(), b.stat(p(s)).unwrap());
            assert_eq!((af.uid, af.gid, as_.uid, as_.gid), (1000, 1001, 2000, 2001));
        }

        let name = |s: &str| OsString::from(s);
        let user_names = |path: &str| -> Vec<OsString> {
            let all = b.list_xattr(p(path)).unwrap();
            all.into_iter().filter(|n| n.to_string_lossy().starts_with("user.")).collect()
        };
        b.set_xattr(p(f), &name("user.a"), b"one").unwrap();
        b.set_xattr(p(&dir), &name("user.d"), b"dir").unwrap();
        assert_eq!(b.get_xattr(p(f), &name("user.a")).unwrap().as_deref(), Some(&b"one"[..]));
        assert_eq!(b.get_xattr(p(&deep("h")), &name("user.a")).unwrap().as_deref(), Some(&b"one"[..]));
        assert_eq!(user_names(f), [name("user.a")]);
        assert_eq!(user_names(&dir), [name("user.d")]);
        assert_eq!(errno(b.set_xattr(p(s), &name("user.a"), b"x")), libc::EPERM);
        assert_eq!(b.get_xattr(p(s), &name("user.a")).unwrap(), None);
        b.remove_xattr(p(f), &name("user.a")).unwrap();
        b.remove_xattr(p(f), &name("user.a")).unwrap();
        assert_eq!(b.get_xattr(p(f), &name("user.a")).unwrap(), None);
        assert_eq!(errno(b.get_xattr(p(&deep("nope")), &name("user.a"))), libc::ENOENT);

        let listed: Vec<OsString> = b.list_dir(p(&dir)).unwrap().into_iter().map(|(n, _)| n).collect();
        assert_eq!(listed, [name("f"), name("h"), name("q"), name("s")]);
        assert_eq!(errno(b.list_dir(p(f))), libc::ENOTDIR);
        assert_eq!(errno(b.stat(p(&deep("f/x")))), libc::ENOTDIR);
        assert_eq!(errno(b.stat(p(&deep("nope")))), libc::ENOENT);

        assert_eq!(errno(b.remove_dir(p(&dir))), libc::ENOTEMPTY);
        assert_eq!(errno(b.remove_file(p(&dir))), libc::EISDIR);
        for leaf in ["f", "h", "q", "s"] {
            b.remove_file(p(&deep(leaf))).unwrap();
        }
        assert_eq!(errno(b.remove_file(p(f))), libc::ENOENT);
        let mut path = Path::new(&dir);
        while !path.as_os_str().is_empty() {
            b.remove_dir(path).unwrap();
            path = path.parent().unwrap();
        }
        assert!(b.list_dir(p("")).unwrap().is_empty());
    }

    pub fn fallocate_keeps_holes_and_sizes(b: &dyn Backend) {
        use FallocMode::{Allocate, PunchHole, ZeroRange};
        new_file(b, "f", &[b'x'; 16384]);
        b.fallocate(p("f"), PunchHole, 100, 2 * 4096 + 50).unwrap();
        let data = read_all(b, "f");
        assert_eq!(data.len(), 16384, "a punch keeps the size");
        assert!(data[..100].iter().chain(&data[8342..]).all(|x| *x == b'x'), "only the range is punched");
        assert!(data[100..8342].iter().all(|x| *x == 0), "the punched range reads as zeros");
        assert_eq!(b.data_extents(p("f")).unwrap(), [0..4096, 8192..16384], "the page wholly inside is a hole");
        assert_eq!(b.stat(p("f")).unwrap().blocks, 24, "and takes no space");
        b.fallocate(p("f"), ZeroRange { keep_size: true }, 16000, 5000).unwrap();
        assert_eq!(b.stat(p("f")).unwrap().size, 16384, "KEEP_SIZE");
        b.fallocate(p("f"), ZeroRange { keep_size: false }, 15000, 6000).unwrap();
        let data = read_all(b, "f");
        assert_eq!(data.len(), 21000, "a zero-range extends");
        assert!(data[8342..15000].iter().all(|x| *x == b'x') && data[15000..].iter().all(|x| *x == 0));
        b.fallocate(p("f"), Allocate { keep_size: true }, 0, 100_000).unwrap();
        assert_eq!(b.stat(p("f")).unwrap().size, 21000, "KEEP_SIZE");
        b.fallocate(p("f"), Allocate { keep_size: false }, 20000, 10000).unwrap();
        let grown = read_all(b, "f");
        assert_eq!((grown.len(), &grown[..21000]), (30000, &data[..]), "an allocation changes no byte");
        assert_eq!(errno(b.fallocate(p("nope"), PunchHole, 0, 1)), libc::ENOENT);
        assert_eq!(errno(b.fallocate(p("f"), PunchHole, 0, 0)), libc::EINVAL);
        b.create(p("d"), FileKind::Dir, 0o755, 0).unwrap();
        assert_eq!(errno(b.fallocate(p("d"), Allocate { keep_size: false }, 0, 1)), libc::EISDIR);
    }

    pub fn data_extents_of_sparse_files(b: &dyn Backend) {
        new_file(b, "f", b"abc");
        b.write_at(p("f"), 1 << 20, b"end").unwrap();
        assert_eq!(b.data_extents(p("f")).unwrap(), [0..4096, (1 << 20)..(1 << 20) + 3]);
        assert_eq!(b.stat(p("f")).unwrap().blocks, 16, "holes take no space");
        b.set_len(p("f"), 10).unwrap();
        assert_eq!(b.data_extents(p("f")).unwrap(), vec![std::ops::Range { start: 0, end: 10 }], "within the size");
        new_file(b, "empty", b"");
        assert_eq!(b.data_extents(p("empty")).unwrap(), []);
        assert_eq!(errno(b.data_extents(p("nope"))), libc::ENOENT);
        b.create(p("d"), FileKind::Dir, 0o755, 0).unwrap();
        assert_eq!(errno(b.data_extents(p("d"))), libc::EISDIR);
    }

    pub fn statfs_and_sync(b: &dyn Backend) {
        let s = b.statfs().unwrap();
        assert!(s.bsize > 0);
        assert_eq!(s.namelen, 255);
        assert!(s.blocks >= s.bfree && s.bfree >= s.bavail, "{s:?}");
        assert!(s.files >= s.ffree, "{s:?}");
        new_file(b, "f", b"x");
        b.sync().unwrap();
        assert_eq!(read_all(b, "f"), b"x");
    }

    /// Each limit `limits` reports is exactly where the store starts refusing.
    pub fn limits_are_what_the_store_refuses(b: &dyn Backend) {
        let l = b.limits();
        assert_eq!(b.limits(), l, "learned once");
        new_file(b, "f", b"");
        b.set_len(p("f"), l.max_file_size).unwrap();
        assert_eq!(errno(b.set_len(p("f"), l.max_file_size + 1)), libc::EFBIG);
        assert_eq!(errno(b.write_at(p("f"), l.max_file_size, b"x")), libc::EFBIG);
        b.set_len(p("f"), 0).unwrap();
        let name = "n".repeat(l.name_max as usize);
        new_file(b, &name, b"");
        assert_eq!(errno(b.create(p(&format!("{name}n")), FileKind::File, 0o644, 0)), libc::ENAMETOOLONG);
        let target = "t".repeat(l.symlink_max as usize);
        b.symlink(OsStr::new(&target), p("s")).unwrap();
        assert_eq!(errno(b.symlink(OsStr::new(&format!("{target}t")), p("s2"))), libc::ENAMETOOLONG);
        if l.link_max == u32::MAX {
            return; // no limit a test can reach
        }
        b.create(p("links"), FileKind::Dir, 0o755, 0).unwrap();
        for n in 1..l.link_max {
            b.link(p("f"), p(&format!("links/{n}"))).unwrap_or_else(|e| panic!("link {n} of {}: {e}", l.link_max));
        }
        assert_eq!(b.stat(p("f")).unwrap().nlink, l.link_max);
        assert_eq!(errno(b.link(p("f"), p("links/over"))), libc::EMLINK);
    }

    /// `check_xattrs` refuses a set exactly when setting its attributes one
    /// by one on a fresh object of that kind fails, with the same errno.
    pub fn xattr_sets_are_checked_as_setting_them_does(b: &dyn Backend) {
        let value = [0x5au8; 16];
        let fresh = std::cell::Cell::new(0);
        let check_both = |kind: FileKind, set: &[(OsString, Vec<u8>)]| {
            let pairs: Vec<(&OsStr, &[u8])> = set.iter().map(|(n, v)| (n.as_os_str(), v.as_slice())).collect();
            let checked = b.check_xattrs(kind, &pairs).map_err(|e| errno_of(&e));
            fresh.set(fresh.get() + 1);
            let path = format!("obj{}", fresh.get());
            match kind {
                FileKind::Symlink => b.symlink(OsStr::new("x"), p(&path)).unwrap(),
                kind => b.create(p(&path), kind, 0o644, 0).unwrap(),
            }
            let set_one_by_one = pairs.iter().try_for_each(|(n, v)| b.set_xattr(p(&path), n, v));
            assert_eq!(checked, set_one_by_one.map_err(|e| errno_of(&e)), "{kind:?} with {} attributes", set.len());
            checked
        };
        let attr = |name: String, value: &[u8]| (OsString::from(name), value.to_vec());
        for kind in [FileKind::File, FileKind::Dir] {
            let mut set = Vec::new();
            let refused = loop {
                set.push(attr(format!("user.n{}", set.len()), &value));
                if let Err(errno) = check_both(kind, &set) {
                    break errno;
                }
                assert!(set.len() < 10_000, "no limit on extended attributes per inode");
            };
            assert_eq!(refused, libc::ENOSPC, "{kind:?}: {} attributes", set.len());
            set.pop();
            assert_eq!(check_both(kind, &set), Ok(()), "the set before the refused one still fits");
        }
        let big = [attr("user.big".into(), &[7; 8192])];
        assert_eq!(check_both(FileKind::File, &big), Err(libc::ENOSPC), "an 8 KiB value");
        let foreign = [attr("foo.bar".into(), b"1")];
        assert_eq!(check_both(FileKind::File, &foreign), Err(libc::EOPNOTSUPP));
        let user = [attr("user.a".into(), b"1")];
        assert_eq!(check_both(FileKind::Symlink, &user), Err(libc::EPERM));
        assert_eq!(check_both(FileKind::Fifo, &user), Err(libc::EPERM));
        if is_root() {
            let trusted = [attr("trusted.a".into(), b"1")];
            assert_eq!(check_both(FileKind::Symlink, &trusted), Ok(()));
        }
    }

    /// The ACLs as ext4 keeps them (Linux's format; see `mcfs_core` `acl`).
    pub fn posix_acls_keep_the_mode_in_step(b: &dyn Backend) {
        let (access, default) = (OsStr::new("system.posix_acl_access"), OsStr::new("system.posix_acl_default"));
        let acl = |entries: &[(u16, u16, u32)]| {
            let mut out = 2u32.to_le_bytes().to_vec();
            for (tag, perm, id) in entries {
                out.extend([&tag.to_le_bytes()[..], &perm.to_le_bytes(), &id.to_le_bytes()].concat());
            }
            out
        };
        const N: u32 = u32::MAX;
        new_file(b, "f", b"");
        b.set_perm(p("f"), 0o640).unwrap();
        let shut_out = acl(&[(1, 6, N), (2, 0, 10002), (4, 6, N), (0x10, 6, N), (0x20, 6, N)]);
        b.set_xattr(p("f"), access, &shut_out).unwrap();
        assert_eq!(b.stat(p("f")).unwrap().perm, 0o666, "setting the ACL sets the mode");
        assert_eq!(b.get_xattr(p("f"), access).unwrap(), Some(shut_out));
        b.set_perm(p("f"), 0o751).unwrap();
        let chmodded = acl(&[(1, 7, N), (2, 0, 10002), (4, 6, N), (0x10, 5, N), (0x20, 1, N)]);
        assert_eq!(b.get_xattr(p("f"), access).unwrap(), Some(chmodded), "chmod updates the ACL");
        b.set_xattr(p("f"), access, &acl(&[(1, 6, N), (4, 4, N), (0x20, 0, N)])).unwrap();
        assert_eq!(b.get_xattr(p("f"), access).unwrap(), None, "an ACL the mode says all of is not kept");
        assert_eq!(b.stat(p("f")).unwrap().perm, 0o640);

        b.create(p("d"), FileKind::Dir, 0o755, 0).unwrap();
        let dflt = acl(&[(1, 7, N), (2, 7, 10002), (4, 5, N), (0x10, 7, N), (0x20, 0, N)]);
        b.set_xattr(p("d"), default, &dflt).unwrap();
        assert_eq!(b.stat(p("d")).unwrap().perm, 0o755);
        new_file(b, "d/f", b"");
        assert_eq!(b.stat(p("d/f")).unwrap().perm, 0o644, "the requested mode, exactly");
        let inherited = acl(&[(1, 6, N), (2, 7, 10002), (4, 5, N), (0x10, 4, N), (0x20, 4, N)]);
        assert_eq!(b.get_xattr(p("d/f"), access).unwrap(), Some(inherited));
        assert_eq!(b.get_xattr(p("d/f"), default).unwrap(), None);
        b.create(p("d/sub"), FileKind::Dir, 0o700, 0).unwrap();
        assert_eq!(b.get_xattr(p("d/sub"), default).unwrap(), Some(dflt.clone()));

        assert_eq!(errno(b.set_xattr(p("f"), default, &dflt)), libc::EACCES, "a default ACL on a file");
        b.symlink(OsStr::new("f"), p("s")).unwrap();
        assert_eq!(errno(b.set_xattr(p("s"), access, &dflt)), libc::EOPNOTSUPP, "an ACL on a symlink");
        let no_mask = acl(&[(1, 7, N), (2, 7, 5), (4, 5, N), (0x20, 0, N)]);
        assert_eq!(errno(b.set_xattr(p("f"), access, &no_mask)), libc::EINVAL, "named entries need a mask");
    }
}

/// Seed for randomized tests: `MCFS_SEED` if set, else fixed; printed.
fn seed() -> u64 {
    let seed = std::env::var("MCFS_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(20240611);
    println!("MCFS_SEED={seed}");
    seed
}

const PATHS: [&str; 9] = ["a", "b", "d", "d/a", "d/b", "d/e", "d/e/a", "e", "e/a"];

/// A call on `x` (and `y`) and its description.
type Call = (String, Box<dyn Fn(&dyn Backend) -> io::Result<()>>);

/// A random call over a small set of names, so calls collide often; also
/// the paths it names.
fn random_call(rng: &mut StdRng) -> (Call, [String; 2]) {
    let path = |rng: &mut StdRng| PATHS[rng.gen_range(0..PATHS.len())].to_string();
    let x = path(rng);
    let y = path(rng);
    let paths = [x.clone(), y.clone()];
    (call_on(rng, x, y), paths)
}

fn call_on(rng: &mut StdRng, x: String, y: String) -> Call {
    match rng.gen_range(0..17) {
        0 | 1 => (format!("create file {x}"), Box::new(move |b| b.create(p(&x), FileKind::File, 0o644, 0))),
        2 => (format!("mkdir {x}"), Box::new(move |b| b.create(p(&x), FileKind::Dir, 0o755, 0))),
        3 => (format!("mkfifo {x}"), Box::new(move |b| b.create(p(&x), FileKind::Fifo, 0o600, 0))),
        4 | 5 => {
            let offset = rng.gen_range(0..9000u64);
            let data = vec![rng.gen::<u8>() | 1; rng.gen_range(0..5000)];
            (format!("write {x} @{offset} +{}", data.len()), Box::new(move |b| b.write_at(p(&x), offset, &data)))
        }
        6 => {
            let size = rng.gen_range(0..10000u64);
            (format!("truncate {x} {size}"), Box::new(move |b| b.set_len(p(&x), size)))
        }
        7 => (format!("link {x} {y}"), Box::new(move |b| b.link(p(&x), p(&y)))),
        8 | 9 => (format!("rename {x} {y}"), Box::new(move |b| b.rename(p(&x), p(&y)))),
        10 => (format!("unlink {x}"), Box::new(move |b| b.remove_file(p(&x)))),
        11 => (format!("rmdir {x}"), Box::new(move |b| b.remove_dir(p(&x)))),
        12 => (format!("symlink {x} -> {y}"), Box::new(move |b| b.symlink(OsStr::new(&y), p(&x)))),
        15 if is_root() => {
            let ids = [0, 1000, u32::MAX];
            let (uid, gid) = (ids[rng.gen_range(0..3)], ids[rng.gen_range(0..3)]);
            (format!("chown {x} {uid}:{gid}"), Box::new(move |b| b.set_owner(p(&x), uid, gid)))
        }
        16 => {
            let modes = [
                FallocMode::PunchHole,
                FallocMode::ZeroRange { keep_size: rng.gen() },
                FallocMode::Allocate { keep_size: rng.gen() },
            ];
            let mode = modes[rng.gen_range(0..3)];
            let (offset, len) = (rng.gen_range(0..9000u64), rng.gen_range(0..9000u64));
            (
                format!("fallocate {x} {mode:?} @{offset} +{len}"),
                Box::new(move |b| b.fallocate(p(&x), mode, offset, len)),
            )
        }
        13 | 15 => {
            let perm = rng.gen_range(0..0o10000u32);
            (format!("chmod {x} {perm:o}"), Box::new(move |b| b.set_perm(p(&x), perm)))
        }
        _ => {
            let names: &[&str] = if is_root() {
                &["user.k", "user.j", "trusted.t", "user.", "k"]
            } else {
                &["user.k", "user.j", "user.", "k"]
            };
            let name = OsString::from(names[rng.gen_range(0..names.len())]);
            let value = vec![rng.gen::<u8>(); rng.gen_range(0..4)];
            if value.is_empty() {
                (format!("removexattr {x} {name:?}"), Box::new(move |b| b.remove_xattr(p(&x), &name)))
            } else {
                (format!("setxattr {x} {name:?}"), Box::new(move |b| b.set_xattr(p(&x), &name, &value)))
            }
        }
    }
}

fn outcome(r: io::Result<()>) -> i32 {
    r.map_or_else(|e| errno_of(&e), |()| 0)
}

/// True if a directory on the way to `path` is a symlink.
fn crosses_symlink(b: &dyn Backend, path: &str) -> bool {
    Path::new(path).ancestors().skip(1).any(|up| b.stat(up).is_ok_and(|a| a.kind == FileKind::Symlink))
}

/// Same calls on a real directory and in memory: same errno each time, same
/// tree and same link counts at the end.
#[test]
fn dir_and_mem_backends_agree_on_random_calls() {
    let seed = seed();
    let mut succeeded = 0;
    for round in 0..20u64 {
        let mut rng = StdRng::seed_from_u64(seed.wrapping_add(round));
        let fixture = dir_fixture();
        let dir = &*fixture.backend;
        let mem = MemBackend::new();
        for b in [dir, &mem as &dyn Backend] {
            for d in ["d", "d/e", "e"] {
                b.create(p(d), FileKind::Dir, 0o755, 0).unwrap();
            }
            new_file(b, "a", b"a");
            new_file(b, "d/b", b"b");
        }
        let mut history = Vec::new();
        for _ in 0..150 {
            let ((what, call), paths) = random_call(&mut rng);
            if paths.iter().any(|path| crosses_symlink(&mem, path)) {
                continue; // both refuse it, but may name different causes first
            }
            let (on_dir, on_mem) = (outcome(call(dir)), outcome(call(&mem)));
            history.push(format!("{what} -> {on_dir}"));
            succeeded += usize::from(on_dir == 0);
            assert_eq!(
                on_dir,
                on_mem,
                "seed {seed} round {round}: {what}: dir gave {}, mem gave {}\nhistory:\n{}",
                io::Error::from_raw_os_error(on_dir),
                io::Error::from_raw_os_error(on_mem),
                history.join("\n")
            );
        }
        let dir_backend = DirBackend::new(fixture._dir.as_ref().unwrap().path()).unwrap();
        let dir_tree: TreeSnapshot = dir_backend.snapshot().unwrap().without_times();
        let mem_tree = mem.snapshot().without_times();
        let diff = dir_tree.diff(&mem_tree);
        assert!(
            diff.is_empty(),
            "seed {seed} round {round}: trees differ:\n{}\nhistory:\n{}",
            diff.join("\n"),
            history.join("\n")
        );
        for path in mem_tree.entries().keys() {
            assert_eq!(dir.stat(path).unwrap().nlink, mem.stat(path).unwrap().nlink, "nlink of {}", path.display());
            assert_eq!(dir.stat(path).unwrap().size, mem.stat(path).unwrap().size, "size of {}", path.display())
        }
    }
    // Both successes and errors must be compared in bulk.
    println!("{succeeded} of {} calls succeeded", 20 * 150);
    assert!((600..2400).contains(&succeeded), "{succeeded} of 3000 calls succeeded");
}

/// `RecordingBackend`: the crash states it builds are exactly those its
/// module comment promises.
mod recording_backend_crash_states {
    use super::*;
    use mcfs_core::backend::CrashState;
    use std::collections::BTreeSet;

    /// The tree `state` claims to be, rebuilt independently: the initial
    /// tree plus ops `0..durable` and the survivors, failures skipped.
    fn rebuilt(rec: &RecordingBackend, initial: &MemBackend, state: &CrashState) -> TreeSnapshot {
        let tree = initial.clone();
        for i in (0..state.durable).chain(state.survivors.iter().copied()) {
            let _ = rec.op(i).expect("recorded op").apply(&tree);
        }
        tree.snapshot().without_times()
    }

    fn content(b: &MemBackend, path: &str) -> Option<Vec<u8>> {
        b.stat(p(path)).ok().map(|_| read_all(b, path))
    }

    /// Checks the shape every call to `crash_states` must have.
    fn check_states(rec: &RecordingBackend, initial: &MemBackend, k: usize, states: &[CrashState]) {
        let durable = rec.durable_prefix(k);
        let pending: Vec<usize> = (durable..k).collect();
        assert_eq!(states[0].survivors, Vec::<usize>::new(), "first: exactly the durable prefix");
        if k > durable {
            assert_eq!(states[1].survivors, pending, "second: every issued op");
        }
        let mut seen = BTreeSet::new();
        for s in states {
            assert_eq!((s.cut, s.durable), (k, durable), "{}", s.describe());
            assert!(s.survivors.windows(2).all(|w| w[0] < w[1]), "{}", s.describe());
            assert!(s.survivors.iter().all(|i| pending.contains(i)), "{}", s.describe());
            assert!(seen.insert(s.survivors.clone()), "repeated: {}", s.describe());
            let diff = s.state.snapshot().without_times().diff(&rebuilt(rec, initial, s));
            assert!(diff.is_empty(), "{}: {diff:#?}", s.describe());
        }
    }

    #[test]
    fn failed_calls_are_not_recorded_and_writes_split_per_page() {
        let rec = RecordingBackend::new(MemBackend::new());
        assert!(rec.write_at(p("f"), 0, b"x").is_err());
        assert_eq!(rec.op_count(), 0);
        rec.create(p("f"), FileKind::File, 0o644, 0).unwrap();
        rec.write_at(p("f"), 0, b"0123456789").unwrap();
        assert_eq!(rec.op_count(), 2);
        rec.write_at(p("f"), 4090, b"0123456789").unwrap();
        assert_eq!(rec.op_count(), 4, "a write across a page boundary is two ops");
        assert_eq!(rec.op(2).unwrap().to_string(), "write f @4090+6");
        assert_eq!(rec.op(3).unwrap().to_string(), "write f @4096+4");
        rec.write_at(p("f"), 0, &[1u8; 3 * 4096]).unwrap();
        assert_eq!(rec.op_count(), 7);
        rec.write_at(p("f"), 0, b"").unwrap();
        assert_eq!(rec.op_count(), 7, "an empty write changes nothing");
        rec.sync().unwrap();
        rec.sync().unwrap();
        assert_eq!(rec.barriers(), [7]);
        assert_eq!(rec.op(7), None);
    }

    #[test]
    fn synced_ops_survive_every_crash_and_only_later_ops_vary() {
        let seed = seed();
        let initial = MemBackend::new();
        new_file(&initial, "keep", b"initial state is durable");
        let rec = RecordingBackend::new(initial.clone());
        new_file(&rec, "a", b"old");
        rec.sync().unwrap();
        new_file(&rec, "tmp", b"new");
        rec.rename(p("tmp"), p("a")).unwrap();
        assert_eq!(rec.op_count(), 5);
        for k in 0..=5 {
            let states = rec.crash_states(k, seed, 1000);
            let durable = if k > 2 { 2 } else { 0 };
            assert_eq!(rec.durable_prefix(k), durable);
            assert_eq!(states.len(), 1 << (k - durable), "every subset fits in max, so all are given");
            check_states(&rec, &initial, k, &states);
            for s in &states {
                assert_eq!(content(&s.state, "keep").unwrap(), b"initial state is durable");
            }
        }
        // After the write-temp-then-rename, "a" holds the old data, the new
        // data, or (rename persisted before the write) nothing — never vanishes.
        let mut seen = BTreeSet::new();
        for s in rec.crash_states(5, seed, 1000) {
            let a = content(&s.state, "a").unwrap_or_else(|| panic!("a lost: {}", s.describe()));
            if content(&s.state, "tmp").is_some() {
                assert_eq!(a, b"old", "{}", s.describe());
            }
            seen.insert(a);
        }
        let expected: BTreeSet<Vec<u8>> = [b"old".to_vec(), b"new".to_vec(), Vec::new()].into();
        assert_eq!(seen, expected);
    }

    #[test]
    fn a_barrier_at_the_cut_is_still_in_flight() {
        let rec = RecordingBackend::new(MemBackend::new());
        rec.create(p("a"), FileKind::File, 0o644, 0).unwrap();
        rec.sync().unwrap();
        let states = rec.crash_states(1, 1, 10);
        let has_a: Vec<bool> = states.iter().map(|s| s.state.stat(p("a")).is_ok()).collect();
        assert_eq!(has_a, [false, true], "a crash during the sync may lose a");
        rec.create(p("b"), FileKind::File, 0o644, 0).unwrap();
        let states = rec.crash_states(2, 1, 10);
        assert_eq!(states.len(), 2);
        assert!(states.iter().all(|s| s.state.stat(p("a")).is_ok()), "once the sync returned, a is durable");
        assert!(states[0].state.stat(p("b")).is_err());
        assert!(states[1].state.stat(p("b")).is_ok());
    }

    #[test]
    fn process_crash_state_is_the_live_tree_with_its_times() {
        let rec = RecordingBackend::new(MemBackend::new());
        let mut now = mcfs_core::backend::mem_epoch();
        for (i, name) in ["a", "b", "c"].iter().enumerate() {
            now += Duration::from_secs(10);
            rec.live().set_now(now);
            new_file(&rec, name, name.as_bytes());
            rec.set_xattr(p(name), OsStr::new("user.i"), &[i as u8]).unwrap();
        }
        rec.link(p("a"), p("a2")).unwrap();
        rec.rename(p("b"), p("c")).unwrap();
        let k = rec.op_count();
        let states = rec.crash_states(k, 7, 2);
        assert_eq!(states.len(), 2);
        let diff = states[1].state.snapshot().diff(&rec.live().snapshot());
        assert!(diff.is_empty(), "{diff:#?}");
        assert_eq!(states[1].state.stat(p("c")).unwrap().ctime, now, "replayed with the recorded time stamps");
        assert!(states[0].state.list_dir(p("")).unwrap().is_empty(), "nothing was synced");
    }

    #[test]
    fn a_power_cut_can_tear_a_write_at_page_boundaries() {
        let rec = RecordingBackend::new(MemBackend::new());
        rec.create(p("f"), FileKind::File, 0o644, 0).unwrap();
        rec.sync().unwrap();
        rec.write_at(p("f"), 0, &[0xab; 8192]).unwrap();
        let states = rec.crash_states(3, 3, 100);
        check_states(&rec, &MemBackend::new(), 3, &states);
        let torn = states.iter().find(|s| s.survivors == [2]).expect("only the second page survived");
        let data = content(&torn.state, "f").unwrap();
        assert_eq!(data.len(), 8192);
        assert!(data[..4096].iter().all(|b| *b == 0) && data[4096..].iter().all(|b| *b == 0xab));
    }

    #[test]
    fn ops_that_need_a_lost_op_are_skipped() {
        let rec = RecordingBackend::new(MemBackend::new());
        rec.create(p("d"), FileKind::Dir, 0o755, 0).unwrap();
        new_file(&rec, "d/f", b"x");
        rec.rename(p("d/f"), p("g")).unwrap();
        let states = rec.crash_states(4, 0, 100);
        assert_eq!(states.len(), 16);
        check_states(&rec, &MemBackend::new(), 4, &states);
        let orphaned = states.iter().find(|s| s.survivors == [2, 3]).unwrap();
        assert!(orphaned.state.list_dir(p("")).unwrap().is_empty(), "write and rename had nothing to act on");
    }

    #[test]
    fn many_pending_ops_give_prefixes_and_random_subsets_within_max() {
        let seed = seed();
        // (ops, prefixes expected): all 39 inner prefixes fit in a budget of
        // 48; 59 do not, and then half the budget goes to a sample of them.
        for (ops, prefixes) in [(40, 2 + 39), (60, 2 + 24)] {
            let rec = RecordingBackend::new(MemBackend::new());
            let names: Vec<String> = (0..ops).map(|i| format!("f{i:02}")).collect();
            for name in &names {
                rec.create(p(name), FileKind::File, 0o644, 0).unwrap();
            }
            let states = rec.crash_states(ops, seed, 50);
            assert_eq!(states.len(), 50);
            check_states(&rec, &MemBackend::new(), ops, &states);
            let is_prefix = |s: &CrashState| s.survivors.iter().enumerate().all(|(i, op)| i == *op);
            assert_eq!(states.iter().filter(|s| is_prefix(s)).count(), prefixes);
            assert!(states[..prefixes].iter().all(is_prefix), "prefixes come before other subsets");
            let lengths: Vec<usize> = states[2..prefixes].iter().map(|s| s.survivors.len()).collect();
            assert!(lengths.windows(2).all(|w| w[0] < w[1]), "shortest first: {lengths:?}");
            for s in &states {
                let present: Vec<String> =
                    s.state.list_dir(p("")).unwrap().into_iter().map(|(n, _)| n.into_string().unwrap()).collect();
                let expected: Vec<String> = s.survivors.iter().map(|i| names[*i].clone()).collect();
                assert_eq!(present, expected, "{}", s.describe());
            }
            let again: Vec<Vec<usize>> = rec.crash_states(ops, seed, 50).into_iter().map(|s| s.survivors).collect();
            let first: Vec<Vec<usize>> = states.into_iter().map(|s| s.survivors).collect();
            assert_eq!(first, again, "the seed alone decides");
        }
    }

    #[test]
    fn cut_is_clamped_and_max_is_respected() {
        let rec = RecordingBackend::new(MemBackend::new());
        rec.create(p("a"), FileKind::File, 0o644, 0).unwrap();
        let states = rec.crash_states(99, 0, 10);
        assert_eq!(states[0].cut, 1);
        assert_eq!(states.len(), 2);
        assert!(rec.crash_states(1, 0, 0).is_empty());
        let one = rec.crash_states(1, 0, 1);
        assert_eq!(one.len(), 1);
        assert!(one[0].state.stat(p("a")).is_err(), "with room for one state, the durable one");
        assert_eq!(rec.crash_states(0, 0, 10).len(), 1, "before any op there is one state");
    }
}
