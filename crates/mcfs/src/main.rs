//! `mcfs`: the command-line program. Parses arguments and runs one command;
//! a failed command prints `mcfs: <what failed and why>` on stderr and exits
//! 1 (usage errors exit 2, from clap). A command whose output pipe closes
//! ends at once and silently, killed by SIGPIPE like `cat` (see `output`).

mod backing_lock;
mod battery;
#[cfg(feature = "bench")]
mod bench;
mod cli;
mod commands;
mod config_file;
mod config_override;
mod control;
mod control_client;
mod daemon;
mod daemon_start;
mod daemonize;
mod fg_watch;
mod fuse_mount;
mod input_devices;
mod logging;
mod metrics_file;
mod mount_helper;
mod mount_options;
mod mountinfo;
mod output;
mod panic_guard;
mod polling;
mod preflight;
mod proc_table;
mod prometheus;
mod protocol;
mod record;
#[cfg(feature = "report")]
mod report;
mod sd_notify;
mod service_status;
mod signals;
mod socket_path;
mod state_dir;
mod stats_fields;
mod stats_rates;
mod stats_table;
mod stop_signal;
mod ticker;
mod unmount;
mod user_input;
mod version;

use clap::{CommandFactory, Parser};
use cli::{Cli, Command};
use mount_helper::Invocation;

fn main() {
    // Before parsing, so that `--help | head` ends quietly too.
    output::sigpipe_ends_process(true);
    let cli = Cli::parse_from(command_line());
    if matches!(cli.command, Command::Mount(_) | Command::Flashdev(_)) {
        output::sigpipe_ends_process(false);
    }
    let result = match cli.command {
        Command::Mount(args) => commands::mount::run(args),
        Command::Umount(args) => with_logging(|| commands::umount::run(args)),
        Command::Stat(args) => with_logging(|| commands::stat::run(args)),
        Command::Ctl(args) => with_logging(|| commands::ctl::run(args)),
        Command::Recover(args) => with_logging(|| commands::recover::run(args)),
        #[cfg(feature = "bench")]
        Command::Bench(args) => bench::run(&args),
        #[cfg(feature = "report")]
        Command::Report(args) => with_logging(|| commands::report::run(args)),
        #[cfg(feature = "sim")]
        Command::Trace(args) => with_logging(|| commands::trace::run(args)),
        #[cfg(feature = "sim")]
        Command::Sim(args) => with_logging(|| commands::sim::run(args)),
        Command::Flashdev(args) => commands::flashdev::run(args),
        Command::Config(args) => with_logging(|| commands::config::run(args)),
        Command::Completions(args) => commands::shell_docs::completions(args),
        Command::Manpages(args) => commands::shell_docs::manpages(args),
    };
    if let Err(message) = result {
        // The journal reads a leading "<3>" as the line's priority: err.
        let priority = if logging::stderr_is_journal() { "<3>" } else { "" };
        output::eprint_line(&format!("{priority}mcfs: {message}"));
        std::process::exit(1);
    }
}

/// The arguments as the `mcfs` grammar takes them, also when mount(8),
/// umount(8) or mount.fuse3 ran us (`mount_helper`).
fn command_line() -> Vec<std::ffi::OsString> {
    let cli = Cli::command();
    let is_subcommand = |arg: &std::ffi::OsStr| arg == "help" || cli.find_subcommand(arg).is_some();
    match mount_helper::translate(std::env::args_os().collect(), is_subcommand) {
        Ok(Invocation::Args(args)) => args,
        Ok(Invocation::Fake) => std::process::exit(0),
        Err(message) => {
            output::eprint_line(&format!("mcfs: {message}"));
            std::process::exit(2);
        }
    }
}

/// Short commands log only warnings unless MCFS_LOG / RUST_LOG say otherwise.
fn with_logging(command: impl FnOnce() -> Result<(), String>) -> Result<(), String> {
    logging::init("warn", logging::Target::Stderr);
    command()
}
