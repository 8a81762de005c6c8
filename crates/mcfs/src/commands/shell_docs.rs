//! `mcfs completions SHELL` and `mcfs manpages DIR`: both generated from the
//! clap definitions in `cli`, so they list exactly the subcommands, flags
//! and accepted values the parser takes.

use crate::cli::{Cli, CompletionsArgs, ManpagesArgs};
use clap::CommandFactory;

pub fn completions(args: CompletionsArgs) -> Result<(), String> {
    clap_complete::generate(args.shell, &mut Cli::command(), "mcfs", &mut std::io::stdout());
    Ok(())
}

pub fn manpages(args: ManpagesArgs) -> Result<(), String> {
    if !args.dir.is_dir() {
        return Err(format!("{}: not a directory", args.dir.display()));
    }
    clap_mangen::generate_to(Cli::command(), &args.dir).map_err(|e| format!("{}: {e}", args.dir.display()))
}
