//! `RecentPaths`: paths resolved lately, byte for byte as the caller spelt
//! them, with the numbers of the objects they name. `MemBackend` keeps one,
//! so a call on one of them, or on a plain name in one of them, skips
//! splitting and walking the whole path (an apply calls the store for the
//! ops of a few files at a time, mostly in one directory, and each path has
//! five or six names); the simulator's replay keeps one for trace paths.
//!
//! A path has one slot (its hash picks it), and a new path takes the slot
//! from the one there: a lookup costs one hash and one comparison, and
//! colliding paths cost only the full resolutions they would cost anyway.
//! The path found last is compared first, without hashing: consecutive
//! calls mostly name one file.
//!
//! Invariant (the owner's to keep): every entry's path resolves to the
//! object it names. The owner forgets every entry (`clear`) when a path may
//! come to name another object or none: when a name goes or moves (a new
//! name binds a path that did not resolve, so it needs nothing).

use crate::types::InoHasher;
use std::hash::Hasher;

/// Slots: a few dozen files and their directories.
const SLOT_BITS: u32 = 6;
const SLOTS: usize = 1 << SLOT_BITS;

/// The number no entry names (inode numbers start at 1).
const EMPTY: u64 = 0;

#[derive(Clone, Default)]
pub struct RecentPaths {
    /// `SLOTS` entries once the first is made; `EMPTY` marks a free one.
    slots: Vec<(Vec<u8>, u64)>,
    /// The slot of the path found or remembered last.
    last: usize,
}

impl RecentPaths {
    /// The object `path` resolved to, if it holds its slot.
    pub fn get(&mut self, path: &[u8]) -> Option<u64> {
        if let Some(id) = self.held(self.last, path) {
            return Some(id);
        }
        let slot = slot_of(path);
        let id = self.held(slot, path)?;
        self.last = slot;
        Some(id)
    }

    /// The object of `path` if it holds `slot`.
    fn held(&self, slot: usize, path: &[u8]) -> Option<u64> {
        let (kept, id) = self.slots.get(slot)?;
        (*id != EMPTY && kept == path).then_some(*id)
    }

    /// Remembers that `path` resolved to object `id` (not 0), in place of
    /// the path in its slot.
    pub fn insert(&mut self, path: &[u8], id: u64) {
        if self.slots.is_empty() {
            self.slots.resize(SLOTS, (Vec::new(), EMPTY));
        }
        self.last = slot_of(path);
        let (kept, kept_id) = &mut self.slots[self.last];
        kept.clear();
        kept.extend_from_slice(path);
        *kept_id = id;
    }

    pub fn clear(&mut self) {
        self.slots.iter_mut().for_each(|(_, id)| *id = EMPTY);
    }
}

/// The path's slot: `InoHasher`'s word hash, its top bits (a colliding path
/// costs one walk, so no stronger hash is needed).
fn slot_of(path: &[u8]) -> usize {
    let mut hasher = InoHasher::default();
    hasher.write(path);
    (hasher.finish() >> (u64::BITS - SLOT_BITS)) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_paths_until_their_slot_is_taken_and_forgets_them_all_at_once() {
        let mut recent = RecentPaths::default();
        assert_eq!(recent.get(b"d/f"), None);
        let paths: Vec<String> = (0..SLOTS * 4).map(|i| format!("d/f{i}")).collect();
        for (i, p) in paths.iter().enumerate() {
            recent.insert(p.as_bytes(), i as u64 + 1);
        }
        let last = paths.last().unwrap().as_bytes();
        assert_eq!(recent.get(last), Some(paths.len() as u64), "the latest path holds its slot");
        for (i, p) in paths.iter().enumerate() {
            let got = recent.get(p.as_bytes());
            assert!(got.is_none() || got == Some(i as u64 + 1), "{p}: an entry names its own inode");
        }
        let kept = paths.iter().filter(|p| recent.get(p.as_bytes()).is_some()).count();
        assert!(kept > SLOTS / 2 && kept <= SLOTS, "{kept} of {SLOTS} slots hold a path");
        recent.clear();
        assert!(paths.iter().all(|p| recent.get(p.as_bytes()).is_none()));
    }
}
