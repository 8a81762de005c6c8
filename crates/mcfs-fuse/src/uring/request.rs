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
        flags: u32,
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
        opcode::RELEASE => Op::Release { fh: arg.u64()?, flags: arg.u32()? },
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

/// A name in the payload, NUL-terminated.
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A `/dev/fuse` request: in-header for `opcode`, then `args`.
    fn request(opcode: u32, nodeid: u64, args: &[u8]) -> Vec<u8> {
        let mut bytes = Vec::new();
        let len = (IN_HEADER_SIZE + args.len()) as u32;
        for v in [len, opcode] {
            bytes.extend_from_slice(&v.to_ne_bytes());
        }
        for v in [77u64, nodeid] {
            bytes.extend_from_slice(&v.to_ne_bytes());
        }
        for v in [1000u32, 100, 4242, 0] {
            bytes.extend_from_slice(&v.to_ne_bytes());
        }
        bytes.extend_from_slice(args);
        bytes
    }

    fn words(values: &[u64], sizes: &[usize]) -> Vec<u8> {
        values
            .iter()
            .zip(sizes)
            .flat_map(
                |(v, size)| if *size == 4 { (*v as u32).to_ne_bytes().to_vec() } else { v.to_ne_bytes().to_vec() },
            )
            .collect()
    }

    #[test]
    fn the_header_and_a_lookup_are_read() {
        let bytes = request(opcode::LOOKUP, 1, b"name\0");
        let req = Request::from_dev(&bytes).unwrap();
        let expected = InHeader {
            len: bytes.len() as u32,
            opcode: opcode::LOOKUP,
            unique: 77,
            nodeid: 1,
            uid: 1000,
            gid: 100,
            pid: 4242,
        };
        assert_eq!(req.header, expected);
        assert_eq!(req.op, Op::Lookup { name: OsStr::new("name") });
    }

    #[test]
    fn a_write_carries_its_data_and_flags() {
        // fuse_write_in: fh, offset, size, write_flags, lock_owner, flags, padding.
        let mut args = words(&[9, 4096, 5, 1, 0, 0, 0], &[8, 8, 4, 4, 8, 4, 4]);
        args.extend_from_slice(b"hello");
        let bytes = request(opcode::WRITE, 5, &args);
        let req = Request::from_dev(&bytes).unwrap();
        assert_eq!(req.op, Op::Write { fh: 9, offset: 4096, data: b"hello", write_flags: 1 });
    }

    #[test]
    fn ring_parts_decode_like_a_dev_read() {
        // On the ring the fixed struct is in `op_in` (128 bytes) and the names in the payload.
        let mut op_in = [0u8; 128];
        op_in[..8].copy_from_slice(&3u64.to_ne_bytes());
        let header = InHeader::parse(&request(opcode::RENAME, 2, &[])).unwrap();
        let req = Request::decode(header, &op_in, b"old\0new\0").unwrap();
        assert_eq!(req.op, Op::Rename { newdir: 3, name: OsStr::new("old"), newname: OsStr::new("new"), flags: 0 });
        let mut args = words(&[3, 1], &[8, 8]);
        args.extend_from_slice(b"old\0new\0");
        let bytes = request(opcode::RENAME2, 2, &args);
        let req = Request::from_dev(&bytes).unwrap();
        assert_eq!(req.op, Op::Rename { newdir: 3, name: OsStr::new("old"), newname: OsStr::new("new"), flags: 1 });
    }

    #[test]
    fn setattr_keeps_only_what_is_valid() {
        // valid = MODE | SIZE | MTIME_NOW; the other fields hold garbage that must be ignored.
        let valid = (FATTR_MODE | FATTR_SIZE | FATTR_MTIME_NOW) as u64;
        let sizes = [4, 4, 8, 8, 8, 8, 8, 8, 4, 4, 4, 4, 4, 4, 4, 4];
        let args = words(&[valid, 0, 1, 123, 0, 5, 6, 7, 8, 9, 10, 0o644, 0, 11, 12, 0], &sizes);
        assert_eq!(args.len(), 88);
        let bytes = request(opcode::SETATTR, 4, &args);
        let req = Request::from_dev(&bytes).unwrap();
        let expected =
            SetattrIn { mode: Some(0o644), size: Some(123), mtime: Some(TimeOrNow::Now), ..SetattrIn::default() };
        assert_eq!(req.op, Op::Setattr(expected));
    }

    #[test]
    fn batch_forget_pairs_are_listed() {
        let mut args = words(&[2, 0], &[4, 4]);
        args.extend(words(&[10, 1, 11, 3], &[8, 8, 8, 8]));
        let bytes = request(opcode::BATCH_FORGET, 0, &args);
        let Op::BatchForget { forgets } = Request::from_dev(&bytes).unwrap().op else { panic!("not a batch forget") };
        assert_eq!(forget_pairs(forgets).collect::<Vec<_>>(), [(10, 1), (11, 3)]);
    }

    #[test]
    fn unknown_opcodes_are_unsupported_not_errors() {
        assert_eq!(Request::from_dev(&request(9999, 1, b"xyz")).unwrap().op, Op::Unsupported);
    }

    #[test]
    fn short_or_unterminated_requests_are_errors() {
        let short_header = &request(opcode::LOOKUP, 1, b"")[..20];
        assert!(Request::from_dev(short_header).is_err());
        assert_eq!(Request::from_dev(&request(opcode::LOOKUP, 1, b"no-nul")), Err(Malformed("payload")));
        assert_eq!(Request::from_dev(&request(opcode::READ, 1, &[0; 12])), Err(Malformed("op struct")));
        // A write that claims more data than came.
        let args = words(&[9, 0, 100, 0, 0, 0, 0], &[8, 8, 4, 4, 8, 4, 4]);
        assert_eq!(Request::from_dev(&request(opcode::WRITE, 1, &args)), Err(Malformed("payload")));
        // A batch forget whose count overflows the payload it names.
        let args = words(&[u32::MAX as u64, 0], &[4, 4]);
        assert!(Request::from_dev(&request(opcode::BATCH_FORGET, 0, &args)).is_err());
        // A header whose len is shorter than the header itself.
        let mut lying = request(opcode::GETATTR, 1, &[0; 16]);
        lying[..4].copy_from_slice(&8u32.to_ne_bytes());
        assert!(Request::from_dev(&lying).is_err());
    }

    /// Random bytes after a valid header, for every opcode: an answer or an error, never a panic.
    #[test]
    fn random_arguments_never_panic() {
        let seed = std::env::var("MCFS_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5eed_u64);
        println!("seed {seed} (MCFS_TEST_SEED)");
        let mut state = seed;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..20_000 {
            let code = (next() % 60) as u32;
            let len = (next() % 120) as usize;
            let args: Vec<u8> = (0..len).map(|_| if next() % 4 == 0 { 0 } else { next() as u8 }).collect();
            let _ = Request::from_dev(&request(code, 1, &args));
            let header = InHeader::parse(&request(code, 1, &[])).unwrap();
            let split = len.min(op_struct_size(code));
            let _ = Request::decode(header, &args[..split], &args[split..]);
        }
    }
}
