//! User profiles: when a user touches the screen. Users switch back and forth between runs of quick
//! inputs (scrolling, skimming: 0.2–2 s apart) and long pauses (reading a post, watching: 5–60 s), the
//! pattern MobiFS §5.3 builds its interval predictor on.
//!
//! Invariant: inputs come out in time order and never overlap (the next starts after the previous one
//! ends); a gap inside a run is within the profile's short range, a gap between runs within its long
//! range, both measured from the end of one input to the start of the next.

use std::ops::RangeInclusive;

use super::rng::Rng;
use crate::trace::InputKind;

pub(crate) struct UserProfile {
    pub name: &'static str,
    pub summary: &'static str,
    /// Inputs in one run of quick interaction.
    pub run_inputs: RangeInclusive<u64>,
    /// Gap between inputs of a run, in milliseconds (drawn uniformly).
    pub short_gap_ms: RangeInclusive<u64>,
    /// Pause between runs, in milliseconds (drawn log-uniformly: many shorter pauses, a few long ones).
    pub long_gap_ms: RangeInclusive<u64>,
    /// Chance that an input is a drag (a scroll or fling) rather than a tap.
    pub drag_per_mille: u32,
}

/// How long a tap and a drag last, in milliseconds (a drag is merged into one operation, MobiFS §6.1).
const TAP_MS: RangeInclusive<u64> = 40..=150;
const DRAG_MS: RangeInclusive<u64> = 150..=800;
/// The user's first input comes this long after launch (the app drawing its first screen).
const FIRST_INPUT_MS: RangeInclusive<u64> = 800..=3_000;
const NS_PER_MS: u64 = 1_000_000;

pub(crate) static USER_PROFILES: [UserProfile; 5] = [
    UserProfile {
        name: "skimmer",
        summary: "flicks through content: long runs of quick drags, short pauses (5-12 s)",
        run_inputs: 8..=30,
        short_gap_ms: 200..=800,
        long_gap_ms: 5_000..=12_000,
        drag_per_mille: 800,
    },
    UserProfile {
        name: "scroller",
        summary: "scrolls a feed: runs of drags 0.3-1.5 s apart, pauses of 5-20 s on a post",
        run_inputs: 5..=20,
        short_gap_ms: 300..=1_500,
        long_gap_ms: 5_000..=20_000,
        drag_per_mille: 700,
    },
    UserProfile {
        name: "mixed",
        summary: "half scrolling, half reading: short runs, pauses of 8-40 s",
        run_inputs: 3..=12,
        short_gap_ms: 300..=2_000,
        long_gap_ms: 8_000..=40_000,
        drag_per_mille: 500,
    },
    UserProfile {
        name: "reader",
        summary: "reads: a few inputs to reach an item, then 20-60 s on it",
        run_inputs: 2..=6,
        short_gap_ms: 500..=2_000,
        long_gap_ms: 20_000..=60_000,
        drag_per_mille: 400,
    },
    UserProfile {
        name: "watcher",
        summary: "watches or listens: a tap or two (play, skip), then 30-60 s untouched",
        run_inputs: 1..=3,
        short_gap_ms: 500..=2_000,
        long_gap_ms: 30_000..=60_000,
        drag_per_mille: 100,
    },
];

pub(crate) fn user_profile(name: &str) -> Option<&'static UserProfile> {
    USER_PROFILES.iter().find(|p| p.name == name)
}

/// One user input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UserInput {
    pub start_ns: u64,
    pub kind: InputKind,
    pub duration_ns: u64,
}

impl UserInput {
    pub(crate) fn end_ns(&self) -> u64 {
        self.start_ns.saturating_add(self.duration_ns)
    }
}

impl UserProfile {
    /// The user's inputs from launch until `until_ns` (every input starts before it).
    pub(crate) fn inputs(&self, rng: &mut Rng, until_ns: u64) -> Vec<UserInput> {
        let mut inputs = Vec::new();
        let mut next_ns = rng.uniform(&FIRST_INPUT_MS) * NS_PER_MS;
        while next_ns < until_ns {
            let run = rng.uniform(&self.run_inputs);
            for i in 0..run {
                if next_ns >= until_ns {
                    break;
                }
                let (kind, duration_ms) = if rng.chance(self.drag_per_mille) {
                    (InputKind::Drag, rng.uniform(&DRAG_MS))
                } else {
                    (InputKind::Tap, rng.uniform(&TAP_MS))
                };
                let input = UserInput { start_ns: next_ns, kind, duration_ns: duration_ms * NS_PER_MS };
                let gap_ms = if i + 1 < run { rng.uniform(&self.short_gap_ms) } else { rng.spread(&self.long_gap_ms) };
                next_ns = input.end_ns().saturating_add(gap_ms * NS_PER_MS);
                inputs.push(input);
            }
        }
        inputs
    }
}
