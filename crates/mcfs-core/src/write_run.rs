//! Runs of page writes, handed over as one write: the compiler gives one
//! write per page; in place each would be a device command of its own (with
//! its fixed latency), so adjacent pages of one file become one write (same
//! bytes, same order, nothing in between). A run borrows its pages from the
//! batch's page versions: written in place it copies nothing
//! (`Backend::write_pieces_at`); only a run the journal keeps is joined
//! into an op of its own — unless the store can recreate its bytes and the
//! journal keeps no payload (the simulator's data-less store): then the op
//! holds the run's extent alone (`JournalOp::WriteKnown`), and the store is
//! handed the extent in place too. Over such a store the cache keeps pages
//! of that content without their bytes (`Page::Known`): they are made from
//! it only for a run that also holds other bytes.

use crate::backend::{Backend, KnownContent};
use crate::cache::ZERO_PAGE;
use crate::journal::JournalOp;
use crate::types::PAGE_SIZE;
use std::io;
use std::path::{Path, PathBuf};

/// The longest run: the journal's stream chunk, so a commit still looks for
/// waiting foreground work that often.
pub const MAX_RUN_BYTES: usize = 256 << 10;

/// A page's part of a run.
#[derive(Clone, Copy, Debug)]
pub enum PagePart<'e> {
    Bytes(&'e [u8]),
    /// `len` bytes of a page kept without its bytes (`Page::Known`): the
    /// store's known content up to `known`, zeros after it.
    Known {
        known: usize,
        len: usize,
    },
}

pub struct WriteRun<'e> {
    pub path: PathBuf,
    pub offset: u64,
    /// The pages' bytes, in file order, borrowed; a part without bytes
    /// (`PagePart::Known`) holds its place with zeros (`ZERO_PAGE`) and is
    /// listed in `known_parts`.
    pieces: Vec<&'e [u8]>,
    /// The parts without bytes, in order, as their index in `pieces` and
    /// the length of the known content that starts them (none but over a
    /// store with known content: a run with bytes only allocates nothing
    /// more).
    known_parts: Vec<(usize, usize)>,
    len: usize,
}

/// What a run hands the store.
enum Content<'r, 'e> {
    /// Its extent: every byte is the store's known content.
    Known,
    /// Its bytes, piece by piece (no part without bytes).
    Pieces(&'r [&'e [u8]]),
    /// Its bytes joined, the parts without bytes made from the known content.
    Joined(Vec<u8>),
}

impl<'e> WriteRun<'e> {
    /// Adds `part`, to be written at `offset` of `path`, to `run` if it
    /// comes right after it and fits; otherwise it starts a new run and the
    /// one it did not join is given back.
    pub fn add(run: &mut Option<WriteRun<'e>>, path: &Path, offset: u64, part: PagePart<'e>) -> Option<WriteRun<'e>> {
        let (bytes, known) = match part {
            PagePart::Bytes(bytes) => (bytes, None),
            PagePart::Known { known, len } => (&ZERO_PAGE[..len], Some(known)),
        };
        if let Some(r) = run.as_mut() {
            // Equal bytes first: the components are compared only where the run ends.
            let same_file = r.path.as_os_str() == path.as_os_str() || r.path == path;
            if same_file && offset == r.offset + r.len as u64 && r.len + bytes.len() <= MAX_RUN_BYTES {
                if let Some(known) = known {
                    r.known_parts.push((r.pieces.len(), known));
                }
                r.pieces.push(bytes);
                r.len += bytes.len();
                return None;
            }
        }
        let mut pieces = Vec::with_capacity(MAX_RUN_BYTES / PAGE_SIZE as usize);
        pieces.push(bytes);
        let known_parts = known.map_or_else(Vec::new, |known| vec![(0, known)]);
        run.replace(WriteRun { path: path.to_path_buf(), offset, pieces, known_parts, len: bytes.len() })
    }

    /// Bytes in the run.
    pub fn len(&self) -> u64 {
        self.len as u64
    }

    /// Writes the run at its place in `backend`, in one call, copying
    /// nothing unless it mixes parts without bytes and others; `known` is
    /// the journal's (`Journal::known_content`).
    pub fn write_to(&self, backend: &dyn Backend, known: Option<KnownContent>) -> io::Result<()> {
        match self.content(known) {
            Content::Known => backend.write_known_at(&self.path, self.offset, self.len()),
            Content::Pieces(pieces) => backend.write_pieces_at(&self.path, self.offset, pieces),
            Content::Joined(bytes) => backend.write_at(&self.path, self.offset, &bytes),
        }
    }

    /// The run as a journal op, which keeps its bytes until it is applied:
    /// the one copy a journaled run costs. If every byte is `known` content
    /// (`Journal::known_content`: the store recreates it and the journal
    /// keeps no payload), the op holds the run's length instead, and the
    /// store is handed the extent at apply: that copy was made only to be
    /// compared with the content there and dropped.
    pub fn into_op(self, known: Option<KnownContent>) -> JournalOp {
        let data = match self.content(known) {
            Content::Known => None,
            Content::Pieces(pieces) => Some(pieces.concat()),
            Content::Joined(bytes) => Some(bytes),
        };
        let (path, offset) = (self.path, self.offset);
        match data {
            Some(data) => JournalOp::Write { path, offset, data },
            None => JournalOp::WriteKnown { path, offset, len: self.len as u64 },
        }
    }

    fn content(&self, known: Option<KnownContent>) -> Content<'_, 'e> {
        let mut at = self.offset;
        let mut known_parts = self.known_parts.iter().peekable();
        let all_known = self.pieces.iter().enumerate().all(|(i, piece)| {
            let is_known = match known_parts.next_if(|(part, _)| *part == i) {
                Some((_, known)) => *known == piece.len(),
                None => known.is_some_and(|k| (k.matches)(at, piece)),
            };
            at += piece.len() as u64;
            is_known
        });
        if all_known {
            return Content::Known;
        }
        if self.known_parts.is_empty() {
            return Content::Pieces(&self.pieces);
        }
        let fill = known.expect("a page kept without its bytes over a store with known content").fill;
        let mut joined = self.pieces.concat();
        let mut starts = self.pieces.iter().scan(0, |at, piece| {
            let start = *at;
            *at += piece.len();
            Some(start..*at)
        });
        let mut last = 0;
        for &(part, known) in &self.known_parts {
            let range = starts.nth(part - last).expect("a part of the run");
            last = part + 1;
            fill(self.offset + range.start as u64, &mut joined[range.start..range.start + known]);
        }
        Content::Joined(joined)
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
            .filter_map(|(path, offset, bytes)| {
                WriteRun::add(&mut run, Path::new(path), *offset, PagePart::Bytes(bytes))
            })
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

    /// Pages kept without their bytes (`PagePart::Known`) join runs as any
    /// page does: alone they are the extent; beside other bytes they are
    /// made from the known content, in the op and in place alike.
    #[test]
    fn pages_without_bytes_join_runs_and_are_made_only_beside_other_bytes() {
        let mut content = vec![0u8; 3 * 4096];
        (RAMP.fill)(0, &mut content);
        let other = [9u8; 4096];
        let run_of = |pieces: &[PagePart<'static>]| {
            let mut run = None;
            for (at, piece) in pieces.iter().enumerate() {
                assert!(WriteRun::add(&mut run, Path::new("f"), at as u64 * 4096, *piece).is_none(), "one run");
            }
            run.expect("a run")
        };
        const WHOLE: PagePart = PagePart::Known { known: 4096, len: 4096 };
        let known = JournalOp::WriteKnown { path: PathBuf::from("f"), offset: 0, len: 2 * 4096 };
        assert_eq!(run_of(&[WHOLE, WHOLE]).into_op(Some(RAMP)), known);
        let other: &'static [u8] = Box::leak(Box::new(other));
        let mixed = run_of(&[WHOLE, PagePart::Bytes(other), WHOLE]);
        let want = [&content[..4096], other, &content[8192..]].concat();
        assert_eq!(mixed.into_op(Some(RAMP)), write("f", 0, want.clone()));
        let mixed = run_of(&[WHOLE, PagePart::Bytes(other), WHOLE]);
        let store = crate::backend::MemBackend::with_known_content(RAMP);
        store.create(Path::new("f"), crate::types::FileKind::File, 0o644, 0).expect("create");
        mixed.write_to(&store, Some(RAMP)).expect("in place");
        let mut read = vec![0; want.len()];
        assert_eq!(store.read_at(Path::new("f"), 0, &mut read).expect("read"), want.len());
        assert_eq!(read, want);
    }

    /// An append's page is the known content up to where the appends
    /// reached, zeros after it: within that it is the extent; past it (the
    /// file grew by a hole) it is joined, the rest zeros.
    #[test]
    fn a_page_known_up_to_a_point_is_the_extent_within_it_and_zeros_after() {
        let run_of = |parts: &[PagePart<'static>]| {
            let mut run = None;
            for (at, part) in parts.iter().enumerate() {
                assert!(WriteRun::add(&mut run, Path::new("f"), at as u64 * 4096, *part).is_none(), "one run");
            }
            run.expect("a run")
        };
        let whole = PagePart::Known { known: 4096, len: 4096 };
        let appended = run_of(&[whole, PagePart::Known { known: 100, len: 100 }]);
        assert_eq!(
            appended.into_op(Some(RAMP)),
            JournalOp::WriteKnown { path: PathBuf::from("f"), offset: 0, len: 4196 }
        );
        let mut want = vec![0u8; 4096 + 300];
        (RAMP.fill)(0, &mut want[..4096 + 100]);
        let holed = run_of(&[whole, PagePart::Known { known: 100, len: 300 }]);
        assert_eq!(holed.into_op(Some(RAMP)), write("f", 0, want));
    }
}
