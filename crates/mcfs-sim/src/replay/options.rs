//! What a replay runs with: the engine's configuration, the device it runs on and how often the bytes at
//! risk are sampled.

use crate::device::DeviceProfile;
use mcfs_core::Config;
use std::time::Duration;

#[derive(Clone, Debug)]
pub struct ReplayOptions {
    pub config: Config,
    pub device: DeviceProfile,
    /// Period of the bytes-at-risk series, in virtual time (positive).
    pub sample_every: Duration,
}

impl Default for ReplayOptions {
    /// The default configuration on the eMMC profile, sampled every second.
    fn default() -> ReplayOptions {
        ReplayOptions {
            config: Config::default(),
            device: DeviceProfile::builtin("emmc").expect("the built-in eMMC profile parses (unit-tested)"),
            sample_every: Duration::from_secs(1),
        }
    }
}
