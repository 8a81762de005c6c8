//! `McfsFs` served over FUSE's io_uring transport (`uring`): each decoded
//! request goes to the op `McfsFs` writes once for both transports, with
//! the ring's reply. The ops' argument types are fuser's (plain values).
//!
//! Held requests: FastTrack's held-back BG requests run on `held_requests`
//! threads as on the fuser path; the ring entry of such a request stays
//! taken until its thread answers, while the queue's thread goes on with the
//! queue's other entries. So a queue has more entries than requests can be
//! held at once (`QUEUE_DEPTH`): an FG request always finds a free entry.

use crate::filesystem::McfsFs;
use crate::held_requests::HELD_AT_MOST;
use crate::uring::{self, forget_pairs, DirPlusReply, DirReply, Op, Reply, Request};
use fuser::{INodeNo, RenameFlags, WriteFlags};
use mcfs_core::Caller;

/// Entries per ring queue: every request that can be held, plus one served at once.
pub const QUEUE_DEPTH: usize = HELD_AT_MOST + 1;

impl uring::Handler for McfsFs {
    fn handle(&self, request: &Request<'_>, reply: Reply) {
        let h = &request.header;
        let (caller, node) = (Caller { uid: h.uid, gid: h.gid, pid: h.pid }, INodeNo(h.nodeid));
        match request.op {
            Op::Lookup { name } => self.lookup(caller, node, name, reply),
            Op::Forget { nlookup } => self.forget(node, nlookup),
            Op::BatchForget { forgets } => {
                for (ino, nlookup) in forget_pairs(forgets) {
                    self.forget(INodeNo(ino), nlookup);
                }
            }
            Op::Getattr => self.getattr(caller, node, reply),
            Op::Setattr(set) => {
                self.setattr(caller, node, set.mode, set.uid, set.gid, set.size, set.atime, set.mtime, reply)
            }
            Op::Readlink => self.readlink(caller, node, reply),
            Op::Symlink { name, target } => self.symlink(caller, node, name, target, reply),
            Op::Mknod { name, mode, rdev, umask } => self.mknod(caller, node, name, mode, umask, rdev, reply),
            Op::Mkdir { name, mode, umask } => self.mkdir(caller, node, name, mode, umask, reply),
            Op::Unlink { name } => self.unlink(caller, node, name, reply),
            Op::Rmdir { name } => self.rmdir(caller, node, name, reply),
            Op::Rename { newdir, name, newname, flags } => {
                let flags = RenameFlags::from_bits_retain(flags);
                self.rename(caller, node, name, INodeNo(newdir), newname, flags, reply)
            }
            Op::Link { oldnodeid, newname } => self.link(caller, INodeNo(oldnodeid), node, newname, reply),
            Op::Open { flags } => self.open(caller, node, flags as i32, reply),
            Op::Read { offset, size, .. } => self.read(caller, node, offset, size, reply),
            Op::Write { offset, data, write_flags, .. } => {
                self.write(caller, node, offset, data, WriteFlags::from_bits_retain(write_flags), reply)
            }
            Op::Statfs => self.statfs(reply),
            Op::Release { flags, .. } => self.release(node, flags as i32, reply),
            Op::Fsync { datasync, .. } => self.fsync(caller, node, datasync, reply),
            Op::Setxattr { name, value, flags } => self.setxattr(caller, node, name, value, flags as i32, 0, reply),
            Op::Getxattr { name, size } => self.getxattr(caller, node, name, size, reply),
            Op::Listxattr { size } => self.listxattr(caller, node, size, reply),
            Op::Removexattr { name } => self.removexattr(caller, node, name, reply),
            Op::Flush { .. } => self.flush(caller, node, reply),
            Op::Opendir { .. } => self.opendir(reply),
            Op::Readdir { offset, size, .. } => self.readdir(caller, node, offset, DirReply::new(reply, size)),
            Op::Readdirplus { offset, size, .. } => {
                self.readdirplus(caller, node, offset, DirPlusReply::new(reply, size))
            }
            Op::Fsyncdir { .. } => self.fsyncdir(caller, reply),
            Op::Create { name, mode, umask, flags } => {
                self.create(caller, node, name, mode, umask, flags as i32, reply)
            }
            Op::Ioctl => self.ioctl(reply),
            Op::Fallocate { offset, length, mode, .. } => {
                self.fallocate(caller, node, offset, length, mode as i32, reply)
            }
            Op::Lseek { offset, whence, .. } => self.lseek(caller, node, offset, whence as i32, reply),
            // The engine is shut down by the mounting program once the session ends.
            Op::Destroy => reply.ok(),
            // No RELEASEDIR follows a refused OPENDIR (`McfsFs::opendir`).
            Op::Init | Op::Interrupt { .. } | Op::Releasedir { .. } | Op::Unsupported => {
                reply.error(fuser::Errno::ENOSYS)
            }
        }
    }
}
