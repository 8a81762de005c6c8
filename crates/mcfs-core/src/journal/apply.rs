//! Applies a committed transaction in place, crash-safely, from its durable
//! progress point. The live checkpointer and recovery run this same code.
//!
//! Ops are applied in *groups*. A group starts at a durable progress record
//! and takes ops without further barriers; a namespace op starts a new group
//! when one of its paths meets a path an earlier op of the group touched in
//! a way `PathSet::admits` does not prove safe. A data op that reaches
//! through a name a rename re-pointed since the last sync is preceded by a
//! sync. An op the backing store can never hold (`refusal`) is skipped,
//! reported, and followed by a new group, so no replay runs it again.
//!
//! Invariant (argued in docs/JOURNAL.md): when the durable progress of
//! transaction `seq` says `j`, op `j` starts a group, every op before `j` is
//! durable (or was skipped for good), no op of a later group has been
//! issued, each namespace op of the group has either happened or not
//! (replay can tell which), and each data op that took effect reached the
//! object it reaches in a clean apply. So restarting at `j` — every op of
//! the group again, namespace ops with their "already done" tests — always
//! ends in the post-transaction state.

use super::encode::TxnHeader;
use super::group::PathSet;
use super::progress::{Progress, ProgressFile};
use super::reader::{OpReader, ReadError};
use super::refusal::cannot_hold;
use super::{journal_error, journal_path, progress_error, ApplyReport, JournalOp, UnappliedOp};
use crate::backend::error::errno_of;
use crate::backend::{is_not_found, Backend};
use crate::types::FileKind;
use std::io;

/// Applies `txn` (whose payload is in the journal file), then truncates the
/// journal. `between_segments` is called after every `segment_bytes` of
/// written data. Ops skipped for good are added to `unapplied` (which keeps
/// those of earlier, failed attempts) and handed out in the report. On error
/// the transaction stays committed; calling this again resumes it.
pub fn apply_txn(
    backend: &dyn Backend,
    txn: &TxnHeader,
    progress: &mut ProgressFile,
    segment_bytes: u64,
    between_segments: &mut dyn FnMut(),
    unapplied: &mut Vec<UnappliedOp>,
) -> io::Result<ApplyReport> {
    let mut run = Applier {
        backend,
        progress,
        unsynced: true,
        mid_recorded: false,
        group: PathSet::default(),
        renamed: PathSet::default(),
        unapplied,
        report: ApplyReport { seq: txn.seq, ..ApplyReport::default() },
    };
    if run.progress.has_pending() {
        // An earlier attempt failed writing a record, or after it: make it
        // durable before resuming from it (an op may only follow a durable
        // record, and replaying ops the record already covers could leave
        // a create's truncation without its rewrite).
        run.report.journal_bytes += run.progress.rewrite_pending(backend)?;
        run.unsynced = true;
        run.sync()?;
    }
    let start = run.progress.resume_index(txn.seq);
    if start > txn.op_count {
        return Err(progress_error(format!(
            "says transaction {} was applied up to op {start}, but it has only {} ops",
            txn.seq, txn.op_count
        )));
    }
    run.report.resumed_at = start;
    run.mid_recorded = start > 0;
    if start < txn.op_count {
        run.ops_from(txn, start, segment_bytes, between_segments)?;
    }
    if txn.op_count > 0 && !run.progress.is_done(txn.seq) {
        // Marking the txn done spares a later recovery from redoing it; the
        // sync first makes sure the mark never runs ahead of the ops.
        run.sync()?;
        run.record(Progress { seq: txn.seq, next: txn.op_count, done: true })?;
        if run.mid_recorded {
            // Once a record said "in the middle of `seq`", recovery insists
            // on finding `seq` in the journal until a durable record says
            // "done": so that one is durable before the journal goes.
            run.sync()?;
        }
    }
    // Not synced here: the next commit (or recovery) makes the truncation
    // durable. A crash before that finds this txn again, fully applied, and
    // resuming it from its durable progress point changes nothing.
    backend.set_len(&journal_path(), 0)?;
    run.report.unapplied = std::mem::take(run.unapplied);
    Ok(run.report)
}

struct Applier<'a> {
    backend: &'a dyn Backend,
    progress: &'a mut ProgressFile,
    /// Something may have been written since the last sync.
    unsynced: bool,
    /// A record saying "in the middle of this txn" is (or may become) durable.
    mid_recorded: bool,
    /// The paths the ops of the current group touched.
    group: PathSet,
    /// The names renames re-pointed since the last sync.
    renamed: PathSet,
    unapplied: &'a mut Vec<UnappliedOp>,
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
            let outcome = if op.is_namespace() {
                // Always admitted at `start`, whose record is already durable (or absent, meaning 0).
                if !self.group.admits(&op) {
                    self.start_group(Progress { seq: txn.seq, next: index, done: false })?;
                }
                self.namespace_op(&op)
            } else {
                if self.renamed.related_op(&op) {
                    // Until the rename is durable, a crash image may hold
                    // this op without it: acting through the old binding, it
                    // would change an object the rename unlinked from the name
                    // but that other hard links keep visible.
                    self.sync()?;
                }
                self.data_op(&op)
            };
            match outcome {
                Ok(()) => {
                    if matches!(op, JournalOp::Rename { .. }) {
                        self.renamed.insert_op(&op);
                    }
                    self.group.insert_op(&op);
                }
                Err(e) if cannot_hold(&op, errno_of(&e)) => self.skip(txn.seq, index, &op, &e)?,
                Err(e) => return Err(with_context(e, &op)),
            }
            self.report.ops += 1;
            data_since_yield += op.data_len();
            if data_since_yield >= segment_bytes {
                between_segments();
                data_since_yield = 0;
            }
        }
        Ok(())
    }

    /// `op` (index `index`) can never be applied to this backing store:
    /// reports it and starts a new group after it. The refusal may depend on
    /// the state (a link count, an inode's xattr space) that later ops of the
    /// group change, so no replay may run `op` again: the record makes the
    /// skip durable before any later op is issued.
    fn skip(&mut self, seq: u64, index: u64, op: &JournalOp, e: &io::Error) -> io::Result<()> {
        tracing::warn!("journal txn {seq}: the backing store cannot hold op {index} ({op}): {e}; skipped");
        if !self.unapplied.iter().any(|u| u.index == index) {
            self.unapplied.push(UnappliedOp { index, op: op.to_string(), errno: errno_of(e) });
        }
        self.start_group(Progress { seq, next: index + 1, done: false })
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
        self.mid_recorded |= !p.done;
        self.report.journal_bytes += self.progress.write(self.backend, p)?;
        Ok(())
    }

    /// Runs a namespace op unless it is already done. Done-tests: the state
    /// is either just before the op or just after it (see the module note).
    /// Errors come back unlogged: the caller decides whether they are fatal.
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
        if !outcome? {
            self.report.already_done += 1;
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
            Err(e) => return Err(e),
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
