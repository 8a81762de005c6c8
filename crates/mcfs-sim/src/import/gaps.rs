//! Shortening long idle gaps: a block trace stamped with time since boot jumps over the days the phone was
//! off or the tracer stopped, and such a gap would dominate every time-weighted metric of a replay.
//!
//! Invariant: events keep their order and every gap up to `max_gap_ns` is kept exactly; a longer gap
//! becomes `max_gap_ns` and every later event moves earlier by what was cut. An event stamped earlier than
//! one before it keeps its distance to that event.

use crate::error::TraceError;
use crate::trace::TraceEvent;

/// What was cut.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GapReport {
    pub gaps_shortened: u64,
    pub removed_ns: u64,
}

pub struct GapCap<I> {
    inner: I,
    max_gap_ns: u64,
    /// Latest input time seen.
    latest_ns: Option<u64>,
    report: GapReport,
}

impl<I> GapCap<I> {
    pub fn new(inner: I, max_gap_ns: u64) -> Self {
        GapCap { inner, max_gap_ns, latest_ns: None, report: GapReport::default() }
    }

    pub fn report(&self) -> GapReport {
        self.report
    }

    fn shift(&mut self, mut event: TraceEvent) -> TraceEvent {
        let t = event.time_ns;
        if let Some(latest) = self.latest_ns {
            let gap = t.saturating_sub(latest);
            if gap > self.max_gap_ns {
                self.report.gaps_shortened += 1;
                self.report.removed_ns = self.report.removed_ns.saturating_add(gap - self.max_gap_ns);
            }
        }
        self.latest_ns = Some(self.latest_ns.map_or(t, |l| l.max(t)));
        event.time_ns = t.saturating_sub(self.report.removed_ns);
        event
    }
}

impl<I: Iterator<Item = Result<TraceEvent, TraceError>>> Iterator for GapCap<I> {
    type Item = Result<TraceEvent, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        let next = self.inner.next()?;
        Some(next.map(|event| self.shift(event)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::EventKind;

    #[test]
    fn long_gaps_shrink_to_the_bound_and_short_ones_stay() {
        let secs = [0u64, 1, 2, 86_400 * 3, 86_400 * 3 + 5, 86_400 * 3 + 4, 86_400 * 4];
        let events = secs
            .iter()
            .map(|&s| Ok(TraceEvent { time_ns: s * 1_000_000_000, app: "a".into(), pid: 1, kind: EventKind::Exit }));
        let mut cap = GapCap::new(events, 60 * 1_000_000_000);
        let out: Vec<u64> = cap.by_ref().map(|e| e.unwrap().time_ns / 1_000_000_000).collect();
        assert_eq!(out, [0, 1, 2, 62, 67, 66, 127], "the last gap counts from the latest event (67)");
        assert_eq!(cap.report().gaps_shortened, 2);
        assert_eq!(cap.report().removed_ns, (86_400 * 4 - 127) * 1_000_000_000);
    }
}
