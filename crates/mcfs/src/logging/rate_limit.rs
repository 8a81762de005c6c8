//! Per-call-site rate limit of log records: a place in the code that logs
//! at INFO or above gets `BURST` records per `WINDOW`; the rest are counted,
//! not written, and once its window has passed one line says how many were
//! held back. Without it, anything an app can make the daemon log per
//! request (fuser's warning for an unimplemented operation, a failed reply)
//! grows the log as fast as the app asks. DEBUG and TRACE, asked for by
//! hand when diagnosing, are not limited (the log's size cap still holds).
//!
//! A call site is its target, file and line — for records of the `log`
//! crate (fuser's) the original ones, not the bridge's shared call site.
//! Invariant: per call site and window, at most `BURST` records pass, and
//! every held-back record is counted in exactly one summary line.

use super::sink::LogSink;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tracing::{Event, Level, Metadata, Subscriber};
use tracing_log::NormalizeEvent;
use tracing_subscriber::layer::{Context, Layer};

/// Records one call site may log per window.
pub const BURST: u32 = 5;
pub const WINDOW: Duration = Duration::from_secs(60);

/// The counts of one call site in its current window.
struct Site {
    /// "target (file:line)", for the summary line.
    name: String,
    window_start: Instant,
    passed: u32,
    held_back: u64,
}

/// The decisions, on a clock the caller passes in.
#[derive(Default)]
pub struct Limiter {
    sites: HashMap<u64, Site>,
}

impl Limiter {
    /// Whether a record of the call site `key` (named `name`) passes at
    /// `now`; also returns the summaries now due, to be written first.
    pub fn admit(&mut self, key: u64, name: impl FnOnce() -> String, now: Instant) -> (bool, Vec<String>) {
        let mut due = Vec::new();
        let site =
            self.sites.entry(key).or_insert_with(|| Site { name: name(), window_start: now, passed: 0, held_back: 0 });
        if now.saturating_duration_since(site.window_start) >= WINDOW {
            due.extend(close_window(site));
            site.window_start = now;
        }
        if site.passed >= BURST {
            site.held_back += 1;
            return (false, due);
        }
        site.passed += 1;
        // Summaries of sites that went quiet go out before this record.
        for other in self.sites.values_mut() {
            if other.held_back > 0 && now.saturating_duration_since(other.window_start) >= WINDOW {
                due.extend(close_window(other));
                other.window_start = now;
            }
        }
        (true, due)
    }

    /// Summaries of every site that held records back, windows over or not (at exit).
    pub fn flush(&mut self) -> Vec<String> {
        self.sites.values_mut().filter_map(close_window).collect()
    }
}

/// Ends a site's window: its summary line if it held records back.
fn close_window(site: &mut Site) -> Option<String> {
    let held_back = std::mem::take(&mut site.held_back);
    site.passed = 0;
    (held_back > 0).then(|| {
        format!(
            "{held_back} more records from {} were not logged (at most {BURST} per {} s from one place)",
            site.name,
            WINDOW.as_secs()
        )
    })
}

/// The `Layer` that applies a `Limiter` to every event at INFO and above,
/// writing the summary lines straight to the sink (an event cannot emit
/// another one from inside the dispatcher). Clones share one limiter.
#[derive(Clone)]
pub struct RateLimit {
    limiter: Arc<Mutex<Limiter>>,
    sink: Arc<LogSink>,
}

impl RateLimit {
    pub fn new(sink: Arc<LogSink>) -> RateLimit {
        RateLimit { limiter: Arc::default(), sink }
    }

    /// Writes the summaries still pending (the daemon calls it at exit).
    pub fn flush(&self) {
        let due = self.limiter.lock().unwrap_or_else(|p| p.into_inner()).flush();
        self.write_summaries(&due);
    }

    fn write_summaries(&self, due: &[String]) {
        for summary in due {
            self.sink.write_line(Level::WARN, "mcfs::logging", summary);
        }
    }
}

impl<S: Subscriber> Layer<S> for RateLimit {
    fn event_enabled(&self, event: &Event<'_>, _ctx: Context<'_, S>) -> bool {
        if *event.metadata().level() > Level::INFO {
            return true;
        }
        let normalized = event.normalized_metadata();
        let meta = normalized.as_ref().unwrap_or(event.metadata());
        let (passes, due) = {
            let mut limiter = self.limiter.lock().unwrap_or_else(|p| p.into_inner());
            limiter.admit(site_key(meta), || site_name(meta), Instant::now())
        };
        self.write_summaries(&due);
        if !passes {
            self.sink.count_suppressed(1);
        }
        passes
    }
}

fn site_key(meta: &Metadata) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (meta.target(), meta.file(), meta.line()).hash(&mut hasher);
    hasher.finish()
}

fn site_name(meta: &Metadata) -> String {
    format!("{} ({}:{})", meta.target(), meta.file().unwrap_or("?"), meta.line().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name() -> String {
        "fuser (src/lib.rs:925)".to_string()
    }

    #[test]
    fn a_burst_per_window_then_one_summary() {
        let start = Instant::now();
        let mut limiter = Limiter::default();
        let mut passed = 0;
        for i in 0..10_000u64 {
            let (passes, due) = limiter.admit(1, name, start + Duration::from_millis(i));
            assert!(due.is_empty(), "record {i}: nothing is due inside the window");
            passed += u32::from(passes);
        }
        assert_eq!(passed, BURST);
        let (passes, due) = limiter.admit(1, name, start + WINDOW);
        assert!(passes, "a new window");
        assert_eq!(
            due,
            [format!(
                "{} more records from fuser (src/lib.rs:925) were not logged (at most 5 per 60 s from one place)",
                10_000 - BURST
            )]
        );
        assert!(limiter.flush().is_empty(), "every held-back record is summarized once");
    }

    #[test]
    fn sites_are_limited_apart_and_quiet_sites_are_summarized_by_the_next_record() {
        let start = Instant::now();
        let mut limiter = Limiter::default();
        for i in 0..BURST + 3 {
            limiter.admit(1, name, start + Duration::from_secs(u64::from(i)));
        }
        let (passes, due) = limiter.admit(2, || "other (a.rs:1)".into(), start + Duration::from_secs(10));
        assert!(passes && due.is_empty(), "site 2 has its own budget; site 1's window is still open");
        let (passes, due) = limiter.admit(2, || unreachable!(), start + WINDOW + Duration::from_secs(1));
        assert!(passes);
        assert_eq!(due.len(), 1, "site 1 went quiet; its summary comes with site 2's record: {due:?}");
        assert!(due[0].starts_with("3 more records from fuser"), "{due:?}");
    }

    #[test]
    fn flush_reports_open_windows() {
        let start = Instant::now();
        let mut limiter = Limiter::default();
        for _ in 0..BURST + 1 {
            limiter.admit(7, name, start);
        }
        assert_eq!(limiter.flush().len(), 1);
        assert!(limiter.flush().is_empty());
    }
}
