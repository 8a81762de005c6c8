//! The sweep's combined table, `results.csv`: one row per run of the run list, built from what the runs
//! left in `runs/` (`record`), whoever ran them (`mcfs sim --sweep` here, or the Ray runner of
//! experiments/sweep). Its columns are fixed and documented in docs/SWEEP.md: the key columns, the
//! status and error, then the main metrics, read from the run's JSON by pointer (a metric the JSON lacks
//! is an empty cell).
//!
//! Invariant: the table is a pure function of the run list and of the files in `runs/`, rows in run-list
//! order (sorted by key), so the same inputs give the same bytes however many threads or machines ran them
//! and in whatever order they finished.

use super::record::{self, Outcome};
use super::spec::Sweep;
use serde_json::Value;

/// Metric columns: (header, JSON pointer into the run's metrics).
const METRICS: &[(&str, &str)] = &[
    ("timing", "/timing"),
    ("events_replayed", "/events_replayed"),
    ("events_skipped", "/events_skipped"),
    ("virtual_ns", "/virtual_ns"),
    ("trace_ns", "/trace_ns"),
    ("bytes_written", "/bytes_written"),
    ("bytes_flushed", "/bytes_flushed"),
    ("journal_bytes", "/journal_bytes"),
    ("checkpoints", "/checkpoints"),
    ("fsync_absorbed", "/fsync_absorbed"),
    ("fsync_honoured", "/fsync_honoured"),
    ("fsync_p50_ns", "/fsync_latency/p50_ns"),
    ("fsync_p99_ns", "/fsync_latency/p99_ns"),
    ("fsync_max_ns", "/fsync_latency/max_ns"),
    ("stall_ns", "/stall_ns"),
    ("at_risk_max_bytes", "/bytes_at_risk/max_bytes"),
    ("at_risk_mean_bytes", "/bytes_at_risk/mean_bytes"),
    ("device_requests", "/device/requests"),
    ("device_bytes_written", "/device/bytes_written"),
    ("device_busy_ns", "/device/busy_ns"),
    ("energy_nj", "/device/energy/total_nj"),
];

/// The columns before the metrics.
const KEY_COLUMNS: &[&str] = &["key", "trace", "config", "device", "status", "error"];

fn header() -> Vec<String> {
    KEY_COLUMNS.iter().copied().chain(METRICS.iter().map(|m| m.0)).map(String::from).collect()
}

/// A run that failed (or left no result): its key and error.
pub struct Failure {
    pub key: String,
    pub error: String,
}

/// Writes `results.csv` of `sweep` and returns the runs that failed, in key order; the error names the
/// table's file.
pub fn write(sweep: &Sweep) -> Result<Vec<Failure>, String> {
    let runs_dir = sweep.runs_dir();
    let mut failures = Vec::new();
    let mut text = csv_line(header().into_iter());
    for run in &sweep.runs {
        let keys = [&run.key, &run.trace_name, &run.config_name, &run.device_name].map(String::clone);
        let (status, error, metrics) = match record::read(&runs_dir, &run.key) {
            Outcome::Done(metrics) => ("ok", String::new(), metrics),
            Outcome::Failed(error) => {
                failures.push(Failure { key: run.key.clone(), error: error.clone() });
                ("failed", error, Value::Null)
            }
        };
        let cells = METRICS.iter().map(|&(_, pointer)| cell(metrics.pointer(pointer)));
        text += &csv_line(keys.into_iter().chain([status.to_string(), error]).chain(cells));
    }
    let path = sweep.table_path();
    let tmp = sweep.out.join(".results.csv.tmp");
    std::fs::write(&tmp, text).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, &path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(failures)
}

fn cell(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// One CSV record (RFC 4180): a field with a comma, a quote or a line break is quoted, quotes doubled.
fn csv_line(fields: impl Iterator<Item = String>) -> String {
    let quoted: Vec<String> = fields
        .map(|f| if f.contains([',', '"', '\n', '\r']) { format!("\"{}\"", f.replace('"', "\"\"")) } else { f })
        .collect();
    quoted.join(",") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_header_is_the_one_docs_sweep_documents() {
        let doc = include_str!("../../../../../../docs/SWEEP.md");
        let header = header().join(",");
        assert!(doc.lines().any(|l| l == header), "docs/SWEEP.md lacks the header line {header}");
    }

    #[test]
    fn fields_are_quoted_only_when_they_must_be() {
        let line = csv_line(["a".to_string(), "b,c".into(), "say \"hi\"".into(), String::new()].into_iter());
        assert_eq!(line, "a,\"b,c\",\"say \"\"hi\"\"\",\n");
    }

    #[test]
    fn cells_show_numbers_and_strings_plainly_and_nothing_for_a_missing_metric() {
        let m = json!({"timing": "open-loop", "device": {"energy": {"total_nj": 12}}});
        assert_eq!(cell(m.pointer("/timing")), "open-loop");
        assert_eq!(cell(m.pointer("/device/energy/total_nj")), "12");
        assert_eq!(cell(m.pointer("/stall_ns")), "");
    }
}
