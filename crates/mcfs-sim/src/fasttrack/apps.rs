//! One app of a scenario: its trace, where it stands in it, and what it measured. The app runs closed
//! loop: it issues its next event once the previous one completed plus the gap the trace shows between
//! the two, so a slower device delays everything after it.
//!
//! Invariant: an app has at most one event in flight, and events are issued in trace order.

use super::chain::Chain;
use super::report::AppReport;
use crate::replay::LatencyHistogram;
use crate::text::op_name;
use crate::trace::{EventKind, TraceEvent};
use mcfs_core::{Caller, Errno};
use std::collections::BTreeMap;

/// A call of the app in flight.
#[derive(Debug)]
pub struct Call {
    /// When the app issued it (before any admission hold).
    pub issued_ns: u64,
    /// It counts as a foreground call in flight.
    pub foreground: bool,
    /// The device commands it issued, still to send or to wait for.
    pub chain: Chain,
}

#[derive(Debug)]
pub enum AppState {
    /// Issues its next event at this instant.
    Ready(u64),
    /// A background call held at admission: issued at `issued_ns`, held since `since_ns`.
    Held {
        issued_ns: u64,
        since_ns: u64,
    },
    InCall(Call),
    Finished,
}

pub struct AppRun {
    pub name: String,
    pub uid: u32,
    events: Vec<TraceEvent>,
    next: usize,
    pub state: AppState,
    first_issue_ns: Option<u64>,
    last_done_ns: u64,
    refused: BTreeMap<String, u64>,
    /// Latencies of the file operations: all of them, and by operation.
    latency: LatencyHistogram,
    by_op: BTreeMap<&'static str, LatencyHistogram>,
}

impl AppRun {
    /// An app whose first event is issued at its trace time minus `origin_ns` (the earliest trace time of
    /// the scenario).
    pub fn new(name: String, uid: u32, events: Vec<TraceEvent>, origin_ns: u64) -> AppRun {
        let state = match events.first() {
            Some(e) => AppState::Ready(e.time_ns.saturating_sub(origin_ns)),
            None => AppState::Finished,
        };
        AppRun {
            name,
            uid,
            events,
            next: 0,
            state,
            first_issue_ns: None,
            last_done_ns: 0,
            refused: BTreeMap::new(),
            latency: LatencyHistogram::default(),
            by_op: BTreeMap::new(),
        }
    }

    /// The event to issue next.
    pub fn next_event(&self) -> Option<&EventKind> {
        self.events.get(self.next).map(|e| &e.kind)
    }

    /// The caller the next event runs as.
    pub fn caller(&self) -> Caller {
        let pid = self.events.get(self.next).map_or(0, |e| e.pid);
        Caller { uid: self.uid, gid: self.uid, pid }
    }

    /// Notes that the next event was issued at `issued_ns`.
    pub fn issued(&mut self, issued_ns: u64) {
        self.first_issue_ns.get_or_insert(issued_ns);
    }

    pub fn refused(&mut self, errno: Errno) {
        *self.refused.entry(errno.to_string()).or_default() += 1;
    }

    /// The event issued at `issued_ns` completed at `done_ns`: records it and schedules the next one.
    pub fn completed(&mut self, issued_ns: u64, done_ns: u64) {
        let Some(event) = self.events.get(self.next) else { return };
        if event.kind.is_file_op() {
            let ns = done_ns.saturating_sub(issued_ns);
            self.latency.record(ns);
            self.by_op.entry(op_name(&event.kind)).or_default().record(ns);
        }
        self.last_done_ns = done_ns;
        let this_ns = event.time_ns;
        self.next += 1;
        self.state = match self.events.get(self.next) {
            Some(next) => AppState::Ready(done_ns.saturating_add(next.time_ns.saturating_sub(this_ns))),
            None => AppState::Finished,
        };
    }

    pub fn report(&self) -> AppReport {
        let first = self.first_issue_ns.unwrap_or(0);
        AppReport {
            uid: self.uid,
            events: self.events.len() as u64,
            refused: self.refused.clone(),
            first_issue_ns: first,
            last_done_ns: self.last_done_ns,
            response_ns: self.last_done_ns.saturating_sub(first),
            latency: self.latency.summary(),
            by_op: self.by_op.iter().map(|(op, h)| (op.to_string(), h.summary())).collect(),
        }
    }
}
