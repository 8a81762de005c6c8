//! `mcfs stat`: the daemon's stat document (docs/STAT.md) as tables, JSON
//! or the Prometheus text format, once, or as per-second rates every
//! `--interval` like vmstat.

use crate::cli::{StatArgs, StatFormat};
use crate::control_client;
use crate::output::print;
use crate::protocol::{Request, Response};
use crate::{prometheus, stats_rates, stats_table};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub fn run(args: StatArgs) -> Result<(), String> {
    let format = args.format();
    match args.interval {
        None => once(&args.mountpoint, format),
        Some(_) if format == StatFormat::Prometheus => {
            Err("--interval prints rates as a table or JSON lines; --format prometheus prints one snapshot".into())
        }
        Some(every) => every_interval(&args.mountpoint, format, every, args.count),
    }
}

/// The daemon's document and the canonical mount point.
fn fetch(mountpoint: &Path) -> Result<(Value, PathBuf), String> {
    control_client::call_expecting(mountpoint, &Request::Stats, |r| match r {
        Response::Stats { stats } => Ok(stats),
        other => Err(other),
    })
}

fn once(mountpoint: &Path, format: StatFormat) -> Result<(), String> {
    let (doc, mountpoint) = fetch(mountpoint)?;
    match format {
        StatFormat::Json => print(&(to_json(&doc, true)? + "\n")),
        StatFormat::Prometheus => print(&prometheus::render(&doc)),
        StatFormat::Table => {
            print(&format!("mcfs on {}{}\n{}", mountpoint.display(), daemon(&doc), stats_table::render(&doc)))
        }
    }
}

/// Samples at start + k·`every` (no drift), printing what changed between
/// consecutive samples over the time that really passed between them.
fn every_interval(mountpoint: &Path, format: StatFormat, every: Duration, count: Option<u64>) -> Result<(), String> {
    let (mut before, _) = fetch(mountpoint)?;
    let start = Instant::now();
    let mut taken = start;
    if format == StatFormat::Table {
        print(&stats_rates::header())?;
    }
    for n in 1..=count.unwrap_or(u64::MAX) {
        let deadline = start + every.saturating_mul(u32::try_from(n).unwrap_or(u32::MAX));
        std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
        let (after, _) = fetch(mountpoint)?;
        let now = Instant::now();
        let elapsed = now.duration_since(taken).as_secs_f64();
        let rates = stats_rates::rates(&before, &after, elapsed);
        let text = match format {
            StatFormat::Json => {
                let mut line = after.clone();
                line["interval_seconds"] = elapsed.into();
                line["rates"] = rates;
                to_json(&line, false)? + "\n"
            }
            _ => stats_rates::line(&time_of_day(&after), &rates, &after),
        };
        print(&text)?;
        (before, taken) = (after, now);
    }
    Ok(())
}

fn to_json(value: &Value, pretty: bool) -> Result<String, String> {
    let text = if pretty { serde_json::to_string_pretty(value) } else { serde_json::to_string(value) };
    text.map_err(|e| format!("cannot print stats: {e}"))
}

/// The document's timestamp as local HH:MM:SS.
fn time_of_day(doc: &Value) -> String {
    let seconds = doc["timestamp_seconds"].as_f64().unwrap_or(0.0) as libc::time_t;
    // SAFETY: `tm` is plain data that localtime_r fills; both pointers are valid for the call.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    if unsafe { libc::localtime_r(&seconds, &mut tm) }.is_null() {
        return "?".into();
    }
    format!("{:02}:{:02}:{:02}", tm.tm_hour, tm.tm_min, tm.tm_sec)
}

/// ", daemon pid 1234, log in /srv/data/.mcfs/mcfs.log, FUSE over io_uring"
/// (each part only from a daemon that says it).
fn daemon(stats: &Value) -> String {
    let daemon = &stats["daemon"];
    let about_daemon = match (daemon["pid"].as_u64(), daemon["log"].as_str()) {
        (Some(pid), Some(log)) => format!(", daemon pid {pid}, log in {log}"),
        _ => String::new(),
    };
    let transport = match stats["fuse"]["transport"].as_str() {
        Some("io_uring") => ", FUSE over io_uring",
        Some("dev_fuse") => ", FUSE over /dev/fuse",
        _ => "",
    };
    about_daemon + transport
}
