//! Reading the FastTrack study's results: every `*.jsonl` file of the results directory, one JSON object
//! per line and per run, as experiments/fasttrack/run.sh writes them for the live mounts and for the
//! simulator alike. Only the fields below are read; the rest (the replay's own JSON, the device, ...) is
//! kept for people and ignored here.
//!
//! A *point* is one (source, scenario, BG kind, BG count, config); its response time is the median of
//! its repetitions. Invariant: the points come out in one order whatever order the files and lines come
//! in, and a line that cannot be read stops the report with its file, its line number and the cause.

use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// One run: the foreground app's response time under one point of the matrix.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct Run {
    /// `live` (real processes on a mount over the emulated device) or `sim` (the simulator).
    pub source: String,
    /// The FG scenario: `launch`, `switch` or `load`.
    pub scenario: String,
    /// `update`, `backup`, `mixed` (half of each) or `none`.
    pub bg_kind: String,
    pub bg_count: u32,
    /// The study's config name (`ext4`, `mcfs-off`, `pa`, `pr`, `id`, `fastt-minus`, `fastt`).
    pub config: String,
    #[serde(default)]
    pub rep: u32,
    /// The FG app's response time: its trace's first operation to its last completion.
    pub fg_seconds: f64,
    /// The device profile the run had (`emmc-cq`, ...); empty if the record does not say.
    #[serde(default)]
    pub device: String,
    /// The run was stopped at the study's time limit: `fg_seconds` is a lower bound.
    #[serde(default)]
    pub censored: bool,
}

/// Where a point was measured, what ran in the foreground and the background, and under which config.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PointKey {
    pub source: String,
    pub scenario: String,
    pub bg_kind: String,
    pub bg_count: u32,
    pub config: String,
}

impl PointKey {
    pub fn new(source: &str, scenario: &str, bg_kind: &str, bg_count: u32, config: &str) -> PointKey {
        PointKey {
            source: source.into(),
            scenario: scenario.into(),
            bg_kind: bg_kind.into(),
            bg_count,
            config: config.into(),
        }
    }
}

/// The runs of every point, each point's times sorted.
#[derive(Clone, Debug, Default)]
pub struct Points {
    times: BTreeMap<PointKey, Vec<f64>>,
    /// Every device profile a run named.
    devices: BTreeSet<String>,
    /// Runs stopped at the time limit, per point.
    censored: BTreeMap<PointKey, usize>,
}

impl Points {
    pub fn from_runs(runs: impl IntoIterator<Item = Run>) -> Points {
        let mut times: BTreeMap<PointKey, Vec<f64>> = BTreeMap::new();
        let mut devices = BTreeSet::new();
        let mut censored: BTreeMap<PointKey, usize> = BTreeMap::new();
        for run in runs {
            if !run.device.is_empty() {
                devices.insert(run.device.clone());
            }
            let key = PointKey::new(&run.source, &run.scenario, &run.bg_kind, run.bg_count, &run.config);
            if run.censored {
                *censored.entry(key.clone()).or_default() += 1;
            }
            times.entry(key).or_default().push(run.fg_seconds);
        }
        for t in times.values_mut() {
            t.sort_by(f64::total_cmp);
        }
        Points { times, devices, censored }
    }

    /// The points with runs stopped at the time limit, and how many of their runs were.
    pub fn censored(&self) -> impl Iterator<Item = (&PointKey, usize)> {
        self.censored.iter().map(|(k, n)| (k, *n))
    }

    /// The device profiles the runs had, sorted.
    pub fn devices(&self) -> impl Iterator<Item = &str> {
        self.devices.iter().map(String::as_str)
    }

    /// The median response time of a point (`None` if it was not run or a time is not finite).
    pub fn median(&self, key: &PointKey) -> Option<f64> {
        self.times.get(key).and_then(|t| median(t))
    }

    /// The fastest and the slowest run of a point (`None` if it was not run or a time is not finite).
    pub fn range(&self, key: &PointKey) -> Option<(f64, f64)> {
        let times = self.times.get(key).filter(|t| t.iter().all(|v| v.is_finite()))?;
        Some((*times.first()?, *times.last()?))
    }

    /// The repetitions of a point.
    pub fn reps(&self, key: &PointKey) -> usize {
        self.times.get(key).map_or(0, Vec::len)
    }

    pub fn keys(&self) -> impl Iterator<Item = &PointKey> {
        self.times.keys()
    }

    /// The number of runs read.
    pub fn runs(&self) -> usize {
        self.times.values().map(Vec::len).sum()
    }
}

/// The median of finite values: the middle one, or the mean of the two middle ones.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    Some(if sorted.len() % 2 == 1 { sorted[mid] } else { (sorted[mid - 1] + sorted[mid]) / 2.0 })
}

/// Reads every `*.jsonl` file directly in `dir` (sorted by name).
pub fn load(dir: &Path) -> Result<Points, String> {
    let list = fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut files = Vec::new();
    for entry in list {
        let path = entry.map_err(|e| format!("{}: {e}", dir.display()))?.path();
        if path.extension().is_some_and(|e| e == "jsonl") && path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    let mut runs = Vec::new();
    for path in &files {
        let text = fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let run: Run = serde_json::from_str(line)
                .map_err(|e| format!("{}: line {}: not a FastTrack run record: {e}", path.display(), i + 1))?;
            runs.push(run);
        }
    }
    if runs.is_empty() {
        return Err(format!("{}: no results found (expected *.jsonl files of run records)", dir.display()));
    }
    Ok(Points::from_runs(runs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_is_the_middle_value_or_the_mean_of_the_two() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[7.5]), Some(7.5));
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[1.0, f64::NAN, 2.0]), None);
        // One slow outlier among three repetitions does not move it.
        assert_eq!(median(&[1.0, 1.1, 90.0]), Some(1.1));
    }

    #[test]
    fn runs_group_into_points_whatever_their_order() {
        let run = |config: &str, rep, t| Run {
            source: "live".into(),
            scenario: "launch".into(),
            bg_kind: "update".into(),
            bg_count: 1,
            config: config.into(),
            rep,
            fg_seconds: t,
            device: "emmc-cq".into(),
            censored: t > 2.5,
        };
        let points =
            Points::from_runs([run("fastt", 0, 3.0), run("ext4", 0, 9.0), run("fastt", 1, 1.0), run("fastt", 2, 2.0)]);
        let fastt = PointKey::new("live", "launch", "update", 1, "fastt");
        assert_eq!((points.median(&fastt), points.reps(&fastt), points.runs()), (Some(2.0), 3, 4));
        assert_eq!(points.range(&fastt), Some((1.0, 3.0)), "sorted: fastest and slowest");
        assert_eq!(points.median(&PointKey::new("sim", "launch", "update", 1, "fastt")), None);
        let keys: Vec<&str> = points.keys().map(|k| k.config.as_str()).collect();
        assert_eq!(keys, ["ext4", "fastt"]);
        assert_eq!(points.devices().collect::<Vec<_>>(), ["emmc-cq"]);
        let censored: Vec<(&str, usize)> = points.censored().map(|(k, n)| (k.config.as_str(), n)).collect();
        assert_eq!(censored, [("ext4", 1), ("fastt", 1)]);
    }

    #[test]
    fn results_load_from_jsonl_files_and_a_bad_line_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let line = r#"{"source":"sim","scenario":"switch","bg_kind":"mixed","bg_count":6,"config":"fastt","rep":1,"fg_seconds":0.5,"fg":{"p99":3}}"#;
        fs::write(dir.path().join("sim.jsonl"), format!("{line}\n\n{line}\n")).unwrap();
        fs::write(dir.path().join("notes.txt"), "ignored").unwrap();
        let points = load(dir.path()).unwrap();
        assert_eq!(points.runs(), 2);
        assert_eq!(points.median(&PointKey::new("sim", "switch", "mixed", 6, "fastt")), Some(0.5));
        fs::write(dir.path().join("live.jsonl"), "{\"source\":\"live\"}\n").unwrap();
        let err = load(dir.path()).unwrap_err();
        assert!(err.contains("live.jsonl: line 1") && err.contains("missing field"), "{err}");
        let empty = tempfile::tempdir().unwrap();
        assert!(load(empty.path()).unwrap_err().contains("no results found"));
    }
}
