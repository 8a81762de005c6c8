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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::time::UNIX_EPOCH;

    /// A reply for request 7 whose bytes land in a pipe, and the pipe's read end.
    fn piped() -> (Reply, std::fs::File) {
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors pipe(2) returns.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: both descriptors were just opened and are owned here alone.
        let (read, write) = unsafe { (std::fs::File::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        (Reply::new(7, Route::Dev(Arc::new(DevFuse::new(Arc::new(write))))), read)
    }

    /// What one reply wrote: its out-header fields and its body.
    fn written(mut read: std::fs::File) -> (u32, i32, u64, Vec<u8>) {
        let mut bytes = Vec::new();
        read.read_to_end(&mut bytes).unwrap();
        let word = |at: usize| u32::from_ne_bytes(bytes[at..at + 4].try_into().unwrap());
        let unique = u64::from_ne_bytes(bytes[8..16].try_into().unwrap());
        (word(0), word(4) as i32, unique, bytes[16..].to_vec())
    }

    fn attr(ino: u64) -> FileAttr {
        let time = UNIX_EPOCH + Duration::new(1_700_000_000, 5);
        FileAttr {
            ino: INodeNo(ino),
            size: 6,
            blocks: 1,
            atime: time,
            mtime: time,
            ctime: time,
            crtime: time,
            kind: FileType::RegularFile,
            perm: 0o644,
            nlink: 1,
            uid: 1000,
            gid: 100,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        }
    }

    fn u64_at(bytes: &[u8], at: usize) -> u64 {
        u64::from_ne_bytes(bytes[at..at + 8].try_into().unwrap())
    }

    fn u32_at(bytes: &[u8], at: usize) -> u32 {
        u32::from_ne_bytes(bytes[at..at + 4].try_into().unwrap())
    }

    #[test]
    fn an_error_is_a_bare_negative_header() {
        let (reply, read) = piped();
        reply.error(Errno::ENOENT);
        assert_eq!(written(read), (16, -libc::ENOENT, 7, Vec::new()));
    }

    #[test]
    fn an_entry_is_fuse_entry_out() {
        let (reply, read) = piped();
        reply.entry_with_ttls(&Duration::from_secs(2), &Duration::new(3, 4), &attr(42), Generation(9));
        let (len, error, unique, body) = written(read);
        assert_eq!((len, error, unique, body.len()), (16 + 128, 0, 7, 128));
        assert_eq!([u64_at(&body, 0), u64_at(&body, 8), u64_at(&body, 16), u64_at(&body, 24)], [42, 9, 3, 2]);
        assert_eq!([u32_at(&body, 32), u32_at(&body, 36)], [4, 0], "entry, then attr nanoseconds");
        let attr = &body[40..];
        assert_eq!([u64_at(attr, 0), u64_at(attr, 8), u64_at(attr, 16), u64_at(attr, 32)], [42, 6, 1, 1_700_000_000]);
        assert_eq!(u32_at(attr, 52), 5, "mtime nanoseconds");
        assert_eq!(u32_at(attr, 60), libc::S_IFREG | 0o644, "mode");
        assert_eq!([u32_at(attr, 64), u32_at(attr, 68), u32_at(attr, 72), u32_at(attr, 80)], [1, 1000, 100, 4096]);
    }

    #[test]
    fn fixed_size_answers_have_their_struct_sizes() {
        type Send = Box<dyn FnOnce(Reply)>;
        let cases: Vec<(Send, usize)> = vec![
            (Box::new(|r| r.attr(&Duration::from_secs(1), &attr(1))), 104),
            (Box::new(|r| r.opened(FileHandle(3), FopenFlags::FOPEN_KEEP_CACHE)), 16),
            (
                Box::new(|r| r.created(&Duration::ZERO, &attr(1), Generation(0), FileHandle(0), FopenFlags::empty())),
                144,
            ),
            (Box::new(|r| r.written(4096)), 8),
            (Box::new(|r| r.statfs(1, 2, 3, 4, 5, 4096, 255, 4096)), 80),
            (Box::new(|r| r.size(12)), 8),
            (Box::new(|r| r.offset(-1)), 8),
            (Box::new(|r| r.ok()), 0),
            (Box::new(|r| r.data(b"abc")), 3),
        ];
        for (i, (send, size)) in cases.into_iter().enumerate() {
            let (reply, read) = piped();
            send(reply);
            let (len, error, _, body) = written(read);
            assert_eq!((error, body.len(), len as usize), (0, size, 16 + size), "case {i}");
        }
    }

    #[test]
    fn an_unanswered_reply_answers_eio_and_a_forget_nothing() {
        let (reply, read) = piped();
        drop(reply);
        assert_eq!(written(read).1, -libc::EIO);
        Reply::new(1, Route::Nowhere).ok();
    }

    #[test]
    fn directory_entries_are_padded_and_stop_at_the_size_asked() {
        let (reply, read) = piped();
        // Two 32-byte entries fit in 70 bytes, a third does not.
        let mut dir = DirReply::new(reply, 70);
        assert!(!dir.add(INodeNo(5), 1, FileType::Directory, OsStr::new("a")));
        assert!(!dir.add(INodeNo(6), 2, FileType::RegularFile, OsStr::new("bcdefgh")));
        assert!(dir.add(INodeNo(7), 3, FileType::RegularFile, OsStr::new("c")), "full");
        dir.ok();
        let body = written(read).3;
        assert_eq!(body.len(), 64);
        assert_eq!([u64_at(&body, 0), u64_at(&body, 8)], [5, 1]);
        assert_eq!([u32_at(&body, 16), u32_at(&body, 20)], [1, libc::DT_DIR as u32]);
        assert_eq!(&body[24..25], b"a");
        assert_eq!((u64_at(&body, 32), u32_at(&body, 48)), (6, 7));
        assert_eq!(&body[56..63], b"bcdefgh");
    }

    #[test]
    fn a_direntplus_that_does_not_fit_leaves_nothing_behind() {
        let (reply, read) = piped();
        let mut dir = DirPlusReply::new(reply, 200);
        let ttl = Duration::from_secs(1);
        assert!(!dir.add(INodeNo(5), 1, OsStr::new("a"), &ttl, &attr(5), Generation(0)));
        assert!(dir.add(INodeNo(6), 2, OsStr::new("b"), &ttl, &attr(6), Generation(0)), "160 + 160 > 200");
        dir.ok();
        let body = written(read).3;
        assert_eq!(body.len(), 128 + 32);
        assert_eq!(u64_at(&body, 128), 5, "the dirent follows the entry");
    }

    #[test]
    fn times_before_the_epoch_count_down() {
        assert_eq!(wire_time(UNIX_EPOCH - Duration::new(1, 250_000_000)), (-2, 750_000_000));
        assert_eq!(wire_time(UNIX_EPOCH - Duration::from_secs(3)), (-3, 0));
        assert_eq!(wire_time(UNIX_EPOCH + Duration::new(3, 9)), (3, 9));
    }
}
