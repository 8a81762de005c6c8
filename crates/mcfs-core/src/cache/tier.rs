//! A tier: a store of page slots the cache places pages in (DRAM today; an
//! NVM tier and a compressed second-level store are meant to plug in here).
//! A slot holds one page's bytes. Closing a VCT freezes a slot's current
//! bytes as a `PageVersion`; a later write to that slot must leave the
//! version as it was (DRAM copies the page on write).
//!
//! Invariant: `used_bytes` is `PAGE_SIZE` times the slots in use plus the
//! versions only closed VCTs still hold.

use crate::types::PAGE_SIZE;
use std::sync::Arc;

pub type PageBuf = [u8; PAGE_SIZE as usize];

/// Index of a tier in the cache's tier list.
pub type TierId = u8;

/// A page slot within one tier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot(pub(super) u64);

/// What survives a power loss in a tier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// Gone at power loss (DRAM): only the journal and the backing store keep data.
    Volatile,
    /// Kept across power loss (NVM): a frozen version may serve as its own journal record.
    Persistent,
}

pub trait Tier: Send {
    fn name(&self) -> &'static str;
    fn durability(&self) -> Durability;
    /// Bytes the tier may hold before reclaim must make room.
    fn capacity(&self) -> u64;
    /// Bytes held: slots in use and versions kept for closed VCTs.
    fn used_bytes(&self) -> u64;
    /// Slots in use (for `Cache::check_invariants`).
    fn slots_used(&self) -> u64;
    /// Puts a page's bytes in a new slot.
    fn store(&mut self, data: Arc<PageBuf>) -> Slot;
    fn load(&self, slot: Slot) -> &PageBuf;
    /// The slot's bytes for writing; a version frozen from it keeps its bytes.
    fn load_mut(&mut self, slot: Slot) -> &mut PageBuf;
    /// The slot is no longer in the cache (versions frozen from it stay).
    fn free(&mut self, slot: Slot);
    /// The slot's current bytes, frozen for a closed VCT.
    fn freeze(&mut self, slot: Slot) -> PageVersion;
    /// A closed VCT no longer needs `version`.
    fn release(&mut self, version: PageVersion);
}

/// The version of a page a closed VCT holds: what it commits, whatever
/// happens to the page in the cache meanwhile. Only the tier it came from
/// makes or releases it (`Cache::freeze`, `Cache::release_version`); its
/// bytes are readable without the cache (the checkpointer compiles them
/// without the state lock). A tier that can keep versions in place (NVM)
/// adds a variant naming its slot. A clone is one more holder of the same
/// version (a borrowed view of a batch's entry); the tier counts the
/// version's bytes until its last holder is released.
#[derive(Clone, Debug)]
pub struct PageVersion {
    tier: TierId,
    held: Held,
}

#[derive(Clone, Debug)]
enum Held {
    /// Bytes shared with the live slot until either changes (copy-on-write).
    Shared(Arc<PageBuf>),
}

impl PageVersion {
    pub(super) fn shared(tier: TierId, bytes: Arc<PageBuf>) -> PageVersion {
        PageVersion { tier, held: Held::Shared(bytes) }
    }

    pub fn tier(&self) -> TierId {
        self.tier
    }

    pub fn bytes(&self) -> &PageBuf {
        match &self.held {
            Held::Shared(bytes) => bytes,
        }
    }

    /// The shared bytes, for the tier that made the version.
    pub(super) fn into_shared(self) -> Arc<PageBuf> {
        match self.held {
            Held::Shared(bytes) => bytes,
        }
    }
}
