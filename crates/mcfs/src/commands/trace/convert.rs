//! `mcfs trace convert INPUT -o OUTPUT [--to text|binary]`: an mcfs trace into the other form (or the same
//! form, normalized). The input's form is told by its first bytes; both forms hold the same events, so the
//! conversion is lossless both ways (docs/TRACE_FORMAT.md).

use super::files::{write_trace, Form, TraceInput};
use crate::output::print;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ConvertArgs {
    /// The trace to convert, text or binary.
    #[arg(value_name = "INPUT")]
    pub input: PathBuf,
    /// The trace to write: binary if its name ends in .bin, text otherwise (unless --to says).
    #[arg(long = "output", short_alias = 'o', value_name = "OUTPUT")]
    pub output: PathBuf,
    /// Form of the output, whatever its name.
    #[arg(long, value_name = "FORM")]
    pub to: Option<Form>,
}

pub fn run(args: &ConvertArgs) -> Result<(), String> {
    let input = TraceInput::open(&args.input)?;
    let from = input.form();
    let to = Form::for_output(&args.output, args.to);
    let count = write_trace(&args.output, to, input)?;
    print(&format!(
        "converted {count} events: {} ({}) to {} ({})\n",
        args.input.display(),
        from.name(),
        args.output.display(),
        to.name()
    ))
}
