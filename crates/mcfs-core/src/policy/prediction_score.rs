//! Scoring an idle-interval predictor as MobiFS §7.4 does: every idle window
//! the predictor offers is one prediction, its length counts toward the mean
//! predicted interval, and every user operation that lands inside an offered
//! window is a responsive conflict (RC). A window runs to its predicted end
//! even after an RC (the checkpoint scheduled into it takes the full
//! window), so one prediction can suffer several RCs (LAM's 1.18 per
//! prediction in Figure 8 needs that).
//!
//! `ScoredPredictor` is what the engine holds; `evaluate` replays a list of
//! input times through one, polling like the background thread does, for
//! the simulator's predictor comparison.

use super::interval::{BurstFilter, IntervalPredictor, DEFAULT_BURST_GAP};
use serde::Serialize;
use std::time::{Duration, SystemTime};

/// Counts behind the two metrics of §7.4.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PredictionScore {
    /// Idle windows offered.
    pub predictions: u64,
    /// User operations inside an offered window.
    pub conflicts: u64,
    /// Sum of the offered windows' lengths, in nanoseconds.
    pub predicted_ns: u64,
    /// User operations seen (after merging bursts).
    pub operations: u64,
}

impl PredictionScore {
    pub fn conflicts_per_prediction(&self) -> f64 {
        self.conflicts as f64 / self.predictions.max(1) as f64
    }

    pub fn mean_predicted_seconds(&self) -> f64 {
        self.predicted_ns as f64 / 1e9 / self.predictions.max(1) as f64
    }
}

/// Idle time the predictor offers from now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdleWindow {
    /// What is left of the window.
    pub left: Duration,
    /// The window was offered just now (a new prediction).
    pub fresh: bool,
}

/// A predictor with the burst filter in front and the score kept.
pub struct ScoredPredictor {
    predictor: Box<dyn IntervalPredictor + Send>,
    bursts: BurstFilter,
    /// End of the window offered last.
    window_end: Option<SystemTime>,
    score: PredictionScore,
}

impl ScoredPredictor {
    pub fn new(predictor: Box<dyn IntervalPredictor + Send>) -> Self {
        ScoredPredictor {
            predictor,
            bursts: BurstFilter::new(DEFAULT_BURST_GAP),
            window_end: None,
            score: PredictionScore::default(),
        }
    }

    /// A user-input event at `at`; events of one burst make one operation.
    pub fn input(&mut self, at: SystemTime) {
        if !self.bursts.starts_operation(at) {
            return;
        }
        self.score.operations += 1;
        if self.window_end.is_some_and(|end| at < end) {
            self.score.conflicts += 1;
        }
        self.predictor.record_input(at);
    }

    /// The idle time left from `now`: the rest of the window in progress,
    /// else a new window if the predictor offers one.
    pub fn window(&mut self, now: SystemTime) -> Option<IdleWindow> {
        if let Some(left) = self.window_end.and_then(|end| end.duration_since(now).ok()).filter(|d| !d.is_zero()) {
            return Some(IdleWindow { left, fresh: false });
        }
        let window = self.predictor.predict(now)?;
        self.window_end = Some(now + window);
        self.score.predictions += 1;
        self.score.predicted_ns += u64::try_from(window.as_nanos()).unwrap_or(u64::MAX);
        Some(IdleWindow { left: window, fresh: true })
    }

    pub fn score(&self) -> PredictionScore {
        self.score
    }
}

/// How long after an input `evaluate` keeps asking: a user idle for longer
/// has put the phone away (screen off), and a trace with hours between two
/// inputs must not cost hours of polls.
pub const EVALUATION_HORIZON: Duration = Duration::from_secs(600);

/// Scores `predictor` on input times (in order), asking for a window right
/// after each input and every `poll` in between, as a background thread
/// waking every `poll` would — up to `EVALUATION_HORIZON` after the input. An
/// offered window is not asked about again before it ends.
pub fn evaluate(
    predictor: Box<dyn IntervalPredictor + Send>,
    inputs: &[SystemTime],
    poll: Duration,
) -> PredictionScore {
    let mut scored = ScoredPredictor::new(predictor);
    let poll = poll.max(Duration::from_millis(1));
    for (i, at) in inputs.iter().enumerate() {
        scored.input(*at);
        let Some(next) = inputs.get(i + 1) else { break };
        let stop = (*next).min(*at + EVALUATION_HORIZON);
        let mut now = *at;
        while now < stop {
            now += match scored.window(now) {
                Some(w) if w.left > poll => w.left,
                // Nothing more to offer before the next input: the polls
                // until then would change nothing.
                None if scored.predictor.silent_until_input(now) => break,
                _ => poll,
            };
        }
    }
    scored.score()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::interval::{LastAverage, LastMin, StateMachine};
    use std::time::UNIX_EPOCH;

    fn t(ms: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_000) + Duration::from_millis(ms)
    }

    #[test]
    fn a_window_counts_once_and_every_input_inside_it_conflicts() {
        // LMM with k = 2 after inputs at 0 and 1000 ms predicts 1 s windows.
        let mut p = ScoredPredictor::new(Box::new(LastMin::new(2)));
        p.input(t(0));
        p.input(t(1000));
        assert_eq!(p.window(t(1000)), Some(IdleWindow { left: Duration::from_millis(1000), fresh: true }));
        let same = IdleWindow { left: Duration::from_millis(500), fresh: false };
        assert_eq!(p.window(t(1500)), Some(same), "the same window, not a new one");
        p.input(t(1700));
        p.input(t(1800));
        let s = p.score();
        assert_eq!((s.predictions, s.conflicts, s.operations), (1, 2, 4));
        assert_eq!(s.predicted_ns, 1_000_000_000);
        assert_eq!(s.conflicts_per_prediction(), 2.0);
    }

    #[test]
    fn burst_events_are_one_operation_and_a_late_input_is_no_conflict() {
        let mut p = ScoredPredictor::new(Box::new(LastMin::new(2)));
        for at in [0, 10, 20, 1000] {
            p.input(t(at));
        }
        assert_eq!(p.score().operations, 2, "0, 10 and 20 ms are one drag");
        assert!(p.window(t(1000)).is_some_and(|w| w.left == Duration::from_millis(1000)));
        p.input(t(2000));
        assert_eq!(p.score().conflicts, 0, "the window ended at 2000 ms");
    }

    #[test]
    fn evaluate_ranks_the_baselines_as_the_paper_does() {
        // Alternating 0.5 s and 6 s gaps: LMM predicts short windows and
        // rarely conflicts; LAM predicts long ones and conflicts more.
        let mut inputs = vec![t(0)];
        for i in 0..40u64 {
            let gap = if i % 4 == 3 { 6_000 } else { 500 };
            inputs.push(*inputs.last().unwrap() + Duration::from_millis(gap));
        }
        let poll = Duration::from_millis(100);
        let lmm = evaluate(Box::new(LastMin::new(8)), &inputs, poll);
        let lam = evaluate(Box::new(LastAverage::new(8)), &inputs, poll);
        let sm = evaluate(Box::new(StateMachine::default()), &inputs, poll);
        assert!(lmm.conflicts_per_prediction() < lam.conflicts_per_prediction(), "{lmm:?} vs {lam:?}");
        assert!(lmm.mean_predicted_seconds() < lam.mean_predicted_seconds());
        assert!(sm.mean_predicted_seconds() > lmm.mean_predicted_seconds(), "{sm:?} vs {lmm:?}");
        assert_eq!(lmm.operations, 41);
    }
}
