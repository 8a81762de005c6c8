//! A run's result on disk, in the sweep's `runs/` directory: `KEY.json`, the metrics exactly as `mcfs sim
//! --json` prints them, when the run succeeded; `KEY.error`, the error on one line, when it failed.
//!
//! Invariant: after a write, the directory holds exactly one of the two for the key (the other is
//! removed), each written whole (a temporary file renamed into place), so a reader never sees half a
//! result nor a stale one of the other kind.

use mcfs_sim::replay::Metrics;
use serde_json::Value;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// What a run left in `runs/`.
pub enum Outcome {
    /// The run's metrics, as JSON.
    Done(Value),
    /// Why it failed, or why its result cannot be read.
    Failed(String),
}

fn json_path(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("{key}.json"))
}

fn error_path(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("{key}.error"))
}

/// Records a run's outcome; the error names the file that could not be written.
pub fn write(dir: &Path, key: &str, result: &Result<Metrics, String>) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let (path, stale, text) = match result {
        Ok(metrics) => {
            let text =
                serde_json::to_string_pretty(metrics).map_err(|e| format!("{key}: cannot print metrics: {e}"))?;
            (json_path(dir, key), error_path(dir, key), text + "\n")
        }
        Err(error) => (error_path(dir, key), json_path(dir, key), one_line(error) + "\n"),
    };
    let tmp = dir.join(format!(".{key}.tmp"));
    std::fs::write(&tmp, text).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, &path).map_err(|e| format!("{}: {e}", path.display()))?;
    match std::fs::remove_file(&stale) {
        Err(e) if e.kind() != ErrorKind::NotFound => Err(format!("{}: {e}", stale.display())),
        _ => Ok(()),
    }
}

/// What the run `key` left in `dir`; nothing at all is a failure that says the run has not been done.
pub fn read(dir: &Path, key: &str) -> Outcome {
    let error = error_path(dir, key);
    match std::fs::read_to_string(&error) {
        Ok(text) => return Outcome::Failed(text.trim_end().to_string()),
        Err(e) if e.kind() != ErrorKind::NotFound => return Outcome::Failed(format!("{}: {e}", error.display())),
        Err(_) => {}
    }
    let json = json_path(dir, key);
    match std::fs::read(&json) {
        Ok(bytes) => match serde_json::from_slice(&bytes) {
            Ok(value) => Outcome::Done(value),
            Err(e) => Outcome::Failed(format!("{}: {e}", json.display())),
        },
        Err(e) if e.kind() == ErrorKind::NotFound => {
            Outcome::Failed(format!("no result in {} (the run has not been done)", dir.display()))
        }
        Err(e) => Outcome::Failed(format!("{}: {e}", json.display())),
    }
}

/// Errors may span lines (a panic's message); the record and the table hold one.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_write_replaces_the_other_kind_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let key = "t@c@emmc";
        assert!(matches!(read(dir.path(), key), Outcome::Failed(e) if e.contains("has not been done")));
        write(dir.path(), key, &Err("boom\n  at line 2".into())).unwrap();
        assert!(matches!(read(dir.path(), key), Outcome::Failed(e) if e == "boom at line 2"));
        write(dir.path(), key, &Ok(Metrics { events_replayed: 7, ..Metrics::default() })).unwrap();
        match read(dir.path(), key) {
            Outcome::Done(v) => assert_eq!(v["events_replayed"], 7),
            Outcome::Failed(e) => panic!("the metrics were written: {e}"),
        }
        assert!(!error_path(dir.path(), key).exists(), "the stale error is gone");
        std::fs::write(json_path(dir.path(), key), "{").unwrap();
        assert!(matches!(read(dir.path(), key), Outcome::Failed(e) if e.contains(&format!("{key}.json"))));
    }
}
