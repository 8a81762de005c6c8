//! Backing attributes as the kernel takes them: `libc::stat` to `fuser::FileAttr`, and setattr's
//! times to utimensat's.
//!
//! Invariant: total functions; a time `SystemTime` cannot hold becomes the epoch, never a panic.

use fuser::{FileAttr, FileType, INodeNo, TimeOrNow};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub fn file_type(mode: u32) -> FileType {
    match mode & libc::S_IFMT {
        libc::S_IFDIR => FileType::Directory,
        libc::S_IFLNK => FileType::Symlink,
        libc::S_IFIFO => FileType::NamedPipe,
        libc::S_IFSOCK => FileType::Socket,
        libc::S_IFCHR => FileType::CharDevice,
        libc::S_IFBLK => FileType::BlockDevice,
        _ => FileType::RegularFile,
    }
}

fn system_time(secs: i64, nsecs: i64) -> SystemTime {
    let nanos = Duration::from_nanos(nsecs.clamp(0, 999_999_999) as u64);
    let base = if secs >= 0 {
        UNIX_EPOCH.checked_add(Duration::from_secs(secs as u64))
    } else {
        UNIX_EPOCH.checked_sub(Duration::from_secs(secs.unsigned_abs()))
    };
    base.and_then(|t| t.checked_add(nanos)).unwrap_or(UNIX_EPOCH)
}

/// The attributes of inode `ino` whose backing file has stat `st`.
pub fn file_attr(ino: u64, st: &libc::stat) -> FileAttr {
    FileAttr {
        ino: INodeNo(ino),
        size: st.st_size.max(0) as u64,
        blocks: st.st_blocks.max(0) as u64,
        atime: system_time(st.st_atime, st.st_atime_nsec),
        mtime: system_time(st.st_mtime, st.st_mtime_nsec),
        ctime: system_time(st.st_ctime, st.st_ctime_nsec),
        crtime: system_time(st.st_ctime, st.st_ctime_nsec),
        kind: file_type(st.st_mode),
        perm: (st.st_mode & 0o7777) as u16,
        nlink: u32::try_from(st.st_nlink).unwrap_or(u32::MAX),
        uid: st.st_uid,
        gid: st.st_gid,
        // The kernel's FUSE attributes hold the 32-bit new_encode_dev form, as the backing dev_t's low bits.
        rdev: st.st_rdev as u32,
        blksize: u32::try_from(st.st_blksize).unwrap_or(4096),
        flags: 0,
    }
}

/// One of setattr's times as utimensat takes it: absent leaves it, `Now` is the current time.
pub fn timespec(time: Option<TimeOrNow>) -> libc::timespec {
    let (tv_sec, tv_nsec) = match time {
        None => (0, libc::UTIME_OMIT),
        Some(TimeOrNow::Now) => (0, libc::UTIME_NOW),
        Some(TimeOrNow::SpecificTime(t)) => match t.duration_since(UNIX_EPOCH) {
            Ok(d) => (i64::try_from(d.as_secs()).unwrap_or(i64::MAX), i64::from(d.subsec_nanos())),
            Err(before) => {
                let d = before.duration();
                let secs = i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
                match d.subsec_nanos() {
                    0 => (-secs, 0),
                    n => (-secs - 1, 1_000_000_000 - i64::from(n)),
                }
            }
        },
    };
    libc::timespec { tv_sec, tv_nsec }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_round_trip_on_both_sides_of_the_epoch() {
        for (secs, nsecs) in [(0, 0), (1_700_000_000, 123), (-1, 500_000_000), (-100, 0)] {
            let t = system_time(secs, nsecs);
            let ts = timespec(Some(TimeOrNow::SpecificTime(t)));
            assert_eq!((ts.tv_sec, ts.tv_nsec), (secs, nsecs));
        }
        assert_eq!(timespec(None).tv_nsec, libc::UTIME_OMIT);
        assert_eq!(timespec(Some(TimeOrNow::Now)).tv_nsec, libc::UTIME_NOW);
        // Extremes neither panic nor overflow on the way back.
        let oldest = system_time(i64::MIN, -5);
        assert!(oldest <= UNIX_EPOCH);
        assert!(timespec(Some(TimeOrNow::SpecificTime(oldest))).tv_sec < 0);
        assert!(system_time(i64::MAX, 999_999_999) >= UNIX_EPOCH);
    }

    #[test]
    fn kinds_follow_the_mode() {
        assert_eq!(file_type(libc::S_IFDIR | 0o755), FileType::Directory);
        assert_eq!(file_type(libc::S_IFLNK | 0o777), FileType::Symlink);
        assert_eq!(file_type(libc::S_IFREG | 0o644), FileType::RegularFile);
        // SAFETY: all-zero is a valid stat.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        (st.st_mode, st.st_size, st.st_nlink) = (libc::S_IFREG | 0o4755, 42, 3);
        let a = file_attr(7, &st);
        assert_eq!((a.ino, a.size, a.perm, a.nlink), (INodeNo(7), 42, 0o4755, 3));
    }
}
