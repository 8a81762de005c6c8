//! The DRAM tier: page slots in memory, shared with the versions closed VCTs
//! hold through reference counts. Writing a slot a version still shares
//! copies it first (copy-on-write); writing one nobody else holds changes it
//! in place. Over a store with known content, pages of it are held without
//! their bytes (`Page::Known`), shared and counted alike.
//!
//! Invariant: `versions` counts the page copies only versions hold — a slot
//! freed or copied away from while shared adds one, the release of the last
//! holder of such a copy removes it.

use super::tier::{known_len, Durability, NewPage, Page, PageBuf, PageVersion, Slot, Tier, TierId};
use crate::backend::KnownContent;
use crate::types::PAGE_SIZE;
use std::ops::Range;

pub struct Dram {
    id: TierId,
    capacity: u64,
    slots: Vec<Option<Page>>,
    /// Free entries of `slots`, reused first.
    free: Vec<u64>,
    used: u64,
    versions: u64,
    /// The store's known content, if any: pages of it are kept as `Page::Known`.
    known: Option<KnownContent>,
    /// Where a `Page::Known` is read into.
    scratch: Box<PageBuf>,
}

impl Dram {
    pub fn new(id: TierId, capacity: u64, known: Option<KnownContent>) -> Dram {
        let scratch = Box::new([0; PAGE_SIZE as usize]);
        Dram { id, capacity, slots: Vec::new(), free: Vec::new(), used: 0, versions: 0, known, scratch }
    }

    fn slot(&self, slot: Slot) -> &Page {
        self.slots[slot.0 as usize].as_ref().expect("a slot in use")
    }

    /// The slot's page to change (`Page::write` unshares it); a version
    /// frozen from it keeps its own.
    fn page_mut(&mut self, slot: Slot) -> &mut Page {
        let page = self.slots[slot.0 as usize].as_mut().expect("a slot in use");
        if page.shared() {
            self.versions += 1; // the version keeps the old content alone now
        }
        page
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

    fn store(&mut self, page: NewPage, offset: u64) -> Slot {
        let data = match page {
            NewPage::Owned(bytes) => match known_len(self.known, offset, &bytes) {
                Some(len) => Page::known(len),
                None => Page::Bytes(bytes),
            },
            NewPage::Copy(bytes) => Page::of(bytes, offset, self.known),
            NewPage::Zeros => Page::zeros(self.known),
        };
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

    fn read(&mut self, slot: Slot, offset: u64) -> &PageBuf {
        let page = self.slots[slot.0 as usize].as_ref().expect("a slot in use");
        page.bytes(offset, self.known, &mut self.scratch)
    }

    fn write(&mut self, slot: Slot, offset: u64, within: usize, bytes: &[u8]) {
        let known = self.known;
        self.page_mut(slot).write(offset, within, bytes, known);
    }

    fn zero(&mut self, slot: Slot, offset: u64, range: Range<usize>) {
        let known = self.known;
        self.page_mut(slot).zero(offset, range, known);
    }

    fn free(&mut self, slot: Slot) {
        let page = self.slots[slot.0 as usize].take().expect("a slot in use");
        if page.shared() {
            self.versions += 1;
        }
        self.used -= 1;
        self.free.push(slot.0);
    }

    fn freeze(&mut self, slot: Slot) -> PageVersion {
        PageVersion::shared(self.id, self.slot(slot).clone())
    }

    fn release(&mut self, version: PageVersion) {
        if !version.into_shared().shared() {
            debug_assert!(self.versions > 0, "a version released that the DRAM tier did not count");
            self.versions -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::test_content::RAMP;
    use crate::cache::VersionContent;
    use std::sync::Arc;

    fn page(byte: u8) -> NewPage<'static> {
        NewPage::Owned(Arc::new([byte; PAGE_SIZE as usize]))
    }

    #[test]
    fn writing_a_frozen_slot_copies_it_and_the_copy_counts_until_released() {
        let mut dram = Dram::new(0, 1 << 20, None);
        let slot = dram.store(page(7), 0);
        let version = dram.freeze(slot);
        dram.write(slot, 0, 0, &[9]);
        assert_eq!(version.content(), VersionContent::Bytes(&[7; PAGE_SIZE as usize]), "the version keeps its bytes");
        assert_eq!(dram.read(slot, 0)[..2], [9, 7]);
        assert_eq!(dram.used_bytes(), 2 * PAGE_SIZE);
        dram.write(slot, 0, 1, &[9]);
        assert_eq!(dram.used_bytes(), 2 * PAGE_SIZE, "an unshared slot is written in place");
        dram.release(version);
        assert_eq!(dram.used_bytes(), PAGE_SIZE);
    }

    #[test]
    fn a_freed_slot_a_version_holds_counts_until_released_and_is_reused() {
        let mut dram = Dram::new(0, 1 << 20, None);
        let slot = dram.store(page(1), 0);
        let version = dram.freeze(slot);
        dram.free(slot);
        assert_eq!((dram.slots_used(), dram.used_bytes()), (0, PAGE_SIZE));
        assert_eq!(dram.store(page(2), 0), slot, "the free slot is reused");
        dram.release(version);
        assert_eq!(dram.used_bytes(), PAGE_SIZE);
        // A version released while its slot is live frees nothing.
        let version = dram.freeze(slot);
        dram.release(version);
        assert_eq!(dram.used_bytes(), PAGE_SIZE);
    }

    /// The same calls on a tier over a store with known content and on one
    /// without: the same memory counted after each (the engine's decisions
    /// rest on it), the same bytes read, and pages of the content kept
    /// without their bytes (`Known`) — their versions hand on no bytes.
    #[test]
    fn pages_of_known_content_are_counted_and_read_as_pages_with_bytes() {
        let known = |offset: u64| {
            let mut bytes = [0; PAGE_SIZE as usize];
            (RAMP.fill)(offset, &mut bytes);
            bytes
        };
        let (at0, at1) = (known(0), known(PAGE_SIZE));
        let (mut plain, mut marked) = (Dram::new(0, 1 << 20, None), Dram::new(0, 1 << 20, Some(RAMP)));
        let (mut plain_versions, mut marked_versions) = (Vec::new(), Vec::new());
        type Step<'a> = &'a dyn Fn(&mut Dram, &mut Vec<PageVersion>);
        let steps: [(&str, Step); 15] = [
            ("a whole page of the content", &|t, _| assert_eq!(t.store(NewPage::Copy(&at1), PAGE_SIZE), Slot(0))),
            ("zeros", &|t, _| assert_eq!(t.store(NewPage::Zeros, 0), Slot(1))),
            ("zeros to append to", &|t, _| assert_eq!(t.store(NewPage::Zeros, 0), Slot(2))),
            ("an append", &|t, _| t.write(Slot(2), 0, 0, &at0[..100])),
            ("freeze the append", &|t, v| v.push(t.freeze(Slot(2)))),
            ("the next append", &|t, _| t.write(Slot(2), 0, 100, &at0[100..300])),
            ("a hole cut in it, as a truncate and its growth do", &|t, _| t.zero(Slot(2), 0, 200..4096)),
            ("release the append", &|t, v| t.release(v.remove(0))),
            ("freeze", &|t, v| v.push(t.freeze(Slot(0)))),
            ("the content written again", &|t, _| t.write(Slot(0), PAGE_SIZE, 100, &at1[100..200])),
            ("freeze", &|t, v| v.push(t.freeze(Slot(0)))),
            ("other bytes", &|t, _| t.write(Slot(0), PAGE_SIZE, 5, &[1, 2])),
            ("the content over zeros", &|t, _| t.write(Slot(1), 0, 0, &at0)),
            ("release", &|t, v| t.release(v.remove(0))),
            ("free", &|t, _| t.free(Slot(1))),
        ];
        for (what, step) in steps {
            step(&mut plain, &mut plain_versions);
            step(&mut marked, &mut marked_versions);
            assert_eq!(plain.used_bytes(), marked.used_bytes(), "after {what}");
            assert_eq!(plain.slots_used(), marked.slots_used(), "after {what}");
            assert_eq!(plain.read(Slot(0), PAGE_SIZE), marked.read(Slot(0), PAGE_SIZE), "after {what}");
            if plain.slots.get(2).is_some_and(Option::is_some) {
                assert_eq!(plain.read(Slot(2), 0), marked.read(Slot(2), 0), "after {what}");
            }
        }
        assert!(matches!(plain_versions[0].content(), VersionContent::Bytes(_)));
        let before_other_bytes = marked_versions[0].content();
        assert_eq!(before_other_bytes, VersionContent::Known(4096), "the version before other bytes came");
        assert_eq!(marked.freeze(Slot(2)).content(), VersionContent::Known(200), "the append, cut at 200 bytes");
        let mut expected = at1;
        expected[5..7].copy_from_slice(&[1, 2]);
        assert_eq!(marked.read(Slot(0), PAGE_SIZE), &expected, "other bytes: the page has its bytes now");
    }

    /// A page read from the store is kept without its bytes when it is the
    /// content up to some point and zeros after it: a whole page of it, a
    /// hole (all zeros: the reads of a block trace's unwritten sectors held
    /// 256 MiB of them), the end of a file. Anything else keeps its bytes.
    #[test]
    fn a_page_read_from_the_store_keeps_no_bytes_when_it_is_known_content_then_zeros() {
        let mut dram = Dram::new(0, 1 << 20, Some(RAMP));
        let at = 3 * PAGE_SIZE;
        let mut whole = [0; PAGE_SIZE as usize];
        (RAMP.fill)(at, &mut whole);
        let mut end_of_file = [0; PAGE_SIZE as usize];
        end_of_file[..100].copy_from_slice(&whole[..100]);
        let mut other = end_of_file;
        other[4000] = 1;
        for (what, bytes, kept) in [
            ("a whole page of the content", whole, VersionContent::Known(4096)),
            ("a hole", [0; PAGE_SIZE as usize], VersionContent::Known(0)),
            ("the end of a file", end_of_file, VersionContent::Known(100)),
            ("a byte that is not the content", other, VersionContent::Bytes(&other)),
        ] {
            let slot = dram.store(NewPage::Owned(Arc::new(bytes)), at);
            assert_eq!(dram.freeze(slot).content(), kept, "{what}");
            assert_eq!(dram.read(slot, at), &bytes, "{what} reads back as it was");
        }
    }
}
