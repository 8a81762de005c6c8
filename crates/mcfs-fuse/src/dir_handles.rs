//! Open directory handles and the listing each one reads from.
//!
//! A handle keeps a snapshot of the directory taken when the kernel reads
//! from offset 0 (the first readdir after opendir, or after rewinddir); later
//! readdirs continue in that snapshot. The offset of an item is its index in
//! `[".", "..", entries...]` plus one, so offsets stay stable while the
//! directory changes: an entry that exists from opendir to the end of the
//! listing is returned exactly once (POSIX), even when other entries are
//! removed meanwhile — re-listing and skipping by index would miss one.

use mcfs_core::{DirEntry, FileKind, FsResult, Ino};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::ffi::OsStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub(crate) type Listing = Arc<Vec<DirEntry>>;

#[derive(Default)]
pub(crate) struct DirHandles {
    next: AtomicU64,
    /// `None` until the first readdir of the handle.
    open: Mutex<HashMap<u64, Option<Listing>>>,
}

impl DirHandles {
    pub(crate) fn open(&self) -> u64 {
        let fh = self.next.fetch_add(1, Ordering::Relaxed);
        self.open.lock().insert(fh, None);
        fh
    }

    pub(crate) fn release(&self, fh: u64) {
        self.open.lock().remove(&fh);
    }

    /// The listing a readdir at `offset` reads from: a fresh one (from
    /// `list`) at offset 0 or when the handle has none yet, else the handle's
    /// snapshot. The lock is not held while `list` runs.
    pub(crate) fn listing(
        &self,
        fh: u64,
        offset: u64,
        list: impl FnOnce() -> FsResult<Vec<DirEntry>>,
    ) -> FsResult<Listing> {
        if offset != 0 {
            if let Some(Some(snapshot)) = self.open.lock().get(&fh) {
                return Ok(snapshot.clone());
            }
        }
        let fresh = Arc::new(list()?);
        // An unknown handle (never opened, or released) gets its listing but
        // keeps nothing, so a stray fh cannot grow the table.
        if let Some(slot) = self.open.lock().get_mut(&fh) {
            *slot = Some(fresh.clone());
        }
        Ok(fresh)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.open.lock().len()
    }
}

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

/// The items of directory `dir` from `offset` on. `..` carries the
/// directory's own inode: the engine's listing does not name the parent and
/// the kernel resolves `..` itself.
pub(crate) fn items_from(dir: Ino, entries: &[DirEntry], offset: u64) -> impl Iterator<Item = DirItem<'_>> {
    let dots = [".", ".."].into_iter().map(move |name| (dir, FileKind::Dir, OsStr::new(name)));
    let rest = entries.iter().map(|e| (e.ino, e.kind, e.name.as_os_str()));
    let skip = usize::try_from(offset).unwrap_or(usize::MAX);
    dots.chain(rest).enumerate().skip(skip).map(|(index, (ino, kind, name))| DirItem {
        offset: index as u64 + 1,
        ino,
        kind,
        name,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcfs_core::Errno;
    use std::ffi::OsString;

    fn entry(name: &str, ino: Ino) -> DirEntry {
        DirEntry { name: OsString::from(name), ino, kind: FileKind::File }
    }

    fn names<'a>(items: impl Iterator<Item = DirItem<'a>>) -> Vec<String> {
        items.map(|i| i.name.to_string_lossy().into_owned()).collect()
    }

    #[test]
    fn offsets_are_index_plus_one_with_dots_first() {
        let entries = vec![entry("a", 10), entry("b", 11)];
        let all: Vec<_> = items_from(5, &entries, 0).collect();
        assert_eq!(all.len(), 4);
        assert_eq!(all[0], DirItem { offset: 1, ino: 5, kind: FileKind::Dir, name: OsStr::new(".") });
        assert_eq!(all[1], DirItem { offset: 2, ino: 5, kind: FileKind::Dir, name: OsStr::new("..") });
        assert_eq!(all[2], DirItem { offset: 3, ino: 10, kind: FileKind::File, name: OsStr::new("a") });
        assert_eq!(all[3].offset, 4);
        assert!(all[0].is_dot() && all[1].is_dot() && !all[2].is_dot());
        assert_eq!(names(items_from(5, &entries, 2)), ["a", "b"]);
        assert_eq!(names(items_from(5, &entries, 3)), ["b"]);
        assert!(items_from(5, &entries, 4).next().is_none());
        assert!(items_from(5, &entries, u64::MAX).next().is_none());
    }

    #[test]
    fn resuming_at_each_returned_offset_yields_every_item_once() {
        let entries: Vec<_> = (0..50).map(|i| entry(&format!("f{i}"), 100 + i)).collect();
        // The kernel may take any number of items per call; it resumes from the last offset.
        let mut seen = Vec::new();
        let mut offset = 0;
        for batch in [1usize, 3, 7, 2, 100].iter().cycle() {
            let items: Vec<_> = items_from(1, &entries, offset).take(*batch).collect();
            let Some(last) = items.last() else { break };
            offset = last.offset;
            seen.extend(names(items.into_iter()));
        }
        let expected: Vec<String> =
            [".", ".."].into_iter().map(String::from).chain((0..50).map(|i| format!("f{i}"))).collect();
        assert_eq!(seen, expected);
    }

    #[test]
    fn a_handle_keeps_its_snapshot_while_the_directory_changes() {
        let handles = DirHandles::default();
        let fh = handles.open();
        let first = handles.listing(fh, 0, || Ok(vec![entry("a", 1), entry("b", 2), entry("c", 3)])).unwrap();
        assert_eq!(names(items_from(1, &first, 0).take(3)), [".", "..", "a"]);
        // "a" is unlinked after the first batch: continuing must still return "b" and "c".
        let later = handles.listing(fh, 3, || Ok(vec![entry("b", 2), entry("c", 3)])).unwrap();
        assert_eq!(names(items_from(1, &later, 3)), ["b", "c"]);
    }

    #[test]
    fn offset_zero_rewinds_to_a_fresh_listing() {
        let handles = DirHandles::default();
        let fh = handles.open();
        handles.listing(fh, 0, || Ok(vec![entry("old", 1)])).unwrap();
        let rewound = handles.listing(fh, 0, || Ok(vec![entry("new", 2)])).unwrap();
        assert_eq!(rewound[0].name, "new");
        let continued = handles.listing(fh, 3, || panic!("must reuse the snapshot")).unwrap();
        assert_eq!(continued[0].name, "new");
    }

    #[test]
    fn errors_pass_through_and_unknown_handles_keep_nothing() {
        let handles = DirHandles::default();
        assert_eq!(handles.listing(77, 0, || Err(Errno::ENOTDIR)).unwrap_err(), Errno::ENOTDIR);
        assert_eq!(handles.listing(77, 5, || Ok(vec![entry("x", 1)])).unwrap().len(), 1);
        assert_eq!(handles.len(), 0);
        let fh = handles.open();
        let other = handles.open();
        assert_ne!(fh, other);
        // A handle opened but not yet read lists on demand even at a non-zero offset.
        assert_eq!(handles.listing(fh, 3, || Ok(vec![entry("y", 2)])).unwrap()[0].name, "y");
        handles.release(fh);
        handles.release(fh);
        assert_eq!(handles.len(), 1);
    }
}
