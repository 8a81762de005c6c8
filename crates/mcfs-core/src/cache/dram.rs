//! The DRAM tier: page slots in memory, shared with the versions closed VCTs
//! hold through reference counts. Writing a slot a version still shares
//! copies it first (copy-on-write); writing one nobody else holds changes it
//! in place.
//!
//! Buffers nothing holds any more (a slot freed or a version released by
//! its last holder) go to a small pool of spares that the next stores take:
//! a full cache frees a page for every page it takes in, and reusing the
//! buffer saves an allocation and a free per page, and on a VM that charges
//! memory touched the first time, the touch (docs/ENGINE.md, "Memory").
//!
//! Invariant: `versions` counts the page copies only versions hold — a slot
//! freed or copied away from while shared adds one, the release of the last
//! holder of such a copy removes it. Spares are not counted: they hold no
//! page, and at most `SPARE_PAGES` of them are kept.

use super::tier::{Durability, PageBuf, PageVersion, Slot, Tier, TierId};
use crate::types::PAGE_SIZE;
use std::sync::Arc;

/// Spare buffers kept at most (1 MiB): one 1 MiB write's worth, which is
/// what a full cache frees and takes in per request of a sequential write.
const SPARE_PAGES: usize = 256;

pub struct Dram {
    id: TierId,
    capacity: u64,
    slots: Vec<Option<Arc<PageBuf>>>,
    /// Free entries of `slots`, reused first.
    free: Vec<u64>,
    used: u64,
    versions: u64,
    /// Buffers no slot or version holds, each with one reference: this one.
    spare: Vec<Arc<PageBuf>>,
}

impl Dram {
    pub fn new(id: TierId, capacity: u64) -> Dram {
        Dram { id, capacity, slots: Vec::new(), free: Vec::new(), used: 0, versions: 0, spare: Vec::new() }
    }

    /// A buffer holding `bytes`: a spare one if there is one.
    fn buffer_of(&mut self, bytes: &PageBuf) -> Arc<PageBuf> {
        while let Some(mut spare) = self.spare.pop() {
            if let Some(buf) = Arc::get_mut(&mut spare) {
                buf.copy_from_slice(bytes);
                return spare;
            }
        }
        Arc::new(*bytes)
    }

    /// Keeps `data` as a spare if this was its last holder and the pool has room.
    fn recycle(&mut self, data: Arc<PageBuf>) {
        if Arc::strong_count(&data) == 1 && self.spare.len() < SPARE_PAGES {
            self.spare.push(data);
        }
    }

    fn slot(&self, slot: Slot) -> &Arc<PageBuf> {
        self.slots[slot.0 as usize].as_ref().expect("a slot in use")
    }
}

impl Tier for Dram {
    fn name(&self) -> &'static str {
        "dram"
    }

    fn durability(&self) -> Durability {
        Durability::Volatile
    }

    fn capacity(&self) -> u64 {
        self.capacity
    }

    fn used_bytes(&self) -> u64 {
        (self.used + self.versions) * PAGE_SIZE
    }

    fn slots_used(&self) -> u64 {
        self.used
    }

    fn store(&mut self, bytes: &PageBuf) -> Slot {
        let data = self.buffer_of(bytes);
        self.used += 1;
        match self.free.pop() {
            Some(at) => {
                self.slots[at as usize] = Some(data);
                Slot(at)
            }
            None => {
                self.slots.push(Some(data));
                Slot(self.slots.len() as u64 - 1)
            }
        }
    }

    fn load(&self, slot: Slot) -> &PageBuf {
        self.slot(slot)
    }

    fn load_mut(&mut self, slot: Slot) -> &mut PageBuf {
        let shared = Arc::get_mut(self.slots[slot.0 as usize].as_mut().expect("a slot in use")).is_none();
        if shared {
            self.versions += 1; // the version keeps the old bytes alone now
            let old = Arc::clone(self.slot(slot));
            let copy = self.buffer_of(&old);
            self.slots[slot.0 as usize] = Some(copy);
        }
        Arc::get_mut(self.slots[slot.0 as usize].as_mut().expect("a slot in use")).expect("not shared now")
    }

    fn free(&mut self, slot: Slot) {
        let data = self.slots[slot.0 as usize].take().expect("a slot in use");
        if Arc::strong_count(&data) > 1 {
            self.versions += 1;
        }
        self.used -= 1;
        self.free.push(slot.0);
        self.recycle(data);
    }

    fn freeze(&mut self, slot: Slot) -> PageVersion {
        PageVersion::shared(self.id, Arc::clone(self.slot(slot)))
    }

    fn release(&mut self, version: PageVersion) {
        let data = version.into_shared();
        if Arc::strong_count(&data) == 1 {
            debug_assert!(self.versions > 0, "a version released that the DRAM tier did not count");
            self.versions -= 1;
        }
        self.recycle(data);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(byte: u8) -> PageBuf {
        [byte; PAGE_SIZE as usize]
    }

    #[test]
    fn writing_a_frozen_slot_copies_it_and_the_copy_counts_until_released() {
        let mut dram = Dram::new(0, 1 << 20);
        let slot = dram.store(&page(7));
        let version = dram.freeze(slot);
        dram.load_mut(slot)[0] = 9;
        assert_eq!((version.bytes()[0], dram.load(slot)[0]), (7, 9), "the version keeps its bytes");
        assert_eq!(dram.used_bytes(), 2 * PAGE_SIZE);
        dram.load_mut(slot)[1] = 9;
        assert_eq!(dram.used_bytes(), 2 * PAGE_SIZE, "an unshared slot is written in place");
        dram.release(version);
        assert_eq!(dram.used_bytes(), PAGE_SIZE);
    }

    #[test]
    fn a_freed_slot_a_version_holds_counts_until_released_and_is_reused() {
        let mut dram = Dram::new(0, 1 << 20);
        let slot = dram.store(&page(1));
        let version = dram.freeze(slot);
        dram.free(slot);
        assert_eq!((dram.slots_used(), dram.used_bytes()), (0, PAGE_SIZE));
        assert_eq!(dram.store(&page(2)), slot, "the free slot is reused");
        dram.release(version);
        assert_eq!(dram.used_bytes(), PAGE_SIZE);
        // A version released while its slot is live frees nothing.
        let version = dram.freeze(slot);
        dram.release(version);
        assert_eq!(dram.used_bytes(), PAGE_SIZE);
    }

    #[test]
    fn buffers_nothing_holds_are_reused_by_the_next_stores_and_copies() {
        let mut dram = Dram::new(0, 1 << 20);
        let slot = dram.store(&page(1));
        let buffer = dram.load(slot).as_ptr();
        dram.free(slot);
        let slot = dram.store(&page(2));
        assert_eq!((dram.load(slot).as_ptr(), dram.load(slot)[0]), (buffer, 2), "the freed buffer, new bytes");
        // A version's buffer is reused once its last holder releases it,
        // here by the copy a write of the slot makes while a version holds it.
        let version = dram.freeze(slot);
        dram.load_mut(slot)[0] = 3;
        let copy = dram.load(slot).as_ptr();
        assert_ne!(copy, buffer);
        dram.release(version);
        dram.free(slot);
        let (a, b) = (dram.store(&page(4)), dram.store(&page(5)));
        let reused = [dram.load(a).as_ptr(), dram.load(b).as_ptr()];
        assert!(reused.contains(&buffer) && reused.contains(&copy), "both buffers reused");
        assert_eq!((dram.load(a)[0], dram.load(b)[0], dram.used_bytes()), (4, 5, 2 * PAGE_SIZE));
    }

    #[test]
    fn a_buffer_a_version_still_holds_is_not_reused() {
        let mut dram = Dram::new(0, 1 << 20);
        let slot = dram.store(&page(1));
        let version = dram.freeze(slot);
        dram.free(slot);
        let other = dram.store(&page(2));
        assert_eq!((version.bytes()[0], dram.load(other)[0]), (1, 2));
        assert_ne!(dram.load(other).as_ptr(), version.bytes().as_ptr());
        dram.release(version);
    }
}
