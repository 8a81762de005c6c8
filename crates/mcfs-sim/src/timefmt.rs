//! Exact decimal time: nanosecond counts written as `SECONDS.NNNNNNNNN` and parsed back without floats.
//!
//! Invariant: `parse_decimal(&format_seconds(ns), NANOS_PER_SECOND) == Ok(ns)` for every `u64` `ns`; parsing
//! checks overflow instead of wrapping.

pub const NANOS_PER_SECOND: u64 = 1_000_000_000;

/// `ns` as seconds with exactly nine fractional digits.
pub fn format_seconds(ns: u64) -> String {
    format!("{}.{:09}", ns / NANOS_PER_SECOND, ns % NANOS_PER_SECOND)
}

/// Parses a non-negative decimal `INT[.FRAC]` counted in units of `unit_ns` nanoseconds into nanoseconds.
/// Fraction digits finer than a nanosecond are dropped (truncated).
pub fn parse_decimal(text: &str, unit_ns: u64) -> Result<u64, String> {
    parse_decimal_exact(text, unit_ns).map(|(ns, _)| ns)
}

/// As [`parse_decimal`], and whether truncation dropped anything (the text is finer than a nanosecond).
pub fn parse_decimal_exact(text: &str, unit_ns: u64) -> Result<(u64, bool), String> {
    let (int_part, frac_part) = match text.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (text, None),
    };
    let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !all_digits(int_part) || frac_part.is_some_and(|f| !all_digits(f)) {
        return Err(format!("'{text}' is not a non-negative decimal number"));
    }
    let too_big = || format!("'{text}' is too large for a 64-bit nanosecond count");
    let int_value: u128 = int_part.parse().map_err(|_| too_big())?;
    let mut total = int_value.checked_mul(u128::from(unit_ns)).ok_or_else(too_big)?;
    let mut lost = false;
    if let Some(frac) = frac_part {
        // Digits past the 30th cannot change a nanosecond count for any u64 unit; ignore them.
        let (kept, beyond) = frac.split_at(frac.len().min(30));
        let numerator: u128 = kept.parse().map_err(|_| too_big())?;
        let denominator = 10u128.pow(kept.len() as u32);
        // numerator < 10^30 and unit_ns < 2^64: the product fits in u128.
        let scaled = numerator * u128::from(unit_ns);
        total += scaled / denominator;
        lost = !scaled.is_multiple_of(denominator) || beyond.bytes().any(|b| b != b'0');
    }
    Ok((u64::try_from(total).map_err(|_| too_big())?, lost))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_parses_exactly() {
        for ns in [0, 1, 999_999_999, 1_000_000_000, 12_345_678_901, u64::MAX] {
            assert_eq!(parse_decimal(&format_seconds(ns), NANOS_PER_SECOND), Ok(ns));
        }
        assert_eq!(format_seconds(1_500_000_000), "1.500000000");
    }

    #[test]
    fn scales_by_unit_and_truncates_below_a_nanosecond() {
        assert_eq!(parse_decimal("1.5", 1_000_000), Ok(1_500_000));
        assert_eq!(parse_decimal("2", 1_000), Ok(2_000));
        assert_eq!(parse_decimal("0.0000000019", NANOS_PER_SECOND), Ok(1));
        assert_eq!(parse_decimal_exact("0.0000000019", NANOS_PER_SECOND), Ok((1, true)));
        assert_eq!(parse_decimal_exact("0.0000000010", NANOS_PER_SECOND), Ok((1, false)));
        assert_eq!(parse_decimal_exact("2.5", 1), Ok((2, true)), "half a nanosecond");
    }

    #[test]
    fn rejects_junk_and_overflow() {
        for bad in
            ["", ".", "1.", ".5", "-1", "1e3", "1.2.3", "18446744074", "99999999999999999999999999999999999999999"]
        {
            assert!(parse_decimal(bad, NANOS_PER_SECOND).is_err(), "{bad}");
        }
    }
}
