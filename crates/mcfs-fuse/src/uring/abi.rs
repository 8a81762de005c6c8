//! The parts of the FUSE wire protocol (`include/uapi/linux/fuse.h`, 7.42+)
//! the io_uring transport reads and writes: opcodes, init flags, the sizes of
//! the fixed per-op structs, the ring's command and header layout, and a
//! bounds-checked little reader for kernel-supplied bytes.
//!
//! Invariant: every read of kernel bytes goes through `Fields`, which
//! answers a short buffer with `Malformed`, never with a panic.

use std::fmt;

pub const FUSE_KERNEL_VERSION: u32 = 7;
/// The protocol minor this transport speaks: 7.42 is the first with the ring.
pub const FUSE_KERNEL_MINOR_VERSION: u32 = 42;

/// `fuse_init_in.flags` and `fuse_init_out.flags`: the high word goes in `flags2`.
pub const FUSE_BIG_WRITES: u64 = 1 << 5;
pub const FUSE_MAX_PAGES: u64 = 1 << 22;
pub const FUSE_INIT_EXT: u64 = 1 << 30;
pub const FUSE_OVER_IO_URING: u64 = 1 << 41;

/// Sizes of the headers every request and reply starts with.
pub const IN_HEADER_SIZE: usize = 40;
pub const OUT_HEADER_SIZE: usize = 16;

/// The smallest read buffer the kernel accepts on `/dev/fuse`.
pub const MIN_READ_BUFFER: usize = 8192;

/// `fuse_uring_req_header`: `in_out` (128), `op_in` (128), `fuse_uring_ent_in_out` (32).
pub const RING_HEADER_SIZE: usize = 288;
pub const RING_OP_IN_OFFSET: usize = 128;
pub const RING_OP_IN_SIZE: usize = 128;
pub const RING_ENT_IN_OUT_OFFSET: usize = 256;

/// `io_uring_sqe.cmd_op` of an `IORING_OP_URING_CMD` on `/dev/fuse`.
pub const FUSE_IO_URING_CMD_REGISTER: u32 = 1;
pub const FUSE_IO_URING_CMD_COMMIT_AND_FETCH: u32 = 2;

/// `fuse_opcode`.
pub mod opcode {
    pub const LOOKUP: u32 = 1;
    pub const FORGET: u32 = 2;
    pub const GETATTR: u32 = 3;
    pub const SETATTR: u32 = 4;
    pub const READLINK: u32 = 5;
    pub const SYMLINK: u32 = 6;
    pub const MKNOD: u32 = 8;
    pub const MKDIR: u32 = 9;
    pub const UNLINK: u32 = 10;
    pub const RMDIR: u32 = 11;
    pub const RENAME: u32 = 12;
    pub const LINK: u32 = 13;
    pub const OPEN: u32 = 14;
    pub const READ: u32 = 15;
    pub const WRITE: u32 = 16;
    pub const STATFS: u32 = 17;
    pub const RELEASE: u32 = 18;
    pub const FSYNC: u32 = 20;
    pub const SETXATTR: u32 = 21;
    pub const GETXATTR: u32 = 22;
    pub const LISTXATTR: u32 = 23;
    pub const REMOVEXATTR: u32 = 24;
    pub const FLUSH: u32 = 25;
    pub const INIT: u32 = 26;
    pub const OPENDIR: u32 = 27;
    pub const READDIR: u32 = 28;
    pub const RELEASEDIR: u32 = 29;
    pub const FSYNCDIR: u32 = 30;
    pub const CREATE: u32 = 35;
    pub const INTERRUPT: u32 = 36;
    pub const DESTROY: u32 = 38;
    pub const IOCTL: u32 = 39;
    pub const BATCH_FORGET: u32 = 42;
    pub const FALLOCATE: u32 = 43;
    pub const READDIRPLUS: u32 = 44;
    pub const RENAME2: u32 = 45;
    pub const LSEEK: u32 = 46;
}

/// Size of the fixed struct an opcode's arguments start with (`in_args[0]`,
/// which the ring puts in `op_in`; the rest goes to the payload). Zero for
/// ops with none and for ops this transport does not decode.
pub fn op_struct_size(opcode: u32) -> usize {
    use opcode::*;
    match opcode {
        FORGET | MKDIR | RENAME | LINK | OPEN | OPENDIR | GETXATTR | LISTXATTR | INTERRUPT | BATCH_FORGET => 8,
        // fuse_setxattr_in without FUSE_SETXATTR_EXT, which is never asked for.
        SETXATTR => 8,
        GETATTR | FSYNC | FSYNCDIR | MKNOD | CREATE | RENAME2 => 16,
        RELEASE | RELEASEDIR | FLUSH | LSEEK => 24,
        FALLOCATE | IOCTL => 32,
        READ | WRITE | READDIR | READDIRPLUS => 40,
        INIT => 64,
        SETATTR => 88,
        _ => 0,
    }
}

/// Kernel bytes that are shorter than their op needs, or badly terminated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Malformed(pub &'static str);

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed FUSE request: {}", self.0)
    }
}

impl std::error::Error for Malformed {}

/// Reads little fields one after the other from kernel bytes (native endian, as the kernel writes them).
pub struct Fields<'a> {
    bytes: &'a [u8],
    what: &'static str,
}

impl<'a> Fields<'a> {
    /// Fields of `bytes`; `what` names them in errors.
    pub fn new(bytes: &'a [u8], what: &'static str) -> Fields<'a> {
        Fields { bytes, what }
    }

    pub fn take(&mut self, len: usize) -> Result<&'a [u8], Malformed> {
        if self.bytes.len() < len {
            return Err(Malformed(self.what));
        }
        let (head, rest) = self.bytes.split_at(len);
        self.bytes = rest;
        Ok(head)
    }

    pub fn u32(&mut self) -> Result<u32, Malformed> {
        Ok(u32::from_ne_bytes(self.array()?))
    }

    pub fn u64(&mut self) -> Result<u64, Malformed> {
        Ok(u64::from_ne_bytes(self.array()?))
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], Malformed> {
        let mut out = [0; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    /// A NUL-terminated string (the NUL is consumed, not returned).
    pub fn c_str(&mut self) -> Result<&'a [u8], Malformed> {
        let end = self.bytes.iter().position(|&b| b == 0).ok_or(Malformed(self.what))?;
        let text = self.take(end)?;
        self.take(1)?;
        Ok(text)
    }
}

/// Appends native-endian fields to a reply body.
pub trait Put {
    fn put_u32(&mut self, v: u32);
    fn put_u64(&mut self, v: u64);
}

impl Put for Vec<u8> {
    fn put_u32(&mut self, v: u32) {
        self.extend_from_slice(&v.to_ne_bytes());
    }
    fn put_u64(&mut self, v: u64) {
        self.extend_from_slice(&v.to_ne_bytes());
    }
}
