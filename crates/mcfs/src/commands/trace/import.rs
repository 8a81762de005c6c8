//! `mcfs trace import --format strace|csv INPUT -o OUTPUT`: other tools' traces into mcfs traces, through
//! the importers of `mcfs_sim::import` (their rules are in docs/TRACE_FORMAT.md, "Importers").
//!
//! Invariant: the first bad line stops the import with the input's name, the line number and the reason,
//! and leaves no output file (see `files::write_trace`). Options of the other format are usage errors, so
//! a mistyped command is not silently half-applied. Nothing is dropped silently either: what an importer
//! left out, shortened or rounded is counted on stdout, and what looks like a mistake (`mcfs_sim::lint`)
//! is warned about on stderr.
//!
//! The input is a file or `-` (stdin), gzip- or zstd-compressed or not (told by its first bytes).

use super::files::{open_input, write_trace, Form};
use super::parse_seconds;
use crate::output::{eprint_line, print};
use clap::error::ErrorKind;
use clap::{Args, CommandFactory, ValueEnum};
use mcfs_sim::import::compressed::{decompressed, Compression};
use mcfs_sim::import::csv::{ColumnSpec, CsvImporter, CsvOptions, ProcessFormat, TimeUnit};
use mcfs_sim::import::gaps::{GapCap, GapReport};
use mcfs_sim::import::strace::{StraceImporter, StraceOptions};
use mcfs_sim::lint::TraceLint;
use mcfs_sim::timefmt::format_seconds;
use mcfs_sim::{TraceError, TraceEvent};
use std::io::{BufRead, BufReader};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

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
    /// The file to import, or - for stdin; gzip and zstd compression are undone.
    #[arg(value_name = "INPUT")]
    pub input: PathBuf,
    /// The mcfs trace to write: binary if its name ends in .bin, text otherwise (unless --to says).
    #[arg(long = "output", short_alias = 'o', value_name = "OUTPUT")]
    pub output: PathBuf,
    /// Form of the output, whatever its name.
    #[arg(long, value_name = "FORM")]
    pub to: Option<Form>,
    /// Shorten every idle gap between two events to SECONDS (later events move earlier), e.g. the days
    /// between recordings in a trace stamped with time since boot.
    #[arg(long = "max-gap", value_name = "SECONDS", value_parser = parse_seconds)]
    pub max_gap: Option<Duration>,

    /// App of processes whose execve is not in the log [default: strace].
    #[arg(long, value_name = "NAME", help_heading = "strace options")]
    pub app: Option<String>,
    /// Keep only events on paths under PREFIX (repeatable) [default: every absolute path outside /proc,
    /// /sys and /dev].
    #[arg(long = "path-prefix", value_name = "PREFIX", help_heading = "strace options")]
    pub path_prefixes: Vec<PathBuf>,
    /// Working directory of processes whose own the log does not show (for their relative paths).
    #[arg(long, value_name = "DIR", help_heading = "strace options")]
    pub cwd: Option<PathBuf>,

    /// Column (1-based) of each field: time=N,op=N,offset=N,size=N and app=N[,pid=N] or process=N, [,path=N].
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
    /// How the process column names app and pid: comm-tid (COMM-TID, split at the last -) or comm
    /// [default: comm-tid].
    #[arg(long = "process-format", value_name = "FORMAT", value_parser = parse_process_format, help_heading = "CSV options")]
    pub process_format: Option<ProcessFormat>,
    /// Bytes per unit of the offset column: a number, or sector (512) [default: 1].
    #[arg(long = "offset-unit", value_name = "BYTES", value_parser = parse_unit, help_heading = "CSV options")]
    pub offset_unit: Option<u64>,
    /// Bytes per unit of the size column: a number, or sector (512) [default: 1].
    #[arg(long = "size-unit", value_name = "BYTES", value_parser = parse_unit, help_heading = "CSV options")]
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
    /// Without a path column, give every app its own file, DEFAULT_PATH/APP, so that per-app results do
    /// not depend on which app's row comes first.
    #[arg(long = "file-per-app", help_heading = "CSV options")]
    pub file_per_app: bool,
}

pub fn run(args: &ImportArgs) -> Result<(), String> {
    if let Err(message) = check_options(args) {
        usage_error(message);
    }
    let (input, compression) = open(&args.input)?;
    let form = Form::for_output(&args.output, args.to);
    // A syscall's offsets and lengths are bytes: only block traces can carry sector numbers.
    let mut lint = match args.format {
        ImportFormat::Strace => TraceLint::without_unit_checks(),
        ImportFormat::Csv => TraceLint::default(),
    };
    let (count, gaps, mut notes): (u64, GapReport, Vec<String>) = match args.format {
        ImportFormat::Strace => {
            let mut importer = StraceImporter::new(input, strace_options(args));
            let (count, gaps) = write_imported(args, form, importer.by_ref(), &mut lint)?;
            (count, gaps, importer.skipped().iter().map(|(why, n)| format!("skipped {n} call(s): {why}")).collect())
        }
        ImportFormat::Csv => {
            let mut importer = CsvImporter::new(input, csv_options(args)?);
            let (count, gaps) = write_imported(args, form, importer.by_ref(), &mut lint)?;
            let report = importer.report();
            let mut notes = vec![format!("created {} file(s) before their first row", report.files_created)];
            if report.times_truncated > 0 {
                notes.push(format!("{} time(s) finer than a nanosecond were truncated", report.times_truncated));
            }
            if report.processes_without_tid > 0 {
                notes.push(format!(
                    "{} row(s) had a process without -TID: the whole field is their app, their pid 0",
                    report.processes_without_tid
                ));
            }
            (count, gaps, notes)
        }
    };
    if let Some(max_gap) = args.max_gap {
        notes.push(format!(
            "shortened {} gap(s) longer than {} s to it, {} s removed",
            gaps.gaps_shortened,
            format_seconds(u64::try_from(max_gap.as_nanos()).unwrap_or(u64::MAX)),
            format_seconds(gaps.removed_ns)
        ));
    }
    let compressed = match compression {
        Compression::None => "",
        Compression::Gzip => " (gzip)",
        Compression::Zstd => " (zstd)",
    };
    let mut out = format!(
        "imported {count} events from {}{compressed} into {} ({} form)\n",
        input_name(&args.input),
        args.output.display(),
        form.name()
    );
    notes.iter().for_each(|n| out.push_str(&format!("  {n}\n")));
    print(&out)?;
    for warning in lint.warnings() {
        eprint_line(&format!("mcfs: warning: {}: {warning}", args.output.display()));
    }
    Ok(())
}

/// The input's name in messages.
fn input_name(path: &Path) -> String {
    if path == Path::new("-") {
        "stdin".into()
    } else {
        path.display().to_string()
    }
}

/// The input, decompressed: a file, or stdin for `-`.
fn open(path: &Path) -> Result<(Box<dyn BufRead>, Compression), String> {
    let raw: Box<dyn BufRead> = if path == Path::new("-") {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(BufReader::new(open_input(path)?))
    };
    decompressed(raw).map_err(|e| format!("{}: {e}", input_name(path)))
}

/// Writes what an importer yields, gaps shortened (with `--max-gap`) and every event shown to `lint`; the
/// number of events written and the gaps shortened.
fn write_imported(
    args: &ImportArgs,
    form: Form,
    events: impl Iterator<Item = Result<TraceEvent, TraceError>>,
    lint: &mut TraceLint,
) -> Result<(u64, GapReport), String> {
    let name = input_name(&args.input);
    let max_gap_ns = args.max_gap.map_or(u64::MAX, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    let mut capped = GapCap::new(events, max_gap_ns);
    let shown = capped.by_ref().map(|r| r.inspect(|event| lint.add(event)).map_err(|e| format!("{name}: {e}")));
    let count = write_trace(&args.output, form, shown)?;
    Ok((count, capped.report()))
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
    let strace_only = [
        ("--app", args.app.is_some()),
        ("--path-prefix", !args.path_prefixes.is_empty()),
        ("--cwd", args.cwd.is_some()),
    ];
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
        ("--process-format", args.process_format.is_some()),
        ("--file-per-app", args.file_per_app),
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
    let columns = args.columns.as_ref();
    if args.process_format.is_some() && columns.is_some_and(|c| c.process.is_none()) {
        return Err("--process-format needs a process=N column".into());
    }
    if args.file_per_app && columns.is_some_and(|c| c.path.is_some()) {
        return Err("--file-per-app names files by app; it does not fit a path=N column".into());
    }
    Ok(())
}

fn strace_options(args: &ImportArgs) -> StraceOptions {
    let mut options = StraceOptions::default();
    if let Some(app) = &args.app {
        options.default_app = app.clone();
    }
    options.path_prefixes = args.path_prefixes.iter().map(|p| p.as_os_str().as_bytes().into()).collect();
    options.cwd = args.cwd.as_ref().map(|d| d.as_os_str().as_bytes().into());
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
        options.default_path = path.as_os_str().as_bytes().into();
    }
    options.file_per_app = args.file_per_app;
    options.process_format = args.process_format.unwrap_or(options.process_format);
    Ok(options)
}

fn parse_columns(text: &str) -> Result<ColumnSpec, String> {
    text.parse().map_err(|e: TraceError| e.to_string())
}

fn parse_time_unit(text: &str) -> Result<TimeUnit, String> {
    text.parse().map_err(|e: TraceError| e.to_string())
}

fn parse_process_format(text: &str) -> Result<ProcessFormat, String> {
    text.parse().map_err(|e: TraceError| e.to_string())
}

/// A unit in bytes: a positive number, or `sector` (512).
fn parse_unit(text: &str) -> Result<u64, String> {
    match text {
        "sector" | "sectors" => Ok(512),
        _ => match text.parse::<u64>() {
            Ok(n) if n >= 1 => Ok(n),
            _ => Err(format!("'{text}' is not a positive number of bytes or 'sector'")),
        },
    }
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

    #[test]
    fn units_are_numbers_or_sectors() {
        assert_eq!(parse_unit("sector"), Ok(512));
        assert_eq!(parse_unit("4096"), Ok(4096));
        for bad in ["0", "-1", "sectorz", ""] {
            assert!(parse_unit(bad).is_err(), "{bad:?}");
        }
    }
}
