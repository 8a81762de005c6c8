//! Logging with `tracing` (and fuser's `log` records, bridged), through one
//! `LogSink`: stderr for commands and `--foreground`, the journal when
//! systemd connected stderr to it (`journal`), else the daemon's log file,
//! BACKING/.mcfs/mcfs.log (rotated at a size cap, mode 0600); a daemon's
//! `--log` overrides the choice (`destination`). Records at INFO and above
//! are rate-limited per call site (`rate_limit`). The level comes from
//! MCFS_LOG, else RUST_LOG, else the caller's default; fuser's line per
//! request served is TRACE (`quiet_requests`).
//!
//! Invariant: logging never panics and never fails its caller: a record the
//! sink cannot write is dropped and counted (`counts`, shown by `mcfs stat`),
//! and tracing-subscriber's own error messages (an `eprintln!`, which panics
//! when stderr fails) are off. A daemon's stderr is /dev/null (see
//! `daemonize`); its panic messages are logged here too (`panic_guard`).

mod journal;
mod rate_limit;
mod sink;

pub use journal::stderr_is_journal;
use rate_limit::RateLimit;
use sink::LogSink;
pub use sink::{LogCounts, LogFile, Target};
use std::io::IsTerminal;
use std::sync::{Arc, OnceLock};
use tracing::level_filters::LevelFilter;
use tracing::{Level, Metadata};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// The daemon's log file in BACKING/.mcfs.
pub const LOG_FILE: &str = "mcfs.log";

/// The installed pipeline: the sink for `counts`, the limiter for `flush`.
struct Installed {
    sink: Arc<LogSink>,
    limit: RateLimit,
}

static INSTALLED: OnceLock<Installed> = OnceLock::new();

pub fn init(default_level: &str, target: Target) {
    let spec = ["MCFS_LOG", "RUST_LOG"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
        .unwrap_or_else(|| default_level.to_string());
    let (filter, bad_spec) = match EnvFilter::try_new(&spec) {
        Ok(filter) => (quiet_requests(filter, &spec), None),
        Err(e) => (quiet_requests(EnvFilter::new(default_level), default_level), Some(e)),
    };
    let ansi = matches!(target, Target::Stderr) && std::io::stderr().is_terminal();
    let sink = Arc::new(LogSink::new(target));
    let limit = RateLimit::new(sink.clone());
    let fmt = tracing_subscriber::fmt::layer().with_writer(SinkWriter(sink.clone())).log_internal_errors(false);
    // journald stamps the time and takes the level from the "<N>" prefix.
    let fmt = if sink.is_journal() {
        fmt.without_time().with_level(false).with_ansi(false).boxed()
    } else {
        fmt.with_ansi(ansi).boxed()
    };
    // A second init (never expected) is harmless, so its error is ignored.
    let installed = tracing_subscriber::registry().with(filter).with(limit.clone()).with(fmt).try_init();
    if installed.is_ok() {
        let _ = INSTALLED.set(Installed { sink, limit });
    }
    if let Some(e) = bad_spec {
        tracing::warn!("ignoring bad log filter {spec:?}: {e}");
    }
}

/// Where a daemon logs (`--log`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Destination {
    /// BACKING/.mcfs/mcfs.log.
    File,
    /// stderr, with timestamps.
    Stderr,
    /// stderr in the journal's format (`journal`).
    Journal,
}

/// Where a daemon logs: where it was asked to, else to the journal when
/// systemd connected stderr to it, else to stderr in the foreground and to
/// the file when forked.
pub fn destination(asked: Option<Destination>, foreground: bool) -> Destination {
    match asked {
        Some(destination) => destination,
        None if stderr_is_journal() => Destination::Journal,
        None if foreground => Destination::Stderr,
        None => Destination::File,
    }
}

/// fuser logs every request it serves at DEBUG (target `fuser::request`):
/// 97 % of a debug log. They belong at TRACE, so they show only when the
/// filter asks for TRACE or names them.
fn quiet_requests(filter: EnvFilter, spec: &str) -> EnvFilter {
    if spec.contains("fuser::request") || filter.max_level_hint() == Some(LevelFilter::TRACE) {
        return filter;
    }
    match "fuser::request=info".parse() {
        Ok(directive) => filter.add_directive(directive),
        Err(_) => filter,
    }
}

/// What happened to log records so far (all zero before `init`).
pub fn counts() -> LogCounts {
    INSTALLED.get().map_or_else(LogCounts::default, |i| i.sink.counts())
}

/// Where the log goes ("stderr" before `init`).
pub fn place() -> String {
    INSTALLED.get().map_or_else(|| "stderr".to_string(), |i| i.sink.place())
}

/// Writes the rate limit's pending summary lines (at exit).
pub fn flush() {
    if let Some(installed) = INSTALLED.get() {
        installed.limit.flush();
    }
}

/// Hands the fmt layer a writer that puts each formatted event into the
/// sink as one record of the event's level.
struct SinkWriter(Arc<LogSink>);

impl<'a> MakeWriter<'a> for SinkWriter {
    type Writer = RecordWriter<'a>;

    fn make_writer(&'a self) -> RecordWriter<'a> {
        RecordWriter { sink: &self.0, level: Level::INFO }
    }

    fn make_writer_for(&'a self, meta: &Metadata<'_>) -> RecordWriter<'a> {
        RecordWriter { sink: &self.0, level: *meta.level() }
    }
}

struct RecordWriter<'a> {
    sink: &'a LogSink,
    level: Level,
}

impl std::io::Write for RecordWriter<'_> {
    /// Always "written": a record the sink drops is counted there.
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.sink.write_record(self.level, buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
