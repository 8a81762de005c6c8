//! A researcher's path through the CLI with real-shaped inputs: a gzipped per-process block trace piped on
//! stdin, imported with a COMM-TID process column (one row without its TID), a file per app and a cap on idle gaps, then replayed
//! with nothing skipped; unit mistakes warned about; a replay that skips most of its trace fails.

use mcfs_sim::EventKind;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

mod common;

use common::{mcfs_bin, read_trace, run_cli as mcfs, stderr_of as stderr};

fn assert_ok(out: &Output) {
    assert!(out.status.success(), "status {:?}, stderr: {}", out.status, stderr(out));
}

fn s(path: &Path) -> &str {
    path.to_str().expect("temporary paths are UTF-8")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn mcfs_with_stdin(args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(mcfs_bin())
        .args(args)
        .env_remove("MCFS_LOG")
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

/// Install phase, then the use phase two days later (seconds since boot), sizes in sectors.
const PHONE_CSV: &str = "\
process,dev,rw,sector,sectors,ts
com.whatsapp-4711,sda,W,2048,8,100.000000001
com.android.chrome-902,sda,W,4096,16,100.5
com.whatsapp-4712,sda,R,2048,8,101
com.whatsapp-4711,sda,W,2056,8,172900
AsyncTask,sda,W,8192,8,172900.5
";

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

const CSV_ARGS: &[&str] = &[
    "trace",
    "import",
    "--format",
    "csv",
    "--columns",
    "process=1,op=3,offset=4,size=5,time=6",
    "--header",
    "--offset-unit",
    "sector",
    "--size-unit",
    "512",
];

#[test]
fn a_gzipped_phone_trace_on_stdin_imports_and_replays_whole() {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("phone.bin");
    let args = [CSV_ARGS, &["--file-per-app", "--max-gap", "60", "-", "-o", s(&output)]].concat();
    let out = mcfs_with_stdin(&args, &gzip(PHONE_CSV.as_bytes()));
    assert_ok(&out);
    let text = stdout(&out);
    assert!(text.contains("imported 8 events from stdin (gzip)"), "{text}");
    assert!(text.contains("created 3 file(s)"), "{text}");
    assert!(text.contains("1 row(s) had a process without -TID"), "{text}");
    assert!(text.contains("shortened 1 gap(s) longer than 60.000000000 s"), "{text}");
    assert!(stderr(&out).is_empty(), "no warnings: {}", stderr(&out));

    let events = read_trace(&output);
    let who: Vec<(&str, u32)> = events.iter().map(|e| (&*e.app, e.pid)).collect();
    assert_eq!(who[..3], [("com.whatsapp", 4711), ("com.whatsapp", 4711), ("com.android.chrome", 902)]);
    assert_eq!(events[5].time_ns, 161_000_000_000, "two days became 60 s after the event at 101 s");
    assert_eq!(
        events[5].kind,
        EventKind::Write { path: b"/blockdev/com.whatsapp"[..].into(), offset: 2056 * 512, len: 4096 }
    );

    let out = mcfs(&["sim", "--trace", s(&output), "--json"]);
    assert_ok(&out);
    let metrics: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(metrics["events_skipped"], 0, "{metrics}");
    assert_eq!(metrics["apps"]["com.whatsapp"]["bytes_written"], 8192);
    assert_eq!(metrics["apps"]["com.android.chrome"]["bytes_written"], 8192);
    assert_eq!(metrics["apps"]["AsyncTask"]["bytes_written"], 4096, "a thread printed without its TID");
}

#[test]
fn a_zstd_file_imports_and_sector_sizes_taken_for_bytes_are_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    // Offset 2048 is a multiple of 512 (and so looks like bytes); the 19 others do not.
    let rows: String = (0..20).map(|i| format!("app-{i},sda,W,{},8,{i}\n", 2048 + 8 * i)).collect();
    let input = dir.path().join("rows.csv.zst");
    std::fs::write(&input, zstd::stream::encode_all(rows.as_bytes(), 3).unwrap()).unwrap();
    let output = dir.path().join("rows.trace");
    // The units left at their default: bytes.
    let args = ["trace", "import", "--format", "csv", "--columns", "process=1,op=3,offset=4,size=5,time=6"];
    let out = mcfs(&[&args[..], &[s(&input), "-o", s(&output)]].concat());
    assert_ok(&out);
    assert!(stdout(&out).contains("(zstd)"), "{}", stdout(&out));
    let warnings = stderr(&out);
    assert!(warnings.contains("--offset-unit 512") && warnings.contains("--size-unit 512"), "{warnings}");

    let out = mcfs(&["trace", "stats", "--json", s(&output)]);
    assert_ok(&out);
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stats["warnings"].as_array().map(Vec::len), Some(2), "{stats}");
    let out = mcfs(&["trace", "stats", s(&output)]);
    assert!(stdout(&out).contains("warning: 19 of 20 read/write offsets"), "{}", stdout(&out));
}

#[test]
fn a_replay_that_skips_most_of_its_trace_fails_and_names_why() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("old.trace");
    // What an import that creates nothing gave: writes to a file the trace never made.
    let lines: String = (0..50).map(|i| format!("{i} com.a 1 write /blockdev {} 4096\n", i * 4096)).collect();
    std::fs::write(&trace, format!("mcfs-trace 1\n0 com.a 1 launch\n{lines}")).unwrap();

    let out = mcfs(&["sim", "--trace", s(&trace), "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("50 of 50 file operations were skipped"), "{err}");
    assert!(err.contains("'unknown path' (50)") && err.contains("0.000000000 com.a 1 write /blockdev 0 4096"), "{err}");
    assert!(err.contains("--allow-skipped"), "{err}");
    let metrics: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(metrics["events_skipped"], 50, "the metrics are printed all the same");

    let out = mcfs(&["sim", "--trace", s(&trace), "--allow-skipped"]);
    assert_ok(&out);
    assert!(stderr(&out).contains("warning") && stderr(&out).contains("unknown path"), "{}", stderr(&out));

    // One skip in a hundred file operations is within bounds.
    let lines: String = (0..99).map(|i| format!("{i} com.a 1 write /f {} 4096\n", i * 4096)).collect();
    std::fs::write(&trace, format!("mcfs-trace 2\n0 com.a 1 create /f\n{lines}0 com.a 1 close /g\n")).unwrap();
    let out = mcfs(&["sim", "--trace", s(&trace)]);
    assert_ok(&out);
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
}

#[test]
fn an_strace_log_on_stdin_resolves_relative_paths_and_counts_what_it_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("git.trace");
    let log = "1 10:00:00.000000 mkdir(\"d\", 0777) = 0\n1 10:00:00.000001 symlink(\"t\", \"/x/s\") = 0\n";
    let args = ["trace", "import", "--format", "strace", "--cwd", "/home/u", "-", "-o", s(&output)];
    let out = mcfs_with_stdin(&args, log.as_bytes());
    assert_ok(&out);
    let text = stdout(&out);
    assert!(text.contains("imported 1 events from stdin into"), "{text}");
    assert!(text.contains("skipped 1 call(s): symbolic link"), "{text}");
    assert_eq!(read_trace(&output)[0].kind, EventKind::Mkdir { path: b"/home/u/d"[..].into() });
}

/// SQLite's WAL appends frames of 24 + 4096 bytes after a 32-byte header, so nearly every offset is a
/// multiple of 8 and not of 512, the shape of sector numbers taken for bytes; an strace log's offsets are
/// bytes by construction, so its import does not warn about units.
#[test]
fn an_strace_log_of_wal_frames_draws_no_unit_warning() {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("wal.trace");
    let mut log =
        String::from("1 10:00:00.000000 openat(AT_FDCWD, \"/d/x.db-wal\", O_RDWR|O_CREAT, 0644) = 3</d/x.db-wal>\n");
    for frame in 0..20u64 {
        let offset = 32 + frame * 4120;
        log += &format!("1 10:00:01.{frame:06} pwrite64(3</d/x.db-wal>, \"\"..., 24, {offset}) = 24\n");
        log += &format!("1 10:00:01.{frame:06} pwrite64(3</d/x.db-wal>, \"\"..., 4096, {}) = 4096\n", offset + 24);
    }
    let args = ["trace", "import", "--format", "strace", "-", "-o", s(&output)];
    let out = mcfs_with_stdin(&args, log.as_bytes());
    assert_ok(&out);
    assert!(stdout(&out).contains("imported 41 events"), "{}", stdout(&out));
    assert!(stderr(&out).is_empty(), "no warnings: {}", stderr(&out));
}

#[test]
fn options_that_do_not_fit_the_columns_are_usage_errors() {
    let csv = ["trace", "import", "--format", "csv", "in.csv", "-o", "out.trace", "--columns"];
    for (extra, why) in [
        (&["time=1,app=2,op=3,offset=4,size=5,path=6", "--file-per-app"][..], "--file-per-app"),
        (&["time=1,app=2,op=3,offset=4,size=5", "--process-format", "comm"][..], "process=N"),
        (&["time=1,app=2,op=3,offset=4,size=5", "--cwd", "/"][..], "--cwd"),
    ] {
        let out = mcfs(&[&csv[..], extra].concat());
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(why), "{extra:?}: {}", stderr(&out));
    }
}
