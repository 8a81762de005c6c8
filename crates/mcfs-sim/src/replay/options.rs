//! What a replay runs with: the engine's configuration, the device it runs on, how events are timed and
//! how often the bytes at risk are sampled.

use mcfs_core::Config;
use mcfs_device::DeviceProfile;
use serde::Serialize;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

#[derive(Clone, Debug)]
pub struct ReplayOptions {
    pub config: Config,
    pub device: DeviceProfile,
    pub timing: Timing,
    /// Keep every written byte in the simulated store (`SimBackend::new`) instead of marks for the pages
    /// that hold the replay's pattern (`SimBackend::dataless`, the default). The engine decides the same
    /// either way; the data-less store needs memory for metadata only.
    pub keep_data: bool,
    /// Period of the bytes-at-risk series, in virtual time (positive).
    pub sample_every: Duration,
}

impl Default for ReplayOptions {
    /// The default configuration on the eMMC profile, closed loop, data-less, sampled every second.
    fn default() -> ReplayOptions {
        ReplayOptions {
            config: Config::default(),
            device: DeviceProfile::builtin("emmc").expect("the built-in eMMC profile parses (unit-tested)"),
            timing: Timing::default(),
            keep_data: false,
            sample_every: Duration::from_secs(1),
        }
    }
}

/// When an event is issued.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Timing {
    /// Each process issues its next event once its previous one completed, plus the recorded think time
    /// (`closed_loop`): a slow device stretches the replay instead of piling up stalls.
    #[default]
    ClosedLoop,
    /// Every event at its recorded time, whatever the device did before it.
    OpenLoop,
}

impl Timing {
    pub fn name(self) -> &'static str {
        match self {
            Timing::ClosedLoop => "closed-loop",
            Timing::OpenLoop => "open-loop",
        }
    }
}

impl fmt::Display for Timing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Timing {
    type Err = String;

    fn from_str(s: &str) -> Result<Timing, String> {
        [Timing::ClosedLoop, Timing::OpenLoop]
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| format!("unknown timing '{s}' (closed-loop or open-loop)"))
    }
}
