//! `Mutation`: one change to a backing store, as data.

use super::Backend;
use crate::types::{FallocMode, FileKind};
use std::ffi::OsString;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// One change to the backing store: a call of one of `Backend`'s mutating
/// methods. The journal stores these (as `JournalOp`); the crash recorder
/// logs them. Paths are relative to the backing root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mutation {
    Write {
        path: PathBuf,
        offset: u64,
        data: Vec<u8>,
    },
    /// A `Write` of `len` bytes of the store's known content
    /// (`Backend::known_content`) at `offset`, without the bytes: made only
    /// for a store that keeps no journal payload (`WriteRun::into_op`), so
    /// the journal never encodes one into a log that keeps payloads, and
    /// decoding never gives one.
    WriteKnown {
        path: PathBuf,
        offset: u64,
        len: u64,
    },
    SetLen {
        path: PathBuf,
        size: u64,
    },
    /// A regular file is create-or-truncate; other kinds must not exist.
    Create {
        path: PathBuf,
        kind: FileKind,
        perm: u32,
        rdev: u32,
    },
    Symlink {
        path: PathBuf,
        target: OsString,
    },
    Link {
        existing: PathBuf,
        new: PathBuf,
    },
    RemoveFile {
        path: PathBuf,
    },
    RemoveDir {
        path: PathBuf,
    },
    /// `rename(2)`, replacing the target.
    Rename {
        from: PathBuf,
        to: PathBuf,
    },
    SetOwner {
        path: PathBuf,
        uid: u32,
        gid: u32,
    },
    SetPerm {
        path: PathBuf,
        perm: u32,
    },
    SetTimes {
        path: PathBuf,
        atime: SystemTime,
        mtime: SystemTime,
    },
    SetXattr {
        path: PathBuf,
        name: OsString,
        value: Vec<u8>,
    },
    RemoveXattr {
        path: PathBuf,
        name: OsString,
    },
    /// `fallocate(2)` of bytes `offset..offset+len` (see `FallocMode`).
    Fallocate {
        path: PathBuf,
        mode: FallocMode,
        offset: u64,
        len: u64,
    },
}

impl Mutation {
    /// Makes this change on `to`.
    pub fn apply(&self, to: &dyn Backend) -> io::Result<()> {
        match self {
            Mutation::Write { path, offset, data } => to.write_at(path, *offset, data),
            Mutation::WriteKnown { path, offset, len } => to.write_known_at(path, *offset, *len),
            Mutation::SetLen { path, size } => to.set_len(path, *size),
            Mutation::Create { path, kind, perm, rdev } => to.create(path, *kind, *perm, *rdev),
            Mutation::Symlink { target, path } => to.symlink(target, path),
            Mutation::Link { existing, new } => to.link(existing, new),
            Mutation::RemoveFile { path } => to.remove_file(path),
            Mutation::RemoveDir { path } => to.remove_dir(path),
            Mutation::Rename { from, to: dest } => to.rename(from, dest),
            Mutation::SetOwner { path, uid, gid } => to.set_owner(path, *uid, *gid),
            Mutation::SetPerm { path, perm } => to.set_perm(path, *perm),
            Mutation::SetTimes { path, atime, mtime } => to.set_times(path, *atime, *mtime),
            Mutation::SetXattr { path, name, value } => to.set_xattr(path, name, value),
            Mutation::RemoveXattr { path, name } => to.remove_xattr(path, name),
            Mutation::Fallocate { path, mode, offset, len } => to.fallocate(path, *mode, *offset, *len),
        }
    }

    /// Namespace ops add, remove or move names; they are applied one at a
    /// time behind a durable progress record. The others change the object a
    /// name refers to and may be replayed as a run.
    pub fn is_namespace(&self) -> bool {
        matches!(
            self,
            Mutation::Create { .. }
                | Mutation::Symlink { .. }
                | Mutation::Link { .. }
                | Mutation::RemoveFile { .. }
                | Mutation::RemoveDir { .. }
                | Mutation::Rename { .. }
        )
    }

    /// File data this op writes in place.
    pub fn data_len(&self) -> u64 {
        self.written().map_or(0, |(_, offset, end)| end - offset)
    }

    /// The file a write (`Write` or `WriteKnown`) writes and its byte range
    /// `offset..end`; `None` for other ops.
    pub fn written(&self) -> Option<(&Path, u64, u64)> {
        match self {
            Mutation::Write { path, offset, data } => Some((path, *offset, offset + data.len() as u64)),
            Mutation::WriteKnown { path, offset, len } => Some((path, *offset, offset + len)),
            _ => None,
        }
    }

    /// Makes bytes `start..end` of a write (within its range, `written`) on
    /// `to`: what this op does there; `EINVAL` for other ops.
    pub fn apply_part(&self, to: &dyn Backend, start: u64, end: u64) -> io::Result<()> {
        match self {
            Mutation::Write { path, offset, data } => {
                to.write_at(path, start, &data[(start - offset) as usize..(end - offset) as usize])
            }
            Mutation::WriteKnown { path, .. } => to.write_known_at(path, start, end - start),
            _ => Err(io::Error::from_raw_os_error(libc::EINVAL)),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Mutation::Write { .. } | Mutation::WriteKnown { .. } => "write",
            Mutation::SetLen { .. } => "truncate",
            Mutation::Create { .. } => "create",
            Mutation::Symlink { .. } => "symlink",
            Mutation::Link { .. } => "link",
            Mutation::RemoveFile { .. } => "unlink",
            Mutation::RemoveDir { .. } => "rmdir",
            Mutation::Rename { .. } => "rename",
            Mutation::SetOwner { .. } => "chown",
            Mutation::SetPerm { .. } => "chmod",
            Mutation::SetTimes { .. } => "utimens",
            Mutation::SetXattr { .. } => "setxattr",
            Mutation::RemoveXattr { .. } => "removexattr",
            Mutation::Fallocate { mode, .. } => match mode {
                FallocMode::Allocate { .. } => "fallocate",
                FallocMode::PunchHole => "punch-hole",
                FallocMode::ZeroRange { .. } => "zero-range",
            },
        }
    }
}

impl fmt::Display for Mutation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.name();
        match self {
            Mutation::Write { path, offset, .. } | Mutation::WriteKnown { path, offset, .. } => {
                write!(f, "{name} {} @{offset}+{}", path.display(), self.data_len())
            }
            Mutation::SetLen { path, size } => write!(f, "{name} {} to {size}", path.display()),
            Mutation::Fallocate { path, offset, len, .. } => write!(f, "{name} {} @{offset}+{len}", path.display()),
            Mutation::Link { existing: a, new: b } | Mutation::Rename { from: a, to: b } => {
                write!(f, "{name} {} -> {}", a.display(), b.display())
            }
            Mutation::Create { path, .. }
            | Mutation::Symlink { path, .. }
            | Mutation::RemoveFile { path }
            | Mutation::RemoveDir { path }
            | Mutation::SetOwner { path, .. }
            | Mutation::SetPerm { path, .. }
            | Mutation::SetTimes { path, .. }
            | Mutation::SetXattr { path, .. }
            | Mutation::RemoveXattr { path, .. } => write!(f, "{name} {}", path.display()),
        }
    }
}
