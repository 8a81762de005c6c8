//! Every field of the `mcfs stat` document (`mcfs_core::stats_doc`) with its kind and
//! a one-line meaning: the Prometheus output takes its types and HELP lines
//! from here, `--interval` its counters, and a test holds docs/STAT.md and
//! the daemon's real document to this list.

/// What a field is, for exporters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Only grows while the daemon runs (a rate makes sense).
    Counter,
    /// Goes up and down.
    Gauge,
    /// Text (or an id) that describes its object: a label of the object's `info` metric.
    Label,
    /// About the document itself, or a list: not a metric.
    Meta,
}

pub struct Field {
    /// Dotted path in the document; `apps.*` stands for every app.
    pub path: &'static str,
    pub kind: Kind,
    pub help: &'static str,
}

const fn f(path: &'static str, kind: Kind, help: &'static str) -> Field {
    Field { path, kind, help }
}

use Kind::{Counter, Gauge, Label, Meta};

pub const FIELDS: &[Field] = &[
    f("schema_version", Meta, "Version of this document's layout."),
    f("timestamp_seconds", Meta, "When the daemon took the snapshot, seconds since the Unix epoch."),
    f("bytes_written", Counter, "Bytes apps wrote into mcfs."),
    f("bytes_flushed", Counter, "Bytes checkpoints wrote to the backing store (journal included)."),
    f("journal_bytes", Counter, "Bytes written to the journal."),
    f("fsync_absorbed", Counter, "fsync calls answered from memory (memory mode)."),
    f("fsync_honoured", Counter, "fsync calls that waited for the backing store (sync mode)."),
    f("vcts_closed", Counter, "Versioned cache transactions closed."),
    f("vcts_committed", Counter, "Versioned cache transactions committed to the backing store."),
    f("stale_bytes", Gauge, "Bytes written and not yet checkpointed, all apps."),
    f("stale_seconds", Gauge, "Age of the oldest un-checkpointed write, all apps."),
    f("cache_clean_bytes", Gauge, "Clean bytes in the page cache."),
    f("cache_dirty_bytes", Gauge, "Dirty bytes in the page cache."),
    f("cache_total_bytes", Gauge, "Bytes in the page cache."),
    f("cache_limit_bytes", Gauge, "Configured page cache size."),
    f("checkpoints", Counter, "Checkpoints done."),
    f("last_checkpoint_duration_seconds", Gauge, "How long the last checkpoint took; null before the first."),
    f("battery_percent", Gauge, "Battery level last set with mcfs ctl battery; null if never set."),
    f("low_battery", Gauge, "1 while the battery is below low_battery_percent (every app in sync mode)."),
    f("checkpoint_error", Label, "The last error a checkpoint got, until one succeeds; null when none."),
    f("checkpoint_failures", Counter, "Checkpoints that failed."),
    f("journal_waiting_transactions", Gauge, "Committed transactions waiting in the journal to be applied in place."),
    f("journal_waiting_bytes", Gauge, "Journal bytes the waiting transactions take."),
    f("coalesced_bytes", Counter, "File data not written in place because a later waiting transaction rewrote it."),
    f("elided_ops", Counter, "Operations on files created and unlinked within one applied run, never issued in place."),
    f("placed_bytes", Counter, "Appended file data commits wrote in place instead of into the journal."),
    f("unapplied_ops", Counter, "Operations the backing store refused for good and that were skipped."),
    f("unapplied_recent", Meta, "The newest skipped operations: app, op, errno, error."),
    f("missing_lookups", Counter, "Lookups of names that do not exist."),
    f("idle_predictor", Label, "The idle predictor in use."),
    f("idle", Meta, "The idle predictor's score (the idle.* fields); null when no predictor runs."),
    f("idle.predictions", Counter, "Idle windows the predictor offered."),
    f("idle.conflicts", Counter, "User operations inside an offered idle window (responsive conflicts)."),
    f("idle.predicted_seconds", Counter, "Sum of the offered idle windows' lengths."),
    f("idle.operations", Counter, "User operations seen (bursts merged)."),
    f("fasttrack.foreground", Label, "The foreground app; null when none."),
    f("fasttrack.fg_requests", Counter, "Requests of the foreground app."),
    f("fasttrack.bg_requests", Counter, "Requests of background apps."),
    f("fasttrack.bg_waits", Counter, "Background waits that found foreground work in flight."),
    f("fasttrack.bg_aged", Counter, "Background waits ended by the aging bound."),
    f("fasttrack.bg_wait_seconds", Counter, "Engine-clock time background work spent waiting."),
    f("fasttrack.checkpoint_holds", Counter, "Checkpoint apply segments held back for foreground work."),
    f("fasttrack.journal_yields", Counter, "Background commits that let a foreground request take the journal first."),
    f("fasttrack.fg_at_journal", Gauge, "Foreground requests waiting for the journal now."),
    f(
        "fasttrack.commits_given_way",
        Counter,
        "Background commits that dropped their transaction for a foreground one.",
    ),
    f("fasttrack.commits_boosted", Counter, "Background commits raised to foreground I/O priority."),
    f("apps.*.app", Label, "The app's name (the key of its entry)."),
    f("apps.*.mode", Label, "How the app's fsync behaves: sync or memory."),
    f("apps.*.bytes_written", Counter, "Bytes the app wrote."),
    f("apps.*.bytes_flushed", Counter, "Bytes of the app checkpoints wrote to the backing store."),
    f("apps.*.fsync_absorbed", Counter, "The app's fsync calls answered from memory."),
    f("apps.*.fsync_honoured", Counter, "The app's fsync calls that waited for the backing store."),
    f("apps.*.vcts_closed", Counter, "The app's transactions closed."),
    f("apps.*.vcts_committed", Counter, "The app's transactions committed."),
    f("apps.*.stale_bytes", Gauge, "The app's bytes not yet checkpointed."),
    f("apps.*.stale_seconds", Gauge, "Age of the app's oldest un-checkpointed write."),
    f("apps.*.stale_bytes_max", Gauge, "Largest stale_bytes since the app first wrote."),
    f("apps.*.stale_bytes_mean", Gauge, "Time-weighted mean stale_bytes since the app first wrote."),
    f("apps.*.checkpoint_intervals", Counter, "Intervals between the app's checkpoints."),
    f("apps.*.checkpoint_interval_mean_seconds", Gauge, "Mean interval between the app's checkpoints."),
    f("apps.*.checkpoint_interval_max_seconds", Gauge, "Longest interval between the app's checkpoints."),
    f("apps.*.fsync_calls", Counter, "The app's fsync calls."),
    f("apps.*.fsync_p50_seconds", Gauge, "Median fsync latency the app saw (within 12.5 %, never under)."),
    f("apps.*.fsync_p99_seconds", Gauge, "99th percentile fsync latency the app saw (within 12.5 %, never under)."),
    f("apps.*.stalled_seconds", Counter, "Time the app's calls waited for checkpoints."),
    f("device_estimate.profile", Label, "Device profile of the estimate."),
    f("device_estimate.requests", Counter, "Device requests the backing I/O would make."),
    f("device_estimate.reads", Counter, "Device reads."),
    f("device_estimate.writes", Counter, "Device data writes."),
    f("device_estimate.metadata_writes", Counter, "Device metadata writes."),
    f("device_estimate.flushes", Counter, "Device cache flushes."),
    f("device_estimate.bytes_read", Counter, "Bytes the device would read."),
    f("device_estimate.bytes_written", Counter, "Data and metadata bytes the device would write."),
    f("device_estimate.busy_seconds", Counter, "Time the device would be serving at least one request."),
    f("device_estimate.busy_until_seconds", Gauge, "Device time when its last request completes."),
    f("device_estimate.energy.total_joules", Counter, "Energy the device would use."),
    f("device_estimate.energy.write_joules", Counter, "Energy of the bytes written."),
    f("device_estimate.energy.read_joules", Counter, "Energy of the bytes read."),
    f("device_estimate.energy.flush_joules", Counter, "Fixed energy of the flush batches."),
    f("device_estimate.energy.tail_joules", Counter, "Energy of the idle tails after the busy periods."),
    f("device_estimate.energy.wakeup_joules", Counter, "Energy of the transitions from standby to active."),
    f("device_estimate.energy.batches", Counter, "Busy periods of the device."),
    f("device_estimate.energy.standby_wakeups", Counter, "Busy periods that started from standby."),
    f("log.written", Counter, "Log records written."),
    f("log.dropped", Counter, "Log records that could not be written."),
    f("log.suppressed", Counter, "Log records left out by the rate limit."),
    f("log.rotated", Counter, "Log file rotations."),
    f("daemon.pid", Label, "The daemon's process id."),
    f("daemon.log", Label, "Where the daemon logs."),
    f("fuse.transport", Label, "How requests reach the daemon: io_uring or dev_fuse."),
    f("fuse.ring_requests", Counter, "Requests served over the io_uring queues."),
    f("fuse.dev_requests", Counter, "Requests a ring session served over /dev/fuse (forgets, interrupts)."),
];

/// The field at `path` (with `apps.<name>` written `apps.*`).
pub fn find(path: &str) -> Option<&'static Field> {
    FIELDS.iter().find(|f| f.path == path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/STAT.md has one row per field, `| `path` | unit | kind | meaning |`, and no other.
    #[test]
    fn stat_md_explains_every_field_and_no_other() {
        let doc = include_str!("../../../docs/STAT.md");
        let rows: Vec<Vec<&str>> = doc
            .lines()
            .filter(|l| l.starts_with("| `"))
            .map(|l| l.trim_matches('|').split(" | ").map(str::trim).collect())
            .collect();
        for field in FIELDS {
            let row = rows.iter().find(|r| r[0] == format!("`{}`", field.path));
            let row = row.unwrap_or_else(|| panic!("docs/STAT.md does not explain {}", field.path));
            assert_eq!(row[2], format!("{:?}", field.kind).to_lowercase(), "kind of {}", field.path);
            assert!(row[3].len() > 10, "{}: no meaning given", field.path);
        }
        for row in &rows {
            assert!(
                FIELDS.iter().any(|f| row[0] == format!("`{}`", f.path)),
                "docs/STAT.md lists {}, which is no field",
                row[0]
            );
        }
        let mut paths: Vec<&str> = FIELDS.iter().map(|f| f.path).collect();
        paths.sort_unstable();
        paths.dedup();
        assert_eq!(paths.len(), FIELDS.len(), "a field is listed twice");
    }
}
