//! Directory streams without directory handles.
//!
//! The mount answers OPENDIR with `ENOSYS` (`McfsFs::opendir`): the kernel
//! then sends no OPENDIR or RELEASEDIR on the connection again, two round
//! trips saved per listing, and caches listings itself (it opens each
//! directory with `FOPEN_CACHE_DIR`, and drops the cache when the directory
//! changes through it). So a readdir carries no state of its stream; it
//! continues from its offset alone, in the engine's stream order
//! (mcfs-core's `children`: each name keeps a slot, later names get larger
//! ones): offset 1 is `.`, 2 is `..`, an entry's offset is its slot plus 3,
//! and a readdir at offset O goes on with slot O − 2. A name that stays from
//! the stream's start to its end is returned exactly once, however the
//! directory changes between the kernel's calls (POSIX).

use mcfs_core::{DirEntry, FileKind, FsResult, Ino};
use std::ffi::OsStr;

/// One item of a directory stream as the kernel sees it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct DirItem<'a> {
    /// What the kernel passes back to continue after this item.
    pub offset: u64,
    pub ino: Ino,
    pub kind: FileKind,
    pub name: &'a OsStr,
}

impl DirItem<'_> {
    /// `.` or `..`: the kernel counts no lookup for these in readdirplus.
    pub(crate) fn is_dot(&self) -> bool {
        self.offset <= DOTS
    }
}

const DOTS: u64 = 2;

/// Entries fetched from the engine at a time: about what one reply of the
/// kernel's (a page) holds.
const BATCH: usize = 64;

/// Feeds the items of directory `dir` after `offset` to `add` until it
/// answers `true` (the reply is full), fails, or the stream ends. `list(first,
/// max)` gives up to `max` entries from slot `first` on (`Engine::readdir`).
/// `..` carries the directory's own inode: the engine does not name the
/// parent here and the kernel resolves `..` itself. A failure is returned
/// only if no item was added; else the reply ends before it, and the
/// kernel's next call meets it.
pub(crate) fn each_item(
    dir: Ino,
    offset: u64,
    list: impl Fn(u64, usize) -> FsResult<Vec<DirEntry>>,
    mut add: impl FnMut(DirItem<'_>) -> FsResult<bool>,
) -> FsResult<()> {
    let mut added_any = false;
    let mut add = |item: DirItem<'_>| {
        let full = add(item)?;
        added_any |= !full;
        Ok(full)
    };
    match feed(dir, offset, list, &mut add) {
        Err(_) if added_any => Ok(()),
        done => done,
    }
}

fn feed(
    dir: Ino,
    offset: u64,
    list: impl Fn(u64, usize) -> FsResult<Vec<DirEntry>>,
    add: &mut impl FnMut(DirItem<'_>) -> FsResult<bool>,
) -> FsResult<()> {
    let mut first = offset.saturating_sub(DOTS);
    // Listed before the dots go out, so that a directory that cannot be
    // listed fails the first call.
    let mut batch = list(first, BATCH)?;
    for (offset_of_dot, name) in [(1, "."), (DOTS, "..")] {
        if offset_of_dot > offset
            && add(DirItem { offset: offset_of_dot, ino: dir, kind: FileKind::Dir, name: OsStr::new(name) })?
        {
            return Ok(());
        }
    }
    loop {
        for e in &batch {
            if add(DirItem { offset: e.slot + DOTS + 1, ino: e.ino, kind: e.kind, name: &e.name })? {
                return Ok(());
            }
        }
        match batch.last() {
            Some(last) if batch.len() == BATCH => first = last.slot + 1,
            _ => return Ok(()),
        }
        batch = list(first, BATCH)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcfs_core::Errno;
    use std::cell::RefCell;
    use std::ffi::OsString;

    /// A directory as the engine keeps it: names in slot order.
    #[derive(Default)]
    struct Dir {
        entries: Vec<DirEntry>,
        next_slot: u64,
        lists: usize,
    }

    impl Dir {
        fn with(names: impl IntoIterator<Item = String>) -> RefCell<Dir> {
            let dir = RefCell::new(Dir::default());
            for name in names {
                dir.borrow_mut().add(&name);
            }
            dir
        }

        fn add(&mut self, name: &str) {
            let slot = self.next_slot;
            self.next_slot += 1;
            self.entries.push(DirEntry { name: OsString::from(name), ino: 100 + slot, kind: FileKind::File, slot });
        }

        fn remove(&mut self, name: &str) {
            self.entries.retain(|e| e.name != name);
        }

        fn list(&mut self, first: u64, max: usize) -> FsResult<Vec<DirEntry>> {
            self.lists += 1;
            Ok(self.entries.iter().filter(|e| e.slot >= first).take(max).cloned().collect())
        }
    }

    /// Reads one reply of at most `room` items after `offset`: (name, offset) pairs.
    fn read(dir: &RefCell<Dir>, offset: u64, room: usize) -> Vec<(String, u64)> {
        let mut got = Vec::new();
        each_item(
            7,
            offset,
            |first, max| dir.borrow_mut().list(first, max),
            |item| {
                if got.len() == room {
                    return Ok(true);
                }
                got.push((item.name.to_string_lossy().into_owned(), item.offset));
                Ok(false)
            },
        )
        .unwrap();
        got
    }

    fn names(items: &[(String, u64)]) -> Vec<&str> {
        items.iter().map(|(n, _)| n.as_str()).collect()
    }

    #[test]
    fn dots_come_first_and_entries_follow_at_their_slot_plus_three() {
        let dir = Dir::with(["a", "b"].map(String::from));
        let all = read(&dir, 0, 100);
        assert_eq!(all, [(".".into(), 1), ("..".into(), 2), ("a".into(), 3), ("b".into(), 4)]);
        assert_eq!(names(&read(&dir, 1, 100)), ["..", "a", "b"]);
        assert_eq!(names(&read(&dir, 2, 100)), ["a", "b"]);
        assert_eq!(names(&read(&dir, 3, 100)), ["b"]);
        assert!(read(&dir, 4, 100).is_empty());
        assert!(read(&dir, u64::MAX, 100).is_empty());
    }

    #[test]
    fn resuming_at_each_returned_offset_yields_every_item_once_across_batches() {
        let dir = Dir::with((0..200).map(|i| format!("f{i}")));
        // The kernel takes as many items per call as fit; it resumes from the last offset.
        let mut seen = Vec::new();
        let mut offset = 0;
        for room in [1usize, 3, 70, 2, 130].iter().cycle() {
            let got = read(&dir, offset, *room);
            let Some((_, last)) = got.last() else { break };
            offset = *last;
            seen.extend(names(&got).into_iter().map(String::from));
        }
        let expected: Vec<String> =
            [".", ".."].into_iter().map(String::from).chain((0..200).map(|i| format!("f{i}"))).collect();
        assert_eq!(seen, expected);
    }

    #[test]
    fn names_that_stay_come_once_while_others_come_and_go_between_calls() {
        let dir = Dir::with(["a", "b", "c", "d"].map(String::from));
        let first = read(&dir, 0, 3);
        assert_eq!(names(&first), [".", "..", "a"]);
        dir.borrow_mut().remove("a");
        dir.borrow_mut().remove("c");
        dir.borrow_mut().add("a");
        let rest = read(&dir, first.last().unwrap().1, 100);
        assert_eq!(names(&rest), ["b", "d", "a"], "b and d once, c gone, a again as a new name");
    }

    #[test]
    fn a_full_reply_stops_fetching() {
        let dir = Dir::with((0..1000).map(|i| format!("f{i}")));
        read(&dir, 0, 10);
        assert_eq!(dir.borrow().lists, 1, "one batch was enough");
    }

    #[test]
    fn errors_of_the_listing_and_of_adding_pass_through() {
        let failed = each_item(1, 0, |_, _| Err(Errno::ENOTDIR), |_| Ok(false));
        assert_eq!(failed, Err(Errno::ENOTDIR));
        let dir = Dir::with(["x".to_string()]);
        let failed = each_item(1, 2, |f, m| dir.borrow_mut().list(f, m), |_| Err(Errno::EIO));
        assert_eq!(failed, Err(Errno::EIO));
    }

    #[test]
    fn a_failure_after_an_item_was_added_ends_the_reply_quietly() {
        let dir = Dir::with(["x".to_string(), "y".to_string()]);
        let added = RefCell::new(Vec::new());
        let add = |item: DirItem<'_>| {
            if item.name == "y" {
                return Err(Errno::EIO);
            }
            added.borrow_mut().push(item.offset);
            Ok(false)
        };
        assert_eq!(each_item(1, 2, |f, m| dir.borrow_mut().list(f, m), add), Ok(()));
        assert_eq!(*added.borrow(), [3], "x went out; the next call, at offset 3, meets the failure");
        let failed = each_item(1, 3, |f, m| dir.borrow_mut().list(f, m), add);
        assert_eq!(failed, Err(Errno::EIO));
    }
}
