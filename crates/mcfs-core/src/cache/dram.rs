//! The DRAM tier: page slots in memory, shared with the versions closed VCTs
//! hold through reference counts. Writing a slot a version still shares
//! copies it first (copy-on-write); writing one nobody else holds changes it
//! in place.
//!
//! Invariant: `versions` counts the page copies only versions hold — a slot
//! freed or copied away from while shared adds one, the release of the last
//! holder of such a copy removes it.

use super::tier::{Durability, PageBuf, PageVersion, Slot, Tier, TierId};
use crate::types::PAGE_SIZE;
use std::sync::Arc;

pub struct Dram {
    id: TierId,
    capacity: u64,
    slots: Vec<Option<Arc<PageBuf>>>,
    /// Free entries of `slots`, reused first.
    free: Vec<u64>,
    used: u64,
    versions: u64,
}

impl Dram {
    pub fn new(id: TierId, capacity: u64) -> Dram {
        Dram { id, capacity, slots: Vec::new(), free: Vec::new(), used: 0, versions: 0 }
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

    fn store(&mut self, data: Arc<PageBuf>) -> Slot {
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
        let data = self.slots[slot.0 as usize].as_mut().expect("a slot in use");
        if Arc::get_mut(data).is_none() {
            self.versions += 1; // the version keeps the old bytes alone now
        }
        Arc::make_mut(data)
    }

    fn free(&mut self, slot: Slot) {
        let data = self.slots[slot.0 as usize].take().expect("a slot in use");
        if Arc::strong_count(&data) > 1 {
            self.versions += 1;
        }
        self.used -= 1;
        self.free.push(slot.0);
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(byte: u8) -> Arc<PageBuf> {
        Arc::new([byte; PAGE_SIZE as usize])
    }

    #[test]
    fn writing_a_frozen_slot_copies_it_and_the_copy_counts_until_released() {
        let mut dram = Dram::new(0, 1 << 20);
        let slot = dram.store(page(7));
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
        let slot = dram.store(page(1));
        let version = dram.freeze(slot);
        dram.free(slot);
        assert_eq!((dram.slots_used(), dram.used_bytes()), (0, PAGE_SIZE));
        assert_eq!(dram.store(page(2)), slot, "the free slot is reused");
        dram.release(version);
        assert_eq!(dram.used_bytes(), PAGE_SIZE);
        // A version released while its slot is live frees nothing.
        let version = dram.freeze(slot);
        dram.release(version);
        assert_eq!(dram.used_bytes(), PAGE_SIZE);
    }
}
