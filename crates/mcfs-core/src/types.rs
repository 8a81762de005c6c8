//! Plain value types shared by the engine, its backends and its front ends
//! (the FUSE adapter and the simulator). Nothing here does I/O.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};
use std::time::SystemTime;

/// Engine inode number. 1 is the root, as FUSE expects.
pub type Ino = u64;
pub const ROOT_INO: Ino = 1;

/// A map keyed by inode number, hashed with `InoHasher`.
pub type InoMap<V> = HashMap<Ino, V, BuildHasherDefault<InoHasher>>;
/// A set of inode numbers, hashed with `InoHasher`.
pub type InoSet = HashSet<Ino, BuildHasherDefault<InoHasher>>;

/// Hashes inode numbers with one multiplication: they are engine-made
/// integers, not input an attacker picks, and SipHash on every lookup cost
/// about 1 % of the instructions of a reclaim-heavy run in the page table
/// and as much again in the inode table of a replay (docs/BENCHMARKS.md,
/// "Page cache behind traits" and "Simulator speed, issue 14").
#[derive(Default)]
pub struct InoHasher(u64);

impl Hasher for InoHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    /// Eight bytes a step (the simulator's path table hashes trace paths with it).
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            self.write_u64(u64::from_le_bytes(word.try_into().expect("8 bytes")));
        }
        if !words.remainder().is_empty() {
            // Shifted in, not copied: a copy of a few bytes is a call to memcpy.
            let last = words.remainder().iter().rev().fold(0, |word, b| word << 8 | u64::from(*b));
            self.write_u64(last);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x517c_c1b7_2722_0a95);
    }

    /// Uids: one step, not one per byte.
    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }
}

/// Cache page size: the unit of caching, logging and copy-on-write.
pub const PAGE_SIZE: u64 = 4096;

/// A POSIX error number. Engine calls fail with one of these so the FUSE
/// adapter can pass it straight to the kernel.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Errno(pub i32);

impl Errno {
    pub const EPERM: Errno = Errno(libc::EPERM);
    pub const ENOENT: Errno = Errno(libc::ENOENT);
    pub const EIO: Errno = Errno(libc::EIO);
    pub const EBADF: Errno = Errno(libc::EBADF);
    pub const EACCES: Errno = Errno(libc::EACCES);
    pub const EEXIST: Errno = Errno(libc::EEXIST);
    pub const EXDEV: Errno = Errno(libc::EXDEV);
    pub const ENOTDIR: Errno = Errno(libc::ENOTDIR);
    pub const EISDIR: Errno = Errno(libc::EISDIR);
    pub const EINVAL: Errno = Errno(libc::EINVAL);
    pub const EFBIG: Errno = Errno(libc::EFBIG);
    pub const ENOSPC: Errno = Errno(libc::ENOSPC);
    pub const EROFS: Errno = Errno(libc::EROFS);
    pub const EMLINK: Errno = Errno(libc::EMLINK);
    pub const ERANGE: Errno = Errno(libc::ERANGE);
    pub const ENAMETOOLONG: Errno = Errno(libc::ENAMETOOLONG);
    pub const ENOTEMPTY: Errno = Errno(libc::ENOTEMPTY);
    pub const ENODATA: Errno = Errno(libc::ENODATA);
    pub const ENOTSUP: Errno = Errno(libc::EOPNOTSUPP);
    pub const ELOOP: Errno = Errno(libc::ELOOP);
    pub const ENODEV: Errno = Errno(libc::ENODEV);
    pub const ENXIO: Errno = Errno(libc::ENXIO);
    pub const ESPIPE: Errno = Errno(libc::ESPIPE);

    pub fn from_io(e: &std::io::Error) -> Errno {
        Errno(crate::backend::errno_of(e))
    }
}

impl fmt::Debug for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", std::io::Error::from_raw_os_error(self.0))
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

impl From<std::io::Error> for Errno {
    fn from(e: std::io::Error) -> Errno {
        Errno::from_io(&e)
    }
}

pub type FsResult<T> = Result<T, Errno>;

/// What kind of object an inode is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FileKind {
    File,
    Dir,
    Symlink,
    Fifo,
    Socket,
    CharDev,
    BlockDev,
}

impl FileKind {
    /// The `S_IFMT` bits for this kind.
    pub fn mode_bits(self) -> u32 {
        match self {
            FileKind::File => libc::S_IFREG,
            FileKind::Dir => libc::S_IFDIR,
            FileKind::Symlink => libc::S_IFLNK,
            FileKind::Fifo => libc::S_IFIFO,
            FileKind::Socket => libc::S_IFSOCK,
            FileKind::CharDev => libc::S_IFCHR,
            FileKind::BlockDev => libc::S_IFBLK,
        }
    }

    pub fn from_mode(mode: u32) -> Option<FileKind> {
        Some(match mode & libc::S_IFMT {
            libc::S_IFREG => FileKind::File,
            libc::S_IFDIR => FileKind::Dir,
            libc::S_IFLNK => FileKind::Symlink,
            libc::S_IFIFO => FileKind::Fifo,
            libc::S_IFSOCK => FileKind::Socket,
            libc::S_IFCHR => FileKind::CharDev,
            libc::S_IFBLK => FileKind::BlockDev,
            _ => return None,
        })
    }
}

/// Attributes of an inode as the mount shows them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attr {
    pub ino: Ino,
    pub kind: FileKind,
    /// Permission bits including set-uid, set-gid and sticky (no `S_IFMT`).
    pub perm: u32,
    pub nlink: u32,
    pub uid: u32,
    pub gid: u32,
    pub size: u64,
    pub rdev: u32,
    pub atime: SystemTime,
    pub mtime: SystemTime,
    pub ctime: SystemTime,
    /// 512-byte blocks allocated (`st_blocks`): holes take none.
    pub blocks: u64,
}

/// A time to set: a given instant, or "now" by the engine's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetTime {
    At(SystemTime),
    Now,
}

/// A `setattr` request: each `Some` field is changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SetAttr {
    pub perm: Option<u32>,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub size: Option<u64>,
    pub atime: Option<SetTime>,
    pub mtime: Option<SetTime>,
}

impl SetAttr {
    /// Sets times and nothing else (what the kernel's writeback cache
    /// sends with each writeback of a file).
    pub fn sets_only_times(&self) -> bool {
        self.perm.is_none() && self.uid.is_none() && self.gid.is_none() && self.size.is_none()
    }
}

/// Who issued a request. `None` where the kernel sends a request on nobody's
/// behalf (writeback of its own page cache).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caller {
    pub uid: u32,
    pub gid: u32,
    pub pid: u32,
}

impl Caller {
    pub const ROOT: Caller = Caller { uid: 0, gid: 0, pid: 0 };
}

/// One entry of a directory listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirEntry {
    pub name: OsString,
    pub ino: Ino,
    pub kind: FileKind,
    /// Its place in the directory's stream (`Engine::readdir`).
    pub slot: u64,
}

/// Flags of `rename(2)` / `renameat2(2)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RenameMode {
    Replace,
    NoReplace,
    Exchange,
    /// RENAME_WHITEOUT: a rename that leaves a whiteout (a character
    /// device 0:0) at the old name; replaces an existing target.
    Whiteout,
    /// RENAME_WHITEOUT | RENAME_NOREPLACE.
    WhiteoutNoReplace,
}

/// `statfs` as the mount reports it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FsStats {
    pub blocks: u64,
    pub bfree: u64,
    pub bavail: u64,
    pub files: u64,
    pub ffree: u64,
    pub bsize: u32,
    pub namelen: u32,
}

/// How `setxattr` treats an existing attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XattrMode {
    Any,
    CreateOnly,
    ReplaceOnly,
}

/// The permission bits a new object asks for (set-uid, set-gid, sticky and
/// rwx), and the umask of the process making it. As on Linux, the umask
/// applies unless the new object inherits its directory's default ACL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NewPerm {
    pub perm: u32,
    pub umask: u32,
}

/// Bits the caller has masked already (or no umask).
impl From<u32> for NewPerm {
    fn from(perm: u32) -> NewPerm {
        NewPerm { perm, umask: 0 }
    }
}

/// What a `fallocate(2)` that leaves the data in place does to a range of a
/// regular file (the shifting modes, collapse and insert, are writes and a
/// truncate; see `file_space`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FallocMode {
    /// Mode 0 or `FALLOC_FL_KEEP_SIZE`: reserves space; the data stays,
    /// holes read as zeros still. Without `keep_size` the size grows to the
    /// end of the range.
    Allocate { keep_size: bool },
    /// `FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE`: the range reads as
    /// zeros and its whole pages take no space; the size stays.
    PunchHole,
    /// `FALLOC_FL_ZERO_RANGE`: the range reads as zeros and keeps its space;
    /// without `keep_size` the size grows to the end of the range.
    ZeroRange { keep_size: bool },
}

impl FallocMode {
    /// Whether the bytes of the range become zeros.
    pub fn zeroes(self) -> bool {
        !matches!(self, FallocMode::Allocate { .. })
    }

    /// Whether the size grows to the end of the range (if it is beyond it).
    pub fn extends(self) -> bool {
        matches!(self, FallocMode::Allocate { keep_size: false } | FallocMode::ZeroRange { keep_size: false })
    }

    /// The `fallocate(2)` mode bits.
    pub fn bits(self) -> i32 {
        let keep = |k: bool| if k { libc::FALLOC_FL_KEEP_SIZE } else { 0 };
        match self {
            FallocMode::Allocate { keep_size } => keep(keep_size),
            FallocMode::PunchHole => libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            FallocMode::ZeroRange { keep_size } => libc::FALLOC_FL_ZERO_RANGE | keep(keep_size),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ino_hasher_takes_bytes_as_little_endian_words() {
        let hash = |f: &dyn Fn(&mut InoHasher)| {
            let mut h = InoHasher::default();
            f(&mut h);
            h.finish()
        };
        let bytes: Vec<u8> = (1..=11).collect();
        let words = hash(&|h| {
            h.write_u64(0x0807_0605_0403_0201);
            h.write_u64(0x000b_0a09);
        });
        assert_eq!(hash(&|h| h.write(&bytes)), words);
        assert_ne!(hash(&|h| h.write(&bytes[..10])), words, "a shorter tail is another word");
        assert_eq!(hash(&|h| h.write_u32(7)), hash(&|h| h.write_u64(7)));
    }
}
