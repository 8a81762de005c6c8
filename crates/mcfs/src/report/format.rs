//! Markdown tables and the number formats of the report. Every number is printed with a fixed number of
//! decimals for its kind (seconds, ratios, shares, MiB, mJ), so the same results give the same text, and
//! a value that does not exist prints as "–", never as 0 or NaN.

/// What a missing value prints as.
pub const MISSING: &str = "–";

/// A Markdown table: the first column left-aligned (names), the others right-aligned (numbers).
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(header: &[&str]) -> Table {
        Table { header: header.iter().map(|h| h.to_string()).collect(), rows: Vec::new() }
    }

    /// Adds a row; missing cells at its end print as empty, extra ones are an error of the caller that the
    /// table shows rather than drops.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub fn render(&self) -> String {
        let width = self.rows.iter().map(Vec::len).chain([self.header.len()]).max().unwrap_or(0);
        let line = |cells: &[String]| {
            let padded: Vec<&str> = (0..width).map(|i| cells.get(i).map_or("", |c| c.as_str())).collect();
            format!("| {} |\n", padded.join(" | "))
        };
        let rule: Vec<&str> = (0..width).map(|i| if i == 0 { "---" } else { "---:" }).collect();
        let mut out = line(&self.header);
        out.push_str(&format!("|{}|\n", rule.join("|")));
        for row in &self.rows {
            out.push_str(&line(row));
        }
        out
    }
}

/// `v` with `decimals` decimals; "–" for `None`. A value that rounds to zero has no minus sign.
pub fn fixed(v: Option<f64>, decimals: usize) -> String {
    match v.filter(|v| v.is_finite()) {
        None => MISSING.to_string(),
        Some(v) => {
            let text = format!("{v:.decimals$}");
            match text.strip_prefix('-') {
                Some(rest) if rest.chars().all(|c| c == '0' || c == '.') => rest.to_string(),
                _ => text,
            }
        }
    }
}

/// A ratio, "17.5×".
pub fn times(v: Option<f64>) -> String {
    suffixed(fixed(v, 1), "×")
}

/// A ratio with two decimals, for ratios near 1 ("0.78×").
pub fn times2(v: Option<f64>) -> String {
    suffixed(fixed(v, 2), "×")
}

/// A share given as a fraction, "53.0 %".
pub fn percent(v: Option<f64>) -> String {
    suffixed(fixed(v.map(|v| v * 100.0), 1), " %")
}

/// Seconds with one decimal.
pub fn seconds(v: Option<f64>) -> String {
    fixed(v, 1)
}

/// Bytes as MiB with two decimals.
pub fn mib(bytes: u64) -> String {
    fixed(Some(bytes as f64 / (1024.0 * 1024.0)), 2)
}

/// Nanojoules as millijoules with one decimal.
pub fn millijoules(nj: u64) -> String {
    fixed(Some(nj as f64 / 1e6), 1)
}

/// "3" when every count is the same, "1–3" when they differ, "0" when there are none.
pub fn count_range(counts: impl IntoIterator<Item = usize>) -> String {
    let (mut lo, mut hi) = (usize::MAX, 0);
    for n in counts {
        (lo, hi) = (lo.min(n), hi.max(n));
    }
    match (lo, hi) {
        (usize::MAX, _) => "0".into(),
        (lo, hi) if lo == hi => lo.to_string(),
        (lo, hi) => format!("{lo}–{hi}"),
    }
}

fn suffixed(text: String, suffix: &str) -> String {
    if text == MISSING {
        text
    } else {
        text + suffix
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_have_fixed_decimals_and_missing_values_a_dash() {
        assert_eq!(times(Some(17.46)), "17.5×");
        assert_eq!(times2(Some(0.7834)), "0.78×");
        assert_eq!(percent(Some(0.5304)), "53.0 %");
        assert_eq!(percent(Some(-0.0001)), "0.0 %", "no minus on a zero");
        assert_eq!(percent(Some(-0.25)), "-25.0 %");
        assert_eq!(seconds(None), "–");
        assert_eq!(times(Some(f64::NAN)), "–");
        assert_eq!(mib(3 * 1024 * 1024 / 2), "1.50");
        assert_eq!(millijoules(1_234_567), "1.2");
        assert_eq!(
            (count_range([3, 3]), count_range([3, 1, 2]), count_range([])),
            ("3".into(), "1–3".into(), "0".into())
        );
    }

    #[test]
    fn a_table_aligns_names_left_and_numbers_right() {
        let mut t = Table::new(&["app", "ext4", "mobifs"]);
        t.row(vec!["FB".into(), "5.0".into(), "80.1".into()]);
        t.row(vec!["mean".into()]);
        assert_eq!(t.render(), "| app | ext4 | mobifs |\n|---|---:|---:|\n| FB | 5.0 | 80.1 |\n| mean |  |  |\n");
    }
}
