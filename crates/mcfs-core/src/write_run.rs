//! Runs of page writes, handed over as one write: the compiler gives one
//! write per page; in place each would be a device command of its own (with
//! its fixed latency), so adjacent pages of one file become one write (same
//! bytes, same order, nothing in between). A run borrows its pages from the
//! batch's page versions: written in place it copies nothing
//! (`Backend::write_pieces_at`); only a run the journal keeps is joined
//! into an op of its own — unless the store can recreate its bytes and the
//! journal keeps no payload (the simulator's data-less store): then the op
//! holds the run's extent alone (`JournalOp::WriteKnown`).

use crate::backend::KnownContent;
use crate::journal::JournalOp;
use crate::types::PAGE_SIZE;
use std::path::{Path, PathBuf};

/// The longest run: the journal's stream chunk, so a commit still looks for
/// waiting foreground work that often.
pub const MAX_RUN_BYTES: usize = 256 << 10;

pub struct WriteRun<'e> {
    pub path: PathBuf,
    pub offset: u64,
    /// The bytes, in file order, each borrowed from its page.
    pub pieces: Vec<&'e [u8]>,
    len: usize,
}

impl<'e> WriteRun<'e> {
    /// Adds `bytes`, to be written at `offset` of `path`, to `run` if they
    /// come right after it and fit; otherwise they start a new run and the
    /// one they did not join is given back.
    pub fn add(run: &mut Option<WriteRun<'e>>, path: &Path, offset: u64, bytes: &'e [u8]) -> Option<WriteRun<'e>> {
        if let Some(r) = run.as_mut() {
            if r.path == path && offset == r.offset + r.len as u64 && r.len + bytes.len() <= MAX_RUN_BYTES {
                r.pieces.push(bytes);
                r.len += bytes.len();
                return None;
            }
        }
        let mut pieces = Vec::with_capacity(MAX_RUN_BYTES / PAGE_SIZE as usize);
        pieces.push(bytes);
        run.replace(WriteRun { path: path.to_path_buf(), offset, pieces, len: bytes.len() })
    }

    /// The run as a journal op, which keeps its bytes until it is applied:
    /// the one copy a journaled run costs. If every byte is `known` content
    /// (`Journal::known_content`: the store recreates it and the journal
    /// keeps no payload), the op holds the run's length instead, and the
    /// store is handed the extent at apply: that copy was made only to be
    /// compared with the content there and dropped.
    pub fn into_op(self, known: Option<KnownContent>) -> JournalOp {
        if known.is_some_and(|known| self.holds(known)) {
            return JournalOp::WriteKnown { path: self.path, offset: self.offset, len: self.len as u64 };
        }
        JournalOp::Write { path: self.path, offset: self.offset, data: self.pieces.concat() }
    }

    /// Whether every piece is `known` content for its offsets.
    fn holds(&self, known: KnownContent) -> bool {
        let mut at = self.offset;
        self.pieces.iter().all(|piece| {
            let matches = (known.matches)(at, piece);
            at += piece.len() as u64;
            matches
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::test_content::RAMP;

    /// Feeds `(path, offset, bytes)` writes through `WriteRun::add` as a
    /// commit does and gives the runs as ops.
    fn runs(writes: &[(&str, u64, &[u8])]) -> Vec<JournalOp> {
        runs_knowing(writes, None)
    }

    /// `runs`, for a journal whose store recreates `known` content.
    fn runs_knowing(writes: &[(&str, u64, &[u8])], known: Option<KnownContent>) -> Vec<JournalOp> {
        let mut run = None;
        let mut out: Vec<JournalOp> = writes
            .iter()
            .filter_map(|(path, offset, bytes)| WriteRun::add(&mut run, Path::new(path), *offset, bytes))
            .map(|done| done.into_op(known))
            .collect();
        out.extend(run.map(|last| last.into_op(known)));
        out
    }

    fn write(path: &str, offset: u64, data: Vec<u8>) -> JournalOp {
        JournalOp::Write { path: PathBuf::from(path), offset, data }
    }

    #[test]
    fn adjacent_writes_to_one_file_become_one_run_and_nothing_moves() {
        let (page, tail, b, b2, c) = ([1; 4096], [2; 100], [3; 10], [4; 10], [5; 5]);
        let writes: [(&str, u64, &[u8]); 5] = [
            ("a", 0, &page),
            ("a", 4096, &tail),
            ("b", 4196, &b), // another file
            ("b", 0, &b2),   // not right after
            ("b", 10, &c),
        ];
        let want = vec![
            write("a", 0, [&page[..], &tail].concat()),
            write("b", 4196, b.to_vec()),
            write("b", 0, [&b2[..], &c].concat()),
        ];
        assert_eq!(runs(&writes), want);
    }

    #[test]
    fn a_run_stops_growing_at_its_cap() {
        let pages: Vec<[u8; 4096]> = (0..MAX_RUN_BYTES / 4096 + 3).map(|p| [p as u8; 4096]).collect();
        let writes: Vec<(&str, u64, &[u8])> =
            pages.iter().enumerate().map(|(p, b)| ("f", p as u64 * 4096, &b[..])).collect();
        let out = runs(&writes);
        let spans: Vec<(u64, u64)> = out
            .iter()
            .map(|op| match op {
                JournalOp::Write { offset, data, .. } => (*offset, data.len() as u64),
                other => panic!("not a write: {other}"),
            })
            .collect();
        assert_eq!(spans, vec![(0, MAX_RUN_BYTES as u64), (MAX_RUN_BYTES as u64, 3 * 4096)]);
        assert_eq!(out[1], write("f", MAX_RUN_BYTES as u64, pages[MAX_RUN_BYTES / 4096..].concat()));
    }

    #[test]
    fn a_run_of_known_content_is_its_extent_and_any_other_byte_joins_it() {
        let mut bytes = vec![0u8; 3 * 4096 + 100];
        (RAMP.fill)(50, &mut bytes);
        let (first, rest) = bytes.split_at(4096 - 50);
        let mut other = rest.to_vec();
        other[5000] ^= 1;
        let known_run: [(&str, u64, &[u8]); 2] = [("f", 50, first), ("f", 4096, rest)];
        let other_run: [(&str, u64, &[u8]); 2] = [("f", 50, first), ("f", 4096, &other)];
        let extent = JournalOp::WriteKnown { path: PathBuf::from("f"), offset: 50, len: bytes.len() as u64 };
        assert_eq!(runs_knowing(&known_run, Some(RAMP)), vec![extent.clone()]);
        assert_eq!(extent.data_len(), bytes.len() as u64);
        // One byte not the content: joined, as for a store without it.
        assert_eq!(runs_knowing(&other_run, Some(RAMP)), vec![write("f", 50, [first, &other].concat())]);
        assert_eq!(runs(&known_run), vec![write("f", 50, bytes.clone())]);
    }
}
