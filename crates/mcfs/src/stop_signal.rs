//! A flag background threads sleep on: `sleep` returns early, with `true`,
//! once `stop` has been called, so shutdown never waits out a long interval.

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

#[derive(Default)]
pub struct StopSignal {
    stopped: Mutex<bool>,
    wake: Condvar,
}

impl StopSignal {
    pub fn stop(&self) {
        *self.stopped.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.wake.notify_all();
    }

    /// Sleeps up to `d`; true if stopped (before or during the sleep).
    pub fn sleep(&self, d: Duration) -> bool {
        let deadline = Instant::now().checked_add(d);
        let mut stopped = self.stopped.lock().unwrap_or_else(|p| p.into_inner());
        while !*stopped {
            let left = match deadline {
                Some(t) => t.saturating_duration_since(Instant::now()),
                None => Duration::from_secs(3600),
            };
            if left.is_zero() {
                return false;
            }
            stopped = self.wake.wait_timeout(stopped, left).unwrap_or_else(|p| p.into_inner()).0;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn stop_wakes_a_long_sleeper() {
        let s = Arc::new(StopSignal::default());
        let sleeper = {
            let s = s.clone();
            std::thread::spawn(move || s.sleep(Duration::MAX))
        };
        s.stop();
        assert!(sleeper.join().unwrap());
        assert!(s.sleep(Duration::ZERO), "stays stopped");
    }

    #[test]
    fn unstopped_sleep_returns_false() {
        assert!(!StopSignal::default().sleep(Duration::from_millis(1)));
    }
}
