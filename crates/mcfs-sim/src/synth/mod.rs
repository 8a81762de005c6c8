//! Synthetic traces: app workloads generated from documented, seeded profiles drawn from the MobiFS paper
//! (docs/SYNTH.md names the figure or sentence behind each).
//!
//! A trace combines an app I/O profile (`io`: what the app writes and flushes) with a user profile
//! (`user`: when the user touches the screen). Part of the app's I/O follows the user's inputs — an input
//! starts a burst a little later — and part runs on the app's own timer, so idle-interval studies see the
//! correlation real apps have. One trace is one app, starting with its launch.
//!
//! Invariant: the events are a pure function of the spec and [`SYNTH_VERSION`] — the generator draws from
//! its own integer PRNG (`rng`), never from a library — and come out in time order. The user's inputs
//! depend only on the user profile and the seed, not on the I/O profile.

pub mod fasttrack;
mod files;
mod io;
mod rng;
mod sqlite;
mod suite;
mod timeline;
mod user;

pub use suite::{suite, SUITE_DURATION};

use std::collections::VecDeque;
use std::time::Duration;

use crate::trace::{EventKind, TraceEvent};
use rng::Rng;
use timeline::Timeline;
use user::UserInput;

/// Version of the generator: raised whenever the same spec would give different events.
pub const SYNTH_VERSION: u32 = 1;
/// Longest trace (a day: the start times of its bursts are planned up front).
pub const MAX_DURATION: Duration = Duration::from_secs(24 * 3600);
/// Longest app name: it becomes a directory name and part of a file name.
const MAX_APP_BYTES: usize = 200;

/// Sub-streams of the seed, one per purpose.
const USER_STREAM: u64 = 1;
const TRIGGER_STREAM: u64 = 2;
const IO_STREAM: u64 = 3;
const NS_PER_MS: u64 = 1_000_000;

/// What to generate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SynthSpec {
    /// App name (the trace's APP field and the directory `/data/data/<app>`), e.g. `com.twitter.android`.
    pub app: String,
    /// One of [`io_profile_names`].
    pub io_profile: String,
    /// One of [`user_profile_names`].
    pub user_profile: String,
    pub seed: u64,
    /// Inputs and bursts start within it; the burst running at the end finishes (usually within a second).
    pub duration: Duration,
}

/// Every profile name: the app I/O profiles, then the user profiles.
pub fn profile_names() -> Vec<&'static str> {
    io_profile_names().into_iter().chain(user_profile_names()).collect()
}

pub fn io_profile_names() -> Vec<&'static str> {
    io::IO_PROFILES.iter().map(|p| p.name).collect()
}

pub fn user_profile_names() -> Vec<&'static str> {
    user::USER_PROFILES.iter().map(|p| p.name).collect()
}

/// A one-line description of a profile, for listings.
pub fn profile_summary(name: &str) -> Option<&'static str> {
    io::io_profile(name).map(|p| p.summary).or_else(|| user::user_profile(name).map(|p| p.summary))
}

/// Generates the trace of `spec`, in time order: `launch` and `foreground` at time 0, the app's first-run
/// I/O, then inputs and bursts, and `background` at the end.
pub fn generate(spec: &SynthSpec) -> Result<Vec<TraceEvent>, String> {
    Ok(events(spec)?.collect())
}

/// The events of [`generate`], one at a time: memory stays bounded by one burst, however long the trace.
pub fn events(spec: &SynthSpec) -> Result<SynthEvents, String> {
    let io_profile = io::io_profile(&spec.io_profile).ok_or_else(|| {
        format!("unknown I/O profile '{}' (known: {})", spec.io_profile, io_profile_names().join(", "))
    })?;
    let user_profile = user::user_profile(&spec.user_profile).ok_or_else(|| {
        format!("unknown user profile '{}' (known: {})", spec.user_profile, user_profile_names().join(", "))
    })?;
    check_app(&spec.app)?;
    let duration_ns = check_duration(spec.duration)?;

    let seed = Rng::new(spec.seed);
    let inputs = user_profile.inputs(&mut seed.fork(USER_STREAM), duration_ns);
    let starts = burst_starts(io_profile, &inputs, duration_ns, &mut seed.fork(TRIGGER_STREAM));
    let mut tl = Timeline::new(&spec.app, pid_of(&spec.app), seed.fork(IO_STREAM));
    tl.mark(EventKind::Launch);
    tl.mark(EventKind::Foreground);
    let mut app_io = io::AppIo::new(io_profile, &spec.app);
    app_io.launch(&mut tl);
    let mut stream = SynthEvents {
        tl,
        app_io,
        inputs: inputs.into(),
        starts: starts.into(),
        duration_ns,
        ready: VecDeque::new(),
        done: false,
    };
    stream.take_from_timeline();
    Ok(stream)
}

/// A synthetic trace being generated: an iterator of its events in time order.
pub struct SynthEvents {
    tl: Timeline,
    app_io: io::AppIo,
    /// Inputs not yet handed out, in time order.
    inputs: VecDeque<UserInput>,
    /// Start times of the bursts still to generate, in order.
    starts: VecDeque<u64>,
    duration_ns: u64,
    /// Events generated and merged, waiting to be handed out.
    ready: VecDeque<TraceEvent>,
    done: bool,
}

impl SynthEvents {
    /// Moves the timeline's new events to `ready`, with the inputs that come before each of them. Every
    /// burst starts at or after the end of the one before, so what is ready is final.
    fn take_from_timeline(&mut self) {
        for event in self.tl.drain() {
            while let Some(input) = self.inputs.pop_front() {
                if input.start_ns > event.time_ns {
                    self.inputs.push_front(input);
                    break;
                }
                self.ready.push_back(self.input_event(&input));
            }
            self.ready.push_back(event);
        }
    }

    fn input_event(&self, input: &UserInput) -> TraceEvent {
        let kind = EventKind::Input { input: input.kind, duration_ns: input.duration_ns };
        self.tl.event(input.start_ns, kind)
    }

    /// Generates the next burst, or the end of the trace: the inputs left and `background`.
    fn generate_more(&mut self) {
        if let Some(start) = self.starts.pop_front() {
            self.tl.wait_until(start);
            self.app_io.burst(&mut self.tl);
            self.take_from_timeline();
            return;
        }
        while let Some(input) = self.inputs.pop_front() {
            self.ready.push_back(self.input_event(&input));
        }
        let end_ns = self.tl.now_ns().max(self.duration_ns);
        self.ready.push_back(self.tl.event(end_ns, EventKind::Background));
        self.done = true;
    }
}

impl Iterator for SynthEvents {
    type Item = TraceEvent;

    fn next(&mut self) -> Option<TraceEvent> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some(event);
            }
            if self.done {
                return None;
            }
            self.generate_more();
        }
    }
}

/// When bursts start: after the inputs that trigger one, and on the app's timer; sorted, within the trace.
fn burst_starts(profile: &io::IoProfile, inputs: &[UserInput], duration_ns: u64, rng: &mut Rng) -> Vec<u64> {
    let mut starts: Vec<u64> = Vec::new();
    for input in inputs {
        if rng.chance(profile.trigger_per_mille) {
            starts.push(input.end_ns().saturating_add(rng.uniform(&profile.trigger_delay_ms) * NS_PER_MS));
        }
    }
    if let Some(gap) = &profile.background_gap_ms {
        let mut at = rng.uniform(gap) * NS_PER_MS;
        while at < duration_ns {
            starts.push(at);
            at = at.saturating_add(rng.uniform(gap) * NS_PER_MS);
        }
    }
    starts.retain(|&t| t < duration_ns);
    starts.sort_unstable();
    starts
}

/// A stable pid per app (FNV-1a of its name), in the range Android gives app processes.
fn pid_of(app: &str) -> u32 {
    let hash = app.bytes().fold(0x811c_9dc5_u32, |h, b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193));
    2_000 + hash % 30_000
}

fn check_app(app: &str) -> Result<(), String> {
    if app.is_empty() || app == "." || app == ".." || app.contains(['/', '\0']) || app.len() > MAX_APP_BYTES {
        return Err(format!(
            "app name '{app}' cannot name a directory: it must be 1 to {MAX_APP_BYTES} bytes, \
             without '/' or NUL, and not '.' or '..'"
        ));
    }
    Ok(())
}

fn check_duration(duration: Duration) -> Result<u64, String> {
    if duration.is_zero() || duration > MAX_DURATION {
        return Err(format!(
            "duration {:?} is out of range: it must be above zero and at most {} s",
            duration,
            MAX_DURATION.as_secs()
        ));
    }
    // At most a day, so it fits.
    Ok(duration.as_nanos() as u64)
}
