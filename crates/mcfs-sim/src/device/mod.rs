//! The simulated storage device under the engine: the mapping of backend calls to device requests
//! (`metered`) and the `Backend` that serves them on the device model in virtual time (`sim_backend`).
//! The model itself (profiles, queue, energy, the device scheduler) is the mcfs-device crate;
//! docs/DEVICE_MODEL.md describes it and the source of every figure.
//!
//! Invariant: the same backend calls at the same virtual times give the device the same requests in the
//! same order, so the same replay gives the same report, byte for byte.

mod metered;
mod sim_backend;

pub use metered::{MeteredStore, RequestSink, Store};
pub use sim_backend::{CallCost, DeviceTimeline, SimBackend};
