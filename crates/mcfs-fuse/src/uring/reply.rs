//! Encoding FUSE replies, and `Reply`, the handle a request is answered
//! through: its methods are named as fuser's reply types' are (`entry`,
//! `attr`, `data`, `opened`, ...), each encodes the op's out struct and
//! hands the bytes to the request's route — its ring entry, or a write(2) on
//! `/dev/fuse` for the requests the kernel still sends there.
//!
//! Invariant: every request that wants a reply gets exactly one: a `Reply`
//! dropped unanswered answers EIO. A body larger than the ring entry's
//! payload buffer is answered EIO by the ring (see `ring`).

use super::abi::{Put, OUT_HEADER_SIZE};
use super::dev::DevFuse;
use super::ring::Queue;
use fuser::{Errno, FileAttr, FileHandle, FileType, FopenFlags, Generation, INodeNo};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Where a request's answer goes.
pub(crate) enum Route {
    /// Entry `index` of a ring queue.
    Ring(Arc<Queue>, usize),
    /// A write(2) on `/dev/fuse`.
    Dev(Arc<DevFuse>),
    /// Forget and interrupt requests take no answer.
    Nowhere,
}

/// The answer to one request; see the module comment.
pub struct Reply {
    unique: u64,
    route: Option<Route>,
}

impl Reply {
    pub(crate) fn new(unique: u64, route: Route) -> Reply {
        Reply { unique, route: Some(route) }
    }

    /// Answers with `error` (0: success) and a body `encode` writes.
    fn send(mut self, error: i32, encode: impl FnOnce(&mut Vec<u8>)) {
        match self.route.take() {
            Some(Route::Ring(queue, index)) => queue.answer(index, self.unique, error, encode),
            Some(Route::Dev(dev)) => {
                let mut body = Vec::new();
                encode(&mut body);
                dev.answer(self.unique, error, &body);
            }
            Some(Route::Nowhere) | None => {}
        }
    }

    pub fn error(self, err: Errno) {
        self.send(-err.code(), |_| {});
    }

    pub fn ok(self) {
        self.send(0, |_| {});
    }

    pub fn data(self, data: &[u8]) {
        self.send(0, |body| body.extend_from_slice(data));
    }

    pub fn entry(self, ttl: &Duration, attr: &FileAttr, generation: Generation) {
        self.entry_with_ttls(ttl, ttl, attr, generation);
    }

    pub fn entry_with_ttls(self, attr_ttl: &Duration, entry_ttl: &Duration, attr: &FileAttr, generation: Generation) {
        self.send(0, |body| put_entry_out(body, attr, generation, *attr_ttl, *entry_ttl));
    }

    pub fn attr(self, ttl: &Duration, attr: &FileAttr) {
        self.send(0, |body| {
            body.put_u64(ttl.as_secs());
            body.put_u32(ttl.subsec_nanos());
            body.put_u32(0);
            put_attr(body, attr);
        });
    }

    pub fn opened(self, fh: FileHandle, flags: FopenFlags) {
        self.send(0, |body| put_open_out(body, fh, flags));
    }

    pub fn created(self, ttl: &Duration, attr: &FileAttr, generation: Generation, fh: FileHandle, flags: FopenFlags) {
        self.send(0, |body| {
            put_entry_out(body, attr, generation, *ttl, *ttl);
            put_open_out(body, fh, flags);
        });
    }

    pub fn written(self, size: u32) {
        self.send(0, |body| {
            body.put_u32(size);
            body.put_u32(0);
        });
    }

    #[allow(clippy::too_many_arguments)]
    pub fn statfs(
        self,
        blocks: u64,
        bfree: u64,
        bavail: u64,
        files: u64,
        ffree: u64,
        bsize: u32,
        namelen: u32,
        frsize: u32,
    ) {
        self.send(0, |body| {
            for v in [blocks, bfree, bavail, files, ffree] {
                body.put_u64(v);
            }
            for v in [bsize, namelen, frsize] {
                body.put_u32(v);
            }
            body.resize(body.len() + 4 + 6 * 4, 0); // padding, spare
        });
    }

    /// The size an xattr value or name list needs (a getxattr/listxattr asking with size 0).
    pub fn size(self, size: u32) {
        self.send(0, |body| {
            body.put_u32(size);
            body.put_u32(0);
        });
    }

    pub fn offset(self, offset: i64) {
        self.send(0, |body| body.put_u64(offset as u64));
    }
}

impl Drop for Reply {
    fn drop(&mut self) {
        if let Some(route) = self.route.take() {
            Reply { unique: self.unique, route: Some(route) }.error(Errno::EIO);
        }
    }
}

/// A readdir answer filled entry by entry, at most `max` bytes (the size asked for).
pub struct DirReply {
    reply: Reply,
    max: usize,
    buf: Vec<u8>,
}

impl DirReply {
    pub fn new(reply: Reply, max: u32) -> DirReply {
        DirReply { reply, max: max as usize, buf: Vec::new() }
    }

    /// Adds an entry; true if it did not fit (then it was not added).
    pub fn add(&mut self, ino: INodeNo, offset: u64, kind: FileType, name: &OsStr) -> bool {
        !put_dirent(&mut self.buf, self.max, ino.0, offset, mode_type(kind) >> 12, name.as_bytes())
    }

    pub fn ok(self) {
        self.reply.data(&self.buf);
    }

    pub fn error(self, err: Errno) {
        self.reply.error(err);
    }
}

/// A readdirplus answer: each entry with its attributes.
pub struct DirPlusReply(DirReply);

impl DirPlusReply {
    pub fn new(reply: Reply, max: u32) -> DirPlusReply {
        DirPlusReply(DirReply::new(reply, max))
    }

    /// Adds an entry; true if it did not fit (then it was not added).
    pub fn add(
        &mut self,
        ino: INodeNo,
        offset: u64,
        name: &OsStr,
        ttl: &Duration,
        attr: &FileAttr,
        generation: Generation,
    ) -> bool {
        let DirReply { buf, max, .. } = &mut self.0;
        let start = buf.len();
        put_entry_out(buf, attr, generation, *ttl, *ttl);
        if put_dirent(buf, *max, ino.0, offset, mode_type(attr.kind) >> 12, name.as_bytes()) {
            return false;
        }
        buf.truncate(start);
        true
    }

    pub fn ok(self) {
        self.0.ok();
    }

    pub fn error(self, err: Errno) {
        self.0.error(err);
    }
}

/// `fuse_out_header` for a body of `body_len` bytes.
pub(crate) fn out_header(unique: u64, error: i32, body_len: usize) -> [u8; OUT_HEADER_SIZE] {
    let mut header = [0; OUT_HEADER_SIZE];
    let len = u32::try_from(OUT_HEADER_SIZE + body_len).unwrap_or(u32::MAX);
    header[0..4].copy_from_slice(&len.to_ne_bytes());
    header[4..8].copy_from_slice(&error.to_ne_bytes());
    header[8..16].copy_from_slice(&unique.to_ne_bytes());
    header
}

/// Appends a `fuse_dirent` (padded to 8 bytes) if the buffer stays within `max`; false if not.
fn put_dirent(buf: &mut Vec<u8>, max: usize, ino: u64, offset: u64, kind: u32, name: &[u8]) -> bool {
    let len = (24 + name.len()).next_multiple_of(8);
    if buf.len() + len > max {
        return false;
    }
    buf.put_u64(ino);
    buf.put_u64(offset);
    buf.put_u32(name.len() as u32);
    buf.put_u32(kind);
    buf.extend_from_slice(name);
    buf.resize(buf.len() + len - 24 - name.len(), 0);
    true
}

/// `fuse_entry_out`: node, generation, both timeouts, attributes.
fn put_entry_out(body: &mut Vec<u8>, attr: &FileAttr, generation: Generation, attr_ttl: Duration, entry_ttl: Duration) {
    body.put_u64(attr.ino.0);
    body.put_u64(generation.0);
    body.put_u64(entry_ttl.as_secs());
    body.put_u64(attr_ttl.as_secs());
    body.put_u32(entry_ttl.subsec_nanos());
    body.put_u32(attr_ttl.subsec_nanos());
    put_attr(body, attr);
}

fn put_open_out(body: &mut Vec<u8>, fh: FileHandle, flags: FopenFlags) {
    body.put_u64(fh.0);
    body.put_u32(flags.bits());
    body.put_u32(0); // backing_id
}

/// `fuse_attr`.
fn put_attr(body: &mut Vec<u8>, attr: &FileAttr) {
    let times = [attr.atime, attr.mtime, attr.ctime].map(wire_time);
    for v in [attr.ino.0, attr.size, attr.blocks] {
        body.put_u64(v);
    }
    for (secs, _) in times {
        body.put_u64(secs as u64);
    }
    for (_, nsec) in times {
        body.put_u32(nsec);
    }
    let mode = mode_type(attr.kind) | u32::from(attr.perm);
    for v in [mode, attr.nlink, attr.uid, attr.gid, attr.rdev, attr.blksize, attr.flags] {
        body.put_u32(v);
    }
}

/// `S_IF*` of a file type.
fn mode_type(kind: FileType) -> u32 {
    match kind {
        FileType::NamedPipe => libc::S_IFIFO,
        FileType::CharDevice => libc::S_IFCHR,
        FileType::BlockDevice => libc::S_IFBLK,
        FileType::Directory => libc::S_IFDIR,
        FileType::RegularFile => libc::S_IFREG,
        FileType::Symlink => libc::S_IFLNK,
        FileType::Socket => libc::S_IFSOCK,
    }
}

/// Seconds (negative before the epoch) and nanoseconds of a time.
fn wire_time(time: SystemTime) -> (i64, u32) {
    match time.duration_since(UNIX_EPOCH) {
        Ok(after) => (i64::try_from(after.as_secs()).unwrap_or(i64::MAX), after.subsec_nanos()),
        Err(before) => {
            let before = before.duration();
            let secs = i64::try_from(before.as_secs()).unwrap_or(i64::MAX);
            match before.subsec_nanos() {
                0 => (-secs, 0),
                nanos => (-secs - 1, 1_000_000_000 - nanos),
            }
        }
    }
}
