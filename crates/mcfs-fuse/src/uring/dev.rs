//! The `/dev/fuse` side of a ring session: the INIT handshake, and a
//! thread that serves what the kernel still sends through read(2) once the
//! ring is up — FORGET, BATCH_FORGET and INTERRUPT always (the kernel's
//! io_uring queue ops send only requests that take an answer over the ring),
//! and any request made before the ring was ready. Answers go back with
//! write(2), as in a classic FUSE session.

use super::abi::{
    opcode, Fields, Put, FUSE_BIG_WRITES, FUSE_INIT_EXT, FUSE_KERNEL_MINOR_VERSION, FUSE_KERNEL_VERSION,
    FUSE_MAX_PAGES, FUSE_OVER_IO_URING, IN_HEADER_SIZE,
};
use super::reply::{out_header, Reply, Route};
use super::request::{InHeader, Request};
use super::{Config, Counters, Handler};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::Ordering;
use std::sync::Arc;

const PAGE_SIZE: u32 = 4096;

/// Background requests the kernel keeps in flight at most (fuser's default), and its congestion mark.
const MAX_BACKGROUND: u16 = 16;
const CONGESTION_THRESHOLD: u16 = 12;

pub(crate) struct DevFuse {
    fd: Arc<OwnedFd>,
}

impl DevFuse {
    pub(crate) fn new(fd: Arc<OwnedFd>) -> DevFuse {
        DevFuse { fd }
    }

    /// Writes the answer to request `unique`. A request the kernel dropped
    /// meanwhile (interrupted: ENOENT) or a closed connection needs none.
    pub(crate) fn answer(&self, unique: u64, error: i32, body: &[u8]) {
        let header = out_header(unique, error, body.len());
        let iov = [
            libc::iovec { iov_base: header.as_ptr() as *mut _, iov_len: header.len() },
            libc::iovec { iov_base: body.as_ptr() as *mut _, iov_len: body.len() },
        ];
        // SAFETY: both iovecs point into buffers that outlive the call.
        if unsafe { libc::writev(self.fd.as_raw_fd(), iov.as_ptr(), 2) } < 0 {
            let err = io::Error::last_os_error();
            if ![libc::ENOENT, libc::ENODEV, libc::ENOTCONN].contains(&err.raw_os_error().unwrap_or(0)) {
                tracing::warn!("/dev/fuse: cannot answer request {unique}: {err}");
            }
        }
    }

    /// Sends the kernel notification `code` (FUSE_NOTIFY_*) with `body`;
    /// returns once the kernel has acted on it.
    pub(crate) fn notify(&self, code: i32, body: &[u8]) -> io::Result<()> {
        // A notification is an answer to no request: unique 0, the code in the error field.
        let header = out_header(0, code, body.len());
        let iov = [
            libc::iovec { iov_base: header.as_ptr() as *mut _, iov_len: header.len() },
            libc::iovec { iov_base: body.as_ptr() as *mut _, iov_len: body.len() },
        ];
        // SAFETY: both iovecs point into buffers that outlive the call.
        if unsafe { libc::writev(self.fd.as_raw_fd(), iov.as_ptr(), 2) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Reads one request into `buf`; `None` once the connection is gone.
    fn read(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        loop {
            // SAFETY: `buf` is writable for its length.
            let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n >= 0 {
                return Ok(Some(n as usize));
            }
            let err = io::Error::last_os_error();
            match err.raw_os_error() {
                // Interrupted before we read it, or by a signal: read again.
                Some(libc::ENOENT | libc::EINTR | libc::EAGAIN) => continue,
                Some(libc::ENODEV) => return Ok(None),
                _ => return Err(err),
            }
        }
    }
}

/// What INIT settled.
pub(crate) struct Negotiated {
    /// The kernel accepted serving requests over io_uring.
    pub ring: bool,
}

/// Answers the kernel's INIT (the first request on a new connection):
/// the flags of `config` the kernel offers, `max_write`, and
/// FUSE_OVER_IO_URING when the kernel offers it.
pub(crate) fn handshake(dev: &DevFuse, config: &Config) -> io::Result<Negotiated> {
    let mut buf = vec![0u8; read_buffer_size(config)];
    let len = dev.read(&mut buf)?.ok_or_else(|| io::Error::other("the FUSE connection closed before INIT"))?;
    let bytes = &buf[..len];
    let header = InHeader::parse(bytes).map_err(io::Error::other)?;
    if header.opcode != opcode::INIT {
        return Err(io::Error::other(format!("the kernel's first FUSE request is opcode {}, not INIT", header.opcode)));
    }
    let mut init = Fields::new(&bytes[IN_HEADER_SIZE..], "init");
    let parse = |init: &mut Fields<'_>| -> Result<_, super::abi::Malformed> {
        let (major, minor, max_readahead, flags) = (init.u32()?, init.u32()?, init.u32()?, init.u32()?);
        let flags2 = if u64::from(flags) & FUSE_INIT_EXT != 0 { init.u32()? } else { 0 };
        Ok((major, minor, max_readahead, u64::from(flags) | u64::from(flags2) << 32))
    };
    let (major, minor, max_readahead, offered) = parse(&mut init).map_err(io::Error::other)?;
    if major != FUSE_KERNEL_VERSION || minor < FUSE_KERNEL_MINOR_VERSION {
        dev.answer(header.unique, -libc::EPROTO, &[]);
        return Err(io::Error::other(format!(
            "the kernel speaks FUSE {major}.{minor}; io_uring needs {FUSE_KERNEL_VERSION}.{FUSE_KERNEL_MINOR_VERSION}"
        )));
    }
    let ring = offered & FUSE_OVER_IO_URING != 0;
    let flags = offered & (config.init_flags | FUSE_BIG_WRITES | FUSE_MAX_PAGES | FUSE_OVER_IO_URING) | FUSE_INIT_EXT;
    let max_pages = (config.max_write / PAGE_SIZE).clamp(1, u32::from(u16::MAX)) as u16;
    let mut body = Vec::with_capacity(64);
    for v in [FUSE_KERNEL_VERSION, FUSE_KERNEL_MINOR_VERSION, max_readahead, flags as u32] {
        body.put_u32(v);
    }
    body.put_u32(u32::from(MAX_BACKGROUND) | u32::from(CONGESTION_THRESHOLD) << 16);
    body.put_u32(config.max_write);
    body.put_u32(1); // time_gran: nanoseconds
    body.put_u32(u32::from(max_pages)); // max_pages, map_alignment 0
    body.put_u32((flags >> 32) as u32);
    body.resize(64, 0); // max_stack_depth, request_timeout, unused
    dev.answer(header.unique, 0, &body);
    Ok(Negotiated { ring })
}

/// A read buffer that holds the largest write request.
fn read_buffer_size(config: &Config) -> usize {
    (config.max_write as usize + 2 * PAGE_SIZE as usize).max(super::abi::MIN_READ_BUFFER)
}

/// Serves what arrives on `/dev/fuse` until the connection is gone.
pub(crate) fn serve(dev: Arc<DevFuse>, config: &Config, handler: &dyn Handler, counters: &Counters) -> io::Result<()> {
    let mut buf = vec![0u8; read_buffer_size(config)];
    while let Some(len) = dev.read(&mut buf)? {
        let bytes = &buf[..len];
        let header = match InHeader::parse(bytes) {
            Ok(header) => header,
            Err(e) => {
                tracing::warn!("/dev/fuse: {e}");
                continue;
            }
        };
        counters.dev.fetch_add(1, Ordering::Relaxed);
        let unanswered = matches!(header.opcode, opcode::FORGET | opcode::BATCH_FORGET | opcode::INTERRUPT);
        let route = if unanswered { Route::Nowhere } else { Route::Dev(Arc::clone(&dev)) };
        let reply = Reply::new(header.unique, route);
        match Request::from_dev(bytes) {
            Ok(request) => super::dispatch(handler, &request, reply),
            Err(e) => {
                tracing::warn!("/dev/fuse: {e}");
                reply.error(fuser::Errno::EIO);
            }
        }
    }
    Ok(())
}
