//! POSIX ACLs kept in step with the mode, as the kernel expects of a FUSE
//! daemon that asks for `FUSE_POSIX_ACL` (issue 10, item 7; the kernel
//! enforces what it reads back): setting the access ACL sets the mode, an
//! ACL the mode says all of is kept as the mode alone, chmod updates the
//! ACL, and a new object inherits its directory's default ACL without the
//! umask. The backing store ends with the same ACLs and modes.

use mcfs_core::*;
use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;

const OWNER: Caller = Caller { uid: 10001, gid: 10001, pid: 7 };
const ACCESS: &str = "system.posix_acl_access";
const DEFAULT: &str = "system.posix_acl_default";
const NO_ID: u32 = u32::MAX;
const USER_OBJ: u16 = 0x01;
const USER: u16 = 0x02;
const GROUP_OBJ: u16 = 0x04;
const MASK: u16 = 0x10;
const OTHER: u16 = 0x20;

/// An ACL attribute value from (tag, rwx, id) entries (Linux's format).
fn acl(entries: &[(u16, u16, u32)]) -> Vec<u8> {
    let mut out = 2u32.to_le_bytes().to_vec();
    for (tag, perm, id) in entries {
        out.extend_from_slice(&tag.to_le_bytes());
        out.extend_from_slice(&perm.to_le_bytes());
        out.extend_from_slice(&id.to_le_bytes());
    }
    out
}

/// `u::rw-,u:10002:---,g::rw-,m::rw-,o::rw-`: mode 666, one user shut out.
fn shut_out_10002() -> Vec<u8> {
    acl(&[(USER_OBJ, 6, NO_ID), (USER, 0, 10002), (GROUP_OBJ, 6, NO_ID), (MASK, 6, NO_ID), (OTHER, 6, NO_ID)])
}

fn engine() -> (Arc<MemBackend>, Engine) {
    let backend = Arc::new(MemBackend::new());
    let engine = Engine::start(backend.clone(), Arc::new(ManualClock::new()), Config::default()).expect("starts");
    (backend, engine)
}

fn new_file(engine: &Engine, parent: Ino, name: &str, perm: NewPerm) -> Attr {
    let attr = engine.create(OWNER, parent, OsStr::new(name), perm, true).expect("create");
    engine.release(attr.ino);
    attr
}

fn set_acl(engine: &Engine, ino: Ino, name: &str, value: &[u8]) -> FsResult<()> {
    engine.setxattr(OWNER, ino, OsStr::new(name), value, XattrMode::Any)
}

fn chmod(engine: &Engine, ino: Ino, perm: u32) -> Attr {
    engine.setattr(OWNER, ino, &SetAttr { perm: Some(perm), ..SetAttr::default() }).expect("chmod")
}

#[test]
fn an_access_acl_sets_the_mode_and_reaches_the_backing_store() {
    let (backend, engine) = engine();
    let f = new_file(&engine, ROOT_INO, "f", 0o640.into()).ino;
    set_acl(&engine, f, ACCESS, &shut_out_10002()).unwrap();
    assert_eq!(engine.getattr(f).unwrap().perm, 0o666, "owner, mask and other bits");
    assert_eq!(engine.getxattr(f, OsStr::new(ACCESS)).unwrap(), shut_out_10002());
    engine.checkpoint().unwrap();
    let path = Path::new("f");
    assert_eq!(backend.get_xattr(path, OsStr::new(ACCESS)).unwrap(), Some(shut_out_10002()));
    assert_eq!(backend.stat(path).unwrap().perm, 0o666);
}

#[test]
fn an_acl_the_mode_says_all_of_is_kept_as_the_mode_alone() {
    let (backend, engine) = engine();
    let f = new_file(&engine, ROOT_INO, "f", 0o600.into()).ino;
    set_acl(&engine, f, ACCESS, &shut_out_10002()).unwrap();
    let minimal = acl(&[(USER_OBJ, 7, NO_ID), (GROUP_OBJ, 5, NO_ID), (OTHER, 1, NO_ID)]);
    set_acl(&engine, f, ACCESS, &minimal).unwrap();
    assert_eq!(engine.getattr(f).unwrap().perm, 0o751);
    assert_eq!(engine.getxattr(f, OsStr::new(ACCESS)), Err(Errno::ENODATA));
    assert!(engine.listxattr(f).unwrap().is_empty());
    engine.checkpoint().unwrap();
    assert_eq!(backend.get_xattr(Path::new("f"), OsStr::new(ACCESS)).unwrap(), None);
    assert_eq!(backend.stat(Path::new("f")).unwrap().perm, 0o751);
}

#[test]
fn chmod_updates_owner_mask_and_other_of_the_acl() {
    let (backend, engine) = engine();
    let f = new_file(&engine, ROOT_INO, "f", 0o644.into()).ino;
    set_acl(&engine, f, ACCESS, &shut_out_10002()).unwrap();
    engine.checkpoint().unwrap();
    assert_eq!(chmod(&engine, f, 0o4710).perm, 0o4710);
    let after =
        acl(&[(USER_OBJ, 7, NO_ID), (USER, 0, 10002), (GROUP_OBJ, 6, NO_ID), (MASK, 1, NO_ID), (OTHER, 0, NO_ID)]);
    assert_eq!(engine.getxattr(f, OsStr::new(ACCESS)).unwrap(), after);
    engine.checkpoint().unwrap();
    assert_eq!(backend.get_xattr(Path::new("f"), OsStr::new(ACCESS)).unwrap(), Some(after));
    assert_eq!(backend.stat(Path::new("f")).unwrap().perm, 0o4710);
}

#[test]
fn new_objects_inherit_the_default_acl_and_skip_the_umask() {
    let (backend, engine) = engine();
    let dir = engine.mkdir(OWNER, ROOT_INO, OsStr::new("d"), 0o755).unwrap().ino;
    // setfacl -d -m u:10002:rwx,g::r-x,o::--- d
    let default =
        acl(&[(USER_OBJ, 7, NO_ID), (USER, 7, 10002), (GROUP_OBJ, 5, NO_ID), (MASK, 7, NO_ID), (OTHER, 0, NO_ID)]);
    set_acl(&engine, dir, DEFAULT, &default).unwrap();
    assert_eq!(engine.getattr(dir).unwrap().perm, 0o755, "a default ACL leaves the mode alone");

    let file = new_file(&engine, dir, "f", NewPerm { perm: 0o666, umask: 0o077 });
    assert_eq!(file.perm, 0o660, "the ACL, not the umask, cuts the requested bits");
    let inherited =
        acl(&[(USER_OBJ, 6, NO_ID), (USER, 7, 10002), (GROUP_OBJ, 5, NO_ID), (MASK, 6, NO_ID), (OTHER, 0, NO_ID)]);
    assert_eq!(engine.getxattr(file.ino, OsStr::new(ACCESS)).unwrap(), inherited);
    assert_eq!(engine.getxattr(file.ino, OsStr::new(DEFAULT)), Err(Errno::ENODATA), "files get no default ACL");

    let sub = engine.mkdir(OWNER, dir, OsStr::new("sub"), NewPerm { perm: 0o777, umask: 0o022 }).unwrap();
    assert_eq!(sub.perm, 0o770);
    assert_eq!(engine.getxattr(sub.ino, OsStr::new(DEFAULT)).unwrap(), default, "directories pass it on");

    let plain = new_file(&engine, ROOT_INO, "plain", NewPerm { perm: 0o666, umask: 0o022 });
    assert_eq!(plain.perm, 0o644, "without a default ACL the umask applies");
    assert!(engine.listxattr(plain.ino).unwrap().is_empty());

    engine.checkpoint().unwrap();
    assert_eq!(backend.get_xattr(Path::new("d/f"), OsStr::new(ACCESS)).unwrap(), Some(inherited));
    assert_eq!(backend.stat(Path::new("d/f")).unwrap().perm, 0o660);
    assert_eq!(backend.get_xattr(Path::new("d/sub"), OsStr::new(DEFAULT)).unwrap(), Some(default));
    assert_eq!(backend.stat(Path::new("d/sub")).unwrap().perm, 0o770);
}

#[test]
fn acls_are_refused_where_linux_refuses_them() {
    let (_backend, engine) = engine();
    let f = new_file(&engine, ROOT_INO, "f", 0o644.into()).ino;
    let link = engine.symlink(OWNER, ROOT_INO, OsStr::new("s"), OsStr::new("f")).unwrap().ino;
    let minimal = acl(&[(USER_OBJ, 7, NO_ID), (GROUP_OBJ, 5, NO_ID), (OTHER, 0, NO_ID)]);
    assert_eq!(set_acl(&engine, f, DEFAULT, &minimal), Err(Errno::EACCES), "a default ACL on a file");
    assert_eq!(set_acl(&engine, link, ACCESS, &minimal), Err(Errno::ENOTSUP), "an ACL on a symlink");
    let no_mask = acl(&[(USER_OBJ, 7, NO_ID), (USER, 7, 5), (GROUP_OBJ, 5, NO_ID), (OTHER, 0, NO_ID)]);
    assert_eq!(set_acl(&engine, f, ACCESS, &no_mask), Err(Errno::EINVAL), "named entries need a mask");
    assert_eq!(set_acl(&engine, f, ACCESS, &[2, 0, 0]), Err(Errno::EINVAL));
    assert_eq!(engine.getattr(f).unwrap().perm, 0o644, "a refused ACL changes nothing");
    engine.checkpoint().unwrap();
}
