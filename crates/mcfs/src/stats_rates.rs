//! `mcfs stat --interval`: what changed between two snapshots of the stat
//! document, per second, and the line printed for it (like vmstat's).

use crate::stats_fields::{Kind, FIELDS};
use crate::stats_table::human_bytes;
use serde_json::{Map, Value};

/// Per-second rate of every counter outside `apps` between `before` and
/// `after`, taken `elapsed_seconds` apart, nested as in the document with
/// `_per_second` added to each name. A counter that went down belongs to a
/// restarted daemon: its rate counts from zero.
pub fn rates(before: &Value, after: &Value, elapsed_seconds: f64) -> Value {
    let mut out = Value::Object(Map::new());
    if elapsed_seconds <= 0.0 {
        return out;
    }
    for field in FIELDS.iter().filter(|f| f.kind == Kind::Counter && !f.path.starts_with("apps.")) {
        let pointer = format!("/{}", field.path.replace('.', "/"));
        let (Some(now), Some(then)) = (number(after, &pointer), number(before, &pointer)) else { continue };
        let delta = if now >= then { now - then } else { now };
        insert(&mut out, field.path, delta / elapsed_seconds);
    }
    out
}

fn number(doc: &Value, pointer: &str) -> Option<f64> {
    doc.pointer(pointer).and_then(Value::as_f64)
}

/// Sets `root.a.b_per_second` for path `a.b`, making the objects on the way.
fn insert(root: &mut Value, path: &str, rate: f64) {
    let mut parts: Vec<&str> = path.split('.').collect();
    let last = parts.pop().unwrap_or_default();
    let mut node = root;
    for part in parts {
        let Some(map) = node.as_object_mut() else { return };
        node = map.entry(part).or_insert_with(|| Value::Object(Map::new()));
    }
    if let Some(map) = node.as_object_mut() {
        map.insert(format!("{last}_per_second"), rate.into());
    }
}

/// How a column shows its value.
enum Show {
    BytesPerSecond,
    PerSecond,
    /// The gauge's value now, in bytes.
    Bytes,
}

/// The columns of the interval lines: (header, document path, how).
const COLUMNS: &[(&str, &str, Show)] = &[
    ("WRITTEN/s", "bytes_written", Show::BytesPerSecond),
    ("FLUSHED/s", "bytes_flushed", Show::BytesPerSecond),
    ("JOURNAL/s", "journal_bytes", Show::BytesPerSecond),
    ("ABSORBED/s", "fsync_absorbed", Show::PerSecond),
    ("HONOURED/s", "fsync_honoured", Show::PerSecond),
    ("CKPT/s", "checkpoints", Show::PerSecond),
    ("FG_REQ/s", "fasttrack.fg_requests", Show::PerSecond),
    ("BG_REQ/s", "fasttrack.bg_requests", Show::PerSecond),
    ("STALE", "stale_bytes", Show::Bytes),
    ("DIRTY", "cache_dirty_bytes", Show::Bytes),
    ("CACHE", "cache_total_bytes", Show::Bytes),
];

/// Cells are at least this wide, so that lines printed one by one line up.
const WIDTH: usize = 10;

/// The line above the interval lines.
pub fn header() -> String {
    let cells: Vec<String> = COLUMNS.iter().map(|c| format!("{:>WIDTH$}", c.0)).collect();
    format!("{:<8}  {}\n", "TIME", cells.join("  "))
}

/// One interval: `time` of day, the `rates` over it, gauges from `doc` (its end).
pub fn line(time: &str, rates: &Value, doc: &Value) -> String {
    let cells: Vec<String> = COLUMNS
        .iter()
        .map(|(_, path, show)| {
            let pointer = format!("/{}", path.replace('.', "/"));
            let rate = || number(rates, &format!("{pointer}_per_second"));
            let cell = match show {
                Show::Bytes => number(doc, &pointer).map(|b| human_bytes(b as u64)),
                Show::BytesPerSecond => rate().map(|r| human_bytes(r as u64)),
                Show::PerSecond => rate().map(|r| format!("{r:.1}")),
            };
            format!("{:>WIDTH$}", cell.unwrap_or_else(|| "-".into()))
        })
        .collect();
    format!("{time:<8}  {}\n", cells.join("  "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn counters_become_per_second_rates_and_gauges_are_left_out() {
        let before = json!({"bytes_written": 1000, "stale_bytes": 5, "checkpoints": 2,
            "fasttrack": {"bg_wait_seconds": 0.5, "fg_requests": 10}, "apps": {"a": {"bytes_written": 1}}});
        let after = json!({"bytes_written": 5000, "stale_bytes": 9, "checkpoints": 3,
            "fasttrack": {"bg_wait_seconds": 1.5, "fg_requests": 30}, "apps": {"a": {"bytes_written": 9}}});
        let r = rates(&before, &after, 2.0);
        assert_eq!(r["bytes_written_per_second"], json!(2000.0));
        assert_eq!(r["checkpoints_per_second"], json!(0.5));
        assert_eq!(r["fasttrack"]["bg_wait_seconds_per_second"], json!(0.5));
        assert_eq!(r["fasttrack"]["fg_requests_per_second"], json!(10.0));
        assert_eq!(r.get("stale_bytes_per_second"), None, "a gauge has no rate");
        assert_eq!(r.get("apps"), None, "per-app rates are not computed");
        assert_eq!(rates(&before, &after, 0.0), json!({}));
    }

    #[test]
    fn a_counter_that_went_down_counts_from_zero() {
        let r = rates(&json!({"checkpoints": 50}), &json!({"checkpoints": 4}), 4.0);
        assert_eq!(r["checkpoints_per_second"], json!(1.0));
    }

    #[test]
    fn lines_show_rates_and_current_gauges_under_the_header() {
        let before = json!({"bytes_written": 0, "checkpoints": 0});
        let after = json!({"bytes_written": 4 << 20, "checkpoints": 1, "stale_bytes": 2048});
        let (head, text) = (header(), line("12:00:01", &rates(&before, &after, 2.0), &after));
        assert!(head.starts_with("TIME") && head.contains("WRITTEN/s"), "{head}");
        let cells: Vec<&str> = text.split_whitespace().collect();
        assert_eq!(&cells[..3], ["12:00:01", "2.0", "MiB"], "{text}");
        assert!(text.contains(" 0.5 ") && text.contains("2.0 KiB"), "{text}");
        assert_eq!(head.find("CKPT/s").map(|i| i + "CKPT/s".len()), text.find(" 0.5 ").map(|i| i + 4), "aligned");
    }
}
