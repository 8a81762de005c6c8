//! `mcfs trace import --format strace|csv INPUT -o OUTPUT`: other tools' traces into mcfs traces, through
//! the importers of `mcfs_sim::import` (their rules are in docs/TRACE_FORMAT.md, "Importers").
//!
//! Invariant: the first bad line stops the import with the input's name, the line number and the reason,
//! and leaves no output file (see `files::write_trace`). Options of the other format are usage errors, so
//! a mistyped command is not silently half-applied.

use super::files::{open_input, write_trace, Form};
use crate::output::print;
use clap::error::ErrorKind;
use clap::{Args, CommandFactory, ValueEnum};
use mcfs_sim::import::csv::{ColumnSpec, CsvImporter, CsvOptions, TimeUnit};
use mcfs_sim::import::strace::{StraceImporter, StraceOptions};
use mcfs_sim::{TraceError, TraceEvent};
use std::io::BufReader;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImportFormat {
    /// Output of `strace -f -tt -y -o LOG COMMAND`.
    Strace,
    /// One request per row (block traces and the like); needs --columns.
    Csv,
}

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// What INPUT is.
    #[arg(long, value_name = "FORMAT")]
    pub format: ImportFormat,
    /// The file to import.
    #[arg(value_name = "INPUT")]
    pub input: PathBuf,
    /// The mcfs trace to write: binary if its name ends in .bin, text otherwise (unless --to says).
    #[arg(short = 'o', long = "output", value_name = "OUTPUT")]
    pub output: PathBuf,
    /// Form of the output, whatever its name.
    #[arg(long, value_name = "FORM")]
    pub to: Option<Form>,

    /// App of processes whose execve is not in the log [default: strace].
    #[arg(long, value_name = "NAME", help_heading = "strace options")]
    pub app: Option<String>,
    /// Keep only events on paths under PREFIX (repeatable) [default: every absolute path outside /proc,
    /// /sys and /dev].
    #[arg(long = "path-prefix", value_name = "PREFIX", help_heading = "strace options")]
    pub path_prefixes: Vec<PathBuf>,

    /// Column (1-based) of each field: time=N,app=N,op=N,offset=N,size=N[,pid=N][,path=N].
    #[arg(long, value_name = "SPEC", value_parser = parse_columns, help_heading = "CSV options")]
    pub columns: Option<ColumnSpec>,
    /// Op-column values meaning a read [default: R].
    #[arg(long = "op-read", value_name = "R[,R2...]", value_delimiter = ',', help_heading = "CSV options")]
    pub op_read: Vec<String>,
    /// Op-column values meaning a write [default: W].
    #[arg(long = "op-write", value_name = "W[,W2...]", value_delimiter = ',', help_heading = "CSV options")]
    pub op_write: Vec<String>,
    /// Unit of the time column: s, ms, us or ns [default: s].
    #[arg(long = "time-unit", value_name = "UNIT", value_parser = parse_time_unit, help_heading = "CSV options")]
    pub time_unit: Option<TimeUnit>,
    /// Bytes per unit of the offset column, e.g. 512 for sectors [default: 1].
    #[arg(long = "offset-unit", value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1..), help_heading = "CSV options")]
    pub offset_unit: Option<u64>,
    /// Bytes per unit of the size column [default: 1].
    #[arg(long = "size-unit", value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1..), help_heading = "CSV options")]
    pub size_unit: Option<u64>,
    /// Field separator: one ASCII character, or `tab` [default: ,].
    #[arg(long, value_name = "CHAR", value_parser = parse_delimiter, help_heading = "CSV options")]
    pub delimiter: Option<u8>,
    /// Skip the first row (column titles).
    #[arg(long, help_heading = "CSV options")]
    pub header: bool,
    /// Skip rows whose op is neither a read nor a write instead of stopping.
    #[arg(long = "skip-other-ops", help_heading = "CSV options")]
    pub skip_other_ops: bool,
    /// File of every event when there is no path column [default: /blockdev].
    #[arg(long = "default-path", value_name = "PATH", help_heading = "CSV options")]
    pub default_path: Option<PathBuf>,
}

pub fn run(args: &ImportArgs) -> Result<(), String> {
    if let Err(message) = check_options(args) {
        usage_error(message);
    }
    let input = BufReader::new(open_input(&args.input)?);
    let form = Form::for_output(&args.output, args.to);
    let name = args.input.display().to_string();
    let located = |r: Result<TraceEvent, TraceError>| r.map_err(|e| format!("{name}: {e}"));
    let count = match args.format {
        ImportFormat::Strace => {
            write_trace(&args.output, form, StraceImporter::new(input, strace_options(args)).map(located))?
        }
        ImportFormat::Csv => write_trace(&args.output, form, CsvImporter::new(input, csv_options(args)?).map(located))?,
    };
    print(&format!(
        "imported {count} events from {} into {} ({} form)\n",
        args.input.display(),
        args.output.display(),
        form.name()
    ))
}

/// Exits as clap does for a bad command line (status 2), with the usage of `trace import`.
fn usage_error(message: String) -> ! {
    let mut cli = crate::cli::Cli::command();
    cli.build();
    let import = cli.find_subcommand("trace").and_then(|t| t.find_subcommand("import")).cloned();
    import.unwrap_or(cli).error(ErrorKind::ArgumentConflict, message).exit()
}

/// Options that belong to the other format, or a CSV import without --columns.
fn check_options(args: &ImportArgs) -> Result<(), String> {
    let strace_only = [("--app", args.app.is_some()), ("--path-prefix", !args.path_prefixes.is_empty())];
    let csv_only = [
        ("--columns", args.columns.is_some()),
        ("--op-read", !args.op_read.is_empty()),
        ("--op-write", !args.op_write.is_empty()),
        ("--time-unit", args.time_unit.is_some()),
        ("--offset-unit", args.offset_unit.is_some()),
        ("--size-unit", args.size_unit.is_some()),
        ("--delimiter", args.delimiter.is_some()),
        ("--header", args.header),
        ("--skip-other-ops", args.skip_other_ops),
        ("--default-path", args.default_path.is_some()),
    ];
    let (foreign, format) = match args.format {
        ImportFormat::Strace => (&csv_only[..], "strace"),
        ImportFormat::Csv => (&strace_only[..], "csv"),
    };
    if let Some((option, _)) = foreign.iter().find(|(_, given)| *given) {
        return Err(format!("{option} does not apply to --format {format}"));
    }
    if args.format == ImportFormat::Csv && args.columns.is_none() {
        return Err("--format csv needs --columns time=N,app=N,op=N,offset=N,size=N".into());
    }
    Ok(())
}

fn strace_options(args: &ImportArgs) -> StraceOptions {
    let mut options = StraceOptions::default();
    if let Some(app) = &args.app {
        options.default_app = app.clone();
    }
    options.path_prefixes = args.path_prefixes.iter().map(|p| p.as_os_str().as_bytes().to_vec()).collect();
    options
}

fn csv_options(args: &ImportArgs) -> Result<CsvOptions, String> {
    let columns = args.columns.clone().ok_or("--format csv needs --columns")?;
    let mut options = CsvOptions::new(columns);
    if !args.op_read.is_empty() {
        options.op_read = args.op_read.clone();
    }
    if !args.op_write.is_empty() {
        options.op_write = args.op_write.clone();
    }
    options.time_unit = args.time_unit.unwrap_or(options.time_unit);
    options.offset_unit = args.offset_unit.unwrap_or(options.offset_unit);
    options.size_unit = args.size_unit.unwrap_or(options.size_unit);
    options.delimiter = args.delimiter.unwrap_or(options.delimiter);
    options.has_header = args.header;
    options.skip_other_ops = args.skip_other_ops;
    if let Some(path) = &args.default_path {
        options.default_path = path.as_os_str().as_bytes().to_vec();
    }
    Ok(options)
}

fn parse_columns(text: &str) -> Result<ColumnSpec, String> {
    text.parse().map_err(|e: TraceError| e.to_string())
}

fn parse_time_unit(text: &str) -> Result<TimeUnit, String> {
    text.parse().map_err(|e: TraceError| e.to_string())
}

fn parse_delimiter(text: &str) -> Result<u8, String> {
    match text.as_bytes() {
        b"tab" | b"\\t" | b"\t" => Ok(b'\t'),
        [b] if b.is_ascii() && !matches!(b, b'"' | b'\n' | b'\r') => Ok(*b),
        _ => Err(format!("'{text}' is not one ASCII character (other than a quote or a line break) or 'tab'")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delimiters() {
        assert_eq!(parse_delimiter(";"), Ok(b';'));
        assert_eq!(parse_delimiter("tab"), Ok(b'\t'));
        for bad in ["", ";;", "\"", "é"] {
            assert!(parse_delimiter(bad).is_err(), "{bad:?}");
        }
    }
}
