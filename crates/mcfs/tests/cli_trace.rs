//! Runs the built `mcfs` binary's trace tools and simulator: imports of strace and CSV inputs, lossless
//! conversion, failed imports that name the line and leave no file, deterministic synthesis and replay,
//! and the errors a user sees for a bad device or a bad trace.

use mcfs_sim::binary::MAGIC;
use mcfs_sim::{EventKind, TraceEvent};
use std::path::{Path, PathBuf};
use std::process::Output;

mod common;

use common::{read_trace, run_cli as mcfs, stderr_of as stderr};

fn assert_ok(out: &Output) {
    assert!(out.status.success(), "status {:?}, stderr: {}", out.status, stderr(out));
}

fn s(path: &Path) -> &str {
    path.to_str().expect("temporary paths are UTF-8")
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../mcfs-sim/tests/fixtures").join(name)
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

#[test]
fn imports_an_strace_log_in_both_forms() {
    let dir = tempfile::tempdir().unwrap();
    let (text, binary) = (dir.path().join("sqlite.trace"), dir.path().join("sqlite.bin"));
    let input = fixture("sqlite3_create_insert.strace");
    assert_ok(&mcfs(&["trace", "import", "--format", "strace", s(&input), "-o", s(&text)]));
    assert_ok(&mcfs(&["trace", "import", "--format", "strace", s(&input), "-o", s(&binary)]));
    assert!(std::fs::read(&text).unwrap().starts_with(b"mcfs-trace 2\n"));
    assert!(std::fs::read(&binary).unwrap().starts_with(MAGIC), "a .bin name gives the binary form");
    let events = read_trace(&text);
    assert_eq!(events, read_trace(&binary));
    assert!(events.iter().all(|e| e.app == "sqlite3".into()), "the app is the execve'd program");
    assert!(events.iter().any(|e| e.kind == EventKind::Create { path: b"/tmp/x.db"[..].into() }), "{events:#?}");
    let synced = |e: &TraceEvent| matches!(&e.kind, EventKind::Fdatasync { path } if path.starts_with(b"/tmp/x.db"));
    assert!(events.iter().any(synced), "sqlite3 syncs its journal and database: {events:#?}");
    assert!(events.iter().any(|e| matches!(&e.kind, EventKind::Write { path, .. } if &path[..] == b"/tmp/x.db")));

    // --path-prefix keeps only the database's files; --to overrides the name.
    let only_db = dir.path().join("db.bin");
    let args = ["trace", "import", "--format", "strace", "--path-prefix", "/tmp/", "--to", "text"];
    assert_ok(&mcfs(&[&args[..], &[s(&input), "-o", s(&only_db)]].concat()));
    assert!(std::fs::read(&only_db).unwrap().starts_with(b"mcfs-trace 2\n"));
    let kept = read_trace(&only_db);
    assert!(!kept.is_empty() && kept.len() < events.len());
}

#[test]
fn imports_a_csv_block_trace_with_units() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("block.csv");
    std::fs::write(&input, "when;who;what;sector;count\n12.5;com.a;WS;8;8\n# comment\n13;com.b;RS;16;1\n").unwrap();
    let output = dir.path().join("block.trace");
    let args = [
        "trace",
        "import",
        "--format",
        "csv",
        "--columns",
        "time=1,app=2,op=3,offset=4,size=5",
        "--op-read",
        "R,RS",
        "--op-write",
        "W,WS",
        "--time-unit",
        "ms",
        "--offset-unit",
        "512",
        "--size-unit",
        "512",
        "--delimiter",
        ";",
        "--header",
    ];
    let out = mcfs(&[&args[..], &[s(&input), "-o", s(&output)]].concat());
    assert_ok(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("imported 3 events"));
    let events = read_trace(&output);
    assert_eq!(events.len(), 3);
    assert_eq!(events[0].kind, EventKind::Create { path: b"/blockdev"[..].into() }, "the device file is made first");
    assert_eq!((events[1].time_ns, &*events[1].app), (12_500_000, "com.a"));
    assert_eq!(events[1].kind, EventKind::Write { path: b"/blockdev"[..].into(), offset: 4096, len: 4096 });
    assert_eq!(events[2].kind, EventKind::Read { path: b"/blockdev"[..].into(), offset: 8192, len: 512 });
}

#[test]
fn a_malformed_csv_row_stops_the_import_with_its_line_and_leaves_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("bad.csv");
    std::fs::write(&input, "0.5,com.a,W,0,4096\n0.6,com.a,R,0,4096\n0.7,com.a,W,-5,4096\n0.8,com.a,W,0,1\n").unwrap();
    let columns = ["--format", "csv", "--columns", "time=1,app=2,op=3,offset=4,size=5"];
    for output in ["bad.trace", "bad.bin"] {
        let output = dir.path().join(output);
        let out = mcfs(&[&["trace", "import"][..], &columns, &[s(&input), "-o", s(&output)]].concat());
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(&format!("{}: line 3: offset '-5'", input.display())), "{err}");
        assert_eq!(names_in(dir.path()), ["bad.csv"], "partial output left behind");
    }
    // An existing output survives a failed import.
    let output = dir.path().join("keep.trace");
    std::fs::write(&output, "precious").unwrap();
    let out = mcfs(&[&["trace", "import"][..], &columns, &[s(&input), "-o", s(&output)]].concat());
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(std::fs::read_to_string(&output).unwrap(), "precious");
    assert_eq!(names_in(dir.path()), ["bad.csv", "keep.trace"]);
}

#[test]
fn options_of_the_other_format_are_usage_errors() {
    for args in [
        &["trace", "import", "--format", "strace", "--columns", "time=1,app=2,op=3,offset=4,size=5", "a", "-o", "b"][..],
        &["trace", "import", "--format", "csv", "a", "-o", "b"],
        &["trace", "import", "--format", "csv", "--columns", "time=1,app=2,op=3,offset=4,size=5", "--app", "x", "a"],
        &["trace", "synth", "--suite", "d", "--seed", "3"],
        &["sim", "--trace", "t", "--sample-every", "0"],
    ] {
        let out = mcfs(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn text_to_binary_to_text_is_identical() {
    let dir = tempfile::tempdir().unwrap();
    let (text, binary, back) = (dir.path().join("a.trace"), dir.path().join("a.bin"), dir.path().join("back.trace"));
    let synth = ["trace", "synth", "--io", "e-peak", "--user", "skimmer", "--seed", "9", "--duration", "40"];
    assert_ok(&mcfs(&[&synth[..], &["-o", s(&text)]].concat()));
    assert_ok(&mcfs(&["trace", "convert", s(&text), "-o", s(&binary)]));
    assert_ok(&mcfs(&["trace", "convert", s(&binary), "-o", s(&back)]));
    let (original, binary_bytes) = (std::fs::read(&text).unwrap(), std::fs::read(&binary).unwrap());
    assert!(binary_bytes.starts_with(MAGIC));
    assert!(binary_bytes.len() * 3 < original.len(), "the binary form is compact");
    assert_eq!(std::fs::read(&back).unwrap(), original);
    // --to wins over the name.
    let odd = dir.path().join("odd.bin");
    assert_ok(&mcfs(&["trace", "convert", s(&binary), "-o", s(&odd), "--to", "text"]));
    assert_eq!(std::fs::read(&odd).unwrap(), original);
}

#[test]
fn synth_is_deterministic_and_writes_the_suite() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b, c) = (dir.path().join("a.trace"), dir.path().join("b.trace"), dir.path().join("c.trace"));
    let args = ["trace", "synth", "--io", "fsync-heavy", "--user", "scroller", "--app", "com.twitter.android"];
    let run = |seed: &str, out: &Path| {
        assert_ok(&mcfs(&[&args[..], &["--seed", seed, "--duration", "30", "-o", s(out)]].concat()))
    };
    run("5", &a);
    run("5", &b);
    run("6", &c);
    let first = std::fs::read(&a).unwrap();
    assert_eq!(first, std::fs::read(&b).unwrap(), "same seed, same bytes");
    assert_ne!(first, std::fs::read(&c).unwrap(), "another seed, another trace");
    let events = read_trace(&a);
    assert_eq!(events[0].kind, EventKind::Launch);
    assert!(events.iter().all(|e| e.app == "com.twitter.android".into()));

    let out = mcfs(&["trace", "synth", "--io", "fsync-huge", "--user", "reader", "-o", s(&c)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("known: fsync-heavy"), "{}", stderr(&out));

    let suite = dir.path().join("suite");
    assert_ok(&mcfs(&["trace", "synth", "--suite", s(&suite), "--to", "binary"]));
    let names = names_in(&suite);
    assert_eq!(names.len(), 15, "{names:?}");
    for entry in ["TT.bin", "WB.bin", "FB-u1.bin", "FB-u5.bin"] {
        assert!(names.iter().any(|n| n == entry), "{entry} missing: {names:?}");
    }
    let tt = read_trace(&suite.join("TT.bin"));
    assert_eq!(tt[0].app, "com.twitter.android".into());

    let list = mcfs(&["trace", "synth", "--list"]);
    assert_ok(&list);
    let text = String::from_utf8_lossy(&list.stdout);
    for name in ["fsync-heavy", "e-plateau", "watcher", "com.tencent.mm"] {
        assert!(text.contains(name), "--list lacks {name}: {text}");
    }
}

#[test]
fn sim_json_is_the_same_twice_and_the_table_names_the_apps() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("fb.bin");
    let synth = ["trace", "synth", "--io", "fsync-moderate", "--user", "mixed", "--app", "com.facebook.katana"];
    assert_ok(&mcfs(&[&synth[..], &["--duration", "60", "-o", s(&trace)]].concat()));
    let count = read_trace(&trace).len() as u64;

    let first = mcfs(&["sim", "--trace", s(&trace), "--json"]);
    assert_ok(&first);
    let second = mcfs(&["sim", "--trace", s(&trace), "--json", "--device", "emmc"]);
    assert_ok(&second);
    assert_eq!(first.stdout, second.stdout, "same trace, same metrics");
    let metrics: serde_json::Value = serde_json::from_slice(&first.stdout).expect("--json prints JSON");
    assert_eq!(metrics["events_replayed"].as_u64(), Some(count));
    assert_eq!(metrics["events_skipped"].as_u64(), Some(0));
    assert!(metrics["apps"]["com.facebook.katana"]["bytes_written"].as_u64().unwrap() > 0);

    let ufs = mcfs(&["sim", "--trace", s(&trace), "--json", "--device", "ufs"]);
    assert_ok(&ufs);
    assert_ne!(ufs.stdout, first.stdout, "the device shows in the metrics");

    let config = dir.path().join("sync.toml");
    std::fs::write(&config, "mode = \"sync\"\n").unwrap();
    let table = mcfs(&["sim", "--trace", s(&trace), "--config", s(&config)]);
    assert_ok(&table);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(text.starts_with(&format!("replay of {} on emmc", trace.display())), "{text}");
    assert!(text.lines().any(|l| l.trim_start().starts_with("com.facebook.katana")), "{text}");
    let fsync = text.lines().find(|l| l.trim_start().starts_with("fsync ")).unwrap();
    assert!(fsync.contains("  0 absorbed") && !fsync.contains(" 0 honoured"), "sync mode honours fsync: {text}");
    assert!(table.stderr.is_empty(), "no progress bar without a terminal: {}", stderr(&table));
}

#[test]
fn sim_errors_name_the_device_profiles_the_config_and_the_bad_line() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.trace");
    std::fs::write(&trace, "mcfs-trace 1\n0 a 1 launch\n1 a 1 create /d/f\n2 a 1 write /d/f 0\n").unwrap();

    let out = mcfs(&["sim", "--trace", s(&trace), "--device", "nvme"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("nvme") && err.contains("emmc") && err.contains("ufs"), "{err}");

    let out = mcfs(&["sim", "--trace", s(&trace)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains(&format!("{}: line 4: 'write' takes 3", trace.display())), "{}", stderr(&out));
    assert!(out.stdout.is_empty(), "no metrics for a broken trace");

    let config = dir.path().join("bad.toml");
    std::fs::write(&config, "cache_sise = 1\n").unwrap();
    let out = mcfs(&["sim", "--trace", s(&trace), "--config", s(&config)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains(s(&config)) && stderr(&out).contains("cache_sise"), "{}", stderr(&out));

    let out = mcfs(&["sim", "--trace", s(&dir.path().join("missing.trace"))]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("missing.trace"), "{}", stderr(&out));
}

#[test]
fn stats_summarize_a_trace() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.trace");
    std::fs::write(
        &trace,
        "mcfs-trace 1\n0 com.a 1 create /d/f\n0.5 com.a 1 write /d/f 0 4096\n0.25 com.a 1 fsync /d/f\n\
         2 com.b 2 tap 0.1\n",
    )
    .unwrap();
    let out = mcfs(&["trace", "stats", s(&trace)]);
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("text trace") && text.contains("4 events"), "{text}");
    assert!(text.contains("0.000 s to 2.000 s") && text.contains("1 out of order"), "{text}");
    assert!(text.lines().any(|l| l.trim_start().starts_with("com.a") && l.contains("4.0 KiB")), "{text}");

    let out = mcfs(&["trace", "stats", "--json", s(&trace)]);
    assert_ok(&out);
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stats["by_kind"]["write"], 1);
    assert_eq!(stats["apps"]["com.b"]["inputs"], 1);
}
