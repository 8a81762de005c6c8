//! What every mcfs FUSE file system asks the kernel for at `init`: the
//! largest write per request, and the capabilities it wants — each only if
//! the kernel offers it, so a kernel without one still mounts.

use fuser::{InitFlags, KernelConfig};

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
