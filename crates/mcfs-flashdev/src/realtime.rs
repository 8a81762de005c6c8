//! The device in real time: drives the pure virtual-time `Scheduler` from a real clock. A request
//! thread calls `serve`, which submits one command at the current clock reading and blocks until
//! the scheduler has completed it; one timer thread advances the scheduler whenever its next
//! completion is due and wakes the requesters whose commands finished.
//!
//! Invariants: the scheduler sees non-decreasing times (it is only touched under the lock, with the
//! clock read under the same lock); every submitted command is handed to exactly the thread that
//! submitted it; the timer thread runs until stop was asked *and* no command is pending, so no
//! requester is left waiting. The model itself is untouched: virtual ns = clock ns.
//!
//! A requester whose command waits as a background one asks every `RECLASS_EVERY` whether its issuer
//! is foreground now, and if so promotes the command (`Scheduler::promote`): that is how an FG request
//! waiting for a BG thread's commit (which mcfs then raises to FG priority) stops waiting behind BG
//! commands at the device too. A real device learns a command's class once, at submission; a real
//! kernel holds such a command in its I/O scheduler, where a raise does take effect.

use mcfs_device::scheduler::{CommandId, Completion, Op, Priority, SchedPolicy, Scheduler, SchedulerStats};
use mcfs_device::DeviceProfile;
use parking_lot::{Condvar, Mutex, MutexGuard};
use std::collections::HashMap;
use std::io;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often a command waiting as a background one re-reads its issuer's class.
const RECLASS_EVERY: Duration = Duration::from_millis(2);

/// Where the device reads the time, in ns since some fixed start.
pub trait Clock: Send + Sync + 'static {
    fn now_ns(&self) -> u64;
}

/// The monotonic clock, counted from its creation.
pub struct MonotonicClock {
    start: Instant,
}

impl MonotonicClock {
    pub fn new() -> MonotonicClock {
        MonotonicClock { start: Instant::now() }
    }
}

impl Default for MonotonicClock {
    fn default() -> MonotonicClock {
        MonotonicClock::new()
    }
}

impl Clock for MonotonicClock {
    fn now_ns(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

struct State {
    scheduler: Scheduler,
    /// Completed commands their requesters have not collected yet.
    finished: HashMap<CommandId, Completion>,
    stopping: bool,
}

struct Shared {
    state: Mutex<State>,
    /// The timer thread sleeps here until the next completion is due, a new command came in, or stop.
    timer: Condvar,
    /// Requesters sleep here until their command is in `finished`.
    done: Condvar,
    clock: Box<dyn Clock>,
}

impl Shared {
    /// Advances the scheduler to now and hands out what completed; returns the time used.
    fn advance(&self, state: &mut State) -> u64 {
        let now = self.clock.now_ns();
        let completed = state.scheduler.advance(now);
        if !completed.is_empty() {
            state.finished.extend(completed.into_iter().map(|c| (c.id, c)));
            self.done.notify_all();
        }
        now
    }
}

/// A flash device serving commands in real time.
pub struct RealTimeDevice {
    shared: Arc<Shared>,
    timer: Option<JoinHandle<()>>,
}

impl RealTimeDevice {
    /// A device of `profile` on the monotonic clock.
    pub fn start(profile: &DeviceProfile, policy: SchedPolicy) -> io::Result<RealTimeDevice> {
        RealTimeDevice::with_clock(Scheduler::new(profile, policy), MonotonicClock::new())
    }

    /// A device driving `scheduler` on `clock` (tests move a clock by hand, then `poke`).
    pub fn with_clock(scheduler: Scheduler, clock: impl Clock) -> io::Result<RealTimeDevice> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State { scheduler, finished: HashMap::new(), stopping: false }),
            timer: Condvar::new(),
            done: Condvar::new(),
            clock: Box::new(clock),
        });
        let timer = {
            let shared = shared.clone();
            std::thread::Builder::new().name("flashdev-timer".into()).spawn(move || run_timer(&shared))?
        };
        Ok(RealTimeDevice { shared, timer: Some(timer) })
    }

    /// Submits one command and blocks until the device has completed it; returns its completion.
    /// While it waits as a background command, `class_now` says its issuer's class now (see the
    /// module comment).
    pub fn serve(&self, priority: Priority, op: Op, class_now: impl Fn() -> Priority) -> Completion {
        let shared = &*self.shared;
        let mut state = shared.state.lock();
        let now = shared.advance(&mut state);
        let id = state.scheduler.submit(now, priority, op);
        // The new command may complete before what the timer sleeps for.
        shared.timer.notify_one();
        // On a device that ignores classes (FIFO) there is nothing to promote for.
        let reclasses = state.scheduler.serves_by_class();
        let mut class_read = Instant::now();
        loop {
            if let Some(completion) = state.finished.remove(&id) {
                return completion;
            }
            if !reclasses || !state.scheduler.waits_as_background(id) {
                shared.done.wait(&mut state);
                continue;
            }
            // Wakes at every completion: the class is read on a timer of its own.
            shared.done.wait_until(&mut state, class_read + RECLASS_EVERY);
            if class_read.elapsed() >= RECLASS_EVERY {
                class_read = Instant::now();
                if MutexGuard::unlocked(&mut state, &class_now) == Priority::Foreground {
                    // Changes what the device picks next, not when the command in service completes.
                    state.scheduler.promote(id);
                }
            }
        }
    }

    /// What the device served so far.
    pub fn stats(&self) -> SchedulerStats {
        self.shared.state.lock().scheduler.stats()
    }

    /// Commands submitted and not yet completed.
    pub fn pending(&self) -> usize {
        self.shared.state.lock().scheduler.pending()
    }

    /// Makes the timer look at the clock now (after a hand-moved clock jumped).
    pub fn poke(&self) {
        let _state = self.shared.state.lock();
        self.shared.timer.notify_one();
    }
}

impl Drop for RealTimeDevice {
    /// Lets the commands still in flight complete, then stops the timer.
    fn drop(&mut self) {
        self.shared.state.lock().stopping = true;
        self.shared.timer.notify_one();
        if let Some(timer) = self.timer.take() {
            if timer.join().is_err() {
                tracing::error!("the flashdev timer thread panicked");
            }
        }
    }
}

fn run_timer(shared: &Shared) {
    let mut state: MutexGuard<'_, State> = shared.state.lock();
    loop {
        let now = shared.advance(&mut state);
        if state.stopping && state.scheduler.pending() == 0 {
            return;
        }
        match state.scheduler.next_completion_ns() {
            Some(due) => {
                // `advance(now)` completed everything due by now, so `due > now`.
                shared.timer.wait_for(&mut state, Duration::from_nanos(due.saturating_sub(now)));
            }
            None => shared.timer.wait(&mut state),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// A clock the test moves by hand.
    #[derive(Clone, Default)]
    struct HandClock(Arc<AtomicU64>);

    impl Clock for HandClock {
        fn now_ns(&self) -> u64 {
            self.0.load(Ordering::SeqCst)
        }
    }

    /// A device that holds `queue_depth` commands and takes 1 ms per command.
    fn profile(queue_depth: u32) -> DeviceProfile {
        let mut p = DeviceProfile::builtin("ufs").expect("built-in ufs profile");
        p.queue_depth = queue_depth;
        (p.read_latency_ns, p.write_latency_ns, p.flush_latency_ns) = (1_000_000, 1_000_000, 1_000_000);
        p
    }

    /// What each request asks for, in submission order.
    const MIX: [(Priority, Op); 5] = [
        (Priority::Background, Op::Write(4096)),
        (Priority::Background, Op::Write(8192)),
        (Priority::Background, Op::Read(4096)),
        (Priority::Foreground, Op::Write(4096)),
        (Priority::Foreground, Op::Read(4096)),
    ];

    /// Submits MIX from one thread per request, in order (each waits until the previous one is
    /// pending), with the hand clock standing still; then moves the clock past the end and collects
    /// what each thread got. Returns the completions in the order of their `done_ns`.
    fn serve_mix_in_real_time(policy: SchedPolicy) -> Vec<Completion> {
        let clock = HandClock::default();
        let scheduler = Scheduler::new(&profile(8), policy);
        let device = Arc::new(RealTimeDevice::with_clock(scheduler, clock.clone()).expect("start"));
        let mut threads = Vec::new();
        for (n, (priority, op)) in MIX.into_iter().enumerate() {
            let d = device.clone();
            threads.push(std::thread::spawn(move || d.serve(priority, op, || priority)));
            while device.pending() < n + 1 {
                std::thread::yield_now();
            }
        }
        clock.0.store(1_000_000_000, Ordering::SeqCst);
        device.poke();
        let mut got: Vec<Completion> = threads.into_iter().map(|t| t.join().expect("request thread")).collect();
        for (c, (priority, op)) in got.iter().zip(MIX) {
            assert_eq!((c.priority, c.op), (priority, op), "each thread gets its own command back");
        }
        assert_eq!(device.pending(), 0);
        got.sort_by_key(|c| c.done_ns);
        got
    }

    /// The same submissions to the pure scheduler, at the same instant: its completion order.
    fn pure_order(policy: SchedPolicy) -> Vec<Completion> {
        let mut s = Scheduler::new(&profile(8), policy);
        for (priority, op) in MIX {
            s.submit(0, priority, op);
        }
        s.advance(1_000_000_000)
    }

    fn ops(completions: &[Completion]) -> Vec<(Priority, Op)> {
        completions.iter().map(|c| (c.priority, c.op)).collect()
    }

    #[test]
    fn priority_policy_delivers_in_the_schedulers_order() {
        let got = serve_mix_in_real_time(SchedPolicy::Priority);
        assert_eq!(got, pure_order(SchedPolicy::Priority));
        // The first command was in service before the others arrived; then §4.5's order.
        let expected = [MIX[0], MIX[4], MIX[3], MIX[2], MIX[1]];
        assert_eq!(ops(&got), expected);
    }

    #[test]
    fn fifo_policy_delivers_in_submission_order() {
        let got = serve_mix_in_real_time(SchedPolicy::Fifo);
        assert_eq!(got, pure_order(SchedPolicy::Fifo));
        assert_eq!(ops(&got), MIX);
    }

    #[test]
    fn a_waiting_command_whose_issuer_turns_foreground_is_promoted() {
        let clock = HandClock::default();
        let device = Arc::new(
            RealTimeDevice::with_clock(Scheduler::new(&profile(8), SchedPolicy::Priority), clock.clone())
                .expect("start"),
        );
        let raised = Arc::new(std::sync::atomic::AtomicBool::new(false));
        // In service first, then a BG read, then the BG write whose issuer will be raised.
        let mut threads = Vec::new();
        for (n, op) in [Op::Read(4096), Op::Read(4096), Op::Write(4096)].into_iter().enumerate() {
            let (d, raised) = (device.clone(), raised.clone());
            let class_now = move || {
                if n == 2 && raised.load(Ordering::SeqCst) {
                    Priority::Foreground
                } else {
                    Priority::Background
                }
            };
            threads.push(std::thread::spawn(move || d.serve(Priority::Background, op, class_now)));
            while device.pending() < n + 1 {
                std::thread::yield_now();
            }
        }
        raised.store(true, Ordering::SeqCst);
        let deadline = Instant::now() + Duration::from_secs(20);
        while device.stats().promoted == 0 {
            assert!(Instant::now() < deadline, "the raised issuer's command was never promoted");
            std::thread::sleep(RECLASS_EVERY);
        }
        clock.0.store(1_000_000_000, Ordering::SeqCst);
        device.poke();
        let got: Vec<Completion> = threads.into_iter().map(|t| t.join().expect("request thread")).collect();
        assert!(got[2].done_ns < got[1].done_ns, "the promoted write went before the BG read: {got:?}");
        assert_eq!(got[2].priority, Priority::Foreground);
    }

    /// Many threads on the monotonic clock: every request completes, once, to its own thread, and the
    /// stats count each one in its class.
    #[test]
    fn concurrent_requests_on_the_real_clock_all_complete() {
        let device = Arc::new(RealTimeDevice::start(&profile_fast(), SchedPolicy::Priority).expect("start"));
        let (threads, per_thread) = (8usize, 25usize);
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let device = device.clone();
                std::thread::spawn(move || {
                    let priority = if t % 2 == 0 { Priority::Foreground } else { Priority::Background };
                    (0..per_thread)
                        .map(|i| {
                            let op = [Op::Read(512), Op::Write(1024), Op::Flush][i % 3];
                            let c = device.serve(priority, op, || priority);
                            assert_eq!((c.priority, c.op), (priority, op));
                            assert!(c.submitted_ns <= c.started_ns && c.started_ns <= c.done_ns, "{c:?}");
                            c.id
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut ids: Vec<CommandId> = handles.into_iter().flat_map(|h| h.join().expect("thread")).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), threads * per_thread, "no command delivered twice");
        let stats = device.stats();
        let count = |c: &mcfs_device::scheduler::ClassStats| c.read.commands + c.write.commands + c.flush.commands;
        assert_eq!(count(&stats.foreground), (threads / 2 * per_thread) as u64);
        assert_eq!(count(&stats.background), (threads / 2 * per_thread) as u64);
        assert_eq!(device.pending(), 0);
    }

    /// Microsecond commands, so the real-clock test is quick.
    fn profile_fast() -> DeviceProfile {
        let mut p = profile(4);
        (p.read_latency_ns, p.write_latency_ns, p.flush_latency_ns) = (1_000, 1_000, 1_000);
        p
    }
}
