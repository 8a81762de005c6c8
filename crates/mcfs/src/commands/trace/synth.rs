//! `mcfs trace synth`: synthetic app workloads from the seeded profiles of `mcfs_sim::synth`
//! (docs/SYNTH.md) — one trace from an I/O profile and a user profile, or the whole MobiFS suite into a
//! directory, or a workload of the FastTrack study (a setup and a run trace), or a listing of what exists.
//!
//! Invariant: the same options give the same file, byte for byte; events are streamed to the output, so
//! memory does not grow with the duration.

use super::files::{write_trace, Form};
use super::parse_seconds;
use crate::output::print;
use clap::Args;
use mcfs_sim::synth::fasttrack::{self, FastTrackKind, FastTrackSpec};
use mcfs_sim::synth::{self, SynthSpec};
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Args, Debug)]
pub struct SynthArgs {
    /// App I/O profile (what the app writes and flushes); see --list.
    #[arg(long = "io", value_name = "PROFILE", required_unless_present_any = ["suite", "list", "fasttrack"])]
    pub io: Option<String>,
    /// User profile (when the user touches the screen); see --list.
    #[arg(long, value_name = "PROFILE", required_unless_present_any = ["suite", "list", "fasttrack"])]
    pub user: Option<String>,
    /// App name: the trace's APP field and its directory /data/data/NAME.
    #[arg(long, value_name = "NAME", default_value = "com.example.app")]
    pub app: String,
    /// Seed of the generator: the same seed gives the same trace.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,
    /// Length of the trace in seconds (decimals allowed).
    #[arg(long, value_name = "SECONDS", default_value = "300", value_parser = parse_seconds)]
    pub duration: Duration,
    /// The trace to write: binary if its name ends in .bin, text otherwise (unless --to says).
    #[arg(long = "output", short_alias = 'o', value_name = "OUTPUT", required_unless_present_any = ["suite", "list"])]
    pub output: Option<PathBuf>,
    /// Form of the output(s), whatever the name.
    #[arg(long, value_name = "FORM")]
    pub to: Option<Form>,
    /// Write every entry of the MobiFS §7.1 suite (10 apps and 5 Facebook users, 5 minutes each) as
    /// DIR/ENTRY.trace (DIR/ENTRY.bin with --to binary); DIR is created if missing.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["io", "user", "app", "seed", "duration", "output", "list"])]
    pub suite: Option<PathBuf>,
    /// List the profiles and the suite entries, then exit.
    #[arg(long, conflicts_with_all = ["io", "user", "app", "seed", "duration", "output", "to"])]
    pub list: bool,
    /// A workload of the FastTrack study instead (launch, switch, load, update, backup; docs/SYNTH.md):
    /// -o names a directory (created if missing) that gets setup.trace (creates what the run reads) and
    /// run.trace (what is measured, or repeated by a background app).
    #[arg(long, value_name = "KIND", conflicts_with_all = ["io", "user", "duration", "suite", "list"])]
    pub fasttrack: Option<String>,
    /// Scale of the FastTrack workload's file sizes: 1 as documented, 0.5 half as large.
    #[arg(long, value_name = "F", default_value = "1", conflicts_with_all = ["io", "user", "suite", "list"], value_parser = parse_scale)]
    pub scale: u64,
}

/// A decimal scale (`0.5`) as per mille, checked by the generator.
fn parse_scale(text: &str) -> Result<u64, String> {
    mcfs_sim::timefmt::parse_decimal(text, fasttrack::FULL_SCALE)
}

pub fn run(args: &SynthArgs) -> Result<(), String> {
    if args.list {
        return print(&listing());
    }
    if let Some(dir) = &args.suite {
        return write_suite(dir, args.to.unwrap_or(Form::Text));
    }
    if let (Some(kind), Some(dir)) = (&args.fasttrack, &args.output) {
        let spec = FastTrackSpec {
            kind: FastTrackKind::parse(kind)?,
            app: args.app.clone(),
            seed: args.seed,
            scale_per_mille: args.scale,
        };
        return write_fasttrack(&spec, dir, args.to.unwrap_or(Form::Text));
    }
    let (Some(io), Some(user), Some(output)) = (&args.io, &args.user, &args.output) else {
        return Err("trace synth needs --io, --user and -o (or --suite DIR, or --list)".into());
    };
    let spec = SynthSpec {
        app: args.app.clone(),
        io_profile: io.clone(),
        user_profile: user.clone(),
        seed: args.seed,
        duration: args.duration,
    };
    let form = Form::for_output(output, args.to);
    let count = write_one(&spec, output, form)?;
    print(&format!("wrote {count} events to {} ({} form)\n", output.display(), form.name()))
}

fn write_one(spec: &SynthSpec, output: &Path, form: Form) -> Result<u64, String> {
    let events = synth::events(spec)?;
    write_trace(output, form, events.map(Ok))
}

/// DIR/setup.EXT and DIR/run.EXT of a FastTrack workload.
fn write_fasttrack(spec: &FastTrackSpec, dir: &Path, form: Form) -> Result<(), String> {
    let traces = fasttrack::generate(spec)?;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for (name, events) in [("setup", traces.setup), ("run", traces.run)] {
        let output = dir.join(format!("{name}.{}", form.extension()));
        let count = write_trace(&output, form, events.into_iter().map(Ok))?;
        print(&format!("wrote {count} events to {} ({} form)\n", output.display(), form.name()))?;
    }
    Ok(())
}

fn write_suite(dir: &Path, form: Form) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for (entry, spec) in synth::suite() {
        let output = dir.join(format!("{entry}.{}", form.extension()));
        let count = write_one(&spec, &output, form)?;
        print(&format!(
            "{entry:<6} {:<30} {:<15} {:<8} {count:>7} events  {}\n",
            spec.app,
            spec.io_profile,
            spec.user_profile,
            output.display()
        ))?;
    }
    Ok(())
}

fn listing() -> String {
    let mut out = String::from("app I/O profiles (--io):\n");
    for name in synth::io_profile_names() {
        let _ = writeln!(out, "  {name:<15} {}", synth::profile_summary(name).unwrap_or(""));
    }
    out.push_str("user profiles (--user):\n");
    for name in synth::user_profile_names() {
        let _ = writeln!(out, "  {name:<15} {}", synth::profile_summary(name).unwrap_or(""));
    }
    out.push_str("FastTrack workloads (--fasttrack KIND -o DIR):\n");
    for kind in FastTrackKind::ALL {
        let _ = writeln!(out, "  {:<15} {}", kind.name(), kind.summary());
    }
    let _ = writeln!(out, "suite (--suite DIR), {} s per entry:", synth::SUITE_DURATION.as_secs());
    for (entry, spec) in synth::suite() {
        let _ = writeln!(
            out,
            "  {entry:<6} {:<30} --io {:<15} --user {:<8} --seed {}",
            spec.app, spec.io_profile, spec.user_profile, spec.seed
        );
    }
    out
}
