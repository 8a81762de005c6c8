//! The one place that talks to the FUSE adapter (crate `mcfs-fuse`): start
//! the session, wait for it to end, unmount it from another thread. The rest
//! of the daemon sees only this small surface.

use mcfs_core::Engine;
use mcfs_fuse::{McfsFs, RequestObserver};
use std::path::Path;
use std::sync::Arc;

pub struct FuseSettings {
    pub threads: u32,
    pub allow_other: bool,
    /// Shown as the mount's source in mountinfo and `df`.
    pub fsname: String,
    /// The mount's type is `fuse.SUBTYPE` (`findmnt -t fuse.mcfs`).
    pub subtype: String,
    /// `ro`, `nosuid`, `nodev`, `noexec` as asked.
    pub flags: mcfs_fuse::MountFlags,
    /// `fuse.io_uring`: serve over io_uring or `/dev/fuse`.
    pub io_uring: mcfs_core::IoUringMode,
}

pub struct LiveMount(mcfs_fuse::Mounted, mcfs_fuse::DirtyPages);

/// Unmounts the live mount from any thread (a no-op once the session
/// ended), and has the kernel hand over its dirty pages before.
#[derive(Clone)]
pub struct MountHandle(mcfs_fuse::Unmounter, mcfs_fuse::DirtyPages);

/// Starts serving `engine`; `observer`, if any, is told of every file operation served.
pub fn start(
    engine: Arc<Engine>,
    mountpoint: &Path,
    settings: &FuseSettings,
    observer: Option<Arc<dyn RequestObserver>>,
) -> Result<LiveMount, String> {
    let options = mcfs_fuse::MountOptions {
        threads: settings.threads as usize,
        allow_other: settings.allow_other,
        fsname: settings.fsname.clone(),
        subtype: settings.subtype.clone(),
        flags: settings.flags,
        io_uring: settings.io_uring,
    };
    // mcfs-fuse errors already name the mount point and the cause.
    let fs = McfsFs::new(engine, observer);
    let dirty_pages = fs.dirty_pages();
    mcfs_fuse::mount_fs(fs, mountpoint, &options).map(|m| LiveMount(m, dirty_pages)).map_err(|e| e.to_string())
}

impl LiveMount {
    pub fn handle(&self) -> MountHandle {
        MountHandle(self.0.unmounter(), self.1.clone())
    }

    /// How requests reach the daemon (`mcfs stat`'s `fuse` section).
    pub fn transport(&self) -> mcfs_fuse::Transport {
        self.0.transport().clone()
    }

    /// Blocks until the session is over: no request reaches the engine any more.
    pub fn wait(self) {
        if let Err(e) = self.0.wait() {
            tracing::error!("{e}");
        }
    }
}

impl MountHandle {
    /// In sync-point mode, has the kernel hand every dirty page of the
    /// mount over to the engine and returns once it has, so that a
    /// checkpoint after it holds all that was written before (in operation
    /// mode the engine has it all already).
    pub fn hand_over_dirty_pages(&self) {
        self.1.hand_over();
    }

    /// Fails (EBUSY) while files in the mount are in use.
    pub fn unmount(&self) -> Result<(), String> {
        self.0.unmount().map_err(|e| e.to_string())
    }
}
