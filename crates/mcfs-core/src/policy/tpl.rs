//! Tradeoff-point location (MobiFS §5.2): close the open VCT at the peak of
//! its e curve, e = o / s (overwritten bytes over written bytes).
//!
//! A point (s, e) is sampled each time the VCT's staleness passes another
//! `step` bytes (not at every write: per-write swings of e — a fresh journal
//! page, then an overwritten database page — would otherwise read as peaks
//! while s is small, and how the kernel cuts writes would change the curve).
//! The last `window` points are fitted with a least-squares line; once a fitted slope
//! has been rising, a fitted slope that is falling marks the peak and the VCT
//! closes. A fit only counts as rising (falling) when its slope is above
//! `flat_per_mib` (below minus it), so noise around a plateau decides
//! nothing. The staleness and time limits bound the wait for a peak that
//! never comes. Invariant: the samples always belong to the VCT whose id was
//! last seen; a new id (the VCT closed, for any reason) starts a new curve at
//! e = 0.

use super::{Limits, TransactionPolicy};
use crate::vct::OpenVct;
use std::collections::VecDeque;
use std::time::SystemTime;

/// Points fitted by default: enough to smooth jitter in e, few enough to
/// react within half a MiB of writes (the paper leaves k open).
pub const DEFAULT_WINDOW: usize = 8;
/// Staleness between two sampled points by default: 16 pages, so the
/// default window spans 512 KiB (Figure 1's curves change over MiBs).
pub const DEFAULT_STEP: u64 = 64 * 1024;
/// Default dead band of the slope, in e per MiB of staleness: e changing by
/// less than 0.01 per MiB written counts as flat.
pub const DEFAULT_FLAT_PER_MIB: f64 = 0.01;

const MIB: f64 = (1u64 << 20) as f64;

pub struct TradeoffPointLocation {
    window: usize,
    flat_per_mib: f64,
    step: u64,
    /// Staleness at which the next point is sampled.
    next_sample_at: u64,
    vct_id: Option<u64>,
    /// (s in MiB, e) of the current VCT, oldest first, at most `window`.
    points: VecDeque<(f64, f64)>,
    /// A full window has fitted a rising line since the VCT opened.
    seen_rising: bool,
}

impl Default for TradeoffPointLocation {
    fn default() -> Self {
        TradeoffPointLocation::new(DEFAULT_WINDOW, DEFAULT_FLAT_PER_MIB, DEFAULT_STEP)
    }
}

impl TradeoffPointLocation {
    /// `window` is clamped to at least 2 points (a line needs two), `step`
    /// to at least one byte.
    pub fn new(window: usize, flat_per_mib: f64, step: u64) -> Self {
        let window = window.max(2);
        let step = step.max(1);
        TradeoffPointLocation {
            window,
            flat_per_mib: flat_per_mib.abs(),
            step,
            next_sample_at: step,
            vct_id: None,
            points: VecDeque::with_capacity(window),
            seen_rising: false,
        }
    }

    /// Adds the VCT's current point; false if it is not a new point.
    fn sample(&mut self, vct: &OpenVct) -> bool {
        if self.vct_id != Some(vct.id) {
            self.vct_id = Some(vct.id);
            self.points.clear();
            self.seen_rising = false;
            self.next_sample_at = self.step;
        }
        // Ticks without writes add nothing: s has not passed the next step.
        if vct.bytes < self.next_sample_at {
            return false;
        }
        self.next_sample_at = (vct.bytes / self.step + 1) * self.step;
        let s = vct.bytes as f64 / MIB;
        let e = vct.overwrite_bytes as f64 / vct.bytes as f64;
        if self.points.len() == self.window {
            self.points.pop_front();
        }
        self.points.push_back((s, e));
        true
    }

    /// Whether the e curve just turned from rising to falling.
    fn at_peak(&mut self) -> bool {
        if self.points.len() < self.window {
            return false;
        }
        let Some(slope) = least_squares_slope(&self.points) else { return false };
        if slope > self.flat_per_mib {
            self.seen_rising = true;
        }
        self.seen_rising && slope < -self.flat_per_mib
    }
}

impl TransactionPolicy for TradeoffPointLocation {
    fn should_close(&mut self, vct: &OpenVct, limits: &Limits, now: SystemTime) -> bool {
        let peak = self.sample(vct) && self.at_peak();
        peak || limits.reached(vct, now)
    }

    /// An empty VCT adds no point and reaches no limit; the reset a new
    /// VCT's id brings (`sample`) comes with the first ask after it all the
    /// same.
    fn heeds_empty_vcts(&self) -> bool {
        false
    }
}

/// Slope of the least-squares line through `points`; `None` when all x are
/// equal (no line).
fn least_squares_slope(points: &VecDeque<(f64, f64)>) -> Option<f64> {
    let n = points.len() as f64;
    let mean_x = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_y = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxy: f64 = points.iter().map(|(x, y)| (x - mean_x) * (y - mean_y)).sum();
    let sxx: f64 = points.iter().map(|(x, _)| (x - mean_x) * (x - mean_x)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    const PAGE: u64 = 4096;

    fn t0() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1000)
    }

    /// A point per page written, so hand-built page patterns are curves.
    fn per_page() -> TradeoffPointLocation {
        TradeoffPointLocation::new(DEFAULT_WINDOW, DEFAULT_FLAT_PER_MIB, PAGE)
    }

    fn roomy() -> Limits {
        Limits { max_stale_bytes: 1 << 40, max_stale: Duration::from_secs(3600) }
    }

    /// Writes one page, new (`fresh`) or an overwrite, and asks the policy.
    fn write(p: &mut TradeoffPointLocation, v: &mut OpenVct, page: u64, limits: &Limits) -> bool {
        v.record_write(1, page, PAGE, t0());
        p.should_close(v, limits, t0())
    }

    /// Page pattern whose e rises (rewrites of page 0) and then falls (fresh
    /// pages). Returns the write index at which the policy closed.
    fn close_point(p: &mut TradeoffPointLocation, rising: u64, falling: u64) -> Option<u64> {
        let mut v = OpenVct::new(7);
        let pages = std::iter::repeat_n(0, rising as usize).chain(1..=falling);
        for (i, page) in pages.enumerate() {
            if write(p, &mut v, page, &roomy()) {
                return Some(i as u64);
            }
        }
        None
    }

    /// Like `close_point`, but the rising part rewrites 16 hot pages in turn.
    fn close_point_with(p: &mut TradeoffPointLocation, rising: u64, falling: u64) -> Option<u64> {
        let mut v = OpenVct::new(8);
        let pages = (0..rising).map(|i| i % 16).chain(100..100 + falling);
        for (i, page) in pages.enumerate() {
            if write(p, &mut v, page, &roomy()) {
                return Some(i as u64);
            }
        }
        None
    }

    #[test]
    fn slope_of_a_line_is_its_gradient() {
        let pts: VecDeque<(f64, f64)> = (0..5).map(|i| (i as f64, 0.5 - 0.25 * i as f64)).collect();
        let slope = least_squares_slope(&pts).unwrap();
        assert!((slope + 0.25).abs() < 1e-12, "slope {slope}");
        let vertical: VecDeque<(f64, f64)> = (0..5).map(|i| (1.0, i as f64)).collect();
        assert_eq!(least_squares_slope(&vertical), None);
    }

    #[test]
    fn closes_soon_after_the_peak_and_not_before() {
        let mut p = per_page();
        // 40 rewrites of one page: e climbs to 39/40; then fresh pages make it fall.
        let at = close_point(&mut p, 40, 40).expect("a peak must close the VCT");
        assert!(at >= 40, "closed at write {at}, before the peak at 40");
        assert!(at < 40 + DEFAULT_WINDOW as u64, "closed at write {at}, too long after the peak");
    }

    #[test]
    fn a_curve_that_only_rises_or_stays_flat_waits_for_the_limits() {
        let mut p = per_page();
        assert_eq!(close_point(&mut p, 200, 0), None, "rising only");
        let mut p = per_page();
        assert_eq!(close_point(&mut p, 0, 200), None, "no overwrite at all: e stays 0");
        let limits = Limits { max_stale_bytes: 10 * PAGE, max_stale: Duration::from_secs(3600) };
        let mut v = OpenVct::new(1);
        let closed_at = (0..20).position(|page| write(&mut p, &mut v, page, &limits));
        assert_eq!(closed_at, Some(9), "the byte limit closes at 10 pages");
        let mut v = OpenVct::new(2);
        v.record_write(1, 0, PAGE, t0());
        assert!(!p.should_close(&v, &roomy(), t0() + Duration::from_secs(3599)));
        assert!(p.should_close(&v, &roomy(), t0() + Duration::from_secs(3600)), "the time limit closes");
    }

    #[test]
    fn falling_without_a_rise_first_is_not_a_peak() {
        // e jumps to 1/2 on the second write, then only falls: the window
        // never sees a rise, so there is no turn to act on.
        let mut p = per_page();
        assert_eq!(close_point(&mut p, 2, 100), None);
    }

    #[test]
    fn jitter_inside_the_dead_band_decides_nothing() {
        // A plateau at e = 1/2 with a wiggle of 0.0002, one point per 0.1 MiB:
        // its fitted slopes stay far inside the default band.
        let plateau = |i: usize| (i as f64 * 0.1, 0.5 + if i.is_multiple_of(2) { 0.0002 } else { -0.0002 });
        for (flat, closes) in [(DEFAULT_FLAT_PER_MIB, false), (0.0, true)] {
            let mut p = TradeoffPointLocation::new(DEFAULT_WINDOW, flat, PAGE);
            p.seen_rising = true;
            let mut closed = false;
            for i in 0..100 {
                if p.points.len() == p.window {
                    p.points.pop_front();
                }
                p.points.push_back(plateau(i));
                closed |= p.at_peak();
            }
            assert_eq!(closed, closes, "dead band {flat}");
        }
    }

    #[test]
    fn ticks_without_writes_add_no_points() {
        let mut p = per_page();
        let mut v = OpenVct::new(5);
        for _ in 0..40 {
            write(&mut p, &mut v, 0, &roomy());
        }
        for _ in 0..100 {
            assert!(!p.should_close(&v, &roomy(), t0()), "a repeated point must not turn the curve");
        }
        assert_eq!(p.points.len(), DEFAULT_WINDOW);
    }

    #[test]
    fn a_new_vct_starts_a_new_curve() {
        let mut p = per_page();
        let mut v = OpenVct::new(9);
        for _ in 0..40 {
            write(&mut p, &mut v, 0, &roomy());
        }
        assert!(p.seen_rising);
        // The engine closed the VCT for another reason; the rise belongs to the old one.
        let mut next = OpenVct::new(10);
        for page in 1..=100 {
            assert!(!write(&mut p, &mut next, page, &roomy()));
        }
        assert!(!p.seen_rising);
    }

    #[test]
    fn with_the_default_step_per_write_swings_are_no_peak_but_a_mib_scale_one_is() {
        // SQLite-like: a fresh journal page, then an overwritten database
        // page, again and again: e swings every write and settles near 1/2.
        let mut p = TradeoffPointLocation::default();
        let mut v = OpenVct::new(3);
        let mut journal = 1_000;
        for i in 0..2_000u64 {
            let page = if i % 2 == 0 { journal } else { i % 8 };
            journal += u64::from(i % 2 == 0);
            assert!(!write(&mut p, &mut v, page, &roomy()), "closed on a swing at write {i}");
        }
        // 2 MiB of rewrites of 16 pages (e rises), then fresh pages (e falls).
        let mut p = TradeoffPointLocation::default();
        let at = close_point_with(&mut p, 512, 2_000).expect("the MiB-scale peak closes the VCT");
        assert!(at >= 512, "closed at write {at}, before the peak");
        assert!(at < 512 + 8 * 16 + 16, "closed at write {at}: more than a window after the peak");
    }

    #[test]
    fn the_window_is_at_least_a_line() {
        let p = TradeoffPointLocation::new(0, -1.0, 0);
        assert_eq!(p.window, 2);
        assert_eq!(p.step, 1);
        assert_eq!(p.flat_per_mib, 1.0);
    }

    /// Asked about each new VCT while it is empty or not, the policy
    /// closes at the same writes: it need not be asked about an app that
    /// holds no entry (`heeds_empty_vcts`).
    #[test]
    fn asks_about_empty_vcts_change_no_later_answer() {
        let run = |ask_empty: bool| {
            let mut p = per_page();
            let mut answers = Vec::new();
            for id in 1..=3 {
                let mut v = OpenVct::new(id);
                if ask_empty {
                    assert!(!p.should_close(&v, &roomy(), t0()), "an empty VCT never closes");
                }
                for page in std::iter::repeat_n(0, 40).chain(1..=40) {
                    answers.push(write(&mut p, &mut v, page, &roomy()));
                }
            }
            answers
        };
        assert!(!per_page().heeds_empty_vcts());
        let answers = run(false);
        assert!(answers.contains(&true), "the pattern closes somewhere");
        assert_eq!(run(true), answers);
    }
}
