//! The progress bar of a long replay: bytes of the trace file consumed, on stderr.
//!
//! Invariant: nothing is drawn unless the caller wants a bar, stderr is a terminal and the run has lasted
//! a second, so short runs, pipes, tests and the runs of a sweep see no bar; the bar is cleared before the
//! results are printed.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// A run shorter than this shows no bar.
const SHOW_AFTER: Duration = Duration::from_secs(1);
/// The clock is looked at once per this many updates (updates come once per event).
const CHECK_EVERY: u32 = 1024;

pub struct Progress {
    total_bytes: u64,
    started: Instant,
    wanted: bool,
    updates: u32,
    bar: Option<ProgressBar>,
}

impl Progress {
    pub fn new(total_bytes: u64, wanted: bool) -> Progress {
        Progress {
            total_bytes,
            started: Instant::now(),
            wanted: wanted && std::io::stderr().is_terminal(),
            updates: 0,
            bar: None,
        }
    }

    /// `consumed` bytes of the trace have been read.
    pub fn update(&mut self, consumed: u64) {
        self.updates = self.updates.wrapping_add(1);
        if !self.wanted || !self.updates.is_multiple_of(CHECK_EVERY) {
            return;
        }
        if self.bar.is_none() && self.started.elapsed() >= SHOW_AFTER {
            let bar = ProgressBar::hidden().with_position(consumed);
            bar.set_length(self.total_bytes);
            if let Ok(style) = ProgressStyle::with_template(
                "replaying {wide_bar} {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}",
            ) {
                bar.set_style(style);
            }
            // The bar starts a second into the run: rate and ETA count from here, then it is shown.
            bar.reset_eta();
            bar.set_draw_target(ProgressDrawTarget::stderr());
            self.bar = Some(bar);
        }
        if let Some(bar) = &self.bar {
            bar.set_position(consumed);
        }
    }

    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}
