//! `mcfs trace ...`: everything about trace files — importing other tools' traces, converting between the
//! text and binary forms, generating synthetic app workloads, summarizing a trace, and carrying one out on a
//! real directory (`trace_replay`). One subcommand per file under `trace/`; `trace/files.rs` holds what
//! they share.

mod convert;
pub mod files;
mod import;
mod stats;
mod synth;

use clap::{Args, Subcommand};
use std::time::Duration;

#[derive(Args, Debug)]
pub struct TraceArgs {
    #[command(subcommand)]
    pub action: TraceAction,
}

#[derive(Subcommand, Debug)]
pub enum TraceAction {
    /// Convert an strace log or a CSV trace into an mcfs trace.
    #[command(after_help = IMPORT_EXAMPLES)]
    Import(import::ImportArgs),
    /// Convert an mcfs trace between the text and binary forms.
    #[command(after_help = "Examples:\n  mcfs trace convert app.trace --output app.bin --to binary")]
    Convert(convert::ConvertArgs),
    /// Generate an app workload from seeded profiles drawn from the MobiFS paper (see docs/SYNTH.md).
    #[command(after_help = SYNTH_EXAMPLES)]
    Synth(synth::SynthArgs),
    /// Summarize a trace: events by kind, apps, time span.
    #[command(after_help = "Examples:\n  mcfs trace stats app.bin\n  mcfs trace stats --json app.bin")]
    Stats(stats::StatsArgs),
    /// Carry out a trace's file operations on a real directory (a plain one or a live mount).
    #[command(after_help = "Examples:\n  mcfs trace replay app.bin --into /mnt/data --json-file replay.json")]
    Replay(super::trace_replay::ReplayArgs),
}

const IMPORT_EXAMPLES: &str = "\
Examples:
  mcfs trace import --format strace --output app.trace strace.log
  zcat use.csv.gz | mcfs trace import --format csv --columns process=1,op=3,offset=4,size=5,time=6 \\
      --process-format comm-tid --offset-unit sector --size-unit sector --output use.bin -";

const SYNTH_EXAMPLES: &str = "\
Examples:
  mcfs trace synth --suite suite/
  mcfs trace synth --list
  mcfs trace synth --fasttrack launch --app gallery --output gallery/";

pub fn run(args: TraceArgs) -> Result<(), String> {
    match args.action {
        TraceAction::Import(a) => import::run(&a),
        TraceAction::Convert(a) => convert::run(&a),
        TraceAction::Synth(a) => synth::run(&a),
        TraceAction::Stats(a) => stats::run(&a),
        TraceAction::Replay(a) => super::trace_replay::run(&a),
    }
}

/// Parses a non-negative decimal number of seconds (`300`, `0.5`) exactly, without floats.
pub fn parse_seconds(text: &str) -> Result<Duration, String> {
    let ns = mcfs_sim::timefmt::parse_decimal(text, mcfs_sim::timefmt::NANOS_PER_SECOND)?;
    Ok(Duration::from_nanos(ns))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("mcfs").chain(args.iter().copied()))
    }

    #[test]
    fn seconds_parse_exactly() {
        assert_eq!(parse_seconds("300"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_seconds("0.25"), Ok(Duration::from_millis(250)));
        assert!(parse_seconds("-1").is_err());
        assert!(parse_seconds("1e3").is_err());
    }

    #[test]
    fn synth_needs_profiles_and_output_unless_suite_or_list() {
        assert!(parse(&["trace", "synth", "--io", "e-flat", "--user", "reader"]).is_err(), "no output");
        assert!(parse(&["trace", "synth", "--io", "e-flat", "--user", "reader", "-o", "x"]).is_ok());
        assert!(parse(&["trace", "synth", "--suite", "dir"]).is_ok());
        assert!(parse(&["trace", "synth", "--list"]).is_ok());
        assert!(parse(&["trace", "synth", "--suite", "dir", "--io", "e-flat"]).is_err(), "conflict");
        let cli =
            parse(&["trace", "synth", "--io", "e-flat", "--user", "reader", "-o", "x", "--duration", "1.5"]).unwrap();
        let Command::Trace(TraceArgs { action: TraceAction::Synth(s) }) = cli.command else { panic!("not synth") };
        assert_eq!(s.duration, Duration::from_millis(1500));
    }

    #[test]
    fn import_parses_the_csv_options_of_the_issue() {
        let cli = parse(&[
            "trace",
            "import",
            "--format",
            "csv",
            "--columns",
            "time=1,app=2,op=3,offset=4,size=5",
            "--op-read",
            "R,RS",
            "--op-write",
            "W",
            "--time-unit",
            "ms",
            "--offset-unit",
            "512",
            "in.csv",
            "-o",
            "out.bin",
        ])
        .unwrap();
        let Command::Trace(TraceArgs { action: TraceAction::Import(i) }) = cli.command else { panic!("not import") };
        assert_eq!(i.op_read, ["R", "RS"]);
        assert_eq!(i.offset_unit, Some(512));
        assert!(parse(&["trace", "import", "--format", "csv", "--time-unit", "hours", "a", "-o", "b"]).is_err());
        assert!(parse(&["trace", "import", "--format", "xml", "a", "-o", "b"]).is_err());
    }
}
