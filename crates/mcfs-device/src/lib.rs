//! mcfs-device: the storage device as a pure model in virtual time, shared by the simulator (mcfs-sim)
//! and the flash emulator (mcfs-flashdev). It depends on nothing of mcfs: it knows requests, byte
//! counts and instants, never files, apps or the engine.
//!
//! `profile` holds a device's figures from the papers, read from TOML (`profiles/*.toml` are built in);
//! `queue` serves requests in time (queue slots that overlap latencies, one data channel, flushes as
//! barriers); `energy` prices the work (bytes and flush batches after MobiFS Insight 3, a tail and a
//! wake-up cost per standby transition);
//! `model` is the device the simulator replays on, the two together with the counters; `scheduler` is
//! the device's own command scheduler (FastTrack §4.5: which command goes next, FIFO or FG first), run
//! in real time by the flash emulator and in virtual time by the simulator's FastTrack scenarios.
//! docs/DEVICE_MODEL.md describes the model and the source of every figure.
//!
//! Invariant: the models compute with integers only (ns, bytes, pJ) and read no clock, so the same
//! requests at the same times give the same results, byte for byte, on every machine.

mod energy;
mod model;
mod profile;
mod queue;
pub mod scheduler;

pub use energy::EnergyReport;
pub use model::{Device, DeviceReport, Request, METADATA_WRITE_BYTES};
pub use profile::{DeviceProfile, Published};
pub use queue::Service;
