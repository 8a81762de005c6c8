//! The segment files of the log, and how they are reused. A segment
//! (`.mcfs/journal`, `.mcfs/journal.1`, ...) holds at most one live
//! transaction. Once that transaction is applied the segment is kept as it
//! is, not truncated: the next transaction in it overwrites blocks the
//! backing file system already holds, so its commit (an `fdatasync` of the
//! segment) changes neither the file's size nor its block map, and costs
//! the data write and one cache flush instead of a journal commit of the
//! backing file system as well. For the same reason a segment is written
//! full of zeros up to `READY_BYTES` before its first transaction.
//!
//! Invariant: only the header sector and the payload length it names form
//! a transaction; bytes beyond it, or under a header whose checksums fail,
//! are stale and never read as one. A commit record left valid after its
//! transaction was applied names a transaction the progress file calls
//! applied, and is zeroed (durably) before transaction numbers restart
//! (`recover`, `Journal::open`).

use super::encode::HEADER_LEN;
use super::segment_path;
use crate::backend::Backend;
use std::io;

/// Transactions that may wait in the log before the engine applies them:
/// one segment each, so in steady state every commit reuses a segment.
pub const POOL_SEGMENTS: usize = 64;
/// Bytes a segment holds, written, before its first transaction: a
/// transaction this small commits without growing the file.
pub const READY_BYTES: u64 = 32 << 10;
/// A segment a large transaction grew past this is cut back to
/// `READY_BYTES` once free, giving the backing store its room back.
pub const KEEP_BYTES: u64 = 1 << 20;

/// Writes zeros into segment `slot` from `len` (its size) up to
/// `READY_BYTES`; returns its size after.
pub fn make_ready(backend: &dyn Backend, slot: usize, len: u64) -> io::Result<u64> {
    if len >= READY_BYTES {
        return Ok(len);
    }
    let zeros = vec![0u8; (READY_BYTES - len) as usize];
    backend.write_at(&segment_path(slot), len, &zeros)?;
    Ok(READY_BYTES)
}

/// Frees segment `slot` (of size `len`) for good: its header sector zeroed
/// (a torn zeroing fails the header checksum, so the segment holds no
/// transaction either way), and a segment grown past `KEEP_BYTES` cut back
/// to `READY_BYTES`. Returns its size after. Not synced.
pub fn clear(backend: &dyn Backend, slot: usize, len: u64) -> io::Result<u64> {
    let path = segment_path(slot);
    backend.write_at(&path, 0, &[0u8; HEADER_LEN as usize])?;
    if len <= KEEP_BYTES {
        return Ok(len.max(HEADER_LEN));
    }
    backend.set_len(&path, READY_BYTES)?;
    Ok(READY_BYTES)
}

/// True if a segment of `len` bytes should be cleared as soon as it is free
/// (rather than left for the next transaction to overwrite).
pub fn too_big(len: u64) -> bool {
    len > KEEP_BYTES
}
