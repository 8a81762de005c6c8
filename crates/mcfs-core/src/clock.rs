//! Time for the engine. The engine never reads the system clock itself: the
//! mount gives it a `SystemClock`, tests and the simulator a `ManualClock`,
//! so the same operations at the same times make the same decisions.

use parking_lot::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub trait Clock: Send + Sync {
    /// Wall-clock time, used for file times and for the age of VCTs.
    fn now(&self) -> SystemTime;

    /// Whether time passes while the engine waits. A wait that only the
    /// passing of time ends (the dispatcher's anticipation) is skipped on a
    /// clock that moves only between calls, as the simulator's does.
    fn moves_by_itself(&self) -> bool {
        true
    }
}

/// The real clock.
#[derive(Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// A clock that moves only when told to.
pub struct ManualClock {
    now: Mutex<SystemTime>,
}

impl ManualClock {
    /// Starts at a fixed instant so runs are reproducible.
    pub fn new() -> ManualClock {
        ManualClock::starting_at(UNIX_EPOCH + Duration::from_secs(1_700_000_000))
    }

    pub fn starting_at(t: SystemTime) -> ManualClock {
        ManualClock { now: Mutex::new(t) }
    }

    pub fn advance(&self, d: Duration) {
        *self.now.lock() += d;
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        ManualClock::new()
    }
}

impl Clock for ManualClock {
    fn now(&self) -> SystemTime {
        *self.now.lock()
    }

    fn moves_by_itself(&self) -> bool {
        false
    }
}
