//! Applies a committed transaction in place, crash-safely, from its durable
//! progress point. The live checkpointer and recovery run this same code.
//!
//! Ops are applied in *groups*. A group starts at a durable progress record
//! and takes ops without further barriers; a namespace op starts a new group
//! when one of its paths is related (equal, ancestor, descendant) to a path
//! an earlier op of the group touched. A data op that reaches through a name
//! a rename re-pointed since the last sync is preceded by a sync.
//!
//! Invariant (argued in docs/JOURNAL.md): when the durable progress of
//! transaction `seq` says `j`, op `j` starts a group, every op before `j` is
//! durable, no op of a later group has been issued, each namespace op of the
//! group has either happened or not (no other op of the group touches its
//! names), and each data op that took effect reached the object it reaches in
//! a clean apply. So restarting at `j` — every op of the group again,
//! namespace ops with their "already done" tests — always ends in the
//! post-transaction state.

use super::encode::TxnHeader;
use super::group::PathSet;
use super::progress::{Progress, ProgressFile};
use super::reader::{OpReader, ReadError};
use super::{journal_error, journal_path, ApplyReport, JournalOp};
use crate::backend::error::errno_of;
use crate::backend::{is_not_found, Backend};
use crate::types::FileKind;
use std::io;

/// Applies `txn` (whose payload is in the journal file), then truncates the
/// journal. `between_segments` is called after every `segment_bytes` of
/// written data. On error the transaction stays committed; calling this
/// again resumes it.
pub fn apply_txn(
    backend: &dyn Backend,
    txn: &TxnHeader,
    progress: &mut ProgressFile,
    segment_bytes: u64,
    between_segments: &mut dyn FnMut(),
) -> io::Result<ApplyReport> {
    let mut run = Applier {
        backend,
        progress,
        unsynced: true,
        group: PathSet::default(),
        renamed: PathSet::default(),
        report: ApplyReport { seq: txn.seq, ..ApplyReport::default() },
    };
    if run.progress.has_pending() {
        // An earlier attempt failed after writing a record: make it durable
        // before resuming from it (an op may only follow a durable record).
        run.sync()?;
    }
    let start = run.progress.resume_index(txn.seq).min(txn.op_count);
    run.report.resumed_at = start;
    if start < txn.op_count {
        run.ops_from(txn, start, segment_bytes, between_segments)?;
        // Marking the txn done spares a later recovery from redoing it; the
        // sync first makes sure the mark never runs ahead of the ops.
        run.sync()?;
        run.record(Progress { seq: txn.seq, next: txn.op_count })?;
    }
    // Not synced here: the next commit (or recovery) makes the truncation
    // durable. A crash before that finds this txn again, fully applied, and
    // resuming it from its durable progress point changes nothing.
    backend.set_len(&journal_path(), 0)?;
    Ok(run.report)
}

struct Applier<'a> {
    backend: &'a dyn Backend,
    progress: &'a mut ProgressFile,
    /// Something may have been written since the last sync.
    unsynced: bool,
    /// The paths the ops of the current group touched.
    group: PathSet,
    /// The names renames re-pointed since the last sync.
    renamed: PathSet,
    report: ApplyReport,
}

impl Applier<'_> {
    fn ops_from(
        &mut self,
        txn: &TxnHeader,
        start: u64,
        segment_bytes: u64,
        between_segments: &mut dyn FnMut(),
    ) -> io::Result<()> {
        let mut reader = OpReader::new(self.backend, txn.payload_len);
        for index in 0..start {
            if !reader.skip_op().map_err(|e| read_error(e, txn, index))? {
                return Err(read_error(ReadError::Short, txn, index));
            }
        }
        let mut data_since_yield = 0u64;
        for index in start..txn.op_count {
            let op = match reader.next_op() {
                Ok(Some(op)) => op,
                Ok(None) => return Err(read_error(ReadError::Short, txn, index)),
                Err(e) => return Err(read_error(e, txn, index)),
            };
            if op.is_namespace() {
                // Empty at `start`, whose record is already durable (or absent, meaning 0).
                if self.group.related_op(&op) {
                    self.start_group(Progress { seq: txn.seq, next: index })?;
                }
                self.namespace_op(&op)?;
                if matches!(op, JournalOp::Rename { .. }) {
                    self.renamed.insert_op(&op);
                }
            } else {
                if self.renamed.related_op(&op) {
                    // Until the rename is durable, a crash image may hold
                    // this op without it: acting through the old binding, it
                    // would change an object the rename unlinked from the name
                    // but that other hard links keep visible.
                    self.sync()?;
                }
                self.data_op(&op)?;
                data_since_yield += op.data_len();
                if data_since_yield >= segment_bytes {
                    between_segments();
                    data_since_yield = 0;
                }
            }
            self.group.insert_op(&op);
            self.report.ops += 1;
        }
        Ok(())
    }

    /// A durable record saying "resume at `p.next`", written after every
    /// earlier op is durable and durable before op `p.next` starts.
    fn start_group(&mut self, p: Progress) -> io::Result<()> {
        self.sync()?;
        self.record(p)?;
        self.sync()?;
        self.group.clear();
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        if self.unsynced {
            self.backend.sync()?;
            self.report.syncs += 1;
            self.unsynced = false;
        }
        self.progress.synced();
        self.renamed.clear();
        Ok(())
    }

    fn record(&mut self, p: Progress) -> io::Result<()> {
        self.unsynced = true;
        self.report.journal_bytes += self.progress.write(self.backend, p)?;
        Ok(())
    }

    /// Runs a namespace op unless it is already done. Done-tests: the state
    /// is either just before the op or just after it (see the module note).
    fn namespace_op(&mut self, op: &JournalOp) -> io::Result<()> {
        self.unsynced = true;
        let b = self.backend;
        let outcome = match op {
            JournalOp::Create { path, kind, perm, rdev } => {
                // A regular file is create-or-truncate: redoing it is harmless.
                let r = b.create(path, *kind, *perm, *rdev);
                if *kind == FileKind::File {
                    r.map(|()| true)
                } else {
                    done_if(r, libc::EEXIST)
                }
            }
            JournalOp::Symlink { path, target } => done_if(b.symlink(target, path), libc::EEXIST),
            JournalOp::Link { existing, new } => done_if(b.link(existing, new), libc::EEXIST),
            JournalOp::RemoveFile { path } => done_if(b.remove_file(path), libc::ENOENT),
            JournalOp::RemoveDir { path } => done_if(b.remove_dir(path), libc::ENOENT),
            JournalOp::Rename { from, to } => match b.rename(from, to) {
                Ok(()) => Ok(true),
                // Only a missing source means "done": renamed away already.
                Err(e) if is_not_found(&e) => match b.stat(from) {
                    Err(gone) if is_not_found(&gone) => Ok(false),
                    _ => Err(e),
                },
                Err(e) => Err(e),
            },
            _ => misdispatched(op),
        };
        match outcome {
            Ok(true) => {}
            Ok(false) => self.report.already_done += 1,
            Err(e) => return Err(with_context(e, op)),
        }
        Ok(())
    }

    /// Runs a data op; a missing object means a later op of this transaction
    /// already removed or moved it, so the op no longer matters.
    fn data_op(&mut self, op: &JournalOp) -> io::Result<()> {
        self.unsynced = true;
        match op.apply(self.backend) {
            Ok(()) => self.report.data_bytes += op.data_len(),
            Err(e) if is_not_found(&e) => {
                tracing::warn!("journal txn {}: skipped {op} (object gone)", self.report.seq);
                self.report.skipped_missing += 1;
            }
            Err(e) => return Err(with_context(e, op)),
        }
        Ok(())
    }
}

/// `Ok(true)` if the op ran, `Ok(false)` if it failed with `errno`, which
/// for this op means "already done".
fn done_if(r: io::Result<()>, errno: i32) -> io::Result<bool> {
    match r {
        Ok(()) => Ok(true),
        Err(e) if errno_of(&e) == errno => Ok(false),
        Err(e) => Err(e),
    }
}

/// The op kinds are split by `is_namespace`; reaching the other branch is a
/// bug in this module, reported as an error rather than a panic.
fn misdispatched<T>(op: &JournalOp) -> io::Result<T> {
    Err(journal_error(libc::EINVAL, format!("{op} dispatched to the wrong op class")))
}

/// Logs which op failed; the error itself (errno and the backend's message
/// naming the path) goes back unchanged, so the engine reports ENOSPC as such.
fn with_context(e: io::Error, op: &JournalOp) -> io::Error {
    tracing::error!("journal apply: {op}: {e}");
    e
}

fn read_error(e: ReadError, txn: &TxnHeader, index: u64) -> io::Error {
    match e {
        ReadError::Io(e) => e,
        ReadError::Short => {
            journal_error(libc::EIO, format!("txn {} ends before op {index} of {}", txn.seq, txn.op_count))
        }
        ReadError::Malformed(m) => journal_error(libc::EUCLEAN, format!("txn {} op {index}: {m}", txn.seq)),
    }
}
