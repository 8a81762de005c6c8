//! One module per subcommand; each `run` returns the error text main prints.

pub mod config;
pub mod ctl;
pub mod flashdev;
pub mod mount;
pub mod recover;
#[cfg(feature = "report")]
pub mod report;
pub mod shell_docs;
#[cfg(feature = "sim")]
pub mod sim;
pub mod stat;
#[cfg(feature = "sim")]
pub mod trace;
#[cfg(feature = "sim")]
pub mod trace_replay;
pub mod umount;
