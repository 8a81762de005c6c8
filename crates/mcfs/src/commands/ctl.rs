//! `mcfs ctl`: one control action on a mounted mcfs.

use crate::cli::{CtlAction, CtlArgs};
use crate::control_client;
use crate::output::print;
use crate::protocol::{Request, Response};
use std::path::Path;

/// What `ctl MNT fg` takes and prints for "no foreground app".
const NO_APP: &str = "none";

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
        CtlAction::Fg { app: None } => return print_foreground(&args.mountpoint),
        CtlAction::Fg { app: Some(app) } if app == NO_APP => {
            (Request::SetForeground { app: None }, "no app is in the foreground now".to_string())
        }
        CtlAction::Fg { app: Some(app) } => {
            (Request::SetForeground { app: Some(app.clone()) }, format!("{app} is now the foreground app"))
        }
        CtlAction::Advance { seconds } => {
            let nanos = (seconds * 1e9).round() as u64;
            (Request::Advance { nanos }, format!("virtual clock moved {seconds} s forward"))
        }
    };
    control_client::call_expect_done(&args.mountpoint, &request)?;
    print(&format!("{}: {done}\n", args.mountpoint.display()))
}

/// Prints the foreground app's name alone (`none` if there is none), for scripts.
fn print_foreground(mountpoint: &Path) -> Result<(), String> {
    let (app, _) = control_client::call_expecting(mountpoint, &Request::Foreground, |r| match r {
        Response::Foreground { app } => Ok(app),
        other => Err(other),
    })?;
    print(&format!("{}\n", app.as_deref().unwrap_or(NO_APP)))
}

fn mode_name(mode: mcfs_core::SyncMode) -> &'static str {
    match mode {
        mcfs_core::SyncMode::Sync => "sync",
        mcfs_core::SyncMode::Memory => "memory",
    }
}
