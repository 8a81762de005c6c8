//! Directory streams: an open directory's entries, read from the backing directory when the kernel
//! reads from offset 0 (at the start, and after a rewinddir) and served from that listing after, so
//! that the offsets the kernel keeps stay meaningful while names come and go.
//!
//! Invariant: entry `i` of a listing has offset `i + 1`, and a read from offset `k` resumes at entry
//! `k`; "." and ".." come first.

use crate::inodes::Inodes;
use crate::sys;
use fuser::FileType;
use parking_lot::Mutex;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::fs::DirEntryExt;
use std::sync::Arc;

pub struct DirItem {
    pub name: OsString,
    pub ino: u64,
    pub kind: FileType,
}

/// An open directory: its descriptor and the listing being read.
pub struct OpenDir {
    fd: Arc<OwnedFd>,
    items: Mutex<Vec<DirItem>>,
}

impl OpenDir {
    pub fn new(fd: Arc<OwnedFd>) -> OpenDir {
        OpenDir { fd, items: Mutex::new(Vec::new()) }
    }

    /// Calls `add(item, offset_of_next)` for the entries from `offset` on, until it returns true
    /// (the reply is full).
    pub fn read(&self, inodes: &Inodes, offset: u64, mut add: impl FnMut(&DirItem, u64) -> bool) -> io::Result<()> {
        let mut items = self.items.lock();
        if offset == 0 {
            *items = list(&self.fd, inodes)?;
        }
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        for (i, item) in items.iter().enumerate().skip(start) {
            if add(item, i as u64 + 1) {
                break;
            }
        }
        Ok(())
    }
}

/// The entries of the directory `dir` holds, "." and ".." first.
fn list(dir: &OwnedFd, inodes: &Inodes) -> io::Result<Vec<DirItem>> {
    let own = sys::stat_fd(dir.as_fd())?;
    let parent = sys::open_path_at(dir.as_fd(), OsStr::new("..")).and_then(|p| sys::stat_fd(p.as_fd()))?;
    let mut items = vec![
        DirItem { name: ".".into(), ino: inodes.listed_ino(own.st_dev, own.st_ino), kind: FileType::Directory },
        DirItem { name: "..".into(), ino: inodes.listed_ino(parent.st_dev, parent.st_ino), kind: FileType::Directory },
    ];
    for entry in std::fs::read_dir(format!("/proc/self/fd/{}", dir.as_raw_fd()))? {
        let entry = entry?;
        // The file type comes from the listing itself (d_type) where the backing fs gives it.
        let kind = entry.file_type().ok().and_then(FileType::from_std).unwrap_or(FileType::RegularFile);
        items.push(DirItem { ino: inodes.listed_ino(own.st_dev, entry.ino()), name: entry.file_name(), kind });
    }
    Ok(items)
}
