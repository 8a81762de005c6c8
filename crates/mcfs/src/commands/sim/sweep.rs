//! `mcfs sim --sweep SWEEP.toml [--jobs N] [--list | --only KEY | --table-only]`: the product of traces ×
//! configs × devices that SWEEP.toml names (`spec`, docs/SWEEP.md), each run replayed as `mcfs sim --trace`
//! would (`replay_file`) on a pool of threads (`pool`), its metrics or its error written to
//! `OUT/runs/KEY.json` or `KEY.error` (`record`), then the combined table `OUT/results.csv`
//! (`results_table`) built from those files.
//!
//! `--list` prints the run list as JSON and `--only KEY` runs one run, so another runner (the Ray runner of
//! experiments/sweep) can spread the runs over machines; `--table-only` builds the table from whatever
//! `runs/` holds. Every mode that ends with a table fails, naming the runs, when a run failed or left no
//! result; a failed run is still a row of the table, with its error.

mod pool;
mod progress;
mod record;
mod results_table;
mod spec;

use super::replay_file;
use crate::output::print;
use clap::Args;
use mcfs_sim::replay::Metrics;
use serde_json::json;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub struct SweepArgs {
    /// Run a sweep: every trace × config × device SWEEP.toml names (docs/SWEEP.md), one JSON per run and a
    /// combined results.csv in its `out` directory.
    #[arg(long, value_name = "SWEEP.toml", conflicts_with_all = [
        "trace", "fasttrack", "config", "device", "json", "open_loop", "keep_data", "allow_skipped", "sample_every"
    ])]
    pub sweep: Option<PathBuf>,
    /// Runs at once (default: one per core).
    #[arg(long, value_name = "N", requires = "sweep", value_parser = clap::value_parser!(u32).range(1..))]
    pub jobs: Option<u32>,
    /// Print the sweep's run list as JSON (key, names and trace of each run) and run nothing.
    #[arg(long, requires = "sweep", conflicts_with_all = ["only", "table_only", "jobs"])]
    pub list: bool,
    /// Run only the run KEY (a key of --list) and write its result into the runs directory.
    #[arg(long, value_name = "KEY", requires = "sweep", conflicts_with_all = ["table_only", "jobs"])]
    pub only: Option<String>,
    /// Run nothing: build results.csv from the results in the runs directory.
    #[arg(long = "table-only", requires = "sweep", conflicts_with = "jobs")]
    pub table_only: bool,
}

pub fn run(file: &Path, args: &SweepArgs) -> Result<(), String> {
    let sweep = spec::load(file)?;
    if args.list {
        return list(&sweep);
    }
    if let Some(key) = &args.only {
        return only(file, &sweep, key);
    }
    if !args.table_only {
        let jobs = args.jobs.map_or_else(default_jobs, |n| n as usize);
        run_all(&sweep, jobs)?;
    }
    table(&sweep)
}

fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

fn list(sweep: &spec::Sweep) -> Result<(), String> {
    let runs: Vec<_> = sweep
        .runs
        .iter()
        .map(|r| {
            json!({"key": r.key, "trace": r.trace_name, "config": r.config_name, "device": r.device_name,
                        "trace_file": r.trace})
        })
        .collect();
    let listing = json!({"runs_dir": sweep.runs_dir(), "table": sweep.table_path(), "runs": runs});
    let text = serde_json::to_string_pretty(&listing).map_err(|e| format!("cannot print the run list: {e}"))?;
    print(&(text + "\n"))
}

fn only(file: &Path, sweep: &spec::Sweep, key: &str) -> Result<(), String> {
    let run =
        sweep.runs.iter().find(|r| r.key == key).ok_or_else(|| {
            format!("{}: no run '{key}' (mcfs sim --sweep {0} --list shows the keys)", file.display())
        })?;
    match execute(sweep, run) {
        Ok(()) => print(&format!("{key}: ok\n")),
        Err(e) => Err(format!("{key}: {e}")),
    }
}

fn run_all(sweep: &spec::Sweep, jobs: usize) -> Result<(), String> {
    let runs_dir = sweep.runs_dir();
    std::fs::create_dir_all(&runs_dir).map_err(|e| format!("{}: {e}", runs_dir.display()))?;
    let mut progress = progress::Progress::new(sweep.runs.len());
    pool::for_each(
        &sweep.runs,
        jobs,
        |run| execute(sweep, run),
        |i, result| progress.finished(&sweep.runs[i].key, result.as_ref().err().map(String::as_str)),
    );
    progress.finish();
    Ok(())
}

/// Replays one run and records its outcome; the error is the run's (also recorded) or the recording's.
fn execute(sweep: &spec::Sweep, run: &spec::Run) -> Result<(), String> {
    let result = replay(run, sweep.allow_skipped);
    record::write(&sweep.runs_dir(), &run.key, &result)?;
    result.map(drop)
}

/// The run's metrics; a replay that panicked is an error of that run, not the end of the sweep.
fn replay(run: &spec::Run, allow_skipped: bool) -> Result<Metrics, String> {
    let replayed = catch_unwind(AssertUnwindSafe(|| replay_file::replay(&run.trace, run.options.clone(), false)))
        .map_err(|panic| {
            let message = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("no message");
            format!("{}: the replay panicked: {message}", run.trace.display())
        })??;
    match replayed.skip_problem {
        Some(problem) if !allow_skipped => {
            Err(format!("{}: {problem} (allow_skipped accepts it)", run.trace.display()))
        }
        _ => Ok(replayed.metrics),
    }
}

fn table(sweep: &spec::Sweep) -> Result<(), String> {
    let failures = results_table::write(sweep)?;
    let path = sweep.table_path();
    if failures.is_empty() {
        return print(&format!("{}: {} run(s)\n", path.display(), sweep.runs.len()));
    }
    let named: Vec<String> = failures.iter().map(|f| format!("  {}: {}", f.key, f.error)).collect();
    Err(format!(
        "{} of {} run(s) failed (rows with status 'failed' in {}):\n{}",
        failures.len(),
        sweep.runs.len(),
        path.display(),
        named.join("\n")
    ))
}
