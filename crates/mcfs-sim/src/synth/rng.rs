//! The generator's own pseudo-random numbers: SplitMix64 (Steele, Lea and Flood, 2014), written out here
//! so that a synthetic trace depends on nothing but the profile, the seed and the duration.
//!
//! Invariant: every draw is integer arithmetic on the 64-bit state (no floating point, no library
//! randomness), so the same seed gives the same numbers on every platform and with every crate version.

use std::ops::RangeInclusive;

/// Weyl-sequence increment of SplitMix64 (the golden ratio in 64-bit fixed point).
const GOLDEN_GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

#[derive(Debug, Clone)]
pub(crate) struct Rng {
    state: u64,
}

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng { state: seed }
    }

    /// An independent generator for one purpose (`stream` names it), so that what one part of the
    /// generator draws never shifts what another part draws.
    pub(crate) fn fork(&self, stream: u64) -> Rng {
        Rng::new(mix(self.state ^ mix(stream.wrapping_add(GOLDEN_GAMMA))))
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN_GAMMA);
        mix(self.state)
    }

    /// Uniform in `0..n` (0 when `n` is 0), by multiply-and-shift.
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in the range (its start when the range is empty).
    pub(crate) fn uniform(&mut self, range: &RangeInclusive<u64>) -> u64 {
        let (lo, hi) = (*range.start(), *range.end());
        if hi <= lo {
            return lo;
        }
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `per_mille` / 1000.
    pub(crate) fn chance(&mut self, per_mille: u32) -> bool {
        self.below(1000) < u64::from(per_mille)
    }

    /// A value in the range with every doubling (octave) equally likely, uniform inside its octave: a
    /// log-uniform draw without logarithms. Human pauses and file sizes look like this: many short, few long.
    pub(crate) fn spread(&mut self, range: &RangeInclusive<u64>) -> u64 {
        let (lo, hi) = ((*range.start()).max(1), *range.end());
        if hi <= lo {
            return lo;
        }
        let mut octaves = 1;
        while lo.checked_shl(octaves).is_some_and(|bound| bound < hi) && octaves < 63 {
            octaves += 1;
        }
        let start = lo << self.below(u64::from(octaves));
        let end = start.saturating_mul(2).min(hi);
        self.uniform(&(start..=end))
    }
}

/// The SplitMix64 output function (a variant of MurmurHash3's finalizer).
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_published_splitmix64_sequence() {
        // Reference outputs of SplitMix64 seeded with 1234567.
        let mut rng = Rng::new(1_234_567);
        let first: Vec<u64> = (0..3).map(|_| rng.next_u64()).collect();
        assert_eq!(first, [6_457_827_717_110_365_317, 3_203_168_211_198_807_973, 9_817_491_932_198_370_423]);
    }

    #[test]
    fn draws_stay_in_their_ranges() {
        let mut rng = Rng::new(7);
        for _ in 0..10_000 {
            assert!((5..=9).contains(&rng.uniform(&(5..=9))));
            assert!((200..=60_000).contains(&rng.spread(&(200..=60_000))));
            assert!(rng.below(3) < 3);
        }
        assert_eq!(rng.uniform(&(4..=4)), 4);
        assert_eq!(rng.spread(&(0..=0)), 1);
        assert!(!rng.chance(0));
        assert!(rng.chance(1000));
    }

    #[test]
    fn spread_favours_short_values_and_forks_differ() {
        let mut rng = Rng::new(11);
        let draws: Vec<u64> = (0..10_000).map(|_| rng.spread(&(1_000..=64_000))).collect();
        let short = draws.iter().filter(|&&d| d < 8_000).count();
        // Octaves 1-2k, 2-4k, 4-8k out of six: about half the draws.
        assert!((4_000..6_000).contains(&short), "{short}");
        let root = Rng::new(11);
        assert_ne!(root.fork(1).next_u64(), root.fork(2).next_u64());
    }
}
