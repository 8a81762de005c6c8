//! `--repeat N`: one value per metric from N runs of a cell — the median,
//! with the spread (min–max) and how many runs gave a value beside it.
//!
//! Invariant: a summary exists only for at least one finite value, and
//! `min <= median <= max` always holds; runs that failed contribute nothing
//! (they are listed as errors, not averaged in as zeros).

use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Summary {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// Runs that produced this value.
    pub n: usize,
}

/// Median (the mean of the two middle values for an even count), min and
/// max of the finite values; None when there are none.
pub fn summarize(values: &[f64]) -> Option<Summary> {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if sorted.is_empty() {
        return None;
    }
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let median = if n % 2 == 1 { sorted[n / 2] } else { (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0 };
    Some(Summary { median, min: sorted[0], max: sorted[n - 1], n })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_counts_take_the_middle_value() {
        let s = summarize(&[9.0, 1.0, 5.0]).unwrap();
        assert_eq!(s, Summary { median: 5.0, min: 1.0, max: 9.0, n: 3 });
    }

    #[test]
    fn even_counts_average_the_two_middle_values() {
        let s = summarize(&[4.0, 1.0, 3.0, 100.0]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.n), (3.5, 1.0, 100.0, 4));
    }

    #[test]
    fn one_value_is_its_own_spread() {
        let s = summarize(&[2.5]).unwrap();
        assert_eq!((s.median, s.min, s.max), (2.5, 2.5, 2.5));
        assert_eq!(s.n, 1);
    }

    #[test]
    fn nothing_finite_gives_no_summary() {
        assert_eq!(summarize(&[]), None);
        assert_eq!(summarize(&[f64::NAN, f64::INFINITY]), None);
        let s = summarize(&[f64::NAN, 7.0]).unwrap();
        assert_eq!((s.median, s.n), (7.0, 1));
        assert_eq!(summarize(&[0.0]).unwrap().median, 0.0);
    }
}
