//! One simulated storage device: the timing of `queue`, the energy of `energy` and the counters, driven by
//! a profile. It knows requests and virtual times only (no files): the simulator's `MeteredStore` (mcfs-sim)
//! turns backend calls into requests.
//!
//! Invariant: every figure is an integer derived from the requests and their issue times alone, so the
//! same requests give the same report, byte for byte.

use crate::energy::{EnergyMeter, EnergyReport};
use crate::profile::DeviceProfile;
use crate::queue::{DeviceQueue, Service};
use serde::Serialize;

/// Bytes one metadata-changing call writes (one 4 KiB block: an inode, a directory block or a journal
/// block of the backing file system).
pub const METADATA_WRITE_BYTES: u64 = 4096;

/// One request to the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    /// Reads this many bytes of file data.
    Read(u64),
    /// Writes this many bytes of file data.
    Write(u64),
    /// Writes one metadata block (`METADATA_WRITE_BYTES`).
    MetadataWrite,
    /// Flushes the device's cache: a barrier behind everything issued before it.
    Flush,
}

impl Request {
    /// Whether the issuer waits for the request to complete: for read data and for a flush. Writes are
    /// queued and the issuer goes on, as over a page cache and a block-layer queue.
    pub fn blocks_issuer(&self) -> bool {
        matches!(self, Request::Read(_) | Request::Flush)
    }
}

/// What the device did, for the replay's metrics.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DeviceReport {
    /// Name of the profile.
    pub profile: String,
    /// Reads, writes, metadata writes and flushes.
    pub requests: u64,
    pub reads: u64,
    pub writes: u64,
    pub metadata_writes: u64,
    pub flushes: u64,
    pub bytes_read: u64,
    /// Data and metadata bytes written.
    pub bytes_written: u64,
    /// Time during which the device served at least one request.
    pub busy_ns: u64,
    /// When the device completed its last request (virtual ns).
    pub busy_until_ns: u64,
    pub energy: EnergyReport,
}

#[derive(Clone, Debug)]
pub struct Device {
    profile: DeviceProfile,
    queue: DeviceQueue,
    energy: EnergyMeter,
    counts: DeviceReport,
}

impl Device {
    pub fn new(profile: DeviceProfile) -> Device {
        let counts = DeviceReport { profile: profile.name.clone(), ..DeviceReport::default() };
        Device { queue: DeviceQueue::new(profile.queue_depth), energy: EnergyMeter::new(&profile), profile, counts }
    }

    /// Serves `request`, issued at virtual time `at_ns`. A request that finds the device in standby waits
    /// for its wake-up before its own latency.
    pub fn submit(&mut self, request: Request, at_ns: u64) -> Service {
        let p = &self.profile;
        let c = &mut self.counts;
        c.requests += 1;
        let wake_ns = if self.energy.in_standby(at_ns, self.queue.busy_until()) { p.wakeup_latency_ns } else { 0 };
        match request {
            Request::Read(bytes) => {
                let latency = p.read_latency_ns.saturating_add(wake_ns);
                let service = self.queue.request(at_ns, latency, transfer_ns(bytes, p.read_bytes_per_s));
                self.energy.read(&service, bytes);
                c.reads += 1;
                c.bytes_read = c.bytes_read.saturating_add(bytes);
                service
            }
            Request::Write(_) | Request::MetadataWrite => {
                let bytes = match request {
                    Request::Write(bytes) => bytes,
                    _ => METADATA_WRITE_BYTES,
                };
                let latency = p.write_latency_ns.saturating_add(wake_ns);
                let service = self.queue.request(at_ns, latency, transfer_ns(bytes, p.write_bytes_per_s));
                self.energy.write(&service, bytes);
                if request == Request::MetadataWrite {
                    c.metadata_writes += 1;
                } else {
                    c.writes += 1;
                }
                c.bytes_written = c.bytes_written.saturating_add(bytes);
                service
            }
            Request::Flush => {
                let service = self.queue.barrier(at_ns, p.flush_latency_ns.saturating_add(wake_ns));
                self.energy.flush(&service);
                c.flushes += 1;
                service
            }
        }
    }

    pub fn report(&self) -> DeviceReport {
        DeviceReport {
            busy_ns: self.queue.busy_ns(),
            busy_until_ns: self.queue.busy_until(),
            energy: self.energy.report(),
            ..self.counts.clone()
        }
    }
}

/// Time to move `bytes` at `bytes_per_s`, rounded up to the nanosecond (the scheduler's model too).
pub(crate) fn transfer_ns(bytes: u64, bytes_per_s: u64) -> u64 {
    let ns = (u128::from(bytes) * 1_000_000_000).div_ceil(u128::from(bytes_per_s.max(1)));
    u64::try_from(ns).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transfers_round_up_to_the_nanosecond() {
        assert_eq!(transfer_ns(0, 46_230_000), 0);
        assert_eq!(transfer_ns(4096, 46_230_000), 88_601); // 88600.47 ns
        assert_eq!(transfer_ns(1_000_000, 1_000_000), 1_000_000_000);
        assert_eq!(transfer_ns(u64::MAX, 1), u64::MAX);
    }
}
