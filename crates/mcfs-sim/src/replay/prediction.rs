//! The idle predictors compared on a replay's user inputs (MobiFS §7.4, Figures 8 and 9): the replayer
//! keeps the virtual time of every input event of the trace (all apps together: one phone, one user), and
//! at the end each predictor of [`COMPARED_PREDICTORS`] is scored on that same list by
//! `prediction_score::evaluate`, polling every [`POLL`] as the engine's background thread does. The
//! comparison is independent of the config's own `idle_predictor`, so every replay of a trace reports it.
//!
//! Invariant: the scores are a pure function of the input times, which are virtual (from the trace's first
//! event) and never go back, so the same trace always gives the same scores.

use mcfs_core::policy::interval;
use mcfs_core::policy::prediction_score::{evaluate, PredictionScore};
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The paper's state machine and its two baselines, LMM and LAM, by their config names.
pub const COMPARED_PREDICTORS: [&str; 3] = ["state-machine", "last-min", "last-average"];

/// How often a predictor is asked for a window between inputs: the engine's idle poll (100 ms).
pub const POLL: Duration = Duration::from_millis(100);

/// Virtual times of the trace's user inputs, in replay order.
#[derive(Clone, Debug, Default)]
pub struct InputTimes {
    ns: Vec<u64>,
}

impl InputTimes {
    /// A user input replayed at virtual time `at_ns` (the replayer's clock, which never goes back).
    pub fn record(&mut self, at_ns: u64) {
        self.ns.push(at_ns);
    }

    /// Each compared predictor's score on the inputs, by name.
    pub fn scores(&self) -> BTreeMap<String, PredictionScore> {
        let times: Vec<SystemTime> = self.ns.iter().map(|&ns| UNIX_EPOCH + Duration::from_nanos(ns)).collect();
        COMPARED_PREDICTORS
            .iter()
            .filter_map(|&name| Some((name.to_string(), evaluate(interval::by_name(name)?, &times, POLL))))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_compared_predictor_is_registered_and_scored() {
        let mut inputs = InputTimes::default();
        for (i, gap_ms) in [0u64, 400, 400, 9_000, 300, 300, 12_000, 500].iter().enumerate() {
            let last = inputs.ns.last().copied().unwrap_or(0);
            inputs.record(last + gap_ms * 1_000_000 + i as u64);
        }
        let scores = inputs.scores();
        assert_eq!(
            scores.keys().map(String::as_str).collect::<Vec<_>>(),
            ["last-average", "last-min", "state-machine"]
        );
        for (name, score) in &scores {
            assert_eq!(score.operations, 8, "{name}: every input is one operation");
            assert!(score.predictions > 0, "{name} never offered a window: {score:?}");
        }
    }

    #[test]
    fn no_inputs_give_empty_scores() {
        let scores = InputTimes::default().scores();
        assert_eq!(scores.len(), 3);
        assert!(scores.values().all(|s| *s == PredictionScore::default()));
    }
}
