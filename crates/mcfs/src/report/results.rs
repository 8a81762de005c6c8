//! Reading a study's results directory: `DIR/GROUP/TRACE/CONFIG.json`, each file the JSON `mcfs sim
//! --json` printed for one trace under one config (the serde form of `mcfs_sim::replay::Metrics`; only
//! the fields the report uses are read, the rest is ignored).
//!
//! Invariant: groups, traces and configs come out sorted by name, whatever order the directory lists
//! them in, so the same directory always gives the same report. A file that cannot be read or parsed
//! stops the report with its path and the cause; nothing is guessed.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// What the report reads of one replay.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct RunMetrics {
    pub virtual_ns: u64,
    /// Replayed events per operation name (`fsync`, `tap`, ...).
    pub replayed_by_kind: BTreeMap<String, u64>,
    pub bytes_written: u64,
    /// Journal and in-place bytes the checkpoints wrote.
    pub bytes_flushed: u64,
    pub journal_bytes: u64,
    pub device: DeviceMetrics,
    pub apps: BTreeMap<String, AppRun>,
    /// Idle predictor name → its score on the trace's inputs.
    pub prediction: BTreeMap<String, PredictionRun>,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct DeviceMetrics {
    pub profile: String,
    pub energy: EnergyMetrics,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct EnergyMetrics {
    pub total_nj: u64,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct AppRun {
    pub checkpoint_intervals: u64,
    pub checkpoint_interval_mean_ns: u64,
}

#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq)]
pub struct PredictionRun {
    pub predictions: u64,
    pub conflicts: u64,
    pub predicted_ns: u64,
    pub operations: u64,
}

impl RunMetrics {
    /// Data the checkpoints applied in place: what was flushed minus the journal (the "logical" flushed
    /// data MobiFS Figure 13 compares; ext4 journals only metadata).
    pub fn logical_bytes_flushed(&self) -> u64 {
        self.bytes_flushed.saturating_sub(self.journal_bytes)
    }

    /// The mean interval between checkpoints over all the trace's apps (each interval weighs the same),
    /// in seconds; `None` when no app had two checkpoints while the trace ran.
    pub fn checkpoint_interval_mean_seconds(&self) -> Option<f64> {
        let count: u64 = self.apps.values().map(|a| a.checkpoint_intervals).sum();
        let total_ns: f64 =
            self.apps.values().map(|a| a.checkpoint_interval_mean_ns as f64 * a.checkpoint_intervals as f64).sum();
        (count > 0).then(|| total_ns / count as f64 / 1e9)
    }

    /// Checkpoint intervals over all the trace's apps.
    pub fn checkpoint_intervals(&self) -> u64 {
        self.apps.values().map(|a| a.checkpoint_intervals).sum()
    }

    /// fsync and fdatasync calls replayed.
    pub fn fsyncs(&self) -> u64 {
        ["fsync", "fdatasync"].iter().filter_map(|k| self.replayed_by_kind.get(*k)).sum()
    }
}

/// One trace's replays, by config name (the JSON file's stem).
#[derive(Clone, Debug, Default)]
pub struct TraceRuns {
    pub name: String,
    pub runs: BTreeMap<String, RunMetrics>,
}

/// The traces of one group (a directory: the synthetic suite, the recorded programs, ...).
#[derive(Clone, Debug, Default)]
pub struct Group {
    pub name: String,
    pub traces: Vec<TraceRuns>,
}

/// Reads every `GROUP/TRACE/CONFIG.json` below `dir`.
pub fn load(dir: &Path) -> Result<Vec<Group>, String> {
    let mut groups = Vec::new();
    for group_dir in subdirectories(dir)? {
        let mut traces = Vec::new();
        for trace_dir in subdirectories(&group_dir)? {
            let runs = load_runs(&trace_dir)?;
            if !runs.is_empty() {
                traces.push(TraceRuns { name: file_name(&trace_dir), runs });
            }
        }
        if !traces.is_empty() {
            groups.push(Group { name: file_name(&group_dir), traces });
        }
    }
    if groups.is_empty() {
        return Err(format!(
            "{}: no results found (expected {}/GROUP/TRACE/CONFIG.json)",
            dir.display(),
            dir.display()
        ));
    }
    Ok(groups)
}

fn load_runs(trace_dir: &Path) -> Result<BTreeMap<String, RunMetrics>, String> {
    let mut runs = BTreeMap::new();
    for path in entries(trace_dir)? {
        if path.extension().is_none_or(|e| e != "json") || !path.is_file() {
            continue;
        }
        let text = fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let run: RunMetrics = serde_json::from_str(&text)
            .map_err(|e| format!("{}: not the JSON of `mcfs sim --json`: {e}", path.display()))?;
        let config = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        runs.insert(config, run);
    }
    Ok(runs)
}

/// The directories directly below `dir`, sorted by name.
fn subdirectories(dir: &Path) -> Result<Vec<PathBuf>, String> {
    Ok(entries(dir)?.into_iter().filter(|p| p.is_dir()).collect())
}

/// Everything directly below `dir`, sorted by name.
fn entries(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let list = fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut paths = Vec::new();
    for entry in list {
        paths.push(entry.map_err(|e| format!("{}: {e}", dir.display()))?.path());
    }
    paths.sort();
    Ok(paths)
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app(intervals: u64, mean_s: u64) -> AppRun {
        AppRun { checkpoint_intervals: intervals, checkpoint_interval_mean_ns: mean_s * 1_000_000_000 }
    }

    #[test]
    fn the_interval_mean_weighs_every_interval_the_same() {
        let mut run = RunMetrics::default();
        assert_eq!(run.checkpoint_interval_mean_seconds(), None);
        run.apps.insert("a".into(), app(3, 10));
        run.apps.insert("b".into(), app(1, 50));
        run.apps.insert("-".into(), app(0, 0));
        assert_eq!(run.checkpoint_interval_mean_seconds(), Some(20.0));
        assert_eq!(run.checkpoint_intervals(), 4);
        run.bytes_flushed = 100;
        run.journal_bytes = 60;
        assert_eq!(run.logical_bytes_flushed(), 40);
    }

    #[test]
    fn a_results_tree_loads_sorted_and_a_bad_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let json = r#"{"virtual_ns": 5, "replayed_by_kind": {"fsync": 2, "fdatasync": 1}, "bytes_written": 9,
            "bytes_flushed": 8, "journal_bytes": 3, "extra": [1, 2],
            "device": {"profile": "emmc", "bytes_written": 8, "energy": {"total_nj": 77, "write_nj": 1}},
            "apps": {}, "prediction": {"last-min": {"predictions": 2, "conflicts": 1, "predicted_ns": 4, "operations": 3}}}"#;
        for (group, trace, config) in [("b", "t2", "ext4"), ("a", "t1", "mobifs"), ("b", "t1", "ext4")] {
            let d = dir.path().join(group).join(trace);
            fs::create_dir_all(&d).unwrap();
            fs::write(d.join(format!("{config}.json")), json).unwrap();
        }
        fs::write(dir.path().join("a/t1/notes.txt"), "ignored").unwrap();
        let groups = load(dir.path()).unwrap();
        let names: Vec<(String, Vec<String>)> =
            groups.iter().map(|g| (g.name.clone(), g.traces.iter().map(|t| t.name.clone()).collect())).collect();
        assert_eq!(names, [("a".into(), vec!["t1".into()]), ("b".into(), vec!["t1".into(), "t2".into()])]);
        let run = &groups[0].traces[0].runs["mobifs"];
        assert_eq!((run.fsyncs(), run.logical_bytes_flushed(), run.device.energy.total_nj), (3, 5, 77));
        assert_eq!(run.prediction["last-min"].conflicts, 1);

        fs::write(dir.path().join("b/t2/broken.json"), "{").unwrap();
        let err = load(dir.path()).unwrap_err();
        assert!(err.contains("b/t2/broken.json") && err.contains("mcfs sim --json"), "{err}");
        let empty = tempfile::tempdir().unwrap();
        assert!(load(empty.path()).unwrap_err().contains("no results found"));
        assert!(load(&empty.path().join("missing")).unwrap_err().contains("missing"));
    }
}
