//! What the backing store cannot hold is refused at the call, with the
//! errno the backing store gives (issue 10, item 1): extended attributes
//! that do not fit in one inode or are in a namespace it does not keep,
//! files past its largest size, hard links past its limit, names and
//! symlink targets past its lengths. Before, the engine accepted them in
//! memory and every later checkpoint failed. Each test ends with a
//! checkpoint that must succeed and a backing store that holds exactly
//! what was accepted.

use mcfs_core::backend::{BackendLimits, MemLimits};
use mcfs_core::*;
use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::sync::Arc;

const ME: Caller = Caller { uid: 10001, gid: 10001, pid: 7 };

fn engine_over(backend: MemBackend) -> (Arc<MemBackend>, Engine) {
    let backend = Arc::new(backend);
    let engine = Engine::start(backend.clone(), Arc::new(ManualClock::new()), Config::default()).expect("starts");
    (backend, engine)
}

fn create(engine: &Engine, name: &str) -> Ino {
    let ino = engine.create(ME, ROOT_INO, OsStr::new(name), 0o644, true).expect("create").ino;
    engine.release(ino);
    ino
}

fn set(engine: &Engine, ino: Ino, name: &str, value: &[u8]) -> FsResult<()> {
    engine.setxattr(ME, ino, OsStr::new(name), value, XattrMode::Any)
}

#[test]
fn extended_attributes_the_inode_cannot_hold_are_refused_with_enospc() {
    let (backend, engine) = engine_over(MemBackend::new());
    let f = create(&engine, "f");
    assert_eq!(set(&engine, f, "user.big", &[7; 8192]), Err(Errno::ENOSPC), "an 8 KiB value (ext4: ENOSPC)");
    let mut accepted = Vec::new();
    let refused = (0..200).find(|i| {
        let name = format!("user.{i}");
        let ok = set(&engine, f, &name, b"1").is_ok();
        if ok {
            accepted.push(OsString::from(name));
        }
        !ok
    });
    // 16 + 4 + 4 bytes each in an ext4 block of 4060
    assert_eq!(refused, Some(169), "the first attribute past one inode's room");
    assert_eq!(set(&engine, f, "user.199", b"1"), Err(Errno::ENOSPC));
    accepted.sort();
    let mut listed = engine.listxattr(f).unwrap();
    listed.sort();
    assert_eq!(listed, accepted, "refused attributes are not kept");
    engine.checkpoint().expect("the checkpoint commits what was accepted");
    let mut stored = backend.list_xattr(Path::new("f")).unwrap();
    stored.sort();
    assert_eq!(stored, accepted);
    // Room freed by a removal takes an attribute again.
    engine.removexattr(ME, f, OsStr::new("user.0")).unwrap();
    set(&engine, f, "user.199", b"1").unwrap();
    engine.shutdown().expect("clean stop");
}

#[test]
fn a_namespace_the_backing_store_does_not_keep_is_refused_with_eopnotsupp() {
    let (backend, engine) = engine_over(MemBackend::new());
    let f = create(&engine, "f");
    assert_eq!(set(&engine, f, "foo.bar", b"1"), Err(Errno::ENOTSUP));
    assert_eq!(engine.getxattr(f, OsStr::new("foo.bar")), Err(Errno::ENODATA));
    set(&engine, f, "user.ok", b"1").unwrap();
    engine.checkpoint().expect("one refused call does not wedge the checkpointer");
    assert_eq!(backend.list_xattr(Path::new("f")).unwrap(), [OsString::from("user.ok")]);
}

#[test]
fn files_past_the_largest_size_are_refused_with_efbig_and_writes_across_it_are_short() {
    let limits = BackendLimits { max_file_size: 1 << 20, ..BackendLimits::EXT4 };
    let (backend, engine) = engine_over(MemBackend::with_limits(MemLimits { limits, ..MemLimits::EXT4 }));
    let f = create(&engine, "f");
    let truncate = |size| engine.setattr(ME, f, &SetAttr { size: Some(size), ..SetAttr::default() });
    assert_eq!(truncate((1 << 20) + 1).map(drop), Err(Errno::EFBIG));
    assert_eq!(truncate(20 << 40).map(drop), Err(Errno::EFBIG), "truncate -s 20T");
    assert_eq!(engine.fallocate(f, 1 << 20, 1, 0), Err(Errno::EFBIG));
    assert_eq!(engine.fallocate(f, 1 << 20, 1, libc::FALLOC_FL_KEEP_SIZE), Err(Errno::EFBIG));
    assert_eq!(engine.write(Some(ME), f, (1 << 20) - 3, b"abcdef"), Ok(3), "cut at the largest size");
    assert_eq!(engine.write(Some(ME), f, 1 << 20, b"g"), Err(Errno::EFBIG));
    assert_eq!(engine.getattr(f).unwrap().size, 1 << 20);
    engine.checkpoint().expect("commits");
    assert_eq!(backend.stat(Path::new("f")).unwrap().size, 1 << 20);
}

#[test]
fn links_past_the_limit_are_refused_with_emlink_counting_every_live_name() {
    let limits = BackendLimits { link_max: 4, ..BackendLimits::EXT4 };
    let store = MemBackend::with_limits(MemLimits { limits, ..MemLimits::EXT4 });
    // Two names before the mount, in the backing store.
    store.create(Path::new("f"), FileKind::File, 0o644, 0).unwrap();
    store.link(Path::new("f"), Path::new("g")).unwrap();
    let (backend, engine) = engine_over(store);
    let f = engine.lookup(ME, ROOT_INO, OsStr::new("f")).unwrap().ino;
    let link = |name: &str| engine.link(ME, f, ROOT_INO, OsStr::new(name)).map(|a| a.nlink);
    assert_eq!(link("h"), Ok(3));
    assert_eq!(link("i"), Ok(4), "uncommitted links count too");
    assert_eq!(link("j"), Err(Errno::EMLINK));
    assert_eq!(link("h"), Err(Errno::EEXIST), "an existing name is reported first, as on Linux");
    engine.unlink(ME, ROOT_INO, OsStr::new("g")).unwrap();
    assert_eq!(link("j"), Ok(4), "an unlink makes room");
    engine.checkpoint().expect("commits");
    assert_eq!(backend.stat(Path::new("j")).unwrap().nlink, 4);
}

#[test]
fn names_and_symlink_targets_past_the_backing_stores_lengths_are_refused() {
    let limits = BackendLimits { name_max: 8, symlink_max: 6, ..BackendLimits::EXT4 };
    let (backend, engine) = engine_over(MemBackend::with_limits(MemLimits { limits, ..MemLimits::EXT4 }));
    let long = OsStr::new("ninechars");
    assert_eq!(engine.create(ME, ROOT_INO, long, 0o644, true).map(drop), Err(Errno::ENAMETOOLONG));
    assert_eq!(engine.mkdir(ME, ROOT_INO, long, 0o755).map(drop), Err(Errno::ENAMETOOLONG));
    assert_eq!(engine.mknod(ME, ROOT_INO, long, FileKind::Fifo, 0o644, 0).map(drop), Err(Errno::ENAMETOOLONG));
    assert_eq!(engine.symlink(ME, ROOT_INO, long, OsStr::new("t")).map(drop), Err(Errno::ENAMETOOLONG));
    assert_eq!(
        engine.symlink(ME, ROOT_INO, OsStr::new("s"), OsStr::new("1234567")).map(drop),
        Err(Errno::ENAMETOOLONG)
    );
    engine.symlink(ME, ROOT_INO, OsStr::new("s"), OsStr::new("123456")).expect("a target of the longest length");
    let f = create(&engine, "eightchr");
    assert_eq!(engine.link(ME, f, ROOT_INO, long).map(drop), Err(Errno::ENAMETOOLONG));
    let rename = engine.rename(ME, ROOT_INO, OsStr::new("eightchr"), ROOT_INO, long, RenameMode::Replace);
    assert_eq!(rename, Err(Errno::ENAMETOOLONG));
    engine.checkpoint().expect("commits");
    assert_eq!(backend.read_link(Path::new("s")).unwrap(), OsString::from("123456"));
    assert!(backend.stat(Path::new("eightchr")).is_ok());
}
