//! The checkpointer's journal (MobiFS §4.5): BEGIN / APPEND / END / WAIT_SYNC
//! make one transaction durable and atomic in a segment file of the log
//! (`.mcfs/journal`, `.mcfs/journal.1`, ...: one transaction per segment);
//! `apply` later carries every waiting transaction out in place, in commit
//! order and coalesced, from the ops this `Journal` holds in memory (never
//! reading the log back), and frees their segments for reuse (`segment`);
//! `recover` finishes (or drops) whatever a crash left behind, reading the
//! log. An apply may also run apart from the journal (`take_run`, `end_run`):
//! the journal goes on committing new transactions into other segments
//! meanwhile, so a commit never waits for an apply's device time.
//!
//! Invariant: the log holds any number of committed transactions, each in a
//! segment of its own, and they are applied in commit order. Once a commit
//! record is durable (`wait_sync` returned) its transaction is applied exactly
//! to its end, by `apply` or, after a crash at any instant, by `recover`;
//! before that, a crash leaves the backing store untouched by it. A segment
//! is freed only once a durable progress record says its transaction is
//! applied. docs/JOURNAL.md has the format, the protocol and the crash
//! argument.

mod apply;
mod coalesce;
mod encode;
mod group;
mod progress;
mod reader;
mod recovery;
mod refusal;
mod segment;
mod transient;

#[cfg(test)]
mod crash_tests;
#[cfg(test)]
mod scenarios;
#[cfg(test)]
mod tests;

pub use crate::backend::Mutation as JournalOp;
pub use encode::HEADER_LEN;
pub use recovery::{recover, recovered_copy, RecoveryReport};
pub use segment::{POOL_SEGMENTS, READY_BYTES as SEGMENT_READY_BYTES};

use crate::backend::error::BackendError;
use crate::backend::{is_not_found, Backend, KnownContent};
use crate::types::FileKind;
use encode::{encode_op, encode_op_extent, encode_op_head, TxnHeader};
use progress::ProgressFile;
use recovery::{check_consistent, inspect_log};
use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What one `apply` (or the replay inside `recover`) did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ApplyReport {
    /// The first transaction of the run (the last one is `seq + txns - 1`).
    pub seq: u64,
    /// Transactions applied in this run (coalesced).
    pub txns: u64,
    /// Op index of transaction `seq` the apply started from (0 unless
    /// resuming after a crash or error).
    pub resumed_at: u64,
    /// Ops carried out (from `resumed_at` on).
    pub ops: u64,
    /// File data written in place.
    pub data_bytes: u64,
    /// File data not written because a later waiting transaction writes the
    /// same bytes of the same file (coalesced: the last version goes home once).
    pub coalesced_bytes: u64,
    /// Ops of files created and removed within the run, not issued
    /// (`transient`; counted apart from `ops`).
    pub elided: u64,
    /// Namespace ops found already done (resuming after a crash).
    pub already_done: u64,
    /// Data ops whose object a later op had already removed or moved.
    pub skipped_missing: u64,
    /// Durability barriers issued.
    pub syncs: u64,
    /// Bytes written under `.mcfs/` (progress records).
    pub journal_bytes: u64,
    /// Ops the backing store can never hold, skipped (see `refusal.rs`).
    pub unapplied: Vec<UnappliedOp>,
}

/// An op of a committed transaction that the backing store refused for
/// good (a name too long, a file too large, too many links, an unsupported
/// xattr, ...): `apply` skipped it and went on with the rest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnappliedOp {
    /// Its transaction.
    pub seq: u64,
    /// Its index in the transaction.
    pub index: u64,
    /// What it was: its kind and backing path(s), e.g. `setxattr d/f`.
    pub op: String,
    pub errno: i32,
}

impl fmt::Display for UnappliedOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.op, io::Error::from_raw_os_error(self.errno))
    }
}

/// Bytes buffered by `append` before they are streamed to the journal file.
/// Small enough that a background commit checks for waiting foreground work
/// (between appends) every few milliseconds of device time.
const STREAM_CHUNK: usize = 256 << 10;
/// Default for `set_segment_bytes`.
const DEFAULT_SEGMENT_BYTES: u64 = 4 << 20;

/// The first segment of the log (the only one an older mcfs wrote).
pub(crate) fn journal_path() -> PathBuf {
    segment_path(0)
}

/// Segment `slot` of the log: `.mcfs/journal`, then `.mcfs/journal.1`, ...
pub(crate) fn segment_path(slot: usize) -> PathBuf {
    let name = if slot == 0 { "journal".to_string() } else { format!("journal.{slot}") };
    Path::new(crate::STATE_DIR).join(name)
}

/// The slots of the segment files that exist, in order.
pub(crate) fn segment_slots(backend: &dyn Backend) -> io::Result<Vec<usize>> {
    let entries = match backend.list_dir(Path::new(crate::STATE_DIR)) {
        Ok(entries) => entries,
        Err(e) if is_not_found(&e) => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut slots: Vec<usize> = entries
        .iter()
        .filter(|(_, kind)| *kind == FileKind::File)
        .filter_map(|(name, _)| match name.to_str()? {
            "journal" => Some(0),
            other => other.strip_prefix("journal.")?.parse().ok().filter(|slot| *slot > 0),
        })
        .collect();
    slots.sort_unstable();
    Ok(slots)
}

pub(crate) fn progress_path() -> PathBuf {
    Path::new(crate::STATE_DIR).join("progress")
}

/// Where the engine parks unlinked-but-open files; emptied by `recover`.
pub fn orphans_dir() -> PathBuf {
    Path::new(crate::STATE_DIR).join("orphans")
}

enum TxnState {
    Idle,
    Building {
        seq: u64,
        slot: usize,
        /// The payload not streamed yet: records, less their tails unless
        /// the sink is `Joined`.
        buf: Vec<u8>,
        /// Where the tails go (`Pieces`; the `Extent` sink needs only their length).
        tails: Vec<Tail>,
        /// Bytes of the tails left out of `buf`.
        tail_bytes: usize,
        flushed: u64,
        crc: u32,
        ops: Vec<JournalOp>,
    },
    Ended(Waiting),
    /// An I/O error hit the txn before it was committed: only `abort` helps.
    Failed {
        seq: u64,
        slot: usize,
    },
}

/// How the payload reaches the store, as the store asks (`Journal::open`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum PayloadSink {
    /// Records copied whole into one buffer (a store that would join pieces).
    Joined,
    /// Record heads from the buffer, a write's data straight from its op.
    Pieces,
    /// Its extent alone, with no checksum: the store keeps none of it
    /// (`Backend::keeps_journal_payload`), so its commit records carry
    /// `payload_crc` 0 and its log cannot be recovered. Only this sink takes
    /// a `JournalOp::WriteKnown` (`Journal::known_content`).
    Extent,
}

impl PayloadSink {
    fn of(backend: &dyn Backend) -> PayloadSink {
        if !backend.keeps_journal_payload() {
            PayloadSink::Extent
        } else if backend.takes_pieces() {
            PayloadSink::Pieces
        } else {
            PayloadSink::Joined
        }
    }
}

/// A record's tail (`encode::record_tail`: a write's data) left out of the
/// record buffer, to be streamed from op `op` itself right after byte `at`
/// of the buffer: a store that takes pieces gets the data without the copy.
struct Tail {
    at: usize,
    op: usize,
}

/// A committed transaction not applied yet: its segment, its commit record,
/// and its ops as the engine gave them (what `apply` carries out). Shared
/// with a run that applies it apart from the journal.
struct Waiting {
    slot: usize,
    header: TxnHeader,
    ops: Vec<JournalOp>,
}

pub struct Journal {
    backend: Arc<dyn Backend>,
    txn: TxnState,
    /// Committed transactions waiting to be applied, in commit order (those
    /// of a run taken out stay here, their segments in use, until it ends).
    waiting: Vec<Arc<Waiting>>,
    /// The segment files that exist: slot → size.
    segments: BTreeMap<usize, u64>,
    /// A segment an aborted transaction wrote to: the next `begin` takes
    /// it again, so a commit record that reached the disk anyway is
    /// overwritten rather than left beside a transaction with its number.
    reuse_first: Option<usize>,
    /// `None` while a run has it (`take_run`).
    progress: Option<ProgressFile>,
    /// Bytes of progress records written as of `take_run`: while the run is
    /// out, its records count only once it ends.
    progress_bytes_at_take: u64,
    segment_bytes: u64,
    /// Bytes written to the log (payloads, commit records, zero fill).
    txn_bytes: u64,
    /// The last transaction committed through this `Journal`: `begin` needs
    /// a larger number, or that txn's progress record would be taken for the
    /// new one's. (An aborted number may be reused; across opens numbers may
    /// repeat, as `open` clears old progress.)
    last_seq: Option<u64>,
    /// Ops of the waiting transactions skipped so far, by attempts that
    /// then failed: the attempt that finishes reports them.
    unapplied: Vec<UnappliedOp>,
    /// The record buffer of the last committed transaction, emptied but with
    /// its capacity: `begin` takes it rather than grow a new one from nothing
    /// (up to `STREAM_CHUNK` and a record, reallocated and copied at every
    /// doubling, each checkpoint).
    spare_buf: Vec<u8>,
    sink: PayloadSink,
    /// The store's known content if the sink is `Extent` (`known_content`).
    known: Option<KnownContent>,
}

impl Journal {
    /// Opens the journal, creating `.mcfs/`, `.mcfs/orphans/` and the journal
    /// files if missing, and dropping uncommitted segments. Run `recover`
    /// first: a log that still holds a committed transaction is refused.
    pub fn open(backend: Arc<dyn Backend>) -> io::Result<Journal> {
        let b = &*backend;
        let mut created = ensure(b, Path::new(crate::STATE_DIR), FileKind::Dir, 0o700)?;
        created |= ensure(b, &orphans_dir(), FileKind::Dir, 0o700)?;
        created |= ensure(b, &journal_path(), FileKind::File, 0o600)?;
        created |= ensure(b, &progress_path(), FileKind::File, 0o600)?;
        if created {
            // A commit record must never be durable without these files.
            b.sync()?;
        }
        let mut progress = ProgressFile::load(b)?;
        let slots = segment_slots(b)?;
        let log = inspect_log(b, &slots)?;
        check_consistent(&log, &progress)?;
        if let Some((slot, h)) = log.committed.iter().find(|(_, h)| progress.resume_point(h.seq).is_some()) {
            return Err(state_error(
                &segment_path(*slot),
                libc::EBUSY,
                format!("holds committed transaction {}; run recovery before opening the journal", h.seq),
            ));
        }
        let mut segments = BTreeMap::new();
        for slot in slots.into_iter().chain([0]) {
            segments.insert(slot, b.stat(&segment_path(slot))?.size);
        }
        // Torn, or applied (the progress file says so): either way nothing
        // to keep, and a header left valid must not meet the numbers the
        // reset below restarts (so the clearing is durable first).
        let stale = log.torn.iter().map(|(slot, _)| *slot).chain(log.committed.iter().map(|(slot, _)| *slot));
        let mut cleared = false;
        for slot in stale {
            let len = segments.get(&slot).copied().unwrap_or(0);
            segments.insert(slot, segment::clear(b, slot, len)?);
            cleared = true;
        }
        if cleared {
            b.sync()?;
        }
        crate::in_place::forget(b)?;
        progress.reset(b)?;
        let sink = PayloadSink::of(b);
        let known = if sink == PayloadSink::Extent { b.known_content() } else { None };
        Ok(Journal {
            last_seq: None,
            backend,
            txn: TxnState::Idle,
            waiting: Vec::new(),
            segments,
            reuse_first: None,
            progress: Some(progress),
            progress_bytes_at_take: 0,
            segment_bytes: DEFAULT_SEGMENT_BYTES,
            txn_bytes: 0,
            unapplied: Vec::new(),
            spare_buf: Vec::new(),
            sink,
            known,
        })
    }

    /// The content a write of which may be appended as a `JournalOp::
    /// WriteKnown`, its bytes left out: the store's (`Backend::
    /// known_content`) if it keeps no journal payload, else none — the
    /// payload of a log that keeps it is made of the ops' bytes.
    pub fn known_content(&self) -> Option<KnownContent> {
        self.known
    }

    /// Data bytes `apply` writes between two calls of its `between_segments`.
    pub fn set_segment_bytes(&mut self, bytes: u64) {
        self.segment_bytes = bytes;
    }

    /// Every byte written under `.mcfs/` so far: payloads, commit records,
    /// the zeros new segments are prepared with, and progress records (the
    /// engine counts them as flushed).
    pub fn bytes_written(&self) -> u64 {
        let progress = self.progress.as_ref().map_or(self.progress_bytes_at_take, ProgressFile::bytes_written);
        self.txn_bytes + progress
    }

    /// Ops appended to the transaction being built: the index the next one gets.
    pub fn ops_appended(&self) -> u64 {
        match &self.txn {
            TxnState::Building { ops, .. } => ops.len() as u64,
            _ => 0,
        }
    }

    /// Committed transactions not (fully) applied yet.
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// The ops of the waiting transactions, in commit order.
    pub fn waiting_ops(&self) -> impl Iterator<Item = &JournalOp> {
        self.waiting.iter().flat_map(|w| w.ops.iter())
    }

    /// Bytes the waiting transactions take in the log (their segments).
    pub fn waiting_bytes(&self) -> u64 {
        self.waiting.iter().map(|w| HEADER_LEN + w.header.payload_len).sum()
    }

    /// BEGIN_TRANSACTION, in a free segment (created if none is, and
    /// filled with zeros to `segment::READY_BYTES` if shorter).
    pub fn begin(&mut self, seq: u64) -> io::Result<()> {
        if !matches!(self.txn, TxnState::Idle) {
            return Err(misuse("begin while another transaction is being built"));
        }
        if seq == 0 {
            return Err(misuse("begin(0): transaction 0 stands for \"none\" in the progress file"));
        }
        if self.last_seq.is_some_and(|last| seq <= last) {
            return Err(misuse(&format!(
                "begin({seq}): sequence numbers must grow (last committed {:?})",
                self.last_seq
            )));
        }
        let in_use = |slot: usize| self.waiting.iter().any(|w| w.slot == slot);
        let slot = match self.reuse_first.filter(|slot| !in_use(*slot)) {
            Some(slot) => slot,
            None => (0..).find(|slot| !in_use(*slot)).unwrap_or(0),
        };
        let len = match self.segments.get(&slot) {
            Some(len) => *len,
            None => {
                // Made durable by this transaction's own `wait_sync`.
                ensure(&*self.backend, &segment_path(slot), FileKind::File, 0o600)?;
                0
            }
        };
        self.segments.insert(slot, len);
        let ready = segment::make_ready(&*self.backend, slot, len)?;
        self.txn_bytes += ready - len;
        self.segments.insert(slot, ready);
        self.reuse_first = None;
        let buf = std::mem::take(&mut self.spare_buf);
        self.txn = TxnState::Building {
            seq,
            slot,
            buf,
            tails: Vec::new(),
            tail_bytes: 0,
            flushed: 0,
            crc: 0,
            ops: Vec::new(),
        };
        Ok(())
    }

    /// APPEND_ENTRY. Streams to the segment once enough has piled up, and
    /// keeps `op` for `apply`.
    pub fn append(&mut self, op: JournalOp) -> io::Result<()> {
        let TxnState::Building { buf, tails, tail_bytes, ops, .. } = &mut self.txn else {
            return Err(misuse("append outside a transaction"));
        };
        // A `WriteKnown` has no bytes for the first two to write: they refuse it.
        let encoded = match self.sink {
            PayloadSink::Joined => encode_op(&op, buf),
            PayloadSink::Pieces => encode_op_head(&op, buf).map(|tail| {
                if !tail.is_empty() {
                    *tail_bytes += tail.len();
                    tails.push(Tail { at: buf.len(), op: ops.len() });
                }
            }),
            PayloadSink::Extent => encode_op_extent(&op, buf).map(|tail| *tail_bytes += tail as usize),
        };
        let mut result = encoded.map(|()| ops.push(op));
        if result.is_ok() && buf.len() + *tail_bytes >= STREAM_CHUNK {
            result = self.flush();
        }
        self.fail_on_error(result)
    }

    /// END_TRANSACTION: writes the rest of the payload and the commit record.
    pub fn end(&mut self) -> io::Result<()> {
        if !matches!(self.txn, TxnState::Building { .. }) {
            return Err(misuse("end outside a transaction"));
        }
        let result = self.flush().and_then(|()| self.write_commit_record());
        self.fail_on_error(result)
    }

    /// WAIT_SYNC: once this returns, the transaction is committed and waits
    /// in the log for `apply`. This is the commit's one device flush.
    pub fn wait_sync(&mut self) -> io::Result<()> {
        if !matches!(self.txn, TxnState::Ended(_)) {
            return Err(misuse("wait_sync before end"));
        }
        let result = self.backend.sync();
        if result.is_ok() {
            // The sync also settles the last progress record of an apply
            // (one still running keeps its own count: it syncs again).
            if let Some(progress) = &mut self.progress {
                progress.synced();
            }
            if let TxnState::Ended(waiting) = std::mem::replace(&mut self.txn, TxnState::Idle) {
                self.last_seq = Some(waiting.header.seq);
                self.waiting.push(Arc::new(waiting));
            }
        }
        self.fail_on_error(result)
    }

    /// Applies every waiting transaction in place, in commit order and
    /// coalesced (see `apply::apply_run`), then frees their segments. On
    /// error they stay waiting and the next `apply` (or `recover`) resumes.
    pub fn apply(&mut self, between_segments: &mut dyn FnMut()) -> io::Result<ApplyReport> {
        let mut run = self.take_run()?;
        let applied = run.apply(between_segments);
        self.end_run(run);
        applied
    }

    /// Takes every waiting transaction out as a run to apply apart from the
    /// journal (`ApplyRun::apply`), which meanwhile commits new transactions
    /// into other segments; `end_run` takes the run back.
    pub fn take_run(&mut self) -> io::Result<ApplyRun> {
        if self.waiting.is_empty() {
            return Err(misuse("apply without a committed transaction"));
        }
        let Some(progress) = self.progress.take() else {
            return Err(misuse("a run taken while another one is out"));
        };
        self.progress_bytes_at_take = progress.bytes_written();
        Ok(ApplyRun {
            backend: Arc::clone(&self.backend),
            txns: self.waiting.clone(),
            progress,
            unapplied: std::mem::take(&mut self.unapplied),
            segment_bytes: self.segment_bytes,
            applied: false,
        })
    }

    /// A run is out (`take_run`) and not back yet.
    pub fn run_out(&self) -> bool {
        self.progress.is_none()
    }

    /// Takes a run back. If it was applied, its transactions leave the log
    /// and their segments are free; if not, they wait on, and the next run
    /// (or `recover`) resumes them.
    pub fn end_run(&mut self, run: ApplyRun) {
        let ApplyRun { txns, progress, unapplied, applied, .. } = run;
        self.progress = Some(progress);
        self.unapplied = unapplied;
        if !applied {
            return;
        }
        debug_assert!(
            txns.iter().zip(&self.waiting).all(|(ran, waits)| Arc::ptr_eq(ran, waits)),
            "a run is the oldest waiting transactions"
        );
        // The applied transactions' segments are free now. Left as they are
        // (the next commit in each overwrites it in place), unless one grew
        // too big to keep, or its transaction is empty (a run of empty ones
        // writes no progress record that would call it applied). Not synced.
        for w in self.waiting.drain(..txns.len()) {
            let len = self.segments.get(&w.slot).copied().unwrap_or(0);
            if segment::too_big(len) || w.header.op_count == 0 {
                // The run is applied whatever this does: a segment left as it
                // was only holds a transaction recovery finds applied or empty.
                if let Ok(len) = segment::clear(&*self.backend, w.slot, len) {
                    self.segments.insert(w.slot, len);
                }
            }
        }
    }

    /// Drops a transaction that was begun but not committed (its `append`,
    /// `end` or `wait_sync` failed). Should its commit record reach the disk
    /// anyway, recovery applies it whole — still a point-in-time state.
    pub fn abort(&mut self) -> io::Result<()> {
        let (slot, written) = match &self.txn {
            TxnState::Idle => return Ok(()),
            TxnState::Building { slot, flushed, .. } => (*slot, *flushed > 0),
            TxnState::Ended(w) => (w.slot, true),
            TxnState::Failed { slot, .. } => (*slot, true),
        };
        self.txn = TxnState::Idle;
        if written {
            self.reuse_first = Some(slot);
            // Its payload may have grown the file past what the map knows.
            let len = self.backend.stat(&segment_path(slot))?.size;
            self.segments.insert(slot, segment::clear(&*self.backend, slot, len)?);
        }
        Ok(())
    }

    /// Streams the buffered payload to the segment.
    fn flush(&mut self) -> io::Result<()> {
        let TxnState::Building { slot, buf, tails, tail_bytes, flushed, crc, ops, .. } = &mut self.txn else {
            return Ok(());
        };
        let len = (buf.len() + *tail_bytes) as u64;
        if len == 0 {
            return Ok(());
        }
        let (path, offset) = (segment_path(*slot), HEADER_LEN + *flushed);
        if self.sink == PayloadSink::Extent {
            self.backend.write_unkept_at(&path, offset, len)?;
        } else {
            let pieces = payload_pieces(buf, tails, ops);
            self.backend.write_pieces_at(&path, offset, &pieces)?;
            *crc = pieces.iter().fold(*crc, |crc, piece| crc32c::crc32c_append(crc, piece));
        }
        *flushed += len;
        self.txn_bytes += len;
        buf.clear();
        tails.clear();
        *tail_bytes = 0;
        Ok(())
    }

    fn write_commit_record(&mut self) -> io::Result<()> {
        let TxnState::Building { seq, slot, buf, flushed, crc, ops, .. } = &mut self.txn else {
            return Err(misuse("commit record outside a transaction"));
        };
        debug_assert!(buf.is_empty(), "the payload is flushed before the commit record");
        let spare = std::mem::take(buf);
        let header = TxnHeader {
            version: encode::VERSION,
            seq: *seq,
            payload_len: *flushed,
            op_count: ops.len() as u64,
            payload_crc: *crc,
        };
        let slot = *slot;
        self.backend.write_at(&segment_path(slot), 0, &header.encode())?;
        self.txn_bytes += HEADER_LEN;
        let len = self.segments.entry(slot).or_default();
        *len = (*len).max(HEADER_LEN + header.payload_len);
        let ops = std::mem::take(ops);
        self.txn = TxnState::Ended(Waiting { slot, header, ops });
        self.spare_buf = spare;
        Ok(())
    }

    fn fail_on_error(&mut self, result: io::Result<()>) -> io::Result<()> {
        if result.is_err() {
            let (seq, slot) = match &self.txn {
                TxnState::Building { seq, slot, .. } | TxnState::Failed { seq, slot } => (*seq, *slot),
                TxnState::Ended(w) => (w.header.seq, w.slot),
                TxnState::Idle => return result,
            };
            self.txn = TxnState::Failed { seq, slot };
        }
        result
    }
}

/// The buffered payload in order: the record buffer cut where a tail goes,
/// and each tail taken from its op.
fn payload_pieces<'a>(buf: &'a [u8], tails: &[Tail], ops: &'a [JournalOp]) -> Vec<&'a [u8]> {
    let mut pieces = Vec::with_capacity(2 * tails.len() + 1);
    let mut from = 0;
    for tail in tails {
        pieces.push(&buf[from..tail.at]);
        // Always there: only `encode_op_head` makes a `Tail`, and it refuses an op without one.
        pieces.push(encode::record_tail(&ops[tail.op]).unwrap_or_default());
        from = tail.at;
    }
    pieces.push(&buf[from..]);
    pieces.retain(|piece| !piece.is_empty());
    pieces
}

/// One transaction of an apply run: where its segment is, its commit
/// record, and where its ops come from.
pub(crate) struct RunTxn<'a> {
    pub slot: usize,
    pub header: TxnHeader,
    pub ops: TxnOps<'a>,
}

/// The ops of a transaction being applied: held in memory by the live
/// `Journal`, or read back from its segment by `recover`.
pub(crate) enum TxnOps<'a> {
    Held(&'a [JournalOp]),
    Logged,
}

/// Waiting transactions taken out of the journal to be applied in place
/// while it goes on committing (`Journal::take_run`): the run holds the
/// progress file (only an apply writes it) and its transactions' ops; their
/// segments stay in use until `Journal::end_run`, so a commit meanwhile
/// takes another one.
pub struct ApplyRun {
    backend: Arc<dyn Backend>,
    txns: Vec<Arc<Waiting>>,
    progress: ProgressFile,
    unapplied: Vec<UnappliedOp>,
    segment_bytes: u64,
    applied: bool,
}

impl ApplyRun {
    /// Transactions in the run (the journal's oldest waiting ones).
    pub fn txns(&self) -> usize {
        self.txns.len()
    }

    /// Applies the run in place, in commit order and coalesced (see
    /// `apply::apply_run`); `between_segments` is called after every
    /// segment's worth of data. On error nothing is lost: the transactions
    /// stay committed, and the next run (or `recover`) resumes them.
    pub fn apply(&mut self, between_segments: &mut dyn FnMut()) -> io::Result<ApplyReport> {
        let mut run: Vec<RunTxn> =
            self.txns.iter().map(|w| RunTxn { slot: w.slot, header: w.header, ops: TxnOps::Held(&w.ops) }).collect();
        let report = apply::apply_run(
            &*self.backend,
            &mut run,
            &mut self.progress,
            self.segment_bytes,
            between_segments,
            &mut self.unapplied,
        )?;
        self.applied = true;
        Ok(report)
    }
}

/// Creates `path` as `kind` unless it exists; an object of another kind
/// there is an error naming it.
/// Makes `path` exist as `kind`; true if it had to be created.
fn ensure(backend: &dyn Backend, path: &Path, kind: FileKind, perm: u32) -> io::Result<bool> {
    match backend.stat(path) {
        Ok(attr) if attr.kind == kind => Ok(false),
        Ok(attr) => {
            Err(state_error(path, libc::EEXIST, format!("is a {:?}, mcfs needs a {:?} there", attr.kind, kind)))
        }
        Err(e) if is_not_found(&e) => backend.create(path, kind, perm, 0).map(|()| true),
        Err(e) => Err(e),
    }
}

/// A call out of protocol order: a bug in the caller.
fn misuse(what: &str) -> io::Error {
    journal_error(libc::EINVAL, what.to_string())
}

/// An error about the journal file: its errno, and a message naming the file.
fn journal_error(errno: i32, why: String) -> io::Error {
    state_error(&journal_path(), errno, why)
}

/// The progress file contradicts itself or the journal: `EUCLEAN`, naming it.
fn progress_error(why: String) -> io::Error {
    state_error(&progress_path(), libc::EUCLEAN, why)
}

fn state_error(path: &Path, errno: i32, why: String) -> io::Error {
    let kind = io::Error::from_raw_os_error(errno).kind();
    io::Error::new(kind, BackendError { errno, context: format!("{}: {why}", path.display()) })
}
