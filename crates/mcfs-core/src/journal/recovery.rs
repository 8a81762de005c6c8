//! Recovery, run at every mount and by `mcfs recover BACKING`: finishes a
//! committed transaction from its durable progress point (the very code the
//! live checkpointer uses), drops a torn one whole, and empties
//! `.mcfs/orphans/`.
//!
//! Invariant: recovery only writes through the apply protocol, the journal
//! truncation and orphan removal, so a crash inside it leaves a state the
//! next recovery handles the same way. It never touches a journal it cannot
//! identify as an mcfs journal of a version it knows, and it changes nothing
//! when its own state (`.mcfs/journal` and `.mcfs/progress`) is one no crash
//! can leave: it refuses, naming the file, rather than replay from a wrong
//! point and roll data back.

use super::apply::apply_txn;
use super::encode::{ForeignHeader, HeaderState, TxnHeader, HEADER_LEN, LEGACY_VERSION};
use super::progress::ProgressFile;
use super::reader::{OpReader, ReadError};
use super::{journal_error, journal_path, orphans_dir, progress_error, ApplyReport};
use crate::backend::{is_not_found, Backend};
use crate::human;
use crate::types::FileKind;
use std::fmt;
use std::io;
use std::path::Path;

/// What `recover` did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// The committed transaction that was finished, if there was one.
    pub replayed: Option<ApplyReport>,
    /// Size of an uncommitted (torn or corrupt) transaction that was dropped.
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
fn replayed(r: &ApplyReport) -> String {
    let refused = r.unapplied.len() as u64;
    let applied = r.ops.saturating_sub(r.already_done + r.skipped_missing + refused);
    let from = if r.resumed_at > 0 {
        format!(" from op {} (the ops before it were applied before the crash)", r.resumed_at)
    } else {
        String::new()
    };
    let mut text = format!(
        "replayed committed transaction {}{from}: {} applied ({} of file data)",
        r.seq,
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
        let ops: Vec<String> = r.unapplied.iter().map(|op| format!("op {}: {op}", op.index)).collect();
        text.push_str(&format!(", {refused} skipped as the backing store cannot hold them: {}", ops.join(", ")));
    }
    text
}

/// See the module comment. A journal with a foreign magic or an unknown
/// version is refused with an error naming the file.
pub fn recover(backend: &dyn Backend) -> io::Result<RecoveryReport> {
    let mut report = RecoveryReport::default();
    let mut progress = ProgressFile::load(backend)?;
    let content = inspect(backend)?;
    check_consistent(&content, &progress)?;
    match content {
        JournalContent::Empty => {}
        JournalContent::Torn { len, .. } => {
            backend.set_len(&journal_path(), 0)?;
            report.dropped_torn_bytes = len;
        }
        JournalContent::Committed(header) => {
            let applied = apply_txn(backend, &header, &mut progress, u64::MAX, &mut || {}, &mut Vec::new())?;
            report.replayed = Some(applied);
        }
    }
    report.orphans_removed = remove_orphans(backend)?;
    if report != RecoveryReport::default() {
        // Leave the backing store settled (and the journal durably empty).
        backend.sync()?;
    }
    Ok(report)
}

/// Refuses a journal and progress file that no crash can leave behind
/// (docs/JOURNAL.md, "Telling damage from a crash"):
/// * the newest progress record says a transaction is in the middle of its
///   apply, but the journal does not hold it, committed and intact;
/// * next to a transaction of the current format, a progress file that is
///   short or has no valid slot (`Journal::open` leaves all of them valid).
///
/// Finishing from a guessed point could roll files back; dropping the
/// transaction would leave it half-applied. The error names the file.
pub fn check_consistent(content: &JournalContent, progress: &ProgressFile) -> io::Result<()> {
    let header = match content {
        JournalContent::Committed(h) | JournalContent::Torn { header: Some(h), .. } => Some(h),
        _ => None,
    };
    if let Some(h) = header.filter(|h| h.version > LEGACY_VERSION) {
        if let Some(damage) = progress.damage() {
            return Err(progress_error(format!(
                "{damage}; recovery cannot tell how far transaction {} in {} was applied, and refuses to guess \
                 (move both files away to give the transaction up, leaving it partly applied)",
                h.seq,
                journal_path().display()
            )));
        }
    }
    let Some(mid) = progress.newest().filter(|p| !p.done) else { return Ok(()) };
    let found = match content {
        JournalContent::Committed(h) if h.seq == mid.seq => return Ok(()),
        JournalContent::Committed(h) => format!("holds transaction {} instead", h.seq),
        JournalContent::Torn { header: Some(h), .. } if h.seq == mid.seq => {
            "holds it damaged (its checksum fails or it is cut short)".to_string()
        }
        JournalContent::Torn { .. } => "holds no readable transaction".to_string(),
        JournalContent::Empty => "is empty".to_string(),
    };
    Err(journal_error(
        libc::EUCLEAN,
        format!(
            "{found}, but {} says transaction {} was being applied (up to op {}); recovery cannot finish it \
             and refuses to leave it half-applied (restore the journal, or move both files away to give it up)",
            super::progress_path().display(),
            mid.seq,
            mid.next
        ),
    ))
}
/// What the journal file holds.
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

/// Reads and checks the journal: header, payload checksum, then every record.
pub fn inspect(backend: &dyn Backend) -> io::Result<JournalContent> {
    let path = journal_path();
    let len = match backend.stat(&path) {
        Ok(attr) => attr.size,
        Err(e) if is_not_found(&e) => return Ok(JournalContent::Empty),
        Err(e) => return Err(e),
    };
    if len == 0 {
        return Ok(JournalContent::Empty);
    }
    let mut sector = [0u8; HEADER_LEN as usize];
    let n = backend.read_at(&path, 0, &mut sector)?;
    let header = match TxnHeader::decode(&sector[..n]) {
        Ok(HeaderState::Valid(h)) => h,
        Ok(HeaderState::Empty | HeaderState::Torn) => return Ok(JournalContent::Torn { len, header: None }),
        Err(ForeignHeader::Magic(magic)) => {
            return Err(journal_error(
                libc::EINVAL,
                format!(
                    "not an mcfs journal (magic {:?}); refusing to recover — move it away if it is not mcfs's",
                    String::from_utf8_lossy(&magic)
                ),
            ))
        }
        Err(ForeignHeader::Version(v)) => {
            return Err(journal_error(
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
    let mut reader = OpReader::new(backend, header.payload_len);
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
        return Err(journal_error(
            libc::EUCLEAN,
            format!("transaction {} is checksummed but unreadable: {m}", header.seq),
        ));
    }
    if count != header.op_count {
        return Err(journal_error(
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
                unapplied: vec![UnappliedOp { index: 57, op: "setxattr d/f".into(), errno: libc::EOPNOTSUPP }],
                ..ApplyReport::default()
            }),
            dropped_torn_bytes: 512,
            orphans_removed: 3,
        };
        assert_eq!(
            report.to_string(),
            "replayed committed transaction 12 from op 40 (the ops before it were applied before the crash): \
             296 ops applied (3.0 MiB of file data), 2 found already done, 1 skipped as a later op had removed \
             their file, 1 skipped as the backing store cannot hold them: op 57: setxattr d/f: Operation not \
             supported (os error 95); dropped an uncommitted transaction (512 B torn by the crash); removed 3 \
             orphans (files deleted while still open)"
        );
    }
}
