//! The CSV importer on a block-trace-shaped sample and on malformed rows.

use mcfs_sim::import::csv::{ColumnSpec, CsvImporter, CsvOptions, ProcessFormat, TimeUnit};
use mcfs_sim::replay::{Metrics, ReplayOptions, Replayer};
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
    let mut events = import(BLOCK_TRACE, options()).unwrap();
    assert_eq!(events.len(), 4, "a create, then the rows but the discard");
    let create = events.remove(0);
    assert_eq!((create.time_ns, &*create.app), (10_500_000, "com.twitter.android"));
    assert_eq!(create.kind, EventKind::Create { path: b"/blockdev"[..].into() });
    assert_eq!(events[0].time_ns, 10_500_000);
    assert_eq!((&*events[0].app, events[0].pid), ("com.twitter.android", 4711));
    assert_eq!(events[0].kind, EventKind::Write { path: b"/blockdev"[..].into(), offset: 2048 * 512, len: 4096 });
    assert_eq!(events[1].kind, EventKind::Write { path: b"/blockdev"[..].into(), offset: 2056 * 512, len: 8192 });
    assert_eq!(events[2].app, "com.android.browser".into());
    assert_eq!(events[2].kind, EventKind::Read { path: b"/blockdev"[..].into(), offset: 0, len: 512 });
}

#[test]
fn path_column_and_units_apply() {
    let columns: ColumnSpec = "time=1,app=2,op=3,offset=4,size=5,path=6".parse().unwrap();
    let options = CsvOptions { time_unit: TimeUnit::Micros, size_unit: 512, ..CsvOptions::new(columns) };
    let events = import("3,a,R,7,2,/data/x y.db\n", options).unwrap();
    assert_eq!(events[1].time_ns, 3_000);
    assert_eq!(events[1].pid, 0);
    assert_eq!(events[1].kind, EventKind::Read { path: b"/data/x y.db"[..].into(), offset: 7, len: 1024 });
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
    assert_eq!("comm".parse::<ProcessFormat>().unwrap(), ProcessFormat::Comm);
    assert!("regex".parse::<ProcessFormat>().is_err());
}

/// Rows of a phone's eBPF block tracer: `comm-TID` process, sector offsets, sizes in sectors.
const PHONE_ROWS: &str = "\
com.whatsapp-4711,W,2048,8,100.000001
com.android.chrome-902,W,4096,16,100.5
com.whatsapp-4712,R,2048,8,101
";

fn phone_options() -> CsvOptions {
    let columns: ColumnSpec = "process=1,op=2,offset=3,size=4,time=5".parse().unwrap();
    CsvOptions { offset_unit: 512, size_unit: 512, time_unit: TimeUnit::Seconds, ..CsvOptions::new(columns) }
}

fn replay(events: Vec<TraceEvent>) -> Metrics {
    Replayer::run(ReplayOptions::default(), events.into_iter().map(Ok)).unwrap()
}

/// Every file a trace reads or writes is created by the first row that touches it, so the replay has
/// something to write to (it used to skip every event as "unknown path").
#[test]
fn an_imported_block_trace_replays_every_row() {
    let mut importer = CsvImporter::new(PHONE_ROWS.as_bytes(), phone_options());
    let events: Vec<TraceEvent> = importer.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(importer.report().files_created, 1);
    let m = replay(events);
    assert_eq!(m.events_skipped, 0, "{m:#?}");
    assert_eq!(m.events_replayed, 4);
    assert_eq!(m.bytes_written, 24 * 512);
}

#[test]
fn a_comm_tid_process_column_gives_app_and_pid() {
    let events = import(PHONE_ROWS, phone_options()).unwrap();
    let who: Vec<(&str, u32)> = events.iter().map(|e| (&*e.app, e.pid)).collect();
    assert_eq!(
        who,
        [("com.whatsapp", 4711), ("com.whatsapp", 4711), ("com.android.chrome", 902), ("com.whatsapp", 4712)]
    );
    assert_eq!(events[1].kind, EventKind::Write { path: b"/blockdev"[..].into(), offset: 2048 * 512, len: 4096 });
}

/// Block tracers print some threads by name alone (`AsyncTask`, 19 % of one public phone trace's rows):
/// such a row is kept, its whole field the app and its pid 0, and counted; it used to stop the import.
#[test]
fn a_process_without_a_tid_is_all_app_and_counted() {
    let rows = "AsyncTask,W,0,8,1\ncom.whatsapp-4711,W,8,8,2\nchrome-x1,R,0,8,3\n";
    let options = CsvOptions { file_per_app: true, ..phone_options() };
    let mut importer = CsvImporter::new(rows.as_bytes(), options);
    let events: Vec<TraceEvent> = importer.by_ref().collect::<Result<_, _>>().unwrap();
    let who: Vec<(&str, u32)> =
        events.iter().filter(|e| !matches!(e.kind, EventKind::Create { .. })).map(|e| (&*e.app, e.pid)).collect();
    assert_eq!(who, [("AsyncTask", 0), ("com.whatsapp", 4711), ("chrome-x1", 0)]);
    assert_eq!(importer.report().processes_without_tid, 2);
    assert_eq!(replay(events).events_skipped, 0);
}

/// With one file for the whole device, its data is charged to the app of the first row; a file per app
/// makes each app's results its own, whatever the row order.
#[test]
fn a_file_per_app_makes_per_app_results_independent_of_row_order() {
    let swapped = "com.android.chrome-902,W,4096,16,100\ncom.whatsapp-4711,W,2048,8,100.5\n";
    let first = "com.whatsapp-4711,W,2048,8,100\ncom.android.chrome-902,W,4096,16,100.5\n";
    let per_app = |rows: &str, file_per_app: bool| {
        let options = CsvOptions { file_per_app, ..phone_options() };
        let m = replay(import(rows, options).unwrap());
        assert_eq!(m.events_skipped, 0, "{m:#?}");
        let written = |app: &str| m.apps[app].bytes_written;
        (written("com.whatsapp"), written("com.android.chrome"))
    };
    assert_eq!(per_app(first, true), (4096, 8192));
    assert_eq!(per_app(swapped, true), (4096, 8192));
    assert_ne!(per_app(first, false), per_app(swapped, false), "one shared file: the first row's app pays");
    let paths: Vec<EventKind> = import(first, CsvOptions { file_per_app: true, ..phone_options() })
        .unwrap()
        .into_iter()
        .filter(|e| matches!(e.kind, EventKind::Create { .. }))
        .map(|e| e.kind)
        .collect();
    assert_eq!(
        paths,
        [
            EventKind::Create { path: b"/blockdev/com.whatsapp"[..].into() },
            EventKind::Create { path: b"/blockdev/com.android.chrome"[..].into() }
        ]
    );
}

#[test]
fn times_finer_than_a_nanosecond_are_truncated_and_counted() {
    let rows = "a-1,W,0,8,1.0000000005\na-1,W,0,8,2.25\na-1,W,0,8,3.0000000015\n";
    let mut importer = CsvImporter::new(rows.as_bytes(), phone_options());
    let events: Vec<TraceEvent> = importer.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(events.last().unwrap().time_ns, 3_000_000_001);
    assert_eq!(importer.report().times_truncated, 2);
}
