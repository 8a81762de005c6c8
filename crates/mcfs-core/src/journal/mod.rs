//! The checkpointer's journal (MobiFS §4.5): BEGIN / APPEND / END / WAIT_SYNC
//! make one transaction durable and atomic in `.mcfs/journal`; `apply` then
//! carries it out in place in the backing store and frees the journal;
//! `recover` finishes (or drops) whatever a crash left behind.
//!
//! Invariant: the journal holds at most one transaction. Once its commit
//! record is durable (`wait_sync` returned) it is applied exactly to its end,
//! by `apply` or, after a crash at any instant, by `recover`; before that, a
//! crash leaves the backing store untouched by it. docs/JOURNAL.md has the
//! format, the protocol and the crash argument.

mod apply;
mod encode;
mod group;
mod progress;
mod reader;
mod recovery;
mod refusal;

#[cfg(test)]
mod crash_tests;
#[cfg(test)]
mod scenarios;
#[cfg(test)]
mod tests;

pub use crate::backend::Mutation as JournalOp;
pub use encode::HEADER_LEN;
pub use recovery::{recover, RecoveryReport};

use crate::backend::error::BackendError;
use crate::backend::{is_not_found, Backend};
use crate::types::FileKind;
use encode::{encode_op, TxnHeader};
use progress::ProgressFile;
use recovery::{check_consistent, inspect, JournalContent};
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What one `apply` (or the replay inside `recover`) did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ApplyReport {
    pub seq: u64,
    /// Op index the apply started from (0 unless resuming after a crash or error).
    pub resumed_at: u64,
    /// Ops carried out (from `resumed_at` on).
    pub ops: u64,
    /// File data written in place.
    pub data_bytes: u64,
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

pub(crate) fn journal_path() -> PathBuf {
    Path::new(crate::STATE_DIR).join("journal")
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
        buf: Vec<u8>,
        flushed: u64,
        crc: u32,
        op_count: u64,
    },
    Ended(TxnHeader),
    Committed(TxnHeader),
    /// An I/O error hit the txn before it was committed: only `abort` helps.
    Failed {
        seq: u64,
    },
}

pub struct Journal {
    backend: Arc<dyn Backend>,
    txn: TxnState,
    progress: ProgressFile,
    segment_bytes: u64,
    /// Bytes written to the journal file (payload and commit records).
    txn_bytes: u64,
    /// The last transaction committed through this `Journal`: `begin` needs
    /// a larger number, or that txn's progress record would be taken for the
    /// new one's. (An aborted number may be reused; across opens numbers may
    /// repeat, as `open` clears old progress.)
    last_seq: Option<u64>,
    /// The journal file may hold bytes of a transaction nobody will commit.
    stale: bool,
    /// Ops of the committed transaction skipped so far, by attempts that
    /// then failed: the attempt that finishes reports them.
    unapplied: Vec<UnappliedOp>,
}

impl Journal {
    /// Opens the journal, creating `.mcfs/`, `.mcfs/orphans/` and the journal
    /// files if missing. Run `recover` first: a journal that still holds a
    /// committed transaction is refused.
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
        let content = inspect(b)?;
        check_consistent(&content, &progress)?;
        let stale = match content {
            JournalContent::Empty => false,
            JournalContent::Torn { .. } => true,
            JournalContent::Committed(h) => {
                return Err(journal_error(
                    libc::EBUSY,
                    format!("holds committed transaction {}; run recovery before opening the journal", h.seq),
                ))
            }
        };
        progress.reset(b)?;
        Ok(Journal {
            last_seq: None,
            backend,
            txn: TxnState::Idle,
            progress,
            segment_bytes: DEFAULT_SEGMENT_BYTES,
            txn_bytes: 0,
            stale,
            unapplied: Vec::new(),
        })
    }

    /// Data bytes `apply` writes between two calls of its `between_segments`.
    pub fn set_segment_bytes(&mut self, bytes: u64) {
        self.segment_bytes = bytes;
    }

    /// Every byte written under `.mcfs/` so far: payloads, commit records and
    /// progress records (the engine counts them as flushed).
    pub fn bytes_written(&self) -> u64 {
        self.txn_bytes + self.progress.bytes_written()
    }

    /// Ops appended to the transaction being built: the index the next one gets.
    pub fn ops_appended(&self) -> u64 {
        match self.txn {
            TxnState::Building { op_count, .. } => op_count,
            _ => 0,
        }
    }

    /// A transaction is committed but not (fully) applied yet.
    pub fn has_committed(&self) -> bool {
        matches!(self.txn, TxnState::Committed(_))
    }

    /// BEGIN_TRANSACTION.
    pub fn begin(&mut self, seq: u64) -> io::Result<()> {
        if !matches!(self.txn, TxnState::Idle) {
            return Err(misuse("begin while another transaction is in the journal"));
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
        if self.stale {
            self.backend.set_len(&journal_path(), 0)?;
            self.stale = false;
        }
        self.txn = TxnState::Building { seq, buf: Vec::new(), flushed: 0, crc: 0, op_count: 0 };
        Ok(())
    }

    /// APPEND_ENTRY. Streams to the journal file once enough has piled up.
    pub fn append(&mut self, op: &JournalOp) -> io::Result<()> {
        let TxnState::Building { buf, op_count, .. } = &mut self.txn else {
            return Err(misuse("append outside a transaction"));
        };
        let mut result = encode_op(op, buf).map(|()| *op_count += 1);
        if result.is_ok() && buf.len() >= STREAM_CHUNK {
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

    /// WAIT_SYNC: once this returns, the transaction is committed.
    pub fn wait_sync(&mut self) -> io::Result<()> {
        let TxnState::Ended(header) = self.txn else {
            return Err(misuse("wait_sync before end"));
        };
        let result = self.backend.sync().map(|()| {
            // The sync also settles the previous txn's last progress record.
            self.progress.synced();
            self.last_seq = Some(header.seq);
            self.txn = TxnState::Committed(header);
        });
        self.fail_on_error(result)
    }

    /// Applies the committed transaction in place (see `apply::apply_txn`),
    /// then frees the journal. On error the transaction stays committed and
    /// the next `apply` (or `recover`) resumes it.
    pub fn apply(&mut self, between_segments: &mut dyn FnMut()) -> io::Result<ApplyReport> {
        let TxnState::Committed(header) = self.txn else {
            return Err(misuse("apply without a committed transaction"));
        };
        let report = apply::apply_txn(
            &*self.backend,
            &header,
            &mut self.progress,
            self.segment_bytes,
            between_segments,
            &mut self.unapplied,
        )?;
        self.txn = TxnState::Idle;
        Ok(report)
    }

    /// Drops a transaction that was begun but not committed (its `append`,
    /// `end` or `wait_sync` failed). Should its commit record reach the disk
    /// anyway, recovery applies it whole — still a point-in-time state.
    pub fn abort(&mut self) -> io::Result<()> {
        let written = match &self.txn {
            TxnState::Idle => return Ok(()),
            TxnState::Committed(h) => {
                return Err(misuse(&format!("abort of committed transaction {}: apply it", h.seq)))
            }
            TxnState::Building { flushed, .. } => *flushed > 0,
            TxnState::Ended(_) | TxnState::Failed { .. } => true,
        };
        self.txn = TxnState::Idle;
        if written {
            self.stale = true;
            self.backend.set_len(&journal_path(), 0)?;
            self.stale = false;
        }
        Ok(())
    }

    /// Streams the buffered payload to the journal file.
    fn flush(&mut self) -> io::Result<()> {
        let TxnState::Building { buf, flushed, crc, .. } = &mut self.txn else {
            return Ok(());
        };
        if buf.is_empty() {
            return Ok(());
        }
        self.backend.write_at(&journal_path(), HEADER_LEN + *flushed, buf)?;
        *crc = crc32c::crc32c_append(*crc, buf);
        *flushed += buf.len() as u64;
        self.txn_bytes += buf.len() as u64;
        buf.clear();
        Ok(())
    }

    fn write_commit_record(&mut self) -> io::Result<()> {
        let TxnState::Building { seq, flushed, crc, op_count, .. } = self.txn else {
            return Err(misuse("commit record outside a transaction"));
        };
        let header = TxnHeader { version: encode::VERSION, seq, payload_len: flushed, op_count, payload_crc: crc };
        self.backend.write_at(&journal_path(), 0, &header.encode())?;
        self.txn_bytes += HEADER_LEN;
        self.txn = TxnState::Ended(header);
        Ok(())
    }

    fn fail_on_error(&mut self, result: io::Result<()>) -> io::Result<()> {
        if result.is_err() {
            let seq = match self.txn {
                TxnState::Building { seq, .. } | TxnState::Failed { seq } => seq,
                TxnState::Ended(h) | TxnState::Committed(h) => h.seq,
                TxnState::Idle => return result,
            };
            self.txn = TxnState::Failed { seq };
        }
        result
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
