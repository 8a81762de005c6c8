//! Closed-loop issue times: each process of the trace (app and pid) issues its next event once its
//! previous one completed, plus the think time the trace shows between the two (their recorded gap; the
//! trace holds issue times only, so the recording machine's own service time stays inside that gap).
//! Events wait here, per process, until their issue time is known and no event still unread can come
//! before them.
//!
//! Why that is safe to decide while streaming: a process's delay (issue time − recorded time) starts at
//! 0 and only grows (by each completed call's latency, and when the trace goes back in time), so no
//! event issues before its recorded time. Once an event recorded at `h` was read, every event still
//! unread of a time-sorted trace issues at `h` or later: a waiting event that issues by `h` can run.
//! Ties go to the event read first. Invariant: events of one process run in trace order, one at a time.

use crate::trace::TraceEvent;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::sync::Arc;

/// An event handed out to run: its process, the event and its issue time (virtual ns).
pub struct Due {
    pub process: usize,
    pub event: TraceEvent,
    pub issue_ns: u64,
}

struct Waiting {
    seq: u64,
    recorded_ns: u64,
    event: TraceEvent,
}

#[derive(Default)]
struct Process {
    app: Arc<str>,
    pid: u32,
    queue: VecDeque<Waiting>,
    /// Completion and recorded time of the process's last event run (`None` before its first).
    last: Option<(u64, u64)>,
    /// Issue time − recorded time of its last event run.
    delay_ns: u64,
}

#[derive(Default)]
pub struct ClosedLoop {
    processes: Vec<Process>,
    ids: HashMap<Arc<str>, HashMap<u32, usize>>,
    /// The process of the last event pushed: the next one is mostly its too, found without hashing.
    last_pushed: Option<usize>,
    /// Processes whose head event's issue time is known: (issue time, seq of the event, process).
    ready: BinaryHeap<Reverse<(u64, u64, usize)>>,
    seq: u64,
    /// Latest recorded time read: no unread event of a sorted trace issues before it.
    horizon_ns: u64,
}

impl ClosedLoop {
    /// Takes the next event of the trace, recorded at `recorded_ns` (virtual time of the recording).
    pub fn push(&mut self, event: TraceEvent, recorded_ns: u64) {
        self.horizon_ns = self.horizon_ns.max(recorded_ns);
        let process = self.process_of(&event);
        let seq = self.seq;
        self.seq += 1;
        let p = &mut self.processes[process];
        p.queue.push_back(Waiting { seq, recorded_ns, event });
        if p.queue.len() == 1 {
            self.schedule(process);
        }
    }

    /// The next event to run: the one that issues first, if no unread event can come before it (or, at
    /// the `end` of the trace, whatever waits). The caller runs it and reports `completed`.
    pub fn next_due(&mut self, end: bool) -> Option<Due> {
        let Reverse((issue_ns, _, process)) = *self.ready.peek()?;
        if !end && issue_ns > self.horizon_ns {
            return None;
        }
        self.ready.pop();
        let p = &mut self.processes[process];
        let waiting = p.queue.pop_front().expect("a ready process has a head event");
        p.delay_ns = issue_ns.saturating_sub(waiting.recorded_ns);
        p.last = Some((issue_ns, waiting.recorded_ns));
        Some(Due { process, event: waiting.event, issue_ns })
    }

    /// The event `next_due` gave `process` completed at `done_ns`: its next event can be scheduled.
    pub fn completed(&mut self, process: usize, done_ns: u64) {
        let p = &mut self.processes[process];
        if let Some((ready, _)) = &mut p.last {
            *ready = (*ready).max(done_ns);
        }
        if !p.queue.is_empty() {
            self.schedule(process);
        }
    }

    /// Each process's app and its delay at its last event (issue time − recorded time).
    pub fn delays(&self) -> impl Iterator<Item = (&str, u64)> {
        self.processes.iter().map(|p| (&*p.app, p.delay_ns))
    }

    fn process_of(&mut self, event: &TraceEvent) -> usize {
        let is_of = |p: &Process| p.pid == event.pid && p.app == event.app;
        let id = match self.last_pushed.filter(|last| is_of(&self.processes[*last])) {
            Some(last) => last,
            None => match self.ids.get(&*event.app).and_then(|pids| pids.get(&event.pid)) {
                Some(&id) => id,
                None => {
                    let id = self.processes.len();
                    self.processes.push(Process { app: event.app.clone(), pid: event.pid, ..Process::default() });
                    self.ids.entry(event.app.clone()).or_default().insert(event.pid, id);
                    id
                }
            },
        };
        self.last_pushed = Some(id);
        id
    }

    /// Puts `process`'s head event in the ready heap at its issue time: its recorded time for the
    /// process's first event, else the previous completion plus the recorded gap (none if the trace went
    /// back in time).
    fn schedule(&mut self, process: usize) {
        let p = &self.processes[process];
        let head = p.queue.front().expect("scheduled processes have a head event");
        let issue_ns = match p.last {
            None => head.recorded_ns,
            Some((done, recorded)) => done.saturating_add(head.recorded_ns.saturating_sub(recorded)),
        };
        self.ready.push(Reverse((issue_ns, head.seq, process)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::EventKind;

    fn event(app: &str, pid: u32) -> TraceEvent {
        TraceEvent { time_ns: 0, app: app.into(), pid, kind: EventKind::Launch }
    }

    /// Runs everything, each event taking `latency(event index)`; returns (index, issue time) in run order.
    fn run(events: &[(&str, u32, u64)], latency: impl Fn(usize) -> u64) -> Vec<(usize, u64)> {
        let mut lp = ClosedLoop::default();
        let mut order = Vec::new();
        let mut step = |lp: &mut ClosedLoop, end: bool| {
            while let Some(due) = lp.next_due(end) {
                let index = due.event.time_ns as usize;
                order.push((index, due.issue_ns));
                lp.completed(due.process, due.issue_ns + latency(index));
            }
        };
        for (i, (app, pid, at)) in events.iter().enumerate() {
            let mut e = event(app, *pid);
            e.time_ns = i as u64; // carries the index through
            lp.push(e, *at);
            step(&mut lp, false);
        }
        step(&mut lp, true);
        order
    }

    #[test]
    fn a_slow_call_delays_its_process_only_and_think_time_is_kept() {
        // a: events at 0, 10, 20; b: events at 5, 15. a's first call takes 100.
        let events = [("a", 1, 0), ("b", 1, 5), ("a", 1, 10), ("b", 1, 15), ("a", 1, 20)];
        let order = run(&events, |i| if i == 0 { 100 } else { 0 });
        // a's second event issues at 100 + 10 (think time), its third 10 later; b keeps its times.
        assert_eq!(order, [(0, 0), (1, 5), (3, 15), (2, 110), (4, 120)]);
    }

    #[test]
    fn processes_of_one_app_run_apart_and_delays_are_reported() {
        let events = [("a", 1, 0), ("a", 2, 1), ("a", 1, 2), ("a", 2, 3)];
        let order = run(&events, |i| if i == 0 { 50 } else { 0 });
        assert_eq!(order, [(0, 0), (1, 1), (3, 3), (2, 52)]);
    }

    #[test]
    fn nothing_runs_before_an_unread_event_could() {
        let mut lp = ClosedLoop::default();
        lp.push(event("a", 1), 0);
        let due = lp.next_due(false).expect("first event is due");
        lp.completed(due.process, 30);
        lp.push(event("a", 1), 10); // issues at 30 + 10 = 40
        assert!(lp.next_due(false).is_none(), "an event recorded before 40 may still come");
        lp.push(event("b", 1), 39);
        assert_eq!(lp.next_due(false).map(|d| d.issue_ns), Some(39));
        assert!(lp.next_due(false).is_none());
        assert_eq!(lp.next_due(true).map(|d| d.issue_ns), Some(40));
        assert_eq!(lp.delays().collect::<Vec<_>>(), [("a", 30), ("b", 0)]);
    }

    #[test]
    fn a_trace_going_back_in_time_gives_no_think_time() {
        let order = run(&[("a", 1, 100), ("a", 1, 40)], |_| 7);
        assert_eq!(order, [(0, 100), (1, 107)]);
    }
}
