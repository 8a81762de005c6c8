//! `DeviceTap`: the backing store of a FastTrack scenario. The files live in a `MemBackend`; every request
//! a backend call makes (`MeteredStore`'s mapping, as under `SimBackend`) becomes a device command, tagged
//! with the class of the work that made it, and is set aside for the event loop, which knows when the
//! issuer may send it (after the reads and flushes it waits for) and hands it to the device scheduler then.
//!
//! Tag: `Foreground` when the engine tags I/O (`fasttrack.dispatch`, FastTrack's FG flag) and the work
//! running now (`mcfs_core::dispatch::current`) is a foreground request; everything else is `Background`,
//! system services included (their I/O priority, best-effort level 4, is not a foreground one: `ioprio`).
//! Invariant: `take` returns the commands in the order the engine issued them.

use crate::device::{MeteredStore, RequestSink};
use mcfs_core::{Clock, IoClass, MemBackend};
use mcfs_device::scheduler::{Op, Priority};
use mcfs_device::Request;
use parking_lot::Mutex;
use std::sync::Arc;

/// The scenario's store, its requests tagged and set aside.
pub type DeviceTap = MeteredStore<MemBackend, TaggedCommands>;

/// The commands issued and not yet taken, with their class.
pub struct TaggedCommands {
    tags_foreground: bool,
    issued: Mutex<Vec<(Priority, Op)>>,
}

impl RequestSink for TaggedCommands {
    fn issue(&self, request: Request) {
        let foreground = mcfs_core::dispatch::current().is_some_and(|w| w.class == IoClass::Foreground);
        let priority = if self.tags_foreground && foreground { Priority::Foreground } else { Priority::Background };
        self.issued.lock().push((priority, Op::from(request)));
    }
}

impl DeviceTap {
    /// `store` under the engine; `tags_foreground` is `fasttrack.dispatch`.
    pub fn new(store: MemBackend, clock: Arc<dyn Clock>, tags_foreground: bool) -> DeviceTap {
        MeteredStore::with_sink(store, clock, TaggedCommands { tags_foreground, issued: Mutex::new(Vec::new()) })
    }

    /// The commands issued since the last call, in issue order.
    pub fn take(&self) -> Vec<(Priority, Op)> {
        std::mem::take(&mut *self.sink().issued.lock())
    }
}
