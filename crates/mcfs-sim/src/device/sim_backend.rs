//! `SimBackend`: the backing store of a simulation — a `MemBackend` holds the files, a `Device` says how
//! long each call keeps the storage busy and what it costs, in the virtual time of a `Clock`. Over a real
//! directory (`DirBackend`) and the system clock, the same wrapper gives a live mount its estimate of
//! what its I/O would cost on the modelled device. Which requests a call makes is `MeteredStore`'s
//! mapping; this module is the sink that serves them on the device.
//!
//! Time: a request is issued at the issuer's cursor — the clock's time, or later if the issuer waited
//! for an earlier read or flush of the same call (`begin_call` .. `end_call`): the clock stands still
//! during a call, the issuer does not. Invariant: the device sees requests in the order the backend is
//! called, and the cursor never runs behind the clock.

use super::metered::{MeteredStore, RequestSink, Store};
use crate::pattern;
use mcfs_core::backend::KnownContent;
use mcfs_core::{Clock, MemBackend};
use mcfs_device::{Device, DeviceProfile, DeviceReport, Request};
use parking_lot::Mutex;
use std::sync::Arc;
use std::time::SystemTime;

/// What one call cost its caller.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallCost {
    /// Whether the call issued any device request.
    pub issued_io: bool,
    /// How long the caller waited for the device: from the call's start to the completion of the last
    /// read or flush it waited for (0 when it issued nothing).
    pub latency_ns: u64,
}

/// A store whose requests are served by a modelled device in the clock's time.
pub type SimBackend<S = MemBackend> = MeteredStore<S, DeviceTimeline>;

/// The device and the issuer's cursor, in virtual time (ns since the backend was made).
pub struct DeviceTimeline {
    clock: Arc<dyn Clock>,
    /// The clock's time at virtual zero.
    origin: SystemTime,
    state: Mutex<Timeline>,
}

struct Timeline {
    device: Device,
    /// When the current issuer can issue its next request (0: at the clock's time).
    cursor_ns: u64,
    /// The open call, if any.
    call: Call,
}

/// The call between `begin_call` and `end_call`. Its start is read off the clock at its first request,
/// not at its beginning (the clock stands still during a call): most calls issue nothing, and reading
/// the clock as virtual nanoseconds costs more than the rest of `begin_call` and `end_call` together.
#[derive(Clone, Copy)]
enum Call {
    None,
    Open,
    Issued { start_ns: u64 },
}

impl DeviceTimeline {
    fn now_ns(&self) -> u64 {
        let since = self.clock.now().duration_since(self.origin).unwrap_or_default();
        u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
    }
}

impl RequestSink for DeviceTimeline {
    fn issue(&self, request: Request) {
        let now = self.now_ns();
        let mut t = self.state.lock();
        let at = t.cursor_ns.max(now);
        if matches!(t.call, Call::Open) {
            t.call = Call::Issued { start_ns: now };
        }
        let service = t.device.submit(request, at);
        if request.blocks_issuer() {
            t.cursor_ns = service.done_ns;
        }
    }
}

impl SimBackend {
    /// An empty store on a device of `profile`; virtual time zero is the clock's time now.
    pub fn new(profile: DeviceProfile, clock: Arc<dyn Clock>) -> SimBackend {
        SimBackend::over(MemBackend::new(), profile, clock)
    }

    /// `new`, but data-less: a whole page holding the replay's pattern (`crate::pattern`, what every
    /// replay writes) is kept as a mark, not as its bytes, and reads back the same. Memory grows with the
    /// pages' count. The journal's payload is not kept at all (`Backend::keeps_journal_payload`: a replay
    /// never reads it back), so it is neither copied nor checksummed, and a journaled run of the pattern is
    /// held as its extent (`Backend::known_content`, `write_known_at`); anything else (partial pages, the
    /// journal's commit and progress records) keeps its bytes.
    pub fn dataless(profile: DeviceProfile, clock: Arc<dyn Clock>) -> SimBackend {
        let known = KnownContent { fill: pattern::fill, matches: pattern::matches };
        SimBackend::over(MemBackend::with_known_content(known).without_journal_payloads(), profile, clock)
    }
}

impl<S: Store> SimBackend<S> {
    /// `store` on a device of `profile`; virtual time zero is the clock's time now.
    pub fn over(store: S, profile: DeviceProfile, clock: Arc<dyn Clock>) -> SimBackend<S> {
        let origin = clock.now();
        store.set_now(origin);
        let state = Mutex::new(Timeline { device: Device::new(profile), cursor_ns: 0, call: Call::None });
        MeteredStore::with_sink(store, clock.clone(), DeviceTimeline { clock, origin, state })
    }

    /// Virtual time: nanoseconds since the backend was made.
    pub fn now_ns(&self) -> u64 {
        self.sink().now_ns()
    }

    /// Starts a call of one issuer (an engine call): its requests are issued from now on, one after the
    /// completion of each read or flush it waits for.
    pub fn begin_call(&self) {
        let mut t = self.sink().state.lock();
        t.cursor_ns = 0;
        t.call = Call::Open;
    }

    /// Ends the call `begin_call` started and says what it cost.
    pub fn end_call(&self) -> CallCost {
        let mut t = self.sink().state.lock();
        let cost = match std::mem::replace(&mut t.call, Call::None) {
            Call::Issued { start_ns } => CallCost { issued_io: true, latency_ns: t.cursor_ns.saturating_sub(start_ns) },
            Call::None | Call::Open => CallCost::default(),
        };
        t.cursor_ns = 0;
        cost
    }

    /// What the device did so far.
    pub fn report(&self) -> DeviceReport {
        self.sink().state.lock().device.report()
    }
}
