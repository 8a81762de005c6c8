//! `mcfs mount -o metrics_file=FILE`: the daemon keeps FILE holding its
//! stat document in the Prometheus text format, for node_exporter's
//! textfile collector (FILE in its directory, named `*.prom`). Each update
//! replaces the file whole (written beside it, then renamed), so a reader
//! never sees half of one; the file is removed when the daemon stops, so a
//! mount that is gone is not reported as live.

use crate::polling::PollingThread;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How often the file is rewritten (node_exporter's default scrape is 15 s).
pub const EVERY: Duration = Duration::from_secs(5);

/// FILE as an absolute path (the daemon changes to /); its directory must exist.
pub fn check(path: &Path) -> Result<PathBuf, String> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(format!("metrics file {}: not a file name", path.display()));
    };
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    let dir =
        dir.canonicalize().map_err(|e| format!("metrics file {}: directory {}: {e}", path.display(), dir.display()))?;
    if !dir.is_dir() {
        return Err(format!("metrics file {}: {} is not a directory", path.display(), dir.display()));
    }
    Ok(dir.join(name))
}

pub struct MetricsFile {
    path: PathBuf,
    thread: PollingThread,
}

impl MetricsFile {
    /// Writes `render()` to `path` now and every `EVERY` until stopped; a
    /// failure is logged and the next round tries again.
    pub fn spawn(path: PathBuf, render: impl Fn() -> Result<String, String> + Send + 'static) -> io::Result<Self> {
        tracing::info!("writing metrics to {} every {} s", path.display(), EVERY.as_secs());
        let target = path.clone();
        let thread = PollingThread::spawn("mcfs-metrics", EVERY, move || {
            if let Err(e) = render().and_then(|text| write_whole(&target, &text)) {
                tracing::warn!("metrics file {}: {e}", target.display());
            }
        })?;
        Ok(MetricsFile { path, thread })
    }

    /// Stops the updates and removes the file.
    pub fn stop(self) {
        self.thread.stop();
        if let Err(e) = std::fs::remove_file(&self.path) {
            tracing::warn!("cannot remove metrics file {}: {e}", self.path.display());
        }
    }
}

/// Replaces `path` with `text` at once: written to `.NAME.tmp` beside it (a
/// name the collector, which reads `*.prom`, skips), then renamed over it.
fn write_whole(path: &Path, text: &str) -> Result<(), String> {
    let name = path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    let temp = path.with_file_name(format!(".{name}.tmp"));
    std::fs::write(&temp, text)
        .and_then(|()| std::fs::rename(&temp, path))
        .map_err(|e| format!("cannot write {}: {e}", temp.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn the_file_is_written_whole_at_once_and_removed_at_stop() {
        let dir = tempfile::tempdir().unwrap();
        let path = check(&dir.path().join("mcfs.prom")).unwrap();
        let (tx, rx) = mpsc::channel();
        let file = MetricsFile::spawn(path.clone(), move || {
            let _ = tx.send(());
            Ok("mcfs_checkpoints_total 3\n".into())
        })
        .unwrap();
        rx.recv().unwrap();
        // The first round has rendered; wait for its rename without a clock: stop joins the thread.
        let thread_done = std::time::Instant::now();
        while !path.exists() && thread_done.elapsed() < Duration::from_secs(10) {
            std::thread::yield_now();
        }
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "mcfs_checkpoints_total 3\n");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["mcfs.prom"], "no temporary file left");
        file.stop();
        assert!(!path.exists());
    }

    #[test]
    fn a_file_in_a_missing_directory_is_refused_naming_it() {
        let err = check(Path::new("/nonexistent-mcfs-dir/m.prom")).unwrap_err();
        assert!(err.contains("/nonexistent-mcfs-dir") && err.contains("No such file"), "{err}");
        assert!(check(Path::new("/")).is_err());
    }
}
