//! `PageRuns`: a set of page indexes kept as runs of consecutive indexes, so
//! a file written start to end costs one entry, not one per page. The
//! in-memory store marks its pages of known content with it
//! (`MemBackend::with_known_content`): an install-like replay writes
//! millions of such pages in long runs.
//!
//! Invariant (`check`): runs are non-empty, disjoint and not adjacent (two
//! touching runs are one), and `pages` is the sum of their lengths.

use std::collections::BTreeMap;
use std::ops::Range;

#[derive(Clone, Debug, Default)]
pub(super) struct PageRuns {
    /// Each run's first index mapped to its end (exclusive).
    runs: BTreeMap<u64, u64>,
    pages: u64,
}

impl PageRuns {
    /// Pages in the set.
    pub(super) fn len(&self) -> u64 {
        self.pages
    }

    /// The run holding `index`, if any.
    fn run_of(&self, index: u64) -> Option<Range<u64>> {
        let (&start, &end) = self.runs.range(..=index).next_back()?;
        (index < end).then_some(start..end)
    }

    pub(super) fn contains(&self, index: u64) -> bool {
        self.run_of(index).is_some()
    }

    /// Adds `index`, joining the runs it touches. Appending to the run that
    /// ends at `index` (a file written in order) finds that run once.
    pub(super) fn insert(&mut self, index: u64) {
        let start = match self.runs.range_mut(..=index).next_back() {
            Some((_, end)) if index < *end => return,
            Some((&start, end)) if *end == index => {
                *end += 1;
                start
            }
            _ => {
                self.runs.insert(index, index + 1);
                index
            }
        };
        self.pages += 1;
        if let Some(end) = self.runs.remove(&(index + 1)) {
            self.runs.insert(start, end);
        }
    }

    /// Adds every index of `range`, joined with the runs it overlaps or
    /// touches: a write of many whole pages costs a few lookups, not a few
    /// per page. The run it extends (a file written in order) grows in place.
    pub(super) fn insert_range(&mut self, range: Range<u64>) {
        if range.is_empty() {
            return;
        }
        let mut end = range.end;
        while let Some((&s, &e)) = self.runs.range(range.start..=end).next() {
            self.runs.remove(&s);
            self.pages -= e - s;
            end = end.max(e);
        }
        match self.runs.range_mut(..range.start).next_back() {
            Some((_, before)) if *before >= range.start => {
                let grown = end.max(*before);
                self.pages += grown - *before;
                *before = grown;
            }
            _ => {
                self.runs.insert(range.start, end);
                self.pages += end - range.start;
            }
        }
    }

    /// Takes `index` out; whether it was in. Splits only the run holding it
    /// (a page not marked, the common case, costs one lookup).
    pub(super) fn remove(&mut self, index: u64) -> bool {
        let Some(run) = self.run_of(index) else { return false };
        self.pages -= 1;
        if run.start == index {
            self.runs.remove(&run.start);
        } else {
            self.runs.insert(run.start, index);
        }
        if index + 1 < run.end {
            self.runs.insert(index + 1, run.end);
        }
        true
    }

    /// Takes every index of `range` out, splitting runs that straddle its ends.
    pub(super) fn remove_range(&mut self, range: Range<u64>) {
        if range.is_empty() {
            return;
        }
        let first = self.run_of(range.start).map_or(range.start, |run| run.start);
        let cut: Vec<(u64, u64)> = self.runs.range(first..range.end).map(|(s, e)| (*s, *e)).collect();
        for (start, end) in cut {
            self.runs.remove(&start);
            self.pages -= end - start;
            for kept in [start..range.start.min(end), range.end.max(start)..end] {
                if !kept.is_empty() {
                    self.pages += kept.end - kept.start;
                    self.runs.insert(kept.start, kept.end);
                }
            }
        }
    }

    /// The runs, cut to `range`, in order.
    pub(super) fn within(&self, range: Range<u64>) -> impl Iterator<Item = Range<u64>> + '_ {
        let first = self.run_of(range.start).map_or(range.start, |run| run.start);
        let runs = if range.is_empty() { self.runs.range(0..0) } else { self.runs.range(first..range.end) };
        runs.map(move |(s, e)| *s.max(&range.start)..*e.min(&range.end)).filter(|r| !r.is_empty())
    }

    /// Checks the invariant of the module header.
    #[cfg(test)]
    fn check(&self) -> Result<(), String> {
        let mut last_end = None;
        let mut pages = 0;
        for (&start, &end) in &self.runs {
            if start >= end || last_end.is_some_and(|last| last >= start) {
                return Err(format!("run {start}..{end} is empty, or overlaps or touches the one before"));
            }
            pages += end - start;
            last_end = Some(end);
        }
        (pages == self.pages).then_some(()).ok_or(format!("{} pages counted, {pages} in the runs", self.pages))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// Random inserts, removals and range removals against a plain set of indexes, the invariant checked
    /// after every step. Seed: `MCFS_SEED`.
    #[test]
    fn runs_hold_the_same_indexes_as_a_plain_set() {
        use rand::{Rng, SeedableRng};
        let seed: u64 = std::env::var("MCFS_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random);
        println!("seed {seed} (MCFS_SEED={seed} replays it)");
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut next = |n: u64| rng.gen_range(0..n);
        let (mut runs, mut plain) = (PageRuns::default(), BTreeSet::new());
        for step in 0..5_000 {
            let (a, b) = (next(200), next(200));
            match next(7) {
                0 => {
                    let range = a.min(b)..a.max(b);
                    runs.remove_range(range.clone());
                    plain.retain(|i| !range.contains(i));
                }
                6 => {
                    let range = a.min(b)..a.min(b) + next(12);
                    runs.insert_range(range.clone());
                    plain.extend(range);
                }
                1 => assert_eq!(runs.remove(a), plain.remove(&a), "seed {seed}, step {step}"),
                _ => {
                    runs.insert(a);
                    plain.insert(a);
                }
            }
            runs.check().unwrap_or_else(|e| panic!("seed {seed}, step {step}: {e}"));
            assert_eq!(runs.len(), plain.len() as u64, "seed {seed}, step {step}");
            let probe = next(200);
            assert_eq!(runs.contains(probe), plain.contains(&probe), "seed {seed}, step {step}");
            let window = a.min(b)..a.max(b);
            let got: Vec<u64> = runs.within(window.clone()).flatten().collect();
            let want: Vec<u64> = plain.range(window).copied().collect();
            assert_eq!(got, want, "seed {seed}, step {step}");
        }
        let all: Vec<u64> = runs.within(0..u64::MAX).flatten().collect();
        assert_eq!(all, plain.into_iter().collect::<Vec<_>>(), "seed {seed}");
    }

    #[test]
    fn a_file_written_in_order_is_one_run_and_a_hole_splits_it() {
        let mut runs = PageRuns::default();
        (0..32_768).for_each(|i| runs.insert(i));
        assert_eq!((runs.runs.len(), runs.len()), (1, 32_768));
        runs.remove(100);
        assert_eq!(runs.within(0..u64::MAX).collect::<Vec<_>>(), [0..100, 101..32_768]);
        runs.insert(u64::MAX - 1);
        runs.remove_range(5..u64::MAX);
        let left: Vec<u64> = runs.within(0..u64::MAX).flatten().collect();
        assert_eq!((runs.runs.len(), left, runs.len()), (1, (0..5).collect(), 5));
    }
}
