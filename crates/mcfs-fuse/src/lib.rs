//! mcfs-fuse: the thin adapter between the kernel's FUSE requests (through
//! `fuser` on `/dev/fuse`, or the io_uring transport `uring`) and
//! `mcfs_core::Engine`, plus mounting.
//!
//! `McfsFs` turns each request into one engine call, answering through the
//! traits of `replies`, which both transports implement; `fuser_session`
//! and `ring_session` hand it their requests, `ring_mount` mounts over
//! io_uring (`uring`: the transport, no tie to mcfs); `mount` checks the
//! mount point and serves a `McfsFs` on several threads; `Mounted` waits for
//! the session to end or unmounts it. Pure request translations live in
//! `translate`, directory streams in `dir_stream`, the mount(2) call
//! that keeps the `fuse.SUBTYPE` type in `kernel_mount`, the serving threads'
//! I/O priority in `io_priority`, the threads that serve background requests
//! FastTrack may hold back in `held_requests`; `observer` is the hook that lets the
//! mounting program watch what is served (recording); `session_thread`
//! serves a mounted session and lets go of the mount without unmounting it
//! twice, and `mount_error` names the file a failed mount tripped on (both
//! shared with flashdev).

mod dir_stream;
mod filesystem;
mod fuser_session;
mod handover;
mod held_requests;
mod io_priority;
mod kernel_config;
mod kernel_mount;
mod mount;
mod mount_error;
mod observer;
mod replies;
mod ring_mount;
mod ring_session;
pub mod session_thread;
mod translate;
pub mod uring;
mod write_back;

pub use filesystem::McfsFs;
pub use handover::DirtyPages;
pub use kernel_config::ask_kernel_for;
pub use kernel_mount::open_session;
pub use mount::{mount, mount_fs, usable_mount_point, MountFlags, MountOptions, Mounted, Transport, Unmounter};
pub use mount_error::explain as explain_mount_error;
pub use observer::{RequestObserver, ServedOp};
