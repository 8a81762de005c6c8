//! Importer for request-per-row CSV traces, in particular block-level traces recorded on phones.
//!
//! A [`ColumnSpec`] says which (1-based) column holds what; each row becomes one read or write event whose
//! offset and length are the row's values times the configured units (512 for sector offsets). Rows whose
//! operation is neither the read nor the write code stop the import unless `skip_other_ops` is set, so a
//! wrong `--op-read` is noticed at the first row rather than silently producing an empty trace.
//!
//! The trace replays as it is: the first row that touches a file is preceded by a `create` of it, by that
//! row's app (a file's data is charged to the app that created it, so `file_per_app` gives every app a file
//! of its own, and per-app results do not depend on which app's row comes first). A process column in the
//! `comm-TID` form of eBPF block tracers gives app and pid; a row whose process has no `-TID` (the
//! tracers print some threads by name alone: 19 % of the rows of one public phone trace) keeps its whole
//! field as the app with pid 0, and the report counts it.

use std::collections::HashSet;
use std::io::BufRead;
use std::str::FromStr;

use crate::error::{Position, TraceError};
use crate::lines::LineReader;
use crate::timefmt::parse_decimal_exact;
use crate::trace::{EventKind, PathBytes, TraceEvent};

/// Which column (1-based) holds each field. Exactly one of `app` and `process` is set; `pid` only with `app`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnSpec {
    pub time: usize,
    pub app: Option<usize>,
    /// App and pid in one field, split by [`ProcessFormat`].
    pub process: Option<usize>,
    pub op: usize,
    pub offset: usize,
    pub size: usize,
    pub pid: Option<usize>,
    pub path: Option<usize>,
}

impl FromStr for ColumnSpec {
    type Err = TraceError;

    /// Parses `time=N,op=N,offset=N,size=N` with `app=N[,pid=N]` or `process=N`, and `[,path=N]`.
    fn from_str(spec: &str) -> Result<Self, TraceError> {
        let bad = |reason: String| TraceError::at(Position::None, format!("column spec '{spec}': {reason}"));
        let (mut time, mut app, mut process, mut op, mut offset, mut size, mut pid, mut path) =
            (None, None, None, None, None, None, None, None);
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (name, number) = item.split_once('=').ok_or_else(|| bad(format!("'{item}' is not NAME=COLUMN")))?;
            let column: usize = match number.trim().parse() {
                Ok(n) if n >= 1 => n,
                _ => return Err(bad(format!("column '{number}' of '{name}' is not a number from 1 up"))),
            };
            let slot = match name.trim() {
                "time" => &mut time,
                "app" => &mut app,
                "process" => &mut process,
                "op" => &mut op,
                "offset" => &mut offset,
                "size" => &mut size,
                "pid" => &mut pid,
                "path" => &mut path,
                other => {
                    return Err(bad(format!(
                        "unknown field '{other}' (known: time app process op offset size pid path)"
                    )))
                }
            };
            if slot.replace(column).is_some() {
                return Err(bad(format!("field '{name}' given twice")));
            }
        }
        let need = |v: Option<usize>, name: &str| v.ok_or_else(|| bad(format!("field '{name}' is required")));
        match (app, process, pid) {
            (None, None, _) => return Err(bad("field 'app' (or 'process') is required".into())),
            (Some(_), Some(_), _) => return Err(bad("give 'app' or 'process', not both".into())),
            (None, Some(_), Some(_)) => return Err(bad("'process' gives the pid: drop 'pid'".into())),
            _ => {}
        }
        Ok(ColumnSpec {
            time: need(time, "time")?,
            app,
            process,
            op: need(op, "op")?,
            offset: need(offset, "offset")?,
            size: need(size, "size")?,
            pid,
            path,
        })
    }
}

/// Unit of the time column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    Seconds,
    Millis,
    Micros,
    Nanos,
}

impl TimeUnit {
    fn nanos(self) -> u64 {
        match self {
            TimeUnit::Seconds => 1_000_000_000,
            TimeUnit::Millis => 1_000_000,
            TimeUnit::Micros => 1_000,
            TimeUnit::Nanos => 1,
        }
    }
}

impl FromStr for TimeUnit {
    type Err = TraceError;

    fn from_str(s: &str) -> Result<Self, TraceError> {
        match s {
            "s" => Ok(TimeUnit::Seconds),
            "ms" => Ok(TimeUnit::Millis),
            "us" => Ok(TimeUnit::Micros),
            "ns" => Ok(TimeUnit::Nanos),
            _ => Err(TraceError::at(Position::None, format!("time unit '{s}' is not one of s, ms, us, ns"))),
        }
    }
}

/// How a process field names app and pid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessFormat {
    /// `COMM-TID` (`com.android.chrome-4711`, `kworker/u8:2-77`): the app is everything before the last
    /// `-`, the pid the decimal number after it (`^(.*)-([0-9]+)$`, a 32-bit number). A field without
    /// such a suffix (`AsyncTask`) is all app, with no pid.
    CommTid,
    /// The whole field is the app; the pid is 0.
    Comm,
}

impl FromStr for ProcessFormat {
    type Err = TraceError;

    fn from_str(s: &str) -> Result<Self, TraceError> {
        match s {
            "comm-tid" => Ok(ProcessFormat::CommTid),
            "comm" => Ok(ProcessFormat::Comm),
            _ => Err(TraceError::at(Position::None, format!("process format '{s}' is not one of comm-tid, comm"))),
        }
    }
}

impl ProcessFormat {
    /// App and pid of a process field; no pid for a `comm-tid` field without a TID.
    fn split(self, field: &str) -> (&str, Option<u32>) {
        let comm_tid = || {
            let (comm, tid) = field.rsplit_once('-')?;
            // `parse` alone would take a sign.
            let all_digits = !tid.is_empty() && tid.bytes().all(|b| b.is_ascii_digit());
            Some((comm, tid.parse().ok().filter(|_| all_digits)?))
        };
        match self {
            ProcessFormat::Comm => (field, Some(0)),
            ProcessFormat::CommTid => comm_tid().map_or((field, None), |(comm, tid)| (comm, Some(tid))),
        }
    }
}

/// How to read the rows.
#[derive(Debug, Clone)]
pub struct CsvOptions {
    pub columns: ColumnSpec,
    /// Values of the op column that mean a read (e.g. `R`, `RS`) ...
    pub op_read: Vec<String>,
    /// ... and a write.
    pub op_write: Vec<String>,
    pub time_unit: TimeUnit,
    /// Bytes per unit of the offset column (512 for sectors).
    pub offset_unit: u64,
    /// Bytes per unit of the size column.
    pub size_unit: u64,
    pub delimiter: u8,
    /// Skip the first non-comment row (column titles).
    pub has_header: bool,
    /// Skip rows whose op is neither a read nor a write instead of failing.
    pub skip_other_ops: bool,
    /// File of every event when there is no path column (a block trace addresses one device).
    pub default_path: PathBytes,
    /// Without a path column: one file per app, `DEFAULT_PATH/APP` (see [`per_app_path`]).
    pub file_per_app: bool,
    pub process_format: ProcessFormat,
}

impl CsvOptions {
    /// Defaults: ops `R`/`W`, seconds, byte offsets and sizes, commas, no header, the path `/blockdev`.
    pub fn new(columns: ColumnSpec) -> Self {
        CsvOptions {
            columns,
            op_read: vec!["R".into()],
            op_write: vec!["W".into()],
            time_unit: TimeUnit::Seconds,
            offset_unit: 1,
            size_unit: 1,
            delimiter: b',',
            has_header: false,
            skip_other_ops: false,
            default_path: b"/blockdev"[..].into(),
            file_per_app: false,
            process_format: ProcessFormat::CommTid,
        }
    }
}

/// What an import did beyond turning rows into reads and writes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CsvReport {
    /// Files created before their first row.
    pub files_created: u64,
    /// Rows whose time is finer than a nanosecond: it was truncated.
    pub times_truncated: u64,
    /// Rows whose `comm-tid` process had no TID: the whole field is their app, their pid 0.
    pub processes_without_tid: u64,
}

/// What reading one row noticed, for the report.
#[derive(Clone, Copy)]
struct RowNotes {
    time_truncated: bool,
    no_tid: bool,
}

/// Streams events out of a CSV trace.
pub struct CsvImporter<R: BufRead> {
    lines: LineReader<R>,
    options: CsvOptions,
    header_pending: bool,
    /// Files the trace has created so far.
    created: HashSet<PathBytes>,
    /// The row's event, held back while the `create` before it goes out.
    pending: Option<TraceEvent>,
    report: CsvReport,
    done: bool,
}

impl<R: BufRead> CsvImporter<R> {
    pub fn new(input: R, options: CsvOptions) -> Self {
        let header_pending = options.has_header;
        CsvImporter {
            lines: LineReader::new(input),
            options,
            header_pending,
            created: HashSet::new(),
            pending: None,
            report: CsvReport::default(),
            done: false,
        }
    }

    pub fn report(&self) -> &CsvReport {
        &self.report
    }

    fn read_next(&mut self) -> Result<Option<TraceEvent>, TraceError> {
        if let Some(event) = self.pending.take() {
            return Ok(Some(event));
        }
        let Some(row) = self.read_row()? else { return Ok(None) };
        let path = match &row.kind {
            EventKind::Read { path, .. } | EventKind::Write { path, .. } => path,
            _ => return Ok(Some(row)),
        };
        if self.created.contains(path) {
            return Ok(Some(row));
        }
        self.created.insert(path.clone());
        self.report.files_created += 1;
        let create = TraceEvent { kind: EventKind::Create { path: path.clone() }, ..row.clone() };
        self.pending = Some(row);
        Ok(Some(create))
    }

    fn read_row(&mut self) -> Result<Option<TraceEvent>, TraceError> {
        loop {
            let Some(line) = self.lines.next_line()? else { return Ok(None) };
            let line = std::str::from_utf8(line).map_err(|_| "row is not valid UTF-8".to_string());
            let result = line.and_then(|line| {
                if line.trim().is_empty() || line.starts_with('#') {
                    return Ok(None);
                }
                if std::mem::take(&mut self.header_pending) {
                    return Ok(None);
                }
                parse_row(line, &self.options)
            });
            match result {
                Ok(Some((event, notes))) => {
                    self.report.times_truncated += u64::from(notes.time_truncated);
                    self.report.processes_without_tid += u64::from(notes.no_tid);
                    return Ok(Some(event));
                }
                Ok(None) => continue,
                Err(reason) => return Err(TraceError::at(self.lines.position(), reason)),
            }
        }
    }
}

impl<R: BufRead> Iterator for CsvImporter<R> {
    type Item = Result<TraceEvent, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let next = self.read_next();
        crate::error::stop_after_error(&mut self.done, next)
    }
}

/// One row to an event and what reading it noticed; `None` for a skipped operation.
fn parse_row(line: &str, options: &CsvOptions) -> Result<Option<(TraceEvent, RowNotes)>, String> {
    let fields = split_fields(line, options.delimiter)?;
    let field = |column: usize, name: &str| {
        fields
            .get(column - 1)
            .map(|f| f.trim())
            .ok_or_else(|| format!("row has {} column(s) but '{name}' is column {column}", fields.len()))
    };
    let columns = &options.columns;
    let op = field(columns.op, "op")?;
    let is_read = options.op_read.iter().any(|r| r == op);
    if !is_read && !options.op_write.iter().any(|w| w == op) {
        if options.skip_other_ops {
            return Ok(None);
        }
        return Err(format!(
            "operation '{op}' is neither a read ({}) nor a write ({})",
            options.op_read.join("|"),
            options.op_write.join("|")
        ));
    }
    let (time_ns, truncated) = parse_decimal_exact(field(columns.time, "time")?, options.time_unit.nanos())
        .map_err(|e| format!("time: {e}"))?;
    let scaled = |name: &str, column: usize, unit: u64| -> Result<u64, String> {
        let text = field(column, name)?;
        let value: u64 = text.parse().map_err(|_| format!("{name} '{text}' is not a non-negative integer"))?;
        value.checked_mul(unit).ok_or_else(|| format!("{name} {value} times unit {unit} overflows 64 bits"))
    };
    let offset = scaled("offset", columns.offset, options.offset_unit)?;
    let len = scaled("size", columns.size, options.size_unit)?;
    let (app, pid) = match (columns.process, columns.app) {
        (Some(c), _) => options.process_format.split(field(c, "process")?),
        (None, Some(c)) => (field(c, "app")?, Some(0)),
        (None, None) => return Err("no app or process column".into()),
    };
    let notes = RowNotes { time_truncated: truncated, no_tid: pid.is_none() };
    let pid = match columns.pid {
        Some(c) => {
            let text = field(c, "pid")?;
            text.parse().map_err(|_| format!("pid '{text}' is not a 32-bit non-negative integer"))?
        }
        None => pid.unwrap_or(0),
    };
    let path = match columns.path {
        Some(c) => field(c, "path")?.as_bytes().into(),
        None if options.file_per_app => per_app_path(&options.default_path, app),
        None => options.default_path.clone(),
    };
    let kind = if is_read { EventKind::Read { path, offset, len } } else { EventKind::Write { path, offset, len } };
    Ok(Some((TraceEvent { time_ns, app: app.into(), pid, kind }, notes)))
}

/// `DIR/APP`, the app's own file: `%` and `/` in the app are written `%25` and `%2F`, and the names that
/// are not file names (``, `.`, `..`) as `%`, `%2E`, `%2E%2E`, so different apps never share a file.
pub fn per_app_path(dir: &[u8], app: &str) -> PathBytes {
    let name = match app {
        "" => "%".to_string(),
        "." | ".." => app.replace('.', "%2E"),
        _ => app.replace('%', "%25").replace('/', "%2F"),
    };
    [dir, b"/", name.as_bytes()].concat().into()
}

/// Splits a row at `delimiter`, honouring `"quoted"` fields with `""` for a literal quote.
fn split_fields(line: &str, delimiter: u8) -> Result<Vec<String>, String> {
    let mut fields = Vec::new();
    let mut current = Vec::new();
    let mut bytes = line.bytes().peekable();
    let mut in_quotes = false;
    while let Some(b) = bytes.next() {
        match (in_quotes, b) {
            (true, b'"') if bytes.peek() == Some(&b'"') => {
                bytes.next();
                current.push(b'"');
            }
            (true, b'"') => in_quotes = false,
            (false, b'"') if current.iter().all(u8::is_ascii_whitespace) => {
                current.clear();
                in_quotes = true;
            }
            (false, d) if d == delimiter => fields.push(std::mem::take(&mut current)),
            (_, other) => current.push(other),
        }
    }
    if in_quotes {
        return Err("unterminated quoted field".into());
    }
    fields.push(current);
    // Splitting valid UTF-8 at ASCII bytes leaves valid UTF-8.
    fields.into_iter().map(|f| String::from_utf8(f).map_err(|_| "field is not valid UTF-8".to_string())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_spec_parses_and_rejects() {
        let spec: ColumnSpec = "time=1,app=2,op=3,offset=4,size=5,pid=6".parse().unwrap();
        assert_eq!(spec.pid, Some(6));
        assert_eq!(spec.path, None);
        let spec: ColumnSpec = "time=1,process=2,op=3,offset=4,size=5".parse().unwrap();
        assert_eq!((spec.app, spec.process), (None, Some(2)));
        for bad in [
            "time=1,app=2,op=3,offset=4",
            "time=0,app=2,op=3,offset=4,size=5",
            "time=1,time=2",
            "x=1",
            "time",
            "time=1,op=3,offset=4,size=5",
            "time=1,app=2,process=6,op=3,offset=4,size=5",
            "time=1,process=2,pid=6,op=3,offset=4,size=5",
        ] {
            assert!(bad.parse::<ColumnSpec>().is_err(), "{bad}");
        }
    }

    #[test]
    fn processes_split_and_apps_get_distinct_files() {
        let split = |f| ProcessFormat::CommTid.split(f);
        assert_eq!(split("com.android.chrome-4711"), ("com.android.chrome", Some(4711)));
        assert_eq!(split("kworker/u8:2-77"), ("kworker/u8:2", Some(77)));
        assert_eq!(split("binder:1-2-3"), ("binder:1-2", Some(3)));
        for no_tid in ["AsyncTask", "chrome-", "chrome-x1", "a-+1", "a-99999999999"] {
            assert_eq!(split(no_tid), (no_tid, None));
        }
        assert_eq!(ProcessFormat::Comm.split("a-1"), ("a-1", Some(0)));
        let names: Vec<PathBytes> =
            ["a/b", "a%2Fb", "", ".", "..", "ok"].iter().map(|a| per_app_path(b"/d", a)).collect();
        assert_eq!(&names[0][..], b"/d/a%2Fb");
        assert_eq!(&names[5][..], b"/d/ok");
        let distinct: HashSet<&PathBytes> = names.iter().collect();
        assert_eq!(distinct.len(), names.len(), "{names:?}");
    }

    #[test]
    fn quoted_fields_split_correctly() {
        assert_eq!(split_fields(r#"a,"b,c","d""e",,f"#, b',').unwrap(), vec!["a", "b,c", "d\"e", "", "f"]);
        assert!(split_fields(r#"a,"b"#, b',').is_err());
    }
}
