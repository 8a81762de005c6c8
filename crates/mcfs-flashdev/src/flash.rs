//! The emulated flash as the file system sees it: each request is charged to the device as one
//! command, in the class of the thread that made it, and the request waits until the device has
//! served that command. Also counts requests by class.
//!
//! Invariant: every charged request is one command and one count, in the same class.

use crate::class::RequestClass;
use crate::realtime::RealTimeDevice;
use crate::report::{Report, RequestCounts};
use mcfs_device::scheduler::{Op, Priority, SchedPolicy};
use mcfs_device::{DeviceProfile, METADATA_WRITE_BYTES};
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

pub struct Flash {
    device: RealTimeDevice,
    profile: DeviceProfile,
    policy: SchedPolicy,
    foreground: AtomicU64,
    background: AtomicU64,
    unknown_class: AtomicU64,
}

impl Flash {
    pub fn start(profile: &DeviceProfile, policy: SchedPolicy) -> io::Result<Flash> {
        Ok(Flash {
            device: RealTimeDevice::start(profile, policy)?,
            profile: profile.clone(),
            policy,
            foreground: AtomicU64::new(0),
            background: AtomicU64::new(0),
            unknown_class: AtomicU64::new(0),
        })
    }

    /// Serves `op` for a request made by thread `tid`; returns once the device has completed it.
    pub fn charge(&self, tid: u32, op: Op) {
        let class = RequestClass::of_thread(tid);
        let counter = match class.priority {
            Priority::Foreground => &self.foreground,
            Priority::Background => &self.background,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        if !class.known {
            self.unknown_class.fetch_add(1, Ordering::Relaxed);
        }
        // A thread raised to FG priority while its command waits gets it served as FG.
        self.device.serve(class.priority, op, || RequestClass::of_thread(tid).priority);
    }

    /// A change of metadata (create, rename, chmod...): one small write, like the simulator's.
    pub fn charge_metadata(&self, tid: u32) {
        self.charge(tid, Op::Write(METADATA_WRITE_BYTES));
    }

    pub fn report(&self) -> Report {
        Report {
            profile: self.profile.name.clone(),
            profile_source: self.profile.source.clone(),
            scheduler_policy: self.policy,
            requests: RequestCounts {
                foreground: self.foreground.load(Ordering::Relaxed),
                background: self.background.load(Ordering::Relaxed),
                unknown_class: self.unknown_class.load(Ordering::Relaxed),
            },
            pending: self.device.pending(),
            device: self.device.stats(),
        }
    }
}
