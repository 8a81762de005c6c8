//! When each request is served: the device as a server in virtual time.
//!
//! A request issued at `at` takes the queue slot that frees first (there are `queue_depth` of them) and
//! starts when that slot is free. Its fixed latency (command processing, flash access) runs in its slot,
//! overlapping the latencies of the other slots; its data then moves over the one data channel, which
//! carries one transfer at a time, so `done = max(start + latency, channel free) + transfer`. A barrier
//! (a flush) starts once everything before it is done and holds every slot until it completes.
//!
//! Invariant: completions never go back — every request ends with a transfer on the single channel, or
//! with a barrier after everything — so `busy_until`, the last completion, is also the instant up to
//! which the device has been given work, and the device is idle exactly between `busy_until` and a later
//! start. `busy_ns` is the length of the union of the service intervals.

/// When one request was served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Service {
    pub start_ns: u64,
    pub done_ns: u64,
    /// How long the device had been idle when the request started (0 if it was busy).
    pub idle_before_ns: u64,
}

#[derive(Clone, Debug)]
pub struct DeviceQueue {
    /// When each slot is free again.
    slots: Vec<u64>,
    busy_until: u64,
    busy_ns: u64,
}

impl DeviceQueue {
    /// A queue with `depth` slots (at least one), idle since time zero.
    pub fn new(depth: u32) -> DeviceQueue {
        DeviceQueue { slots: vec![0; depth.max(1) as usize], busy_until: 0, busy_ns: 0 }
    }

    /// Serves a request issued at `at_ns` with a fixed latency and a transfer time.
    pub fn request(&mut self, at_ns: u64, latency_ns: u64, transfer_ns: u64) -> Service {
        let (slot, free) = self.slots.iter().copied().enumerate().min_by_key(|&(i, t)| (t, i)).unwrap_or((0, 0));
        let start = at_ns.max(free);
        let done = start.saturating_add(latency_ns).max(self.busy_until).saturating_add(transfer_ns);
        if let Some(s) = self.slots.get_mut(slot) {
            *s = done;
        }
        self.served(start, done)
    }

    /// Serves a barrier issued at `at_ns`: it waits for everything before it and lasts `latency_ns`.
    pub fn barrier(&mut self, at_ns: u64, latency_ns: u64) -> Service {
        let start = at_ns.max(self.busy_until);
        let done = start.saturating_add(latency_ns);
        self.slots.iter_mut().for_each(|s| *s = done);
        self.served(start, done)
    }

    /// The last completion so far.
    pub fn busy_until(&self) -> u64 {
        self.busy_until
    }

    /// Time during which at least one request was being served.
    pub fn busy_ns(&self) -> u64 {
        self.busy_ns
    }

    fn served(&mut self, start: u64, done: u64) -> Service {
        let idle_before_ns = start.saturating_sub(self.busy_until);
        self.busy_ns = self.busy_ns.saturating_add(done - start.max(self.busy_until).min(done));
        self.busy_until = self.busy_until.max(done);
        Service { start_ns: start, done_ns: done, idle_before_ns }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(start_ns: u64, done_ns: u64, idle_before_ns: u64) -> Service {
        Service { start_ns, done_ns, idle_before_ns }
    }

    #[test]
    fn depth_one_serves_requests_one_after_the_other() {
        let mut q = DeviceQueue::new(1);
        assert_eq!(q.request(100, 10, 50), s(100, 160, 100));
        // Issued while the first is in service: starts when its slot frees.
        assert_eq!(q.request(120, 10, 50), s(160, 220, 0));
        assert_eq!(q.request(1_000, 10, 0), s(1_000, 1_010, 780));
        assert_eq!((q.busy_until(), q.busy_ns()), (1_010, 60 + 60 + 10));
    }

    #[test]
    fn deeper_queues_overlap_latencies_but_not_transfers() {
        let mut q = DeviceQueue::new(2);
        assert_eq!(q.request(0, 100, 10), s(0, 110, 0));
        // Second slot: its latency overlaps the first's, its transfer waits for the channel.
        assert_eq!(q.request(0, 100, 10), s(0, 120, 0));
        // Both slots busy: the third takes the one free first (at 110).
        assert_eq!(q.request(0, 100, 10), s(110, 220, 0));
        assert_eq!(q.busy_ns(), 220);
    }

    #[test]
    fn a_barrier_waits_for_everything_and_holds_every_slot() {
        let mut q = DeviceQueue::new(4);
        q.request(0, 10, 1_000);
        assert_eq!(q.barrier(5, 100), s(1_010, 1_110, 0));
        assert_eq!(q.request(20, 10, 10), s(1_110, 1_130, 0));
        assert_eq!(q.barrier(2_000, 100), s(2_000, 2_100, 870));
        assert_eq!(q.busy_ns(), 1_010 + 100 + 20 + 100);
    }
}
