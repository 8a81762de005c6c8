//! Renders the engine's `Stats` (received as JSON) as a readable table:
//! every overall counter in one column, then one row per app. It works on
//! the JSON form so a counter the engine adds shows up without a change here.

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
    ("fsync_p99_us", "FSYNC_P99"),
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
    let scalars: Vec<(&String, &Value)> = top.iter().filter(|(_, v)| !v.is_object() && !v.is_array()).collect();
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
    let energy_nj = device.get("energy").and_then(|e| e.get("total_nj")).and_then(Value::as_u64).unwrap_or(0);
    let profile = device.get("profile").and_then(Value::as_str).unwrap_or("?");
    format!(
        "device estimate ({profile})\n  written {}, read {}, flushes {}, busy {:.1} s, energy {:.3} J\n",
        human_bytes(count("bytes_written")),
        human_bytes(count("bytes_read")),
        count("flushes"),
        count("busy_ns") as f64 / 1e9,
        energy_nj as f64 / 1e9
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
         waited {:.3} s; checkpoint holds {}, journal yields {}, commits given way {}, commits boosted {}\n",
        count("fg_requests"),
        count("bg_requests"),
        count("bg_waits"),
        count("bg_aged"),
        count("bg_wait_ns") as f64 / 1e9,
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
    let mean_seconds = count("predicted_ns") as f64 / 1e9 / predictions.max(1) as f64;
    format!(
        "idle prediction\n  user operations {}, idle windows predicted {predictions}, responsive conflicts per \
         prediction {per_prediction:.2}, mean predicted idle {mean_seconds:.1} s\n",
        count("operations")
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

/// Units come from the key's name: `*_bytes` / `bytes_*` as sizes, `*_seconds` as durations.
fn format_value(key: &str, value: &Value) -> String {
    match value {
        Value::Null => "-".to_string(),
        Value::String(s) => s.clone(),
        Value::Number(n) if key.contains("bytes") => n.as_u64().map_or(n.to_string(), human_bytes),
        Value::Number(n) if key.ends_with("seconds") => n.as_f64().map_or(n.to_string(), |s| format!("{s:.1} s")),
        Value::Number(n) if key.ends_with("_us") => n.as_f64().map_or(n.to_string(), |us| format!("{us:.0} µs")),
        Value::Bool(b) => if *b { "yes" } else { "no" }.to_string(),
        other => other.to_string(),
    }
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
        assert!(line("stale_seconds").ends_with("1.2 s") || line("stale_seconds").ends_with("1.3 s"), "{text}");
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
            "idle": {"predictions": 4, "conflicts": 1, "predicted_ns": 10_000_000_000u64, "operations": 30},
            "apps": {"a": {"fsync_p99_us": 1234.4}}
        });
        let text = render(&stats);
        assert!(text.contains("conflicts per prediction 0.25"), "{text}");
        let device = json!({"device_estimate": {"profile": "emmc", "bytes_written": 2048, "flushes": 3,
            "busy_ns": 1_500_000_000u64, "energy": {"total_nj": 2_500_000_000u64}}});
        let device = render(&device);
        assert!(device.contains("device estimate (emmc)") && device.contains("written 2.0 KiB"), "{device}");
        assert!(device.contains("flushes 3, busy 1.5 s, energy 2.500 J"), "{device}");
        assert!(text.contains("mean predicted idle 2.5 s"), "{text}");
        assert!(text.contains("1234 µs"), "{text}");
    }

    #[test]
    fn foreground_first_dispatch_is_summarised() {
        let stats = json!({"fasttrack": {"foreground": "uid:10002", "fg_requests": 12, "bg_requests": 30,
            "bg_waits": 4, "bg_aged": 1, "bg_wait_ns": 250_000_000u64, "checkpoint_holds": 2,
            "journal_yields": 3, "commits_given_way": 5, "commits_boosted": 1}});
        let text = render(&stats);
        assert!(text.contains("foreground app uid:10002"), "{text}");
        assert!(text.contains("requests fg 12, bg 30; bg waits 4 (1 ended by aging), waited 0.250 s"), "{text}");
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
}
