//! `mcfs stat`: the engine's counters, as a table or as JSON.

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
        print(&format!("mcfs on {}\n{}", mountpoint.display(), stats_table::render(&stats)))
    }
}
