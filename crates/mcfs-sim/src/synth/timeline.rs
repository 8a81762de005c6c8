//! The app's side of a synthetic trace as it is being written: a cursor in time and the events recorded
//! since they were last taken.
//!
//! Invariant: the cursor never goes back, so the events come out in time order; each system call moves it
//! on by what the call took on the recording phone (a small fixed cost, the bytes copied, a flash flush
//! for `fsync`), so one burst of I/O never overlaps the next.

use std::ops::RangeInclusive;

use super::rng::Rng;
use crate::trace::{EventKind, PathBytes, TraceEvent};

/// Cost of any system call, in nanoseconds.
const SYSCALL_NS: RangeInclusive<u64> = 20_000..=200_000;
/// Copy cost per byte read or written (about 125 MB/s on a 2013 phone).
const NS_PER_BYTE: u64 = 8;
/// A flush of an Ext4 file on eMMC: a few milliseconds.
const FLUSH_NS: RangeInclusive<u64> = 2_000_000..=8_000_000;

pub(crate) struct Timeline {
    app: std::sync::Arc<str>,
    pid: u32,
    now_ns: u64,
    pub(crate) rng: Rng,
    events: Vec<TraceEvent>,
    written_bytes: u64,
}

impl Timeline {
    pub(crate) fn new(app: &str, pid: u32, rng: Rng) -> Timeline {
        Timeline { app: app.into(), pid, now_ns: 0, rng, events: Vec::new(), written_bytes: 0 }
    }

    pub(crate) fn now_ns(&self) -> u64 {
        self.now_ns
    }

    /// Bytes written so far.
    pub(crate) fn written_bytes(&self) -> u64 {
        self.written_bytes
    }

    /// Moves the cursor to `ns` unless it is already later (a burst still running delays the next one).
    pub(crate) fn wait_until(&mut self, ns: u64) {
        self.now_ns = self.now_ns.max(ns);
    }

    /// Moves the cursor on by a draw from `us` microseconds (the app thinking between calls).
    pub(crate) fn think(&mut self, us: &RangeInclusive<u64>) {
        let pause = self.rng.uniform(us).saturating_mul(1_000);
        self.now_ns = self.now_ns.saturating_add(pause);
    }

    /// Records an event at the cursor without moving it (lifecycle changes take no time).
    pub(crate) fn mark(&mut self, kind: EventKind) {
        let event = self.event(self.now_ns, kind);
        self.events.push(event);
    }

    /// An event of this app at `time_ns` (not recorded).
    pub(crate) fn event(&self, time_ns: u64, kind: EventKind) -> TraceEvent {
        TraceEvent { time_ns, app: self.app.clone(), pid: self.pid, kind }
    }

    /// Records a system call at the cursor and moves the cursor past its end.
    pub(crate) fn call(&mut self, kind: EventKind) {
        if let EventKind::Write { len, .. } = &kind {
            self.written_bytes = self.written_bytes.saturating_add(*len);
        }
        let cost = match &kind {
            EventKind::Read { len, .. } | EventKind::Write { len, .. } => len.saturating_mul(NS_PER_BYTE),
            EventKind::Fsync { .. } | EventKind::Fdatasync { .. } => self.rng.uniform(&FLUSH_NS),
            _ => 0,
        };
        let cost = cost.saturating_add(self.rng.uniform(&SYSCALL_NS));
        self.mark(kind);
        self.now_ns = self.now_ns.saturating_add(cost);
    }

    pub(crate) fn write(&mut self, path: &PathBytes, offset: u64, len: u64) {
        self.call(EventKind::Write { path: path.clone(), offset, len });
    }

    pub(crate) fn read(&mut self, path: &PathBytes, offset: u64, len: u64) {
        self.call(EventKind::Read { path: path.clone(), offset, len });
    }

    /// Takes the events recorded since the last call, in time order.
    pub(crate) fn drain(&mut self) -> Vec<TraceEvent> {
        std::mem::take(&mut self.events)
    }
}

/// `base` + `/` + `name` as path bytes.
pub(crate) fn join(base: &[u8], name: &str) -> PathBytes {
    let mut path = base.to_vec();
    path.push(b'/');
    path.extend_from_slice(name.as_bytes());
    path.into()
}
