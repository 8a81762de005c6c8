//! `mcfs stat`: the engine's counters, as a table or as JSON, with the
//! daemon's pid and where it logs.

use crate::cli::StatArgs;
use crate::control_client;
use crate::output::print;
use crate::protocol::{Request, Response};
use crate::stats_table;

pub fn run(args: StatArgs) -> Result<(), String> {
    let (stats, mountpoint) = control_client::call_expecting(&args.mountpoint, &Request::Stats, |r| match r {
        Response::Stats { stats } => Ok(stats),
        other => Err(other),
    })?;
    if args.json {
        let text = serde_json::to_string_pretty(&stats).map_err(|e| format!("cannot print stats: {e}"))?;
        print(&(text + "\n"))
    } else {
        print(&format!("mcfs on {}{}\n{}", mountpoint.display(), daemon(&stats), stats_table::render(&stats)))
    }
}

/// ", daemon pid 1234, log in /srv/data/.mcfs/mcfs.log" (nothing from a daemon too old to say).
fn daemon(stats: &serde_json::Value) -> String {
    let daemon = &stats["daemon"];
    match (daemon["pid"].as_u64(), daemon["log"].as_str()) {
        (Some(pid), Some(log)) => format!(", daemon pid {pid}, log in {log}"),
        _ => String::new(),
    }
}
