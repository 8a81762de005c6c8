//! The device commands of one issuer — an app's call, or the engine's own background work — in the order
//! the engine issued them. The issuer sends commands until one it must wait for (a read or a flush) and
//! the rest once that one completed, as `SimBackend`'s cursor does, except that the completion time is
//! the device scheduler's to decide later. A gate is a point where background work yields to foreground
//! calls in flight (FastTrack's PA and ID holds): the chain is held there while one is in flight, until
//! none is or until the aging bound has passed since the hold began (the event loop decides which).
//!
//! Invariant: at most one command of a chain is awaited at a time, and commands go to the device in the
//! order they were issued.

use mcfs_device::scheduler::{CommandId, Op, Priority, Scheduler};
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Item {
    Command(Priority, Op),
    Gate,
}

/// Where a chain stands after `pump`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// Everything was sent and every command it waits for completed.
    Done,
    /// Waiting for a command to complete.
    Waiting,
    /// Held at a gate.
    Held,
}

#[derive(Debug, Default)]
pub struct Chain {
    items: VecDeque<Item>,
    awaiting: Option<CommandId>,
    held_since: Option<u64>,
}

impl Chain {
    /// Appends one batch of commands (one engine call, or one background tick). With `segment_bytes`, the
    /// batch is background work that yields after each command it waited for and after every
    /// `segment_bytes` written — as the engine yields between the segments of a checkpoint's apply and
    /// before each fetch of a background read — but never before its first command.
    pub fn push_batch(&mut self, commands: Vec<(Priority, Op)>, segment_bytes: Option<u64>) {
        let Some(segment) = segment_bytes else {
            self.items.extend(commands.into_iter().map(|(p, op)| Item::Command(p, op)));
            return;
        };
        let mut written = 0u64;
        let mut at_boundary = false;
        for (priority, op) in commands {
            if at_boundary {
                self.items.push_back(Item::Gate);
                written = 0;
            }
            self.items.push_back(Item::Command(priority, op));
            if let Op::Write(bytes) = op {
                written = written.saturating_add(bytes);
            }
            at_boundary = op.blocks_issuer() || written >= segment.max(1);
        }
    }

    /// Sends commands at `now_ns` until the chain must wait: for a command, or at a gate while
    /// `fg_in_flight`.
    pub fn pump(&mut self, now_ns: u64, device: &mut Scheduler, fg_in_flight: bool) -> Progress {
        if self.held_since.is_some() {
            return Progress::Held;
        }
        loop {
            if self.awaiting.is_some() {
                return Progress::Waiting;
            }
            match self.items.pop_front() {
                None => return Progress::Done,
                Some(Item::Gate) if fg_in_flight => {
                    self.held_since = Some(now_ns);
                    return Progress::Held;
                }
                Some(Item::Gate) => {}
                Some(Item::Command(priority, op)) => {
                    let id = device.submit(now_ns, priority, op);
                    if op.blocks_issuer() {
                        self.awaiting = Some(id);
                    }
                }
            }
        }
    }

    /// Whether the chain waited for `id`; it waits no more.
    pub fn completed(&mut self, id: CommandId) -> bool {
        let awaited = self.awaiting == Some(id);
        if awaited {
            self.awaiting = None;
        }
        awaited
    }

    /// Since when the chain is held at a gate, if it is.
    pub fn held_since(&self) -> Option<u64> {
        self.held_since
    }

    /// Ends the hold: the next `pump` goes past the gate.
    pub fn release(&mut self) {
        self.held_since = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcfs_device::scheduler::SchedPolicy;
    use mcfs_device::DeviceProfile;

    fn device() -> Scheduler {
        Scheduler::new(&DeviceProfile::builtin("emmc").expect("built-in"), SchedPolicy::Fifo)
    }

    #[test]
    fn a_chain_waits_for_each_read_or_flush_but_not_for_writes() {
        let mut d = device();
        let mut c = Chain::default();
        let bg = Priority::Background;
        c.push_batch(vec![(bg, Op::Write(4096)), (bg, Op::Read(4096)), (bg, Op::Write(4096)), (bg, Op::Flush)], None);
        assert_eq!(c.pump(0, &mut d, false), Progress::Waiting);
        assert_eq!(d.pending(), 2, "the write and the read went; the rest waits for the read");
        let read = d.advance(u64::MAX / 2).into_iter().find(|x| matches!(x.op, Op::Read(_))).expect("read done");
        assert!(!c.completed(CommandId(0)), "nobody waited for the write");
        assert!(c.completed(read.id));
        assert_eq!(c.pump(read.done_ns, &mut d, false), Progress::Waiting, "now waits for the flush");
        assert_eq!(d.pending(), 2);
    }

    #[test]
    fn background_batches_yield_after_waits_and_segments_but_not_before_their_first_command() {
        let mut d = device();
        let mut c = Chain::default();
        let bg = Priority::Background;
        let writes = vec![(bg, Op::Write(4096)); 4];
        c.push_batch(writes, Some(8192));
        // Two writes make a segment: the gate after them holds while FG work is in flight.
        assert_eq!(c.pump(7, &mut d, true), Progress::Held);
        assert_eq!((d.pending(), c.held_since()), (2, Some(7)));
        assert_eq!(c.pump(8, &mut d, false), Progress::Held, "held until released");
        c.release();
        assert_eq!(c.pump(9, &mut d, false), Progress::Done);
        assert_eq!(d.pending(), 4);
    }
}
