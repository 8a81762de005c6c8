//! Mounting with FUSE over io_uring: mount(2) ourselves (the ring needs the
//! connection's `/dev/fuse` descriptor), then serve it with a `uring`
//! session of `McfsFs`. With `fuse.io_uring = "auto"`, a kernel without the
//! ring (or `enable_uring` off) or a mount through fusermount3 (not root)
//! falls back to the fuser session; with `"on"` those fail the mount and
//! the error names the cause.
//!
//! Invariant, as for the fuser session: when `Mounted::wait` returns, no
//! request reaches the engine any more.

use crate::filesystem::McfsFs;
use crate::kernel_config::MAX_WRITE;
use crate::kernel_mount::{detach, mount_fuse};
use crate::mount::{start_session, usable_mount_point, with_context, MountOptions, Mounted, Transport};
use crate::ring_session::QUEUE_DEPTH;
use crate::session_thread::dead_fuse_mount;
use crate::{mount_error, uring};
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Mounts `fs` at `mountpoint` served over io_uring; over `/dev/fuse` where
/// the ring cannot be had, unless `required`.
pub(crate) fn start(fs: McfsFs, mountpoint: &Path, opts: &MountOptions, required: bool) -> io::Result<Mounted> {
    let refuse = |why: String| {
        io::Error::new(io::ErrorKind::Unsupported, format!("{}: fuse.io_uring = \"on\": {why}", mountpoint.display()))
    };
    if let Err(why) = uring::kernel_support() {
        if required {
            return Err(refuse(why));
        }
        tracing::info!("serving over /dev/fuse: {why}");
        let invalidators = fs.invalidator_slot();
        return start_session(fs, mountpoint, opts, invalidators);
    }
    let mountpoint = usable_mount_point(mountpoint)?;
    let dev = match mount_fuse(&mountpoint, opts).map_err(|e| mount_error::explain(&mountpoint, "mcfs", e))? {
        Some(dev) => dev,
        None if required => {
            return Err(refuse(
                "mounting needs root: the ring needs the /dev/fuse descriptor of a mount mcfs makes itself".into(),
            ))
        }
        None => {
            let invalidators = fs.invalidator_slot();
            return start_session(fs, &mountpoint, opts, invalidators);
        }
    };
    let config = uring::Config {
        init_flags: fs.init_flags().iter().fold(0, |all, flags| all | flags.bits()),
        max_write: MAX_WRITE,
        queue_depth: QUEUE_DEPTH,
    };
    let invalidators = fs.invalidator_slot();
    let session = uring::Session::start(dev, &config, Arc::new(fs)).map_err(|e| {
        detach(&mountpoint);
        with_context(&mountpoint, "cannot serve FUSE over io_uring", e)
    })?;
    let _ = invalidators.set(Box::new(session.notifier()));
    tracing::info!("{}: serving FUSE over io_uring ({} entries per CPU queue)", mountpoint.display(), QUEUE_DEPTH);
    let transport = Transport::IoUring(session.counters());
    let serving = Arc::new(AtomicBool::new(true));
    let thread = {
        let (serving, mountpoint) = (Arc::clone(&serving), mountpoint.clone());
        std::thread::Builder::new().name("mcfs-session".to_string()).spawn(move || {
            let ended = session.join();
            serving.store(false, Ordering::SeqCst);
            // A session that failed may leave its mount behind, dead.
            if ended.is_err() && dead_fuse_mount(&mountpoint) {
                detach(&mountpoint);
            }
            ended
        })?
    };
    Ok(Mounted::new(thread, mountpoint, serving, transport))
}
