//! Numbers as people read them in logs and tables.

use std::time::Duration;

/// Bytes in binary units with one decimal: "1023 B", "1.5 KiB", "256.0 MiB".
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// A duration in ms below 10 s ("186 ms"), else in s ("12.4 s").
pub fn duration(d: Duration) -> String {
    if d < Duration::from_secs(10) {
        format!("{} ms", d.as_millis())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// "1 app", "2 apps".
pub fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_in_binary_units() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(256 * 1024 * 1024), "256.0 MiB");
        assert_eq!(bytes(u64::MAX), "16.0 EiB");
    }

    #[test]
    fn durations_and_counts() {
        assert_eq!(duration(Duration::from_micros(186_400)), "186 ms");
        assert_eq!(duration(Duration::from_millis(12_400)), "12.4 s");
        assert_eq!(count(1, "app"), "1 app");
        assert_eq!(count(0, "transaction"), "0 transactions");
    }
}
