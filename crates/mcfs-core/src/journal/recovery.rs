//! Recovery, run at every mount and by `mcfs recover BACKING`: finishes
//! every committed transaction of the log, in commit order, from the durable
//! progress point (the very code the live applier uses, reading the ops back
//! from the segments), drops torn ones whole, and empties `.mcfs/orphans/`.
//!
//! Invariant: recovery only writes through the apply protocol, the clearing
//! of segments (`segment::clear`) and orphan removal, so a crash inside it leaves a state the
//! next recovery handles the same way. It never touches a journal it cannot
//! identify as an mcfs journal of a version it knows, and it changes nothing
//! when its own state (`.mcfs/journal` and `.mcfs/progress`) is one no crash
//! can leave: it refuses, naming the file, rather than replay from a wrong
//! point and roll data back. Only recovery reads the log back.

use super::apply::apply_run;
use super::encode::{ForeignHeader, HeaderState, TxnHeader, HEADER_LEN, LEGACY_VERSION};
use super::progress::ProgressFile;
use super::reader::{OpReader, ReadError};
use super::segment;
use super::{
    journal_error, orphans_dir, progress_error, segment_path, segment_slots, state_error, ApplyReport, RunTxn, TxnOps,
};
use crate::backend::{is_not_found, Backend};
use crate::human;
use crate::types::FileKind;
use std::fmt;
use std::io;
use std::path::Path;

/// What `recover` did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// The committed transactions that were finished (as one run), if any.
    pub replayed: Option<ApplyReport>,
    /// Size of the uncommitted (torn or corrupt) transactions that were dropped.
    pub dropped_torn_bytes: u64,
    /// Entries removed from `.mcfs/orphans/`.
    pub orphans_removed: u64,
}

/// What recovery did, in one sentence (logged at every mount, printed by
/// `mcfs recover`): the transaction replayed and what became of its ops, by
/// name for those the backing store refused; a torn transaction dropped;
/// orphans removed.
impl fmt::Display for RecoveryReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        match &self.replayed {
            Some(r) => parts.push(replayed(r)),
            None => parts.push("no committed transaction to replay".to_string()),
        }
        if self.dropped_torn_bytes > 0 {
            parts.push(format!(
                "dropped an uncommitted transaction ({} torn by the crash)",
                human::bytes(self.dropped_torn_bytes)
            ));
        }
        if self.orphans_removed > 0 {
            parts.push(format!(
                "removed {} (files deleted while still open)",
                human::count(self.orphans_removed as usize, "orphan")
            ));
        }
        f.write_str(&parts.join("; "))
    }
}

/// "replayed committed transaction 12 from op 40: 300 ops applied, 2 found already done, ..."
/// (or "transactions 12 to 14")
fn replayed(r: &ApplyReport) -> String {
    let refused = r.unapplied.len() as u64;
    let applied = r.ops.saturating_sub(r.already_done + r.skipped_missing + refused);
    let from = if r.resumed_at > 0 {
        format!(" from op {} (the ops before it were applied before the crash)", r.resumed_at)
    } else {
        String::new()
    };
    let which = match r.txns {
        0 | 1 => format!("transaction {}", r.seq),
        n => format!("transactions {} to {}", r.seq, r.seq + n - 1),
    };
    let mut text = format!(
        "replayed committed {which}{from}: {} applied ({} of file data)",
        human::count(applied as usize, "op"),
        human::bytes(r.data_bytes)
    );
    if r.already_done > 0 {
        text.push_str(&format!(", {} found already done", r.already_done));
    }
    if r.skipped_missing > 0 {
        text.push_str(&format!(", {} skipped as a later op had removed their file", r.skipped_missing));
    }
    if refused > 0 {
        let ops: Vec<String> = r.unapplied.iter().map(|op| format!("txn {} op {}: {op}", op.seq, op.index)).collect();
        text.push_str(&format!(", {refused} skipped as the backing store cannot hold them: {}", ops.join(", ")));
    }
    text
}

/// See the module comment. A segment with a foreign magic or an unknown
/// version is refused with an error naming the file.
pub fn recover(backend: &dyn Backend) -> io::Result<RecoveryReport> {
    let mut report = RecoveryReport::default();
    let mut progress = ProgressFile::load(backend)?;
    let log = inspect_log(backend, &segment_slots(backend)?)?;
    check_consistent(&log, &progress)?;
    // Appends of a transaction that did not commit are cut back before the
    // committed ones are replayed (crate::in_place).
    let newest = progress.newest().map_or(0, |p| p.seq);
    let committed = |seq: u64| newest >= seq || log.committed.iter().any(|(_, h)| h.seq == seq);
    let appends_put_back = crate::in_place::recover(backend, &committed)?;
    for (slot, len) in &log.torn {
        segment::clear(backend, *slot, *len)?;
        report.dropped_torn_bytes += len;
    }
    // Transactions the progress file calls applied are left in their
    // segments by the live applier (they are reused in place): nothing to replay.
    let mut run: Vec<RunTxn> = log
        .committed
        .iter()
        .filter(|(_, header)| progress.resume_point(header.seq).is_some())
        .map(|(slot, header)| RunTxn { slot: *slot, header: *header, ops: TxnOps::Logged })
        .collect();
    if !run.is_empty() {
        report.replayed = Some(apply_run(backend, &mut run, &mut progress, u64::MAX, &mut || {}, &mut Vec::new())?);
    }
    // Every commit record is cleared before the next mount numbers
    // transactions from 1 again (with the sync below).
    for (slot, _) in &log.committed {
        segment::clear(backend, *slot, backend.stat(&segment_path(*slot))?.size)?;
    }
    report.orphans_removed = remove_orphans(backend)?;
    if report != RecoveryReport::default() || !log.committed.is_empty() || appends_put_back {
        // Leave the backing store settled (and the log durably free).
        backend.sync()?;
    }
    Ok(report)
}

/// A copy of `backend` brought to what a mount after a crash now would
/// find: the committed transactions still waiting in the journal recovered
/// (tests read "what is durable" through it).
pub fn recovered_copy(backend: &crate::backend::MemBackend) -> io::Result<crate::backend::MemBackend> {
    let copy = backend.clone();
    recover(&copy)?;
    Ok(copy)
}

/// What the segments of the log hold.
#[derive(Debug, Default)]
pub struct Log {
    /// Committed transactions (slot, commit record), in commit order.
    pub committed: Vec<(usize, TxnHeader)>,
    /// Segments holding bytes of transactions never committed (slot, length).
    pub torn: Vec<(usize, u64)>,
    /// The commit records of torn segments whose record is valid (their payload is not).
    torn_headers: Vec<TxnHeader>,
}

/// Reads and checks every segment of the log. Two committed transactions
/// with one number are refused: no crash leaves them (`begin` takes the
/// segment of an aborted transaction again).
pub fn inspect_log(backend: &dyn Backend, slots: &[usize]) -> io::Result<Log> {
    let mut log = Log::default();
    for &slot in slots {
        match inspect(backend, &segment_path(slot))? {
            JournalContent::Empty => {}
            JournalContent::Torn { len, header } => {
                log.torn.push((slot, len));
                log.torn_headers.extend(header);
            }
            JournalContent::Committed(header) => log.committed.push((slot, header)),
        }
    }
    log.committed.sort_by_key(|(_, h)| h.seq);
    if let Some(pair) = log.committed.windows(2).find(|w| w[0].1.seq == w[1].1.seq) {
        return Err(state_error(
            &segment_path(pair[1].0),
            libc::EUCLEAN,
            format!(
                "holds transaction {}, and so does {}; recovery cannot tell which came first",
                pair[1].1.seq,
                segment_path(pair[0].0).display()
            ),
        ));
    }
    Ok(log)
}

/// Refuses a log and progress file that no crash can leave behind
/// (docs/JOURNAL.md, "Telling damage from a crash"):
/// * the newest progress record says a transaction is in the middle of its
///   apply, but the log does not hold it, committed and intact;
/// * next to a transaction of the current format, a progress file that is
///   short or has no valid slot (`Journal::open` leaves all of them valid).
///
/// Finishing from a guessed point could roll files back; dropping the
/// transaction would leave it half-applied. The error names the file.
pub fn check_consistent(log: &Log, progress: &ProgressFile) -> io::Result<()> {
    let headers = log.committed.iter().map(|(_, h)| h).chain(&log.torn_headers);
    if let Some(h) = headers.filter(|h| h.version > LEGACY_VERSION).min_by_key(|h| h.seq) {
        if let Some(damage) = progress.damage() {
            return Err(progress_error(format!(
                "{damage}; recovery cannot tell how far transaction {} in {} was applied, and refuses to guess \
                 (move the progress file and the journal segments away to give the transactions up, leaving \
                 them partly applied)",
                h.seq,
                super::journal_path().display()
            )));
        }
    }
    let Some(mid) = progress.newest().filter(|p| !p.done) else { return Ok(()) };
    if log.committed.iter().any(|(_, h)| h.seq == mid.seq) {
        return Ok(());
    }
    let found = if log.torn_headers.iter().any(|h| h.seq == mid.seq) {
        "holds it damaged (its checksum fails or it is cut short)".to_string()
    } else if log.committed.is_empty() {
        "holds no committed transaction".to_string()
    } else {
        let seqs: Vec<String> = log.committed.iter().map(|(_, h)| h.seq.to_string()).collect();
        format!("holds transactions {} instead", seqs.join(", "))
    };
    Err(journal_error(
        libc::EUCLEAN,
        format!(
            "{found}, but {} says transaction {} was being applied (up to op {}); recovery cannot finish it \
             and refuses to leave it half-applied (restore the journal, or move it and the progress file away \
             to give it up)",
            super::progress_path().display(),
            mid.seq,
            mid.next
        ),
    ))
}
/// What one segment of the log holds.
#[derive(Debug, PartialEq, Eq)]
pub enum JournalContent {
    Empty,
    /// Bytes of a transaction whose commit record is missing or does not
    /// match its payload.
    Torn {
        len: u64,
        /// The commit record, if it is valid (the payload is not).
        header: Option<TxnHeader>,
    },
    Committed(TxnHeader),
}

/// Reads and checks one segment: header, payload checksum, then every record.
fn inspect(backend: &dyn Backend, path: &Path) -> io::Result<JournalContent> {
    let len = match backend.stat(path) {
        Ok(attr) => attr.size,
        Err(e) if is_not_found(&e) => return Ok(JournalContent::Empty),
        Err(e) => return Err(e),
    };
    if len == 0 {
        return Ok(JournalContent::Empty);
    }
    let mut sector = [0u8; HEADER_LEN as usize];
    let n = backend.read_at(path, 0, &mut sector)?;
    let header = match TxnHeader::decode(&sector[..n]) {
        Ok(HeaderState::Valid(h)) => h,
        // A free segment: zeros, or stale bytes behind a cleared header (or
        // a transaction that never wrote its commit record: nothing to drop).
        Ok(HeaderState::Empty) => return Ok(JournalContent::Empty),
        Ok(HeaderState::Torn) => return Ok(JournalContent::Torn { len, header: None }),
        Err(ForeignHeader::Magic(magic)) => {
            return Err(state_error(
                path,
                libc::EINVAL,
                format!(
                    "not an mcfs journal (magic {:?}); refusing to recover — move it away if it is not mcfs's",
                    String::from_utf8_lossy(&magic)
                ),
            ))
        }
        Err(ForeignHeader::Version(v)) => {
            return Err(state_error(
                path,
                libc::EINVAL,
                format!(
                    "journal format version {v}, this mcfs knows version {}; use the mcfs that wrote it",
                    super::encode::VERSION
                ),
            ))
        }
    };
    let torn = JournalContent::Torn { len, header: Some(header) };
    if len - HEADER_LEN.min(len) < header.payload_len {
        return Ok(torn);
    }
    let mut reader = OpReader::new(backend, path, header.payload_len);
    let mut count = 0u64;
    let mut malformed = None;
    loop {
        match reader.next_op() {
            Ok(Some(_)) => count += 1,
            Ok(None) => break,
            Err(ReadError::Malformed(m)) => {
                malformed = Some(m);
                match reader.consume_rest() {
                    Ok(()) => break,
                    Err(ReadError::Io(e)) => return Err(e),
                    Err(_) => return Ok(torn),
                }
            }
            Err(ReadError::Short) => return Ok(torn),
            Err(ReadError::Io(e)) => return Err(e),
        }
    }
    if reader.crc() != Some(header.payload_crc) {
        return Ok(torn);
    }
    // The checksum matches, so the bytes are what was written: a bad record
    // is a bug, and applying part of a committed transaction is not allowed.
    if let Some(m) = malformed {
        return Err(state_error(
            path,
            libc::EUCLEAN,
            format!("transaction {} is checksummed but unreadable: {m}", header.seq),
        ));
    }
    if count != header.op_count {
        return Err(state_error(
            path,
            libc::EUCLEAN,
            format!("transaction {} announces {} ops but holds {count}", header.seq, header.op_count),
        ));
    }
    Ok(JournalContent::Committed(header))
}

/// Removes everything under `.mcfs/orphans/`: at mount no file is open, so
/// every parked unlinked-but-open file is garbage. Idempotent.
fn remove_orphans(backend: &dyn Backend) -> io::Result<u64> {
    let dir = orphans_dir();
    let entries = match backend.list_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if is_not_found(&e) => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut removed = 0;
    for (name, kind) in entries {
        remove_tree(backend, &dir.join(name), kind)?;
        removed += 1;
    }
    Ok(removed)
}

fn remove_tree(backend: &dyn Backend, path: &Path, kind: FileKind) -> io::Result<()> {
    let result = if kind == FileKind::Dir {
        for (name, child_kind) in backend.list_dir(path)? {
            remove_tree(backend, &path.join(name), child_kind)?;
        }
        backend.remove_dir(path)
    } else {
        backend.remove_file(path)
    };
    match result {
        Err(e) if !is_not_found(&e) => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod report_tests {
    use super::*;
    use crate::journal::UnappliedOp;

    #[test]
    fn a_clean_journal_says_so() {
        assert_eq!(RecoveryReport::default().to_string(), "no committed transaction to replay");
    }

    #[test]
    fn a_replay_is_told_in_words_with_refused_ops_by_name() {
        let report = RecoveryReport {
            replayed: Some(ApplyReport {
                seq: 12,
                resumed_at: 40,
                ops: 300,
                data_bytes: 3 << 20,
                already_done: 2,
                skipped_missing: 1,
                unapplied: vec![UnappliedOp { seq: 12, index: 57, op: "setxattr d/f".into(), errno: libc::EOPNOTSUPP }],
                ..ApplyReport::default()
            }),
            dropped_torn_bytes: 512,
            orphans_removed: 3,
        };
        assert_eq!(
            report.to_string(),
            "replayed committed transaction 12 from op 40 (the ops before it were applied before the crash): \
             296 ops applied (3.0 MiB of file data), 2 found already done, 1 skipped as a later op had removed \
             their file, 1 skipped as the backing store cannot hold them: txn 12 op 57: setxattr d/f: Operation not \
             supported (os error 95); dropped an uncommitted transaction (512 B torn by the crash); removed 3 \
             orphans (files deleted while still open)"
        );
    }
}
