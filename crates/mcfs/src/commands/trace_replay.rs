//! `mcfs trace replay TRACE --into DIR [--json-file FILE] [--loop]`: carries out a trace's file operations on
//! a real directory — a plain one, or a live mount — with ordinary system calls, writing the pattern
//! bytes, so that a recording of a program that wrote them leaves the same tree again
//! (`mcfs_sim::live_replay`). Operations the system refuses are skipped and listed; they do not fail the
//! command. `--json-file` writes how long the operations took (elapsed time, latency percentiles) for the
//! FastTrack study, where an app's replay is its response time; `--loop` repeats the trace until SIGTERM
//! or SIGINT, as a background app does. Without `--loop` these signals end the replay early, in the same
//! way (the JSON says `"stopped": true`, and its times are those of the part done).
//!
//! Invariant: what is done is the trace, in order, whole passes repeated (a stop signal ends the replay
//! between two operations, never inside one); the JSON is written once the replay has ended.

use super::trace::files::TraceInput;
use crate::output::{eprint_line, print};
use clap::Args;
use mcfs_sim::live_replay::{LiveReplayReport, LiveReplayer, OpTiming};
use mcfs_sim::TraceEvent;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// Trace to replay, text or binary (told apart by its first bytes).
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,
    /// Existing directory under which the trace's paths are taken (`..` never leaves it).
    #[arg(long, value_name = "DIR")]
    pub into: PathBuf,
    /// Write the replay's timing (elapsed from the first operation's start to the last one's end, latency
    /// percentiles of one operation) and counts as one line of JSON into FILE.
    #[arg(long = "json-file", alias = "json", value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Replay the trace over and over until SIGTERM or SIGINT (the trace is read once, into memory).
    #[arg(long = "loop")]
    pub repeat: bool,
}

/// What `--json` writes.
#[derive(Serialize, Debug)]
struct ReplayJson<'a> {
    trace: String,
    into: String,
    /// Whole passes over the trace (a looped replay stopped mid-pass does not count that pass).
    passes: u64,
    /// The replay was ended by a signal (with `--loop`, the only way it ends).
    stopped: bool,
    elapsed_ns: u64,
    ops: u64,
    latency_ns: Latency,
    /// Count, total and longest time of the operations of each kind.
    by_op: &'a BTreeMap<&'static str, OpTiming>,
    done: u64,
    skipped: u64,
    ignored: u64,
    left_open: u64,
    skip_reasons: &'a BTreeMap<String, u64>,
}

#[derive(Serialize, Debug)]
struct Latency {
    p50: u64,
    p99: u64,
    max: u64,
}

pub fn run(args: &ReplayArgs) -> Result<(), String> {
    let mut replayer = LiveReplayer::new(&args.into).map_err(|e| e.to_string())?;
    catch_stop_signals()?;
    let (passes, stopped) =
        if args.repeat { replay_looped(&args.trace, &mut replayer)? } else { replay_once(&args.trace, &mut replayer)? };
    let report = replayer.finish();
    if let Some(file) = &args.json {
        write_json(file, &to_json(args, &report, passes, stopped))?;
    }
    print(&format!(
        "replayed {} into {}: {} file operations done, {} skipped, {} other events ignored{}\n",
        args.trace.display(),
        args.into.display(),
        report.done,
        report.skipped,
        report.ignored,
        if args.repeat { format!(" ({passes} whole passes)") } else { String::new() }
    ))?;
    for (reason, count) in &report.skip_reasons {
        eprint_line(&format!("mcfs: skipped {count} × {reason}"));
    }
    if report.left_open > 0 {
        print(&format!("{} opens were never closed in the trace (closed at the end)\n", report.left_open))?;
    }
    Ok(())
}

/// Set by SIGTERM and SIGINT while a looped replay runs.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// Makes SIGTERM and SIGINT set `STOP` (system calls restart, so an operation in flight completes).
fn catch_stop_signals() -> Result<(), String> {
    for signal in [libc::SIGTERM, libc::SIGINT] {
        // SAFETY: a zeroed sigaction with a handler that only stores an atomic (async-signal-safe), an
        // empty mask and SA_RESTART is a valid argument; the old action is not needed.
        let rc = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_stop_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(format!("cannot catch signal {signal}: {}", std::io::Error::last_os_error()));
        }
    }
    Ok(())
}

/// Replays the trace until a stop signal; returns the whole passes made and whether a signal ended it.
fn replay_looped(trace: &Path, replayer: &mut LiveReplayer) -> Result<(u64, bool), String> {
    let events: Vec<TraceEvent> = TraceInput::open(trace)?.collect::<Result<_, String>>()?;
    if !events.iter().any(is_file_op) {
        return Err(format!("{}: no file operation to repeat", trace.display()));
    }
    let mut passes = 0;
    loop {
        for event in &events {
            if STOP.load(Ordering::SeqCst) {
                return Ok((passes, true));
            }
            replayer.apply(event);
        }
        passes += 1;
    }
}

/// Replays the trace once, streamed; returns 1 whole pass, or 0 and true if a stop signal ended it.
fn replay_once(trace: &Path, replayer: &mut LiveReplayer) -> Result<(u64, bool), String> {
    for event in TraceInput::open(trace)? {
        if STOP.load(Ordering::SeqCst) {
            return Ok((0, true));
        }
        replayer.apply(&event?);
    }
    Ok((1, false))
}

fn is_file_op(event: &TraceEvent) -> bool {
    use mcfs_sim::EventKind::*;
    !matches!(event.kind, Input { .. } | Launch | Foreground | Background | Exit | Battery { .. } | Screen { .. })
}

fn to_json<'a>(args: &ReplayArgs, report: &'a LiveReplayReport, passes: u64, stopped: bool) -> ReplayJson<'a> {
    let t = &report.timing;
    ReplayJson {
        trace: args.trace.display().to_string(),
        into: args.into.display().to_string(),
        passes,
        stopped,
        elapsed_ns: t.elapsed_ns,
        ops: t.ops,
        latency_ns: Latency { p50: t.p50_ns, p99: t.p99_ns, max: t.max_ns },
        by_op: &t.by_op,
        done: report.done,
        skipped: report.skipped,
        ignored: report.ignored,
        left_open: report.left_open,
        skip_reasons: &report.skip_reasons,
    }
}

fn write_json(file: &Path, json: &ReplayJson) -> Result<(), String> {
    let text = serde_json::to_string(json).map_err(|e| format!("cannot print the replay's JSON: {e}"))?;
    std::fs::write(file, text + "\n").map_err(|e| format!("{}: {e}", file.display()))
}
