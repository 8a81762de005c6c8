//! One trace file through the engine: streams the trace into a `Replayer` (with the progress bar when
//! asked and stderr is a terminal), finishes the replay and checks how much of it was skipped (`skips`).
//! `mcfs sim --trace` and every run of a sweep replay through here.

use super::{progress, skips};
use crate::commands::trace::files::TraceInput;
use mcfs_sim::replay::{Metrics, ReplayOptions, Replayer};
use std::path::Path;

/// A finished replay: its metrics and, when it skipped more than it may, what went wrong.
pub struct Replayed {
    pub metrics: Metrics,
    pub skip_problem: Option<String>,
}

/// Replays `trace` under `options`; errors name the trace (or say the replay could not start).
pub fn replay(trace: &Path, options: ReplayOptions, show_progress: bool) -> Result<Replayed, String> {
    let mut input = TraceInput::open(trace)?;
    let mut replayer = Replayer::new(options).map_err(|e| format!("cannot start the replay: {e}"))?;
    let mut progress = progress::Progress::new(input.size(), show_progress);
    let mut skips = skips::SkipCheck::default();
    while let Some(event) = input.next() {
        let event = match event {
            Ok(event) => event,
            Err(e) => {
                progress.finish();
                return Err(e);
            }
        };
        skips.observe(&event);
        replayer.push(event);
        progress.update(input.consumed());
    }
    progress.finish();
    let metrics = replayer.finish().map_err(|e| format!("{}: {e}", trace.display()))?;
    let skip_problem = skips.problem(&metrics);
    Ok(Replayed { metrics, skip_problem })
}
