//! Durable apply progress: `.mcfs/progress` holds two checksummed slots, each
//! saying "transaction `seq` has been applied up to (not including) op
//! `next`". Slots are written alternately, always over the one that does not
//! hold the newest durable value, so a torn write loses at most the value
//! being written — never the previous one.
//!
//! Invariant: the value this module reports for a transaction only grows, and
//! it only counts a write as durable after the caller's `sync` succeeded.

use super::progress_path;
use crate::backend::{is_not_found, Backend};
use std::io;

const SLOT_MAGIC: [u8; 4] = *b"MCPG";
/// Slot layout: magic[4], zero u32, seq u64, next u64, crc32c u32 of bytes 0..24.
const SLOT_LEN: usize = 28;
/// One slot per sector, so a torn sector never touches the other slot.
const SLOT_OFFSETS: [u64; 2] = [0, 512];

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Progress {
    pub seq: u64,
    pub next: u64,
}

impl Progress {
    fn encode(self) -> [u8; SLOT_LEN] {
        let mut out = [0u8; SLOT_LEN];
        out[0..4].copy_from_slice(&SLOT_MAGIC);
        out[8..16].copy_from_slice(&self.seq.to_le_bytes());
        out[16..24].copy_from_slice(&self.next.to_le_bytes());
        let crc = crc32c::crc32c(&out[..24]);
        out[24..28].copy_from_slice(&crc.to_le_bytes());
        out
    }

    fn decode(b: &[u8]) -> Option<Progress> {
        let b: &[u8; SLOT_LEN] = b.get(..SLOT_LEN)?.try_into().ok()?;
        let crc = u32::from_le_bytes(b[24..28].try_into().ok()?);
        if b[0..4] != SLOT_MAGIC || b[4..8] != [0; 4] || crc != crc32c::crc32c(&b[..24]) {
            return None;
        }
        Some(Progress {
            seq: u64::from_le_bytes(b[8..16].try_into().ok()?),
            next: u64::from_le_bytes(b[16..24].try_into().ok()?),
        })
    }
}

pub struct ProgressFile {
    /// What each slot durably holds, as far as this process knows.
    durable: [Option<Progress>; 2],
    /// A slot written since the last sync, with its value.
    pending: Option<(usize, Progress)>,
    /// Bytes written to the file by this process.
    written: u64,
}

impl ProgressFile {
    /// Reads both slots; a missing file or a damaged slot holds nothing.
    /// (`read_at` returns fewer bytes than asked only at end of file.)
    pub fn load(backend: &dyn Backend) -> io::Result<ProgressFile> {
        let mut durable = [None, None];
        for (slot, &offset) in SLOT_OFFSETS.iter().enumerate() {
            let mut buf = [0u8; SLOT_LEN];
            match backend.read_at(&progress_path(), offset, &mut buf) {
                Ok(n) => durable[slot] = Progress::decode(&buf[..n]),
                Err(e) if is_not_found(&e) => {
                    return Ok(ProgressFile { durable: [None, None], pending: None, written: 0 })
                }
                Err(e) => return Err(e),
            }
        }
        Ok(ProgressFile { durable, pending: None, written: 0 })
    }

    /// The op index transaction `seq` resumes at: 0 unless a slot says more.
    pub fn resume_index(&self, seq: u64) -> u64 {
        self.durable.iter().flatten().filter(|p| p.seq == seq).map(|p| p.next).max().unwrap_or(0)
    }

    /// Forgets the progress of finished transactions, so a later one may
    /// reuse their numbers (the engine counts from 1 at every mount). Only
    /// called while no transaction is committed. Synced at once: in a crash
    /// image where a new txn's unsynced commit record survived, a stale slot
    /// with its number would otherwise send recovery into its middle.
    pub fn clear(&mut self, backend: &dyn Backend) -> io::Result<()> {
        if self.durable != [None, None] {
            backend.set_len(&progress_path(), 0)?;
            backend.sync()?;
            self.durable = [None, None];
        }
        Ok(())
    }

    /// Writes `p` over the slot that does not hold the newest durable value.
    /// Returns the bytes written. Not durable until `synced`.
    pub fn write(&mut self, backend: &dyn Backend, p: Progress) -> io::Result<u64> {
        let newest = match self.durable {
            [Some(a), Some(b)] => usize::from(b > a),
            [Some(_), None] => 0,
            [None, Some(_)] => 1,
            [None, None] => 1,
        };
        let target = 1 - newest;
        self.pending = None;
        backend.write_at(&progress_path(), SLOT_OFFSETS[target], &p.encode())?;
        self.pending = Some((target, p));
        self.written += SLOT_LEN as u64;
        Ok(SLOT_LEN as u64)
    }

    pub fn bytes_written(&self) -> u64 {
        self.written
    }

    /// A write is waiting for a sync.
    pub fn has_pending(&self) -> bool {
        self.pending.is_some()
    }

    /// The caller's `sync` succeeded: the pending write is durable.
    pub fn synced(&mut self) {
        if let Some((slot, p)) = self.pending.take() {
            self.durable[slot] = Some(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journal_progress_slot_round_trip_and_damage() {
        let p = Progress { seq: 42, next: 7 };
        let bytes = p.encode();
        assert_eq!(Progress::decode(&bytes), Some(p));
        for cut in 0..SLOT_LEN {
            assert_eq!(Progress::decode(&bytes[..cut]), None);
            let mut zeroed = bytes;
            zeroed[cut] = 0;
            if bytes[cut] != 0 {
                assert_eq!(Progress::decode(&zeroed), None, "byte {cut} zeroed");
            }
            let mut flipped = bytes;
            flipped[cut] ^= 1;
            assert_eq!(Progress::decode(&flipped), None, "byte {cut} flipped");
        }
    }
}
