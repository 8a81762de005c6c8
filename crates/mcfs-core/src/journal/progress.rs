//! Durable apply progress: `.mcfs/progress` holds two pairs of checksummed
//! slots, each saying "transaction `seq` has been applied up to (not
//! including) op `next`", and whether that is its end ("done"). A value is
//! written to both slots of a pair, always the pair that does not hold the
//! newest durable value, so a torn write loses at most the value being
//! written — never the previous one — and one damaged slot never loses a value.
//!
//! Invariant: once `reset` returned, the file holds all four slots and at
//! least one pair holds a valid value, so a short file or one without any
//! valid slot is damage, not a crash state. The value this module reports
//! for a transaction only grows, and it only counts a write as durable after
//! the caller's `sync` succeeded.

use super::progress_path;
use crate::backend::{is_not_found, Backend};
use std::io;

const SLOT_MAGIC: [u8; 4] = *b"MCP2";
/// The slots of journal format 1: no flags, no mirror. Still read, so a
/// transaction an older mcfs left committed resumes where it stopped.
const LEGACY_MAGIC: [u8; 4] = *b"MCPG";
/// Slot layout: magic[4], flags u32, seq u64, next u64, crc32c u32 of bytes 0..24.
const SLOT_LEN: usize = 28;
const DONE: u32 = 1;
/// `SLOT_OFFSETS[pair]`: the two copies of a pair, one slot per sector, so a
/// torn sector never touches another slot.
const SLOT_OFFSETS: [[u64; 2]; 2] = [[0, 1024], [512, 1536]];
/// Length of a file holding all four slots.
pub const PROGRESS_LEN: u64 = 1536 + SLOT_LEN as u64;
/// What `reset` writes: transaction 0 (never begun), done.
const RESET: Progress = Progress { seq: 0, next: 0, done: true };

/// Compared by transaction, then op, then done-ness: the larger is newer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Progress {
    pub seq: u64,
    pub next: u64,
    /// `next` is the transaction's end: it is applied.
    pub done: bool,
}

/// A valid slot: its value, and whether an mcfs of journal format 1 wrote
/// it (such a slot has no "done" flag, so it claims nothing about it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slot {
    value: Progress,
    legacy: bool,
}

impl Progress {
    fn encode(self) -> [u8; SLOT_LEN] {
        let mut out = [0u8; SLOT_LEN];
        out[0..4].copy_from_slice(&SLOT_MAGIC);
        out[4..8].copy_from_slice(&u32::from(self.done).to_le_bytes());
        out[8..16].copy_from_slice(&self.seq.to_le_bytes());
        out[16..24].copy_from_slice(&self.next.to_le_bytes());
        let crc = crc32c::crc32c(&out[..24]);
        out[24..28].copy_from_slice(&crc.to_le_bytes());
        out
    }

    /// A valid slot (current or legacy format), or `None`.
    fn decode(b: &[u8]) -> Option<Slot> {
        let b: &[u8; SLOT_LEN] = b.get(..SLOT_LEN)?.try_into().ok()?;
        let crc = u32::from_le_bytes(b[24..28].try_into().ok()?);
        let flags = u32::from_le_bytes(b[4..8].try_into().ok()?);
        let legacy = match b[0..4].try_into().ok()? {
            SLOT_MAGIC if flags & !DONE == 0 => false,
            LEGACY_MAGIC if flags == 0 => true,
            _ => return None,
        };
        if crc != crc32c::crc32c(&b[..24]) {
            return None;
        }
        let value = Progress {
            seq: u64::from_le_bytes(b[8..16].try_into().ok()?),
            next: u64::from_le_bytes(b[16..24].try_into().ok()?),
            done: flags & DONE != 0,
        };
        Some(Slot { value, legacy })
    }
}

pub struct ProgressFile {
    /// What each slot durably holds, as far as this process knows.
    durable: [[Option<Slot>; 2]; 2],
    /// A pair written since the last sync, with its value.
    pending: Option<(usize, Progress)>,
    /// Length of the file when loaded (0 if it was missing).
    loaded_len: u64,
    /// Bytes written to the file by this process.
    written: u64,
}

impl ProgressFile {
    /// Reads the slots; a missing file or a damaged slot holds nothing.
    /// (`read_at` returns fewer bytes than asked only at end of file.)
    pub fn load(backend: &dyn Backend) -> io::Result<ProgressFile> {
        let mut image = [0u8; PROGRESS_LEN as usize];
        let loaded_len = match backend.stat(&progress_path()) {
            Ok(attr) => {
                backend.read_at(&progress_path(), 0, &mut image)?;
                attr.size
            }
            Err(e) if is_not_found(&e) => 0,
            Err(e) => return Err(e),
        };
        // Bytes past the end of the file read as zero: no valid slot there.
        let durable = SLOT_OFFSETS.map(|pair| pair.map(|offset| Progress::decode(&image[offset as usize..])));
        Ok(ProgressFile { durable, pending: None, loaded_len, written: 0 })
    }

    fn slots(&self) -> impl Iterator<Item = Slot> + '_ {
        self.durable.iter().flatten().flatten().copied()
    }

    /// The newest value a valid slot of the current format holds: the
    /// only kind that says whether a transaction is done.
    pub fn newest(&self) -> Option<Progress> {
        self.slots().filter(|s| !s.legacy).map(|s| s.value).max()
    }

    /// The op index transaction `seq` resumes at: 0 unless a slot says more.
    pub fn resume_index(&self, seq: u64) -> u64 {
        self.slots().filter(|s| s.value.seq == seq).map(|s| s.value.next).max().unwrap_or(0)
    }

    /// Where transaction `seq` of a run resumes: `None` if it is applied
    /// (done, or a later transaction has progress, as runs go in commit
    /// order), else its resume point.
    pub fn resume_point(&self, seq: u64) -> Option<u64> {
        let later = self.slots().any(|s| s.value.seq > seq);
        (!later && !self.is_done(seq)).then(|| self.resume_index(seq))
    }

    /// A valid slot says transaction `seq` is applied to its end.
    pub fn is_done(&self, seq: u64) -> bool {
        self.slots().any(|s| s.value.seq == seq && s.value.done)
    }

    /// Why the file, as loaded, cannot be what `reset` and `write` leave
    /// behind (see the module invariant), if it cannot.
    pub fn damage(&self) -> Option<String> {
        if self.loaded_len < PROGRESS_LEN {
            return Some(format!(
                "is {} bytes long, but its slots take {PROGRESS_LEN}: it was truncated",
                self.loaded_len
            ));
        }
        if self.slots().next().is_none() {
            return Some("holds no valid progress record (all four slots are damaged)".into());
        }
        None
    }

    /// Forgets the progress of finished transactions, so a later one may
    /// reuse their numbers (the engine counts from 1 at every mount), and
    /// leaves every slot valid. Only called while no transaction is
    /// committed. Synced at once: in a crash image where a new txn's
    /// unsynced commit record survived, a stale slot with its number would
    /// otherwise send recovery into its middle.
    pub fn reset(&mut self, backend: &dyn Backend) -> io::Result<()> {
        let fresh = [[Some(Slot { value: RESET, legacy: false }); 2]; 2];
        if self.durable == fresh && self.loaded_len >= PROGRESS_LEN {
            return Ok(());
        }
        let mut image = vec![0u8; PROGRESS_LEN as usize];
        for offset in SLOT_OFFSETS.iter().flatten() {
            image[*offset as usize..][..SLOT_LEN].copy_from_slice(&RESET.encode());
        }
        backend.write_at(&progress_path(), 0, &image)?;
        backend.sync()?;
        self.written += image.len() as u64;
        self.durable = fresh;
        self.loaded_len = PROGRESS_LEN;
        self.pending = None;
        Ok(())
    }

    /// Writes `p` into both slots of the pair that does not hold the newest
    /// durable value. Returns the bytes written. Not durable until `synced`.
    /// The caller writes a record only once every op before its `next` is
    /// durable, so the value is true even before it is synced.
    pub fn write(&mut self, backend: &dyn Backend, p: Progress) -> io::Result<u64> {
        let value = |pair: &[Option<Slot>; 2]| pair.iter().flatten().map(|s| s.value).max();
        let newest = usize::from(value(&self.durable[1]) > value(&self.durable[0]));
        self.write_pair(backend, 1 - newest, p)
    }

    /// After a write that failed (before, during or after reaching the
    /// file): writes the same value again. The pair then holds it, not some
    /// unknown mix, and a sync makes it durable; until then the caller may
    /// issue no op (a surviving record must never be older than ops issued
    /// after it, nor newer than the ops replayed since).
    pub fn rewrite_pending(&mut self, backend: &dyn Backend) -> io::Result<u64> {
        match self.pending {
            Some((pair, p)) => self.write_pair(backend, pair, p),
            None => Ok(0),
        }
    }

    fn write_pair(&mut self, backend: &dyn Backend, pair: usize, p: Progress) -> io::Result<u64> {
        // Pending from the first byte on: a failed write may still have landed.
        self.pending = Some((pair, p));
        for offset in SLOT_OFFSETS[pair] {
            backend.write_at(&progress_path(), offset, &p.encode())?;
            self.written += SLOT_LEN as u64;
        }
        Ok(2 * SLOT_LEN as u64)
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
        if let Some((pair, p)) = self.pending.take() {
            self.durable[pair] = [Some(Slot { value: p, legacy: false }); 2];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::MemBackend;

    #[test]
    fn journal_progress_slot_round_trip_and_damage() {
        for p in [Progress { seq: 42, next: 7, done: false }, Progress { seq: 42, next: 9, done: true }] {
            let bytes = p.encode();
            assert_eq!(Progress::decode(&bytes), Some(Slot { value: p, legacy: false }));
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

    #[test]
    fn journal_progress_legacy_slots_are_read_but_claim_nothing() {
        let mut legacy = [0u8; SLOT_LEN];
        legacy[0..4].copy_from_slice(&LEGACY_MAGIC);
        legacy[8..16].copy_from_slice(&3u64.to_le_bytes());
        legacy[16..24].copy_from_slice(&5u64.to_le_bytes());
        let crc = crc32c::crc32c(&legacy[..24]);
        legacy[24..28].copy_from_slice(&crc.to_le_bytes());
        let value = Progress { seq: 3, next: 5, done: false };
        assert_eq!(Progress::decode(&legacy), Some(Slot { value, legacy: true }));
        legacy[4] = 1;
        assert_eq!(Progress::decode(&legacy), None, "legacy slots carry no flags");
    }

    /// After `reset` every value survives the loss of any one slot, and a
    /// value is only taken for durable once synced.
    #[test]
    fn journal_progress_values_survive_one_damaged_slot() {
        let b = MemBackend::new();
        b.create(std::path::Path::new(".mcfs"), crate::types::FileKind::Dir, 0o700, 0).unwrap();
        b.create(&progress_path(), crate::types::FileKind::File, 0o600, 0).unwrap();
        let mut file = ProgressFile::load(&b).unwrap();
        assert!(file.damage().is_some(), "a missing file is no valid progress file");
        file.reset(&b).unwrap();
        let values = [(1, 4, false), (1, 9, false), (1, 12, true), (2, 3, false)];
        for (seq, next, done) in values {
            let p = Progress { seq, next, done };
            file.write(&b, p).unwrap();
            assert_ne!(file.newest(), Some(p), "not durable before the sync");
            file.synced();
            let loaded = ProgressFile::load(&b).unwrap();
            assert_eq!((loaded.newest(), loaded.damage()), (Some(p), None));
            for offset in SLOT_OFFSETS.iter().flatten() {
                let damaged = MemBackend::clone(&b);
                damaged.write_at(&progress_path(), *offset + 9, &[0xff]).unwrap();
                assert_eq!(ProgressFile::load(&damaged).unwrap().newest(), Some(p), "slot at {offset} damaged");
            }
        }
        assert_eq!(ProgressFile::load(&b).unwrap().resume_index(1), 12);
    }
}
