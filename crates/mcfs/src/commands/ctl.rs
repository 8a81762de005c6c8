//! `mcfs ctl`: one control action on a mounted mcfs.

use crate::cli::{CtlAction, CtlArgs};
use crate::control_client;
use crate::protocol::Request;

pub fn run(args: CtlArgs) -> Result<(), String> {
    let (request, done) = match &args.action {
        CtlAction::Checkpoint => (Request::Checkpoint, "checkpoint complete".to_string()),
        CtlAction::Battery { percent } => {
            (Request::Battery { percent: *percent }, format!("battery set to {percent}%"))
        }
        CtlAction::Mode { app, mode } => {
            let mode = (*mode).into();
            (Request::Mode { app: app.clone(), mode }, format!("{app} is now in {} mode", mode_name(mode)))
        }
        CtlAction::Input => (Request::Input, "user input noted".to_string()),
        CtlAction::Advance { seconds } => {
            let nanos = (seconds * 1e9).round() as u64;
            (Request::Advance { nanos }, format!("virtual clock moved {seconds} s forward"))
        }
    };
    control_client::call_expect_done(&args.mountpoint, &request)?;
    println!("{}: {done}", args.mountpoint.display());
    Ok(())
}

fn mode_name(mode: mcfs_core::SyncMode) -> &'static str {
    match mode {
        mcfs_core::SyncMode::Sync => "sync",
        mcfs_core::SyncMode::Memory => "memory",
    }
}
