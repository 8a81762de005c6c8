//! `mcfs stat` against a live mount: the JSON document (schema version,
//! timestamp, seconds everywhere, `null` before the first checkpoint and
//! every field explained in docs/STAT.md), the Prometheus text read back by
//! a Prometheus parser and agreeing with the JSON, the metrics file a
//! daemon keeps for node_exporter, and `--interval` lines.

mod common;

use common::{ctl, mcfs, run_cli, stats, stderr_of, Daemon, Dirs};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

/// No timed checkpoint: the test decides when the first one happens.
const NO_TIMED_CHECKPOINT: &str = "max_stale_seconds = 600\nwriteback_interval_seconds = 600\n";

/// Field paths explained in docs/STAT.md (`| `path` |` rows).
fn documented() -> BTreeSet<String> {
    let doc = include_str!("../../../docs/STAT.md");
    doc.lines().filter_map(|l| l.strip_prefix("| `")?.split('`').next().map(String::from)).collect()
}

/// Every leaf path of `value` (objects walked, `apps.NAME` as `apps.*`, lists are leaves).
fn leaf_paths(value: &Value, path: &str, out: &mut BTreeSet<String>) {
    match value.as_object() {
        Some(map) => {
            for (key, inner) in map {
                let key = if path == "apps." { "*" } else { key };
                leaf_paths(inner, &format!("{path}{key}."), out);
            }
        }
        None => {
            out.insert(path.trim_end_matches('.').to_string());
        }
    }
}

fn parse_prometheus(text: &str) -> prometheus_parse::Scrape {
    let lines = text.lines().map(|l| Ok(l.to_string()));
    let scrape =
        prometheus_parse::Scrape::parse(lines).unwrap_or_else(|e| panic!("not Prometheus text ({e}):\n{text}"));
    let sample_lines = text.lines().filter(|l| !l.is_empty() && !l.starts_with('#')).count();
    assert_eq!(scrape.samples.len(), sample_lines, "every sample line parses:\n{text}");
    scrape
}

fn sample(scrape: &prometheus_parse::Scrape, metric: &str, app: Option<&str>) -> prometheus_parse::Value {
    let found = scrape.samples.iter().find(|s| s.metric == metric && s.labels.get("app") == app);
    found.unwrap_or_else(|| panic!("no sample {metric} {app:?}")).value.clone()
}

#[test]
fn the_document_the_prometheus_text_and_the_metrics_file_agree() {
    let dirs = Dirs::new(Some(NO_TIMED_CHECKPOINT));
    let metrics = dirs.logs.join("mcfs.prom");
    let daemon = Daemon::foreground(&dirs, &["--metrics-file", metrics.to_str().unwrap()]);
    let mnt = dirs.mnt.display().to_string();

    let before = stats(&dirs);
    assert_eq!(before["schema_version"], 1);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
    let taken = before["timestamp_seconds"].as_f64().expect("timestamp_seconds");
    assert!((now - taken).abs() < 600.0, "timestamp {taken} is not about now ({now})");
    if before["checkpoints"] == 0 {
        assert_eq!(before["last_checkpoint_duration_seconds"], Value::Null);
        let table = mcfs(&dirs, &["stat", &mnt]).assert_success("mcfs stat");
        assert!(
            table.lines().any(|l| l.contains("last_checkpoint_duration_seconds") && l.ends_with("never")),
            "{table}"
        );
    }

    std::fs::write(dirs.mnt.join("f"), vec![7u8; 300_000]).expect("write through mcfs");
    ctl(&dirs, &["checkpoint"]);
    let doc = stats(&dirs);
    assert!(doc["last_checkpoint_duration_seconds"].as_f64().is_some(), "{doc}");
    let mut paths = BTreeSet::new();
    leaf_paths(&doc, "", &mut paths);
    let documented = documented();
    let undocumented: Vec<&String> = paths.difference(&documented).collect();
    assert!(undocumented.is_empty(), "fields docs/STAT.md does not explain: {undocumented:?}");
    assert!(!doc.to_string().contains("_ns\""), "a field in ns: {doc}");

    let text = mcfs(&dirs, &["stat", "--format", "prometheus", &mnt]).assert_success("mcfs stat --format prometheus");
    let scrape = parse_prometheus(&text);
    let written = doc["bytes_written"].as_f64().unwrap();
    assert!(written >= 300_000.0, "{doc}");
    assert_eq!(sample(&scrape, "mcfs_bytes_written_total", None), prometheus_parse::Value::Counter(written));
    assert_eq!(
        sample(&scrape, "mcfs_cache_limit_bytes", None),
        prometheus_parse::Value::Gauge(doc["cache_limit_bytes"].as_f64().unwrap())
    );
    let app = doc["apps"].as_object().and_then(|apps| apps.keys().next()).expect("an app wrote").clone();
    let app_written = doc["apps"][&app]["bytes_written"].as_f64().unwrap();
    assert_eq!(
        sample(&scrape, "mcfs_app_bytes_written_total", Some(&app)),
        prometheus_parse::Value::Counter(app_written)
    );

    let file = std::fs::read_to_string(&metrics).expect("the daemon writes its metrics file at once");
    let from_file = parse_prometheus(&file);
    assert!(from_file.samples.iter().any(|s| s.metric == "mcfs_checkpoints_total"), "{file}");
    daemon.unmount();
    assert!(!Path::new(&metrics).exists(), "the metrics file outlived the daemon");
}

#[test]
fn interval_prints_one_line_per_interval_with_rates() {
    let dirs = Dirs::new(None);
    let _daemon = Daemon::foreground(&dirs, &[]);
    let mnt = dirs.mnt.display().to_string();

    let out = mcfs(&dirs, &["stat", "--interval", "0.2", "--count", "3", "--json", &mnt]).assert_success("--json");
    let lines: Vec<Value> =
        out.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect();
    assert_eq!(lines.len(), 3, "{out}");
    for line in &lines {
        assert!(line["interval_seconds"].as_f64().is_some_and(|s| s > 0.0), "{line}");
        assert!(line["rates"]["bytes_written_per_second"].as_f64().is_some_and(|r| r >= 0.0), "{line}");
        assert_eq!(line["schema_version"], 1);
    }

    let table = mcfs(&dirs, &["stat", "--interval", "0.1", "--count", "2", &mnt]).assert_success("table");
    let rows: Vec<&str> = table.lines().collect();
    assert_eq!(rows.len(), 3, "a header and two lines:\n{table}");
    assert!(rows[0].starts_with("TIME") && rows[0].contains("WRITTEN/s"), "{table}");
    assert_eq!(rows[1].split_whitespace().count(), rows[2].split_whitespace().count(), "{table}");

    let both = mcfs(&dirs, &["stat", "--interval", "1", "--format", "prometheus", &mnt]);
    assert_eq!(both.status.code(), Some(1), "{}", both.output);
    assert!(both.output.contains("one snapshot"), "{}", both.output);
}

#[test]
fn stat_options_are_checked_before_any_daemon_is_asked() {
    for (args, why) in [
        (&["stat", "--count", "2", "/nonexistent"][..], "--interval"),
        (&["stat", "--interval", "0", "/nonexistent"], "at least 0.001"),
        (&["stat", "--interval", "x", "/nonexistent"], "seconds"),
        (&["stat", "--format", "xml", "/nonexistent"], "prometheus"),
        (&["stat", "--json", "--format", "table", "/nonexistent"], "cannot be used with"),
    ] {
        let out = run_cli(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr_of(&out).contains(why), "{args:?}: {}", stderr_of(&out));
    }
}
