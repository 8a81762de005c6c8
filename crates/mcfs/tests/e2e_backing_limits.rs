//! Issue 10, item 1, on a real mount over ext4: what ext4 refuses is refused
//! at the call, with ext4's errno, and the checkpointer goes on. Each call
//! is made twice, on a directory of a loop-mounted ext4 image (the
//! reference) and on an mcfs mount whose backing directory is on the same
//! image; the errnos must be equal call for call. Then `mcfs ctl
//! checkpoint` and `mcfs umount` must succeed, and the backing store must
//! hold what ext4 holds. Before, mcfs accepted every one of these calls in
//! memory, and every checkpoint failed from then on.

mod common;

use common::{ctl, Daemon, Dirs, Ext4Image};
use std::ffi::{CString, OsString};
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Hard links made directly in both trees before the mount; the test makes
/// the rest through it, past ext4's 65,000.
const LINKS_BEFORE: u32 = 64_990;

/// Memory mode with no timed checkpoint: the checkpoints are the test's.
const CONFIG: &str = "max_stale_seconds = 3600\nwriteback_interval_seconds = 3600\n";

fn c_path(path: &Path) -> CString {
    CString::new(path.as_os_str().as_bytes()).expect("no NUL in a test path")
}

/// 0 for success, else the call's errno.
fn errno_of(ret: libc::c_int) -> i32 {
    if ret == 0 {
        0
    } else {
        std::io::Error::last_os_error().raw_os_error().unwrap_or(-1)
    }
}

fn setxattr(path: &Path, name: &str, value: &[u8]) -> i32 {
    let name = CString::new(name).unwrap();
    errno_of(unsafe { libc::setxattr(c_path(path).as_ptr(), name.as_ptr(), value.as_ptr().cast(), value.len(), 0) })
}

fn truncate(path: &Path, size: u64) -> i32 {
    errno_of(unsafe { libc::truncate(c_path(path).as_ptr(), size as libc::off_t) })
}

fn link(from: &Path, to: &Path) -> i32 {
    errno_of(unsafe { libc::link(c_path(from).as_ptr(), c_path(to).as_ptr()) })
}

/// The extended attributes of `path`: (name, value), sorted.
fn xattrs(path: &Path) -> Vec<(OsString, Vec<u8>)> {
    let c = c_path(path);
    let mut names = vec![0u8; 1 << 16];
    let n = unsafe { libc::listxattr(c.as_ptr(), names.as_mut_ptr().cast(), names.len()) };
    assert!(n >= 0, "listxattr {}: {}", path.display(), std::io::Error::last_os_error());
    names.truncate(n as usize);
    let mut out: Vec<(OsString, Vec<u8>)> = names
        .split(|b| *b == 0)
        .filter(|n| !n.is_empty())
        .map(|name| {
            let c_name = CString::new(name).unwrap();
            let mut value = vec![0u8; 1 << 16];
            let len = unsafe { libc::getxattr(c.as_ptr(), c_name.as_ptr(), value.as_mut_ptr().cast(), value.len()) };
            assert!(len >= 0, "getxattr {}: {}", path.display(), std::io::Error::last_os_error());
            value.truncate(len as usize);
            (OsString::from(std::ffi::OsStr::from_bytes(name)), value)
        })
        .collect();
    out.sort();
    out
}

/// The repros on the tree at `root`, each call's errno (0: done).
fn repros(root: &Path) -> Vec<(String, i32)> {
    let f = root.join("f");
    fs::write(&f, b"data").unwrap_or_else(|e| panic!("create {}: {e}", f.display()));
    let mut out = vec![
        ("setfattr -n foo.bar -v 1 f".to_string(), setxattr(&f, "foo.bar", b"1")),
        ("an 8 KiB user.big".to_string(), setxattr(&f, "user.big", &[b'x'; 8192])),
    ];
    out.extend((0..200).map(|i| (format!("user.{i} of 200"), setxattr(&f, &format!("user.{i}"), b"1"))));
    out.push(("truncate -s 20T f".to_string(), truncate(&f, 20 << 40)));
    let links = root.join("links");
    let started = Instant::now();
    out.extend((LINKS_BEFORE..=65_001).map(|n| (format!("link {n}"), link(&f, &links.join(format!("l{n}"))))));
    println!("{}: the last {} links in {:?}", root.display(), 65_002 - LINKS_BEFORE, started.elapsed());
    out
}

/// `f` and `LINKS_BEFORE - 1` more names of it in `links/`, made directly.
fn make_links_before(root: &Path) {
    let f = root.join("f");
    fs::write(&f, b"").unwrap();
    fs::create_dir(root.join("links")).unwrap();
    let started = Instant::now();
    for n in 1..LINKS_BEFORE {
        fs::hard_link(&f, root.join(format!("links/l{n}"))).unwrap_or_else(|e| panic!("link {n}: {e}"));
    }
    println!("{}: {} links made directly in {:?}", root.display(), LINKS_BEFORE - 1, started.elapsed());
}

#[test]
fn calls_ext4_refuses_are_refused_with_its_errno_and_checkpoints_go_on() {
    let image = Ext4Image::new(512);
    let reference = image.mnt.join("reference");
    fs::create_dir(&reference).unwrap();
    let dirs = Dirs::with_backing_in(Some(&image.mnt), Some(CONFIG));
    make_links_before(&reference);
    make_links_before(&dirs.backing);
    let daemon = Daemon::foreground(&dirs, &[]);

    let on_ext4 = repros(&reference);
    let on_mcfs = repros(&dirs.mnt);
    let differ: Vec<String> = on_ext4
        .iter()
        .zip(&on_mcfs)
        .filter(|(e, m)| e.1 != m.1)
        .map(|(e, m)| format!("{}: ext4 {} / mcfs {}", e.0, errno_name(e.1), errno_name(m.1)))
        .collect();
    assert!(differ.is_empty(), "mcfs answers differently from ext4:\n  {}", differ.join("\n  "));
    let refused = |what: &str| on_ext4.iter().find(|(w, _)| w == what).map(|(_, e)| *e);
    assert_eq!(refused("setfattr -n foo.bar -v 1 f"), Some(libc::EOPNOTSUPP));
    assert_eq!(refused("an 8 KiB user.big"), Some(libc::ENOSPC));
    assert_eq!(refused("user.199 of 200"), Some(libc::ENOSPC));
    assert_eq!(refused("truncate -s 20T f"), Some(libc::EFBIG));
    assert_eq!(refused("link 65001"), Some(libc::EMLINK));
    let accepted = on_ext4.iter().filter(|(w, e)| w.starts_with("user.") && *e == 0).count();
    println!("ext4 took {accepted} of the 200 attributes");

    ctl(&dirs, &["checkpoint"]);
    daemon.unmount();
    let (backed, reference_f) = (dirs.backing.join("f"), reference.join("f"));
    assert_eq!(xattrs(&backed), xattrs(&reference_f), "the backing store holds the attributes ext4 took");
    let (b, r) = (fs::metadata(&backed).unwrap(), fs::metadata(&reference_f).unwrap());
    assert_eq!((b.size(), b.nlink()), (r.size(), r.nlink()), "size and links of f");
    assert_eq!(r.nlink(), 65_000);
    assert!(links_of(&dirs.backing).eq(links_of(&reference)), "the same names in links/");
}

fn links_of(root: &Path) -> impl Iterator<Item = PathBuf> {
    let mut names: Vec<PathBuf> = fs::read_dir(root.join("links")).unwrap().map(|e| e.unwrap().path()).collect();
    names.sort();
    names.into_iter().map(|p| PathBuf::from(p.file_name().unwrap()))
}

fn errno_name(errno: i32) -> String {
    match errno {
        0 => "ok".into(),
        e => std::io::Error::from_raw_os_error(e).to_string(),
    }
}
