//! The readable form of a replay's metrics: a summary, the skip reasons, and one row per app.
//!
//! It reads the metrics through their JSON form (as `stats_table` does for `mcfs stat`), so a metric that
//! is renamed or dropped shows as `-` instead of breaking the build; `--json` prints everything.

use crate::stats_table::human_bytes;
use serde_json::Value;
use std::fmt::Write;

/// Per-app columns: (header, JSON pointer inside the app's object, unit).
const APP_COLUMNS: &[(&str, &str, Unit)] = &[
    ("WRITTEN", "/bytes_written", Unit::Bytes),
    ("FLUSHED", "/bytes_flushed", Unit::Bytes),
    ("CHECKPOINTS", "/checkpoints", Unit::Count),
    ("FSYNC_ABSORBED", "/fsync_absorbed", Unit::Count),
    ("FSYNC_HONOURED", "/fsync_honoured", Unit::Count),
    ("FSYNC_P99", "/fsync_latency/p99_ns", Unit::Nanos),
    ("STALL", "/stall_ns", Unit::Nanos),
];

#[derive(Clone, Copy)]
enum Unit {
    Count,
    Bytes,
    Nanos,
    Nanojoules,
}

fn number(v: &Value, pointer: &str) -> Option<u64> {
    v.pointer(pointer).and_then(Value::as_u64)
}

fn show(v: &Value, pointer: &str, unit: Unit) -> String {
    let Some(n) = number(v, pointer) else { return "-".into() };
    match unit {
        Unit::Count => n.to_string(),
        Unit::Bytes => human_bytes(n),
        Unit::Nanos => duration(n),
        Unit::Nanojoules => energy(n),
    }
}

fn duration(ns: u64) -> String {
    match ns {
        0..=999_999 => format!("{:.1} µs", ns as f64 / 1e3),
        1_000_000..=999_999_999 => format!("{:.1} ms", ns as f64 / 1e6),
        _ => format!("{:.3} s", ns as f64 / 1e9),
    }
}

fn energy(nj: u64) -> String {
    if nj >= 1_000_000_000 {
        format!("{:.3} J", nj as f64 / 1e9)
    } else {
        format!("{:.3} mJ", nj as f64 / 1e6)
    }
}

pub fn render(trace: &str, device: &str, m: &Value) -> String {
    let s = |pointer: &str, unit: Unit| show(m, pointer, unit);
    let written = number(m, "/bytes_written");
    let flushed = number(m, "/bytes_flushed");
    let share = match (written, flushed) {
        (Some(w), Some(f)) if w > 0 => format!(" ({} % of written)", f.saturating_mul(100) / w),
        _ => String::new(),
    };
    let rows: Vec<(&str, String)> = vec![
        (
            "virtual time",
            format!(
                "{} ({}; recorded {})",
                s("/virtual_ns", Unit::Nanos),
                m.pointer("/timing").and_then(Value::as_str).unwrap_or("-"),
                s("/trace_ns", Unit::Nanos)
            ),
        ),
        (
            "events",
            format!(
                "{} replayed, {} skipped, {} out of order",
                s("/events_replayed", Unit::Count),
                s("/events_skipped", Unit::Count),
                s("/out_of_order_events", Unit::Count)
            ),
        ),
        ("written by apps", s("/bytes_written", Unit::Bytes)),
        (
            "flushed",
            format!("{}{share}, journal {}", s("/bytes_flushed", Unit::Bytes), s("/journal_bytes", Unit::Bytes)),
        ),
        (
            "checkpoints",
            format!(
                "{} ({} during the trace)",
                s("/checkpoints", Unit::Count),
                s("/checkpoints_before_shutdown", Unit::Count)
            ),
        ),
        (
            "fsync",
            format!("{} absorbed, {} honoured", s("/fsync_absorbed", Unit::Count), s("/fsync_honoured", Unit::Count)),
        ),
        (
            "fsync latency",
            format!(
                "p50 {}, p99 {}, max {}",
                s("/fsync_latency/p50_ns", Unit::Nanos),
                s("/fsync_latency/p99_ns", Unit::Nanos),
                s("/fsync_latency/max_ns", Unit::Nanos)
            ),
        ),
        ("apps stalled", s("/stall_ns", Unit::Nanos)),
        (
            "bytes at risk",
            format!(
                "max {}, mean {}",
                s("/bytes_at_risk/max_bytes", Unit::Bytes),
                s("/bytes_at_risk/mean_bytes", Unit::Bytes)
            ),
        ),
        (
            "device",
            format!(
                "{} requests ({} reads, {} writes, {} flushes), {} written, busy {}",
                s("/device/requests", Unit::Count),
                s("/device/reads", Unit::Count),
                s("/device/writes", Unit::Count),
                s("/device/flushes", Unit::Count),
                s("/device/bytes_written", Unit::Bytes),
                s("/device/busy_ns", Unit::Nanos)
            ),
        ),
        (
            "energy",
            format!(
                "{} (write {}, read {}, flush {}, tail {}, wake-up {})",
                s("/device/energy/total_nj", Unit::Nanojoules),
                s("/device/energy/write_nj", Unit::Nanojoules),
                s("/device/energy/read_nj", Unit::Nanojoules),
                s("/device/energy/flush_nj", Unit::Nanojoules),
                s("/device/energy/tail_nj", Unit::Nanojoules),
                s("/device/energy/wakeup_nj", Unit::Nanojoules)
            ),
        ),
    ];
    let mut out = format!("replay of {trace} on {device}\n");
    let width = rows.iter().map(|(label, _)| label.len()).max().unwrap_or(0);
    for (label, value) in rows {
        let _ = writeln!(out, "  {label:<width$}  {value}");
    }
    if let Some(reasons) = m.get("skip_reasons").and_then(Value::as_object).filter(|r| !r.is_empty()) {
        out.push_str("skipped\n");
        for (reason, count) in reasons {
            let _ = writeln!(out, "  {:>8}  {reason}", count.to_string());
        }
    }
    if let Some(apps) = m.get("apps").and_then(Value::as_object) {
        out.push_str(&render_apps(apps));
    }
    out
}

fn render_apps(apps: &serde_json::Map<String, Value>) -> String {
    let header = std::iter::once("APP").chain(APP_COLUMNS.iter().map(|c| c.0)).map(String::from).collect();
    let mut rows: Vec<Vec<String>> = vec![header];
    for (name, app) in apps {
        let mut row = vec![name.clone()];
        row.extend(APP_COLUMNS.iter().map(|&(_, pointer, unit)| show(app, pointer, unit)));
        rows.push(row);
    }
    crate::stats_table::aligned("apps", &rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renders_summary_skips_and_app_rows_and_tolerates_missing_metrics() {
        let m = json!({
            "virtual_ns": 300_000_000_000u64,
            "events_replayed": 10, "events_skipped": 2, "out_of_order_events": 0,
            "bytes_written": 8192, "bytes_flushed": 4096,
            "fsync_latency": {"p50_ns": 1500, "p99_ns": 2_000_000, "max_ns": 3_000_000_000u64},
            "device": {"energy": {"total_nj": 2_500_000_000u64}},
            "skip_reasons": {"unknown path": 2},
            "apps": {"com.twitter.android": {"bytes_written": 8192, "checkpoints": 3}}
        });
        let text = render("t.trace", "emmc", &m);
        assert!(text.starts_with("replay of t.trace on emmc\n"), "{text}");
        assert!(text.contains("300.000 s"), "{text}");
        assert!(text.contains("4.0 KiB (50 % of written)"), "{text}");
        assert!(text.contains("p50 1.5 µs, p99 2.0 ms, max 3.000 s"), "{text}");
        assert!(text.contains("2.500 J"), "{text}");
        assert!(text.contains("       2  unknown path"), "{text}");
        let row = text.lines().find(|l| l.contains("com.twitter.android")).unwrap();
        assert!(row.contains("8.0 KiB") && row.contains(" 3 ") && row.contains(" -"), "{row}");
    }
}
