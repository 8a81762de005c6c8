//! The engine's foreground-first entry points: what the detector tells it
//! (`set_foreground`), how a front end admits each request (`admit`), and
//! what class a uid's I/O has. The mechanisms live in `app_status`,
//! `dispatch` and the cache's reclaim order.

use crate::app_status::IoClass;
use crate::dispatch::{Admission, DispatchStats, IoPriorities};
use crate::engine::Engine;
use crate::state::State;
use crate::stats::FastTrackStats;
use crate::types::Caller;

impl Engine {
    /// The foreground app is now `app` (an app name or `uid:N`), or none.
    /// The error names an unknown app.
    pub fn set_foreground(&self, app: Option<&str>) -> Result<(), String> {
        let mut st = self.state.lock();
        let id =
            match app {
                None => None,
                Some(name) => Some(st.app_by_name(name).ok_or_else(|| {
                    format!("no app named \"{name}\": use a name from the config's [[apps]] or uid:N")
                })?),
            };
        st.status.set_foreground(id);
        Ok(())
    }

    /// The foreground app uid `uid` belongs to is now in front.
    pub fn set_foreground_uid(&self, uid: Option<u32>) {
        let mut st = self.state.lock();
        let id = uid.map(|u| st.app_of_uid(u));
        st.status.set_foreground(id);
    }

    /// The name of the foreground app, if one is known.
    pub fn foreground(&self) -> Option<String> {
        foreground_name(&self.state.lock())
    }

    /// Whether front ends tag their threads' I/O with the class's I/O
    /// priority (`fasttrack.dispatch`).
    pub fn tags_io_priority(&self) -> bool {
        self.state.lock().config.fasttrack.dispatch
    }

    /// The class of `uid`'s I/O now.
    pub fn io_class(&self, uid: u32) -> IoClass {
        let mut st = self.state.lock();
        let app = st.app_of_uid(uid);
        st.io_class(app)
    }

    /// Admits one request of `caller`: a background app's request waits
    /// while foreground requests are in flight (up to the aging bound). The
    /// request runs as long as the returned `Admission` lives.
    pub fn admit(&self, caller: Caller) -> Admission<'_> {
        let class = self.io_class(caller.uid);
        self.dispatch.admit(class, caller.uid)
    }

    /// Admits a request of `caller` at once if it can never be held back for
    /// FG work (an FG or system request, or any request while request
    /// preemption is off). A BG request that may be held back comes back as
    /// `HeldBack`: the front end serves it with `admit` on a thread of its
    /// own, so a held request never keeps a thread that reads new requests
    /// (the FG request it waits for may be the next one read).
    pub fn admit_at_once(&self, caller: Caller) -> Result<Admission<'_>, HeldBack> {
        let class = self.io_class(caller.uid);
        if self.dispatch.may_hold_back(class) {
            return Err(HeldBack);
        }
        Ok(self.dispatch.admit(class, caller.uid))
    }

    /// How the front end sets threads' I/O priorities, so that a background
    /// commit an FG request waits for can run at FG priority (`dispatch`).
    pub fn set_io_priorities(&self, priorities: Box<dyn IoPriorities>) {
        self.dispatch.set_io_priorities(priorities);
    }

    pub fn dispatch_stats(&self) -> DispatchStats {
        self.dispatch.stats()
    }

    /// The FastTrack part of `stats`, from the state the caller holds.
    pub(crate) fn fasttrack_stats(&self, st: &State) -> FastTrackStats {
        FastTrackStats { foreground: foreground_name(st), dispatch: self.dispatch.stats() }
    }
}

/// A BG request that may wait for FG work: serve it on a thread that reads
/// no requests (`Engine::admit_at_once`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeldBack;

fn foreground_name(st: &State) -> Option<String> {
    st.status.foreground().map(|a| st.apps.list[a].name.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Config, ManualClock, MemBackend};
    use std::sync::Arc;

    const FG: Caller = Caller { uid: 10001, gid: 0, pid: 1 };
    const BG: Caller = Caller { uid: 10002, gid: 0, pid: 2 };
    /// A system service (uid below 10000): never held back.
    const SERVICE: Caller = Caller { uid: 1000, gid: 0, pid: 3 };

    fn engine(preempt: bool) -> Engine {
        let mut config = Config::default();
        config.fasttrack.preempt = preempt;
        let engine = Engine::start(Arc::new(MemBackend::new()), Arc::new(ManualClock::new()), config).expect("starts");
        engine.set_foreground(Some("uid:10001")).expect("foreground");
        engine
    }

    #[test]
    fn only_a_background_request_that_may_wait_is_held_back() {
        let engine = engine(true);
        assert!(engine.admit_at_once(FG).is_ok());
        assert!(engine.admit_at_once(SERVICE).is_ok());
        assert_eq!(engine.admit_at_once(BG).err(), Some(HeldBack));
        // Held back even with no FG request in flight: it could wait at a segment boundary.
        assert_eq!(engine.dispatch_stats().fg_requests, 1);
    }

    #[test]
    fn without_request_preemption_nothing_is_held_back() {
        let engine = engine(false);
        assert!(engine.admit_at_once(BG).is_ok());
        assert_eq!(engine.dispatch_stats().bg_requests, 1);
    }

    #[test]
    fn an_admission_at_once_counts_as_in_flight_until_dropped() {
        let engine = engine(true);
        let admission = engine.admit_at_once(FG).expect("FG is never held");
        assert_eq!(engine.dispatch.fg_in_flight(), 1);
        drop(admission);
        assert_eq!(engine.dispatch.fg_in_flight(), 0);
    }
}
