//! `mcfs stat`: the engine's counters, as a table or as JSON.

use crate::cli::StatArgs;
use crate::control_client;
use crate::protocol::{Request, Response};
use crate::stats_table;

pub fn run(args: StatArgs) -> Result<(), String> {
    let (response, mountpoint) = control_client::call(&args.mountpoint, &Request::Stats)?;
    let stats = match response {
        Response::Stats { stats } => stats,
        Response::Error { message } => return Err(control_client::daemon_error(&mountpoint, &message)),
        other => return Err(format!("{}: unexpected answer from the daemon: {other:?}", mountpoint.display())),
    };
    if args.json {
        let text = serde_json::to_string_pretty(&stats).map_err(|e| format!("cannot print stats: {e}"))?;
        println!("{text}");
    } else {
        println!("mcfs on {}", mountpoint.display());
        print!("{}", stats_table::render(&stats));
    }
    Ok(())
}
