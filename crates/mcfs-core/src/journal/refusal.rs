//! Which apply errors mean "this backing store cannot hold this op". Such an
//! op is skipped and reported (`UnappliedOp`) instead of failing the apply:
//! a failed apply keeps its transaction committed and is retried, so an op
//! that fails the same way every time would block every later checkpoint,
//! `umount` and recovery for good. Every other error — `ENOSPC` or `EDQUOT`
//! on data, `EIO`, `EROFS`, `EACCES` — is transient: the apply fails and the
//! transaction is retried whole from its durable progress.
//!
//! Invariant: the answer depends only on the op and the errno, never on
//! timing, so a replay that meets the same state decides the same way.

use super::JournalOp;
use crate::types::FileKind;

/// True if `errno` from `op` means the backing store can never hold `op`
/// (errors a namespace op's "already done" test accepted never get here).
pub fn cannot_hold(op: &JournalOp, errno: i32) -> bool {
    let xattr = matches!(op, JournalOp::SetXattr { .. } | JournalOp::RemoveXattr { .. });
    match errno {
        // A limit or a missing feature of the backing file system: a name
        // or path too long, a file too large, too many links, an xattr
        // namespace or an object kind it does not support (ENOTSUP is the
        // same number on Linux).
        libc::ENAMETOOLONG | libc::EFBIG | libc::EMLINK | libc::EOPNOTSUPP | libc::E2BIG => true,
        // An xattr name or value it refuses, or no room for it in the
        // inode's xattr space (ext4 gives ENOSPC for that; on a full disk
        // it gives the same errno, which is then taken for permanent too).
        libc::ERANGE | libc::EINVAL | libc::ENOSPC | libc::EDQUOT => xattr,
        // The tree disagrees with the op: a parent or source is missing or
        // not a directory, a target is in the way. In a well-formed
        // transaction this follows only an op skipped earlier (or a change
        // made behind mcfs's back); retrying cannot change it.
        libc::ENOENT | libc::ENOTDIR | libc::EISDIR | libc::ENOTEMPTY | libc::EEXIST => true,
        // A file system without hard links, or device nodes without CAP_MKNOD.
        libc::EPERM => matches!(
            op,
            JournalOp::Link { .. } | JournalOp::Create { kind: FileKind::CharDev | FileKind::BlockDev, .. }
        ),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journal_refusal_keeps_full_disks_and_io_errors_transient() {
        let write = JournalOp::Write { path: "f".into(), offset: 0, data: vec![1] };
        let xattr = JournalOp::SetXattr { path: "f".into(), name: "user.k".into(), value: vec![1] };
        let link = JournalOp::Link { existing: "f".into(), new: "g".into() };
        for errno in [libc::ENOSPC, libc::EDQUOT, libc::EIO, libc::EROFS, libc::EACCES, libc::EPERM, libc::EINVAL] {
            assert!(!cannot_hold(&write, errno), "a write failing with {errno} is retried");
        }
        for errno in [libc::EIO, libc::EROFS, libc::EACCES] {
            assert!(!cannot_hold(&xattr, errno) && !cannot_hold(&link, errno), "{errno} is transient");
        }
        for errno in [libc::EOPNOTSUPP, libc::ENOSPC, libc::E2BIG, libc::ERANGE, libc::EINVAL] {
            assert!(cannot_hold(&xattr, errno), "an xattr refused with {errno} is skipped");
        }
        assert!(
            cannot_hold(&write, libc::EFBIG) && cannot_hold(&link, libc::EMLINK) && cannot_hold(&link, libc::EPERM)
        );
    }
}
