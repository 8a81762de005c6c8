//! Decoding FUSE requests from kernel bytes into `Request`: the in-header,
//! then the op's fixed struct and its variable part (names, data). The
//! ring delivers these in three buffers (header, `op_in`, payload), a
//! `/dev/fuse` read in one; `Request::decode` takes the three parts and
//! `Request::from_dev` splits a read first.
//!
//! Invariant: no input panics; a short or badly terminated request is a
//! `Malformed` error (answered EIO when its header could be read).

use super::abi::{op_struct_size, opcode, Fields, Malformed, IN_HEADER_SIZE};
use fuser::TimeOrNow;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// `fuse_in_header`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InHeader {
    pub len: u32,
    pub opcode: u32,
    pub unique: u64,
    pub nodeid: u64,
    pub uid: u32,
    pub gid: u32,
    pub pid: u32,
}

impl InHeader {
    pub fn parse(bytes: &[u8]) -> Result<InHeader, Malformed> {
        let mut f = Fields::new(bytes, "in header");
        Ok(InHeader {
            len: f.u32()?,
            opcode: f.u32()?,
            unique: f.u64()?,
            nodeid: f.u64()?,
            uid: f.u32()?,
            gid: f.u32()?,
            pid: f.u32()?,
        })
    }
}

/// One decoded request: its header and its operation.
#[derive(Debug, PartialEq)]
pub struct Request<'a> {
    pub header: InHeader,
    pub op: Op<'a>,
}

/// The attributes a `setattr` changes (`fuse_setattr_in`, only what is valid).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SetattrIn {
    pub mode: Option<u32>,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub size: Option<u64>,
    pub atime: Option<TimeOrNow>,
    pub mtime: Option<TimeOrNow>,
}

/// The operations this transport decodes; any other opcode is `Unsupported`.
#[derive(Debug, PartialEq)]
pub enum Op<'a> {
    Lookup {
        name: &'a OsStr,
    },
    Forget {
        nlookup: u64,
    },
    /// `(nodeid, nlookup)` pairs, 16 bytes each.
    BatchForget {
        forgets: &'a [u8],
    },
    Getattr,
    Setattr(SetattrIn),
    Readlink,
    Symlink {
        name: &'a OsStr,
        target: &'a OsStr,
    },
    Mknod {
        name: &'a OsStr,
        mode: u32,
        rdev: u32,
        umask: u32,
    },
    Mkdir {
        name: &'a OsStr,
        mode: u32,
        umask: u32,
    },
    Unlink {
        name: &'a OsStr,
    },
    Rmdir {
        name: &'a OsStr,
    },
    Rename {
        newdir: u64,
        name: &'a OsStr,
        newname: &'a OsStr,
        flags: u32,
    },
    Link {
        oldnodeid: u64,
        newname: &'a OsStr,
    },
    Open {
        flags: u32,
    },
    Read {
        fh: u64,
        offset: u64,
        size: u32,
    },
    Write {
        fh: u64,
        offset: u64,
        data: &'a [u8],
        write_flags: u32,
    },
    Statfs,
    Release {
        fh: u64,
    },
    Fsync {
        fh: u64,
        datasync: bool,
    },
    Setxattr {
        name: &'a OsStr,
        value: &'a [u8],
        flags: u32,
    },
    Getxattr {
        name: &'a OsStr,
        size: u32,
    },
    Listxattr {
        size: u32,
    },
    Removexattr {
        name: &'a OsStr,
    },
    Flush {
        fh: u64,
        lock_owner: u64,
    },
    Init,
    Opendir {
        flags: u32,
    },
    Readdir {
        fh: u64,
        offset: u64,
        size: u32,
    },
    Readdirplus {
        fh: u64,
        offset: u64,
        size: u32,
    },
    Releasedir {
        fh: u64,
    },
    Fsyncdir {
        fh: u64,
        datasync: bool,
    },
    Create {
        name: &'a OsStr,
        mode: u32,
        umask: u32,
        flags: u32,
    },
    Interrupt {
        unique: u64,
    },
    Destroy,
    Ioctl,
    Fallocate {
        fh: u64,
        offset: u64,
        length: u64,
        mode: u32,
    },
    Lseek {
        fh: u64,
        offset: i64,
        whence: u32,
    },
    Unsupported,
}

/// `fuse_setattr_in.valid` bits.
const FATTR_MODE: u32 = 1 << 0;
const FATTR_UID: u32 = 1 << 1;
const FATTR_GID: u32 = 1 << 2;
const FATTR_SIZE: u32 = 1 << 3;
const FATTR_ATIME: u32 = 1 << 4;
const FATTR_MTIME: u32 = 1 << 5;
const FATTR_ATIME_NOW: u32 = 1 << 7;
const FATTR_MTIME_NOW: u32 = 1 << 8;
/// `fuse_fsync_in.fsync_flags`: fdatasync.
const FUSE_FSYNC_FDATASYNC: u32 = 1;

impl<'a> Request<'a> {
    /// A request read whole from `/dev/fuse`: header, fixed struct, rest.
    pub fn from_dev(bytes: &'a [u8]) -> Result<Request<'a>, Malformed> {
        let header = InHeader::parse(bytes)?;
        let len = (header.len as usize).min(bytes.len());
        let args = bytes.get(IN_HEADER_SIZE..len).ok_or(Malformed("in header"))?;
        let (op_in, payload) = args.split_at(op_struct_size(header.opcode).min(args.len()));
        Request::decode(header, op_in, payload)
    }

    /// A request from its header, its op's fixed struct and its payload.
    pub fn decode(header: InHeader, op_in: &'a [u8], payload: &'a [u8]) -> Result<Request<'a>, Malformed> {
        let op = decode_op(header.opcode, op_in, payload)?;
        Ok(Request { header, op })
    }
}

fn decode_op<'a>(code: u32, op_in: &'a [u8], payload: &'a [u8]) -> Result<Op<'a>, Malformed> {
    let mut arg = Fields::new(op_in, "op struct");
    let mut rest = Fields::new(payload, "payload");
    let mut name = || rest_name(&mut rest);
    Ok(match code {
        opcode::LOOKUP => Op::Lookup { name: name()? },
        opcode::FORGET => Op::Forget { nlookup: arg.u64()? },
        opcode::BATCH_FORGET => {
            let count = arg.u32()? as usize;
            let forgets = rest.take(count.checked_mul(16).ok_or(Malformed("batch forget count"))?)?;
            Op::BatchForget { forgets }
        }
        opcode::GETATTR => Op::Getattr,
        opcode::SETATTR => Op::Setattr(setattr(&mut arg)?),
        opcode::READLINK => Op::Readlink,
        opcode::SYMLINK => Op::Symlink { name: name()?, target: name()? },
        opcode::MKNOD => {
            let (mode, rdev, umask) = (arg.u32()?, arg.u32()?, arg.u32()?);
            Op::Mknod { name: name()?, mode, rdev, umask }
        }
        opcode::MKDIR => {
            let (mode, umask) = (arg.u32()?, arg.u32()?);
            Op::Mkdir { name: name()?, mode, umask }
        }
        opcode::UNLINK => Op::Unlink { name: name()? },
        opcode::RMDIR => Op::Rmdir { name: name()? },
        opcode::RENAME | opcode::RENAME2 => {
            let newdir = arg.u64()?;
            let flags = if code == opcode::RENAME2 { arg.u32()? } else { 0 };
            Op::Rename { newdir, name: name()?, newname: name()?, flags }
        }
        opcode::LINK => Op::Link { oldnodeid: arg.u64()?, newname: name()? },
        opcode::OPEN => Op::Open { flags: arg.u32()? },
        opcode::OPENDIR => Op::Opendir { flags: arg.u32()? },
        opcode::READ | opcode::READDIR | opcode::READDIRPLUS => {
            let (fh, offset, size) = (arg.u64()?, arg.u64()?, arg.u32()?);
            match code {
                opcode::READ => Op::Read { fh, offset, size },
                opcode::READDIR => Op::Readdir { fh, offset, size },
                _ => Op::Readdirplus { fh, offset, size },
            }
        }
        opcode::WRITE => {
            let (fh, offset, size, write_flags) = (arg.u64()?, arg.u64()?, arg.u32()?, arg.u32()?);
            Op::Write { fh, offset, data: rest.take(size as usize)?, write_flags }
        }
        opcode::STATFS => Op::Statfs,
        opcode::RELEASE => Op::Release { fh: arg.u64()? },
        opcode::RELEASEDIR => Op::Releasedir { fh: arg.u64()? },
        opcode::FSYNC | opcode::FSYNCDIR => {
            let (fh, flags) = (arg.u64()?, arg.u32()?);
            let datasync = flags & FUSE_FSYNC_FDATASYNC != 0;
            if code == opcode::FSYNC {
                Op::Fsync { fh, datasync }
            } else {
                Op::Fsyncdir { fh, datasync }
            }
        }
        opcode::SETXATTR => {
            let (size, flags) = (arg.u32()?, arg.u32()?);
            Op::Setxattr { name: name()?, value: rest.take(size as usize)?, flags }
        }
        opcode::GETXATTR => Op::Getxattr { size: arg.u32()?, name: name()? },
        opcode::LISTXATTR => Op::Listxattr { size: arg.u32()? },
        opcode::REMOVEXATTR => Op::Removexattr { name: name()? },
        opcode::FLUSH => {
            let fh = arg.u64()?;
            arg.take(8)?;
            Op::Flush { fh, lock_owner: arg.u64()? }
        }
        opcode::INIT => Op::Init,
        opcode::CREATE => {
            let (flags, mode, umask) = (arg.u32()?, arg.u32()?, arg.u32()?);
            Op::Create { name: name()?, mode, umask, flags }
        }
        opcode::INTERRUPT => Op::Interrupt { unique: arg.u64()? },
        opcode::DESTROY => Op::Destroy,
        opcode::IOCTL => Op::Ioctl,
        opcode::FALLOCATE => {
            let (fh, offset, length, mode) = (arg.u64()?, arg.u64()?, arg.u64()?, arg.u32()?);
            Op::Fallocate { fh, offset, length, mode }
        }
        opcode::LSEEK => {
            let (fh, offset, whence) = (arg.u64()?, arg.u64()?, arg.u32()?);
            Op::Lseek { fh, offset: offset as i64, whence }
        }
        _ => Op::Unsupported,
    })
}

/// A name in the payload: NUL-terminated, not empty.
fn rest_name<'a>(rest: &mut Fields<'a>) -> Result<&'a OsStr, Malformed> {
    Ok(OsStr::from_bytes(rest.c_str()?))
}

fn setattr(arg: &mut Fields<'_>) -> Result<SetattrIn, Malformed> {
    let valid = arg.u32()?;
    arg.take(4 + 8)?; // padding, fh
    let size = arg.u64()?;
    arg.take(8)?; // lock_owner
    let (atime, mtime) = (arg.u64()?, arg.u64()?);
    arg.take(8)?; // ctime
    let (atimensec, mtimensec) = (arg.u32()?, arg.u32()?);
    arg.take(4)?; // ctimensec
    let mode = arg.u32()?;
    arg.take(4)?;
    let (uid, gid) = (arg.u32()?, arg.u32()?);
    let has = |bit: u32| valid & bit != 0;
    let time = |set: u32, now: u32, secs: u64, nsec: u32| {
        if has(now) {
            Some(TimeOrNow::Now)
        } else {
            has(set).then(|| TimeOrNow::SpecificTime(system_time(secs as i64, nsec)))
        }
    };
    Ok(SetattrIn {
        mode: has(FATTR_MODE).then_some(mode),
        uid: has(FATTR_UID).then_some(uid),
        gid: has(FATTR_GID).then_some(gid),
        size: has(FATTR_SIZE).then_some(size),
        atime: time(FATTR_ATIME, FATTR_ATIME_NOW, atime, atimensec),
        mtime: time(FATTR_MTIME, FATTR_MTIME_NOW, mtime, mtimensec),
    })
}

/// Seconds and nanoseconds since the epoch (negative: before it) as a time.
fn system_time(secs: i64, nsec: u32) -> SystemTime {
    let nanos = Duration::from_nanos(u64::from(nsec.min(999_999_999)));
    if secs >= 0 {
        UNIX_EPOCH + Duration::from_secs(secs as u64) + nanos
    } else {
        UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs()) + nanos
    }
}

/// The `(nodeid, nlookup)` pairs of a batch forget.
pub fn forget_pairs(forgets: &[u8]) -> impl Iterator<Item = (u64, u64)> + '_ {
    forgets.chunks_exact(16).map(|pair| {
        let mut f = Fields::new(pair, "forget");
        (f.u64().unwrap_or(0), f.u64().unwrap_or(0))
    })
}
