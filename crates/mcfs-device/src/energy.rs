//! Energy of the device's work, after MobiFS Insight 3: energy per byte read and written, a fixed cost
//! per flush batch, and a penalty for batches that find the device in standby.
//!
//! A batch is one busy period of the device: a request that finds the device idle ends the batch before
//! it and opens a new one, so everything one checkpoint issues back to back (its writes and its several
//! sync barriers) is one batch, and the batch's fixed cost is paid once, at its first flush. A batch opened
//! after the device was idle for longer than `standby_after` starts "from standby": when it ends, it costs
//! `standby_penalty` times its energy, the extra counted apart as the standby penalty. Invariant:
//! everything is integer picojoules (u128), so sums never round and the same requests give the same
//! energy, bit for bit.

use crate::profile::DeviceProfile;
use crate::queue::Service;
use serde::Serialize;

const PPM: u128 = 1_000_000;

/// Energy by part, in nanojoules (each part rounded down on its own; `total_nj` is their sum).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct EnergyReport {
    pub total_nj: u64,
    pub write_nj: u64,
    pub read_nj: u64,
    /// Fixed costs of the flush batches.
    pub flush_nj: u64,
    /// Extra energy of the batches started from standby.
    pub standby_penalty_nj: u64,
    /// Batches: busy periods of the device.
    pub batches: u64,
    /// Batches that started from standby.
    pub standby_wakeups: u64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Parts {
    write_pj: u128,
    read_pj: u128,
    flush_pj: u128,
}

impl Parts {
    fn total(&self) -> u128 {
        self.write_pj.saturating_add(self.read_pj).saturating_add(self.flush_pj)
    }

    fn add(&mut self, other: &Parts) {
        self.write_pj = self.write_pj.saturating_add(other.write_pj);
        self.read_pj = self.read_pj.saturating_add(other.read_pj);
        self.flush_pj = self.flush_pj.saturating_add(other.flush_pj);
    }
}

#[derive(Clone, Debug)]
struct Batch {
    from_standby: bool,
    /// The batch paid its fixed flush cost already.
    flushed: bool,
    parts: Parts,
}

#[derive(Clone, Debug)]
pub struct EnergyMeter {
    write_pj_per_byte: u128,
    read_pj_per_byte: u128,
    flush_batch_pj: u128,
    standby_after_ns: u64,
    penalty_ppm: u128,
    /// Batches already ended.
    closed: Parts,
    closed_penalty_pj: u128,
    closed_batches: u64,
    wakeups: u64,
    open: Option<Batch>,
}

impl EnergyMeter {
    pub fn new(profile: &DeviceProfile) -> EnergyMeter {
        EnergyMeter {
            write_pj_per_byte: profile.write_pj_per_byte.into(),
            read_pj_per_byte: profile.read_pj_per_byte.into(),
            flush_batch_pj: profile.flush_batch_pj.into(),
            standby_after_ns: profile.standby_after_ns,
            penalty_ppm: profile.standby_penalty_ppm.into(),
            closed: Parts::default(),
            closed_penalty_pj: 0,
            closed_batches: 0,
            wakeups: 0,
            open: None,
        }
    }

    pub fn write(&mut self, service: &Service, bytes: u64) {
        let pj = u128::from(bytes) * self.write_pj_per_byte;
        self.batch_at(service).parts.add(&Parts { write_pj: pj, ..Parts::default() });
    }

    pub fn read(&mut self, service: &Service, bytes: u64) {
        let pj = u128::from(bytes) * self.read_pj_per_byte;
        self.batch_at(service).parts.add(&Parts { read_pj: pj, ..Parts::default() });
    }

    /// A flush: the batch's fixed cost, once per batch.
    pub fn flush(&mut self, service: &Service) {
        let pj = self.flush_batch_pj;
        let batch = self.batch_at(service);
        if !std::mem::replace(&mut batch.flushed, true) {
            batch.parts.add(&Parts { flush_pj: pj, ..Parts::default() });
        }
    }

    /// The energy so far, the batch still open included.
    pub fn report(&self) -> EnergyReport {
        let mut parts = self.closed;
        let mut penalty = self.closed_penalty_pj;
        if let Some(open) = &self.open {
            parts.add(&open.parts);
            penalty = penalty.saturating_add(self.penalty_of(open));
        }
        let nj = |pj: u128| u64::try_from(pj / 1_000).unwrap_or(u64::MAX);
        let (write_nj, read_nj, flush_nj) = (nj(parts.write_pj), nj(parts.read_pj), nj(parts.flush_pj));
        let standby_penalty_nj = nj(penalty);
        EnergyReport {
            total_nj: write_nj.saturating_add(read_nj).saturating_add(flush_nj).saturating_add(standby_penalty_nj),
            write_nj,
            read_nj,
            flush_nj,
            standby_penalty_nj,
            batches: self.closed_batches + u64::from(self.open.is_some()),
            standby_wakeups: self.wakeups,
        }
    }

    /// The batch a request served at `service` belongs to: the open one, unless the device was idle
    /// before the request started.
    fn batch_at(&mut self, service: &Service) -> &mut Batch {
        let from_standby = service.idle_before_ns > self.standby_after_ns;
        if service.idle_before_ns > 0 {
            self.close();
            self.wakeups += u64::from(from_standby);
        }
        self.open.get_or_insert(Batch { from_standby, flushed: false, parts: Parts::default() })
    }

    fn close(&mut self) {
        if let Some(batch) = self.open.take() {
            self.closed_penalty_pj = self.closed_penalty_pj.saturating_add(self.penalty_of(&batch));
            self.closed.add(&batch.parts);
            self.closed_batches += 1;
        }
    }

    fn penalty_of(&self, batch: &Batch) -> u128 {
        if batch.from_standby {
            batch.parts.total().saturating_mul(self.penalty_ppm.saturating_sub(PPM)) / PPM
        } else {
            0
        }
    }
}
