//! What a backing store refuses, so the engine refuses it when the app calls
//! instead of accepting it in memory and failing every checkpoint later:
//! the largest file, the most hard links, the longest name and symlink
//! target (`BackendLimits`, from `Backend::limits`, learned once). Extended
//! attributes are checked as a whole set per object (`Backend::check_xattrs`):
//! how many fit in one inode depends on the file system's layout.

use crate::types::{Errno, FsResult};
use std::ffi::OsStr;
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BackendLimits {
    /// Largest size of a regular file (`EFBIG` beyond).
    pub max_file_size: u64,
    /// Most names a non-directory may have (`EMLINK` beyond).
    pub link_max: u32,
    /// Longest name of a directory entry, in bytes (`ENAMETOOLONG` beyond).
    pub name_max: u32,
    /// Longest symlink target, in bytes (`ENAMETOOLONG` beyond).
    pub symlink_max: u32,
}

impl BackendLimits {
    /// ext4 with 4 KiB blocks (extents): what a `MemBackend` keeps unless told otherwise.
    pub const EXT4: BackendLimits =
        BackendLimits { max_file_size: (1 << 44) - 4096, link_max: 65_000, name_max: 255, symlink_max: 4095 };

    /// `ENAMETOOLONG` for a name the backing store cannot hold.
    pub fn check_name(&self, name: &OsStr) -> FsResult<()> {
        fits(name.len(), self.name_max, Errno::ENAMETOOLONG)
    }

    /// `ENAMETOOLONG` for a symlink target the backing store cannot hold.
    pub fn check_symlink_target(&self, target: &OsStr) -> FsResult<()> {
        fits(target.len(), self.symlink_max, Errno::ENAMETOOLONG)
    }

    /// `EFBIG` for a file size the backing store cannot hold.
    pub fn check_size(&self, size: u64) -> FsResult<()> {
        if size > self.max_file_size {
            return Err(Errno::EFBIG);
        }
        Ok(())
    }

    /// `EMLINK` if a file with `nlink` names may not get one more.
    pub fn check_new_link(&self, nlink: u32) -> FsResult<()> {
        if nlink >= self.link_max {
            return Err(Errno::EMLINK);
        }
        Ok(())
    }

    /// How many of `len` bytes written at `offset` fit below the largest
    /// size: all of them, or those up to it (a short write, as Linux does);
    /// `EFBIG` when none does.
    pub fn writable(&self, offset: u64, len: usize) -> FsResult<usize> {
        if len > 0 && offset >= self.max_file_size {
            return Err(Errno::EFBIG);
        }
        Ok((self.max_file_size - offset.min(self.max_file_size)).min(len as u64) as usize)
    }
}

fn fits(len: usize, max: u32, errno: Errno) -> FsResult<()> {
    if len > max as usize {
        return Err(errno);
    }
    Ok(())
}

impl fmt::Display for BackendLimits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "largest file {} bytes, {} links, names of {} bytes, symlink targets of {} bytes",
            self.max_file_size, self.link_max, self.name_max, self.symlink_max
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_limit_refuses_one_past_it_with_the_errno_of_linux() {
        let l = BackendLimits { max_file_size: 100, link_max: 3, name_max: 4, symlink_max: 5 };
        assert_eq!(l.check_name(OsStr::new("abcd")), Ok(()));
        assert_eq!(l.check_name(OsStr::new("abcde")), Err(Errno::ENAMETOOLONG));
        assert_eq!(l.check_symlink_target(OsStr::new("a/b/c")), Ok(()));
        assert_eq!(l.check_symlink_target(OsStr::new("a/b/cd")), Err(Errno::ENAMETOOLONG));
        assert_eq!(l.check_size(100), Ok(()));
        assert_eq!(l.check_size(101), Err(Errno::EFBIG));
        assert_eq!(l.check_new_link(2), Ok(()));
        assert_eq!(l.check_new_link(3), Err(Errno::EMLINK));
    }

    #[test]
    fn a_write_across_the_largest_size_is_cut_short_and_one_beyond_it_fails() {
        let l = BackendLimits { max_file_size: 100, ..BackendLimits::EXT4 };
        assert_eq!(l.writable(0, 100), Ok(100));
        assert_eq!(l.writable(90, 20), Ok(10));
        assert_eq!(l.writable(100, 1), Err(Errno::EFBIG));
        assert_eq!(l.writable(u64::MAX, 1), Err(Errno::EFBIG));
        assert_eq!(l.writable(500, 0), Ok(0), "an empty write never fails");
    }
}
