//! The summary statistics the MobiFS study quotes, on plain numbers: geometric mean (of ratios across
//! apps, §7.3 and §7.5), spread (largest over smallest, the "21.7× variance" of §7.3), arithmetic mean
//! ("on average", §7.4) and reduction (1 − new / old).
//!
//! Invariant: a statistic that is undefined on its input (no values, a non-positive value where a log or
//! a division needs a positive one, or a non-finite value) is `None`, never NaN or infinity, so a table
//! shows "–" instead of a number that means nothing.

/// The geometric mean of positive, finite values.
pub fn geometric_mean(values: &[f64]) -> Option<f64> {
    if values.is_empty() || values.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
        return None;
    }
    let mean_log = values.iter().map(|v| v.ln()).sum::<f64>() / values.len() as f64;
    Some(mean_log.exp())
}

/// The arithmetic mean of finite values.
pub fn mean(values: &[f64]) -> Option<f64> {
    if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    Some(values.iter().sum::<f64>() / values.len() as f64)
}

/// Largest over smallest of positive, finite values (1 for a single value).
pub fn spread(values: &[f64]) -> Option<f64> {
    if values.is_empty() || values.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
        return None;
    }
    let max = values.iter().copied().fold(f64::MIN, f64::max);
    let min = values.iter().copied().fold(f64::MAX, f64::min);
    Some(max / min)
}

/// `new / old`, for a positive `old` and finite values.
pub fn ratio(new: f64, old: f64) -> Option<f64> {
    (old > 0.0 && old.is_finite() && new.is_finite()).then(|| new / old)
}

/// The share `new` saves against `old`: 1 − new / old (negative when `new` is larger).
pub fn reduction(new: f64, old: f64) -> Option<f64> {
    ratio(new, old).map(|r| 1.0 - r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-9)
    }

    #[test]
    fn geometric_mean_of_hand_made_ratios() {
        assert!(close(geometric_mean(&[2.0, 8.0]), 4.0));
        assert!(close(geometric_mean(&[1.0, 10.0, 100.0]), 10.0));
        assert!(close(geometric_mean(&[0.47]), 0.47));
        // The geometric mean of ratios is the reciprocal of that of the inverse ratios.
        let r = [0.25, 0.5, 0.8, 0.3];
        let inv: Vec<f64> = r.iter().map(|x| 1.0 / x).collect();
        assert!(close(geometric_mean(&r).map(|g| 1.0 / g), geometric_mean(&inv).unwrap()));
        assert_eq!(geometric_mean(&[]), None);
        assert_eq!(geometric_mean(&[1.0, 0.0]), None);
        assert_eq!(geometric_mean(&[1.0, -2.0]), None);
        assert_eq!(geometric_mean(&[1.0, f64::NAN]), None);
        assert_eq!(geometric_mean(&[1.0, f64::INFINITY]), None);
    }

    #[test]
    fn spread_is_largest_over_smallest() {
        assert!(close(spread(&[3.0, 65.1, 10.0]), 21.7));
        assert!(close(spread(&[7.0]), 1.0));
        assert_eq!(spread(&[]), None);
        assert_eq!(spread(&[0.0, 4.0]), None);
    }

    #[test]
    fn mean_ratio_and_reduction() {
        assert!(close(mean(&[0.26, 1.18, 0.54]), (0.26 + 1.18 + 0.54) / 3.0));
        assert_eq!(mean(&[]), None);
        assert!(close(ratio(47.0, 100.0), 0.47));
        assert!(close(reduction(47.0, 100.0), 0.53));
        assert!(close(reduction(150.0, 100.0), -0.5), "more than before is a negative reduction");
        assert_eq!(ratio(1.0, 0.0), None);
        assert_eq!(reduction(1.0, f64::NAN), None);
    }
}
