//! One module per subcommand; each `run` returns the error text main prints.

pub mod config;
pub mod ctl;
pub mod flashdev;
pub mod mount;
pub mod recover;
pub mod report;
pub mod shell_docs;
pub mod sim;
pub mod stat;
pub mod trace;
pub mod trace_replay;
pub mod umount;
