//! The INFO line of a checkpoint, for the people who run mcfs: what
//! triggered it, which apps it committed, how many bytes and how long it
//! took, in one line. A busy app can make a checkpoint every few
//! milliseconds, so at most one such line is written per `EVERY` (a
//! minute): the checkpoints in between are counted and summed up in the next
//! line, or — when no checkpoint comes — by the next `tick` after the
//! minute, or at shutdown. The details of every checkpoint stay at DEBUG
//! (`checkpoint.rs`).
//!
//! Invariant: every checkpoint is in exactly one INFO line, as the subject
//! of the line or counted in it.

use crate::human;
use std::time::{Duration, Instant};

/// Shortest time between two INFO lines about checkpoints.
pub const EVERY: Duration = Duration::from_secs(60);

/// One committed checkpoint, in words.
pub struct Done {
    pub seq: u64,
    /// Why it ran, e.g. "policy", "for com.example.notes".
    pub trigger: String,
    /// Apps and the bytes of theirs it committed.
    pub apps: Vec<(String, u64)>,
    /// Bytes written to the backing store (journal and in place).
    pub bytes: u64,
    pub took: Duration,
}

/// Checkpoints not in a line yet.
#[derive(Default)]
struct Held {
    count: u64,
    bytes: u64,
    longest: Duration,
}

#[derive(Default)]
pub struct CheckpointLog {
    last_line: Option<Instant>,
    held: Held,
}

impl CheckpointLog {
    /// The line to log for `done` at `now`, or `None` when it is held back
    /// (counted in the next line).
    pub fn record(&mut self, done: &Done, now: Instant) -> Option<String> {
        if self.hold(done.bytes, done.took, now) {
            return None;
        }
        let mut line = describe(done);
        if let Some(more) = self.take_held(now) {
            line.push_str(&format!("; before it, {more}"));
        }
        Some(line)
    }

    /// Counts a checkpoint of `bytes` that took `took` into the next line,
    /// unless a line is due at `now` (false: then `record` it). Most are
    /// held, and need no words.
    pub fn hold(&mut self, bytes: u64, took: Duration, now: Instant) -> bool {
        if self.due(now) {
            return false;
        }
        let held = &mut self.held;
        (held.count, held.bytes, held.longest) = (held.count + 1, held.bytes + bytes, held.longest.max(took));
        true
    }

    /// The line about held-back checkpoints, if there are any and a line is
    /// due (`force`: at shutdown, due or not).
    pub fn flush(&mut self, now: Instant, force: bool) -> Option<String> {
        if self.held.count == 0 || !(force || self.due(now)) {
            return None;
        }
        self.take_held(now)
    }

    fn due(&self, now: Instant) -> bool {
        self.last_line.is_none_or(|last| now.saturating_duration_since(last) >= EVERY)
    }

    /// Words for the held checkpoints (emptied); the line is written at `now`.
    fn take_held(&mut self, now: Instant) -> Option<String> {
        let since = self.last_line.replace(now);
        let held = std::mem::take(&mut self.held);
        (held.count > 0).then(|| {
            let ago = since.map_or(String::new(), |t| format!(" since the line {} s ago", (now - t).as_secs()));
            format!(
                "{}{ago}: {} written to the backing store, the longest took {}",
                human::count(held.count as usize, "more checkpoint"),
                human::bytes(held.bytes),
                human::duration(held.longest)
            )
        })
    }
}

/// "checkpoint 12 (policy) committed 2 apps, com.example.notes (1.2 MiB) and
/// uid:10002 (4.0 KiB): 1.3 MiB written to the backing store in 186 ms"
fn describe(done: &Done) -> String {
    let mut apps: Vec<String> =
        done.apps.iter().map(|(name, bytes)| format!("{name} ({})", human::bytes(*bytes))).collect();
    let apps = match apps.pop() {
        Some(last) if apps.is_empty() => last,
        Some(last) => format!("{}, {} and {last}", human::count(done.apps.len(), "app"), apps.join(", ")),
        None => "nothing".to_string(),
    };
    format!(
        "checkpoint {} ({}) committed {apps}: {} written to the backing store in {}",
        done.seq,
        done.trigger,
        human::bytes(done.bytes),
        human::duration(done.took)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn done(seq: u64) -> Done {
        Done {
            seq,
            trigger: "policy".into(),
            apps: vec![("com.example.notes".into(), 1_300_000), ("uid:10002".into(), 4096)],
            bytes: 1_400_000,
            took: Duration::from_millis(186),
        }
    }

    #[test]
    fn one_app_is_named_alone() {
        let one = Done { apps: vec![("uid:0".into(), 2)], bytes: 702, trigger: "requested".into(), ..done(1) };
        assert_eq!(
            CheckpointLog::default().record(&one, Instant::now()).unwrap(),
            "checkpoint 1 (requested) committed uid:0 (2 B): 702 B written to the backing store in 186 ms"
        );
    }

    #[test]
    fn a_checkpoint_is_one_line_in_words() {
        let mut log = CheckpointLog::default();
        let line = log.record(&done(12), Instant::now()).expect("the first checkpoint is logged");
        assert_eq!(
            line,
            "checkpoint 12 (policy) committed 2 apps, com.example.notes (1.2 MiB) and uid:10002 (4.0 KiB): \
             1.3 MiB written to the backing store in 186 ms"
        );
    }

    #[test]
    fn a_burst_makes_one_line_a_minute_and_counts_the_rest() {
        let start = Instant::now();
        let mut log = CheckpointLog::default();
        let mut lines = Vec::new();
        // A checkpoint every 5 ms for three minutes.
        for i in 0..36_000u64 {
            lines.extend(log.record(&done(i + 1), start + Duration::from_millis(5 * i)));
        }
        assert_eq!(lines.len(), 3, "{lines:#?}");
        assert!(lines[1].starts_with("checkpoint 12001 (policy) committed "), "{}", lines[1]);
        assert!(
            lines[1].ends_with(
                "; before it, 11999 more checkpoints since the line 60 s ago: \
                 15.6 GiB written to the backing store, the longest took 186 ms"
            ),
            "{}",
            lines[1]
        );
        let last = log.flush(start + Duration::from_secs(180), true).expect("the held ones at shutdown");
        assert!(last.starts_with("11999 more checkpoints since the line 60 s ago: "), "{last}");
        assert_eq!(log.flush(start + Duration::from_secs(500), true), None, "each counted once");
    }

    #[test]
    fn a_held_checkpoint_needs_no_words_and_is_counted_in_the_next_line() {
        let start = Instant::now();
        let mut log = CheckpointLog::default();
        assert!(!log.hold(1, Duration::ZERO, start), "the first checkpoint is a line of its own");
        log.record(&done(1), start).expect("first");
        assert!(log.hold(4096, Duration::from_millis(7), start + Duration::from_secs(1)));
        let line = log.flush(start + EVERY, false).expect("due");
        assert!(line.starts_with("1 more checkpoint since the line 60 s ago: 4.0 KiB written"), "{line}");
    }

    #[test]
    fn held_checkpoints_are_told_by_a_tick_once_the_minute_is_over() {
        let start = Instant::now();
        let mut log = CheckpointLog::default();
        log.record(&done(1), start).expect("first");
        assert_eq!(log.record(&done(2), start + Duration::from_secs(1)), None);
        assert_eq!(log.flush(start + Duration::from_secs(30), false), None, "not due yet");
        let line = log.flush(start + EVERY, false).expect("due");
        assert!(line.starts_with("1 more checkpoint since the line 60 s ago: "), "{line}");
        assert_eq!(log.record(&done(3), start + EVERY + Duration::from_secs(1)), None, "a line was just written");
    }
}
