//! One module per subcommand; each `run` returns the error text main prints.

pub mod ctl;
pub mod mount;
pub mod recover;
pub mod stat;
pub mod umount;
