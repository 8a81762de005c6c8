//! The engine's background thread in virtual time: moving a `ManualClock`
//! forward while running `tick` at every deadline `next_tick_in` names on
//! the way — what the mount's background thread does in real time. The
//! simulator's replay and a mount started with a virtual clock both step
//! time through this one function, so they make the same checkpoint
//! decisions for the same operations.
//!
//! Invariant: the clock only moves forward, and every tick runs at a time
//! the engine asked for (or, across a gap with nothing to do, on the same
//! grid right before the target).

use crate::clock::ManualClock;
use crate::engine::Engine;
use std::time::Duration;

/// Moves `clock` forward by `by`, calling `tick` (which must run
/// `engine.tick()`, and may measure around it) at each deadline up to and
/// including the target. Returns the number of ticks run.
pub fn advance(engine: &Engine, clock: &ManualClock, by: Duration, mut tick: impl FnMut()) -> u64 {
    let target = nanos(by);
    let mut now = 0u64;
    let mut ticks = 0;
    let mut zero_waits = 0;
    loop {
        let wait = nanos(engine.next_tick_in());
        // A tick with nothing to wait for clears the work that made the wait
        // zero; a second zero in a row means it could not, and waiting for
        // the target keeps the caller from spinning.
        zero_waits = if wait == 0 { zero_waits + 1 } else { 0 };
        let mut deadline = now.saturating_add(wait);
        if deadline > target || zero_waits > 1 {
            break;
        }
        if wait > 0 && target - now > wait.saturating_mul(2) && engine.is_quiet() {
            // The ticks until the target would find nothing to do: run only
            // the last one (on the same grid), so a long gap costs two ticks
            // and policies still see one right before the target.
            deadline = target - (target - now) % wait;
        }
        clock.advance(Duration::from_nanos(deadline - now));
        now = deadline;
        tick();
        ticks += 1;
    }
    clock.advance(Duration::from_nanos(target - now));
    ticks
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
