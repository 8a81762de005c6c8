//! Directory streams through a live mount. The mount keeps no state per
//! open directory (it refuses OPENDIR, `dir_stream`), so a stream continues
//! from its offset alone, and the kernel caches listings: a name that stays
//! must come exactly once while others come and go between the kernel's
//! calls, and a listing must show every change made through the mount.
//! Over both transports (`fuse.io_uring`), in both consistency modes.

mod common;

use common::{Daemon, Dirs};
use std::collections::BTreeSet;
use std::ffi::CString;
use std::fs::{self, File};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

const SETUPS: [(&str, &str); 3] = [
    ("ring", "[fuse]\nio_uring = \"auto\"\n"),
    ("dev-fuse", "[fuse]\nio_uring = \"off\"\n"),
    ("sync-point", "consistency = \"sync-point\"\n[fuse]\nio_uring = \"off\"\n"),
];

/// An open directory read with getdents64 a few entries at a time, so the
/// kernel asks the mount for more in between.
struct Stream {
    fd: libc::c_int,
}

impl Stream {
    fn open(dir: &Path) -> Stream {
        let path = CString::new(dir.as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid C string; the descriptor is closed on drop.
        let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) };
        assert!(fd >= 0, "open {}: {}", dir.display(), std::io::Error::last_os_error());
        Stream { fd }
    }

    /// The names of one getdents64 call with a small buffer; empty at the end.
    fn next_names(&mut self) -> Vec<String> {
        let mut buf = [0u8; 256];
        // SAFETY: the kernel writes at most `buf.len()` bytes into `buf`.
        let n = unsafe { libc::syscall(libc::SYS_getdents64, self.fd, buf.as_mut_ptr(), buf.len()) };
        assert!(n >= 0, "getdents64: {}", std::io::Error::last_os_error());
        let mut names = Vec::new();
        let mut at = 0;
        while at < n as usize {
            // struct linux_dirent64: ino u64, off i64, reclen u16, type u8, name.
            let reclen = u16::from_ne_bytes([buf[at + 16], buf[at + 17]]) as usize;
            let name = &buf[at + 19..at + reclen];
            let end = name.iter().position(|b| *b == 0).unwrap_or(name.len());
            names.push(String::from_utf8_lossy(&name[..end]).into_owned());
            at += reclen;
        }
        names
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: our own descriptor, closed once.
        unsafe { libc::close(self.fd) };
    }
}

fn listing(dir: &Path) -> BTreeSet<String> {
    fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("readdir {}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

fn touch(path: &Path) {
    File::create(path).unwrap_or_else(|e| panic!("create {}: {e}", path.display()));
}

#[test]
fn a_name_that_stays_comes_once_while_others_come_and_go() {
    for (setup, config) in SETUPS {
        let dirs = Dirs::new(Some(config));
        let daemon = Daemon::foreground(&dirs, &[]);
        let dir = dirs.mnt.join("d");
        fs::create_dir(&dir).unwrap();
        let names: Vec<String> = (0..300).map(|i| format!("file-{i:03}")).collect();
        for name in &names {
            touch(&dir.join(name));
        }
        let mut stream = Stream::open(&dir);
        let mut seen = stream.next_names();
        assert!(seen.len() < 20, "{setup}: the small buffer took {} names in one call", seen.len());
        // Between calls: remove every third name, add new ones.
        let removed: BTreeSet<String> = names.iter().step_by(3).cloned().collect();
        for (i, name) in removed.iter().enumerate() {
            fs::remove_file(dir.join(name)).unwrap();
            touch(&dir.join(format!("new-{i:03}")));
        }
        loop {
            let more = stream.next_names();
            if more.is_empty() {
                break;
            }
            seen.extend(more);
        }
        drop(stream);
        let mut once = BTreeSet::new();
        for name in &seen {
            assert!(once.insert(name.clone()), "{setup}: {name} came twice");
        }
        for name in names.iter().filter(|n| !removed.contains(*n)) {
            assert!(once.contains(name), "{setup}: {name} stayed in the directory but the stream missed it");
        }
        assert!(once.contains(".") && once.contains(".."), "{setup}: the dots");
        daemon.unmount();
    }
}

#[test]
fn a_listing_shows_every_change_made_through_the_mount() {
    for (setup, config) in SETUPS {
        let dirs = Dirs::new(Some(config));
        let daemon = Daemon::foreground(&dirs, &[]);
        let (dir, other) = (dirs.mnt.join("d"), dirs.mnt.join("e"));
        fs::create_dir(&dir).unwrap();
        fs::create_dir(&other).unwrap();
        let mut expected = BTreeSet::new();
        let step = |what: &str, change: &dyn Fn(), expected_now: &BTreeSet<String>| {
            change();
            // Twice: the second listing may come from the kernel's cache.
            for pass in 0..2 {
                assert_eq!(&listing(&dir), expected_now, "{setup}: after {what}, listing {pass}");
            }
        };
        step("nothing", &|| {}, &expected);
        expected.insert("a".to_string());
        step("create", &|| touch(&dir.join("a")), &expected);
        expected.insert("sub".to_string());
        step("mkdir", &|| fs::create_dir(dir.join("sub")).unwrap(), &expected);
        expected.remove("a");
        expected.insert("b".to_string());
        step("rename within", &|| fs::rename(dir.join("a"), dir.join("b")).unwrap(), &expected);
        expected.insert("c".to_string());
        step("link", &|| fs::hard_link(dir.join("b"), dir.join("c")).unwrap(), &expected);
        expected.insert("s".to_string());
        step("symlink", &|| std::os::unix::fs::symlink("b", dir.join("s")).unwrap(), &expected);
        expected.remove("b");
        step("unlink", &|| fs::remove_file(dir.join("b")).unwrap(), &expected);
        expected.remove("sub");
        step("rmdir", &|| fs::remove_dir(dir.join("sub")).unwrap(), &expected);
        expected.insert("from-e".to_string());
        step(
            "rename into",
            &|| {
                touch(&other.join("x"));
                fs::rename(other.join("x"), dir.join("from-e")).unwrap()
            },
            &expected,
        );
        expected.remove("c");
        step("rename out", &|| fs::rename(dir.join("c"), other.join("c")).unwrap(), &expected);
        assert_eq!(listing(&other), BTreeSet::from(["c".to_string()]), "{setup}: the other directory");
        daemon.unmount();
    }
}
