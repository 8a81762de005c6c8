//! User-idle interval prediction (MobiFS §5.3, Figure 4): from the times of
//! user inputs, predict how long the user will stay idle from now on, so that
//! checkpoints run while nobody touches the phone. An input that arrives
//! inside a predicted idle interval is a responsive conflict (RC).
//!
//! Three predictors behind `IntervalPredictor`: the paper's four-state
//! machine and its two baselines, last-min (LMM) and last-average (LAM).
//! `BurstFilter` merges the event bursts of one gesture (a drag) into one
//! operation (§6.1); predictors expect operations, already merged.
//!
//! The engine asks the predictor named by `idle_predictor` in the config
//! before it checkpoints (see `checkpoint`); `prediction_score` scores a
//! predictor the way §7.4 does. Invariant of every predictor: its answer
//! depends only on the inputs fed and the `now` asked, never on wall time.

use std::collections::VecDeque;
use std::time::{Duration, SystemTime};

/// Names accepted by `idle_predictor` in the config; `none` checkpoints
/// without waiting for idle time.
pub const PREDICTOR_NAMES: &[&str] = &["none", "state-machine", "last-min", "last-average"];

/// History length of the LMM and LAM baselines (the paper's k is not given;
/// the same as the state machine's short history).
pub const BASELINE_K: usize = 8;

/// A fresh predictor registered under `name`; `None` for `none` and for
/// unknown names (`Config::validate` rejects those).
pub fn by_name(name: &str) -> Option<Box<dyn IntervalPredictor + Send>> {
    match name {
        "state-machine" => Some(Box::new(StateMachine::default())),
        "last-min" => Some(Box::new(LastMin::new(BASELINE_K))),
        "last-average" => Some(Box::new(LastAverage::new(BASELINE_K))),
        _ => None,
    }
}

/// Predicts user-idle intervals from user-input times.
pub trait IntervalPredictor {
    /// A user operation happened at `at` (times are expected in order; an
    /// earlier one counts as a zero interval).
    fn record_input(&mut self, at: SystemTime);

    /// The idle interval predicted to start now and how long it lasts;
    /// `None` when the user is expected to act any moment.
    fn predict(&mut self, now: SystemTime) -> Option<Duration>;

    /// True if `predict` answers `None` at `now` and at every later time
    /// until the next input, so a scorer may stop asking; false if it
    /// cannot tell (the default).
    fn silent_until_input(&self, _now: SystemTime) -> bool {
        false
    }
}

/// The last `k` intervals between operations, oldest first.
#[derive(Clone, Debug)]
pub struct IntervalHistory {
    k: usize,
    intervals: VecDeque<Duration>,
    /// The shortest of `intervals`, found at each push: a predictor asks
    /// for it several times per prediction, and predictions far outnumber
    /// inputs (`prediction_score::evaluate` asks at every poll between two).
    min: Option<Duration>,
}

impl IntervalHistory {
    /// `k` is clamped to at least 1.
    pub fn new(k: usize) -> Self {
        IntervalHistory { k: k.max(1), intervals: VecDeque::new(), min: None }
    }

    pub fn push(&mut self, interval: Duration) {
        if self.intervals.len() == self.k {
            self.intervals.pop_front();
        }
        self.intervals.push_back(interval);
        self.min = self.intervals.iter().min().copied();
    }

    pub fn min(&self) -> Option<Duration> {
        self.min
    }

    pub fn mean(&self) -> Option<Duration> {
        let n = u32::try_from(self.intervals.len()).ok().filter(|n| *n > 0)?;
        Some(self.intervals.iter().sum::<Duration>() / n)
    }
}

/// Time from `earlier` to `later`, zero if the clock went back.
fn since(later: SystemTime, earlier: SystemTime) -> Duration {
    later.duration_since(earlier).unwrap_or_default()
}

/// Shared body of the two baselines: the next interval is a statistic of the
/// last `k` ones; the idle interval left is that minus the time already idle.
#[derive(Clone, Debug)]
struct HistoryPredictor {
    history: IntervalHistory,
    last_input: Option<SystemTime>,
}

impl HistoryPredictor {
    fn new(k: usize) -> Self {
        HistoryPredictor { history: IntervalHistory::new(k), last_input: None }
    }

    fn record_input(&mut self, at: SystemTime) {
        if let Some(last) = self.last_input {
            self.history.push(since(at, last));
        }
        self.last_input = Some(at);
    }

    fn remaining(&self, now: SystemTime, predicted: Option<Duration>) -> Option<Duration> {
        let left = predicted?.checked_sub(since(now, self.last_input?))?;
        (!left.is_zero()).then_some(left)
    }
}

/// Last-min model: the next interval is the shortest of the last `k`.
#[derive(Clone, Debug)]
pub struct LastMin(HistoryPredictor);

impl LastMin {
    pub fn new(k: usize) -> Self {
        LastMin(HistoryPredictor::new(k))
    }
}

impl IntervalPredictor for LastMin {
    fn record_input(&mut self, at: SystemTime) {
        self.0.record_input(at);
    }

    fn predict(&mut self, now: SystemTime) -> Option<Duration> {
        self.0.remaining(now, self.0.history.min())
    }

    /// The time idle only grows until the next input: once no interval is
    /// left, none comes back.
    fn silent_until_input(&self, now: SystemTime) -> bool {
        self.0.remaining(now, self.0.history.min()).is_none()
    }
}

/// Last-average model: the next interval is the mean of the last `k`.
#[derive(Clone, Debug)]
pub struct LastAverage(HistoryPredictor);

impl LastAverage {
    pub fn new(k: usize) -> Self {
        LastAverage(HistoryPredictor::new(k))
    }
}

impl IntervalPredictor for LastAverage {
    fn record_input(&mut self, at: SystemTime) {
        self.0.record_input(at);
    }

    fn predict(&mut self, now: SystemTime) -> Option<Duration> {
        self.0.remaining(now, self.0.history.mean())
    }

    /// As `LastMin`'s.
    fn silent_until_input(&self, now: SystemTime) -> bool {
        self.0.remaining(now, self.0.history.mean()).is_none()
    }
}

/// States of Figure 4.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// The user operates with short intervals; no idle interval is predicted.
    Short,
    /// The idle time passed τ = m × ts: an idle interval of tl is predicted
    /// (measured from the last input).
    Long,
    /// A long interval ended before tl: Al took the shorter interval, so the
    /// prediction decreases. Behaves as `Short` until τ.
    Shorter,
    /// The idle time passed tl (event δ): the user stays idle longer than
    /// predicted; every further tl of idleness is offered again.
    Longer,
}

/// Parameters of the state machine (the paper gives none; see
/// docs/POLICIES.md for why these).
#[derive(Clone, Copy, Debug)]
pub struct StateMachineParams {
    /// History lengths of As and Al.
    pub k_short: usize,
    pub k_long: usize,
    /// τ fires when m × ts passes without input...
    pub m: u32,
    /// ...but never sooner than this: duplicate events would make ts zero and
    /// τ fire at once, opening a window in the middle of a gesture.
    pub min_tau: Duration,
    /// ts and tl before any interval of that kind was seen.
    pub initial_short: Duration,
    pub initial_long: Duration,
}

impl Default for StateMachineParams {
    fn default() -> Self {
        StateMachineParams {
            k_short: 8,
            k_long: 4,
            m: 2,
            min_tau: Duration::from_millis(100),
            initial_short: Duration::from_millis(500),
            initial_long: Duration::from_secs(5),
        }
    }
}

/// The four-state machine of MobiFS Figure 4. The two central states keep a
/// history of intervals (As, Al) and predict with its minimum (ts, tl).
/// Transitions (u: a user operation after interval i; τ: m × ts passed since
/// the last input; δ: tl passed since the last input):
///
/// | from            | event      | to      | update |
/// |-----------------|------------|---------|--------|
/// | Short / Shorter | u          | Short   | As += i |
/// | Short / Shorter | τ          | Long    | checkpoint window opens |
/// | Long            | u, i < τ   | Short   | As += i |
/// | Long            | u, i ≥ τ   | Shorter | Al += i |
/// | Long            | δ          | Longer  | checkpoint window renews |
/// | Longer          | u          | Long    | Al += i |
///
/// `u, i < τ` from Long happens only after Longer → Long on an input, when
/// the next input comes quickly.
#[derive(Clone, Debug)]
pub struct StateMachine {
    params: StateMachineParams,
    phase: Phase,
    short: IntervalHistory,
    long: IntervalHistory,
    last_input: Option<SystemTime>,
}

impl Default for StateMachine {
    fn default() -> Self {
        StateMachine::new(StateMachineParams::default())
    }
}

impl StateMachine {
    pub fn new(params: StateMachineParams) -> Self {
        StateMachine {
            params,
            phase: Phase::Short,
            short: IntervalHistory::new(params.k_short),
            long: IntervalHistory::new(params.k_long),
            last_input: None,
        }
    }

    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// ts: the shortest recent short interval.
    pub fn short_prediction(&self) -> Duration {
        self.short.min().unwrap_or(self.params.initial_short)
    }

    /// tl: the shortest recent long interval.
    pub fn long_prediction(&self) -> Duration {
        self.long.min().unwrap_or(self.params.initial_long)
    }

    /// τ, as a time since the last input.
    fn tau(&self) -> Duration {
        self.short_prediction().saturating_mul(self.params.m).max(self.params.min_tau)
    }

    /// Fires the timer events (τ, δ) due by `now`.
    fn advance(&mut self, now: SystemTime) {
        let Some(last) = self.last_input else { return };
        let idle = since(now, last);
        if matches!(self.phase, Phase::Short | Phase::Shorter) && idle >= self.tau() {
            self.phase = Phase::Long;
        }
        if self.phase == Phase::Long && idle >= self.long_prediction() && idle >= self.tau() {
            self.phase = Phase::Longer;
        }
    }
}

impl IntervalPredictor for StateMachine {
    fn record_input(&mut self, at: SystemTime) {
        // An input exactly at a timer's deadline counts as after it.
        self.advance(at);
        let Some(last) = self.last_input.replace(at) else { return };
        let interval = since(at, last);
        self.phase = match self.phase {
            Phase::Short | Phase::Shorter => {
                self.short.push(interval);
                Phase::Short
            }
            Phase::Long if interval < self.tau() => {
                self.short.push(interval);
                Phase::Short
            }
            Phase::Long => {
                self.long.push(interval);
                Phase::Shorter
            }
            Phase::Longer => {
                self.long.push(interval);
                Phase::Long
            }
        };
    }

    fn predict(&mut self, now: SystemTime) -> Option<Duration> {
        self.advance(now);
        let idle = since(now, self.last_input?);
        let tl = self.long_prediction();
        match self.phase {
            Phase::Short | Phase::Shorter => None,
            // Long after an input: no window until τ has passed, as a quick
            // next input would still mean short intervals.
            Phase::Long if idle < self.tau() => None,
            Phase::Long => tl.checked_sub(idle).filter(|d| !d.is_zero()),
            Phase::Longer if tl.is_zero() => None,
            Phase::Longer => {
                let into_window = Duration::from_nanos((idle.saturating_sub(tl).as_nanos() % tl.as_nanos()) as u64);
                Some(tl - into_window)
            }
        }
    }
}

/// Merges the events of one gesture: an event closer than `gap` to the
/// previous event continues the same operation (§6.1: a drag sends many
/// touch events a few milliseconds apart).
#[derive(Clone, Debug)]
pub struct BurstFilter {
    gap: Duration,
    last_event: Option<SystemTime>,
}

/// Default burst gap: touch panels report every 8–17 ms during a drag, while
/// two deliberate taps are at least ~100 ms apart.
pub const DEFAULT_BURST_GAP: Duration = Duration::from_millis(50);

impl BurstFilter {
    pub fn new(gap: Duration) -> Self {
        BurstFilter { gap, last_event: None }
    }

    /// Whether the event at `at` starts a new operation.
    pub fn starts_operation(&mut self, at: SystemTime) -> bool {
        let new = self.last_event.is_none_or(|last| since(at, last) >= self.gap);
        self.last_event = Some(at);
        new
    }
}

/// The start times of the operations in a list of event times (in order).
pub fn merge_bursts(events: &[SystemTime], gap: Duration) -> Vec<SystemTime> {
    let mut filter = BurstFilter::new(gap);
    events.iter().copied().filter(|t| filter.starts_operation(*t)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    fn t(ms: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_000_000) + Duration::from_millis(ms)
    }

    #[test]
    fn a_silent_baseline_offers_nothing_until_the_next_input() {
        use rand::{Rng, SeedableRng};
        let seed: u64 = std::env::var("MCFS_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x1d1e);
        eprintln!("silent baselines: seed {seed} (set MCFS_SEED to repeat)");
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut silences = 0;
        let baselines: [Box<dyn IntervalPredictor>; 2] = [Box::new(LastMin::new(3)), Box::new(LastAverage::new(3))];
        for mut p in baselines {
            let mut at = 0;
            for _ in 0..200 {
                p.record_input(t(at));
                let next = at + rng.gen_range(1..20_000);
                let mut silent = false;
                for now in (at..next).step_by(50) {
                    silent |= p.silent_until_input(t(now));
                    silences += u32::from(silent);
                    assert!(!silent || p.predict(t(now)).is_none(), "seed {seed}: offered a window at {now} ms");
                }
                at = next;
            }
        }
        assert!(silences > 0, "seed {seed}: never silent");
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// A machine with defaults (ts₀ = 500 ms, m = 2, tl₀ = 5 s) that saw
    /// inputs at 0 and 300 ms: Short, ts = 300 ms, τ = 600 ms.
    fn warmed() -> StateMachine {
        let mut sm = StateMachine::default();
        assert_eq!(sm.predict(t(0)), None, "no input yet");
        sm.record_input(t(0));
        assert_eq!(sm.phase(), Phase::Short);
        sm.record_input(t(300));
        assert_eq!(sm.phase(), Phase::Short, "Short --u--> Short");
        assert_eq!(sm.short_prediction(), ms(300), "As took the interval");
        sm
    }

    #[test]
    fn short_loops_on_input_and_tau_opens_a_long_window() {
        let mut sm = warmed();
        assert_eq!(sm.predict(t(899)), None, "just before τ");
        assert_eq!(sm.phase(), Phase::Short);
        assert_eq!(sm.predict(t(900)), Some(ms(4400)), "τ: tl₀ − 600 ms idle");
        assert_eq!(sm.phase(), Phase::Long, "Short --τ--> Long");
        assert_eq!(sm.predict(t(2300)), Some(ms(3000)), "the window shrinks as time passes");
    }

    #[test]
    fn a_long_interval_shorter_than_tl_decreases_the_prediction() {
        let mut sm = warmed();
        sm.record_input(t(2300));
        assert_eq!(sm.phase(), Phase::Shorter, "Long --u, i ≥ τ--> Shorter");
        assert_eq!(sm.long_prediction(), ms(2000), "Al took 2 s");
        assert_eq!(sm.predict(t(2800)), None, "Shorter predicts nothing before τ");
        assert_eq!(sm.predict(t(2900)), Some(ms(1400)), "τ: tl − 600 ms");
        assert_eq!(sm.phase(), Phase::Long, "Shorter --τ--> Long");
    }

    #[test]
    fn a_quick_input_after_shorter_returns_to_short() {
        let mut sm = warmed();
        sm.record_input(t(2300));
        assert_eq!(sm.phase(), Phase::Shorter);
        sm.record_input(t(2400));
        assert_eq!(sm.phase(), Phase::Short, "Shorter --u--> Short");
        assert_eq!(sm.short_prediction(), ms(100), "As took 100 ms");
        assert_eq!(sm.long_prediction(), ms(2000), "Al untouched");
    }

    #[test]
    fn outlasting_tl_enters_longer_and_renews_the_window() {
        let mut sm = warmed();
        assert_eq!(sm.predict(t(5299)), Some(ms(1)));
        assert_eq!(sm.phase(), Phase::Long);
        assert_eq!(sm.predict(t(5300)), Some(ms(5000)), "δ: another tl is offered");
        assert_eq!(sm.phase(), Phase::Longer, "Long --δ--> Longer");
        assert_eq!(sm.predict(t(6300)), Some(ms(4000)));
        assert_eq!(sm.predict(t(11300)), Some(ms(4000)), "the window repeats every tl");
        sm.record_input(t(8300));
        assert_eq!(sm.phase(), Phase::Long, "Longer --u--> Long");
        assert_eq!(sm.long_prediction(), ms(8000), "Al took 8 s: tl increases");
    }

    #[test]
    fn long_after_an_input_waits_for_tau_then_goes_short_or_longer() {
        let mut sm = warmed();
        sm.predict(t(5300));
        sm.record_input(t(8300));
        assert_eq!(sm.phase(), Phase::Long);
        assert_eq!(sm.predict(t(8899)), None, "no window before τ");
        assert_eq!(sm.predict(t(8900)), Some(ms(7400)), "τ passed: tl − 600 ms");
        assert_eq!(sm.predict(t(16300)), Some(ms(8000)), "δ after tl = 8 s");
        assert_eq!(sm.phase(), Phase::Longer, "Long --δ--> Longer");

        let mut sm = warmed();
        sm.predict(t(5300));
        sm.record_input(t(8300));
        sm.record_input(t(8500));
        assert_eq!(sm.phase(), Phase::Short, "Long --u, i < τ--> Short");
        assert_eq!(sm.short_prediction(), ms(200));
        assert_eq!(sm.long_prediction(), ms(8000));
    }

    #[test]
    fn histories_keep_the_last_k_and_the_clock_may_step_back() {
        let params = StateMachineParams { k_short: 2, ..StateMachineParams::default() };
        let mut sm = StateMachine::new(params);
        for at in [0, 400, 1000, 1500] {
            sm.record_input(t(at));
            assert_eq!(sm.phase(), Phase::Short, "each interval is below τ = 2 × ts");
        }
        assert_eq!(sm.short_prediction(), ms(500), "400 ms fell out of a history of 2");
        sm.record_input(t(700));
        assert_eq!(sm.short_prediction(), Duration::ZERO, "an earlier input is a zero interval");
        assert_eq!(sm.predict(t(0)), None, "the clock went back: no idle time");
        assert_eq!(sm.predict(t(799)), None, "τ is at least min_tau = 100 ms");
        assert_eq!(sm.predict(t(800)), Some(ms(4900)));
    }

    #[test]
    fn last_min_and_last_average() {
        let mut lmm = LastMin::new(3);
        let mut lam = LastAverage::new(3);
        for p in [&mut lmm as &mut dyn IntervalPredictor, &mut lam] {
            assert_eq!(p.predict(t(0)), None, "no input");
            p.record_input(t(0));
            assert_eq!(p.predict(t(0)), None, "no interval yet");
            for at in [1000, 3000, 4000] {
                p.record_input(t(at));
            }
        }
        // Intervals 1 s, 2 s, 1 s.
        assert_eq!(lmm.predict(t(4000)), Some(ms(1000)));
        assert_eq!(lmm.predict(t(4400)), Some(ms(600)));
        assert_eq!(lmm.predict(t(5000)), None, "the predicted interval is over");
        assert_eq!(lam.predict(t(4000)), Some(Duration::from_nanos(1_333_333_333)));
        assert_eq!(lam.predict(t(5000)), Some(Duration::from_nanos(333_333_333)));
        assert_eq!(lam.predict(t(5400)), None);
        let mut lmm = LastMin::new(2);
        for at in [0, 500, 3500, 5500] {
            lmm.record_input(t(at));
        }
        assert_eq!(lmm.predict(t(5500)), Some(ms(2000)), "500 ms fell out of a history of 2");
    }

    #[test]
    fn bursts_merge_into_operations() {
        let events: Vec<SystemTime> = [0, 10, 20, 30, 500, 1000, 1040, 1080, 1130, 2000].into_iter().map(t).collect();
        assert_eq!(merge_bursts(&events, ms(50)), vec![t(0), t(500), t(1000), t(1130), t(2000)]);
        assert_eq!(merge_bursts(&events, Duration::ZERO).len(), events.len(), "no gap: every event counts");
        assert_eq!(merge_bursts(&[], ms(50)), vec![]);
        let mut f = BurstFilter::new(DEFAULT_BURST_GAP);
        assert!(f.starts_operation(t(100)));
        assert!(!f.starts_operation(t(60)), "an event from the past continues the burst");
    }
}
