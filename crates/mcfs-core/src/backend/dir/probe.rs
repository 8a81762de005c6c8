//! How `DirBackend` learns what the backing file system refuses. From the
//! system where it says: `fstatvfs` gives the longest name, `fpathconf` the
//! link limit — glibc derives that from the file system type and answers
//! `LINUX_LINK_MAX` (127) for types it does not know, such as tmpfs, so
//! then up to 128 names of a scratch file tell whether it is true. By
//! trying, on scratch objects in `.mcfs/`, where it does not say: the
//! largest file size (`ftruncate` to the largest size that does not give
//! `EFBIG`), the longest symlink target, and, at each check, whether an
//! object can hold a set of extended attributes — they are set on a scratch
//! object of the same kind, because how many fit depends on the file
//! system's layout (ext4 packs them into the inode and one block, and
//! stores ACLs in a format of its own).
//!
//! Invariants: every scratch object is reached from `.mcfs/`, opened
//! without following a symlink, under a `probe-*` name. A scratch object's
//! `held` is exactly the attributes it has: a failed change throws the
//! object away, and the next check starts from a fresh one.

use super::at::{c_string, check};
use crate::backend::BackendLimits;
use crate::types::FileKind;
use crate::STATE_DIR;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::{CStr, CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// glibc's `_PC_LINK_MAX` for a file system type it does not know.
const GLIBC_UNKNOWN_LINK_MAX: u32 = 127;
/// The longest symlink target the kernel takes at all (`PATH_MAX` less the NUL).
const KERNEL_SYMLINK_MAX: u32 = libc::PATH_MAX as u32 - 1;

/// What a scratch object for the extended attribute check stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum ScratchKind {
    File,
    Dir,
    Symlink,
    /// Fifos, sockets and devices: one kind to Linux file systems.
    Special,
}

impl ScratchKind {
    fn of(kind: FileKind) -> ScratchKind {
        match kind {
            FileKind::File => ScratchKind::File,
            FileKind::Dir => ScratchKind::Dir,
            FileKind::Symlink => ScratchKind::Symlink,
            FileKind::Fifo | FileKind::Socket | FileKind::CharDev | FileKind::BlockDev => ScratchKind::Special,
        }
    }

    fn name(self) -> &'static CStr {
        match self {
            ScratchKind::File => c"probe-xattr-file",
            ScratchKind::Dir => c"probe-xattr-dir",
            ScratchKind::Symlink => c"probe-xattr-symlink",
            ScratchKind::Special => c"probe-xattr-fifo",
        }
    }
}

/// The scratch objects of one backing directory.
#[derive(Default)]
pub(super) struct Scratch {
    /// `.mcfs/`, opened on first use.
    dir: Option<OwnedFd>,
    holders: HashMap<ScratchKind, Holder>,
}

impl Scratch {
    /// `.mcfs/` below `root`, made if missing; never through a symlink.
    fn dir(&mut self, root: BorrowedFd) -> io::Result<RawFd> {
        if self.dir.is_none() {
            let name = c_string(OsStr::new(STATE_DIR))?;
            match check(unsafe { libc::mkdirat(root.as_raw_fd(), name.as_ptr(), 0o700) }) {
                Err(e) if e.raw_os_error() != Some(libc::EEXIST) => return Err(e),
                _ => {}
            }
            let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW;
            self.dir = Some(open_at(root.as_raw_fd(), &name, flags, 0)?);
        }
        Ok(self.dir.as_ref().map_or(-1, |d| d.as_raw_fd()))
    }

    /// The limits of the file system of `root` (see the module comment). A
    /// limit that cannot be probed stays the kernel's own, with a warning.
    pub(super) fn limits(&mut self, root: BorrowedFd) -> BackendLimits {
        let name_max = match name_max(root) {
            Ok(max) => max,
            Err(e) => {
                tracing::warn!("backing store: fstatvfs failed ({e}); assuming names of 255 bytes");
                255
            }
        };
        let told_link_max = link_max_told(root);
        let probed = self.dir(root).and_then(|dir| {
            Ok(BackendLimits {
                max_file_size: probe_max_file_size(dir)?,
                link_max: match told_link_max {
                    GLIBC_UNKNOWN_LINK_MAX => probe_link_max(dir)?,
                    told => told,
                },
                name_max,
                symlink_max: probe_symlink_max(dir)?,
            })
        });
        probed.unwrap_or_else(|e| {
            tracing::warn!("backing store: probing its limits in {STATE_DIR}/ failed ({e}); assuming the kernel's");
            let max_file_size = i64::MAX as u64;
            BackendLimits { max_file_size, link_max: told_link_max, name_max, symlink_max: KERNEL_SYMLINK_MAX }
        })
    }

    /// Whether an object of `kind` can hold exactly `xattrs`, tried on the
    /// scratch object of that kind.
    pub(super) fn check_xattrs(
        &mut self,
        root: BorrowedFd,
        kind: FileKind,
        xattrs: &[(&OsStr, &[u8])],
    ) -> io::Result<()> {
        let kind = ScratchKind::of(kind);
        if !self.holders.contains_key(&kind) {
            let holder = Holder::create(self.dir(root)?, kind)?;
            self.holders.insert(kind, holder);
        }
        let holder = self.holders.get_mut(&kind).expect("inserted above");
        let held = holder.hold(xattrs);
        if held.is_err() {
            self.holders.remove(&kind);
        }
        held
    }
}

/// A scratch object and the extended attributes it has.
struct Holder {
    handle: Handle,
    held: BTreeMap<OsString, Vec<u8>>,
}

/// How the xattr calls reach a scratch object.
enum Handle {
    /// An open descriptor (`fsetxattr`): files, directories, fifos.
    Open(OwnedFd),
    /// `/proc/self/fd/N` of an `O_PATH` descriptor, which the path calls
    /// follow to the object itself: a symlink cannot be opened. Slower (procfs
    /// resolves the path at each call: some 60-130 µs against 4 µs), and
    /// only symlinks, which rarely have attributes, take it.
    Proc { _object: OwnedFd, path: CString },
}

impl Handle {
    fn set(&self, name: &CStr, value: &[u8]) -> io::Result<()> {
        let (name, data, len) = (name.as_ptr(), value.as_ptr().cast(), value.len());
        check(match self {
            Handle::Open(fd) => unsafe { libc::fsetxattr(fd.as_raw_fd(), name, data, len, 0) },
            Handle::Proc { path, .. } => unsafe { libc::setxattr(path.as_ptr(), name, data, len, 0) },
        })
    }

    fn remove(&self, name: &CStr) -> io::Result<()> {
        check(match self {
            Handle::Open(fd) => unsafe { libc::fremovexattr(fd.as_raw_fd(), name.as_ptr()) },
            Handle::Proc { path, .. } => unsafe { libc::removexattr(path.as_ptr(), name.as_ptr()) },
        })
    }
}

impl Holder {
    /// A fresh scratch object of `kind` in the directory `dir`.
    fn create(dir: RawFd, kind: ScratchKind) -> io::Result<Holder> {
        let name = kind.name();
        remove_stale(dir, name, kind == ScratchKind::Dir)?;
        match kind {
            ScratchKind::File => drop(open_at(dir, name, libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL, 0o600)?),
            ScratchKind::Dir => check(unsafe { libc::mkdirat(dir, name.as_ptr(), 0o700) })?,
            ScratchKind::Symlink => check(unsafe { libc::symlinkat(c"probe".as_ptr(), dir, name.as_ptr()) })?,
            ScratchKind::Special => check(unsafe { libc::mknodat(dir, name.as_ptr(), libc::S_IFIFO | 0o600, 0) })?,
        }
        let handle = match kind {
            ScratchKind::Symlink => {
                let object = open_at(dir, name, libc::O_PATH, 0)?;
                let path = CString::new(format!("/proc/self/fd/{}", object.as_raw_fd()))
                    .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
                Handle::Proc { _object: object, path }
            }
            // A fifo opened for reading without a writer: O_NONBLOCK returns at once.
            _ => Handle::Open(open_at(dir, name, libc::O_RDONLY | libc::O_NONBLOCK, 0)?),
        };
        Ok(Holder { handle, held: BTreeMap::new() })
    }

    /// Gives the object exactly `xattrs`: removes the others, then sets
    /// those it lacks or holds with another value, in order.
    fn hold(&mut self, xattrs: &[(&OsStr, &[u8])]) -> io::Result<()> {
        let wanted: HashSet<&OsStr> = xattrs.iter().map(|(name, _)| *name).collect();
        let extra: Vec<OsString> = self.held.keys().filter(|n| !wanted.contains(n.as_os_str())).cloned().collect();
        for name in extra {
            match self.handle.remove(&c_string(&name)?) {
                // An ACL the mode said all of was never kept.
                Err(e) if e.raw_os_error() != Some(libc::ENODATA) => return Err(e),
                _ => {}
            }
            self.held.remove(&name);
        }
        for (name, value) in xattrs {
            if self.held.get(*name).map(Vec::as_slice) == Some(*value) {
                continue;
            }
            self.handle.set(&c_string(name)?, value)?;
            self.held.insert(name.to_os_string(), value.to_vec());
        }
        Ok(())
    }
}

/// `f_namemax` of the file system.
fn name_max(root: BorrowedFd) -> io::Result<u32> {
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    check(unsafe { libc::fstatvfs(root.as_raw_fd(), &mut st) })?;
    Ok(u32::try_from(st.f_namemax).unwrap_or(u32::MAX))
}

/// `fpathconf(_PC_LINK_MAX)`; no limit (`-1`) as `u32::MAX`.
fn link_max_told(root: BorrowedFd) -> u32 {
    let told = unsafe { libc::fpathconf(root.as_raw_fd(), libc::_PC_LINK_MAX) };
    u32::try_from(told).unwrap_or(u32::MAX)
}

/// The largest size `ftruncate` takes, by bisection (about 63 calls, on a
/// sparse file).
fn probe_max_file_size(dir: RawFd) -> io::Result<u64> {
    let name = c"probe-size";
    remove_stale(dir, name, false)?;
    let file = open_at(dir, name, libc::O_RDWR | libc::O_CREAT | libc::O_EXCL, 0o600)?;
    let fits = |size: u64| match check(unsafe { libc::ftruncate(file.as_raw_fd(), size as libc::off_t) }) {
        Ok(()) => Ok(true),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EFBIG | libc::EINVAL)) => Ok(false),
        Err(e) => Err(e),
    };
    let found = largest_fitting(i64::MAX as u64, fits);
    drop(file);
    remove_stale(dir, name, false)?;
    found
}

/// The longest symlink target the file system takes, up to the kernel's own limit.
fn probe_symlink_max(dir: RawFd) -> io::Result<u32> {
    let name = c"probe-symlink";
    remove_stale(dir, name, false)?;
    let fits = |len: u32| {
        let target = CString::new(vec![b'x'; len as usize]).expect("no NUL");
        match check(unsafe { libc::symlinkat(target.as_ptr(), dir, name.as_ptr()) }) {
            Ok(()) => remove_stale(dir, name, false).map(|()| true),
            Err(e) if e.raw_os_error() == Some(libc::ENAMETOOLONG) => Ok(false),
            Err(e) => Err(e),
        }
    };
    Ok(largest_fitting(KERNEL_SYMLINK_MAX.into(), |len| fits(len as u32))? as u32)
}

/// The largest value up to `max` that `fits`: `max` itself when it fits
/// (one call), else found by bisection (0 is taken to fit).
fn largest_fitting(max: u64, mut fits: impl FnMut(u64) -> io::Result<bool>) -> io::Result<u64> {
    if fits(max)? {
        return Ok(max);
    }
    let (mut fitting, mut too_big) = (0, max);
    while too_big - fitting > 1 {
        let mid = fitting + (too_big - fitting) / 2;
        if fits(mid)? {
            fitting = mid;
        } else {
            too_big = mid;
        }
    }
    Ok(fitting)
}

/// The link limit of a file system glibc does not know: names are added to
/// a scratch file until `EMLINK` or until it has more than glibc's guess
/// (then the file system has no limit a mount can reach).
fn probe_link_max(dir: RawFd) -> io::Result<u32> {
    let name = c"probe-links";
    let link_name = |n: u32| CString::new(format!("probe-links.{n}")).expect("no NUL");
    let clean = || -> io::Result<()> {
        (1..=GLIBC_UNKNOWN_LINK_MAX).try_for_each(|n| remove_stale(dir, &link_name(n), false))?;
        remove_stale(dir, name, false)
    };
    clean()?;
    drop(open_at(dir, name, libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL, 0o600)?);
    let mut nlink = 1;
    let counted = loop {
        if nlink > GLIBC_UNKNOWN_LINK_MAX {
            break Ok(u32::MAX);
        }
        let new = link_name(nlink);
        match check(unsafe { libc::linkat(dir, name.as_ptr(), dir, new.as_ptr(), 0) }) {
            Ok(()) => nlink += 1,
            Err(e) if e.raw_os_error() == Some(libc::EMLINK) => break Ok(nlink),
            Err(e) => break Err(e),
        }
    };
    clean()?;
    counted
}

/// Removes `name` from `dir` if it is there (a scratch object a crashed
/// daemon left).
fn remove_stale(dir: RawFd, name: &CStr, is_dir: bool) -> io::Result<()> {
    let flags = if is_dir { libc::AT_REMOVEDIR } else { 0 };
    match check(unsafe { libc::unlinkat(dir, name.as_ptr(), flags) }) {
        Err(e) if e.raw_os_error() != Some(libc::ENOENT) => Err(e),
        _ => Ok(()),
    }
}

fn open_at(dir: RawFd, name: &CStr, flags: libc::c_int, mode: u32) -> io::Result<OwnedFd> {
    let flags = flags | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    let fd = unsafe { libc::openat(dir, name.as_ptr(), flags, mode as libc::c_uint) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::File;
    use std::os::fd::AsFd;
    use std::os::unix::ffi::OsStrExt;

    fn root() -> (tempfile::TempDir, File) {
        let dir = tempfile::tempdir().unwrap();
        let root = File::open(dir.path()).unwrap();
        (dir, root)
    }

    #[test]
    fn limits_are_probed_in_the_state_directory_and_leave_nothing_behind() {
        let (dir, root) = root();
        let limits = Scratch::default().limits(root.as_fd());
        assert!(limits.max_file_size >= 1 << 31, "{limits}");
        assert!(limits.link_max > 1 && limits.name_max > 0 && limits.symlink_max > 0, "{limits}");
        let left: Vec<_> = std::fs::read_dir(dir.path().join(STATE_DIR)).unwrap().collect();
        assert!(left.is_empty(), "probes left {left:?}");
    }

    #[test]
    fn a_link_count_glibc_does_not_know_is_found_by_linking() {
        let (dir, root) = root();
        let mut scratch = Scratch::default();
        let state = scratch.dir(root.as_fd()).unwrap();
        // Every Linux file system this runs on takes more than 127 names.
        assert_eq!(probe_link_max(state).unwrap(), u32::MAX);
        assert_eq!(std::fs::read_dir(dir.path().join(STATE_DIR)).unwrap().count(), 0);
    }

    #[test]
    fn a_failed_check_starts_the_next_one_from_a_fresh_object() {
        let (dir, root) = root();
        let mut scratch = Scratch::default();
        let set = |names: &[&'static str]| -> Vec<(&'static OsStr, &'static [u8])> {
            names.iter().map(|n| (OsStr::new(*n), &b"v"[..])).collect()
        };
        scratch.check_xattrs(root.as_fd(), FileKind::File, &set(&["user.a", "user.b"])).unwrap();
        let file = dir.path().join(STATE_DIR).join("probe-xattr-file");
        let names = |path: &std::path::Path| {
            let mut buf = vec![0u8; 1024];
            let c = CString::new(path.as_os_str().as_bytes()).unwrap();
            let n = unsafe { libc::listxattr(c.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
            buf.truncate(n.max(0) as usize);
            buf
        };
        assert_eq!(names(&file), b"user.a\0user.b\0");
        scratch.check_xattrs(root.as_fd(), FileKind::File, &set(&["user.b"])).unwrap();
        assert_eq!(names(&file), b"user.b\0", "what the set lacks is removed");
        let e = scratch.check_xattrs(root.as_fd(), FileKind::File, &set(&["user.b", "foo.bar"])).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EOPNOTSUPP));
        scratch.check_xattrs(root.as_fd(), FileKind::File, &set(&["user.c"])).unwrap();
        assert_eq!(names(&file), b"user.c\0");
        let e = scratch.check_xattrs(root.as_fd(), FileKind::Symlink, &set(&["user.a"])).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EPERM), "user attributes only on files and directories");
    }

    /// Not a check: prints the probed limits, how long probing took, and
    /// what the extended attribute check costs per setxattr beside a plain
    /// setxattr. Run with `cargo test -p mcfs-core --release xattr_check_cost
    /// -- --ignored --nocapture` (MCFS_BENCH_DIR picks the file system; /tmp by default).
    #[test]
    #[ignore]
    fn xattr_check_cost() {
        let base = std::env::var_os("MCFS_BENCH_DIR").map_or_else(std::env::temp_dir, std::path::PathBuf::from);
        let dir = tempfile::tempdir_in(base).unwrap();
        let root = File::open(dir.path()).unwrap();
        let mut scratch = Scratch::default();
        let started = std::time::Instant::now();
        let limits = scratch.limits(root.as_fd());
        println!("{}: {limits}; probed in {:?}", dir.path().display(), started.elapsed());
        let names: Vec<OsString> = (0..100).map(|i| OsString::from(format!("user.attr{i}"))).collect();
        let value = [b'v'; 16];
        let sets: Vec<Vec<(&OsStr, &[u8])>> =
            (1..=100).map(|n| names[..n].iter().map(|n| (n.as_os_str(), &value[..])).collect()).collect();
        let per_call = |label: &str, calls: u32, run: &mut dyn FnMut()| {
            let started = std::time::Instant::now();
            run();
            println!("{label}: {:?} per call", started.elapsed() / calls);
        };
        let plain = CString::new(dir.path().join("plain").as_os_str().as_encoded_bytes()).unwrap();
        drop(File::create(dir.path().join("plain")).unwrap());
        per_call("plain setxattr, a file growing to 100 attributes", 100, &mut || {
            for name in &names {
                let name = c_string(name).unwrap();
                check(unsafe { libc::setxattr(plain.as_ptr(), name.as_ptr(), value.as_ptr().cast(), 16, 0) }).unwrap();
            }
        });
        per_call("check, one file growing to 100 attributes", 100, &mut || {
            sets.iter().for_each(|set| scratch.check_xattrs(root.as_fd(), FileKind::File, set).unwrap())
        });
        let (a, b) = (&sets[49], &names[50..]);
        let b: Vec<(&OsStr, &[u8])> = b.iter().map(|n| (n.as_os_str(), &value[..])).collect();
        per_call("check, two files of 50 attributes in turn (worst case)", 100, &mut || {
            for _ in 0..50 {
                scratch.check_xattrs(root.as_fd(), FileKind::File, a).unwrap();
                scratch.check_xattrs(root.as_fd(), FileKind::File, &b).unwrap();
            }
        });
        let mut too_many: Vec<(&OsStr, &[u8])> = sets[99].clone();
        let more: Vec<OsString> = (100..400).map(|i| OsString::from(format!("user.attr{i}"))).collect();
        too_many.extend(more.iter().map(|n| (n.as_os_str(), &value[..])));
        let refused = scratch.check_xattrs(root.as_fd(), FileKind::File, &too_many).is_err();
        per_call(&format!("check of 400 attributes (refused: {refused}), rebuilt each time"), 20, &mut || {
            for _ in 0..20 {
                let _ = scratch.check_xattrs(root.as_fd(), FileKind::File, &too_many);
            }
        });
    }
}
