//! Support for the crash-consistency test: workload scripts and their
//! generator, the reference model, the tree comparison, the driver that runs
//! a script on the engine over a recording backend (with the kernel's
//! writeback cache in front of it for the sync-point variant), and the crash
//! checks.

pub mod check;
pub mod driver;
pub mod generate;
pub mod kernel_cache;
pub mod model;
pub mod script;
pub mod tree;
