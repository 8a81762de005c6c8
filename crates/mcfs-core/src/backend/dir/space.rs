//! The space calls of `DirBackend` on an open regular file: `fallocate(2)`,
//! with a fallback where the backing file system lacks a mode (tmpfs has no
//! zero-range, some file systems punch no holes), and the data extents
//! `lseek(SEEK_DATA/SEEK_HOLE)` finds.
//!
//! Invariant: every fallback leaves the bytes and the size `fallocate` would
//! have left; only the allocation may differ (zeros written where a hole
//! could not be punched).

use super::at::check;
use crate::types::FallocMode;
use std::fs::File;
use std::io;
use std::ops::Range;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;

/// Zeros written at a time where a hole cannot be punched.
const ZERO_CHUNK: u64 = 64 * 1024;

/// `fallocate` of bytes `offset..offset+len` with `mode`.
pub(super) fn fallocate(file: &File, mode: FallocMode, offset: u64, len: u64) -> io::Result<()> {
    let end = offset.checked_add(len).filter(|end| i64::try_from(*end).is_ok()).ok_or_else(efbig)?;
    match raw_fallocate(file, mode.bits(), offset, len) {
        Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => {}
        done => return done,
    }
    match mode {
        FallocMode::Allocate { keep_size } => grow(file, end, keep_size),
        FallocMode::PunchHole => zero_bytes(file, offset, end),
        FallocMode::ZeroRange { keep_size } => {
            fallocate(file, FallocMode::PunchHole, offset, len)?;
            fallocate(file, FallocMode::Allocate { keep_size }, offset, len)
        }
    }
}

fn raw_fallocate(file: &File, bits: i32, offset: u64, len: u64) -> io::Result<()> {
    let (offset, len) = (i64::try_from(offset).map_err(|_| efbig())?, i64::try_from(len).map_err(|_| efbig())?);
    // SAFETY: a valid descriptor and plain integers.
    check(unsafe { libc::fallocate(file.as_raw_fd(), bits, offset, len) })
}

/// What an allocation without space reservation leaves: the size grows to
/// `end` unless `keep_size`.
fn grow(file: &File, end: u64, keep_size: bool) -> io::Result<()> {
    if !keep_size && end > file.metadata()?.len() {
        file.set_len(end)?;
    }
    Ok(())
}

/// Writes zeros over `offset..end` within the file's size (beyond it the
/// file reads as zeros already).
fn zero_bytes(file: &File, offset: u64, end: u64) -> io::Result<()> {
    let end = end.min(file.metadata()?.len());
    let zeros = vec![0u8; ZERO_CHUNK as usize];
    let mut at = offset;
    while at < end {
        let n = (end - at).min(ZERO_CHUNK);
        file.write_all_at(&zeros[..n as usize], at)?;
        at += n;
    }
    Ok(())
}

/// The data extents of `file` within its size; the whole file where the
/// file system cannot tell.
pub(super) fn data_extents(file: &File) -> io::Result<Vec<Range<u64>>> {
    let size = file.metadata()?.len();
    let mut extents = Vec::new();
    let mut at = 0;
    while at < size {
        let data = match seek(file, at, libc::SEEK_DATA) {
            Ok(data) => data,
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => break,
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => return Ok(std::iter::once(0..size).collect()),
            Err(e) => return Err(e),
        };
        let hole = seek(file, data, libc::SEEK_HOLE)?.min(size);
        if hole <= data {
            break; // the file shrank meanwhile
        }
        extents.push(data..hole);
        at = hole;
    }
    Ok(extents)
}

fn seek(file: &File, offset: u64, whence: i32) -> io::Result<u64> {
    let offset = i64::try_from(offset).map_err(|_| efbig())?;
    // SAFETY: a valid descriptor; every read and write of it is positioned
    // (pread/pwrite), so moving its offset disturbs nobody.
    let at = unsafe { libc::lseek(file.as_raw_fd(), offset, whence) };
    if at < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(at as u64)
}

fn efbig() -> io::Error {
    io::Error::from_raw_os_error(libc::EFBIG)
}
