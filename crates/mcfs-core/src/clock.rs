//! Time for the engine. The engine never reads the system clock itself: the
//! mount gives it a `SystemClock`, tests and the simulator a `ManualClock`,
//! so the same operations at the same times make the same decisions.

use std::sync::atomic::{AtomicU64, Ordering};
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

/// Whether `age` has passed from `since` to `now` (`now - since >= age`,
/// a `now` before `since` counting as no time): an addition and a
/// comparison, where working the duration out (`duration_since`) costs
/// several times that, and the policies ask after every write.
pub fn aged(since: SystemTime, age: Duration, now: SystemTime) -> bool {
    age.is_zero() || since.checked_add(age).is_some_and(|due| now >= due)
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

/// A clock that moves only when told to. The time since its start is one
/// atomic word: the simulator reads the clock several times per replayed
/// event, and a lock around it cost more than the read.
pub struct ManualClock {
    start: SystemTime,
    elapsed_ns: AtomicU64,
}

impl ManualClock {
    /// Starts at a fixed instant so runs are reproducible.
    pub fn new() -> ManualClock {
        ManualClock::starting_at(UNIX_EPOCH + Duration::from_secs(1_700_000_000))
    }

    pub fn starting_at(t: SystemTime) -> ManualClock {
        ManualClock { start: t, elapsed_ns: AtomicU64::new(0) }
    }

    /// Moves the clock on by `d`. Panics past 584 years from its start
    /// (nanoseconds in 64 bits), as adding to a `SystemTime` does past its range.
    pub fn advance(&self, d: Duration) {
        let by = u64::try_from(d.as_nanos()).ok();
        let moved = self.elapsed_ns.fetch_update(Ordering::AcqRel, Ordering::Acquire, |ns| ns.checked_add(by?));
        moved.expect("a manual clock moved past 584 years from its start");
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        ManualClock::new()
    }
}

impl Clock for ManualClock {
    fn now(&self) -> SystemTime {
        self.start + Duration::from_nanos(self.elapsed_ns.load(Ordering::Acquire))
    }

    fn moves_by_itself(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_by_what_it_is_told_only() {
        let start = UNIX_EPOCH + Duration::from_secs(100);
        let clock = ManualClock::starting_at(start);
        assert_eq!(clock.now(), start);
        clock.advance(Duration::from_nanos(1));
        clock.advance(Duration::from_secs(2));
        assert_eq!(clock.now(), start + Duration::new(2, 1));
        assert_eq!(clock.now(), start + Duration::new(2, 1), "reading it moves nothing");
    }

    #[test]
    #[should_panic(expected = "584 years")]
    fn a_manual_clock_refuses_to_move_past_its_range() {
        let clock = ManualClock::new();
        clock.advance(Duration::from_nanos(u64::MAX));
        clock.advance(Duration::from_nanos(1));
    }

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
    fn aged_is_the_age_compared_and_no_time_before_the_start() {
        let t = UNIX_EPOCH + Duration::from_secs(100);
        let s = Duration::from_secs;
        let by_duration =
            |since: SystemTime, age: Duration, now: SystemTime| now.duration_since(since).unwrap_or_default() >= age;
        for (since, age, now) in [
            (t, s(5), t + s(4)),
            (t, s(5), t + s(5)),
            (t, s(5), t + s(6)),
            (t, s(5), t - s(1)),
            (t, s(0), t - s(1)),
            (t, s(0), t),
            (t, Duration::MAX, t + s(1)),
            (t, Duration::from_nanos(1), t + Duration::from_nanos(1)),
        ] {
            assert_eq!(aged(since, age, now), by_duration(since, age, now), "{since:?} {age:?} {now:?}");
        }
    }

    #[test]
    fn a_manual_clock_stamps_files_with_its_own_time() {
        let clock = ManualClock::new();
        clock.advance(Duration::from_millis(3));
        assert_eq!(clock.file_time(), clock.now());
    }
}
