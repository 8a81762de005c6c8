//! Whether a replay skipped too much to mean anything: a trace whose files the replay cannot find (a CSV
//! import that never created them, paths that do not match) replays nothing and would still print metrics,
//! all zero. More than `MAX_SKIPPED_PERCENT` of its file operations skipped fails `mcfs sim`, naming the
//! most common reason and one event it skipped for it, unless the user accepts it (`--allow-skipped`).

use mcfs_sim::replay::Metrics;
use mcfs_sim::TraceEvent;

/// Share of file operations a replay may skip and still pass (seen as noise: a close of a descriptor
/// opened before the trace started, a read after an unlink).
pub const MAX_SKIPPED_PERCENT: u64 = 1;

/// Counts the trace's file operations as they are read; the replay's metrics say what it skipped (a
/// closed-loop replay may run an event long after it was read).
#[derive(Default)]
pub struct SkipCheck {
    file_ops: u64,
}

impl SkipCheck {
    /// Takes note of `event`, read from the trace.
    pub fn observe(&mut self, event: &TraceEvent) {
        self.file_ops += u64::from(event.kind.is_file_op());
    }

    /// `None` when the share the finished replay skipped is within bounds, else what went wrong.
    pub fn problem(&self, metrics: &Metrics) -> Option<String> {
        let skipped = metrics.events_skipped;
        if skipped.saturating_mul(100) <= self.file_ops.saturating_mul(MAX_SKIPPED_PERCENT) {
            return None;
        }
        // Most skips; on a tie, the first reason by name, so the message is the same every run.
        let (reason, count) = metrics.skip_reasons.iter().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))?;
        let example = metrics.skip_examples.get(reason).map_or("", String::as_str);
        Some(format!(
            "{skipped} of {} file operations were skipped ({:.1} %, more than {MAX_SKIPPED_PERCENT} %): most often \
             '{reason}' ({count}), first at '{example}'",
            self.file_ops,
            skipped as f64 * 100.0 / self.file_ops.max(1) as f64
        ))
    }
}
