//! The inode table: which backing file each inode number the kernel holds stands for. Each entry
//! keeps an `O_PATH` descriptor on its file, so renames of it or of any directory above it, and hard
//! links, need no bookkeeping: the descriptor follows the file, not a path.
//!
//! Numbers: a file keeps its backing inode number (so `stat`, `ls -i` and `readdir` agree with the
//! backing store), except the backing root, which is the FUSE root (1), and a number already taken by
//! another file (a second device under BACKING, or a file numbered 1), which gets a spare number.
//!
//! Invariants: one entry per backing file (device, inode); an entry lives while the kernel holds a
//! lookup on it (the root always), and its descriptor keeps the backing inode alive, so the backing
//! number cannot be reused by another file while the kernel may still send it.

use fuser::Errno;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::sync::Arc;

/// The FUSE root inode.
pub const ROOT: u64 = 1;

/// Spare numbers start here, far above the inode numbers file systems hand out.
const FIRST_SPARE: u64 = 1 << 63;

/// A backing file: its device and inode number.
type Key = (u64, u64);

struct Entry {
    fd: Arc<OwnedFd>,
    key: Key,
    /// Lookups the kernel holds (ignored for the root, which is never forgotten).
    lookups: u64,
}

struct Tables {
    by_ino: HashMap<u64, Entry>,
    by_key: HashMap<Key, u64>,
    next_spare: u64,
}

pub struct Inodes {
    tables: Mutex<Tables>,
}

fn key_of(st: &libc::stat) -> Key {
    (st.st_dev, st.st_ino)
}

impl Inodes {
    /// A table holding only the root: `root` is an `O_PATH` descriptor of the backing directory.
    pub fn new(root: OwnedFd, root_stat: &libc::stat) -> Inodes {
        let key = key_of(root_stat);
        let root_entry = Entry { fd: Arc::new(root), key, lookups: 1 };
        let tables = Tables {
            by_ino: HashMap::from([(ROOT, root_entry)]),
            by_key: HashMap::from([(key, ROOT)]),
            next_spare: FIRST_SPARE,
        };
        Inodes { tables: Mutex::new(tables) }
    }

    /// The descriptor of `ino`; ESTALE if the kernel sends a number it was never given or has forgotten.
    pub fn get(&self, ino: u64) -> Result<Arc<OwnedFd>, Errno> {
        self.tables.lock().by_ino.get(&ino).map(|e| e.fd.clone()).ok_or(Errno::ESTALE)
    }

    /// Records one kernel lookup of the file `fd` holds (`st` is its stat) and returns its number.
    /// A file already known keeps its entry and `fd` is closed.
    pub fn remember(&self, fd: OwnedFd, st: &libc::stat) -> u64 {
        let key = key_of(st);
        let mut t = self.tables.lock();
        if let Some(&ino) = t.by_key.get(&key) {
            if let Some(entry) = t.by_ino.get_mut(&ino) {
                entry.lookups = entry.lookups.saturating_add(1);
                return ino;
            }
        }
        let ino = if st.st_ino != ROOT && st.st_ino != 0 && !t.by_ino.contains_key(&st.st_ino) {
            st.st_ino
        } else {
            t.spare()
        };
        t.by_ino.insert(ino, Entry { fd: Arc::new(fd), key, lookups: 1 });
        t.by_key.insert(key, ino);
        ino
    }

    /// Drops `n` kernel lookups of `ino`; the entry goes with the last one.
    pub fn forget(&self, ino: u64, n: u64) {
        if ino == ROOT {
            return;
        }
        let mut t = self.tables.lock();
        let Some(entry) = t.by_ino.get_mut(&ino) else { return };
        entry.lookups = entry.lookups.saturating_sub(n);
        if entry.lookups == 0 {
            let key = entry.key;
            t.by_ino.remove(&ino);
            t.by_key.remove(&key);
        }
    }

    /// The number a directory listing shows for a backing file: its entry's if known, else the one a
    /// lookup would most likely give it.
    pub fn listed_ino(&self, dev: u64, ino: u64) -> u64 {
        self.tables.lock().by_key.get(&(dev, ino)).copied().unwrap_or(ino)
    }
}

impl Tables {
    fn spare(&mut self) -> u64 {
        while self.by_ino.contains_key(&self.next_spare) {
            self.next_spare = self.next_spare.wrapping_add(1).max(FIRST_SPARE);
        }
        let ino = self.next_spare;
        self.next_spare = self.next_spare.wrapping_add(1).max(FIRST_SPARE);
        ino
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(dev: u64, ino: u64) -> libc::stat {
        // SAFETY: all-zero is a valid stat.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        (st.st_dev, st.st_ino) = (dev, ino);
        st
    }

    fn fd() -> OwnedFd {
        std::fs::File::open("/").expect("open /").into()
    }

    #[test]
    fn files_keep_their_backing_numbers_and_collisions_get_spares() {
        let table = Inodes::new(fd(), &stat(1, 2));
        assert_eq!(table.remember(fd(), &stat(1, 2)), ROOT, "the backing root is the FUSE root");
        assert_eq!(table.remember(fd(), &stat(1, 50)), 50);
        assert_eq!(table.remember(fd(), &stat(1, 50)), 50, "same file, same entry");
        let other_device = table.remember(fd(), &stat(2, 50));
        assert!(other_device >= FIRST_SPARE, "{other_device}");
        let numbered_one = table.remember(fd(), &stat(1, 1));
        assert!(numbered_one >= FIRST_SPARE && numbered_one != other_device);
        assert_eq!(table.listed_ino(2, 50), other_device);
        assert_eq!(table.listed_ino(1, 77), 77);
    }

    #[test]
    fn an_entry_lives_until_its_last_lookup_is_forgotten() {
        let table = Inodes::new(fd(), &stat(1, 2));
        table.remember(fd(), &stat(1, 50));
        table.remember(fd(), &stat(1, 50));
        table.forget(50, 1);
        assert!(table.get(50).is_ok());
        table.forget(50, 1);
        assert_eq!(table.get(50).err(), Some(Errno::ESTALE));
        assert_eq!(table.listed_ino(1, 50), 50);
        table.forget(ROOT, u64::MAX);
        assert!(table.get(ROOT).is_ok(), "the root is never forgotten");
        table.forget(12345, 1);
        assert_eq!(table.get(999).err(), Some(Errno::ESTALE));
    }
}
