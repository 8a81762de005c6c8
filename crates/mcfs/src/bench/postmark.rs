//! postmark (Debian package `postmark`): a pool of small files created,
//! then transactions (create or delete, read or append) on it, then every
//! file deleted. The value is the wall time of the whole run in seconds
//! (postmark's own figures are whole seconds, too coarse here; they go in
//! the extras). Its report is parsed to check that it did the work asked.

use super::cmd;
use super::metrics::{Metric, Outcome};
use super::Sizes;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

pub fn run(dir: &Path, sizes: &Sizes, seed: u64) -> Result<Outcome, String> {
    let pool = dir.join("postmark");
    std::fs::create_dir(&pool).map_err(|e| format!("mkdir {}: {e}", pool.display()))?;
    let config = dir.join("postmark.cfg");
    // postmark's seed is a C int.
    let script = format!(
        "set location {}\nset number {}\nset transactions {}\nset seed {}\nrun\nquit\n",
        pool.display(),
        sizes.postmark_files,
        sizes.postmark_transactions,
        seed % i32::MAX as u64
    );
    std::fs::write(&config, script).map_err(|e| format!("{}: {e}", config.display()))?;
    let start = Instant::now();
    let out = cmd::run_command(Command::new("postmark").arg(&config).current_dir(dir))?;
    let seconds = start.elapsed().as_secs_f64();
    let report = parse(&out)?;
    if report.files_created_alone != sizes.postmark_files {
        return Err(format!(
            "postmark created {} files before its transactions, not {}",
            report.files_created_alone, sizes.postmark_files
        ));
    }
    let mut outcome = Outcome::default();
    outcome.sample(Metric::PostmarkSeconds, seconds);
    outcome.extra("files", sizes.postmark_files);
    outcome.extra("transactions", sizes.postmark_transactions);
    outcome.extra("postmark_total_seconds", report.total_seconds);
    outcome.extra("postmark_transaction_seconds", report.transaction_seconds);
    Ok(outcome)
}

#[derive(Debug, PartialEq)]
struct Report {
    total_seconds: u64,
    transaction_seconds: u64,
    files_created_alone: u64,
}

/// Reads "N seconds total", "N seconds of transactions" and "Creation
/// alone: N files" from postmark's report.
fn parse(out: &str) -> Result<Report, String> {
    let number_before = |suffix: &str| {
        out.lines()
            .find_map(|l| l.trim().split_once(suffix).map(|(n, _)| n))
            .and_then(|n| n.trim().parse::<u64>().ok())
            .ok_or_else(|| format!("postmark's report has no \"N{suffix}\" line: {}", tail(out)))
    };
    let files_created_alone = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("Creation alone:"))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .ok_or_else(|| format!("postmark's report has no \"Creation alone\" line: {}", tail(out)))?;
    Ok(Report {
        total_seconds: number_before(" seconds total")?,
        transaction_seconds: number_before(" seconds of transactions")?,
        files_created_alone,
    })
}

fn tail(out: &str) -> String {
    let lines: Vec<&str> = out.lines().collect();
    lines[lines.len().saturating_sub(3)..].join(" | ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "PostMark v1.51 : 8/14/01
Reading configuration from file 'cfg'
Creating files...Done
Performing transactions..........Done
Deleting files...Done
Time:
\t41 seconds total
\t37 seconds of transactions (216 per second)

Files:
\t6030 created (147 per second)
\t\tCreation alone: 2000 files (500 per second)
\t\tMixed with transactions: 4030 files (108 per second)
\t3948 read (96 per second)
";

    #[test]
    fn the_report_gives_times_and_the_file_pool() {
        assert_eq!(parse(SAMPLE), Ok(Report { total_seconds: 41, transaction_seconds: 37, files_created_alone: 2000 }));
    }

    #[test]
    fn a_cut_report_is_an_error() {
        let cut: String = SAMPLE.lines().take(5).map(|l| format!("{l}\n")).collect();
        assert!(parse(&cut).unwrap_err().contains("Creation alone"));
        let no_total = SAMPLE.replace("41 seconds total", "");
        assert!(parse(&no_total).unwrap_err().contains("seconds total"));
    }
}
