//! The statistics a flashdev mount writes (`--stats FILE`): the profile and policy, the requests
//! charged per class, and the device scheduler's own counters. JSON; docs/FLASHDEV.md lists the keys.
//!
//! Invariant: the file is replaced atomically (written beside it, then renamed), so a reader never
//! sees half a report.

use mcfs_device::scheduler::{SchedPolicy, SchedulerStats};
use serde::Serialize;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub profile: String,
    pub profile_source: String,
    pub scheduler_policy: SchedPolicy,
    pub requests: RequestCounts,
    /// Commands in the device or waiting for it when the report was taken.
    pub pending: usize,
    /// Per class and kind of command: commands, bytes, waits and response times (virtual ns).
    pub device: SchedulerStats,
}

/// Requests charged to the device, by the class learned from the caller's I/O priority.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RequestCounts {
    pub foreground: u64,
    pub background: u64,
    /// Of those counted as background, the ones whose thread priority could not be read.
    pub unknown_class: u64,
}

impl Report {
    /// Writes the report to `path` atomically; the error names the file and the cause.
    pub fn write_to(&self, path: &Path) -> Result<(), String> {
        let fail = |e: std::io::Error| format!("stats file {}: {e}", path.display());
        let mut text = serde_json::to_vec_pretty(self).map_err(|e| fail(std::io::Error::other(e)))?;
        text.push(b'\n');
        let mut temp_name = path.file_name().unwrap_or_default().to_os_string();
        temp_name.push(format!(".tmp-{}", std::process::id()));
        let temp = path.with_file_name(temp_name);
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o644)
            .open(&temp)
            .and_then(|mut f| f.write_all(&text))
            .and_then(|()| std::fs::rename(&temp, path));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&temp);
            return Err(fail(e));
        }
        Ok(())
    }
}
