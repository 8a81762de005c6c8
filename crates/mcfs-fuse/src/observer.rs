//! A hook for watching what the mount serves, e.g. to record a trace of a
//! live mount (`mcfs mount --record`). The adapter tells an observer about
//! each file operation the engine carried out: after the engine call
//! succeeded and before the reply reaches the kernel, so an operation that
//! a program issues only after another one returned is always told later.
//!
//! Invariant: observing never changes what a request does or answers. The
//! observer gets inode numbers and names, not paths: it resolves them
//! itself (`Engine::path_of`) only if it needs them, so a mount without an
//! observer pays nothing.

use mcfs_core::{Caller, Ino};
use std::ffi::OsStr;

/// One operation the engine served. A `name` is an entry of the directory
/// inode `parent`; entries named by an operation that removes or moves them
/// are given as they were before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServedOp<'a> {
    /// An existing file was opened (an `O_TRUNC` follows as a `Truncate`).
    Open {
        ino: Ino,
    },
    /// A file was created and opened (`O_CREAT`); `truncated` if `O_TRUNC` was asked.
    Create {
        ino: Ino,
        truncated: bool,
    },
    /// `len` bytes were read (fewer than asked at the end of the file).
    Read {
        ino: Ino,
        offset: u64,
        len: u64,
    },
    Write {
        ino: Ino,
        offset: u64,
        len: u64,
    },
    /// `fsync`, or `fdatasync` when `datasync`.
    Fsync {
        ino: Ino,
        datasync: bool,
    },
    /// The file's size was set (`truncate`, `ftruncate`).
    Truncate {
        ino: Ino,
        size: u64,
    },
    Unlink {
        parent: Ino,
        name: &'a OsStr,
    },
    /// `exchange`: both names swapped places (`RENAME_EXCHANGE`).
    Rename {
        parent: Ino,
        name: &'a OsStr,
        new_parent: Ino,
        new_name: &'a OsStr,
        exchange: bool,
    },
    /// `new_name` in `new_parent` became another name of the file `ino` (a hard link).
    Link {
        ino: Ino,
        new_parent: Ino,
        new_name: &'a OsStr,
    },
    Mkdir {
        ino: Ino,
    },
    Rmdir {
        parent: Ino,
        name: &'a OsStr,
    },
    /// A descriptor of the file was closed (`close(2)`, FUSE flush: one per
    /// descriptor, so a `dup`ed one closes twice).
    Close {
        ino: Ino,
    },
}

/// Something told about every operation a mount serves. Called on the
/// threads serving requests, so it must be quick and must not block on
/// anything a request could be waiting for.
pub trait RequestObserver: Send + Sync {
    /// `caller` is `None` for writes the kernel flushes from its page cache
    /// on nobody's behalf.
    fn served(&self, caller: Option<Caller>, op: ServedOp<'_>);
}
