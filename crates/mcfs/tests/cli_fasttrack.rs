//! The FastTrack study's commands end to end, without a mount: `mcfs trace synth --fasttrack` writes a
//! setup and a run trace (the same bytes for the same seed), `mcfs trace replay --json` reports how long
//! the replay took, `--loop` repeats until SIGTERM or SIGINT and still writes its JSON, and `mcfs report
//! --fasttrack` writes its section after the MobiFS one, keeping the rest of the file.

mod common;

use common::run_cli as mcfs;
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn ok(args: &[&str]) -> Output {
    let out = mcfs(args);
    assert!(out.status.success(), "mcfs {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    out
}

fn path(p: &Path) -> &str {
    p.to_str().expect("temporary paths are UTF-8")
}

/// `DIR/KIND/{setup,run}.trace` at a twentieth of the documented size.
fn synth(dir: &Path, kind: &str, seed: &str) -> PathBuf {
    let out = dir.join(kind);
    ok(&[
        "trace",
        "synth",
        "--fasttrack",
        kind,
        "--app",
        &format!("com.example.{kind}"),
        "--seed",
        seed,
        "--scale",
        "0.05",
        "-o",
        path(&out),
    ]);
    out
}

fn read_json(file: &Path) -> Value {
    let text = fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    assert_eq!(text.lines().count(), 1, "one line of JSON: {text}");
    serde_json::from_str(&text).unwrap()
}

#[test]
fn synth_writes_a_setup_and_a_run_trace_the_same_for_a_seed() {
    let dir = tempfile::tempdir().unwrap();
    let a = synth(&dir.path().join("a"), "switch", "9");
    let b = synth(&dir.path().join("b"), "switch", "9");
    for name in ["setup.trace", "run.trace"] {
        let (x, y) = (fs::read(a.join(name)).unwrap(), fs::read(b.join(name)).unwrap());
        assert!(!x.is_empty());
        assert_eq!(x, y, "{name}: same seed, same bytes");
    }
    let run = fs::read_to_string(a.join("run.trace")).unwrap();
    let first = run.lines().find(|l| !l.starts_with('#') && !l.starts_with("mcfs-trace")).unwrap();
    assert!(first.ends_with("foreground"), "the FG run starts in the foreground: {first}");

    let out = mcfs(&["trace", "synth", "--fasttrack", "camera", "-o", path(&dir.path().join("c"))]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("launch, switch, load, update, backup"));
    let out = mcfs(&["trace", "synth", "--fasttrack", "load", "--scale", "-1", "-o", "x"]);
    assert_eq!(out.status.code(), Some(2), "a bad scale is a usage error");
    let out = mcfs(&["trace", "synth", "--fasttrack", "load", "--io", "e-flat", "-o", "x"]);
    assert_eq!(out.status.code(), Some(2), "--fasttrack and --io do not go together");
    let out = mcfs(&["trace", "synth", "--io", "e-flat", "--user", "reader", "--scale", "0.5", "-o", "x"]);
    assert_eq!(out.status.code(), Some(2), "--scale belongs to --fasttrack");
}

#[test]
fn replay_json_gives_the_elapsed_time_and_latency_percentiles() {
    let dir = tempfile::tempdir().unwrap();
    let traces = synth(dir.path(), "load", "4");
    let into = dir.path().join("into");
    fs::create_dir(&into).unwrap();
    ok(&["trace", "replay", path(&traces.join("setup.trace")), "--into", path(&into)]);
    let json = dir.path().join("fg.json");
    ok(&["trace", "replay", path(&traces.join("run.trace")), "--into", path(&into), "--json", path(&json)]);
    let j = read_json(&json);
    assert_eq!((j["passes"].as_u64(), j["stopped"].as_bool(), j["skipped"].as_u64()), (Some(1), Some(false), Some(0)));
    let done = j["done"].as_u64().unwrap();
    assert!(done > 50, "{j}");
    assert_eq!(j["ops"].as_u64(), Some(done), "every file operation is timed");
    assert_eq!(j["ignored"].as_u64(), Some(1), "the foreground event");
    let lat = |k: &str| j["latency_ns"][k].as_u64().unwrap();
    let elapsed = j["elapsed_ns"].as_u64().unwrap();
    assert!(lat("p50") <= lat("p99") && lat("p99") <= lat("max") && lat("max") <= elapsed, "{j}");
    assert!(lat("p50") > 0, "{j}");
    let by_op = j["by_op"].as_object().unwrap();
    let count = |op: &str| by_op[op]["count"].as_u64().unwrap();
    assert_eq!(by_op.values().map(|o| o["count"].as_u64().unwrap()).sum::<u64>(), done, "{j}");
    assert!(count("read") > count("write") && count("fsync") == 1, "the game reads more than it writes: {j}");
    assert!(by_op.values().all(|o| o["max_ns"].as_u64() <= Some(lat("max"))), "{j}");
}

#[test]
fn a_looped_replay_stops_on_sigterm_or_sigint_after_whole_passes() {
    let dir = tempfile::tempdir().unwrap();
    let traces = synth(dir.path(), "update", "5");
    for signal in [libc::SIGTERM, libc::SIGINT] {
        let into = dir.path().join(format!("into-{signal}"));
        fs::create_dir(&into).unwrap();
        ok(&["trace", "replay", path(&traces.join("setup.trace")), "--into", path(&into)]);
        let json = dir.path().join(format!("bg-{signal}.json"));
        let mut child = Command::new(common::mcfs_bin())
            .args(["trace", "replay", path(&traces.join("run.trace")), "--into", path(&into), "--json", path(&json)])
            .arg("--loop")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The package is written again after the last installed file only once a second pass has begun.
        let package = into.join("data/data/com.example.update/cache/download/package.apk");
        let last = into.join("data/data/com.example.update/files/install/part7.odex");
        let modified = |p: &Path| fs::metadata(p).and_then(|m| m.modified()).ok();
        let deadline = Instant::now() + Duration::from_secs(60);
        while !matches!((modified(&last), modified(&package)), (Some(l), Some(p)) if p > l) {
            assert!(Instant::now() < deadline, "the looped replay never began a second pass");
            std::thread::sleep(Duration::from_millis(10));
        }
        // SAFETY: kill has no memory preconditions; the pid is our child's.
        assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
        let status = child.wait().unwrap();
        assert!(status.success(), "a stop signal ends the loop cleanly: {status:?}");
        let j = read_json(&json);
        assert_eq!(j["stopped"].as_bool(), Some(true), "{j}");
        assert_eq!(j["skipped"].as_u64(), Some(0), "{j}");
        assert!(j["passes"].as_u64().unwrap() >= 1, "{j}");
        let names: Vec<_> = fs::read_dir(&into).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["data"], "everything stays inside the replay directory");
    }
    let out = mcfs(&["trace", "replay", path(&traces.join("setup.trace")), "--into", path(dir.path())]);
    assert!(out.status.success());
    let empty = dir.path().join("empty.trace");
    fs::write(&empty, "mcfs-trace 1\n0 app 1 background\n").unwrap();
    let out = mcfs(&["trace", "replay", path(&empty), "--into", path(dir.path()), "--loop"]);
    assert_eq!(out.status.code(), Some(1), "nothing to repeat is an error, not a busy loop");
    assert!(String::from_utf8_lossy(&out.stderr).contains("no file operation to repeat"));
}

/// One run record, as run.sh writes it.
fn record(source: &str, scenario: &str, kind: &str, count: u32, config: &str, rep: u32, seconds: f64) -> String {
    format!(
        "{{\"source\":\"{source}\",\"scenario\":\"{scenario}\",\"bg_kind\":\"{kind}\",\"bg_count\":{count},\
         \"config\":\"{config}\",\"rep\":{rep},\"fg_seconds\":{seconds},\"fg\":{{\"ops\":1}}}}\n"
    )
}

#[test]
fn report_writes_the_fasttrack_section_after_the_mobifs_one() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    fs::create_dir(&results).unwrap();
    let mut live = String::new();
    for scenario in ["launch", "switch", "load"] {
        live += &record("live", scenario, "none", 0, "ext4", 0, 1.0);
        live += &record("live", scenario, "none", 0, "mcfs-off", 0, 0.5);
        for kind in ["update", "backup"] {
            for (config, t) in [
                ("ext4", 5.0),
                ("mcfs-off", 4.0),
                ("pa", 2.0),
                ("pr", 3.0),
                ("id", 3.6),
                ("fastt-minus", 1.2),
                ("fastt", 1.0),
            ] {
                for rep in 0..3 {
                    live += &record("live", scenario, kind, 1, config, rep, t + f64::from(rep) * 0.1);
                }
            }
        }
    }
    for n in [2, 4, 6] {
        live += &record("live", "switch", "mixed", n, "ext4", 0, f64::from(n) * 3.0);
        live += &record("live", "switch", "mixed", n, "fastt", 0, 0.8 + f64::from(n) * 0.04);
    }
    fs::write(results.join("live.jsonl"), live).unwrap();
    fs::write(results.join("sim.jsonl"), record("sim", "switch", "none", 0, "mcfs-off", 0, 0.5)).unwrap();

    let report = dir.path().join("docs").join("REPORT.md");
    fs::create_dir_all(report.parent().unwrap()).unwrap();
    let before = "# Report\n\n<!-- mobifs:begin -->\nM\n<!-- mobifs:end -->\n\n## MobiFS discussion\n\nby hand\n";
    fs::write(&report, before).unwrap();
    ok(&["report", "--fasttrack", path(&results), "--out", path(&report)]);
    let text = fs::read_to_string(&report).unwrap();
    assert!(text.starts_with(before), "everything before stays: {text}");
    assert!(text.contains("\n<!-- fasttrack:begin -->\n## FastTrack study (seed 001, §5)\n"), "{text}");
    assert!(text.ends_with("<!-- fasttrack:end -->\n"), "{text}");
    for expected in [
        "| Camera switch, FastT, 6 BG apps (× FG-only) | 1.27× (Fig. 13) | 2.08× | – |",
        "| Gallery launch + Update | 1.00 | 0.50 | 5.10× | 8.20× | 4.20× | 6.20× | 7.40× | 2.60× | 2.20× |",
        "| 6 | 18.00× | – | – | 2.08× | 94.2 % | – |",
        "](report/fasttrack-fig10-live.svg)",
        "### Figure 13, simulated: app switch against the number of BG apps",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in\n{text}");
    }
    for chart in ["fig10-live", "fig13-live", "fig10-sim", "fig13-sim"] {
        let svg = fs::read_to_string(report.parent().unwrap().join("report").join(format!("fasttrack-{chart}.svg")))
            .unwrap_or_else(|e| panic!("{chart}: {e}"));
        assert!(svg.starts_with("<svg") && svg.contains("FastT"), "{chart}");
    }
    ok(&["report", "--fasttrack", path(&results), "--out", path(&report)]);
    assert_eq!(fs::read_to_string(&report).unwrap(), text, "the same results give the same report");

    fs::write(results.join("live.jsonl"), "{\"source\":\"live\",\"fg_seconds\":1}\n").unwrap();
    let out = mcfs(&["report", "--fasttrack", path(&results), "--out", path(&report)]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("live.jsonl: line 1"), "{err}");
    assert_eq!(fs::read_to_string(&report).unwrap(), text, "a failed report changes nothing");
}

#[test]
fn sim_fasttrack_runs_a_point_on_the_same_workloads_and_prints_the_same_line_twice() {
    let dir = tempfile::tempdir().unwrap();
    let gallery = synth(dir.path(), "launch", "2");
    let update = synth(dir.path(), "update", "3");
    let config = dir.path().join("c.toml");
    fs::write(
        &config,
        "mode = \"sync\"\ncache_size = 16777216\n[fasttrack]\npreempt = false\nreclaim = false\ndispatch = false\n",
    )
    .unwrap();
    let point = |extra: &[&str]| {
        let mut args =
            vec!["sim", "--fasttrack", path(&gallery), "--config", path(&config), "--device", "emmc", "--json"];
        args.extend_from_slice(extra);
        String::from_utf8(ok(&args).stdout).unwrap()
    };
    let alone = point(&[]);
    assert!(alone.starts_with("{\"fg_seconds\":") && alone.ends_with("}\n") && alone.lines().count() == 1, "{alone}");
    let alone: Value = serde_json::from_str(&alone).unwrap();
    assert_eq!((alone["fg_app"].as_str(), alone["warmup_ns"].as_u64()), (Some("com.example.launch"), Some(0)));
    let with_bg = point(&["--bg", path(&update), "--warmup", "0.5", "--scheduler", "fifo"]);
    assert_eq!(with_bg, point(&["--bg", path(&update), "--warmup", "0.5", "--scheduler", "fifo"]), "deterministic");
    let j: Value = serde_json::from_str(&with_bg).unwrap();
    assert_eq!(j["warmup_ns"].as_u64(), Some(500_000_000));
    assert!(j["bg_passes"].as_u64().unwrap() >= 1 && j["bg_covered"].as_bool() == Some(true), "{j}");
    let fg = &j["report"]["apps"]["com.example.launch"];
    assert_eq!(fg["uid"].as_u64(), Some(10_001));
    assert_eq!(j["report"]["apps"]["com.example.update"]["uid"].as_u64(), Some(10_002));
    assert!(fg["refused"].as_object().unwrap().is_empty(), "the setup made every file the launch reads: {fg}");
    let (alone_s, with_bg_s) = (alone["fg_seconds"].as_f64().unwrap(), j["fg_seconds"].as_f64().unwrap());
    assert!(alone_s > 0.0 && with_bg_s >= alone_s, "a BG app never speeds the FG app up: {alone_s} {with_bg_s}");
    assert!(String::from_utf8(ok(&["sim", "--fasttrack", path(&gallery), "--bg", path(&update)]).stdout)
        .unwrap()
        .contains("FG  com.example.launch"));

    let out = mcfs(&["sim", "--fasttrack", path(&gallery), "--bg", path(&gallery)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is given twice"));
    let out = mcfs(&["sim", "--trace", "t.trace", "--bg", path(&update)]);
    assert_eq!(out.status.code(), Some(2), "--bg belongs to --fasttrack");
}
