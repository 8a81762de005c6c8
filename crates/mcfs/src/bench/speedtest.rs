//! SQLite's own speedtest1 (test/speedtest1.c of the Debian source package
//! `sqlite3`, linked against Debian's libsqlite3; scripts/bench-setup.sh
//! builds it): `--size N` once with the rollback journal (`--journal
//! delete`) and once with `--journal wal`, each on a new database file.
//! The value is speedtest1's own TOTAL line, in seconds (lower is better);
//! SQLite's temporary files go to the target too (SQLITE_TMPDIR).

use super::cmd;
use super::metrics::{Metric, Outcome};
use super::Sizes;
use std::path::Path;
use std::process::Command;

pub fn run(dir: &Path, bin: &Path, sizes: &Sizes) -> Result<Outcome, String> {
    let mut outcome = Outcome::default();
    for (journal, metric) in [("delete", Metric::SpeedtestDeleteSeconds), ("wal", Metric::SpeedtestWalSeconds)] {
        let db = dir.join(format!("speedtest-{journal}.db"));
        let mut command = Command::new(bin);
        command
            .args(["--size", &sizes.speedtest_size.to_string(), "--journal", journal])
            .arg(&db)
            .env("SQLITE_TMPDIR", dir);
        let out = cmd::run_command(&mut command).map_err(|e| format!("{journal} journal: {e}"))?;
        let seconds = total_seconds(&out).map_err(|e| format!("{journal} journal: {e}"))?;
        outcome.sample(metric, seconds);
    }
    outcome.extra("size", sizes.speedtest_size);
    Ok(outcome)
}

/// The seconds on speedtest1's closing line, "       TOTAL.......  3.224s".
fn total_seconds(out: &str) -> Result<f64, String> {
    let line = out
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with("TOTAL"))
        .ok_or_else(|| format!("speedtest1 printed no TOTAL line: {}", out.lines().last().unwrap_or("")))?;
    let value = line.trim_start_matches(|c: char| c.is_whitespace() || c.is_alphabetic() || c == '.');
    value
        .trim()
        .strip_suffix('s')
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v >= 0.0)
        .ok_or_else(|| format!("cannot read the seconds on speedtest1's line {line:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "-- Speedtest1 for SQLite 3.40.1 2022-12-28 14:03:47 df5c253c0b3dd24916e4ec7cf77d
 100 - 25000 INSERTs into table with no index......................    0.063s
 990 - ANALYZE.....................................................    0.036s
       TOTAL.......................................................    3.224s
";

    #[test]
    fn the_total_line_gives_the_seconds() {
        assert_eq!(total_seconds(SAMPLE), Ok(3.224));
        assert_eq!(total_seconds("       TOTAL....   12.5s\n"), Ok(12.5));
    }

    #[test]
    fn a_missing_or_garbled_total_is_an_error() {
        let cut = SAMPLE.lines().take(3).collect::<Vec<_>>().join("\n");
        assert!(total_seconds(&cut).unwrap_err().contains("no TOTAL line"));
        assert!(total_seconds("       TOTAL.......    fast\n").unwrap_err().contains("cannot read"));
    }
}
