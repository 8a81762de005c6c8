//! What every mcfs FUSE file system asks the kernel for at `init`: the
//! largest write per request, and the capabilities it wants — each only if
//! the kernel offers it, so a kernel without one still mounts; and, once the
//! mount is live, a read-ahead window as large as a request.

use fuser::{InitFlags, KernelConfig};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Largest write the kernel sends in one request (on flashdev: one device command).
pub(crate) const MAX_WRITE: u32 = 1 << 20;

/// Where the kernel says how many pages it puts in one request at most.
const MAX_PAGES_LIMIT: &str = "/proc/sys/fs/fuse/max_pages_limit";

/// The most pages the kernel puts in one write request on our mounts:
/// `MAX_WRITE`, unless the kernel's own limit is lower (read once).
pub fn pages_per_write() -> u64 {
    let ours = u64::from(MAX_WRITE) / 4096;
    let limit = std::fs::read_to_string(MAX_PAGES_LIMIT).ok().and_then(|s| s.trim().parse::<u64>().ok());
    limit.map_or(ours, |limit| ours.min(limit.max(1)))
}

/// Asks for `MAX_WRITE` and for each of `wanted` the kernel supports.
pub fn ask_kernel_for(config: &mut KernelConfig, wanted: &[InitFlags]) {
    if let Err(limit) = config.set_max_write(MAX_WRITE) {
        tracing::debug!("max_write stays at fuser's limit of {limit} bytes");
    }
    for flags in wanted {
        if let Err(missing) = config.add_capabilities(*flags) {
            tracing::debug!("kernel lacks FUSE capability {missing:?}; going without");
        }
    }
}

/// Raises the mount's read-ahead window to `MAX_WRITE` (one request of
/// `max_pages`). The kernel offers 128 KiB at INIT and takes only a smaller
/// answer, so without this a sequential read reaches the daemon in 128 KiB
/// requests, eight round trips per MiB. Set through the mount's
/// backing-device entry in sysfs once INIT is answered (the `stat` of the
/// root waits for it); only root may, so other users' mounts keep 128 KiB.
pub fn raise_readahead(mountpoint: &Path) {
    let dev = match std::fs::metadata(mountpoint) {
        Ok(meta) => meta.dev(),
        Err(e) => return tracing::debug!("read-ahead of {} stays: {e}", mountpoint.display()),
    };
    let path = readahead_path(dev);
    match std::fs::write(&path, (MAX_WRITE / 1024).to_string()) {
        Ok(()) => tracing::debug!(
            "read-ahead of {} raised to {} KiB ({})",
            mountpoint.display(),
            MAX_WRITE / 1024,
            path.display()
        ),
        Err(e) => {
            tracing::debug!("read-ahead of {} stays at the kernel's: {}: {e}", mountpoint.display(), path.display())
        }
    }
}

/// `/sys/class/bdi/MAJOR:MINOR/read_ahead_kb` of a mount's device number.
pub(crate) fn readahead_path(dev: u64) -> PathBuf {
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    PathBuf::from(format!("/sys/class/bdi/{major}:{minor}/read_ahead_kb"))
}
