//! mcfs-fuse: the thin adapter between the kernel's FUSE requests (through
//! `fuser`) and `mcfs_core::Engine`, plus mounting.
//!
//! `McfsFs` turns each request into one engine call; `mount` checks the
//! mount point and serves a `McfsFs` on several threads; `Mounted` waits for
//! the session to end or unmounts it. Pure request translations live in
//! `translate`, directory stream state in `dir_handles`.

mod dir_handles;
mod filesystem;
mod mount;
mod translate;

pub use filesystem::McfsFs;
pub use mount::{mount, usable_mount_point, MountOptions, Mounted, Unmounter};
