//! Warnings about a trace that reads fine but would mislead a replay: one idle gap that dominates the
//! trace's time span, and read/write offsets or lengths that look like 512-byte sector counts taken for
//! bytes (a unit mistake of an import). Fed one event at a time, in one pass, with constant memory.
//!
//! The unit checks rest on how block traces look: a block device moves whole 4 KiB pages, so in sectors an
//! offset is a multiple of 8, and only one in 64 such numbers is also a multiple of 512 (a byte offset of
//! a page always is); a length is 8, 16, 32... sectors, below 512 as bytes. Offsets that are bytes by
//! construction — a syscall's, imported from strace — skip these checks (`without_unit_checks`): SQLite's
//! WAL frames (4096 + 24 bytes after a 32-byte header) put nearly every offset on a multiple of 8.

use crate::timefmt::NANOS_PER_SECOND;
use crate::trace::{EventKind, TraceEvent};

/// Fewer transfers than this say nothing about units.
const MIN_TRANSFERS: u64 = 16;
/// Share (percent) of transfers that must look like sectors.
const SECTOR_LIKE_PERCENT: u64 = 90;
/// A gap shorter than an hour is never worth a warning: a user who shortened gaps (`--max-gap`) chose
/// theirs, and real pauses of an app last minutes; the mistake is days of a since-boot clock.
const MIN_WARNED_GAP_NS: u64 = 3600 * NANOS_PER_SECOND;
/// A gap is warned about when it is at least this share (percent) of the trace's span.
const GAP_SHARE_PERCENT: u64 = 50;

#[derive(Debug, Default)]
pub struct TraceLint {
    first_ns: Option<u64>,
    latest_ns: u64,
    /// Longest gap between an event and the latest one before it, and where it ends.
    longest_gap_ns: u64,
    longest_gap_end_ns: u64,
    transfers: u64,
    sector_like_offsets: u64,
    sector_like_lengths: u64,
    /// The offsets and lengths are bytes by construction: no unit warnings.
    bytes_known: bool,
}

impl TraceLint {
    /// A lint for a trace whose offsets and lengths are known to be bytes (a syscall trace): idle gaps only.
    pub fn without_unit_checks() -> TraceLint {
        TraceLint { bytes_known: true, ..TraceLint::default() }
    }

    pub fn add(&mut self, event: &TraceEvent) {
        let t = event.time_ns;
        match self.first_ns {
            None => self.first_ns = Some(t),
            Some(_) if t > self.latest_ns && t - self.latest_ns > self.longest_gap_ns => {
                self.longest_gap_ns = t - self.latest_ns;
                self.longest_gap_end_ns = t;
            }
            Some(_) => {}
        }
        self.latest_ns = self.latest_ns.max(t);
        if let EventKind::Read { offset, len, .. } | EventKind::Write { offset, len, .. } = event.kind {
            self.transfers += 1;
            self.sector_like_offsets += u64::from(offset.is_multiple_of(8) && !offset.is_multiple_of(512));
            self.sector_like_lengths += u64::from(len.is_multiple_of(8) && (8..512).contains(&len));
        }
    }

    /// One sentence per problem found, each saying what to do about it.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        let span = self.latest_ns.saturating_sub(self.first_ns.unwrap_or(0));
        if self.longest_gap_ns >= MIN_WARNED_GAP_NS
            && self.longest_gap_ns.saturating_mul(100) >= span * GAP_SHARE_PERCENT
        {
            out.push(format!(
                "an idle gap of {} s (ending at {} s on the trace's clock) is {} % of the trace's {} s: it \
                 dominates every time-weighted metric; import with --max-gap SECONDS to shorten such gaps",
                self.longest_gap_ns / NANOS_PER_SECOND,
                self.longest_gap_end_ns / NANOS_PER_SECOND,
                self.longest_gap_ns.saturating_mul(100) / span.max(1),
                span / NANOS_PER_SECOND
            ));
        }
        let mostly = |n: u64| {
            !self.bytes_known && self.transfers >= MIN_TRANSFERS && n * 100 >= self.transfers * SECTOR_LIKE_PERCENT
        };
        if mostly(self.sector_like_offsets) {
            out.push(format!(
                "{} of {} read/write offsets are multiples of 8 but not of 512: they look like 512-byte sector \
                 numbers taken for bytes; import with --offset-unit 512",
                self.sector_like_offsets, self.transfers
            ));
        }
        if mostly(self.sector_like_lengths) {
            out.push(format!(
                "{} of {} read/write lengths are multiples of 8 below 512 bytes: they look like 512-byte sector \
                 counts taken for bytes; import with --size-unit 512",
                self.sector_like_lengths, self.transfers
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(t_s: u64, offset: u64, len: u64) -> TraceEvent {
        let kind = EventKind::Write { path: b"/blockdev"[..].into(), offset, len };
        TraceEvent { time_ns: t_s * NANOS_PER_SECOND, app: "a".into(), pid: 1, kind }
    }

    fn lint(events: &[TraceEvent]) -> Vec<String> {
        let mut lint = TraceLint::default();
        events.iter().for_each(|e| lint.add(e));
        lint.warnings()
    }

    #[test]
    fn sector_numbers_taken_for_bytes_are_flagged_and_bytes_are_not() {
        let sectors: Vec<TraceEvent> = (0..20).map(|i| write(i, 2048 + 8 * i, 8 << (i % 4))).collect();
        let warnings = lint(&sectors);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].contains("--offset-unit 512") && warnings[1].contains("--size-unit 512"), "{warnings:?}");
        let bytes: Vec<TraceEvent> = (0..20).map(|i| write(i, (2048 + 8 * i) * 512, (8 << (i % 4)) * 512)).collect();
        assert!(lint(&bytes).is_empty(), "{:?}", lint(&bytes));
        assert!(lint(&sectors[..10]).is_empty(), "too few transfers to tell");
        let mut known = TraceLint::without_unit_checks();
        sectors.iter().for_each(|e| known.add(e));
        assert!(known.warnings().is_empty(), "{:?}", known.warnings());
    }

    #[test]
    fn a_gap_dominating_the_span_is_flagged() {
        let days = [write(0, 0, 4096), write(1, 0, 4096), write(3 * 86_400, 0, 4096), write(3 * 86_400 + 9, 0, 4096)];
        let warnings = lint(&days);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("259199 s") && warnings[0].contains("--max-gap"), "{warnings:?}");
        let steady: Vec<TraceEvent> = (0..100).map(|i| write(i * 30, 0, 4096)).collect();
        assert!(lint(&steady).is_empty());
    }
}
