//! Turning the cells of one run (workload × target) into what a person reads:
//! a Markdown table with every value, its ratio to ext4 and the goal
//! with pass/miss, plus the list of failed cells; and the JSON document of
//! `--json`. A value the run did not produce is shown as "-" or "error",
//! never as a number.

use super::metrics::{format_number, Goal, Metric, Outcome, Verdict};
use super::targets::TargetKind;
use super::WorkloadName;
use serde_json::{json, Value};

/// One workload run on one target.
pub struct Cell {
    pub workload: WorkloadName,
    pub target: TargetKind,
    pub result: Result<Outcome, String>,
}

pub fn value(cells: &[Cell], metric: Metric, target: TargetKind) -> Option<f64> {
    let cell = cells.iter().find(|c| c.workload == metric.workload() && c.target == target)?;
    let outcome = cell.result.as_ref().ok()?;
    outcome.samples.iter().find(|(m, _)| *m == metric).map(|(_, v)| *v)
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
    let failures: Vec<&Cell> = cells.iter().filter(|c| c.result.is_err()).collect();
    if !failures.is_empty() {
        out.push_str("\nErrors:\n");
        for cell in failures {
            if let Err(e) = &cell.result {
                out.push_str(&format!("- {} on {}: {e}\n", cell.workload.name(), cell.target.name()));
            }
        }
    }
    out
}

/// "123 (0.45x)": the value and, off ext4, its ratio to ext4.
fn value_cell(cells: &[Cell], metric: Metric, target: TargetKind) -> String {
    match cells.iter().find(|c| c.workload == metric.workload() && c.target == target) {
        None => "-".to_string(),
        Some(Cell { result: Err(_), .. }) => "error".to_string(),
        Some(_) => match value(cells, metric, target) {
            None => "-".to_string(),
            Some(v) => {
                match value(cells, metric, TargetKind::Ext4).filter(|e| *e > 0.0 && target != TargetKind::Ext4) {
                    Some(ext4) => format!("{} ({}x)", metric.format(v), format_number(v / ext4)),
                    None => metric.format(v),
                }
            }
        },
    }
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

/// Everything the run measured, per cell, and the goals' verdicts.
pub fn to_json(cells: &[Cell], verdicts: &[Verdict], context: Value) -> Value {
    let cells: Vec<Value> = cells
        .iter()
        .map(|c| {
            let mut doc = json!({ "workload": c.workload.name(), "target": c.target.name() });
            match &c.result {
                Ok(outcome) => {
                    let metrics: serde_json::Map<String, Value> =
                        outcome.samples.iter().map(|(m, v)| (metric_key(*m), json!(v))).collect();
                    doc["metrics"] = Value::Object(metrics);
                    doc["extras"] = Value::Object(outcome.extras.clone());
                }
                Err(e) => doc["error"] = json!(e),
            }
            doc
        })
        .collect();
    json!({ "context": context, "results": cells, "goals": verdicts })
}

fn metric_key(metric: Metric) -> String {
    serde_json::to_value(metric).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::super::metrics::goals;
    use super::*;

    fn ok(workload: WorkloadName, target: TargetKind, samples: &[(Metric, f64)]) -> Cell {
        Cell { workload, target, result: Ok(Outcome { samples: samples.to_vec(), extras: Default::default() }) }
    }

    fn sample_cells() -> Vec<Cell> {
        vec![
            ok(WorkloadName::Fio, TargetKind::Ext4, &[(Metric::FsyncP50Us, 1000.0)]),
            ok(WorkloadName::Fio, TargetKind::Mcfs, &[(Metric::FsyncP50Us, 250.0)]),
            Cell { workload: WorkloadName::Fio, target: TargetKind::McfsSync, result: Err("mount failed".into()) },
        ]
    }

    #[test]
    fn table_shows_values_ratios_goals_and_errors() {
        let cells = sample_cells();
        let verdicts = verdicts(&cells, &goals(64 << 20));
        let table = render_table(&cells, &TargetKind::ALL, &verdicts);
        let row = table.lines().find(|l| l.contains("fsync latency p50")).unwrap();
        let fields: Vec<&str> = row.split('|').map(str::trim).collect();
        assert_eq!(
            &fields[1..11],
            [
                "fio",
                "fsync latency p50",
                "us",
                "1000",
                "-",
                "250 (0.250x)",
                "error",
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
        assert_eq!(doc["results"][2]["error"], json!("mount failed"));
        let fsync_goal = doc["goals"].as_array().unwrap().iter().find(|g| g["metric"] == "fsync_p50_us").unwrap();
        assert_eq!(fsync_goal["pass"], json!(true));
        assert_eq!(doc["goals"].as_array().unwrap().iter().filter(|g| g["pass"].is_null()).count(), verdicts.len() - 1);
    }
}
