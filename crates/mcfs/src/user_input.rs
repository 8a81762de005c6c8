//! Where user input goes on a live mount: to the engine's idle predictor
//! (`Engine::user_input`, once per operation, as the operation starts) and,
//! when the mount is recorded, into the trace (once per operation, as it
//! ends, so that a drag is written with its length). Input comes from
//! `mcfs ctl MOUNTPOINT input` (one tap) and from input devices, whose
//! event bursts `input_devices` has already merged into operations
//! (MobiFS §6.1).

use crate::record::Recorder;
use mcfs_core::Engine;
use mcfs_sim::trace::InputKind;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// One user operation: a tap, or a drag (or other burst) merged into one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InputOperation {
    pub start: SystemTime,
    pub duration: Duration,
    /// Input reports merged into it.
    pub reports: u32,
}

impl InputOperation {
    pub fn kind(&self) -> InputKind {
        if self.reports > 1 {
            InputKind::Drag
        } else {
            InputKind::Tap
        }
    }
}

/// The two moments of an operation that matter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gesture {
    Started,
    Ended(InputOperation),
}

pub struct UserInput {
    engine: Arc<Engine>,
    recorder: Option<Arc<Recorder>>,
}

impl UserInput {
    pub fn new(engine: Arc<Engine>, recorder: Option<Arc<Recorder>>) -> UserInput {
        UserInput { engine, recorder }
    }

    pub fn gesture(&self, gesture: Gesture) {
        match gesture {
            Gesture::Started => self.engine.user_input(),
            Gesture::Ended(operation) => {
                if let Some(recorder) = &self.recorder {
                    recorder.record_input(&operation);
                }
            }
        }
    }

    /// `mcfs ctl MOUNTPOINT input`: a tap, now.
    pub fn tap(&self) {
        let start = SystemTime::now();
        self.gesture(Gesture::Started);
        self.gesture(Gesture::Ended(InputOperation { start, duration: Duration::ZERO, reports: 1 }));
    }
}
