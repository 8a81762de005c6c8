//! The simulated storage device: a profile of figures from the papers (`profile`), a timing model that
//! serves requests in virtual time (`queue`), an energy model after MobiFS Insight 3 (`energy`), the two
//! together with the counters (`model`), the mapping of backend calls to device requests (`metered`) and
//! the `Backend` that serves them on the device under the real engine (`sim_backend`).
//! docs/DEVICE_MODEL.md describes the model and the source of every figure.
//!
//! Invariant: the models compute with integers only (ns, bytes, pJ), so the same requests at the same
//! virtual times give the same report, byte for byte.

mod energy;
mod metered;
mod model;
mod profile;
mod queue;
pub mod scheduler;
mod sim_backend;

pub use energy::EnergyReport;
pub use metered::{MeteredStore, RequestSink, Store};
pub use model::{Device, DeviceReport, Request, METADATA_WRITE_BYTES};
pub use profile::DeviceProfile;
pub use queue::Service;
pub use sim_backend::{CallCost, DeviceTimeline, SimBackend};
