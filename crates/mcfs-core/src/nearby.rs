//! A hasher that keeps neighbours together: keys whose last word differs
//! by a little (a file's next page, the next use tick) land in neighbouring
//! places of a hash table, so that walking pages or ticks in order reads
//! memory in order (the LRU's ticks, an open VCT's pages). With ticks
//! spread one by one over a table of the whole cache's pages, nearly every
//! pin missed the processor's caches (docs/BENCHMARKS.md, "Data-less
//! replay: the write path's lookups").
//!
//! The words of a key are folded as `(w0 * K + w1) * K + ...`, so the last
//! word adds as is. Keys then go in runs of eight (the low three bits kept
//! as they are), and the runs are spread over the table by a mixing
//! function: spread they must be, since long runs of neighbours side by
//! side met other such runs and piled up (a page table so hashed made the
//! 60 GiB install trace 1.3× slower). Keys are engine-made
//! integers, not input an attacker picks.

use std::hash::Hasher;

const K: u64 = 0x517c_c1b7_2722_0a95;
/// Neighbours kept side by side: a run of `1 << RUN_BITS` keys.
const RUN_BITS: u32 = 3;

#[derive(Default)]
pub struct NearbyHasher(u64);

impl Hasher for NearbyHasher {
    fn finish(&self) -> u64 {
        // SplitMix64's finalizer spreads the runs.
        let mut run = self.0 >> RUN_BITS;
        run = (run ^ (run >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        run = (run ^ (run >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        run ^= run >> 31;
        run << RUN_BITS | self.0 & ((1 << RUN_BITS) - 1)
    }

    fn write(&mut self, bytes: &[u8]) {
        bytes.iter().for_each(|b| self.write_u64(u64::from(*b)));
    }

    fn write_u64(&mut self, word: u64) {
        self.0 = self.0.wrapping_mul(K).wrapping_add(word);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::Hash;

    fn hash(key: impl Hash) -> u64 {
        let mut h = NearbyHasher::default();
        key.hash(&mut h);
        h.finish()
    }

    #[test]
    fn neighbours_in_a_run_of_eight_land_side_by_side_and_runs_spread() {
        assert_eq!(hash((7u64, 17u64)) - hash((7u64, 16u64)), 1, "pages 16 and 17 of a file");
        assert_eq!(hash(41u64) - hash(40u64), 1, "ticks 40 and 41");
        // Two long stretches, as two large files' pages: their runs' places in
        // a table of 2^14 runs hardly meet (spread at random, about 2 % would).
        let places = |ino: u64| (0..4096u64).step_by(8).map(move |idx| (hash((ino, idx)) >> 3) & 0x3fff);
        let first: std::collections::HashSet<u64> = places(1).collect();
        assert!(first.len() > 500, "the runs of one file spread: {} places", first.len());
        let met = places(2).filter(|p| first.contains(p)).count();
        assert!(met < 40, "{met} runs of two files met");
        assert_ne!(hash((1u64, 2u64)), hash((2u64, 1u64)));
        let tops: std::collections::HashSet<u64> = (0..8000u64).step_by(8).map(|t| hash(t) >> 57).collect();
        assert!(tops.len() > 100, "the top bits tell runs apart: {} values", tops.len());
    }
}
