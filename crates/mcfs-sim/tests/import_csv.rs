//! The CSV importer on a block-trace-shaped sample and on malformed rows.

use mcfs_sim::import::csv::{ColumnSpec, CsvImporter, CsvOptions, TimeUnit};
use mcfs_sim::{EventKind, Position, TraceError, TraceEvent};

/// Rows as a phone block tracer might log them: time in ms, process, R/W, sector offset, size in bytes, pid.
const BLOCK_TRACE: &str = "\
time_ms,process,rw,sector,bytes,pid
# warm-up
10.5,com.twitter.android,W,2048,4096,4711
11,com.twitter.android,WS,2056,8192,4711

12.25,\"com.android.browser\",R,0,512,902
13,kworker/u8:2,D,64,4096,77
";

fn options() -> CsvOptions {
    let columns: ColumnSpec = "time=1,app=2,op=3,offset=4,size=5,pid=6".parse().unwrap();
    CsvOptions {
        op_write: vec!["W".into(), "WS".into()],
        time_unit: TimeUnit::Millis,
        offset_unit: 512,
        has_header: true,
        skip_other_ops: true,
        ..CsvOptions::new(columns)
    }
}

fn import(text: &str, options: CsvOptions) -> Result<Vec<TraceEvent>, TraceError> {
    CsvImporter::new(text.as_bytes(), options).collect()
}

#[test]
fn block_trace_rows_become_reads_and_writes() {
    let events = import(BLOCK_TRACE, options()).unwrap();
    assert_eq!(events.len(), 3, "the discard row is skipped");
    assert_eq!(events[0].time_ns, 10_500_000);
    assert_eq!((events[0].app.as_str(), events[0].pid), ("com.twitter.android", 4711));
    assert_eq!(events[0].kind, EventKind::Write { path: b"/blockdev".to_vec(), offset: 2048 * 512, len: 4096 });
    assert_eq!(events[1].kind, EventKind::Write { path: b"/blockdev".to_vec(), offset: 2056 * 512, len: 8192 });
    assert_eq!(events[2].app, "com.android.browser");
    assert_eq!(events[2].kind, EventKind::Read { path: b"/blockdev".to_vec(), offset: 0, len: 512 });
}

#[test]
fn path_column_and_units_apply() {
    let columns: ColumnSpec = "time=1,app=2,op=3,offset=4,size=5,path=6".parse().unwrap();
    let options = CsvOptions { time_unit: TimeUnit::Micros, size_unit: 512, ..CsvOptions::new(columns) };
    let events = import("3,a,R,7,2,/data/x y.db\n", options).unwrap();
    assert_eq!(events[0].time_ns, 3_000);
    assert_eq!(events[0].pid, 0);
    assert_eq!(events[0].kind, EventKind::Read { path: b"/data/x y.db".to_vec(), offset: 7, len: 1024 });
}

#[test]
fn bad_rows_stop_the_import_with_their_line_number() {
    let strict = CsvOptions { skip_other_ops: false, ..options() };
    let cases = [
        (BLOCK_TRACE, strict, 7, "operation 'D'"),
        ("h\n1,a,W,x,4,1\n", options(), 2, "offset 'x'"),
        ("h\n1,a,W,1,4\n", options(), 2, "pid' is column 6"),
        ("h\n-1,a,W,1,4,1\n", options(), 2, "time"),
        ("h\n1,a,W,1,4,99999999999\n", options(), 2, "pid"),
        ("h\n1,a,W,36028797018963968,4,1\n", options(), 2, "overflows"),
        ("h\n1,\"a,W,1,4,1\n", options(), 2, "unterminated"),
    ];
    for (text, options, line, reason) in cases {
        let err = import(text, options).unwrap_err();
        assert_eq!(err.position, Position::Line(line), "{err}");
        assert!(err.to_string().contains(reason), "{err}");
    }
}

#[test]
fn options_parse_from_strings() {
    assert_eq!("us".parse::<TimeUnit>().unwrap(), TimeUnit::Micros);
    assert!("h".parse::<TimeUnit>().is_err());
    let err = "time=1,app=2".parse::<ColumnSpec>().unwrap_err();
    assert!(err.to_string().contains("'op' is required"), "{err}");
}
