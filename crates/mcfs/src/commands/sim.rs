//! `mcfs sim --trace FILE [--config FILE] [--device PROFILE] [--open-loop] [--keep-data] [--json] [--sample-every SECONDS]`:
//! replays a trace through the real engine in virtual time, on a simulated device (`mcfs_sim::replay`),
//! closed loop unless `--open-loop`, and prints the metrics — JSON for machines, a table for people.
//!
//! `--fasttrack FG_DIR --bg DIR...` runs one point of the FastTrack study instead (`fasttrack`);
//! `--sweep SWEEP.toml` runs traces × configs × devices on a pool of threads (`sweep`, docs/SWEEP.md).
//!
//! Invariant: the output is a pure function of the trace, the config and the device profile (the metrics
//! hold no wall-clock figures), so two runs print the same bytes. The trace is streamed, never loaded
//! whole; the progress bar goes to stderr and only when stderr is a terminal. A replay that skipped more
//! than a small share of its file operations (`skips`) prints its metrics and fails.

mod fasttrack;
mod progress;
mod replay_file;
mod skips;
mod sweep;
mod table;

use crate::commands::trace::parse_seconds;
use crate::config_file;
use crate::output::{eprint_line, print};
use clap::Args;
use mcfs_device::DeviceProfile;
use mcfs_sim::replay::{ReplayOptions, Timing};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct SimArgs {
    /// The trace to replay, text or binary (told apart by its first bytes).
    #[arg(long, value_name = "FILE", required_unless_present_any = ["fasttrack", "sweep"])]
    pub trace: Option<PathBuf>,
    /// Run a FastTrack scenario instead: the FG app's workload directory (setup.trace and run.trace
    /// from `mcfs trace synth --fasttrack`) against the --bg apps, and report the FG response time.
    #[arg(long, value_name = "FG_DIR", conflicts_with_all = ["trace", "sample_every"])]
    pub fasttrack: Option<PathBuf>,
    #[command(flatten)]
    pub scenario: fasttrack::ScenarioArgs,
    #[command(flatten)]
    pub sweep: sweep::SweepArgs,
    /// Engine configuration (TOML, see docs/CONFIG.md); defaults when absent.
    #[arg(long, short = 'c', value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[arg(long = "device-profile", alias = "device", value_name = "PROFILE", default_value = "emmc",
          help = crate::cli::device_profile_help("Device to simulate"))]
    pub device: String,
    /// Issue every event at its recorded time (open loop) instead of each process's next event after its
    /// previous one completed plus the recorded think time (closed loop, the default).
    #[arg(long = "open-loop", conflicts_with = "fasttrack")]
    pub open_loop: bool,
    /// Keep every written byte in the simulated store instead of marks for pages of the replay's pattern
    /// (same metrics, more memory; for checking the data-less store).
    #[arg(long = "keep-data", conflicts_with = "fasttrack")]
    pub keep_data: bool,
    /// Print the metrics as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Exit 0 even when more than 1 % of the trace's file operations were skipped (a warning is printed).
    #[arg(long = "allow-skipped", conflicts_with = "fasttrack")]
    pub allow_skipped: bool,
    /// Period of the bytes-at-risk series, in seconds of virtual time.
    #[arg(long = "sample-every", value_name = "SECONDS", default_value = "1", value_parser = parse_positive_seconds)]
    pub sample_every: Duration,
}

pub fn run(args: SimArgs) -> Result<(), String> {
    if let Some(file) = &args.sweep.sweep {
        return sweep::run(file, &args.sweep);
    }
    let config = config_file::load(args.config.as_deref())?;
    let device = DeviceProfile::load(&args.device)?;
    if let Some(fg) = &args.fasttrack {
        return fasttrack::run(fg, &args.scenario, config, device, args.json);
    }
    let Some(trace) = &args.trace else { return Err("sim needs --trace FILE (or --fasttrack FG_DIR)".into()) };
    let device_name = device.name.clone();
    let timing = if args.open_loop { Timing::OpenLoop } else { Timing::ClosedLoop };
    let options = ReplayOptions { config, device, timing, keep_data: args.keep_data, sample_every: args.sample_every };
    let replay_file::Replayed { metrics, skip_problem } = replay_file::replay(trace, options, true)?;
    if args.json {
        let text = serde_json::to_string_pretty(&metrics).map_err(|e| format!("cannot print metrics: {e}"))?;
        print(&(text + "\n"))?;
    } else {
        let value = serde_json::to_value(&metrics).map_err(|e| format!("cannot print metrics: {e}"))?;
        print(&table::render(&trace.display().to_string(), &device_name, &value))?;
    }
    match skip_problem {
        Some(problem) if args.allow_skipped => {
            eprint_line(&format!("mcfs: warning: {}: {problem}", trace.display()));
            Ok(())
        }
        Some(problem) => Err(format!("{}: {problem} (--allow-skipped accepts it)", trace.display())),
        None => Ok(()),
    }
}

fn parse_positive_seconds(text: &str) -> Result<Duration, String> {
    match parse_seconds(text)? {
        d if d.is_zero() => Err("must be longer than zero".into()),
        d => Ok(d),
    }
}
