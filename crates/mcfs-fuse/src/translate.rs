//! Pure translations between what the kernel sends (through fuser) and what
//! the engine takes or returns: errno, attributes, file kinds, mode bits,
//! setattr, rename and xattr flags, xattr reply sizing.
//!
//! Invariant: nothing here trusts kernel-supplied values — every input maps
//! to a value or to an errno, never to a panic.

use fuser::{FileAttr, FileType, INodeNo, RenameFlags, Request, TimeOrNow, WriteFlags};
use mcfs_core::{Attr, Caller, Errno, FileKind, NewPerm, Piece, RenameMode, SetAttr, SetTime, XattrMode, PAGE_SIZE};
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::time::SystemTime;

/// Permission bits of a mode: set-uid, set-gid, sticky and rwx (no `S_IFMT`).
const PERM_MASK: u32 = 0o7777;

pub(crate) fn errno(e: Errno) -> fuser::Errno {
    // `from_i32` turns a zero or negative code into EIO rather than panicking.
    fuser::Errno::from_i32(e.0)
}

pub(crate) fn caller(req: &Request) -> Caller {
    Caller { uid: req.uid(), gid: req.gid(), pid: req.pid() }
}

/// Whether the kernel may send more of the same `write(2)` right after a
/// write request for `len` bytes at `offset`. It ends a request of a
/// buffered write early only on a page boundary: after the partial first
/// page (or folio) of an unaligned write when it does not hold that page,
/// and after `max_pages` pages (`max_write` is that many pages). So a request
/// that ends elsewhere, or starts aligned and spans fewer pages, is the last.
pub(crate) fn write_piece(offset: u64, len: usize, max_pages: u64) -> Piece {
    let end = offset.saturating_add(len as u64);
    let pages = end.div_ceil(PAGE_SIZE) - offset / PAGE_SIZE;
    let split_there = end.is_multiple_of(PAGE_SIZE) && (!offset.is_multiple_of(PAGE_SIZE) || pages >= max_pages);
    if len > 0 && split_there {
        Piece::MayContinue
    } else {
        Piece::Last
    }
}

/// A write from the kernel's page cache (writeback of a mmap'ed or cached
/// page) carries the uid/pid of whoever happened to trigger it, not of the
/// writer: it has no meaningful caller and the engine charges the file's app.
pub(crate) fn write_caller(caller: Caller, flags: WriteFlags) -> Option<Caller> {
    (!flags.contains(WriteFlags::FUSE_WRITE_CACHE)).then_some(caller)
}

pub(crate) fn file_type(kind: FileKind) -> FileType {
    match kind {
        FileKind::File => FileType::RegularFile,
        FileKind::Dir => FileType::Directory,
        FileKind::Symlink => FileType::Symlink,
        FileKind::Fifo => FileType::NamedPipe,
        FileKind::Socket => FileType::Socket,
        FileKind::CharDev => FileType::CharDevice,
        FileKind::BlockDev => FileType::BlockDevice,
    }
}

pub(crate) fn file_attr(a: &Attr) -> FileAttr {
    FileAttr {
        ino: INodeNo(a.ino),
        size: a.size,
        blocks: a.blocks,
        atime: a.atime,
        mtime: a.mtime,
        ctime: a.ctime,
        crtime: a.ctime,
        kind: file_type(a.kind),
        perm: (a.perm & PERM_MASK) as u16,
        nlink: a.nlink,
        uid: a.uid,
        gid: a.gid,
        rdev: a.rdev,
        blksize: PAGE_SIZE as u32,
        flags: 0,
    }
}

/// The attributes of a negative entry: inode 0 tells the kernel the name
/// does not exist (the rest is ignored).
pub(crate) fn negative_entry() -> FileAttr {
    FileAttr {
        ino: INodeNo(0),
        size: 0,
        blocks: 0,
        atime: SystemTime::UNIX_EPOCH,
        mtime: SystemTime::UNIX_EPOCH,
        ctime: SystemTime::UNIX_EPOCH,
        crtime: SystemTime::UNIX_EPOCH,
        kind: FileType::RegularFile,
        perm: 0,
        nlink: 0,
        uid: 0,
        gid: 0,
        rdev: 0,
        blksize: PAGE_SIZE as u32,
        flags: 0,
    }
}

/// Permission bits for a new object, and the umask the engine applies
/// unless the object inherits a default ACL (`FUSE_DONT_MASK`: the kernel
/// leaves both to us). A kernel without `FUSE_DONT_MASK` has applied the
/// umask to `mode` already; applying it again changes nothing.
pub(crate) fn new_perm(mode: u32, umask: u32) -> NewPerm {
    NewPerm { perm: mode & PERM_MASK, umask: umask & 0o777 }
}

/// The kind `mknod(2)` asks for. A zero file type means a regular file, as in
/// `mknod(2)`; directories and symlinks have their own calls.
pub(crate) fn mknod_kind(mode: u32) -> Result<FileKind, Errno> {
    if mode & libc::S_IFMT == 0 {
        return Ok(FileKind::File);
    }
    match FileKind::from_mode(mode) {
        Some(FileKind::Dir | FileKind::Symlink) | None => Err(Errno::EINVAL),
        Some(kind) => Ok(kind),
    }
}

/// `renameat2` flags: none, NOREPLACE, EXCHANGE, WHITEOUT, or WHITEOUT with
/// NOREPLACE. EXCHANGE with anything else and unknown bits are refused (the
/// kernel refuses them before they get here).
pub(crate) fn rename_mode(flags: RenameFlags) -> Result<RenameMode, Errno> {
    let whiteout_noreplace = RenameFlags::RENAME_WHITEOUT | RenameFlags::RENAME_NOREPLACE;
    if flags.is_empty() {
        Ok(RenameMode::Replace)
    } else if flags == RenameFlags::RENAME_NOREPLACE {
        Ok(RenameMode::NoReplace)
    } else if flags == RenameFlags::RENAME_EXCHANGE {
        Ok(RenameMode::Exchange)
    } else if flags == RenameFlags::RENAME_WHITEOUT {
        Ok(RenameMode::Whiteout)
    } else if flags == whiteout_noreplace {
        Ok(RenameMode::WhiteoutNoReplace)
    } else {
        Err(Errno::EINVAL)
    }
}

fn set_time(t: TimeOrNow) -> SetTime {
    match t {
        TimeOrNow::SpecificTime(at) => SetTime::At(at),
        TimeOrNow::Now => SetTime::Now,
    }
}

/// A kernel setattr as an engine `SetAttr`. The kernel's ctime is dropped:
/// the engine sets ctime itself on every change (the kernel only sends one
/// with writeback cache, which we do not enable).
pub(crate) fn set_attr(
    mode: Option<u32>,
    uid: Option<u32>,
    gid: Option<u32>,
    size: Option<u64>,
    atime: Option<TimeOrNow>,
    mtime: Option<TimeOrNow>,
) -> SetAttr {
    SetAttr {
        perm: mode.map(|m| m & PERM_MASK),
        uid,
        gid,
        size,
        atime: atime.map(set_time),
        mtime: mtime.map(set_time),
    }
}

/// What an `open` with `O_TRUNC` does to an existing file: empty it and mark
/// it modified even if it was empty already (POSIX `open`).
pub(crate) fn open_truncation() -> SetAttr {
    SetAttr { size: Some(0), mtime: Some(SetTime::Now), ..SetAttr::default() }
}

pub(crate) fn truncates(open_flags: i32) -> bool {
    open_flags & libc::O_TRUNC != 0
}

pub(crate) fn exclusive(open_flags: i32) -> bool {
    open_flags & libc::O_EXCL != 0
}

/// `setxattr` flags: XATTR_CREATE, XATTR_REPLACE or neither.
pub(crate) fn xattr_mode(flags: i32) -> Result<XattrMode, Errno> {
    match flags {
        0 => Ok(XattrMode::Any),
        libc::XATTR_CREATE => Ok(XattrMode::CreateOnly),
        libc::XATTR_REPLACE => Ok(XattrMode::ReplaceOnly),
        _ => Err(Errno::EINVAL),
    }
}

/// The answer to a getxattr/listxattr of a caller buffer of `size` bytes.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum XattrReply<'a> {
    /// `size == 0` is a probe: report the length only.
    Size(u32),
    Data(&'a [u8]),
}

pub(crate) fn xattr_reply(value: &[u8], size: u32) -> Result<XattrReply<'_>, Errno> {
    let len = u32::try_from(value.len()).map_err(|_| Errno(libc::E2BIG))?;
    if size == 0 {
        Ok(XattrReply::Size(len))
    } else if len > size {
        Err(Errno::ERANGE)
    } else {
        Ok(XattrReply::Data(value))
    }
}

/// The listxattr wire format: every name followed by a NUL.
pub(crate) fn xattr_name_list(names: &[OsString]) -> Vec<u8> {
    let mut out = Vec::with_capacity(names.iter().map(|n| n.len() + 1).sum());
    for name in names {
        out.extend_from_slice(name.as_bytes());
        out.push(0);
    }
    out
}

/// Whether `caller` is in group `gid`: its own group or, read from
/// `/proc/PID/status` only when that is not it, one of its supplementary
/// groups (a process gone meanwhile is in none).
pub(crate) fn in_group(caller: Caller, gid: u32) -> bool {
    caller.gid == gid
        || std::fs::read_to_string(format!("/proc/{}/status", caller.pid)).is_ok_and(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("Groups:"))
                .is_some_and(|groups| groups.split_whitespace().any(|g| g.parse() == Ok(gid)))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    #[test]
    fn errno_passes_the_code_through_and_never_panics() {
        assert_eq!(errno(Errno::ENOENT), fuser::Errno::ENOENT);
        assert_eq!(errno(Errno::ENOTEMPTY), fuser::Errno::ENOTEMPTY);
        assert_eq!(errno(Errno::ENOTSUP), fuser::Errno::EOPNOTSUPP);
        assert_eq!(errno(Errno(0)), fuser::Errno::EIO);
        assert_eq!(errno(Errno(-5)), fuser::Errno::EIO);
    }

    /// The requests the kernel (6.18, measured with `mcfs mount --record`)
    /// made of pwrite(100 B at 4050), pwrite(1 MiB at 100) and
    /// pwrite(1 MiB at 4096 × 300), with 256 pages per request.
    #[test]
    fn write_pieces_the_kernel_may_continue_are_marked() {
        let piece = |offset, len| write_piece(offset, len, 256);
        assert_eq!(piece(4050, 46), Piece::MayContinue, "first page of an unaligned write");
        assert_eq!(piece(4096, 54), Piece::Last);
        assert_eq!(piece(100, 3996), Piece::MayContinue);
        assert_eq!(piece(4096, 1_044_580), Piece::Last, "ends inside a page");
        assert_eq!(piece(4096 * 300, 1 << 20), Piece::MayContinue, "a full request of 256 pages");
        assert_eq!(piece(0, 4096), Piece::Last, "an aligned page is a whole write(2)");
        assert_eq!(piece(8192, 8192), Piece::Last);
        assert_eq!(piece(4096, 0), Piece::Last);
        assert_eq!(write_piece(0, 8192, 2), Piece::MayContinue, "max_pages pages");
        assert_eq!(piece(u64::MAX - 10, 100), Piece::Last, "no overflow");
    }

    #[test]
    fn rename_flags_map_to_modes_and_others_are_refused() {
        assert_eq!(rename_mode(RenameFlags::empty()), Ok(RenameMode::Replace));
        assert_eq!(rename_mode(RenameFlags::RENAME_NOREPLACE), Ok(RenameMode::NoReplace));
        assert_eq!(rename_mode(RenameFlags::RENAME_EXCHANGE), Ok(RenameMode::Exchange));
        assert_eq!(rename_mode(RenameFlags::RENAME_WHITEOUT), Ok(RenameMode::Whiteout));
        let whiteout_noreplace = RenameFlags::RENAME_WHITEOUT | RenameFlags::RENAME_NOREPLACE;
        assert_eq!(rename_mode(whiteout_noreplace), Ok(RenameMode::WhiteoutNoReplace));
        let whiteout_exchange = RenameFlags::RENAME_WHITEOUT | RenameFlags::RENAME_EXCHANGE;
        assert_eq!(rename_mode(whiteout_exchange), Err(Errno::EINVAL));
        let both = RenameFlags::RENAME_NOREPLACE | RenameFlags::RENAME_EXCHANGE;
        assert_eq!(rename_mode(both), Err(Errno::EINVAL));
        assert_eq!(rename_mode(RenameFlags::from_bits_retain(1 << 7)), Err(Errno::EINVAL));
        let noreplace_and_unknown = RenameFlags::from_bits_retain(libc::RENAME_NOREPLACE | 1 << 7);
        assert_eq!(rename_mode(noreplace_and_unknown), Err(Errno::EINVAL));
    }

    #[test]
    fn setattr_keeps_only_what_the_kernel_set_and_strips_the_file_type() {
        let at = SystemTime::UNIX_EPOCH + Duration::new(1_000_000, 5);
        let set = set_attr(
            Some(libc::S_IFREG | 0o4755),
            None,
            Some(42),
            Some(7),
            Some(TimeOrNow::SpecificTime(at)),
            Some(TimeOrNow::Now),
        );
        assert_eq!(
            set,
            SetAttr {
                perm: Some(0o4755),
                uid: None,
                gid: Some(42),
                size: Some(7),
                atime: Some(SetTime::At(at)),
                mtime: Some(SetTime::Now),
            }
        );
        assert_eq!(set_attr(None, None, None, None, None, None), SetAttr::default());
    }

    #[test]
    fn open_truncation_empties_and_touches_mtime() {
        let t = open_truncation();
        assert_eq!(t.size, Some(0));
        assert_eq!(t.mtime, Some(SetTime::Now));
        assert_eq!((t.perm, t.uid, t.gid, t.atime), (None, None, None, None));
        assert!(truncates(libc::O_WRONLY | libc::O_TRUNC));
        assert!(!truncates(libc::O_RDWR | libc::O_APPEND));
        assert!(exclusive(libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY));
        assert!(!exclusive(libc::O_CREAT | libc::O_WRONLY));
    }

    #[test]
    fn new_objects_carry_their_mode_bits_and_the_umask_to_the_engine() {
        assert_eq!(new_perm(0o777, 0o022), NewPerm { perm: 0o777, umask: 0o022 });
        assert_eq!(new_perm(libc::S_IFREG | 0o1666, 0o077), NewPerm { perm: 0o1666, umask: 0o077 });
        assert_eq!(new_perm(0o755, 0o7022), NewPerm { perm: 0o755, umask: 0o022 }, "a umask has rwx bits only");
    }

    #[test]
    fn mknod_accepts_files_and_special_nodes_only() {
        assert_eq!(mknod_kind(libc::S_IFREG | 0o644), Ok(FileKind::File));
        assert_eq!(mknod_kind(0o644), Ok(FileKind::File));
        assert_eq!(mknod_kind(libc::S_IFIFO | 0o600), Ok(FileKind::Fifo));
        assert_eq!(mknod_kind(libc::S_IFSOCK), Ok(FileKind::Socket));
        assert_eq!(mknod_kind(libc::S_IFCHR), Ok(FileKind::CharDev));
        assert_eq!(mknod_kind(libc::S_IFBLK), Ok(FileKind::BlockDev));
        assert_eq!(mknod_kind(libc::S_IFDIR | 0o755), Err(Errno::EINVAL));
        assert_eq!(mknod_kind(libc::S_IFLNK | 0o777), Err(Errno::EINVAL));
        assert_eq!(mknod_kind(0o170000), Err(Errno::EINVAL));
    }

    #[test]
    fn attr_translation_keeps_every_field() {
        let t = |s| SystemTime::UNIX_EPOCH + Duration::from_secs(s);
        let a = Attr {
            ino: 9,
            kind: FileKind::CharDev,
            perm: 0o2640,
            nlink: 3,
            uid: 1000,
            gid: 100,
            size: 4097,
            rdev: 0x0103,
            atime: t(1),
            mtime: t(2),
            ctime: t(3),
            blocks: 8,
        };
        let f = file_attr(&a);
        assert_eq!(f.ino, INodeNo(9));
        assert_eq!(f.kind, FileType::CharDevice);
        assert_eq!(f.perm, 0o2640);
        assert_eq!((f.nlink, f.uid, f.gid, f.rdev), (3, 1000, 100, 0x0103));
        assert_eq!((f.size, f.blocks), (4097, 8), "blocks as allocated, not as the size would need");
        assert_eq!((f.atime, f.mtime, f.ctime), (t(1), t(2), t(3)));
        assert_eq!(f.blksize, 4096);
    }

    #[test]
    fn every_kind_has_its_fuse_type() {
        let kinds = [
            (FileKind::File, FileType::RegularFile),
            (FileKind::Dir, FileType::Directory),
            (FileKind::Symlink, FileType::Symlink),
            (FileKind::Fifo, FileType::NamedPipe),
            (FileKind::Socket, FileType::Socket),
            (FileKind::CharDev, FileType::CharDevice),
            (FileKind::BlockDev, FileType::BlockDevice),
        ];
        for (kind, ty) in kinds {
            assert_eq!(file_type(kind), ty);
        }
    }

    #[test]
    fn xattr_flags() {
        assert_eq!(xattr_mode(0), Ok(XattrMode::Any));
        assert_eq!(xattr_mode(libc::XATTR_CREATE), Ok(XattrMode::CreateOnly));
        assert_eq!(xattr_mode(libc::XATTR_REPLACE), Ok(XattrMode::ReplaceOnly));
        assert_eq!(xattr_mode(libc::XATTR_CREATE | libc::XATTR_REPLACE), Err(Errno::EINVAL));
        assert_eq!(xattr_mode(0x100), Err(Errno::EINVAL));
    }

    #[test]
    fn xattr_size_probe_fit_and_erange() {
        let value = b"hello";
        assert_eq!(xattr_reply(value, 0), Ok(XattrReply::Size(5)));
        assert_eq!(xattr_reply(value, 5), Ok(XattrReply::Data(&value[..])));
        assert_eq!(xattr_reply(value, 64), Ok(XattrReply::Data(&value[..])));
        assert_eq!(xattr_reply(value, 4), Err(Errno::ERANGE));
        assert_eq!(xattr_reply(b"", 0), Ok(XattrReply::Size(0)));
        assert_eq!(xattr_reply(b"", 1), Ok(XattrReply::Data(&b""[..])));
    }

    #[test]
    fn xattr_names_are_nul_terminated() {
        let names = [OsString::from("user.a"), OsString::from("security.bb")];
        assert_eq!(xattr_name_list(&names), b"user.a\0security.bb\0".to_vec());
        assert!(xattr_name_list(&[]).is_empty());
    }
}
