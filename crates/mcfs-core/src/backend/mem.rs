//! `MemBackend`: a backing store held in memory, for the simulator and for
//! tests. It is a POSIX-like tree of real inodes — hard links share one inode,
//! `nlink` counts names (and subdirectories for directories, as on ext4) —
//! and it answers each call with the errno Linux gives for it, so code tested
//! against it behaves the same on a `DirBackend`.
//!
//! Limits (`MemLimits`): ext4's by default, or any others a test wants —
//! the largest file, link count, name and symlink target lengths, and the
//! bytes of extended attributes one inode holds, counted as ext4 counts
//! them (`xattr_bytes`). POSIX ACLs (`system.posix_acl_*`) behave as on
//! ext4: setting the access ACL sets the mode's rwx bits (and an ACL the
//! mode says all of is kept as the mode alone), chmod updates the ACL, and
//! a new object inherits its directory's default ACL (see `acl`).
//!
//! Deviations, on purpose: paths never traverse symlinks (an intermediate
//! symlink is `ENOTDIR`; the engine addresses objects by their real path);
//! there are no permission checks (the daemon runs as root); new objects
//! belong to uid 0, gid 0; of the `system.*` extended attributes only the
//! two ACLs are supported; `fallocate` reserves no space (only the size
//! changes), so `st_blocks` counts the pages that hold data.
//!
//! Nothing reads a clock: every time stamp is the backend's `now`, which
//! starts at a fixed instant and moves only through `set_now`, so the same
//! calls give the same tree. `sync` does nothing: memory has no cache to flush.
//! Paths resolved lately are remembered (`RecentPaths`), so a call on one of
//! them, or on a name in one of their directories, skips walking the path.
//! File data is kept in shared 4 KiB pages that are copied on write, so a
//! `clone()` of a whole tree (used for crash states) is cheap. A store made
//! `with_known_content` keeps a whole page whose bytes are that content's
//! as a mark instead (the simulator's replays write a known function of the
//! file offset), and consecutive marks as one run (`PageRuns`): memory grows
//! with the runs' count, not the pages' bytes nor their number, and every
//! call answers as if the bytes were kept. Such a store also takes a write
//! of its content as an extent (`write_known_at`, for the journal's
//! `WriteKnown`): whole pages marked without being compared.

use super::error::{path_error, two_path_error};
use super::page_runs::PageRuns;
use super::recent_paths::RecentPaths;
use super::relpath;
use super::snapshot::{ContentHasher, SnapshotEntry, TreeSnapshot};
use super::{errno_of, Backend, BackendAttr, BackendLimits, KnownContent};
use crate::acl::{self, Acl};
use crate::types::{FallocMode, FileKind, FsStats, InoMap, PAGE_SIZE};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::io;
use std::ops::Range;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

type InodeId = u64;
type Page = [u8; PAGE_SIZE as usize];

/// The known content of page `index` (zeros without one).
fn known_page(known: Option<KnownContent>, index: u64) -> Page {
    let mut page = [0; PAGE_SIZE as usize];
    if let Some(known) = known {
        (known.fill)(index * PAGE_SIZE, &mut page);
    }
    page
}

const ROOT: InodeId = 1;
/// What `stat` reports as a directory's size (one ext4 block).
const DIR_SIZE: u64 = 4096;
const XATTR_NAME_MAX: usize = 255;
const XATTR_SIZE_MAX: usize = 65536;
/// Extended attribute namespaces that are stored; of `system.*` only the ACLs.
const XATTR_NAMESPACES: [&str; 3] = ["user.", "trusted.", "security."];
/// ext4's cost of an attribute beside its name and value (an entry header).
const XATTR_ENTRY_BYTES: usize = 16;

/// Capacity `statfs` reports: 64 GiB in 4 KiB blocks, a million inodes.
const TOTAL_BLOCKS: u64 = 1 << 24;
const TOTAL_INODES: u64 = 1 << 20;

/// The instant a new `MemBackend` starts at (the same as `ManualClock::new`).
pub fn mem_epoch() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_700_000_000)
}

/// The limits a `MemBackend` keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemLimits {
    pub limits: BackendLimits,
    /// Bytes of extended attributes one inode holds, each attribute counted
    /// as ext4 counts it: a 16-byte entry, plus its name without the
    /// namespace prefix and its value, each rounded up to 4 bytes.
    pub xattr_bytes: usize,
    /// Blocks of file data the store holds (writes that need more fail with
    /// ENOSPC); `None`: `TOTAL_BLOCKS`, never checked.
    pub capacity: Option<u64>,
}

impl MemLimits {
    /// ext4 with 4 KiB blocks: one xattr block (its 32-byte header and
    /// 4-byte end mark taken off); the little room inside the inode is left out.
    pub const EXT4: MemLimits = MemLimits { limits: BackendLimits::EXT4, xattr_bytes: 4096 - 32 - 4, capacity: None };
}

/// Bytes of a regular file: pages that were never written are holes, the
/// others are stored as bytes (`pages`) or, holding the known content of
/// their offsets, as a mark in `known_pages` (runs of indexes).
/// Pages written without their content (`write_unkept_at`) are in `unkept`:
/// they hold data, but nothing can read it.
/// Invariant: stored bytes at or beyond `size` are zero, so a known page
/// lies wholly within `size`; `pages`, `known_pages` and `unkept` are
/// disjoint, and `known_pages` is empty without `known`.
#[derive(Clone, Default)]
struct FileData {
    size: u64,
    pages: BTreeMap<u64, Arc<Page>>,
    known_pages: PageRuns,
    known: Option<KnownContent>,
    unkept: PageRuns,
}

impl FileData {
    /// Pages that hold data (bytes, a mark, or unkept).
    fn stored_pages(&self) -> u64 {
        self.pages.len() as u64 + self.known_pages.len() + self.unkept.len()
    }

    fn is_stored(&self, index: u64) -> bool {
        self.pages.contains_key(&index) || self.known_pages.contains(index) || self.unkept.contains(index)
    }

    /// Whether page `index` was written without its content.
    fn is_unkept(&self, index: u64) -> bool {
        self.unkept.len() > 0 && self.unkept.contains(index)
    }

    /// `EIO` if the read touches a page whose content was not kept.
    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<usize, i32> {
        if offset >= self.size {
            return Ok(0);
        }
        let n = (buf.len() as u64).min(self.size - offset) as usize;
        let pages = offset / PAGE_SIZE..(offset + n as u64).div_ceil(PAGE_SIZE);
        if self.unkept.within(pages).next().is_some() {
            return Err(libc::EIO);
        }
        let mut done = 0;
        while done < n {
            let (index, within, len) = page_span(offset + done as u64, n - done);
            let dst = &mut buf[done..done + len];
            match (self.pages.get(&index), self.known) {
                (Some(page), _) => dst.copy_from_slice(&page[within..within + len]),
                (None, Some(known)) if self.known_pages.contains(index) => (known.fill)(offset + done as u64, dst),
                _ => dst.fill(0),
            }
            done += len;
        }
        Ok(n)
    }

    fn write(&mut self, offset: u64, data: &[u8], max_size: u64) -> Result<(), i32> {
        if data.is_empty() {
            return Ok(());
        }
        let end = end_within(offset, data.len() as u64, max_size)?;
        let mut done = 0;
        while done < data.len() {
            let (index, within, len) = page_span(offset + done as u64, data.len() - done);
            let piece = &data[done..done + len];
            // Part of an unkept page stays unkept: the rest of its bytes is not known.
            let unkept = self.is_unkept(index) && (len < PAGE_SIZE as usize || !self.unkept.remove(index));
            if !unkept && !self.keep_as_known(index, piece) {
                match <&Page>::try_from(piece) {
                    Ok(whole) => self.put_page(index, whole),
                    Err(_) => self.page_mut(index)[within..within + len].copy_from_slice(piece),
                }
            }
            done += len;
        }
        self.size = self.size.max(end);
        Ok(())
    }

    /// Writes `len` bytes at `offset` without keeping their content: every
    /// page they touch holds data from now on, unkept (see `write_unkept_at`).
    fn write_unkept(&mut self, offset: u64, len: u64, max_size: u64) -> Result<(), i32> {
        if len == 0 {
            return Ok(());
        }
        let end = end_within(offset, len, max_size)?;
        let touched = offset / PAGE_SIZE..end.div_ceil(PAGE_SIZE);
        self.remove_pages(touched.clone());
        self.known_pages.remove_range(touched.clone());
        self.unkept.insert_range(touched);
        self.size = self.size.max(end);
        Ok(())
    }

    /// Drops the bytes kept for the pages of `range`.
    fn remove_pages(&mut self, range: Range<u64>) {
        if self.pages.range(range.clone()).next().is_none() {
            return;
        }
        let kept: Vec<u64> = self.pages.range(range).map(|(i, _)| *i).collect();
        for index in kept {
            self.pages.remove(&index);
        }
    }

    /// Writes `len` bytes of the known content at `offset` (see
    /// `Backend::write_known_at`): as `write` of the bytes `fill` gives for
    /// them, but a whole page is marked without them being made or compared.
    /// `EOPNOTSUPP` without known content.
    fn write_known(&mut self, offset: u64, len: u64, max_size: u64) -> Result<(), i32> {
        let known = self.known.ok_or(libc::EOPNOTSUPP)?;
        let end = end_within(offset, len, max_size)?;
        if len == 0 {
            return Ok(());
        }
        // What `write` does with the whole pages that hold the content
        // (marked, at once), and with part of a page (which stays unkept if
        // it was), the bytes made in place.
        let first = offset.div_ceil(PAGE_SIZE);
        let whole = first..(end / PAGE_SIZE).max(first);
        self.write_known_part(known, offset, end.min(whole.start * PAGE_SIZE));
        if !whole.is_empty() {
            if self.unkept.len() > 0 {
                self.unkept.remove_range(whole.clone());
            }
            self.remove_pages(whole.clone());
            self.known_pages.insert_range(whole.clone());
        }
        self.write_known_part(known, offset.max(whole.end * PAGE_SIZE), end);
        self.size = self.size.max(end);
        Ok(())
    }

    /// The bytes `offset..end` (within one page, maybe none) of the known
    /// content, made in place unless the page is unkept.
    fn write_known_part(&mut self, known: KnownContent, offset: u64, end: u64) {
        let index = offset / PAGE_SIZE;
        if offset < end && !self.is_unkept(index) {
            let within = (offset % PAGE_SIZE) as usize;
            (known.fill)(offset, &mut self.page_mut(index)[within..within + (end - offset) as usize]);
        }
    }

    /// Marks page `index` as holding the known content if `piece` is all of
    /// it and is that content.
    fn keep_as_known(&mut self, index: u64, piece: &[u8]) -> bool {
        if piece.len() != PAGE_SIZE as usize || !self.known.is_some_and(|k| (k.matches)(index * PAGE_SIZE, piece)) {
            return false;
        }
        self.mark_known(index);
        true
    }

    /// Page `index` holds the known content, as a mark.
    fn mark_known(&mut self, index: u64) {
        self.pages.remove(&index);
        self.known_pages.insert(index);
    }

    /// Stores a whole page: in place if nothing shares its bytes, else as
    /// new bytes (never zeroed first, nor copied from a shared version).
    fn put_page(&mut self, index: u64, whole: &Page) {
        if let Some(page) = self.pages.get_mut(&index).and_then(Arc::get_mut) {
            page.copy_from_slice(whole);
            return;
        }
        self.known_pages.remove(index);
        self.pages.insert(index, Arc::new(*whole));
    }

    /// The bytes of page `index`, to change: a hole becomes zeros, a known
    /// page its content.
    fn page_mut(&mut self, index: u64) -> &mut Page {
        if self.known_pages.remove(index) {
            self.pages.insert(index, Arc::new(known_page(self.known, index)));
        }
        Arc::make_mut(self.pages.entry(index).or_insert_with(|| Arc::new([0; PAGE_SIZE as usize])))
    }

    fn set_len(&mut self, size: u64) {
        if size < self.size {
            let kept = size.div_ceil(PAGE_SIZE);
            self.pages.split_off(&kept);
            self.known_pages.remove_range(kept..u64::MAX);
            self.unkept.remove_range(kept..u64::MAX);
            let within = (size % PAGE_SIZE) as usize;
            let last = size / PAGE_SIZE;
            if within != 0 && self.is_stored(last) && !self.is_unkept(last) {
                self.page_mut(size / PAGE_SIZE)[within..].fill(0);
            }
        }
        self.size = size;
    }

    /// Zeroes bytes `offset..end`; pages wholly inside become holes.
    fn zero(&mut self, offset: u64, end: u64) {
        let whole = offset.div_ceil(PAGE_SIZE)..end / PAGE_SIZE;
        if !whole.is_empty() {
            let gone: Vec<u64> = self.pages.range(whole.clone()).map(|(i, _)| *i).collect();
            for index in gone {
                self.pages.remove(&index);
            }
            self.known_pages.remove_range(whole.clone());
            self.unkept.remove_range(whole.clone());
        }
        let edges = [offset / PAGE_SIZE, (end - 1) / PAGE_SIZE];
        for index in edges.into_iter().filter(|i| !whole.contains(i)) {
            if !self.is_stored(index) || self.is_unkept(index) {
                continue;
            }
            let page_start = index * PAGE_SIZE;
            let from = offset.max(page_start) - page_start;
            let to = end.min(page_start + PAGE_SIZE) - page_start;
            self.page_mut(index)[from as usize..to as usize].fill(0);
        }
    }

    fn fallocate(&mut self, mode: FallocMode, offset: u64, len: u64, max_size: u64) -> Result<(), i32> {
        if len == 0 {
            return Err(libc::EINVAL);
        }
        let end = end_within(offset, len, max_size)?;
        if mode.zeroes() {
            self.zero(offset, end);
        }
        if mode.extends() {
            self.size = self.size.max(end);
        }
        Ok(())
    }

    /// Runs of stored pages (bytes, marks or unkept) among `pages`, in
    /// order, not joined across the kinds.
    fn stored_runs(&self, pages: Range<u64>) -> Vec<Range<u64>> {
        let mut runs: Vec<Range<u64>> = self.pages.range(pages.clone()).map(|(i, _)| *i..*i + 1).collect();
        runs.extend(self.known_pages.within(pages.clone()));
        runs.extend(self.unkept.within(pages));
        runs.sort_unstable_by_key(|r| r.start);
        runs
    }

    /// Bytes of `range` (within the size) that lie in stored pages: holes
    /// left out.
    fn stored_bytes(&self, range: Range<u64>) -> u64 {
        let end = range.end.min(self.size);
        if range.start >= end {
            return 0;
        }
        let runs = self.stored_runs(range.start / PAGE_SIZE..end.div_ceil(PAGE_SIZE));
        runs.iter().map(|r| (r.end * PAGE_SIZE).min(end) - (r.start * PAGE_SIZE).max(range.start)).sum()
    }

    /// The data extents within the size: runs of stored pages.
    fn data_extents(&self) -> Vec<Range<u64>> {
        let mut extents: Vec<Range<u64>> = Vec::new();
        for run in self.stored_runs(0..u64::MAX) {
            let bytes = run.start * PAGE_SIZE..(run.end * PAGE_SIZE).min(self.size);
            match extents.last_mut() {
                Some(last) if last.end == bytes.start => last.end = bytes.end,
                _ if bytes.start < bytes.end => extents.push(bytes),
                _ => {}
            }
        }
        extents
    }

    fn digest(&self) -> super::snapshot::ContentDigest {
        let mut hasher = ContentHasher::new();
        for run in self.stored_runs(0..u64::MAX) {
            for index in run {
                match self.pages.get(&index) {
                    Some(page) => hasher.page(index, &page[..]),
                    None if self.is_unkept(index) => hasher.unkept(index),
                    None => hasher.page(index, &known_page(self.known, index)),
                }
            }
        }
        hasher.finish(self.size)
    }
}

/// The end of `len` bytes at `offset`; `EFBIG` past a file of `max_size`.
fn end_within(offset: u64, len: u64, max_size: u64) -> Result<u64, i32> {
    offset.checked_add(len).filter(|end| *end <= max_size).ok_or(libc::EFBIG)
}

/// The page holding byte `pos`, the offset in it, and how many of `want`
/// bytes fit in it.
fn page_span(pos: u64, want: usize) -> (u64, usize, usize) {
    let within = (pos % PAGE_SIZE) as usize;
    (pos / PAGE_SIZE, within, want.min(PAGE_SIZE as usize - within))
}

/// One inode. `kind` says which of `data`, `entries`, `target`, `rdev` mean
/// anything; the others stay empty.
#[derive(Clone)]
struct Inode {
    kind: FileKind,
    perm: u32,
    uid: u32,
    gid: u32,
    nlink: u32,
    atime: SystemTime,
    mtime: SystemTime,
    ctime: SystemTime,
    xattrs: BTreeMap<OsString, Vec<u8>>,
    data: FileData,
    entries: BTreeMap<OsString, InodeId>,
    target: OsString,
    rdev: u32,
}

impl Inode {
    fn new(kind: FileKind, perm: u32, now: SystemTime) -> Inode {
        Inode {
            kind,
            perm: perm & 0o7777,
            uid: 0,
            gid: 0,
            nlink: if kind == FileKind::Dir { 2 } else { 1 },
            atime: now,
            mtime: now,
            ctime: now,
            xattrs: BTreeMap::new(),
            data: FileData::default(),
            entries: BTreeMap::new(),
            target: OsString::new(),
            rdev: 0,
        }
    }

    fn is_dir(&self) -> bool {
        self.kind == FileKind::Dir
    }

    /// `EISDIR` / `ELOOP` / `EINVAL` unless this is a regular file (the
    /// errnos a `DirBackend` gives when it opens such an object).
    fn must_be_regular(&self) -> Result<(), i32> {
        match self.kind {
            FileKind::File => Ok(()),
            FileKind::Dir => Err(libc::EISDIR),
            FileKind::Symlink => Err(libc::ELOOP),
            _ => Err(libc::EINVAL),
        }
    }

    fn attr(&self, id: u64) -> BackendAttr {
        let size = match self.kind {
            FileKind::File => self.data.size,
            FileKind::Dir => DIR_SIZE,
            FileKind::Symlink => self.target.len() as u64,
            _ => 0,
        };
        BackendAttr {
            ino: id,
            kind: self.kind,
            perm: self.perm,
            nlink: self.nlink,
            uid: self.uid,
            gid: self.gid,
            size,
            rdev: self.rdev,
            atime: self.atime,
            mtime: self.mtime,
            ctime: self.ctime,
            blocks: self.data.stored_pages() * (PAGE_SIZE / 512),
        }
    }
}

/// The whole tree. Invariant: every id in a directory's `entries` is in
/// `inodes`, and every inode but the root is reachable by `nlink` names;
/// `used_blocks` is the sum of the inodes' stored pages (`check_used_blocks`).
#[derive(Clone)]
struct Tree {
    inodes: InoMap<Inode>,
    /// Kept by `data_mut` and `unlink`, so `statfs` need not sum every inode.
    used_blocks: u64,
    next_id: InodeId,
    now: SystemTime,
    limits: MemLimits,
    /// What new files keep as marks (`MemBackend::with_known_content`).
    known: Option<KnownContent>,
    /// `Backend::keeps_journal_payload` (see `MemBackend::without_journal_payloads`).
    keeps_journal_payload: bool,
    /// Paths `resolve` found lately; `unlink` and `rename` forget them.
    recent: RecentPaths,
}

impl Tree {
    fn new(limits: MemLimits) -> Tree {
        let now = mem_epoch();
        let root = Inode::new(FileKind::Dir, 0o755, now);
        Tree {
            inodes: InoMap::from_iter([(ROOT, root)]),
            used_blocks: 0,
            next_id: ROOT + 1,
            now,
            limits,
            known: None,
            keeps_journal_payload: true,
            recent: RecentPaths::default(),
        }
    }

    /// Changes the data of `id` through `change`, keeping `used_blocks`.
    fn data_mut<T>(&mut self, id: InodeId, change: impl FnOnce(&mut FileData) -> T) -> T {
        let data = &mut self.get_mut(id).data;
        let before = data.stored_pages();
        let result = change(data);
        let after = data.stored_pages();
        self.used_blocks = self.used_blocks - before + after;
        result
    }

    /// Whether `used_blocks` is the sum of every inode's stored pages.
    #[cfg(test)]
    fn check_used_blocks(&self) -> Result<(), String> {
        let sum = self.inodes.values().map(|i| i.data.stored_pages()).sum::<u64>();
        (sum == self.used_blocks).then_some(()).ok_or(format!("{} used blocks kept, {sum} stored", self.used_blocks))
    }

    /// ENOSPC if writing `len` bytes at `offset` of `id` needs more blocks
    /// than a small store (`MemLimits::capacity`) has left.
    fn room_for(&self, id: InodeId, offset: u64, len: usize) -> Result<(), i32> {
        let Some(capacity) = self.limits.capacity else { return Ok(()) };
        let data = &self.get(id).data;
        let (first, end) = (offset / PAGE_SIZE, offset.saturating_add(len as u64).div_ceil(PAGE_SIZE));
        let new = (first..end).filter(|p| !data.is_stored(*p)).count() as u64;
        if new > 0 && self.used_blocks + new > capacity {
            return Err(libc::ENOSPC);
        }
        Ok(())
    }

    fn get(&self, id: InodeId) -> &Inode {
        &self.inodes[&id]
    }

    /// The names along `path` (see `relpath::names`), each within the name limit.
    fn names<'p>(&self, path: &'p Path) -> Result<Vec<&'p OsStr>, i32> {
        let names = relpath::names(path)?;
        if names.iter().any(|n| n.len() > self.limits.limits.name_max as usize) {
            return Err(libc::ENAMETOOLONG);
        }
        Ok(names)
    }

    /// Sets attribute `name` as ext4 does, the whole set checked against the
    /// limits first; the access ACL also sets the mode, and is kept as the
    /// mode alone when it says no more (see `acl`).
    fn set_xattr(&mut self, id: InodeId, name: &OsStr, value: &[u8]) -> Result<(), i32> {
        let inode = self.get(id);
        check_xattr_value(inode.kind, name, value)?;
        let (mut xattrs, mut perm) = (inode.xattrs.clone(), inode.perm);
        let kept = if is_acl(name) {
            let acl = Acl::parse(value).map_err(|e| e.0)?;
            if let Some(access) = acl.as_ref().filter(|_| name == acl::ACCESS) {
                perm = access.apply_to_mode(perm);
            }
            acl.filter(|a| name == acl::DEFAULT || !a.is_minimal()).map(|a| a.to_value())
        } else {
            Some(value.to_vec())
        };
        match kept {
            Some(value) => xattrs.insert(name.to_owned(), value),
            None => xattrs.remove(name),
        };
        check_xattr_space(xattrs.iter().map(|(n, v)| (n.as_os_str(), v.as_slice())), self.limits.xattr_bytes)?;
        let inode = self.get_mut(id);
        (inode.xattrs, inode.perm) = (xattrs, perm);
        self.changed(id);
        Ok(())
    }

    /// chmod, which also updates the access ACL (as ext4 does).
    fn set_perm(&mut self, id: InodeId, perm: u32) {
        let inode = self.get_mut(id);
        if inode.kind == FileKind::Symlink {
            return;
        }
        inode.perm = perm & 0o7777;
        if let Some(value) = inode.xattrs.get_mut(OsStr::new(acl::ACCESS)) {
            if let Ok(Some(mut access)) = Acl::parse(value) {
                access.chmod(perm);
                *value = access.to_value();
            }
        }
        self.changed(id);
    }

    fn get_mut(&mut self, id: InodeId) -> &mut Inode {
        self.inodes.get_mut(&id).expect("directory entries name live inodes")
    }

    fn lookup(&self, names: &[&OsStr]) -> Result<InodeId, i32> {
        self.walk(names).map(|(_, id)| id)
    }

    /// The inode `names` lead to and the directory holding it (the root
    /// for the root).
    fn walk(&self, names: &[&OsStr]) -> Result<(InodeId, InodeId), i32> {
        let (mut parent, mut id) = (ROOT, ROOT);
        for name in names {
            let dir = self.get(id);
            if !dir.is_dir() {
                return Err(libc::ENOTDIR);
            }
            parent = id;
            id = *dir.entries.get(*name).ok_or(libc::ENOENT)?;
        }
        Ok((parent, id))
    }

    /// The inode at `path`: `names` and `lookup`, with the same errors, but
    /// a path resolved lately, or a plain name in a directory resolved
    /// lately, is found without splitting and walking it all.
    fn resolve(&mut self, path: &Path) -> Result<InodeId, i32> {
        let bytes = path.as_os_str().as_bytes();
        if let Some(id) = self.recent.get(bytes) {
            return Ok(id);
        }
        // Everything before the last slash, and the last name, if both are
        // plain (a resolved path was checked already).
        let split = bytes.iter().rposition(|b| *b == b'/').filter(|slash| *slash > 0).and_then(|slash| {
            let name = &bytes[slash + 1..];
            let plain = relpath::is_plain_name(name)
                && name.len() <= (self.limits.limits.name_max as usize).min(relpath::NAME_MAX);
            plain.then(|| (&bytes[..slash], OsStr::from_bytes(name)))
        });
        if let Some((dir, name)) = split {
            if let Some(dir_id) = self.recent.get(dir).filter(|id| self.get(*id).is_dir()) {
                let id = self.child(dir_id, name).ok_or(libc::ENOENT)?;
                self.recent.insert(bytes, id);
                return Ok(id);
            }
        }
        let names = self.names(path)?;
        let (parent, id) = self.walk(&names)?;
        if let Some((dir, _)) = split {
            self.recent.insert(dir, parent);
        }
        self.recent.insert(bytes, id);
        Ok(id)
    }

    /// The directory that holds the last name, and that name; `None` for
    /// the root, which has no parent here.
    fn parent_of<'n>(&self, names: &[&'n OsStr]) -> Result<Option<(InodeId, &'n OsStr)>, i32> {
        let Some((last, dirs)) = names.split_last() else {
            return Ok(None);
        };
        let parent = self.lookup(dirs)?;
        if !self.get(parent).is_dir() {
            return Err(libc::ENOTDIR);
        }
        Ok(Some((parent, *last)))
    }

    fn child(&self, dir: InodeId, name: &OsStr) -> Option<InodeId> {
        self.get(dir).entries.get(name).copied()
    }

    fn changed(&mut self, id: InodeId) {
        let now = self.now;
        self.get_mut(id).ctime = now;
    }

    fn modified(&mut self, id: InodeId) {
        let now = self.now;
        let inode = self.get_mut(id);
        inode.mtime = now;
        inode.ctime = now;
    }

    /// Adds a new inode under `parent` as `name` (known to be free). In a
    /// set-gid directory it takes the directory's group, as on Linux.
    fn add(&mut self, parent: InodeId, name: &OsStr, mut inode: Inode) {
        let id = self.next_id;
        self.next_id += 1;
        inode.data.known = self.known;
        let dir = self.get_mut(parent);
        if dir.perm & libc::S_ISGID != 0 {
            inode.gid = dir.gid;
        }
        if inode.is_dir() {
            dir.nlink += 1;
        }
        self.inodes.insert(id, inode);
        self.get_mut(parent).entries.insert(name.to_owned(), id);
        self.modified(parent);
    }

    /// Takes the entry `name` out of `parent` and drops one link of its inode.
    fn unlink(&mut self, parent: InodeId, name: &OsStr, id: InodeId) {
        self.recent.clear();
        self.get_mut(parent).entries.remove(name);
        self.modified(parent);
        if self.get(id).is_dir() {
            self.get_mut(parent).nlink -= 1;
            self.inodes.remove(&id);
            return;
        }
        let inode = self.get_mut(id);
        inode.nlink -= 1;
        if inode.nlink == 0 {
            self.used_blocks -= inode.data.stored_pages();
            self.inodes.remove(&id);
        } else {
            self.changed(id);
        }
    }

    fn create(&mut self, names: &[&OsStr], kind: FileKind, perm: u32, rdev: u32) -> Result<(), i32> {
        if kind == FileKind::Symlink {
            return Err(libc::EINVAL);
        }
        let (parent, name) = self.parent_of(names)?.ok_or(libc::EEXIST)?;
        match self.child(parent, name) {
            Some(id) if kind == FileKind::File && self.get(id).kind == FileKind::File => {
                self.data_mut(id, |data| data.set_len(0));
                self.get_mut(id).perm = perm & 0o7777;
                self.modified(id);
                Ok(())
            }
            Some(_) => Err(libc::EEXIST),
            None => {
                let mut inode = Inode::new(kind, perm, self.now);
                if matches!(kind, FileKind::CharDev | FileKind::BlockDev) {
                    inode.rdev = rdev;
                }
                self.inherit_acls(parent, &mut inode);
                self.add(parent, name, inode);
                Ok(())
            }
        }
    }

    /// A new object in a directory with a default ACL gets it, as ext4
    /// gives it (`acl::Acl::inherit`); its mode stays `perm` exactly, as
    /// `DirBackend` leaves it (it chmods after creating, which updates the ACL).
    fn inherit_acls(&self, parent: InodeId, inode: &mut Inode) {
        let Some(default) = self.get(parent).xattrs.get(OsStr::new(acl::DEFAULT)) else { return };
        let Ok(Some(default)) = Acl::parse(default) else { return };
        if let (Some(mut access), _) = default.inherit(inode.perm) {
            access.chmod(inode.perm);
            inode.xattrs.insert(acl::ACCESS.into(), access.to_value());
        }
        if inode.is_dir() {
            inode.xattrs.insert(acl::DEFAULT.into(), default.to_value());
        }
    }

    fn symlink(&mut self, target: &OsStr, names: &[&OsStr]) -> Result<(), i32> {
        if target.is_empty() {
            return Err(libc::ENOENT);
        }
        if target.len() > self.limits.limits.symlink_max as usize {
            return Err(libc::ENAMETOOLONG);
        }
        let (parent, name) = self.parent_of(names)?.ok_or(libc::EEXIST)?;
        if self.child(parent, name).is_some() {
            return Err(libc::EEXIST);
        }
        let mut inode = Inode::new(FileKind::Symlink, 0o777, self.now);
        inode.target = target.to_owned();
        self.add(parent, name, inode);
        Ok(())
    }

    fn link(&mut self, existing: &[&OsStr], new: &[&OsStr]) -> Result<(), i32> {
        let id = self.lookup(existing)?;
        let (parent, name) = self.parent_of(new)?.ok_or(libc::EEXIST)?;
        if self.child(parent, name).is_some() {
            return Err(libc::EEXIST);
        }
        if self.get(id).is_dir() {
            return Err(libc::EPERM);
        }
        if self.get(id).nlink >= self.limits.limits.link_max {
            return Err(libc::EMLINK);
        }
        self.get_mut(id).nlink += 1;
        self.changed(id);
        self.get_mut(parent).entries.insert(name.to_owned(), id);
        self.modified(parent);
        Ok(())
    }

    fn remove(&mut self, names: &[&OsStr], dir: bool) -> Result<(), i32> {
        let (parent, name) = self.parent_of(names)?.ok_or(libc::EBUSY)?;
        let id = self.child(parent, name).ok_or(libc::ENOENT)?;
        let inode = self.get(id);
        match (dir, inode.is_dir()) {
            (false, true) => return Err(libc::EISDIR),
            (true, false) => return Err(libc::ENOTDIR),
            (true, true) if !inode.entries.is_empty() => return Err(libc::ENOTEMPTY),
            _ => {}
        }
        self.unlink(parent, name, id);
        Ok(())
    }

    /// `rename(2)`, checks in the order Linux makes them.
    fn rename(&mut self, from: &[&OsStr], to: &[&OsStr]) -> Result<(), i32> {
        let (from_parent, from_name) = self.parent_of(from)?.ok_or(libc::EBUSY)?;
        let (to_parent, to_name) = self.parent_of(to)?.ok_or(libc::EBUSY)?;
        let id = self.child(from_parent, from_name).ok_or(libc::ENOENT)?;
        if to.len() > from.len() && to.starts_with(from) {
            return Err(libc::EINVAL); // into its own subtree
        }
        let target = self.child(to_parent, to_name);
        if target.is_some() && from.len() > to.len() && from.starts_with(to) {
            return Err(libc::ENOTEMPTY); // over one of its own ancestors
        }
        if let Some(target) = target {
            if target == id {
                return Ok(()); // two names of one inode: nothing to do
            }
            let (moving, replaced) = (self.get(id), self.get(target));
            match (moving.is_dir(), replaced.is_dir()) {
                (true, false) => return Err(libc::ENOTDIR),
                (false, true) => return Err(libc::EISDIR),
                (true, true) if !replaced.entries.is_empty() => return Err(libc::ENOTEMPTY),
                _ => {}
            }
            self.unlink(to_parent, to_name, target);
        }
        self.recent.clear();
        self.get_mut(from_parent).entries.remove(from_name);
        self.get_mut(to_parent).entries.insert(to_name.to_owned(), id);
        if self.get(id).is_dir() && from_parent != to_parent {
            self.get_mut(from_parent).nlink -= 1;
            self.get_mut(to_parent).nlink += 1;
        }
        self.changed(id);
        self.modified(from_parent);
        self.modified(to_parent);
        Ok(())
    }

    fn set_owner(&mut self, id: InodeId, uid: u32, gid: u32) {
        let inode = self.get_mut(id);
        // As lchown: -1 keeps a value; a non-directory loses set-uid, and
        // set-gid when group-executable (Linux does this even for root).
        if uid != u32::MAX {
            inode.uid = uid;
        }
        if gid != u32::MAX {
            inode.gid = gid;
        }
        if !inode.is_dir() {
            inode.perm &= !libc::S_ISUID;
            if inode.perm & libc::S_IXGRP != 0 {
                inode.perm &= !libc::S_ISGID;
            }
        }
        self.changed(id);
    }

    fn statfs(&self) -> FsStats {
        let total = self.limits.capacity.unwrap_or(TOTAL_BLOCKS);
        let free = total.saturating_sub(self.used_blocks);
        let free_inodes = TOTAL_INODES.saturating_sub(self.inodes.len() as u64);
        FsStats {
            blocks: total,
            bfree: free,
            bavail: free,
            files: TOTAL_INODES,
            ffree: free_inodes,
            bsize: PAGE_SIZE as u32,
            namelen: self.limits.limits.name_max,
        }
    }

    fn snapshot(&self) -> TreeSnapshot {
        let mut snap = TreeSnapshot::default();
        let mut stack = vec![(PathBuf::new(), ROOT)];
        while let Some((path, id)) = stack.pop() {
            let inode = self.get(id);
            for (name, child) in &inode.entries {
                stack.push((path.join(name), *child));
            }
            let entry = SnapshotEntry {
                kind: inode.kind,
                perm: inode.perm,
                uid: inode.uid,
                gid: inode.gid,
                rdev: inode.rdev,
                content: (inode.kind == FileKind::File).then(|| inode.data.digest()),
                target: (inode.kind == FileKind::Symlink).then(|| inode.target.clone()),
                xattrs: inode.xattrs.clone(),
                mtime: Some(inode.mtime),
                first_link: PathBuf::new(),
            };
            snap.insert(path, (0, id), entry);
        }
        snap.finish()
    }
}

/// How an extended attribute call may touch an inode (Linux rules).
enum XattrAccess {
    Read,
    Write,
}

/// Whether the attribute `name` may be touched on an object of `kind`,
/// checked in the order Linux checks after finding the inode: `user.*`
/// attributes exist only on regular files and directories (reading one
/// elsewhere finds nothing, `ENODATA`; writing one is `EPERM`), ACLs on
/// anything but symlinks (`EOPNOTSUPP`); then the namespace must be a
/// stored one (`EOPNOTSUPP`) with a name after it (`EINVAL`).
fn check_xattr(kind: FileKind, name: &OsStr, access: XattrAccess) -> Result<(), i32> {
    if is_acl(name) {
        return if kind == FileKind::Symlink { Err(libc::EOPNOTSUPP) } else { Ok(()) };
    }
    let bytes = name.as_bytes();
    if bytes.starts_with(b"user.") && !matches!(kind, FileKind::File | FileKind::Dir) {
        return Err(match access {
            XattrAccess::Read => libc::ENODATA,
            XattrAccess::Write => libc::EPERM,
        });
    }
    let prefix = XATTR_NAMESPACES.iter().find(|p| bytes.starts_with(p.as_bytes())).ok_or(libc::EOPNOTSUPP)?;
    if bytes.len() == prefix.len() {
        return Err(libc::EINVAL);
    }
    Ok(())
}

fn is_acl(name: &OsStr) -> bool {
    name == acl::ACCESS || name == acl::DEFAULT
}

/// Whether `name` may be set to `value` on an object of `kind`: the name's
/// length (`ERANGE`) and the value's size (`E2BIG`) as the system call
/// checks them, `check_xattr`, then an ACL's validity (`EINVAL`) and a
/// default ACL only on a directory (`EACCES`).
fn check_xattr_value(kind: FileKind, name: &OsStr, value: &[u8]) -> Result<(), i32> {
    if name.is_empty() || name.len() > XATTR_NAME_MAX {
        return Err(libc::ERANGE);
    }
    if value.len() > XATTR_SIZE_MAX {
        return Err(libc::E2BIG);
    }
    check_xattr(kind, name, XattrAccess::Write)?;
    if is_acl(name) {
        let acl = Acl::parse(value).map_err(|e| e.0)?;
        if name == acl::DEFAULT && kind != FileKind::Dir && acl.is_some() {
            return Err(libc::EACCES);
        }
    }
    Ok(())
}

/// `ENOSPC` unless the attributes fit in `limit` bytes, counted as ext4
/// counts them (see `MemLimits::xattr_bytes`).
fn check_xattr_space<'a>(xattrs: impl Iterator<Item = (&'a OsStr, &'a [u8])>, limit: usize) -> Result<(), i32> {
    let round = |n: usize| n.next_multiple_of(4);
    let used: usize = xattrs
        .map(|(name, value)| {
            let bytes = name.as_bytes();
            let prefix = match is_acl(name) {
                true => name.len(),
                false => XATTR_NAMESPACES.iter().find(|p| bytes.starts_with(p.as_bytes())).map_or(0, |p| p.len()),
            };
            XATTR_ENTRY_BYTES + round(name.len() - prefix) + round(value.len())
        })
        .sum();
    if used > limit {
        return Err(libc::ENOSPC);
    }
    Ok(())
}

/// An in-memory backing store (see the module comment).
pub struct MemBackend {
    tree: Mutex<Tree>,
}

impl Default for MemBackend {
    fn default() -> Self {
        MemBackend::new()
    }
}

impl Clone for MemBackend {
    /// An independent copy of the whole tree (file pages are shared until
    /// either side writes them). On an `Arc<MemBackend>` call it as
    /// `MemBackend::clone(&arc)`.
    fn clone(&self) -> Self {
        MemBackend { tree: Mutex::new(self.tree.lock().clone()) }
    }
}

impl MemBackend {
    /// An empty tree: a root directory, mode 0755, owned by 0:0, at `mem_epoch()`.
    pub fn new() -> MemBackend {
        MemBackend::with_limits(MemLimits::EXT4)
    }

    /// An empty tree that keeps `limits`.
    pub fn with_limits(limits: MemLimits) -> MemBackend {
        MemBackend { tree: Mutex::new(Tree::new(limits)) }
    }

    /// An empty tree whose files keep every whole page that holds `known`
    /// content for its offsets as a mark, not as bytes (reads give the same
    /// bytes back): the simulator's data-less store.
    pub fn with_known_content(known: KnownContent) -> MemBackend {
        let backend = MemBackend::new();
        backend.tree.lock().known = Some(known);
        backend
    }

    /// This store, telling the journal it keeps none of its payload
    /// (`Backend::keeps_journal_payload`): for a replay that never reads its
    /// log back (the simulator's data-less store).
    pub fn without_journal_payloads(self) -> MemBackend {
        self.tree.lock().keeps_journal_payload = false;
        self
    }

    /// An empty tree that holds only `bytes` of file data (in 4 KiB blocks):
    /// writes that need more fail with ENOSPC, as a small file system's do.
    pub fn with_capacity(bytes: u64) -> MemBackend {
        MemBackend::with_limits(MemLimits { capacity: Some(bytes / PAGE_SIZE), ..MemLimits::EXT4 })
    }

    /// Bytes of `range` of the regular file at `path` that were written and
    /// not since cut or punched (whole pages; holes and bytes past the end
    /// left out): what a device would read for it.
    pub fn stored_bytes(&self, path: &Path, range: Range<u64>) -> io::Result<u64> {
        self.on_inode("count stored bytes of", path, |tree, id| {
            let inode = tree.get(id);
            inode.must_be_regular()?;
            Ok(inode.data.stored_bytes(range))
        })
    }

    /// The time stamp later calls give to what they change.
    pub fn set_now(&self, now: SystemTime) {
        self.tree.lock().now = now;
    }

    pub fn now(&self) -> SystemTime {
        self.tree.lock().now
    }

    /// Limits the names of a file (ext4: 65,000); copies keep the limit.
    /// For tests of what a backing store refuses at apply time.
    pub fn set_link_max(&self, max: u32) {
        self.tree.lock().limits.limits.link_max = max;
    }

    /// The whole tree, for comparisons.
    pub fn snapshot(&self) -> TreeSnapshot {
        self.tree.lock().snapshot()
    }

    /// Runs `f` on the tree with `path` checked and split into names; its
    /// errno comes back as an error naming `op` and `path`.
    fn on_path<T>(
        &self,
        op: &str,
        path: &Path,
        f: impl FnOnce(&mut Tree, &[&OsStr]) -> Result<T, i32>,
    ) -> io::Result<T> {
        let mut tree = self.tree.lock();
        let names = tree.names(path).map_err(|errno| path_error(op, path, errno))?;
        f(&mut tree, &names).map_err(|errno| path_error(op, path, errno))
    }

    /// `on_path` for calls that name two paths.
    fn on_two_paths(
        &self,
        op: &str,
        from: &Path,
        to: &Path,
        f: impl FnOnce(&mut Tree, &[&OsStr], &[&OsStr]) -> Result<(), i32>,
    ) -> io::Result<()> {
        let fail = |errno| two_path_error(op, from, to, errno);
        let mut tree = self.tree.lock();
        let from_names = tree.names(from).map_err(fail)?;
        let to_names = tree.names(to).map_err(fail)?;
        f(&mut tree, &from_names, &to_names).map_err(fail)
    }

    /// `on_path` for calls on an existing inode.
    fn on_inode<T>(
        &self,
        op: &str,
        path: &Path,
        f: impl FnOnce(&mut Tree, InodeId) -> Result<T, i32>,
    ) -> io::Result<T> {
        let mut tree = self.tree.lock();
        let id = tree.resolve(path).map_err(|errno| path_error(op, path, errno))?;
        f(&mut tree, id).map_err(|errno| path_error(op, path, errno))
    }

    /// A write of `len` bytes at `offset` of the regular file at `path`
    /// that `write` (`FileData::write_unkept` or `write_known`) makes from
    /// the extent alone, checked for room as `write_at` is.
    fn write_extent(
        &self,
        path: &Path,
        offset: u64,
        len: u64,
        write: fn(&mut FileData, u64, u64, u64) -> Result<(), i32>,
    ) -> io::Result<()> {
        self.on_inode("write", path, |tree, id| {
            tree.get(id).must_be_regular()?;
            let room = usize::try_from(len).map_err(|_| libc::EFBIG)?;
            tree.room_for(id, offset, room)?;
            let max_size = tree.limits.limits.max_file_size;
            tree.data_mut(id, |data| write(data, offset, len, max_size))?;
            if len > 0 {
                tree.modified(id);
            }
            Ok(())
        })
    }

    /// `on_inode` for extended attribute calls, with Linux's checks: the
    /// name's length (`ERANGE`) before the lookup, `check_xattr` after it.
    fn on_xattr<T>(
        &self,
        op: &str,
        path: &Path,
        name: &OsStr,
        access: XattrAccess,
        f: impl FnOnce(&mut Tree, InodeId) -> Result<T, i32>,
    ) -> io::Result<T> {
        if name.is_empty() || name.len() > XATTR_NAME_MAX {
            return Err(path_error(op, path, libc::ERANGE));
        }
        self.on_inode(op, path, |tree, id| {
            check_xattr(tree.get(id).kind, name, access)?;
            f(tree, id)
        })
    }
}

impl Backend for MemBackend {
    fn stat(&self, path: &Path) -> io::Result<BackendAttr> {
        self.on_inode("stat", path, |tree, id| Ok(tree.get(id).attr(id)))
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<(OsString, FileKind)>> {
        self.on_inode("list", path, |tree, id| {
            let dir = tree.get(id);
            if !dir.is_dir() {
                return Err(libc::ENOTDIR);
            }
            Ok(dir.entries.iter().map(|(name, child)| (name.clone(), tree.get(*child).kind)).collect())
        })
    }

    fn read_at(&self, path: &Path, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.on_inode("read", path, |tree, id| {
            let inode = tree.get(id);
            inode.must_be_regular()?;
            inode.data.read(offset, buf)
        })
    }

    fn write_at(&self, path: &Path, offset: u64, data: &[u8]) -> io::Result<()> {
        self.write_pieces_at(path, offset, &[data])
    }

    fn write_pieces_at(&self, path: &Path, offset: u64, pieces: &[&[u8]]) -> io::Result<()> {
        let len: usize = pieces.iter().map(|p| p.len()).sum();
        self.on_inode("write", path, |tree, id| {
            tree.get(id).must_be_regular()?;
            tree.room_for(id, offset, len)?;
            let max_size = tree.limits.limits.max_file_size;
            // Checked whole first: a piece must not land if a later one cannot.
            end_within(offset, len as u64, max_size)?;
            tree.data_mut(id, |data| -> Result<(), i32> {
                let mut at = offset;
                for piece in pieces {
                    data.write(at, piece, max_size)?;
                    at += piece.len() as u64;
                }
                Ok(())
            })?;
            if len > 0 {
                tree.modified(id);
            }
            Ok(())
        })
    }

    fn takes_pieces(&self) -> bool {
        true
    }

    fn keeps_journal_payload(&self) -> bool {
        self.tree.lock().keeps_journal_payload
    }

    fn write_unkept_at(&self, path: &Path, offset: u64, len: u64) -> io::Result<()> {
        self.write_extent(path, offset, len, FileData::write_unkept)
    }

    fn known_content(&self) -> Option<KnownContent> {
        self.tree.lock().known
    }

    fn write_known_at(&self, path: &Path, offset: u64, len: u64) -> io::Result<()> {
        self.write_extent(path, offset, len, FileData::write_known)
    }

    fn set_len(&self, path: &Path, size: u64) -> io::Result<()> {
        self.on_inode("truncate", path, |tree, id| {
            let max_size = tree.limits.limits.max_file_size;
            tree.get(id).must_be_regular()?;
            if size > max_size {
                return Err(libc::EFBIG);
            }
            tree.data_mut(id, |data| data.set_len(size));
            tree.modified(id);
            Ok(())
        })
    }

    fn create(&self, path: &Path, kind: FileKind, perm: u32, rdev: u32) -> io::Result<()> {
        self.on_path("create", path, |tree, names| tree.create(names, kind, perm, rdev))
    }

    fn symlink(&self, target: &OsStr, path: &Path) -> io::Result<()> {
        self.on_path("symlink", path, |tree, names| tree.symlink(target, names))
    }

    fn read_link(&self, path: &Path) -> io::Result<OsString> {
        self.on_inode("readlink", path, |tree, id| {
            let inode = tree.get(id);
            if inode.kind != FileKind::Symlink {
                return Err(libc::EINVAL);
            }
            Ok(inode.target.clone())
        })
    }

    fn link(&self, existing: &Path, new: &Path) -> io::Result<()> {
        self.on_two_paths("link", existing, new, |tree, existing, new| tree.link(existing, new))
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.on_path("unlink", path, |tree, names| tree.remove(names, false))
    }

    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        self.on_path("rmdir", path, |tree, names| tree.remove(names, true))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.on_two_paths("rename", from, to, |tree, from, to| tree.rename(from, to))
    }

    fn set_owner(&self, path: &Path, uid: u32, gid: u32) -> io::Result<()> {
        self.on_inode("chown", path, |tree, id| {
            tree.set_owner(id, uid, gid);
            Ok(())
        })
    }

    fn set_perm(&self, path: &Path, perm: u32) -> io::Result<()> {
        self.on_inode("chmod", path, |tree, id| {
            tree.set_perm(id, perm);
            Ok(())
        })
    }

    fn set_times(&self, path: &Path, atime: SystemTime, mtime: SystemTime) -> io::Result<()> {
        self.on_inode("utimens", path, |tree, id| {
            let inode = tree.get_mut(id);
            inode.atime = atime;
            inode.mtime = mtime;
            tree.changed(id);
            Ok(())
        })
    }

    fn get_xattr(&self, path: &Path, name: &OsStr) -> io::Result<Option<Vec<u8>>> {
        let got = self
            .on_xattr("getxattr", path, name, XattrAccess::Read, |tree, id| Ok(tree.get(id).xattrs.get(name).cloned()));
        match got {
            Err(e) if errno_of(&e) == libc::ENODATA => Ok(None),
            other => other,
        }
    }

    fn list_xattr(&self, path: &Path) -> io::Result<Vec<OsString>> {
        self.on_inode("listxattr", path, |tree, id| Ok(tree.get(id).xattrs.keys().cloned().collect()))
    }

    fn set_xattr(&self, path: &Path, name: &OsStr, value: &[u8]) -> io::Result<()> {
        if value.len() > XATTR_SIZE_MAX {
            return Err(path_error("setxattr", path, libc::E2BIG));
        }
        self.on_xattr("setxattr", path, name, XattrAccess::Write, |tree, id| tree.set_xattr(id, name, value))
    }

    fn remove_xattr(&self, path: &Path, name: &OsStr) -> io::Result<()> {
        self.on_xattr("removexattr", path, name, XattrAccess::Write, |tree, id| {
            if tree.get_mut(id).xattrs.remove(name).is_some() {
                tree.changed(id);
            }
            Ok(())
        })
    }

    fn sync(&self) -> io::Result<()> {
        Ok(())
    }

    fn statfs(&self) -> io::Result<FsStats> {
        Ok(self.tree.lock().statfs())
    }

    fn limits(&self) -> BackendLimits {
        self.tree.lock().limits.limits
    }

    fn check_xattrs(&self, kind: FileKind, xattrs: &[(&OsStr, &[u8])]) -> io::Result<()> {
        let limit = self.tree.lock().limits.xattr_bytes;
        let checked = xattrs.iter().try_for_each(|(name, value)| check_xattr_value(kind, name, value));
        checked
            .and_then(|()| check_xattr_space(xattrs.iter().copied(), limit))
            .map_err(|errno| path_error("check xattrs", Path::new(""), errno))
    }

    fn fallocate(&self, path: &Path, mode: FallocMode, offset: u64, len: u64) -> io::Result<()> {
        self.on_inode("fallocate", path, |tree, id| {
            let max_size = tree.limits.limits.max_file_size;
            tree.get(id).must_be_regular()?;
            tree.data_mut(id, |data| data.fallocate(mode, offset, len, max_size))?;
            tree.modified(id);
            Ok(())
        })
    }

    fn data_extents(&self, path: &Path) -> io::Result<Vec<Range<u64>>> {
        self.on_inode("seek data", path, |tree, id| {
            let inode = tree.get(id);
            inode.must_be_regular()?;
            Ok(inode.data.data_extents())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_content::{ramp, RAMP};
    use super::*;

    /// Random writes (of the known content or not, aligned or not), truncations, punched and zeroed
    /// ranges on a plain store and on two made `with_known_content`, the third handed each write of the
    /// known content as its extent (`write_known_at`): every read, extent list, stat and snapshot agrees,
    /// and the second and third keep marks for the known whole pages. Seed: `MCFS_SEED`.
    #[test]
    fn known_content_is_kept_as_marks_and_answers_as_bytes() {
        let seed: u64 = std::env::var("MCFS_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(7);
        println!("seed {seed}");
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut next = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let (plain, marked, extent) =
            (MemBackend::new(), MemBackend::with_known_content(RAMP), MemBackend::with_known_content(RAMP));
        let f = Path::new("f");
        for s in [&plain, &marked, &extent] {
            s.create(f, FileKind::File, 0o644, 0).unwrap();
        }
        let marks = |s: &MemBackend| {
            let tree = s.tree.lock();
            tree.inodes.values().map(|i| i.data.known_pages.len()).sum::<u64>()
        };
        let (mut most_marks, mut extents_written) = (0, 0);
        for step in 0..400 {
            let (offset, len) = (next(64) * 1024 + next(3) * 7, 1 + next(5) * 4096 + next(2) * next(4096));
            let mut data = vec![0u8; len as usize];
            ramp(offset, &mut data);
            let known = next(4) != 0;
            if !known {
                data[next(len) as usize] ^= 1;
            }
            let op = next(6);
            for (i, s) in [&plain, &marked, &extent].into_iter().enumerate() {
                match op {
                    0 => s.set_len(f, offset).unwrap(),
                    1 => s.fallocate(f, FallocMode::PunchHole, offset, len).unwrap(),
                    2 => s.fallocate(f, FallocMode::ZeroRange { keep_size: false }, offset, len).unwrap(),
                    _ if i == 2 && known => {
                        s.write_known_at(f, offset, len).unwrap();
                        extents_written += 1;
                    }
                    _ => s.write_at(f, offset, &data).unwrap(),
                }
            }
            for s in [&marked, &extent] {
                let mut bufs = [vec![0u8; 100_000], vec![0u8; 100_000]];
                let reads: Vec<usize> =
                    [&plain, s].iter().zip(&mut bufs).map(|(s, b)| s.read_at(f, 0, b).unwrap()).collect();
                assert_eq!((reads[0], &bufs[0]), (reads[1], &bufs[1]), "seed {seed}, step {step}");
                assert_eq!(plain.data_extents(f).unwrap(), s.data_extents(f).unwrap(), "seed {seed}, step {step}");
                let (a, b) = (plain.stat(f).unwrap(), s.stat(f).unwrap());
                assert_eq!((a.size, a.blocks, a.mtime), (b.size, b.blocks, b.mtime), "seed {seed}, step {step}");
            }
            for s in [&plain, &marked, &extent] {
                s.tree.lock().check_used_blocks().unwrap_or_else(|e| panic!("seed {seed}, step {step}: {e}"));
            }
            most_marks = most_marks.max(marks(&marked));
            assert_eq!(marks(&extent), marks(&marked), "seed {seed}, step {step}: the same pages are marks");
        }
        assert!(plain.snapshot() == marked.snapshot() && plain.snapshot() == extent.snapshot(), "seed {seed}");
        assert!(most_marks > 0, "seed {seed}: some whole pages were the ramp");
        assert!(extents_written > 0, "seed {seed}: some writes went as extents");
        assert_eq!(marks(&plain), 0, "a plain store keeps bytes");
    }

    /// `write_known_at` over unkept pages (whole and in part), past the end and at the largest file:
    /// what `write_at` of the content's bytes does; a store without known content refuses it.
    #[test]
    fn known_extents_write_as_the_bytes_would() {
        let (bytes, extent) = (MemBackend::with_known_content(RAMP), MemBackend::with_known_content(RAMP));
        let f = Path::new("f");
        let max = BackendLimits::EXT4.max_file_size;
        let writes = [(3 * 4096 + 10, 2 * 4096), (4096 - 5, 10), (9 * 4096, 0), (40_000, 5), (max - 4, 8)];
        for mem in [&bytes, &extent] {
            mem.create(f, FileKind::File, 0o644, 0).unwrap();
            mem.write_unkept_at(f, 100, 6 * 4096).unwrap();
        }
        for (offset, len) in writes {
            let mut data = vec![0u8; len as usize];
            ramp(offset, &mut data);
            let by_bytes = bytes.write_at(f, offset, &data).map_err(|e| errno_of(&e));
            assert_eq!(extent.write_known_at(f, offset, len).map_err(|e| errno_of(&e)), by_bytes, "{offset}+{len}");
            assert!(bytes.snapshot() == extent.snapshot(), "{offset}+{len}");
            assert_eq!(bytes.stat(f).unwrap(), extent.stat(f).unwrap(), "{offset}+{len}");
        }
        let plain = MemBackend::new();
        plain.create(f, FileKind::File, 0o644, 0).unwrap();
        assert_eq!(errno_of(&plain.write_known_at(f, 0, 4096).unwrap_err()), libc::EOPNOTSUPP);
        assert!(plain.known_content().is_none() && extent.known_content().is_some());
    }

    /// A file of known content written in pieces costs one run of marks, whatever its length; a page
    /// written with other bytes splits the run and reads back as written.
    #[test]
    fn known_pages_written_in_order_are_one_run() {
        let mem = MemBackend::with_known_content(RAMP);
        let f = Path::new("f");
        mem.create(f, FileKind::File, 0o644, 0).unwrap();
        let mut piece = vec![0u8; 64 * 1024];
        for offset in (0..4 << 20).step_by(piece.len()) {
            ramp(offset, &mut piece);
            mem.write_at(f, offset, &piece).unwrap();
        }
        let runs = |mem: &MemBackend| {
            mem.tree.lock().inodes.values().map(|i| i.data.known_pages.within(0..u64::MAX).count()).sum()
        };
        assert_eq!((runs(&mem), mem.stat(f).unwrap().blocks), (1, 1024 * 8));
        mem.write_at(f, 5 * 4096, &[9; 4096]).unwrap();
        assert_eq!((runs(&mem), mem.stat(f).unwrap().blocks), (2, 1024 * 8));
        let mut buf = [0u8; 3 * 4096];
        mem.read_at(f, 4 * 4096, &mut buf).unwrap();
        let mut want = [0u8; 3 * 4096];
        ramp(4 * 4096, &mut want);
        want[4096..8192].fill(9);
        assert_eq!(buf, want);
        let extents = mem.data_extents(f).unwrap();
        assert_eq!((extents.len(), extents[0].clone()), (1, 0..4 << 20));
    }

    /// A path resolves as `names` and `lookup` resolve it, however it was resolved before, and
    /// whatever unlinks and renames did since: through a remembered path, through a remembered
    /// directory, and refused for the same reasons.
    #[test]
    fn recent_paths_resolve_as_a_walk_does() {
        let mem = MemBackend::new();
        for dir in ["a", "a/b", "c"] {
            mem.create(Path::new(dir), FileKind::Dir, 0o755, 0).unwrap();
        }
        for file in ["a/b/f", "a/b/g", "a/x", "c/h"] {
            mem.create(Path::new(file), FileKind::File, 0o644, 0).unwrap();
        }
        let long = format!("a/b/{}", "n".repeat(300));
        let paths = ["", "a", "a/b", "a/b/f", "a/b/g", "a/b/", "a/b/.", "a/./b/g", "a//b/f", "a/b/h", "a/x", "a/x/y"];
        let paths = paths.iter().copied().chain(["/a", "/a/b/f", "a/b/../b/f", "a/b/f\0", "c", "c/h", "c/h/i", &long]);
        let paths: Vec<&str> = paths.collect();
        let check = |step: &str| {
            for _ in 0..2 {
                for path in &paths {
                    let mut tree = mem.tree.lock();
                    let walked = tree.names(Path::new(path)).and_then(|names| tree.lookup(&names));
                    assert_eq!(tree.resolve(Path::new(path)), walked, "{step}: {path}");
                }
            }
        };
        check("created");
        mem.rename(Path::new("a/b/g"), Path::new("a/b/f")).unwrap();
        check("renamed over");
        mem.remove_file(Path::new("c/h")).unwrap();
        check("unlinked");
        mem.rename(Path::new("a/b"), Path::new("c/h")).unwrap();
        check("a directory moved");
        mem.create(Path::new("a/b"), FileKind::File, 0o644, 0).unwrap();
        mem.remove_file(Path::new("a/x")).unwrap();
        mem.create(Path::new("a/x"), FileKind::Dir, 0o755, 0).unwrap();
        check("names bound again");
    }

    #[test]
    fn pages_are_copied_on_write_between_clones() {
        let a = MemBackend::new();
        a.create(Path::new("f"), FileKind::File, 0o644, 0).unwrap();
        a.write_at(Path::new("f"), 10, b"abc").unwrap();
        let b = a.clone();
        b.write_at(Path::new("f"), 11, b"X").unwrap();
        let mut buf = [0u8; 13];
        assert_eq!(a.read_at(Path::new("f"), 0, &mut buf).unwrap(), 13);
        assert_eq!(&buf[10..], b"abc");
        b.read_at(Path::new("f"), 0, &mut buf).unwrap();
        assert_eq!(&buf[10..], b"aXc");
    }

    #[test]
    fn shrinking_zeroes_the_cut_tail_so_regrowth_reads_zeros() {
        let mut data = FileData::default();
        data.write(0, &[7u8; 5000], u64::MAX).unwrap();
        data.set_len(4100);
        data.set_len(6000);
        let mut buf = vec![1u8; 6000];
        assert_eq!(data.read(0, &mut buf), Ok(6000));
        assert!(buf[..4100].iter().all(|b| *b == 7));
        assert!(buf[4100..].iter().all(|b| *b == 0));
        assert_eq!(data.pages.len(), 2);
        data.set_len(4096);
        assert_eq!(data.pages.len(), 1);
    }

    #[test]
    fn pieces_write_as_their_joined_bytes_or_not_at_all() {
        let (joined, pieces) = (MemBackend::with_known_content(RAMP), MemBackend::with_known_content(RAMP));
        let f = Path::new("f");
        let mut known = vec![0u8; 3 * 4096];
        ramp(4096 - 100, &mut known);
        // Pieces across page boundaries; a known page made of several of them.
        let parts: [&[u8]; 4] = [b"head", &known[..5000], &[], &known[5000..]];
        for mem in [&joined, &pieces] {
            mem.create(f, FileKind::File, 0o644, 0).unwrap();
        }
        joined.write_at(f, 4096 - 104, &parts.concat()).unwrap();
        pieces.write_pieces_at(f, 4096 - 104, &parts).unwrap();
        assert_eq!(joined.snapshot(), pieces.snapshot());
        assert_eq!(joined.stat(f).unwrap(), pieces.stat(f).unwrap());
        // A last piece past the largest file: nothing lands.
        let max = BackendLimits::EXT4.max_file_size;
        let e = pieces.write_pieces_at(f, max - 8, &[b"fits", b"no room"]).unwrap_err();
        assert_eq!(errno_of(&e), libc::EFBIG);
        assert_eq!(joined.snapshot(), pieces.snapshot());
    }

    #[test]
    fn unkept_pages_hold_data_that_reads_fail_on() {
        let mem = MemBackend::new();
        let f = Path::new("f");
        mem.create(f, FileKind::File, 0o644, 0).unwrap();
        mem.write_at(f, 0, &[1; 3 * 4096]).unwrap();
        // Bytes 4000..8300: pages 0 to 2 touched, so all three unkept.
        mem.write_unkept_at(f, 4000, 4300).unwrap();
        mem.write_unkept_at(f, 20 * 4096, 10).unwrap();
        let attr = mem.stat(f).unwrap();
        assert_eq!((attr.size, attr.blocks), (20 * 4096 + 10, 4 * 8));
        assert_eq!(mem.stored_bytes(f, 0..u64::MAX).unwrap(), 3 * 4096 + 10);
        assert_eq!(mem.data_extents(f).unwrap(), vec![0..3 * 4096, 20 * 4096..20 * 4096 + 10]);
        let mut buf = [0u8; 10];
        for offset in [0, 4096 + 5, 2 * 4096, 20 * 4096] {
            assert_eq!(errno_of(&mem.read_at(f, offset, &mut buf).unwrap_err()), libc::EIO, "at {offset}");
        }
        assert_eq!(mem.read_at(f, 3 * 4096, &mut buf).unwrap(), 10, "a hole reads as zeros");
        // Part of an unkept page written: the rest is still not known.
        mem.write_at(f, 10, b"head").unwrap();
        assert_eq!(errno_of(&mem.read_at(f, 10, &mut buf[..4]).unwrap_err()), libc::EIO);
        // A whole page written, a punched hole, a cut: each page is readable again.
        mem.write_at(f, 0, &[2; 4096]).unwrap();
        mem.fallocate(f, FallocMode::PunchHole, 4096, 4096).unwrap();
        mem.set_len(f, 2 * 4096 + 100).unwrap();
        mem.set_len(f, 3 * 4096).unwrap();
        let mut page = [0u8; 4096];
        mem.read_at(f, 0, &mut page).unwrap();
        assert_eq!(page, [2; 4096]);
        mem.read_at(f, 4096, &mut page).unwrap();
        assert_eq!(page, [0; 4096]);
        assert_eq!(errno_of(&mem.read_at(f, 2 * 4096, &mut buf).unwrap_err()), libc::EIO, "cut inside: kept unkept");
        assert_eq!(mem.stat(f).unwrap().blocks, 2 * 8);
        let e = mem.write_unkept_at(f, BackendLimits::EXT4.max_file_size - 1, 2).unwrap_err();
        assert_eq!(errno_of(&e), libc::EFBIG);
        assert!(mem.keeps_journal_payload() && !MemBackend::new().without_journal_payloads().keeps_journal_payload());
    }

    /// `statfs` counts the blocks of files written, cut, re-created, linked, replaced and unlinked.
    #[test]
    fn used_blocks_follow_every_change_of_data_and_names() {
        let mem = MemBackend::new();
        let p = Path::new;
        let used = |what: &str, blocks: u64| {
            mem.tree.lock().check_used_blocks().unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(TOTAL_BLOCKS - mem.statfs().unwrap().bfree, blocks, "{what}");
        };
        mem.create(p("f"), FileKind::File, 0o644, 0).unwrap();
        mem.write_at(p("f"), 0, &[1; 3 * 4096]).unwrap();
        used("f written", 3);
        mem.create(p("g"), FileKind::File, 0o644, 0).unwrap();
        mem.write_unkept_at(p("g"), 0, 2 * 4096).unwrap();
        used("unkept pages of g", 5);
        mem.fallocate(p("f"), FallocMode::PunchHole, 4096, 4096).unwrap();
        used("a hole in f", 4);
        mem.set_len(p("f"), 10).unwrap();
        used("f cut", 3);
        mem.link(p("f"), p("h")).unwrap();
        mem.remove_file(p("f")).unwrap();
        used("f unlinked, its link h keeps it", 3);
        mem.rename(p("h"), p("g")).unwrap();
        used("h renamed over g", 1);
        mem.create(p("g"), FileKind::File, 0o644, 0).unwrap();
        used("g created again", 0);
    }

    #[test]
    fn huge_offsets_are_sparse_or_efbig() {
        let mem = MemBackend::new();
        let max = BackendLimits::EXT4.max_file_size;
        mem.create(Path::new("f"), FileKind::File, 0o644, 0).unwrap();
        mem.write_at(Path::new("f"), max - 3, b"end").unwrap();
        assert_eq!(mem.stat(Path::new("f")).unwrap().size, max);
        assert_eq!(mem.statfs().unwrap().bfree, TOTAL_BLOCKS - 1);
        let e = mem.write_at(Path::new("f"), max - 1, b"xx").unwrap_err();
        assert_eq!(errno_of(&e), libc::EFBIG);
        let e = mem.write_at(Path::new("f"), u64::MAX - 1, b"xx").unwrap_err();
        assert_eq!(errno_of(&e), libc::EFBIG);
        let e = mem.set_len(Path::new("f"), max + 1).unwrap_err();
        assert_eq!(errno_of(&e), libc::EFBIG);
    }

    #[test]
    fn configured_limits_refuse_with_the_errno_of_linux() {
        let limits = BackendLimits { max_file_size: 10, link_max: 2, name_max: 5, symlink_max: 3 };
        let mem = MemBackend::with_limits(MemLimits { limits, xattr_bytes: 64, capacity: None });
        assert_eq!(mem.limits(), limits);
        let p = Path::new;
        assert_eq!(errno_of(&mem.create(p("sixsix"), FileKind::File, 0o644, 0).unwrap_err()), libc::ENAMETOOLONG);
        assert_eq!(errno_of(&mem.stat(p("sixsix")).unwrap_err()), libc::ENAMETOOLONG);
        mem.create(p("f"), FileKind::File, 0o644, 0).unwrap();
        assert_eq!(errno_of(&mem.set_len(p("f"), 11).unwrap_err()), libc::EFBIG);
        assert_eq!(errno_of(&mem.write_at(p("f"), 8, b"abc").unwrap_err()), libc::EFBIG);
        mem.link(p("f"), p("g")).unwrap();
        assert_eq!(errno_of(&mem.link(p("f"), p("h")).unwrap_err()), libc::EMLINK);
        assert_eq!(errno_of(&mem.symlink(OsStr::new("abcd"), p("s")).unwrap_err()), libc::ENAMETOOLONG);
        // two 12-byte values cost 16 + 4 + 12 each: 64 bytes hold both, not a third
        let name = |n: &str| OsString::from(format!("user.{n}"));
        mem.set_xattr(p("f"), &name("a"), &[1; 12]).unwrap();
        mem.set_xattr(p("f"), &name("b"), &[2; 12]).unwrap();
        assert_eq!(errno_of(&mem.set_xattr(p("f"), &name("c"), &[3; 1]).unwrap_err()), libc::ENOSPC);
        assert_eq!(errno_of(&mem.set_xattr(p("f"), &name("b"), &[2; 13]).unwrap_err()), libc::ENOSPC);
        mem.set_xattr(p("f"), &name("b"), &[9; 9]).unwrap();
        assert_eq!(mem.get_xattr(p("f"), &name("b")).unwrap(), Some(vec![9; 9]));
        let set = [(OsStr::new("user.a"), &[1u8; 12][..]), (OsStr::new("user.b"), &[2u8; 13][..])];
        assert_eq!(errno_of(&mem.check_xattrs(FileKind::File, &set).unwrap_err()), libc::ENOSPC);
        assert!(mem.check_xattrs(FileKind::File, &set[..1]).is_ok());
        let foreign = [(OsStr::new("foo.bar"), &b"1"[..])];
        assert_eq!(errno_of(&mem.check_xattrs(FileKind::File, &foreign).unwrap_err()), libc::EOPNOTSUPP);
        let user_on_link = [(OsStr::new("user.a"), &b"1"[..])];
        assert_eq!(errno_of(&mem.check_xattrs(FileKind::Symlink, &user_on_link).unwrap_err()), libc::EPERM);
    }

    #[test]
    fn time_stamps_come_from_now_only() {
        let mem = MemBackend::new();
        assert_eq!(mem.stat(Path::new("")).unwrap().mtime, mem_epoch());
        let later = mem_epoch() + Duration::from_secs(5);
        mem.set_now(later);
        mem.create(Path::new("f"), FileKind::File, 0o644, 0).unwrap();
        let root = mem.stat(Path::new("")).unwrap();
        assert_eq!((root.mtime, root.ctime, root.atime), (later, later, mem_epoch()));
        let f = mem.stat(Path::new("f")).unwrap();
        assert_eq!((f.atime, f.mtime, f.ctime), (later, later, later));
    }
}
