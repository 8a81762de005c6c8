//! A loaded directory's entries, by name and in stream order.
//!
//! Each entry holds a slot besides its inode: a number given when the name
//! entered the directory, larger than any slot given before in it, and kept
//! while the name stays (also when a rename replaces the file it names). A
//! directory stream in slot order can therefore go on after any offset with
//! no snapshot taken at opendir: a name that stays from the stream's start
//! to its end is returned exactly once, whatever else comes and goes (POSIX
//! readdir), and a name added meanwhile comes after every earlier slot. So
//! the mount serves readdir without FUSE directory handles (`mcfs-fuse`'s
//! `dir_stream`), and slots stay small enough for 32-bit `telldir`.

use crate::types::Ino;
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::sync::Arc;

#[derive(Default)]
pub struct Children {
    by_name: BTreeMap<Arc<OsStr>, Entry>,
    by_slot: BTreeMap<u64, Arc<OsStr>>,
    next_slot: u64,
}

#[derive(Clone, Copy)]
struct Entry {
    ino: Ino,
    slot: u64,
}

/// One entry as a directory stream returns it.
pub struct Slotted<'a> {
    pub slot: u64,
    pub name: &'a OsStr,
    pub ino: Ino,
}

impl Children {
    pub fn get(&self, name: &OsStr) -> Option<Ino> {
        self.by_name.get(name).map(|e| e.ino)
    }

    /// Makes `name` refer to `ino`; a new name takes the next slot.
    pub fn insert(&mut self, name: &OsStr, ino: Ino) {
        if let Some(entry) = self.by_name.get_mut(name) {
            entry.ino = ino;
            return;
        }
        let (name, slot) = (Arc::<OsStr>::from(name), self.next_slot);
        self.next_slot += 1;
        self.by_slot.insert(slot, Arc::clone(&name));
        self.by_name.insert(name, Entry { ino, slot });
    }

    pub fn remove(&mut self, name: &OsStr) -> Option<Ino> {
        let entry = self.by_name.remove(name)?;
        self.by_slot.remove(&entry.slot);
        Some(entry.ino)
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// The entries in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&OsStr, Ino)> {
        self.by_name.iter().map(|(name, e)| (&**name, e.ino))
    }

    /// Both orders hold the same names, each at its slot, every slot below
    /// the next one to give (`Engine::check_invariants`).
    pub fn check_invariants(&self) -> Result<(), String> {
        if self.by_name.len() != self.by_slot.len() {
            return Err(format!("{} names but {} slots", self.by_name.len(), self.by_slot.len()));
        }
        for (slot, name) in &self.by_slot {
            match self.by_name.get(name) {
                Some(entry) if entry.slot == *slot && *slot < self.next_slot => {}
                _ => return Err(format!("slot {slot} holds {name:?}, which the names do not put there")),
            }
        }
        Ok(())
    }

    /// The entries in stream order, from slot `first` on.
    pub fn stream_from(&self, first: u64) -> impl Iterator<Item = Slotted<'_>> {
        self.by_slot.range(first..).map(|(&slot, name)| Slotted { slot, name, ino: self.by_name[name].ino })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(c: &Children, first: u64) -> Vec<(u64, String)> {
        c.stream_from(first).map(|e| (e.slot, e.name.to_string_lossy().into_owned())).collect()
    }

    #[test]
    fn a_new_name_goes_after_every_slot_given_before() {
        let mut c = Children::default();
        c.insert(OsStr::new("b"), 10);
        c.insert(OsStr::new("a"), 11);
        c.remove(OsStr::new("b"));
        c.insert(OsStr::new("b"), 12);
        assert_eq!(stream(&c, 0), [(1, "a".to_string()), (2, "b".to_string())], "b came back after a");
        assert_eq!(c.iter().map(|(n, i)| (n.to_owned(), i)).collect::<Vec<_>>(), [("a".into(), 11), ("b".into(), 12)]);
    }

    #[test]
    fn a_replaced_name_keeps_its_slot() {
        let mut c = Children::default();
        c.insert(OsStr::new("x"), 1);
        c.insert(OsStr::new("y"), 2);
        c.insert(OsStr::new("x"), 3);
        assert_eq!(c.get(OsStr::new("x")), Some(3));
        assert_eq!(stream(&c, 0), [(0, "x".to_string()), (1, "y".to_string())]);
    }

    #[test]
    fn a_stream_resumed_after_removals_returns_each_remaining_name_once() {
        let mut c = Children::default();
        for (i, name) in ["p", "q", "r", "s"].iter().enumerate() {
            c.insert(OsStr::new(name), i as Ino + 10);
        }
        let first_part = stream(&c, 0)[..2].to_vec();
        c.remove(OsStr::new("p"));
        c.remove(OsStr::new("r"));
        c.insert(OsStr::new("a"), 20);
        let rest = stream(&c, first_part.last().unwrap().0 + 1);
        assert_eq!(rest, [(3, "s".to_string()), (4, "a".to_string())], "r is gone, s once, a after it");
        assert_eq!(c.remove(OsStr::new("p")), None);
        assert!(!c.is_empty());
        assert_eq!(c.check_invariants(), Ok(()));
    }

    #[test]
    fn the_invariant_check_sees_a_name_out_of_its_slot() {
        let mut c = Children::default();
        c.insert(OsStr::new("a"), 1);
        c.insert(OsStr::new("b"), 2);
        assert_eq!(c.check_invariants(), Ok(()));
        let b = c.by_slot.remove(&1).unwrap();
        c.by_slot.insert(7, b);
        assert!(c.check_invariants().unwrap_err().contains("slot 7"));
        c.by_slot.remove(&7);
        assert!(c.check_invariants().unwrap_err().contains("2 names but 1 slots"));
    }
}
