//! FUSE over io_uring end to end (docs/FUSE_URING.md): a mount with
//! `fuse.io_uring = "on"` is served over the ring — `mcfs stat` says so and
//! counts the requests the ring served, so a silent fallback to `/dev/fuse`
//! fails — and every kind of file operation comes back byte-exact, after a
//! remount too (reads then reach the daemon, not the kernel's cache). The
//! same operations with `"off"` go over `/dev/fuse`.
//!
//! The ring needs the kernel's `enable_uring` (scripts/setup.sh sets it);
//! without it these tests fail and say so.

mod common;

use common::{pattern, require_root, stats, Daemon, Dirs};
use std::fs;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{FileExt, MetadataExt, PermissionsExt};
use std::path::Path;

const ENABLE_URING: &str = "/sys/module/fuse/parameters/enable_uring";

fn require_uring() {
    let value = fs::read_to_string(ENABLE_URING);
    assert!(
        value.as_deref().is_ok_and(|v| v.trim() == "Y"),
        "this test needs FUSE over io_uring: {ENABLE_URING} is {value:?}; run scripts/setup.sh as root \
         (it writes Y there; Linux 6.14 or later)"
    );
}

fn config(mode: &str) -> String {
    format!("[fuse]\nio_uring = \"{mode}\"\n")
}

/// Larger than one write request (1 MiB), not page-aligned.
const BIG: usize = 3 * 1024 * 1024 + 123;
/// Enough names that a listing takes several readdir answers.
const NAMES: usize = 300;

/// Creates a tree exercising every op the daemon serves and checks what it can at once.
fn write_tree(mnt: &Path) {
    let data = pattern(1, BIG);
    let mut file = fs::File::create(mnt.join("big")).unwrap();
    file.write_all(&data).unwrap();
    file.write_all_at(b"patched", 4096 * 100 + 1).unwrap();
    file.sync_all().unwrap();
    file.set_len(BIG as u64 + 10).unwrap();
    drop(file);

    fs::create_dir(mnt.join("dir")).unwrap();
    for i in 0..NAMES {
        fs::write(mnt.join(format!("dir/entry-with-a-long-name-{i:04}")), i.to_string()).unwrap();
    }
    fs::write(mnt.join("gone"), b"x").unwrap();
    fs::remove_file(mnt.join("gone")).unwrap();
    fs::create_dir(mnt.join("empty")).unwrap();
    fs::remove_dir(mnt.join("empty")).unwrap();
    fs::write(mnt.join("old"), b"renamed").unwrap();
    fs::rename(mnt.join("old"), mnt.join("dir/new")).unwrap();
    fs::hard_link(mnt.join("dir/new"), mnt.join("hard")).unwrap();
    std::os::unix::fs::symlink("dir/new", mnt.join("sym")).unwrap();
    assert_eq!(fs::read_link(mnt.join("sym")).unwrap(), Path::new("dir/new"));
    fs::set_permissions(mnt.join("hard"), fs::Permissions::from_mode(0o600)).unwrap();
    xattr_set(&mnt.join("hard"), "user.color", b"blue");
    xattr_set(&mnt.join("hard"), "user.gone", b"x");
    assert_eq!(xattr_remove(&mnt.join("hard"), "user.gone"), 0);
    assert!(fs::metadata(mnt.join("missing")).is_err(), "a missing name is missing");

    let mut sparse = fs::File::create(mnt.join("sparse")).unwrap();
    sparse.write_all_at(b"end", 1 << 20).unwrap();
    // SAFETY: a valid descriptor; SEEK_DATA from 0 finds the only data, at 1 MiB (or 0 where holes are not kept).
    let at = unsafe { libc::lseek(std::os::fd::AsRawFd::as_raw_fd(&sparse), 0, libc::SEEK_DATA) };
    assert!(at == 0 || at == 1 << 20, "SEEK_DATA: {at}");
    sparse.seek(SeekFrom::Start(0)).unwrap();
    // SAFETY: a valid descriptor; fallocate of a range inside the file.
    let allocated = unsafe { libc::fallocate(std::os::fd::AsRawFd::as_raw_fd(&sparse), 0, 0, 4096) };
    assert_eq!(allocated, 0, "fallocate: {}", std::io::Error::last_os_error());
    let mut statfs: libc::statfs = unsafe { std::mem::zeroed() };
    let path = std::ffi::CString::new(mnt.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path and a writable statfs.
    assert_eq!(unsafe { libc::statfs(path.as_ptr(), &mut statfs) }, 0);
}

/// Checks the tree `write_tree` made, byte for byte.
fn check_tree(mnt: &Path) {
    let mut expected = pattern(1, BIG);
    expected[4096 * 100 + 1..4096 * 100 + 8].copy_from_slice(b"patched");
    expected.resize(BIG + 10, 0);
    let mut got = Vec::new();
    fs::File::open(mnt.join("big")).unwrap().read_to_end(&mut got).unwrap();
    assert!(
        got == expected,
        "big: {} bytes back, {} expected, first difference at {:?}",
        got.len(),
        expected.len(),
        got.iter().zip(&expected).position(|(a, b)| a != b)
    );

    let mut names: Vec<String> =
        fs::read_dir(mnt.join("dir")).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    assert_eq!(names.len(), NAMES + 1, "every entry listed once");
    for i in (0..NAMES).step_by(37) {
        assert_eq!(fs::read_to_string(mnt.join(format!("dir/entry-with-a-long-name-{i:04}"))).unwrap(), i.to_string());
    }
    assert_eq!(fs::read(mnt.join("hard")).unwrap(), b"renamed");
    let meta = fs::metadata(mnt.join("hard")).unwrap();
    assert_eq!((meta.nlink(), meta.mode() & 0o777), (2, 0o600));
    assert_eq!(fs::read(mnt.join("sym")).unwrap(), b"renamed");
    assert_eq!(xattr_get(&mnt.join("hard"), "user.color"), Some(b"blue".to_vec()));
    assert_eq!(xattr_get(&mnt.join("hard"), "user.gone"), None);
    assert!(!mnt.join("gone").exists() && !mnt.join("empty").exists() && !mnt.join("old").exists());
    let sparse = fs::read(mnt.join("sparse")).unwrap();
    assert_eq!((sparse.len(), &sparse[(1 << 20)..]), ((1 << 20) + 3, &b"end"[..]));
}

fn c_path(path: &Path) -> std::ffi::CString {
    std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap()
}

fn xattr_set(path: &Path, name: &str, value: &[u8]) {
    let (p, n) = (c_path(path), std::ffi::CString::new(name).unwrap());
    // SAFETY: NUL-terminated strings and a value buffer of the length given.
    let rc = unsafe { libc::setxattr(p.as_ptr(), n.as_ptr(), value.as_ptr().cast(), value.len(), 0) };
    assert_eq!(rc, 0, "setxattr {name}: {}", std::io::Error::last_os_error());
}

fn xattr_get(path: &Path, name: &str) -> Option<Vec<u8>> {
    let (p, n) = (c_path(path), std::ffi::CString::new(name).unwrap());
    let mut buf = vec![0u8; 256];
    // SAFETY: NUL-terminated strings and a writable buffer of the length given.
    let len = unsafe { libc::getxattr(p.as_ptr(), n.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    let mut names = vec![0u8; 256];
    // SAFETY: as above.
    let listed = unsafe { libc::listxattr(p.as_ptr(), names.as_mut_ptr().cast(), names.len()) };
    assert!(listed >= 0, "listxattr: {}", std::io::Error::last_os_error());
    let in_list = names[..listed as usize].split(|&b| b == 0).any(|n| n == name.as_bytes());
    assert_eq!(in_list, len >= 0, "listxattr and getxattr agree on {name}");
    (len >= 0).then(|| buf[..len as usize].to_vec())
}

fn xattr_remove(path: &Path, name: &str) -> i32 {
    let (p, n) = (c_path(path), std::ffi::CString::new(name).unwrap());
    // SAFETY: NUL-terminated strings.
    unsafe { libc::removexattr(p.as_ptr(), n.as_ptr()) }
}

/// The `fuse` section of `mcfs stat`: transport, ring requests, /dev/fuse
/// requests; the table's first line names the transport too.
fn transport(dirs: &Dirs) -> (String, u64, u64) {
    let table = common::mcfs(dirs, &["stat", dirs.mnt.to_str().unwrap()]).assert_success("mcfs stat");
    let fuse = &stats(dirs)["fuse"];
    let named = match fuse["transport"].as_str() {
        Some("io_uring") => "FUSE over io_uring",
        _ => "FUSE over /dev/fuse",
    };
    assert!(table.lines().next().is_some_and(|first| first.contains(named)), "no \"{named}\" in:\n{table}");
    let count = |key: &str| fuse[key].as_u64().unwrap_or_else(|| panic!("fuse.{key} missing: {fuse}"));
    (fuse["transport"].as_str().unwrap_or("").to_string(), count("ring_requests"), count("dev_requests"))
}

/// Writes the tree, checks it, remounts and checks it again; the transport stat after each mount.
fn run(mode: &str) -> [(String, u64, u64); 2] {
    require_root("mcfs mounts itself (mount(2)) to serve a FUSE connection over io_uring");
    let dirs = Dirs::new(Some(&config(mode)));
    let daemon = Daemon::foreground(&dirs, &[]);
    write_tree(&dirs.mnt);
    check_tree(&dirs.mnt);
    let first = transport(&dirs);
    daemon.unmount();
    let daemon = Daemon::foreground(&dirs, &[]);
    check_tree(&dirs.mnt);
    let second = transport(&dirs);
    daemon.unmount();
    [first, second]
}

#[test]
fn forced_on_every_operation_goes_over_the_ring() {
    require_uring();
    let [writing, reading] = run("on");
    println!("over the ring, over /dev/fuse: writing {writing:?}, reading after a remount {reading:?}");
    // Each create is a request; the remount's lookups, reads, listing and
    // stats are dozens more (its opens none: the mount refuses OPEN).
    for ((transport, ring, dev), least) in [(writing, NAMES as u64), (reading, 30)] {
        assert_eq!(transport, "io_uring");
        assert!(ring > least && ring > dev, "only {ring} requests came over the ring ({dev} over /dev/fuse)");
    }
}

#[test]
fn forced_off_every_operation_goes_over_dev_fuse() {
    for (transport, ring, dev) in run("off") {
        assert_eq!((transport.as_str(), ring, dev), ("dev_fuse", 0, 0));
    }
}

#[test]
fn on_fails_the_mount_by_name_where_the_ring_cannot_be_had() {
    // Not root: mcfs cannot mount itself, so it could only go through fusermount3 and /dev/fuse.
    require_root("the test runs the daemon as another user");
    let dirs = Dirs::new(Some(&config("on")));
    for dir in [&dirs.backing, &dirs.mnt, &dirs.logs] {
        std::os::unix::fs::chown(dir, Some(65534), Some(65534)).unwrap();
    }
    let root_dir = dirs.mnt.parent().unwrap();
    fs::set_permissions(root_dir, fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(dirs.config.as_ref().unwrap(), fs::Permissions::from_mode(0o644)).unwrap();
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(common::mcfs_bin())
        .args(["mount", "--foreground", "--config"])
        .arg(dirs.config.as_ref().unwrap())
        .arg(&dirs.backing)
        .arg(&dirs.mnt)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "mounted anyway: {stderr}");
    assert!(stderr.contains("fuse.io_uring = \"on\"") && stderr.contains("root"), "{stderr}");
    assert!(!common::fuse_mounted(&dirs.mnt));
}
