//! A hasher that keeps neighbours together: keys whose last word differs
//! by a little (a file's next page, the next use tick) land in neighbouring
//! places of a hash table, so that walking pages or ticks in order reads
//! memory in order (the cache's page table and LRU lists, a VCT's pages). With keys spread over a table the size of the whole
//! cache, nearly every lookup missed the processor's caches (docs/BENCHMARKS.md,
//! "Replay speed: the page cache's lookups").
//!
//! The place a table picks comes from the low bits: the words of a key are
//! folded as `(w0 * K + w1) * K + ...`, so the last word adds as is. The top
//! seven bits, which a table tells keys at one place apart by, are mixed in
//! from a multiplication of the whole. Keys are engine-made integers, not
//! input an attacker picks.

use std::hash::Hasher;

const K: u64 = 0x517c_c1b7_2722_0a95;
const TOP_SEVEN: u64 = 0x7f << 57;

#[derive(Default)]
pub struct NearbyHasher(u64);

impl Hasher for NearbyHasher {
    fn finish(&self) -> u64 {
        self.0 ^ (self.0.wrapping_mul(K) & TOP_SEVEN)
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
    fn neighbours_land_side_by_side_and_differ_in_the_top_seven() {
        const LOW: u64 = !TOP_SEVEN;
        for (a, b) in [((7u64, 100u64), (7u64, 101u64)), ((u64::MAX, 5), (u64::MAX, 6))] {
            assert_eq!((hash(b) & LOW).wrapping_sub(hash(a) & LOW) & LOW, 1, "{a:?} then {b:?}");
        }
        assert_eq!(hash(41u64) & LOW, 41, "one word is its own place");
        let tops: std::collections::HashSet<u64> = (0..1000u64).map(|t| hash(t) >> 57).collect();
        assert!(tops.len() > 100, "the top bits tell neighbours apart: {} values", tops.len());
        assert_ne!(hash((1u64, 2u64)), hash((2u64, 1u64)));
    }
}
