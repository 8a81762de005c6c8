//! Energy of the device's work: energy per byte read and written and a fixed cost per flush batch (MobiFS
//! Insight 3), and a standby model built the way mobile radio and storage power models are: after its
//! last command the device stays in its active idle state for a *tail* before it drops to standby, drawing
//! the tail's power; a command that finds it in standby pays a fixed *wake-up* energy (and, in `model`, a
//! wake-up latency).
//!
//! A batch is one busy period of the device: a request that finds the device idle ends the batch before
//! it and opens a new one, so everything one checkpoint issues back to back (its writes and its several
//! sync barriers) is one batch, and the batch's fixed flush cost is paid once, at its first flush. The
//! idle gap between two batches costs the tail's power for `min(gap, tail)`; a gap longer than the tail
//! (strictly) ends in standby, so the next batch pays one wake-up. The device starts in standby, so the
//! first batch pays one too; the last batch's tail counts in full (the device spends it whatever comes
//! next). So the energy depends on the bytes, the batches and the idle gaps, never on how a busy period's
//! work is cut into requests. Invariant: everything is integer picojoules (u128), so sums never round and
//! the same requests give the same energy, bit for bit.

use crate::profile::DeviceProfile;
use crate::queue::Service;
use serde::Serialize;

/// Energy by part, in nanojoules (each part rounded down on its own; `total_nj` is their sum).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct EnergyReport {
    pub total_nj: u64,
    pub write_nj: u64,
    pub read_nj: u64,
    /// Fixed costs of the flush batches.
    pub flush_nj: u64,
    /// Power drawn in the tails after the batches.
    pub tail_nj: u64,
    /// Transitions from standby to active.
    pub wakeup_nj: u64,
    /// Batches: busy periods of the device.
    pub batches: u64,
    /// Batches that started from standby.
    pub standby_wakeups: u64,
}

#[derive(Clone, Debug)]
pub struct EnergyMeter {
    write_pj_per_byte: u128,
    read_pj_per_byte: u128,
    flush_batch_pj: u128,
    tail_ns: u64,
    tail_uw: u128,
    wakeup_pj: u128,
    write_pj: u128,
    read_pj: u128,
    flush_pj: u128,
    /// Tails of the batches already followed by another.
    tail_pj: u128,
    batches: u64,
    wakeups: u64,
    /// The open batch paid its fixed flush cost already.
    flushed: bool,
}

impl EnergyMeter {
    pub fn new(profile: &DeviceProfile) -> EnergyMeter {
        EnergyMeter {
            write_pj_per_byte: profile.write_pj_per_byte.into(),
            read_pj_per_byte: profile.read_pj_per_byte.into(),
            flush_batch_pj: profile.flush_batch_pj.into(),
            tail_ns: profile.tail_ns,
            tail_uw: profile.tail_uw.into(),
            wakeup_pj: profile.wakeup_pj.into(),
            write_pj: 0,
            read_pj: 0,
            flush_pj: 0,
            tail_pj: 0,
            batches: 0,
            wakeups: 0,
            flushed: false,
        }
    }

    /// Whether a request issued at `at_ns` finds the device in standby, the device's last completion
    /// being `busy_until_ns`: before its first request, or after an idle gap longer than the tail.
    pub fn in_standby(&self, at_ns: u64, busy_until_ns: u64) -> bool {
        self.batches == 0 || at_ns.saturating_sub(busy_until_ns) > self.tail_ns
    }

    pub fn write(&mut self, service: &Service, bytes: u64) {
        self.batch_at(service);
        self.write_pj = self.write_pj.saturating_add(u128::from(bytes) * self.write_pj_per_byte);
    }

    pub fn read(&mut self, service: &Service, bytes: u64) {
        self.batch_at(service);
        self.read_pj = self.read_pj.saturating_add(u128::from(bytes) * self.read_pj_per_byte);
    }

    /// A flush: the batch's fixed cost, once per batch.
    pub fn flush(&mut self, service: &Service) {
        self.batch_at(service);
        if !std::mem::replace(&mut self.flushed, true) {
            self.flush_pj = self.flush_pj.saturating_add(self.flush_batch_pj);
        }
    }

    /// The energy so far, the last batch's whole tail included.
    pub fn report(&self) -> EnergyReport {
        let last_tail = if self.batches > 0 { self.tail_of(self.tail_ns) } else { 0 };
        let nj = |pj: u128| u64::try_from(pj / 1_000).unwrap_or(u64::MAX);
        let parts = [
            nj(self.write_pj),
            nj(self.read_pj),
            nj(self.flush_pj),
            nj(self.tail_pj.saturating_add(last_tail)),
            nj(u128::from(self.wakeups) * self.wakeup_pj),
        ];
        let [write_nj, read_nj, flush_nj, tail_nj, wakeup_nj] = parts;
        EnergyReport {
            total_nj: parts.iter().fold(0u64, |sum, part| sum.saturating_add(*part)),
            write_nj,
            read_nj,
            flush_nj,
            tail_nj,
            wakeup_nj,
            batches: self.batches,
            standby_wakeups: self.wakeups,
        }
    }

    /// Opens a new batch if the request served at `service` found the device idle (or is the first):
    /// the gap before it costs the previous batch's tail, and a wake-up if it outlasted the tail.
    fn batch_at(&mut self, service: &Service) {
        if self.batches > 0 && service.idle_before_ns == 0 {
            return;
        }
        if self.batches > 0 {
            self.tail_pj = self.tail_pj.saturating_add(self.tail_of(service.idle_before_ns.min(self.tail_ns)));
        }
        if self.batches == 0 || service.idle_before_ns > self.tail_ns {
            self.wakeups += 1;
        }
        self.batches += 1;
        self.flushed = false;
    }

    /// Energy of `ns` in the tail: µW × ns is a thousandth of a pJ.
    fn tail_of(&self, ns: u64) -> u128 {
        u128::from(ns) * self.tail_uw / 1_000
    }
}
