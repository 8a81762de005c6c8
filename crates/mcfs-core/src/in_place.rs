//! Appended data straight to its home: a commit writes the data its
//! transaction appends past the end of an existing backing file in place,
//! before the commit record, instead of into the journal and again in place
//! later (ext4's ordered mode, for appends). Bytes past a file's end are
//! never read by the state before the transaction, so only the file's size
//! and times must be put back if the transaction does not commit.
//!
//! Invariant: before the first byte of transaction `seq` lands past the end
//! of a backing file, a durable record in `.mcfs/appends` names the file
//! with its size and times before `seq`; recovery cuts every file so named
//! back to them unless `seq` committed. A write goes in place only while
//! nothing waits to be applied and no namespace op came before it in the
//! transaction (the path names the object the backing store has under it
//! now), at or past the size the file had before the transaction, and only
//! if no earlier op of the transaction journaled a truncate or fallocate of
//! the same object, or a write of bytes it overlaps (applied later, that op
//! would land over newer bytes). docs/JOURNAL.md, "Appends written in
//! place", has the argument.

use crate::backend::{is_not_found, Backend, KnownContent};
use crate::journal::JournalOp;
use crate::types::FileKind;
use crate::write_run::WriteRun;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::OsString;
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The record file: one record per file a transaction appends to in place.
pub(crate) fn appends_path() -> PathBuf {
    Path::new(crate::STATE_DIR).join("appends")
}

const MAGIC: &[u8; 4] = b"MCAP";

/// A file as it was before transaction `seq` wrote past its end.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Before {
    seq: u64,
    path: PathBuf,
    size: u64,
    atime: SystemTime,
    mtime: SystemTime,
}

/// Seconds and nanoseconds since the epoch; `None` before it (such a file
/// is journaled instead).
fn epoch_parts(t: SystemTime) -> Option<(u64, u32)> {
    t.duration_since(UNIX_EPOCH).ok().map(|d| (d.as_secs(), d.subsec_nanos()))
}

impl Before {
    /// `MCAP | seq | size | atime s, ns | mtime s, ns | path len | path | crc32c`.
    fn encode(&self) -> Option<Vec<u8>> {
        let (a, an) = epoch_parts(self.atime)?;
        let (m, mn) = epoch_parts(self.mtime)?;
        let path = self.path.as_os_str().as_bytes();
        let mut out = Vec::with_capacity(48 + path.len());
        out.extend_from_slice(MAGIC);
        for n in [self.seq, self.size, a] {
            out.extend_from_slice(&n.to_le_bytes());
        }
        out.extend_from_slice(&an.to_le_bytes());
        out.extend_from_slice(&m.to_le_bytes());
        out.extend_from_slice(&mn.to_le_bytes());
        out.extend_from_slice(&u32::try_from(path.len()).ok()?.to_le_bytes());
        out.extend_from_slice(path);
        let crc = crc32c::crc32c(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        Some(out)
    }

    /// The record at the start of `bytes` and its length, if it is whole and intact.
    fn decode(bytes: &[u8]) -> Option<(Before, usize)> {
        let u64_at = |at: usize| bytes.get(at..at + 8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")));
        let u32_at = |at: usize| bytes.get(at..at + 4).map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")));
        if bytes.get(..4)? != MAGIC {
            return None;
        }
        let path_len = u32_at(44)? as usize;
        let end = 48 + path_len;
        if u32_at(end)? != crc32c::crc32c(bytes.get(..end)?) {
            return None;
        }
        let time = |s: u64, ns: u32| UNIX_EPOCH.checked_add(Duration::new(s, ns));
        let before = Before {
            seq: u64_at(4)?,
            size: u64_at(12)?,
            atime: time(u64_at(20)?, u32_at(28)?.min(999_999_999))?,
            mtime: time(u64_at(32)?, u32_at(40)?.min(999_999_999))?,
            path: PathBuf::from(OsString::from_vec(bytes[48..end].to_vec())),
        };
        Some((before, end + 4))
    }
}

/// The valid records of `.mcfs/appends`: the intact prefix, all of the
/// first record's transaction (a record torn by a crash ends it; its data
/// was never written).
fn read_records(backend: &dyn Backend) -> io::Result<Vec<Before>> {
    let len = match backend.stat(&appends_path()) {
        Ok(attr) => attr.size,
        Err(e) if is_not_found(&e) => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut bytes = vec![0; usize::try_from(len).map_err(io::Error::other)?];
    let mut got = 0;
    while got < bytes.len() {
        match backend.read_at(&appends_path(), got as u64, &mut bytes[got..])? {
            0 => break,
            n => got += n,
        }
    }
    bytes.truncate(got);
    let mut records: Vec<Before> = Vec::new();
    let mut at = 0;
    while let Some((record, len)) = Before::decode(&bytes[at..]) {
        if records.first().is_some_and(|first| first.seq != record.seq) {
            break;
        }
        records.push(record);
        at += len;
    }
    Ok(records)
}

/// Puts back the files a transaction that did not commit appended to in
/// place (`committed(seq)` says whether it did), then forgets the records.
/// Runs in recovery before anything else touches the backing store; true if
/// it changed anything (the caller syncs).
/// Both are durable before it returns: replayed after them, the committed
/// transactions may extend the same files again, and a second recovery must
/// not cut that off (nor, once the replay's progress is durable, take a
/// committed transaction for one that did not commit).
pub(crate) fn recover(backend: &dyn Backend, committed: &dyn Fn(u64) -> bool) -> io::Result<bool> {
    let records = read_records(backend)?;
    let Some(first) = records.first() else { return Ok(false) };
    if !committed(first.seq) {
        put_back(backend, &records)?;
    }
    forget(backend)?;
    Ok(true)
}

/// Empties the record file, durably, if it holds anything: at mount
/// (transaction numbers start again, and a record must never be taken for
/// one of a later transaction with its number) and in recovery.
pub(crate) fn forget(backend: &dyn Backend) -> io::Result<()> {
    match backend.stat(&appends_path()) {
        Ok(attr) if attr.size > 0 => {
            backend.set_len(&appends_path(), 0)?;
            backend.sync()
        }
        Ok(_) => Ok(()),
        Err(e) if is_not_found(&e) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Cuts each file back to its size and times before the transaction; a file
/// that is gone or is no regular file any more is left alone.
fn put_back(backend: &dyn Backend, records: &[Before]) -> io::Result<()> {
    for r in records {
        match backend.stat(&r.path) {
            Ok(attr) if attr.kind == FileKind::File => {
                backend.set_len(&r.path, r.size)?;
                backend.set_times(&r.path, r.atime, r.mtime)?;
            }
            Ok(_) => {}
            Err(e) if is_not_found(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// One transaction's routing of its ops: written in place, or journaled.
pub(crate) struct InPlace<'a> {
    backend: &'a dyn Backend,
    seq: u64,
    /// Smallest write that starts appending a file in place (0: never).
    min_bytes: u64,
    /// False once a namespace op came (paths may name other objects now).
    open: bool,
    /// Backing objects (by `BackendAttr::ino`) of the paths seen so far,
    /// keyed by the path's bytes (hashed in one go; `Path` hashes name by
    /// name): a path spelt two ways is only looked up twice.
    objects: HashMap<OsString, Option<u64>>,
    /// Per object, the end of the furthest write of the waiting transactions.
    waiting_ends: HashMap<u64, u64>,
    /// Files appended in place: their state before the transaction.
    placed: HashMap<u64, Before>,
    /// What earlier ops of the transaction changed through the journal.
    journaled: Journaled,
    /// Bytes of `.mcfs/appends` written so far in this transaction.
    record_bytes: u64,
    /// File data written in place.
    pub data_bytes: u64,
    /// Ops the transaction put in the journal (known once it is written).
    pub journal_ops: u64,
}

impl<'a> InPlace<'a> {
    /// Routing for transaction `seq`, committed after the transactions
    /// whose ops `waiting` lists (not applied yet): a namespace op among
    /// them keeps everything in the journal; a file they truncate or
    /// fallocate stays journaled; one they write is placed only past the
    /// end of their writes (applied later, they must not land over newer
    /// bytes). A path the store cannot stat keeps everything in the journal.
    pub(crate) fn new<'w>(
        backend: &'a dyn Backend,
        seq: u64,
        min_bytes: u64,
        waiting: impl Iterator<Item = &'w JournalOp>,
    ) -> InPlace<'a> {
        let mut place = InPlace {
            backend,
            seq,
            min_bytes,
            open: min_bytes > 0,
            objects: HashMap::new(),
            waiting_ends: HashMap::new(),
            placed: HashMap::new(),
            journaled: Journaled::default(),
            record_bytes: 0,
            data_bytes: 0,
            journal_ops: 0,
        };
        for op in waiting {
            if !place.open {
                break;
            }
            match op {
                JournalOp::Write { path, .. } | JournalOp::WriteKnown { path, .. } => match place.object(path) {
                    Ok(Some(object)) => {
                        let end = place.waiting_ends.entry(object).or_default();
                        *end = (*end).max(op.written().map_or(0, |(_, _, written_end)| written_end));
                    }
                    Ok(None) => {}
                    Err(_) => place.open = false,
                },
                JournalOp::SetLen { path, .. } | JournalOp::Fallocate { path, .. } => match place.object(path) {
                    Ok(Some(object)) => place.journaled.whole(object),
                    Ok(None) => {}
                    Err(_) => place.open = false,
                },
                op if op.is_namespace() => place.open = false,
                _ => {}
            }
        }
        place
    }

    /// Bytes written under `.mcfs/` (the records).
    pub(crate) fn record_bytes(&self) -> u64 {
        self.record_bytes
    }

    /// Writes `op` in place if it may go there (see the module comment);
    /// otherwise gives it back, to be journaled.
    pub(crate) fn route(&mut self, op: JournalOp) -> io::Result<Option<JournalOp>> {
        if !self.open {
            return Ok(Some(op));
        }
        match &op {
            JournalOp::Write { path, offset, data } => {
                let write = |backend: &dyn Backend| backend.write_at(path, *offset, data);
                Ok(if self.place_with(path, *offset, data.len() as u64, write)? { None } else { Some(op) })
            }
            // Made only of a run the journal keeps (`WriteRun::into_op`), not
            // routed here; journaled all the same, as a write `place` declines.
            JournalOp::WriteKnown { path, offset, len } => {
                if let Some(object) = self.object(path)? {
                    self.journaled.range(object, *offset, offset.saturating_add(*len));
                }
                Ok(Some(op))
            }
            JournalOp::SetLen { path, .. } | JournalOp::Fallocate { path, .. } => {
                if let Some(object) = self.object(path)? {
                    self.journaled.whole(object);
                }
                Ok(Some(op))
            }
            _ if op.is_namespace() => {
                self.open = false;
                Ok(Some(op))
            }
            // Owner, mode, times and xattrs: applied later, over the data either way.
            _ => Ok(Some(op)),
        }
    }

    /// Writes `run` in place if it may go there (see the module comment);
    /// false if it is to be journaled. `known`: the journal's
    /// (`WriteRun::write_to`).
    pub(crate) fn place(&mut self, run: &WriteRun, known: Option<KnownContent>) -> io::Result<bool> {
        self.place_with(&run.path, run.offset, run.len(), |backend| run.write_to(backend, known))
    }

    /// `place` for `len` bytes at `offset` of `path`, which `write` writes.
    fn place_with(
        &mut self,
        path: &Path,
        offset: u64,
        len: u64,
        write: impl FnOnce(&dyn Backend) -> io::Result<()>,
    ) -> io::Result<bool> {
        if !self.open {
            return Ok(false);
        }
        let Some(object) = self.object(path)? else { return Ok(false) };
        let end = offset.saturating_add(len);
        if self.journaled.overlaps(object, offset, end) || !self.may_place(object, path, offset, len)? {
            self.journaled.range(object, offset, end);
            return Ok(false);
        }
        write(self.backend)?;
        self.data_bytes += len;
        Ok(true)
    }

    /// The backing object `path` names now, if any.
    fn object(&mut self, path: &Path) -> io::Result<Option<u64>> {
        if let Some(known) = self.objects.get(path.as_os_str()) {
            return Ok(*known);
        }
        let object = match self.backend.stat(path) {
            Ok(attr) if attr.kind == FileKind::File => Some(attr.ino),
            Ok(_) => None,
            Err(e) if is_not_found(&e) => None,
            Err(e) => return Err(e),
        };
        self.objects.insert(path.as_os_str().to_owned(), object);
        Ok(object)
    }

    /// Whether bytes `offset..offset+len` of `object` (at `path`) may go in
    /// place: past its size before the transaction (and past the waiting
    /// transactions' writes; the record keeps the backing size, which
    /// recovery restores before it replays them). The first such write to
    /// a file must be at least `min_bytes`, and its record is made durable
    /// before it.
    fn may_place(&mut self, object: u64, path: &Path, offset: u64, len: u64) -> io::Result<bool> {
        if let Some(before) = self.placed.get(&object) {
            let floor = before.size.max(self.waiting_ends.get(&object).copied().unwrap_or(0));
            return Ok(offset >= floor);
        }
        if len < self.min_bytes {
            return Ok(false);
        }
        let attr = self.backend.stat(path)?;
        if offset < attr.size.max(self.waiting_ends.get(&object).copied().unwrap_or(0)) {
            return Ok(false);
        }
        let before =
            Before { seq: self.seq, path: path.to_path_buf(), size: attr.size, atime: attr.atime, mtime: attr.mtime };
        let Some(record) = before.encode() else { return Ok(false) };
        if self.placed.is_empty() {
            // Emptied (the records of an earlier transaction are settled), or
            // created once: emptying the file leaves its directory unchanged,
            // so the sync below need not sync the directory at every commit.
            match self.backend.set_len(&appends_path(), 0) {
                Err(e) if is_not_found(&e) => self.backend.create(&appends_path(), FileKind::File, 0o600, 0)?,
                emptied => emptied?,
            }
        }
        self.backend.write_at(&appends_path(), self.record_bytes, &record)?;
        self.backend.sync()?;
        self.record_bytes += record.len() as u64;
        self.placed.insert(object, before);
        Ok(true)
    }

    /// Syncs the data written in place, before the commit record is
    /// written: a crash must never keep the record without the data (unlike
    /// the journal's payload, no checksum would tell).
    pub(crate) fn make_durable(&self) -> io::Result<()> {
        if self.data_bytes == 0 {
            return Ok(());
        }
        self.backend.sync()
    }

    /// The transaction committed (its `wait_sync` returned): its records
    /// go. Not synced: every apply run with an op syncs before it frees a
    /// segment, so no crash keeps the freed segment of this transaction
    /// beside its records without a durable progress record that says it
    /// committed. A transaction with no op in the journal syncs here.
    pub(crate) fn committed(&self) -> io::Result<()> {
        if self.placed.is_empty() {
            return Ok(());
        }
        self.backend.set_len(&appends_path(), 0)?;
        if self.journal_ops == 0 {
            self.backend.sync()?;
        }
        Ok(())
    }

    /// The transaction did not commit and was aborted (`aborted`: how the
    /// journal's abort went): cuts the files back to their size and times
    /// before it and forgets the records, durably (the sync also makes the
    /// aborted segment's truncation durable, so its commit record cannot
    /// turn up beside the cut files; if that truncation failed, nothing is
    /// cut and the error is the caller's).
    pub(crate) fn undo(&self, aborted: io::Result<()>) -> io::Result<()> {
        if self.placed.is_empty() {
            return Ok(());
        }
        aborted?;
        let records: Vec<Before> = self.placed.values().cloned().collect();
        put_back(self.backend, &records)?;
        self.backend.set_len(&appends_path(), 0)?;
        self.backend.sync()
    }
}

/// What a transaction's ops changed through the journal so far, per backing
/// object: all of it (a truncate or fallocate), or byte ranges (writes). A
/// later write may go in place only where no journaled op lands after it.
/// Ranges, not whole files: the kernel's writeback (sync-point mode) sends
/// pages out of order, so one page below the backing file's end would
/// otherwise send the rest of a large append through the journal too.
#[derive(Default)]
struct Journaled {
    whole: HashSet<u64>,
    /// Per object, disjoint ranges `start -> end`, adjacent ones merged.
    ranges: HashMap<u64, BTreeMap<u64, u64>>,
}

impl Journaled {
    fn whole(&mut self, object: u64) {
        self.whole.insert(object);
    }

    fn range(&mut self, object: u64, mut start: u64, mut end: u64) {
        if start >= end {
            return;
        }
        let ranges = self.ranges.entry(object).or_default();
        let touching: Vec<(u64, u64)> =
            ranges.range(..=end).rev().map(|(s, e)| (*s, *e)).take_while(|(_, e)| *e >= start).collect();
        for (s, e) in touching {
            ranges.remove(&s);
            (start, end) = (start.min(s), end.max(e));
        }
        ranges.insert(start, end);
    }

    /// Whether a journaled op of `object` changes any of `start..end`. The
    /// ranges are disjoint, so only the last one starting before `end` can.
    fn overlaps(&self, object: u64, start: u64, end: u64) -> bool {
        self.whole.contains(&object)
            || self
                .ranges
                .get(&object)
                .and_then(|r| r.range(..end).next_back())
                .is_some_and(|(s, e)| *e > start && *s < end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{MemBackend, Mutation};

    fn before(seq: u64, path: &str) -> Before {
        let t = |s| UNIX_EPOCH + Duration::new(s, 7);
        Before { seq, path: PathBuf::from(path), size: 12345, atime: t(100), mtime: t(200) }
    }

    #[test]
    fn a_record_round_trips_and_any_damage_is_seen() {
        let b = before(9, "d/f\u{e9}");
        let bytes = b.encode().expect("encodes");
        assert_eq!(Before::decode(&bytes), Some((b.clone(), bytes.len())));
        for cut in 0..bytes.len() {
            assert_eq!(Before::decode(&bytes[..cut]), None, "cut at {cut}");
        }
        for at in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[at] ^= 0x10;
            assert!(Before::decode(&bad).is_none_or(|(r, _)| r != b), "flip at {at}");
        }
    }

    #[test]
    fn records_of_one_transaction_are_read_up_to_the_first_torn_one() {
        let backend = MemBackend::new();
        backend.create(Path::new(crate::STATE_DIR), FileKind::Dir, 0o700, 0).unwrap();
        let mut bytes = Vec::new();
        for r in [before(3, "a"), before(3, "b"), before(2, "old"), before(3, "c")] {
            bytes.extend(r.encode().unwrap());
        }
        backend.create(&appends_path(), FileKind::File, 0o600, 0).unwrap();
        backend.write_at(&appends_path(), 0, &bytes).unwrap();
        let paths: Vec<PathBuf> = read_records(&backend).unwrap().into_iter().map(|r| r.path).collect();
        assert_eq!(paths, [PathBuf::from("a"), PathBuf::from("b")], "stops at another transaction's record");
        backend.set_len(&appends_path(), (bytes.len() / 4) as u64 + 3).unwrap();
        assert_eq!(read_records(&backend).unwrap().len(), 1, "a torn second record ends the list");
    }

    #[test]
    fn recovery_puts_back_files_of_a_transaction_that_did_not_commit_only() {
        let setup = || {
            let backend = MemBackend::new();
            backend.create(Path::new(crate::STATE_DIR), FileKind::Dir, 0o700, 0).unwrap();
            backend.create(&appends_path(), FileKind::File, 0o600, 0).unwrap();
            backend.create(Path::new("f"), FileKind::File, 0o644, 0).unwrap();
            backend.write_at(Path::new("f"), 0, &[1; 100]).unwrap();
            let old = backend.stat(Path::new("f")).unwrap();
            let mut place = InPlace::new(&backend, 5, 1, std::iter::empty());
            let op = JournalOp::Write { path: PathBuf::from("f"), offset: 100, data: vec![2; 50] };
            assert!(place.route(op).unwrap().is_none(), "an append goes in place");
            let inside = JournalOp::Write { path: PathBuf::from("f"), offset: 10, data: vec![3; 5] };
            assert!(place.route(inside).unwrap().is_some(), "a write inside the old size is journaled");
            assert_eq!(backend.stat(Path::new("f")).unwrap().size, 150);
            (backend, old)
        };
        let (backend, old) = setup();
        assert!(recover(&backend, &|seq| seq == 5).unwrap());
        assert_eq!(backend.stat(Path::new("f")).unwrap().size, 150, "committed: kept");
        let (backend, old2) = setup();
        assert!(recover(&backend, &|_| false).unwrap());
        let now = backend.stat(Path::new("f")).unwrap();
        assert_eq!((now.size, now.mtime), (100, old2.mtime), "not committed: cut back");
        assert_eq!(backend.stat(&appends_path()).unwrap().size, 0, "records forgotten");
        assert!(!recover(&backend, &|_| false).unwrap(), "nothing left to do");
        let _ = old;
    }

    /// A store with the state directory and a file `f` of `len` bytes.
    fn store_with_f(len: usize) -> MemBackend {
        let backend = MemBackend::new();
        backend.create(Path::new(crate::STATE_DIR), FileKind::Dir, 0o700, 0).unwrap();
        backend.create(Path::new("f"), FileKind::File, 0o644, 0).unwrap();
        backend.write_at(Path::new("f"), 0, &vec![1; len]).unwrap();
        backend
    }

    #[test]
    fn an_aborted_transaction_cuts_its_files_back_unless_the_abort_failed() {
        let backend = store_with_f(10);
        let mut place = InPlace::new(&backend, 1, 1, std::iter::empty());
        let append = JournalOp::Write { path: PathBuf::from("f"), offset: 10, data: vec![2; 90] };
        assert!(place.route(append).unwrap().is_none());
        let failed = place.undo(Err(io::Error::other("abort failed")));
        assert!(failed.is_err(), "the abort's error is the caller's");
        assert_eq!(backend.stat(Path::new("f")).unwrap().size, 100, "nothing cut while the segment may stay");
        place.undo(Ok(())).unwrap();
        assert_eq!(backend.stat(Path::new("f")).unwrap().size, 10, "cut back");
        assert_eq!(backend.stat(&appends_path()).unwrap().size, 0, "records gone");
        InPlace::new(&backend, 2, 1, std::iter::empty()).undo(Err(io::Error::other("x"))).unwrap();
    }

    #[test]
    fn the_record_file_is_created_once_and_emptied_for_each_later_transaction() {
        let backend = crate::backend::RecordingBackend::new(store_with_f(10));
        let append = |offset| JournalOp::Write { path: PathBuf::from("f"), offset, data: vec![2; 10] };
        let creates_of_the_records = |backend: &crate::backend::RecordingBackend| {
            let ops = (0..backend.op_count()).filter_map(|i| backend.op(i));
            ops.filter(|op| matches!(op, Mutation::Create { path, .. } if *path == appends_path())).count()
        };
        for seq in 1..=3 {
            let mut place = InPlace::new(&backend, seq, 1, std::iter::empty());
            assert!(place.route(append(seq * 10)).unwrap().is_none(), "appended in place");
            let records: Vec<u64> = read_records(&backend).unwrap().iter().map(|r| r.seq).collect();
            assert_eq!(records, [seq], "transaction {seq}'s record alone");
            place.committed().unwrap();
        }
        // A create would change the state directory, and its sync would sync that too.
        assert_eq!(creates_of_the_records(&backend), 1, "created by the first transaction only");
    }

    #[test]
    fn a_write_after_a_journaled_change_or_a_namespace_op_is_journaled() {
        let backend = MemBackend::new();
        backend.create(Path::new(crate::STATE_DIR), FileKind::Dir, 0o700, 0).unwrap();
        for f in ["f", "g"] {
            backend.create(Path::new(f), FileKind::File, 0o644, 0).unwrap();
        }
        backend.link(Path::new("f"), Path::new("f2")).unwrap();
        let mut place = InPlace::new(&backend, 1, 1, std::iter::empty());
        let write = |path: &str, offset| JournalOp::Write { path: PathBuf::from(path), offset, data: vec![1; 10] };
        assert!(place.route(JournalOp::SetLen { path: PathBuf::from("f2"), size: 5 }).unwrap().is_some());
        assert!(place.route(write("f", 0)).unwrap().is_some(), "same object, truncated through the journal");
        assert!(place.route(write("g", 0)).unwrap().is_none(), "another file appends in place");
        let rename = JournalOp::Rename { from: PathBuf::from("g"), to: PathBuf::from("h") };
        assert!(place.route(rename).unwrap().is_some());
        assert!(place.route(write("g", 10)).unwrap().is_some(), "after a namespace op");
        let none = || std::iter::empty();
        assert!(InPlace::new(&backend, 2, 0, none()).route(write("g", 100)).unwrap().is_some(), "off");
        assert!(InPlace::new(&backend, 2, 64, none()).route(write("g", 100)).unwrap().is_some(), "too small");
    }

    #[test]
    fn journaled_ranges_merge_and_overlap_only_where_they_share_bytes() {
        let mut j = Journaled::default();
        j.range(1, 100, 200);
        j.range(1, 300, 400);
        j.range(1, 50, 50);
        assert!(!j.overlaps(1, 200, 300), "the gap between two ranges");
        assert!(!j.overlaps(1, 0, 100) && !j.overlaps(1, 400, 500), "ends are exclusive");
        assert!(j.overlaps(1, 199, 201) && j.overlaps(1, 0, 1000) && j.overlaps(1, 350, 351));
        assert!(!j.overlaps(2, 0, 1000), "another object");
        j.range(1, 200, 300);
        assert_eq!(j.ranges[&1].iter().map(|(s, e)| (*s, *e)).collect::<Vec<_>>(), [(100, 400)], "merged");
        j.range(1, 90, 120);
        j.range(1, 390, 500);
        assert_eq!(j.ranges[&1].iter().map(|(s, e)| (*s, *e)).collect::<Vec<_>>(), [(90, 500)]);
        j.whole(2);
        assert!(j.overlaps(2, 7, 8));
    }

    #[test]
    fn an_append_after_a_journaled_write_inside_the_file_goes_in_place_unless_they_overlap() {
        let backend = store_with_f(100);
        let mut place = InPlace::new(&backend, 1, 1, std::iter::empty());
        let write = |offset, len| JournalOp::Write { path: PathBuf::from("f"), offset, data: vec![2; len] };
        assert!(place.route(write(10, 100)).unwrap().is_some(), "inside the old size, and past it: journaled");
        assert!(place.route(write(150, 50)).unwrap().is_none(), "an append past that write goes in place");
        assert_eq!(backend.stat(Path::new("f")).unwrap().size, 200);
        assert!(place.route(write(105, 10)).unwrap().is_some(), "over the journaled write's bytes: journaled");
        assert!(place.route(write(200, 10)).unwrap().is_none(), "past both");
        assert_eq!(place.data_bytes, 60);
    }

    #[test]
    fn waiting_transactions_keep_their_files_in_the_journal_or_set_the_floor() {
        let backend = MemBackend::new();
        backend.create(Path::new(crate::STATE_DIR), FileKind::Dir, 0o700, 0).unwrap();
        for f in ["f", "g", "h"] {
            backend.create(Path::new(f), FileKind::File, 0o644, 0).unwrap();
        }
        let write = |path: &str, offset| JournalOp::Write { path: PathBuf::from(path), offset, data: vec![1; 10] };
        let waiting = [write("f", 0), JournalOp::SetLen { path: PathBuf::from("g"), size: 0 }];
        let mut place = InPlace::new(&backend, 3, 1, waiting.iter());
        assert!(place.route(write("f", 5)).unwrap().is_some(), "below a waiting write's end");
        assert!(place.route(write("g", 0)).unwrap().is_some(), "a waiting truncate");
        assert!(place.route(write("h", 0)).unwrap().is_none(), "a file nothing waits for");
        let waiting = [JournalOp::RemoveFile { path: PathBuf::from("x") }];
        let mut place = InPlace::new(&backend, 3, 1, waiting.iter());
        assert!(place.route(write("h", 10)).unwrap().is_some(), "a waiting namespace op");
        let waiting = [write("f", 0)];
        let mut place = InPlace::new(&backend, 4, 1, waiting.iter());
        assert!(place.route(write("f", 10)).unwrap().is_none(), "past a waiting write's end");
    }
}
