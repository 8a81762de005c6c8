//! Applies a run of committed transactions in place, in commit order,
//! crash-safely, from the durable progress point. The live applier (ops held
//! in memory, writes coalesced: `coalesce`) and recovery (ops read back from
//! the log, every write replayed) run this same code.
//!
//! The ops of the run form one stream: a group may span transactions, and a
//! progress record names the transaction and op it resumes at.
//!
//! Ops are applied in *groups*. A group starts at a durable progress record
//! and takes ops without further barriers; a namespace op starts a new group
//! when one of its paths meets a path an earlier op of the group touched in
//! a way `PathSet::admits` does not prove safe. A data op that reaches
//! through a name a rename re-pointed since the last sync is preceded by a
//! sync. An op the backing store can never hold (`refusal`) is skipped,
//! reported, and followed by a new group, so no replay runs it again.
//!
//! Invariant (argued in docs/JOURNAL.md): when the durable progress says
//! transaction `seq`, op `j`, op `j` starts a group, every op before it (of
//! `seq` and of every earlier transaction) is durable (or was skipped for
//! good, or coalesced into a later write of the run), no op of a later group has been
//! issued, each namespace op of the group has either happened or not
//! (replay can tell which), and each data op that took effect reached the
//! object it reaches in a clean apply. So restarting at `j` — every op of
//! the group again, namespace ops with their "already done" tests — always
//! ends in the post-transaction state.

use super::coalesce::{self, Plan};
use super::encode::TxnHeader;
use super::group::PathSet;
use super::progress::{Progress, ProgressFile};
use super::reader::{OpReader, ReadError};
use super::refusal::cannot_hold;
use super::transient::{self, Elision};
use super::{journal_error, progress_error, segment_path, ApplyReport, JournalOp, RunTxn, TxnOps, UnappliedOp};
use crate::backend::error::errno_of;
use crate::backend::{is_not_found, Backend};
use crate::types::FileKind;
use std::borrow::Cow;
use std::io;

/// Applies the transactions of `run` (in commit order) from the durable
/// progress point; freeing their segments is left to the caller. `between_segments` is called
/// after every `segment_bytes` of written data. Ops skipped for good are
/// added to `unapplied` (which keeps those of earlier, failed attempts) and
/// handed out in the report. On error the transactions stay committed;
/// calling this again resumes them.
pub fn apply_run(
    backend: &dyn Backend,
    run: &mut [RunTxn],
    progress: &mut ProgressFile,
    segment_bytes: u64,
    between_segments: &mut dyn FnMut(),
    unapplied: &mut Vec<UnappliedOp>,
) -> io::Result<ApplyReport> {
    let first = run.first().map_or(0, |t| t.header.seq);
    let mut a = Applier {
        backend,
        progress,
        unsynced: true,
        mid_recorded: false,
        group: PathSet::default(),
        renamed: PathSet::default(),
        unapplied,
        report: ApplyReport { seq: first, txns: run.len() as u64, ..ApplyReport::default() },
    };
    if a.progress.has_pending() {
        // An earlier attempt failed writing a record, or after it, or the
        // last run's done record is not durable yet: make it durable before
        // going on from it (an op may only follow a durable record, and
        // replaying ops the record already covers could leave a create's
        // truncation without its rewrite).
        a.report.journal_bytes += a.progress.rewrite_pending(backend)?;
        a.unsynced = true;
        a.sync()?;
    }
    let starts: Vec<Option<u64>> = run.iter().map(|t| a.progress.resume_point(t.header.seq)).collect();
    for (txn, start) in run.iter().zip(&starts) {
        if let Some(start) = start.filter(|s| *s > txn.header.op_count) {
            return Err(progress_error(format!(
                "says transaction {} was applied up to op {start}, but it has only {} ops",
                txn.header.seq, txn.header.op_count
            )));
        }
    }
    a.report.resumed_at = starts.iter().flatten().next().copied().unwrap_or(0);
    // A group may start at op 0 of a transaction after the first: then a
    // durable record says "in the middle" with a resume point of 0.
    a.mid_recorded = a.progress.newest().is_some_and(|p| !p.done);
    let plan = coalesce::plan(run, &starts);
    let mut elision = transient::plan(run, &starts);
    let mut last = None;
    let (mut applied, mut any_ops) = (0, false);
    for (pos, txn) in run.iter_mut().enumerate() {
        let Some(start) = starts[pos] else { continue };
        if start < txn.header.op_count {
            a.ops_from(pos, txn, start, (&plan, &mut elision), segment_bytes, between_segments)?;
        }
        last = Some(txn.header);
        applied += 1;
        any_ops |= txn.header.op_count > 0;
    }
    if let Some(last) = last.filter(|_| any_ops) {
        // Marking the run done spares a later recovery from redoing it; the
        // sync first makes sure the mark never runs ahead of the ops.
        a.sync()?;
        a.record(Progress { seq: last.seq, next: last.op_count, done: true })?;
        if a.mid_recorded || applied > 1 {
            // Once a record said "in the middle of `seq`", recovery insists
            // on finding `seq` in the log until a durable record says
            // "done"; and with several segments freed, a crash could keep
            // some of them: replayed over the later ones' effects, they
            // would roll them back. So the done record is durable before
            // any segment goes.
            a.sync()?;
        }
    }
    // The segments are the caller's to free (`segment`): a crash before
    // that, or before it is durable, finds these txns again, applied, and
    // the durable progress says so.
    a.report.unapplied = std::mem::take(a.unapplied);
    Ok(a.report)
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
        pos: usize,
        txn: &RunTxn,
        start: u64,
        (plan, elision): (&Plan, &mut Elision),
        segment_bytes: u64,
        between_segments: &mut dyn FnMut(),
    ) -> io::Result<()> {
        let header = &txn.header;
        let path = segment_path(txn.slot);
        let mut reader = OpReader::new(self.backend, &path, header.payload_len);
        if matches!(txn.ops, TxnOps::Logged) {
            for index in 0..start {
                if !reader.skip_op().map_err(|e| read_error(e, header, index))? {
                    return Err(read_error(ReadError::Short, header, index));
                }
            }
        }
        let mut data_since_yield = 0u64;
        for index in start..header.op_count {
            let op: Cow<JournalOp> = match txn.ops {
                TxnOps::Held(ops) => match ops.get(index as usize) {
                    Some(op) => Cow::Borrowed(op),
                    None => return Err(read_error(ReadError::Short, header, index)),
                },
                TxnOps::Logged => match reader.next_op() {
                    Ok(Some(op)) => Cow::Owned(op),
                    Ok(None) => return Err(read_error(ReadError::Short, header, index)),
                    Err(e) => return Err(read_error(e, header, index)),
                },
            };
            let op = &*op;
            if elision.elides((pos, index)) {
                // Never issued (`transient`), but its touches count: a later
                // op of the group that depends on it must wait for a record,
                // as it must in recovery, which replays it.
                self.group.insert_op(op);
                self.report.elided += 1;
                continue;
            }
            let outcome = if op.is_namespace() {
                // Always admitted at the run's start, whose record is already durable (or absent, meaning 0).
                if !self.group.admits(op) {
                    self.start_group(Progress { seq: header.seq, next: index, done: false })?;
                }
                self.namespace_op(op)
            } else {
                if self.renamed.related_op(op) {
                    // Until the rename is durable, a crash image may hold
                    // this op without it: acting through the old binding, it
                    // would change an object the rename unlinked from the name
                    // but that other hard links keep visible.
                    self.sync()?;
                }
                match plan.pieces(pos, index) {
                    Some(pieces) => self.write_pieces(op, pieces),
                    None => self.data_op(op),
                }
            };
            match outcome {
                Ok(()) => {
                    if matches!(op, JournalOp::Rename { .. }) {
                        self.renamed.insert_op(op);
                    }
                    // A coalesced write counts too: recovery, which replays
                    // it, forms the very same groups.
                    self.group.insert_op(op);
                }
                Err(e) if cannot_hold(op, errno_of(&e)) => {
                    elision.refused((pos, index));
                    self.skip(header.seq, index, op, &e)?
                }
                Err(e) => return Err(with_context(e, op)),
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
        if !self.unapplied.iter().any(|u| (u.seq, u.index) == (seq, index)) {
            self.unapplied.push(UnappliedOp { seq, index, op: op.to_string(), errno: errno_of(e) });
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

impl Applier<'_> {
    /// Writes only `pieces` of write `op` (`Write` or `WriteKnown`): a later
    /// write of the run covers the rest (`coalesce`).
    fn write_pieces(&mut self, op: &JournalOp, pieces: &[(u64, u64)]) -> io::Result<()> {
        if op.written().is_none() {
            return misdispatched(op);
        }
        let mut written = 0;
        for &(start, end) in pieces {
            self.unsynced = true;
            match op.apply_part(self.backend, start, end) {
                Ok(()) => written += end - start,
                Err(e) if is_not_found(&e) => {
                    self.report.skipped_missing += 1;
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        self.report.data_bytes += written;
        self.report.coalesced_bytes += op.data_len() - pieces.iter().map(|(s, e)| e - s).sum::<u64>();
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
