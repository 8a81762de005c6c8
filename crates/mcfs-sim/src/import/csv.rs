//! Importer for request-per-row CSV traces, in particular block-level traces recorded on phones.
//!
//! A [`ColumnSpec`] says which (1-based) column holds what; each row becomes one read or write event whose
//! offset and length are the row's values times the configured units (512 for sector offsets). Rows whose
//! operation is neither the read nor the write code stop the import unless `skip_other_ops` is set, so a
//! wrong `--op-read` is noticed at the first row rather than silently producing an empty trace.

use std::io::BufRead;
use std::str::FromStr;

use crate::error::{Position, TraceError};
use crate::lines::LineReader;
use crate::timefmt::parse_decimal;
use crate::trace::{EventKind, PathBytes, TraceEvent};

/// Which column (1-based) holds each field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnSpec {
    pub time: usize,
    pub app: usize,
    pub op: usize,
    pub offset: usize,
    pub size: usize,
    pub pid: Option<usize>,
    pub path: Option<usize>,
}

impl FromStr for ColumnSpec {
    type Err = TraceError;

    /// Parses `time=N,app=N,op=N,offset=N,size=N[,pid=N][,path=N]`.
    fn from_str(spec: &str) -> Result<Self, TraceError> {
        let bad = |reason: String| TraceError::at(Position::None, format!("column spec '{spec}': {reason}"));
        let (mut time, mut app, mut op, mut offset, mut size, mut pid, mut path) =
            (None, None, None, None, None, None, None);
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (name, number) = item.split_once('=').ok_or_else(|| bad(format!("'{item}' is not NAME=COLUMN")))?;
            let column: usize = match number.trim().parse() {
                Ok(n) if n >= 1 => n,
                _ => return Err(bad(format!("column '{number}' of '{name}' is not a number from 1 up"))),
            };
            let slot = match name.trim() {
                "time" => &mut time,
                "app" => &mut app,
                "op" => &mut op,
                "offset" => &mut offset,
                "size" => &mut size,
                "pid" => &mut pid,
                "path" => &mut path,
                other => return Err(bad(format!("unknown field '{other}' (known: time app op offset size pid path)"))),
            };
            if slot.replace(column).is_some() {
                return Err(bad(format!("field '{name}' given twice")));
            }
        }
        let need = |v: Option<usize>, name: &str| v.ok_or_else(|| bad(format!("field '{name}' is required")));
        Ok(ColumnSpec {
            time: need(time, "time")?,
            app: need(app, "app")?,
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
            default_path: b"/blockdev".to_vec(),
        }
    }
}

/// Streams events out of a CSV trace.
pub struct CsvImporter<R: BufRead> {
    lines: LineReader<R>,
    options: CsvOptions,
    header_pending: bool,
    done: bool,
}

impl<R: BufRead> CsvImporter<R> {
    pub fn new(input: R, options: CsvOptions) -> Self {
        let header_pending = options.has_header;
        CsvImporter { lines: LineReader::new(input), options, header_pending, done: false }
    }

    fn read_next(&mut self) -> Result<Option<TraceEvent>, TraceError> {
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
                Ok(Some(event)) => return Ok(Some(event)),
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

/// One row to an event; `None` for a skipped operation.
fn parse_row(line: &str, options: &CsvOptions) -> Result<Option<TraceEvent>, String> {
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
    let time_ns =
        parse_decimal(field(columns.time, "time")?, options.time_unit.nanos()).map_err(|e| format!("time: {e}"))?;
    let scaled = |name: &str, column: usize, unit: u64| -> Result<u64, String> {
        let text = field(column, name)?;
        let value: u64 = text.parse().map_err(|_| format!("{name} '{text}' is not a non-negative integer"))?;
        value.checked_mul(unit).ok_or_else(|| format!("{name} {value} times unit {unit} overflows 64 bits"))
    };
    let offset = scaled("offset", columns.offset, options.offset_unit)?;
    let len = scaled("size", columns.size, options.size_unit)?;
    let pid = match columns.pid {
        Some(c) => {
            let text = field(c, "pid")?;
            text.parse().map_err(|_| format!("pid '{text}' is not a 32-bit non-negative integer"))?
        }
        None => 0,
    };
    let path = match columns.path {
        Some(c) => field(c, "path")?.as_bytes().to_vec(),
        None => options.default_path.clone(),
    };
    let app = field(columns.app, "app")?.to_string();
    let kind = if is_read { EventKind::Read { path, offset, len } } else { EventKind::Write { path, offset, len } };
    Ok(Some(TraceEvent { time_ns, app, pid, kind }))
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
        for bad in ["time=1,app=2,op=3,offset=4", "time=0,app=2,op=3,offset=4,size=5", "time=1,time=2", "x=1", "time"] {
            assert!(bad.parse::<ColumnSpec>().is_err(), "{bad}");
        }
    }

    #[test]
    fn quoted_fields_split_correctly() {
        assert_eq!(split_fields(r#"a,"b,c","d""e",,f"#, b',').unwrap(), vec!["a", "b,c", "d\"e", "", "f"]);
        assert!(split_fields(r#"a,"b"#, b',').is_err());
    }
}
