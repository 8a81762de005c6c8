//! The engine's background thread: runs one policy step (`tick`), then
//! sleeps until the engine has work (a transaction closed) or the interval
//! it asked for has passed. Stopping raises a flag and wakes the sleeper;
//! the engine's wake-up is a latched flag, so a wake between the check and
//! the sleep is not lost. A step in progress is finished, never cut.
//!
//! Its work is background work (checkpoints), so with `fasttrack.dispatch`
//! the thread runs at the low I/O priority of background I/O (FastTrack §4.4).

use mcfs_core::ioprio::{self, IoPriority};
use mcfs_core::Engine;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// What the ticker drives; the engine in the daemon, a fake in tests.
pub trait Background: Send + Sync + 'static {
    fn tick(&self);
    fn next_tick_in(&self) -> Duration;
    /// Sleeps up to `max`, less if woken (also by a wake that came earlier).
    fn wait_for_work(&self, max: Duration);
    fn wake(&self);
}

impl Background for Engine {
    fn tick(&self) {
        Engine::tick(self)
    }
    fn next_tick_in(&self) -> Duration {
        Engine::next_tick_in(self)
    }
    fn wait_for_work(&self, max: Duration) {
        Engine::wait_for_work(self, max)
    }
    fn wake(&self) {
        self.wake_background()
    }
}

pub struct Ticker {
    stopped: Arc<AtomicBool>,
    target: Arc<dyn Background>,
    thread: JoinHandle<()>,
}

/// Starts the thread; it runs at `io_priority` if one is given.
pub fn spawn(target: Arc<dyn Background>, io_priority: Option<IoPriority>) -> std::io::Result<Ticker> {
    let stopped = Arc::new(AtomicBool::new(false));
    let thread = {
        let (stopped, target) = (stopped.clone(), target.clone());
        std::thread::Builder::new().name("mcfs-tick".into()).spawn(move || {
            if let Some(priority) = io_priority {
                if let Err(e) = ioprio::set_current_thread(priority) {
                    tracing::warn!("checkpoints keep the default I/O priority: ioprio_set failed: {e}");
                }
            }
            while !stopped.load(Ordering::SeqCst) {
                target.tick();
                if stopped.load(Ordering::SeqCst) {
                    break;
                }
                target.wait_for_work(target.next_tick_in());
            }
        })?
    };
    Ok(Ticker { stopped, target, thread })
}

impl Ticker {
    /// Stops the thread and waits for it (after the step it may be running).
    pub fn stop(self) {
        self.stopped.store(true, Ordering::SeqCst);
        self.target.wake();
        let _ = self.thread.join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Condvar, Mutex};

    /// Counts ticks and notes the ticking thread's I/O priority; asks for
    /// day-long sleeps so only wakes move it on.
    #[derive(Default)]
    struct Fake {
        ticks: Mutex<u32>,
        priority: Mutex<Option<IoPriority>>,
        ticked: Condvar,
        woken: Mutex<bool>,
        wake_cv: Condvar,
    }

    impl Background for Fake {
        fn tick(&self) {
            // SAFETY: gettid has no preconditions.
            let tid = unsafe { libc::gettid() } as u32;
            *self.priority.lock().unwrap() = ioprio::of_thread(tid).ok();
            *self.ticks.lock().unwrap() += 1;
            self.ticked.notify_all();
        }
        fn next_tick_in(&self) -> Duration {
            Duration::from_secs(24 * 3600)
        }
        fn wait_for_work(&self, max: Duration) {
            let woken = self.woken.lock().unwrap();
            let mut woken = self.wake_cv.wait_timeout_while(woken, max, |w| !*w).unwrap().0;
            *woken = false;
        }
        fn wake(&self) {
            *self.woken.lock().unwrap() = true;
            self.wake_cv.notify_all();
        }
    }

    impl Fake {
        fn wait_ticks(&self, n: u32) {
            let ticks = self.ticks.lock().unwrap();
            drop(self.ticked.wait_while(ticks, |t| *t < n).unwrap());
        }
    }

    #[test]
    fn ticks_at_once_then_on_each_wake_and_stops_despite_long_pauses() {
        let fake = Arc::new(Fake::default());
        let ticker = spawn(fake.clone(), None).unwrap();
        fake.wait_ticks(1);
        fake.wake();
        fake.wait_ticks(2);
        ticker.stop();
        assert_eq!(*fake.ticks.lock().unwrap(), 2, "no tick after stop");
    }

    #[test]
    fn the_thread_runs_at_the_priority_it_was_given() {
        let background = IoPriority::for_class(mcfs_core::IoClass::Background);
        let fake = Arc::new(Fake::default());
        let ticker = spawn(fake.clone(), Some(background)).unwrap();
        fake.wait_ticks(1);
        ticker.stop();
        assert_eq!(*fake.priority.lock().unwrap(), Some(background));
    }
}
