//! Time for the engine. The engine never reads the system clock itself: the
//! mount gives it a `SystemClock`, tests and the simulator a `ManualClock`,
//! so the same operations at the same times make the same decisions.

use parking_lot::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub trait Clock: Send + Sync {
    /// Wall-clock time, used for the age of VCTs and for durations.
    fn now(&self) -> SystemTime;

    /// The time stamped on files (mtime, ctime, atime, birth): by default
    /// `now`.
    fn file_time(&self) -> SystemTime {
        self.now()
    }

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

    /// The kernel's clock tick (`CLOCK_REALTIME_COARSE`), which the kernel
    /// stamps files with (ext4's times, and the times the writeback cache
    /// of sync-point mode keeps): a file created and written within one
    /// tick keeps one time, so the kernel has no new time to send at its
    /// close (a SETATTR round trip less per file).
    fn file_time(&self) -> SystemTime {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: clock_gettime fills the timespec it is given.
        if unsafe { libc::clock_gettime(libc::CLOCK_REALTIME_COARSE, &mut ts) } != 0 {
            return SystemTime::now();
        }
        match (u64::try_from(ts.tv_sec), u32::try_from(ts.tv_nsec)) {
            (Ok(secs), Ok(nanos)) => UNIX_EPOCH + Duration::new(secs, nanos),
            _ => SystemTime::now(),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_times_are_the_kernels_tick_behind_the_fine_clock() {
        let clock = SystemClock;
        let before = SystemTime::now();
        let stamped = clock.file_time();
        let after = SystemTime::now();
        assert!(stamped <= after, "never ahead of the fine clock");
        // The coarse clock lags by at most a tick (1–10 ms); a second is
        // a bound no scheduler delay here reaches.
        assert!(before.duration_since(stamped).unwrap_or_default() < Duration::from_secs(1), "{stamped:?}");
    }

    #[test]
    fn a_manual_clock_stamps_files_with_its_own_time() {
        let clock = ManualClock::new();
        clock.advance(Duration::from_millis(3));
        assert_eq!(clock.file_time(), clock.now());
    }
}
