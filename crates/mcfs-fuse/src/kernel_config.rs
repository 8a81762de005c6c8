//! What every mcfs FUSE file system asks the kernel for at `init`: the
//! largest write per request, and the capabilities it wants — each only if
//! the kernel offers it, so a kernel without one still mounts.

use fuser::{InitFlags, KernelConfig};

/// Largest write the kernel sends in one request (on flashdev: one device command).
const MAX_WRITE: u32 = 1 << 20;

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
