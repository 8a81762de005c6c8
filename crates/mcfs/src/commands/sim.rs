//! `mcfs sim --trace FILE [--config FILE] [--device PROFILE] [--json] [--sample-every SECONDS]`: replays a
//! trace through the real engine in virtual time, on a simulated device (`mcfs_sim::replay`), and prints
//! the metrics — JSON for machines, a table for people.
//!
//! Invariant: the output is a pure function of the trace, the config and the device profile (the metrics
//! hold no wall-clock figures), so two runs print the same bytes. The trace is streamed, never loaded
//! whole; the progress bar goes to stderr and only when stderr is a terminal.

mod progress;
mod table;

use crate::commands::trace::files::{print, TraceInput};
use crate::commands::trace::parse_seconds;
use crate::config_file;
use clap::Args;
use mcfs_sim::device::DeviceProfile;
use mcfs_sim::replay::{ReplayOptions, Replayer};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct SimArgs {
    /// The trace to replay, text or binary (told apart by its first bytes).
    #[arg(long, value_name = "FILE")]
    pub trace: PathBuf,
    /// Engine configuration (TOML, see docs/CONFIG.md); defaults when absent.
    #[arg(long, short = 'c', value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Device to simulate: a built-in profile (emmc, ufs) or a TOML profile file.
    #[arg(long, value_name = "PROFILE", default_value = "emmc")]
    pub device: String,
    /// Print the metrics as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Period of the bytes-at-risk series, in seconds of virtual time.
    #[arg(long = "sample-every", value_name = "SECONDS", default_value = "1", value_parser = parse_positive_seconds)]
    pub sample_every: Duration,
}

pub fn run(args: SimArgs) -> Result<(), String> {
    let config = config_file::load(args.config.as_deref())?;
    let device = DeviceProfile::load(&args.device)?;
    let device_name = device.name.clone();
    let mut input = TraceInput::open(&args.trace)?;
    let options = ReplayOptions { config, device, sample_every: args.sample_every };
    let mut replayer = Replayer::new(options).map_err(|e| format!("cannot start the replay: {e}"))?;
    let mut progress = progress::Progress::new(input.size());
    while let Some(event) = input.next() {
        let event = match event {
            Ok(event) => event,
            Err(e) => {
                progress.finish();
                return Err(e);
            }
        };
        replayer.replay(&event);
        progress.update(input.consumed());
    }
    progress.finish();
    let metrics = replayer.finish().map_err(|e| format!("{}: {e}", args.trace.display()))?;
    if args.json {
        let text = serde_json::to_string_pretty(&metrics).map_err(|e| format!("cannot print metrics: {e}"))?;
        return print(&(text + "\n"));
    }
    let value = serde_json::to_value(&metrics).map_err(|e| format!("cannot print metrics: {e}"))?;
    print(&table::render(&args.trace.display().to_string(), &device_name, &value))
}

fn parse_positive_seconds(text: &str) -> Result<Duration, String> {
    match parse_seconds(text)? {
        d if d.is_zero() => Err("must be longer than zero".into()),
        d => Ok(d),
    }
}
