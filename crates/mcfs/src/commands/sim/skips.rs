//! Whether a replay skipped too much to mean anything: a trace whose files the replay cannot find (a CSV
//! import that never created them, paths that do not match) replays nothing and would still print metrics,
//! all zero. More than `MAX_SKIPPED_PERCENT` of its file operations skipped fails `mcfs sim`, naming the
//! most common reason and one event it skipped for it, unless the user accepts it (`--allow-skipped`).

use mcfs_sim::replay::Replayer;
use mcfs_sim::text::format_event;
use mcfs_sim::TraceEvent;
use std::collections::BTreeMap;

/// Share of file operations a replay may skip and still pass (seen as noise: a close of a descriptor
/// opened before the trace started, a read after an unlink).
pub const MAX_SKIPPED_PERCENT: u64 = 1;

#[derive(Default)]
pub struct SkipCheck {
    file_ops: u64,
    skipped: u64,
    /// Skips seen so far by reason, to tell which reason the last skip had.
    counts: BTreeMap<String, u64>,
    /// The first event skipped for each reason, as a trace line.
    examples: BTreeMap<String, String>,
}

impl SkipCheck {
    /// Takes note of `event`, just replayed; `skipped_before` is the replayer's skip count before it.
    pub fn observe(&mut self, event: &TraceEvent, skipped_before: u64, replayer: &Replayer) {
        self.file_ops += u64::from(event.kind.is_file_op());
        if replayer.events_skipped() == skipped_before {
            return;
        }
        self.skipped += 1;
        for (reason, &count) in replayer.skip_reasons() {
            if self.counts.get(reason) != Some(&count) {
                self.counts.insert(reason.clone(), count);
                self.examples.entry(reason.clone()).or_insert_with(|| {
                    let mut line = Vec::new();
                    format_event(event, &mut line);
                    String::from_utf8_lossy(&line).into_owned()
                });
            }
        }
    }

    /// `None` when the share skipped is within bounds, else what went wrong.
    pub fn problem(&self) -> Option<String> {
        if self.skipped.saturating_mul(100) <= self.file_ops.saturating_mul(MAX_SKIPPED_PERCENT) {
            return None;
        }
        // Most skips; on a tie, the first reason by name, so the message is the same every run.
        let (reason, count) = self.counts.iter().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))?;
        let example = self.examples.get(reason).map_or("", String::as_str);
        Some(format!(
            "{} of {} file operations were skipped ({:.1} %, more than {MAX_SKIPPED_PERCENT} %): most often \
             '{reason}' ({count}), first at '{example}'",
            self.skipped,
            self.file_ops,
            self.skipped as f64 * 100.0 / self.file_ops.max(1) as f64
        ))
    }
}
