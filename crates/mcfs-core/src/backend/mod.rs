//! The storage the engine checkpoints into. The engine reaches it only through
//! `Backend`, addressing objects by paths relative to the backing root, so a
//! real directory (`DirBackend`), an in-memory tree (`MemBackend`, used by the
//! simulator) and the crash-test recorder are interchangeable.
//!
//! Contract every implementation keeps: operations take effect in the order
//! they are called; `sync` is a durability barrier — after it returns, every
//! earlier operation survives a power loss. Nothing after the last `sync` is
//! promised to survive.
//! `limits` and `check_xattrs` say what the store would refuse, so the
//! engine refuses it at the call instead of failing a checkpoint later.

mod dir;
pub mod error;
mod limits;
mod mem;
mod mutation;
mod page_runs;
pub mod recent_paths;
mod recording;
pub(crate) mod relpath;
pub mod snapshot;

pub use dir::DirBackend;
pub use error::{errno_of, BackendError};
pub use limits::BackendLimits;
pub use mem::{mem_epoch, MemBackend, MemLimits};
pub use mutation::Mutation;
pub use recent_paths::RecentPaths;
pub use recording::{CrashState, Op, RecordingBackend};
pub use snapshot::{ContentDigest, SnapshotEntry, TreeSnapshot};

use crate::types::{FallocMode, FileKind, FsStats};
use std::ffi::{OsStr, OsString};
use std::io;
use std::ops::Range;
use std::path::Path;
use std::time::SystemTime;

/// Attributes of an object in the backing store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackendAttr {
    /// Identity of the object within the backing store (hard links share it).
    pub ino: u64,
    pub kind: FileKind,
    pub perm: u32,
    pub nlink: u32,
    pub uid: u32,
    pub gid: u32,
    pub size: u64,
    pub rdev: u32,
    pub atime: SystemTime,
    pub mtime: SystemTime,
    pub ctime: SystemTime,
    /// 512-byte blocks allocated (`st_blocks`).
    pub blocks: u64,
}

/// Content of files a store can recreate (`MemBackend::with_known_content`,
/// `Backend::known_content`): `fill` writes the bytes of file offsets
/// `offset..offset + buf.len()`, `matches` says whether `data` holds them.
#[derive(Clone, Copy, Debug)]
pub struct KnownContent {
    pub fill: fn(offset: u64, buf: &mut [u8]),
    pub matches: fn(offset: u64, data: &[u8]) -> bool,
}

pub trait Backend: Send + Sync {
    /// `lstat`: never follows a final symlink.
    fn stat(&self, path: &Path) -> io::Result<BackendAttr>;
    /// Names and kinds in a directory, without `.` and `..`.
    fn list_dir(&self, path: &Path) -> io::Result<Vec<(OsString, FileKind)>>;
    /// Reads up to `buf.len()` bytes; fewer only at end of file.
    fn read_at(&self, path: &Path, offset: u64, buf: &mut [u8]) -> io::Result<usize>;
    /// Writes into an existing file; `ENOENT` if there is none (never creates).
    fn write_at(&self, path: &Path, offset: u64, data: &[u8]) -> io::Result<()>;
    /// Writes `pieces` one after the other from `offset`: the same as one
    /// `write_at` of their joined bytes (the journal streams its record
    /// buffer and the file data the records end with this way, not joined).
    /// By default joined, then `write_at`.
    fn write_pieces_at(&self, path: &Path, offset: u64, pieces: &[&[u8]]) -> io::Result<()> {
        match pieces {
            [one] => self.write_at(path, offset, one),
            _ => self.write_at(path, offset, &pieces.concat()),
        }
    }
    /// Whether `write_pieces_at` takes the pieces as they are. If not, a
    /// caller gains nothing by handing them over apart (the default joins
    /// them) and joins them as it builds them.
    fn takes_pieces(&self) -> bool {
        false
    }
    /// Whether the store keeps what the journal's payload holds. Every store
    /// does but the simulator's data-less one (`MemBackend::
    /// without_journal_payloads`): nothing reads a payload back in a replay
    /// (`Journal::apply` carries out the ops it holds, and a replay has no
    /// crash to recover from), so the journal hands it only the payload's
    /// extent (`write_unkept_at`) and checksums nothing.
    fn keeps_journal_payload(&self) -> bool {
        true
    }
    /// Writes `len` bytes at `offset` of an existing file without their
    /// content: the file grows as by `write_at` and every page the range
    /// touches holds data, but none of it is kept — reading such a page fails
    /// with `EIO` (and a write of part of it leaves it so). For a store that
    /// does not keep the journal's payload; others refuse (`EOPNOTSUPP`).
    fn write_unkept_at(&self, _path: &Path, _offset: u64, _len: u64) -> io::Result<()> {
        Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP))
    }
    /// The content this store recreates from file offsets alone, if any
    /// (`KnownContent`; the simulator's data-less store). With it and
    /// without `keeps_journal_payload`, the journal holds a write of that
    /// content as its extent (`Mutation::WriteKnown`), not as its bytes.
    fn known_content(&self) -> Option<KnownContent> {
        None
    }
    /// Writes `len` bytes of the `known_content` at `offset` of an existing
    /// file: the same as `write_at` of the bytes its `fill` gives for them,
    /// without anyone making or comparing them. A store without known
    /// content refuses (`EOPNOTSUPP`).
    fn write_known_at(&self, _path: &Path, _offset: u64, _len: u64) -> io::Result<()> {
        Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP))
    }
    /// Sets the size of an existing file.
    fn set_len(&self, path: &Path, size: u64) -> io::Result<()>;
    /// Makes a new object. A regular file that already exists is truncated to
    /// empty (so replaying a create is harmless); anything else that exists
    /// fails with `EEXIST`.
    fn create(&self, path: &Path, kind: FileKind, perm: u32, rdev: u32) -> io::Result<()>;
    fn symlink(&self, target: &OsStr, path: &Path) -> io::Result<()>;
    fn read_link(&self, path: &Path) -> io::Result<OsString>;
    fn link(&self, existing: &Path, new: &Path) -> io::Result<()>;
    /// Removes a non-directory name.
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    fn remove_dir(&self, path: &Path) -> io::Result<()>;
    /// `rename(2)`: replaces an existing target.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// `lchown`.
    fn set_owner(&self, path: &Path, uid: u32, gid: u32) -> io::Result<()>;
    /// `chmod` (permission bits only; not applied to symlinks).
    fn set_perm(&self, path: &Path, perm: u32) -> io::Result<()>;
    /// `utimensat` without following symlinks.
    fn set_times(&self, path: &Path, atime: SystemTime, mtime: SystemTime) -> io::Result<()>;
    fn get_xattr(&self, path: &Path, name: &OsStr) -> io::Result<Option<Vec<u8>>>;
    fn list_xattr(&self, path: &Path) -> io::Result<Vec<OsString>>;
    fn set_xattr(&self, path: &Path, name: &OsStr, value: &[u8]) -> io::Result<()>;
    /// Removing an absent attribute is not an error.
    fn remove_xattr(&self, path: &Path, name: &OsStr) -> io::Result<()>;
    /// Durability barrier (see the module comment).
    fn sync(&self) -> io::Result<()>;
    fn statfs(&self) -> io::Result<FsStats>;
    /// What the store refuses (see `BackendLimits`); learned once, so cheap to call.
    fn limits(&self) -> BackendLimits;
    /// Whether an object of `kind` may hold exactly the extended attributes
    /// `xattrs`, each one set in this order: `Ok`, or the error setting them
    /// would end with (`EOPNOTSUPP` for a namespace the store does not keep,
    /// `ENOSPC` when they do not fit in one inode, `E2BIG`, `EINVAL`, `EPERM`
    /// or `EACCES` where Linux gives them). Changes nothing in the tree.
    fn check_xattrs(&self, kind: FileKind, xattrs: &[(&OsStr, &[u8])]) -> io::Result<()>;
    /// `fallocate(2)` of an existing regular file. Holes stay holes: a
    /// punched or zeroed range is never written as zero bytes where the
    /// store can do better.
    fn fallocate(&self, path: &Path, mode: FallocMode, offset: u64, len: u64) -> io::Result<()>;
    /// The byte ranges of a regular file that hold data, ascending and
    /// disjoint, as `lseek(SEEK_DATA/SEEK_HOLE)` finds them (reserved but
    /// unwritten space is a hole); within the file's size. A store that
    /// cannot tell reports the whole file as data.
    fn data_extents(&self, path: &Path) -> io::Result<Vec<Range<u64>>>;
}

/// True for "no such file" errors, which replay treats as "already done".
pub fn is_not_found(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ENOENT) || e.kind() == io::ErrorKind::NotFound
}

/// Known content for tests (`MemBackend::with_known_content`): byte `o` of
/// every file is `o mod 251`, as in the simulator's replays.
#[cfg(test)]
pub(crate) mod test_content {
    use super::KnownContent;

    pub(crate) fn ramp(offset: u64, buf: &mut [u8]) {
        buf.iter_mut().zip(offset..).for_each(|(b, o)| *b = (o % 251) as u8);
    }

    pub(crate) const RAMP: KnownContent = KnownContent {
        fill: ramp,
        matches: |offset, data| data.iter().zip(offset..).all(|(b, o)| *b == (o % 251) as u8),
    };
}
