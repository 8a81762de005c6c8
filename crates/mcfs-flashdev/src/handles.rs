//! Open handles: the number the kernel gets for an open file or directory, and what it stands for
//! (a backing `File`, or a directory listing).
//!
//! Invariant: a handle number is never reused while the session lives, so a stale number from the
//! kernel is EBADF, never someone else's file.

use fuser::Errno;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

pub struct Handles<T> {
    table: Mutex<(u64, HashMap<u64, Arc<T>>)>,
}

impl<T> Default for Handles<T> {
    fn default() -> Handles<T> {
        Handles { table: Mutex::new((0, HashMap::new())) }
    }
}

impl<T> Handles<T> {
    pub fn insert(&self, value: T) -> u64 {
        let mut table = self.table.lock();
        table.0 += 1;
        let fh = table.0;
        table.1.insert(fh, Arc::new(value));
        fh
    }

    pub fn get(&self, fh: u64) -> Result<Arc<T>, Errno> {
        self.table.lock().1.get(&fh).cloned().ok_or(Errno::EBADF)
    }

    /// Forgets `fh`; the value goes once the last request using it is done.
    pub fn remove(&self, fh: u64) {
        self.table.lock().1.remove(&fh);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_fresh_and_stale_ones_are_ebadf() {
        let handles = Handles::default();
        let (a, b) = (handles.insert("a"), handles.insert("b"));
        assert_ne!(a, b);
        assert_eq!(*handles.get(a).expect("a"), "a");
        handles.remove(a);
        assert_eq!(handles.get(a).err(), Some(Errno::EBADF));
        assert_ne!(handles.insert("c"), a, "never reused");
        assert_eq!(handles.get(0).err(), Some(Errno::EBADF));
    }
}
