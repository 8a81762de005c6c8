//! `mcfs trace replay TRACE --into DIR`: carries out a trace's file
//! operations on a real directory — a plain one, or a live mount — with
//! ordinary system calls, writing the pattern bytes, so that a recording
//! of a program that wrote them leaves the same tree again
//! (`mcfs_sim::live_replay`). Operations the system refuses are skipped
//! and listed; they do not fail the command.

use super::trace::files::TraceInput;
use clap::Args;
use mcfs_sim::live_replay::LiveReplayer;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// Trace to replay, text or binary (told apart by its first bytes).
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,
    /// Existing directory under which the trace's paths are taken (`..` never leaves it).
    #[arg(long, value_name = "DIR")]
    pub into: PathBuf,
}

pub fn run(args: &ReplayArgs) -> Result<(), String> {
    let events = TraceInput::open(&args.trace)?;
    let mut replayer = LiveReplayer::new(&args.into).map_err(|e| e.to_string())?;
    for event in events {
        replayer.apply(&event?);
    }
    let report = replayer.finish();
    println!(
        "replayed {} into {}: {} file operations done, {} skipped, {} other events ignored",
        args.trace.display(),
        args.into.display(),
        report.done,
        report.skipped,
        report.ignored
    );
    for (reason, count) in &report.skip_reasons {
        eprintln!("mcfs: skipped {count} × {reason}");
    }
    if report.left_open > 0 {
        println!("{} opens were never closed in the trace (closed at the end)", report.left_open);
    }
    Ok(())
}
