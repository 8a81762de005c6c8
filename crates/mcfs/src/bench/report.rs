//! Turning the cells of one run (workload × target) into what a person reads:
//! a Markdown table with every value (the median of the cell's runs, with
//! their spread when it ran more than once), its ratio to ext4 and the
//! issue's goal with pass/miss, plus the list of failed runs; and the JSON
//! document of `--json`. A value the run did not produce is shown as "-" or
//! "error", never as a number.

use super::metrics::{format_number, Goal, Metric, Outcome, Verdict};
use super::spread::{summarize, Summary};
use super::targets::TargetKind;
use super::WorkloadName;
use serde_json::{json, Value};

/// One workload on one target: each of its runs (`--repeat`), in order.
pub struct Cell {
    pub workload: WorkloadName,
    pub target: TargetKind,
    pub runs: Vec<Result<Outcome, String>>,
}

impl Cell {
    fn has(&self, metric: Metric, target: TargetKind) -> bool {
        self.workload == metric.workload() && self.target == target
    }

    fn summary(&self, metric: Metric) -> Option<Summary> {
        let values: Vec<f64> = self
            .runs
            .iter()
            .filter_map(|r| r.as_ref().ok())
            .filter_map(|o| o.samples.iter().find(|(m, _)| *m == metric).map(|(_, v)| *v))
            .collect();
        summarize(&values)
    }

    pub fn failures(&self) -> impl Iterator<Item = (usize, &String)> {
        self.runs.iter().enumerate().filter_map(|(i, r)| r.as_ref().err().map(|e| (i, e)))
    }

    /// False for a cell that never ran (an interrupted run): that is "-", not "error".
    fn all_failed(&self) -> bool {
        !self.runs.is_empty() && self.runs.iter().all(Result::is_err)
    }
}

/// The median of the cell's runs: what goals and ratios compare.
pub fn value(cells: &[Cell], metric: Metric, target: TargetKind) -> Option<f64> {
    summary(cells, metric, target).map(|s| s.median)
}

fn summary(cells: &[Cell], metric: Metric, target: TargetKind) -> Option<Summary> {
    cells.iter().find(|c| c.has(metric, target))?.summary(metric)
}

pub fn verdicts(cells: &[Cell], goals: &[Goal]) -> Vec<Verdict> {
    goals.iter().map(|g| g.evaluate(|t| value(cells, g.metric, t))).collect()
}

/// Metrics whose workload ran on at least one target.
fn metrics_run(cells: &[Cell]) -> Vec<Metric> {
    Metric::ALL.into_iter().filter(|m| cells.iter().any(|c| c.workload == m.workload())).collect()
}

pub fn render_table(cells: &[Cell], targets: &[TargetKind], verdicts: &[Verdict]) -> String {
    let mut header: Vec<String> = ["workload", "metric", "unit"].map(String::from).to_vec();
    header.extend(targets.iter().map(|t| t.name().to_string()));
    header.extend(["goal (mcfs)", "result"].map(String::from));
    let mut rows = vec![header];
    for metric in metrics_run(cells) {
        let mut row = vec![metric.workload().name().to_string(), metric.label().to_string(), metric.unit().to_string()];
        row.extend(targets.iter().map(|&t| value_cell(cells, metric, t)));
        let own: Vec<&Verdict> = verdicts.iter().filter(|v| v.metric == metric).collect();
        row.push(own.iter().map(|v| v.goal.clone()).collect::<Vec<_>>().join("; "));
        row.push(own.iter().map(|v| verdict_text(metric, v)).collect::<Vec<_>>().join("; "));
        rows.push(row);
    }
    let mut out = markdown(&rows);
    let mut errors = String::new();
    for cell in cells {
        for (i, e) in cell.failures() {
            let run =
                if cell.runs.len() > 1 { format!(" (run {} of {})", i + 1, cell.runs.len()) } else { String::new() };
            errors.push_str(&format!("- {} on {}{run}: {e}\n", cell.workload.name(), cell.target.name()));
        }
    }
    if !errors.is_empty() {
        out.push_str("\nErrors:\n");
        out.push_str(&errors);
    }
    out
}

/// "123 [110-130] (0.45x)": the median, the spread of the runs when there
/// were several, and off ext4 the ratio of the medians; "(2/3 runs)" when
/// some runs gave no value.
fn value_cell(cells: &[Cell], metric: Metric, target: TargetKind) -> String {
    let Some(cell) = cells.iter().find(|c| c.has(metric, target)) else {
        return "-".to_string();
    };
    if cell.all_failed() {
        return "error".to_string();
    }
    let Some(s) = cell.summary(metric) else {
        return "-".to_string();
    };
    let mut text = metric.format(s.median);
    if cell.runs.len() > 1 {
        text.push_str(&format!(" [{}-{}]", metric.format(s.min), metric.format(s.max)));
    }
    if let Some(ext4) = value(cells, metric, TargetKind::Ext4).filter(|e| *e > 0.0 && target != TargetKind::Ext4) {
        text.push_str(&format!(" ({}x)", format_number(s.median / ext4)));
    }
    if s.n < cell.runs.len() {
        text.push_str(&format!(" ({}/{} runs)", s.n, cell.runs.len()));
    }
    text
}

fn verdict_text(metric: Metric, v: &Verdict) -> String {
    let word = match v.pass {
        Some(true) => "pass",
        Some(false) => "MISS",
        None => return "n/a".to_string(),
    };
    match (v.ratio, v.value) {
        (Some(r), _) => format!("{word} ({}x)", format_number(r)),
        (None, Some(value)) => format!("{word} ({} {})", metric.format(value), metric.unit()),
        (None, None) => word.to_string(),
    }
}

fn markdown(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|i| rows.iter().filter_map(|r| r.get(i)).map(|s| s.chars().count()).max().unwrap_or(0))
        .collect();
    let line = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
    let mut out = String::new();
    for (n, row) in rows.iter().enumerate() {
        out.push_str(&line(row.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect()));
        if n == 0 {
            out.push_str(&line(widths.iter().map(|w| "-".repeat(*w)).collect()));
        }
    }
    out
}

/// Everything the run measured, per cell, and the goals' verdicts. Per
/// cell: `metrics` holds the medians, `spread` the median, min, max and
/// count of each, `runs` every run as measured; `error` is there when no
/// run succeeded.
pub fn to_json(cells: &[Cell], verdicts: &[Verdict], context: Value) -> Value {
    let cells: Vec<Value> = cells
        .iter()
        .map(|c| {
            let mut doc = json!({ "workload": c.workload.name(), "target": c.target.name() });
            let metrics: Vec<Metric> = Metric::ALL.into_iter().filter(|m| m.workload() == c.workload).collect();
            let summaries: Vec<(String, Summary)> =
                metrics.iter().filter_map(|&m| Some((metric_key(m), c.summary(m)?))).collect();
            if !summaries.is_empty() {
                doc["metrics"] = summaries.iter().map(|(k, s)| (k.clone(), json!(s.median))).collect();
                doc["spread"] = summaries.iter().map(|(k, s)| (k.clone(), json!(s))).collect();
            }
            if let Some(e) = c.all_failed().then(|| c.runs.first()).flatten().and_then(|r| r.as_ref().err()) {
                doc["error"] = json!(e);
            }
            doc["runs"] = c.runs.iter().map(run_json).collect();
            doc
        })
        .collect();
    json!({ "context": context, "results": cells, "goals": verdicts })
}

fn run_json(run: &Result<Outcome, String>) -> Value {
    match run {
        Ok(outcome) => {
            let metrics: serde_json::Map<String, Value> =
                outcome.samples.iter().map(|(m, v)| (metric_key(*m), json!(v))).collect();
            json!({ "metrics": metrics, "extras": outcome.extras })
        }
        Err(e) => json!({ "error": e }),
    }
}

fn metric_key(metric: Metric) -> String {
    serde_json::to_value(metric).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::super::metrics::goals;
    use super::*;

    fn outcome(samples: &[(Metric, f64)]) -> Result<Outcome, String> {
        Ok(Outcome { samples: samples.to_vec(), extras: Default::default() })
    }

    fn ok(workload: WorkloadName, target: TargetKind, samples: &[(Metric, f64)]) -> Cell {
        Cell { workload, target, runs: vec![outcome(samples)] }
    }

    fn sample_cells() -> Vec<Cell> {
        vec![
            ok(WorkloadName::Fio, TargetKind::Ext4, &[(Metric::FsyncP50Us, 1000.0)]),
            ok(WorkloadName::Fio, TargetKind::Mcfs, &[(Metric::FsyncP50Us, 250.0)]),
            Cell { workload: WorkloadName::Fio, target: TargetKind::McfsSync, runs: vec![Err("mount failed".into())] },
        ]
    }

    /// Three runs of postmark on ext4 and on mcfs, one of mcfs's failed.
    fn repeated_cells() -> Vec<Cell> {
        let secs = |v| outcome(&[(Metric::PostmarkSeconds, v)]);
        vec![
            Cell {
                workload: WorkloadName::Postmark,
                target: TargetKind::Ext4,
                runs: vec![secs(12.0), secs(10.0), secs(11.0)],
            },
            Cell {
                workload: WorkloadName::Postmark,
                target: TargetKind::Mcfs,
                runs: vec![secs(3.0), Err("daemon died".into()), secs(5.0)],
            },
        ]
    }

    #[test]
    fn repeated_cells_show_the_median_spread_and_missing_runs() {
        let cells = repeated_cells();
        assert_eq!(value(&cells, Metric::PostmarkSeconds, TargetKind::Ext4), Some(11.0));
        assert_eq!(value(&cells, Metric::PostmarkSeconds, TargetKind::Mcfs), Some(4.0));
        let table = render_table(&cells, &[TargetKind::Ext4, TargetKind::Mcfs], &[]);
        let row = table.lines().find(|l| l.contains("whole run")).unwrap();
        let fields: Vec<&str> = row.split('|').map(str::trim).collect();
        assert_eq!(fields[4], "11.0 [10.0-12.0]");
        assert_eq!(fields[5], "4.00 [3.00-5.00] (0.364x) (2/3 runs)");
        assert!(table.contains("- postmark on mcfs (run 2 of 3): daemon died"), "{table}");
        let never_ran = Cell { workload: WorkloadName::Postmark, target: TargetKind::Mcfs, runs: vec![] };
        assert_eq!(value_cell(&[never_ran], Metric::PostmarkSeconds, TargetKind::Mcfs), "-");
    }

    #[test]
    fn json_keeps_every_run_and_the_spread() {
        let cells = repeated_cells();
        let doc = to_json(&cells, &[], json!({}));
        let mcfs = &doc["results"][1];
        assert_eq!(mcfs["metrics"]["postmark_seconds"], json!(4.0));
        assert_eq!(mcfs["spread"]["postmark_seconds"], json!({"median": 4.0, "min": 3.0, "max": 5.0, "n": 2}));
        assert_eq!(mcfs["runs"][1]["error"], json!("daemon died"));
        assert_eq!(mcfs["runs"][2]["metrics"]["postmark_seconds"], json!(5.0));
        assert!(mcfs.get("error").is_none(), "some runs succeeded: {mcfs}");
    }

    #[test]
    fn table_shows_values_ratios_goals_and_errors() {
        let cells = sample_cells();
        let verdicts = verdicts(&cells, &goals(64 << 20));
        let table = render_table(&cells, &TargetKind::ALL, &verdicts);
        let row = table.lines().find(|l| l.contains("fsync latency p50")).unwrap();
        let fields: Vec<&str> = row.split('|').map(str::trim).collect();
        assert_eq!(
            &fields[1..15],
            [
                "fio",
                "fsync latency p50",
                "us",
                "1000",
                "-",
                "-",
                "-",
                "250 (0.250x)",
                "error",
                "-",
                "-",
                "-",
                "<= 0.5x ext4",
                "pass (0.250x)"
            ]
        );
        assert!(table.contains("- fio on mcfs-sync: mount failed"), "{table}");
        assert!(!table.contains("sqlite"), "workloads that did not run get no rows:\n{table}");
        let widths: Vec<usize> = table.lines().take(3).map(|l| l.chars().count()).collect();
        assert!(widths.windows(2).all(|w| w[0] == w[1]), "aligned columns:\n{table}");
    }

    #[test]
    fn json_has_every_cell_and_verdict() {
        let cells = sample_cells();
        let verdicts = verdicts(&cells, &goals(64 << 20));
        let doc = to_json(&cells, &verdicts, json!({"quick": true}));
        assert_eq!(doc["results"][1]["metrics"]["fsync_p50_us"], json!(250.0));
        assert_eq!(doc["results"][1]["runs"][0]["metrics"]["fsync_p50_us"], json!(250.0));
        assert_eq!(doc["results"][2]["error"], json!("mount failed"));
        assert!(doc["results"][2].get("metrics").is_none());
        let fsync_goal = doc["goals"].as_array().unwrap().iter().find(|g| g["metric"] == "fsync_p50_us").unwrap();
        assert_eq!(fsync_goal["pass"], json!(true));
        assert_eq!(doc["goals"].as_array().unwrap().iter().filter(|g| g["pass"].is_null()).count(), verdicts.len() - 1);
    }
}
