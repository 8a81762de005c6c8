//! Runs of page writes, handed over as one write: the compiler gives one
//! write per page; in place each would be a device command of its own (with
//! its fixed latency), so adjacent pages of one file become one write (same
//! bytes, same order, nothing in between). A run borrows its pages from the
//! batch's page versions: written in place it copies nothing
//! (`Backend::write_pieces_at`); only a run the journal keeps is joined
//! into an op of its own.

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
    /// the one copy a journaled run costs.
    pub fn into_op(self) -> JournalOp {
        JournalOp::Write { path: self.path, offset: self.offset, data: self.pieces.concat() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `(path, offset, bytes)` writes through `WriteRun::add` as a
    /// commit does and gives the runs as ops.
    fn runs(writes: &[(&str, u64, &[u8])]) -> Vec<JournalOp> {
        let mut run = None;
        let mut out: Vec<JournalOp> = writes
            .iter()
            .filter_map(|(path, offset, bytes)| WriteRun::add(&mut run, Path::new(path), *offset, bytes))
            .map(WriteRun::into_op)
            .collect();
        out.extend(run.map(WriteRun::into_op));
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
}
