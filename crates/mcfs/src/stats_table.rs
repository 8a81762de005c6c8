//! Renders the engine's `Stats` (received as JSON) as a readable table:
//! every overall counter in one column, then one row per app. It works on
//! the JSON form so a counter the engine adds shows up without a change here.

use crate::stats_fields::{self, Kind};
use serde_json::{Map, Value};
use std::fmt::Write;

/// Per-app columns: (JSON key, header).
const APP_COLUMNS: &[(&str, &str)] = &[
    ("mode", "MODE"),
    ("bytes_written", "WRITTEN"),
    ("bytes_flushed", "FLUSHED"),
    ("stale_bytes", "STALE"),
    ("stale_seconds", "STALE_AGE"),
    ("stale_bytes_max", "STALE_MAX"),
    ("stale_bytes_mean", "STALE_MEAN"),
    ("fsync_absorbed", "FSYNC_ABSORBED"),
    ("fsync_honoured", "FSYNC_HONOURED"),
    ("fsync_p99_seconds", "FSYNC_P99"),
    ("stalled_seconds", "STALLED"),
    ("vcts_committed", "VCTS_COMMITTED"),
    ("checkpoint_interval_mean_seconds", "CKPT_INTERVAL"),
];

pub fn render(stats: &Value) -> String {
    let mut out = String::new();
    let Some(top) = stats.as_object() else {
        return format!("{stats}\n");
    };
    out.push_str("overall\n");
    let about_the_document = |key: &str| stats_fields::find(key).is_some_and(|f| f.kind == Kind::Meta);
    let scalars: Vec<(&String, &Value)> =
        top.iter().filter(|(k, v)| !v.is_object() && !v.is_array() && !about_the_document(k)).collect();
    let width = scalars.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    for (key, value) in scalars {
        let _ = writeln!(out, "  {key:<width$}  {}", format_value(key, value));
    }
    if let Some(ops) = top.get("unapplied_recent").and_then(Value::as_array).filter(|ops| !ops.is_empty()) {
        out.push_str(&render_unapplied(ops));
    }
    if let Some(idle) = top.get("idle").and_then(Value::as_object) {
        out.push_str(&render_idle(idle));
    }
    if let Some(fasttrack) = top.get("fasttrack").and_then(Value::as_object) {
        out.push_str(&render_fasttrack(fasttrack));
    }
    if let Some(device) = top.get("device_estimate").and_then(Value::as_object) {
        out.push_str(&render_device(device));
    }
    if let Some(log) = top.get("log").and_then(Value::as_object) {
        out.push_str(&render_log(log));
    }
    if let Some(apps) = top.get("apps").and_then(Value::as_object) {
        out.push_str(&render_apps(apps));
    }
    out
}

/// The newest ops a checkpoint skipped because the backing store cannot hold them.
fn render_unapplied(ops: &[Value]) -> String {
    let mut out = String::from("ops the backing store could not hold (newest last)\n");
    for op in ops {
        let field = |key: &str| op.get(key).and_then(Value::as_str).unwrap_or("?").to_string();
        let _ = writeln!(out, "  {}: {}: {}", field("app"), field("op"), field("error"));
    }
    out
}

/// What the backing I/O would cost on the modelled phone flash.
fn render_device(device: &Map<String, Value>) -> String {
    let count = |key: &str| device.get(key).and_then(Value::as_u64).unwrap_or(0);
    let joules = device.get("energy").and_then(|e| e.get("total_joules")).and_then(Value::as_f64).unwrap_or(0.0);
    let busy = device.get("busy_seconds").and_then(Value::as_f64).unwrap_or(0.0);
    let profile = device.get("profile").and_then(Value::as_str).unwrap_or("?");
    format!(
        "device estimate ({profile})\n  written {}, read {}, flushes {}, busy {}, energy {joules:.3} J\n",
        human_bytes(count("bytes_written")),
        human_bytes(count("bytes_read")),
        count("flushes"),
        human_seconds(busy),
    )
}

/// What became of the daemon's log records (`logging`).
fn render_log(log: &Map<String, Value>) -> String {
    let count = |key: &str| log.get(key).and_then(Value::as_u64).unwrap_or(0);
    format!(
        "log\n  records written {}, dropped (could not be written) {}, rate-limited {}; rotations {}\n",
        count("written"),
        count("dropped"),
        count("suppressed"),
        count("rotated")
    )
}

/// The foreground app and what foreground-first dispatch did (FastTrack).
fn render_fasttrack(fasttrack: &Map<String, Value>) -> String {
    let count = |key: &str| fasttrack.get(key).and_then(Value::as_u64).unwrap_or(0);
    let foreground = fasttrack.get("foreground").and_then(Value::as_str).unwrap_or("none");
    format!(
        "foreground-first I/O\n  foreground app {foreground}\n  requests fg {}, bg {}; bg waits {} ({} ended by aging), \
         waited {}; checkpoint holds {}, journal yields {}, commits given way {}, commits boosted {}\n",
        count("fg_requests"),
        count("bg_requests"),
        count("bg_waits"),
        count("bg_aged"),
        human_seconds(fasttrack.get("bg_wait_seconds").and_then(Value::as_f64).unwrap_or(0.0)),
        count("checkpoint_holds"),
        count("journal_yields"),
        count("commits_given_way"),
        count("commits_boosted")
    )
}

/// The idle predictor's score as MobiFS §7.4 reports it.
fn render_idle(idle: &Map<String, Value>) -> String {
    let count = |key: &str| idle.get(key).and_then(Value::as_u64).unwrap_or(0);
    let predictions = count("predictions");
    let per_prediction = count("conflicts") as f64 / predictions.max(1) as f64;
    let predicted = idle.get("predicted_seconds").and_then(Value::as_f64).unwrap_or(0.0);
    format!(
        "idle prediction\n  user operations {}, idle windows predicted {predictions}, responsive conflicts per \
         prediction {per_prediction:.2}, mean predicted idle {}\n",
        count("operations"),
        human_seconds(predicted / predictions.max(1) as f64)
    )
}

fn render_apps(apps: &Map<String, Value>) -> String {
    if apps.is_empty() {
        return "apps\n  (none yet)\n".to_string();
    }
    let mut rows: Vec<Vec<String>> =
        vec![std::iter::once("APP").chain(APP_COLUMNS.iter().map(|c| c.1)).map(String::from).collect()];
    for (name, app) in apps {
        let mut row = vec![name.clone()];
        row.extend(APP_COLUMNS.iter().map(|(key, _)| app.get(key).map_or("-".to_string(), |v| format_value(key, v))));
        rows.push(row);
    }
    aligned("apps", &rows)
}

/// `title`, then `rows` (the first is the header) in left-aligned columns, indented by two spaces.
pub fn aligned(title: &str, rows: &[Vec<String>]) -> String {
    let columns = rows.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..columns)
        .map(|c| rows.iter().map(|r| r.get(c).map_or(0, |s| s.chars().count())).max().unwrap_or(0))
        .collect();
    let mut out = format!("{title}\n");
    for row in rows {
        let cells: Vec<String> = row.iter().zip(&widths).map(|(cell, w)| format!("{cell:<w$}")).collect();
        let _ = writeln!(out, "  {}", cells.join("  ").trim_end());
    }
    out
}

/// Units come from the key's name (docs/STAT.md): `*_bytes` / `bytes_*` as
/// sizes, `*_seconds` as durations.
fn format_value(key: &str, value: &Value) -> String {
    match value {
        Value::Null if key == "last_checkpoint_duration_seconds" => "never".to_string(),
        Value::Null => "-".to_string(),
        Value::String(s) => s.clone(),
        Value::Number(n) if key.contains("bytes") => n.as_u64().map_or(n.to_string(), human_bytes),
        Value::Number(n) if key.ends_with("seconds") => n.as_f64().map_or(n.to_string(), human_seconds),
        Value::Bool(b) => if *b { "yes" } else { "no" }.to_string(),
        other => other.to_string(),
    }
}

/// Seconds to three significant digits in s, ms, µs or ns: "1.25 s", "127 ns", "0 s".
pub fn human_seconds(seconds: f64) -> String {
    const UNITS: [(f64, &str); 4] = [(1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")];
    if seconds == 0.0 || !seconds.is_finite() {
        return format!("{seconds} s");
    }
    let (scale, unit) = UNITS.iter().copied().find(|(scale, _)| seconds.abs() >= *scale).unwrap_or(UNITS[3]);
    let value = seconds / scale;
    let decimals = match value.abs() {
        v if v < 10.0 => 2,
        v if v < 100.0 => 1,
        _ => 0,
    };
    format!("{value:.decimals$} {unit}")
}

/// Bytes as people read them (the engine's log lines use the same words).
pub use mcfs_core::human::bytes as human_bytes;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn table_shows_overall_and_each_app() {
        let stats = json!({
            "bytes_written": 2048, "stale_seconds": 1.25, "battery_percent": null, "low_battery": false,
            "checkpoint_error": "EIO on a/b", "checkpoints": 3,
            "apps": {
                "mail": {"app": "mail", "mode": "sync", "bytes_written": 10, "stale_seconds": 0.0},
                "uid:10042": {"app": "uid:10042", "mode": "memory", "bytes_written": 5000000}
            }
        });
        let text = render(&stats);
        let line = |prefix: &str| {
            text.lines()
                .find(|l| l.trim_start().starts_with(prefix))
                .unwrap_or_else(|| panic!("{prefix} missing:\n{text}"))
                .to_string()
        };
        assert!(line("bytes_written").ends_with("2.0 KiB"), "{text}");
        assert!(line("stale_seconds").ends_with("1.25 s"), "{text}");
        assert!(line("battery_percent").ends_with('-'));
        assert!(line("low_battery").ends_with("no"));
        assert!(line("checkpoint_error").ends_with("EIO on a/b"));
        assert!(line("checkpoints").ends_with('3'));
        assert!(line("APP").contains("FSYNC_HONOURED"));
        let mail = line("mail");
        assert!(mail.contains("sync") && mail.contains("10 B"), "{mail}");
        assert!(line("uid:10042").contains("4.8 MiB"), "{text}");
        assert!(!text.contains("\"apps\""), "nested objects are not dumped as scalars");
    }

    #[test]
    fn skipped_ops_are_listed_by_app_op_and_error() {
        let stats = json!({
            "unapplied_ops": 1,
            "unapplied_recent": [{"app": "uid:10001", "op": "setxattr d/f", "errno": 95, "error": "Operation not supported"}]
        });
        let text = render(&stats);
        assert!(
            text.contains("unapplied_ops") && text.contains("  uid:10001: setxattr d/f: Operation not supported\n"),
            "{text}"
        );
        assert!(!render(&json!({"unapplied_recent": []})).contains("could not hold"), "nothing to list, no heading");
    }

    #[test]
    fn idle_prediction_and_latencies_are_readable() {
        let stats = json!({
            "idle": {"predictions": 4, "conflicts": 1, "predicted_seconds": 10.0, "operations": 30},
            "apps": {"a": {"fsync_p99_seconds": 1.2344e-3}, "b": {"fsync_p99_seconds": 0.127e-6}}
        });
        let text = render(&stats);
        assert!(text.contains("conflicts per prediction 0.25"), "{text}");
        let device = json!({"device_estimate": {"profile": "emmc", "bytes_written": 2048, "flushes": 3,
            "busy_seconds": 1.5, "energy": {"total_joules": 2.5}}});
        let device = render(&device);
        assert!(device.contains("device estimate (emmc)") && device.contains("written 2.0 KiB"), "{device}");
        assert!(device.contains("flushes 3, busy 1.50 s, energy 2.500 J"), "{device}");
        assert!(text.contains("mean predicted idle 2.50 s"), "{text}");
        assert!(text.contains("1.23 ms") && text.contains("127 ns"), "{text}");
    }

    #[test]
    fn foreground_first_dispatch_is_summarised() {
        let stats = json!({"fasttrack": {"foreground": "uid:10002", "fg_requests": 12, "bg_requests": 30,
            "bg_waits": 4, "bg_aged": 1, "bg_wait_seconds": 0.25, "checkpoint_holds": 2,
            "journal_yields": 3, "commits_given_way": 5, "commits_boosted": 1}});
        let text = render(&stats);
        assert!(text.contains("foreground app uid:10002"), "{text}");
        assert!(text.contains("requests fg 12, bg 30; bg waits 4 (1 ended by aging), waited 250 ms"), "{text}");
        assert!(
            text.contains("checkpoint holds 2, journal yields 3, commits given way 5, commits boosted 1"),
            "{text}"
        );
        let none = render(&json!({"fasttrack": {"foreground": null}}));
        assert!(none.contains("foreground app none") && none.contains("requests fg 0, bg 0"), "{none}");
    }

    #[test]
    fn no_apps_says_so() {
        assert!(render(&json!({"apps": {}})).contains("(none yet)"));
    }

    #[test]
    fn never_before_the_first_checkpoint_and_no_document_fields() {
        let doc = mcfs_core::stats_doc::document(
            json!({"checkpoints": 0, "last_checkpoint_duration_ns": null}),
            std::time::SystemTime::now(),
        );
        let text = render(&doc);
        assert!(
            text.lines().any(|l| l.starts_with("  last_checkpoint_duration_seconds") && l.ends_with(" never")),
            "{text}"
        );
        assert!(!text.contains("schema_version") && !text.contains("timestamp_seconds"), "{text}");
    }

    #[test]
    fn seconds_keep_three_significant_digits() {
        let cases = [(0.0, "0 s"), (1.27e-7, "127 ns"), (1.2344e-3, "1.23 ms"), (0.25, "250 ms"), (12.34, "12.3 s")];
        for (seconds, shown) in cases {
            assert_eq!(human_seconds(seconds), shown);
        }
        assert_eq!(human_seconds(5e-11), "0.05 ns");
        assert_eq!(human_seconds(3600.0), "3600 s");
    }

    /// Every overall number and every app cell the table shows, read back,
    /// is the JSON's value within the rounding the table shows it with.
    #[test]
    fn table_agrees_with_the_json() {
        use crate::stats_fields::{Kind, FIELDS};
        use rand::{Rng, SeedableRng};
        let seed = std::env::var("MCFS_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0x57a7);
        eprintln!("table_agrees_with_the_json: seed {seed} (set MCFS_SEED to repeat)");
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut doc = json!({"apps": {"a": {}, "uid:10001": {}}});
        for field in FIELDS.iter().filter(|f| matches!(f.kind, Kind::Counter | Kind::Gauge)) {
            for app in ["a", "uid:10001"] {
                let value = if field.path.ends_with("seconds") {
                    json!(10f64.powf(rng.gen_range(-9.5..5.0)))
                } else {
                    {
                        let bits = rng.gen_range(1..50);
                        json!(rng.gen_range(0..1u64 << bits))
                    }
                };
                let pointer = format!("/{}", field.path.replace("apps.*", &format!("apps.{app}")).replace('.', "/"));
                set(&mut doc, &pointer, value);
            }
        }
        let text = render(&doc);
        let mut checked = 0;
        for (key, value) in doc.as_object().unwrap().iter().filter(|(_, v)| v.is_number()) {
            let line = text.lines().find(|l| l.split_whitespace().next() == Some(key)).expect(key);
            assert_close(key, line.trim_start()[key.len()..].trim(), value, &text);
            checked += 1;
        }
        // Columns start where the header has a word after a space (cells are padded in chars).
        let header: Vec<char> = text.lines().find(|l| l.trim_start().starts_with("APP ")).unwrap().chars().collect();
        let starts: Vec<usize> = (1..header.len()).filter(|&i| header[i - 1] == ' ' && header[i] != ' ').collect();
        for app in ["a", "uid:10001"] {
            let row: Vec<char> =
                text.lines().find(|l| l.trim_start().starts_with(&format!("{app} "))).unwrap().chars().collect();
            for (column, (key, _)) in
                APP_COLUMNS.iter().enumerate().filter(|(_, (k, _))| doc["apps"][app][k].is_number())
            {
                let end = starts.get(column + 2).copied().unwrap_or(row.len()).min(row.len());
                let cell: String = row[starts[column + 1]..end].iter().collect();
                assert_close(key, cell.trim(), &doc["apps"][app][key], &text);
                checked += 1;
            }
        }
        assert!(checked > 30, "only {checked} cells compared");
    }

    fn set(doc: &mut Value, pointer: &str, value: Value) {
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        let mut node = doc;
        for part in parent.split('/').skip(1) {
            node = node.as_object_mut().unwrap().entry(part).or_insert_with(|| json!({}));
        }
        node[key] = value;
    }

    /// `cell` read back (a size, a duration or a count) is `want` within half its last digit.
    fn assert_close(key: &str, cell: &str, want: &Value, text: &str) {
        let want = want.as_f64().unwrap();
        let (number, unit) = cell.split_once(' ').unwrap_or((cell, ""));
        let scale = match unit {
            "" | "B" | "s" => 1.0,
            "ms" => 1e-3,
            "µs" => 1e-6,
            "ns" => 1e-9,
            binary => 1024f64.powi(
                1 + ["KiB", "MiB", "GiB", "TiB", "PiB"]
                    .iter()
                    .position(|u| *u == binary)
                    .unwrap_or_else(|| panic!("{key}: unit of {cell:?}")) as i32,
            ),
        };
        let decimals = number.split_once('.').map_or(0, |(_, d)| d.len()) as i32;
        let shown: f64 = number.parse().unwrap_or_else(|_| panic!("{key}: {cell:?} is no number"));
        let slack = 0.5 * 10f64.powi(-decimals) * scale * (1.0 + 1e-9);
        assert!((shown * scale - want).abs() <= slack, "{key}: table shows {cell:?}, JSON says {want}\n{text}");
    }
}
