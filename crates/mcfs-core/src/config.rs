//! Engine configuration: the TOML a user writes (documented key by key in
//! docs/CONFIG.md). Every field has a default, so an empty file is valid.

use serde::{Deserialize, Serialize};

/// How an app's fsync behaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SyncMode {
    /// fsync marks a log boundary and returns; data reaches the backing
    /// store at the next checkpoint.
    Memory,
    /// POSIX: fsync returns once the app's data is durable in the backing store.
    Sync,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Bytes of file data the engine may keep in memory.
    pub cache_size: u64,
    /// Dirty bytes (fraction of `cache_size`) above which a checkpoint is forced.
    pub dirty_high_ratio: f64,
    /// Dirty bytes (fraction of `cache_size`) above which a background
    /// checkpoint starts (seed 000: dirty_background_ratio = 50 %).
    pub dirty_background_ratio: f64,
    /// Default for apps without their own setting.
    pub mode: SyncMode,
    /// Close an app's open VCT once this many bytes are stale.
    pub max_stale_bytes: u64,
    /// Close an app's open VCT once its oldest write is this old (seed 000: 120 s).
    pub max_stale_seconds: f64,
    /// How often the background checkpointer wakes (seed 000: 60 s).
    pub writeback_interval_seconds: f64,
    /// Below this battery percentage every app is in sync mode (seed 000: 15 %).
    pub low_battery_percent: u8,
    /// Writeback interval while the battery is low (seed 000: 30 s).
    pub low_battery_writeback_seconds: f64,
    /// Bytes a checkpoint writes before it checks for waiting foreground work.
    pub checkpoint_segment_bytes: u64,
    /// Name of the transactioning policy.
    pub transaction_policy: String,
    /// Name of the user-idle interval predictor; with one, background
    /// checkpoints wait for predicted idle time and the multi-app scheduler
    /// picks what fits (MobiFS §5.3–5.4). `none` checkpoints at once.
    pub idle_predictor: String,
    /// Write rate (bytes/s) the scheduler assumes to estimate how long a
    /// VCT takes to checkpoint (default: Nexus 5 eMMC, 46.23 MB/s).
    pub checkpoint_write_rate: f64,
    /// Foreground-first I/O (FastTrack, seed 001 §4).
    pub fasttrack: FastTrackConfig,
    /// Per-app settings.
    pub apps: Vec<AppConfig>,
}

/// FastTrack's parts, each switchable so the study can run them alone
/// (`[fasttrack]` in the config file; docs/FASTTRACK.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FastTrackConfig {
    /// PA: requests are admitted by priority and background work yields to
    /// foreground requests at segment boundaries (§4.2).
    pub preempt: bool,
    /// PR: reclaim takes background pages before foreground ones (§4.3).
    pub reclaim: bool,
    /// ID: foreground I/O goes to the device with a high I/O priority,
    /// background I/O with a low one, and background checkpoint I/O is held
    /// back while foreground requests are in flight (§4.4).
    pub dispatch: bool,
    /// Longest a background operation waits at one admission or segment
    /// boundary for foreground work (the aging bound; the paper has none).
    pub aging_ms: u64,
    /// How long after a foreground request ended a background commit still
    /// does not start (anticipation: the app's next request is likely near;
    /// 0: off). Off on a clock that moves only when told (tests, the
    /// simulator): nothing would end the wait.
    pub anticipation_ms: u64,
    /// Size of the segments long background reads and writes run in.
    pub segment_bytes: u64,
    /// Apps never preempted besides every uid below 10000 (§4.2: services).
    pub system_apps: Vec<String>,
    /// File listing the foreground app's tasks, one pid per line (Android's
    /// `/dev/cpuset/top-app/tasks`); the daemon follows it when set.
    pub tasks_file: Option<std::path::PathBuf>,
}

/// uids below this belong to system services (Android gives apps 10000 and up).
pub const FIRST_APP_UID: u32 = 10_000;

impl Default for FastTrackConfig {
    fn default() -> FastTrackConfig {
        FastTrackConfig {
            preempt: true,
            reclaim: true,
            dispatch: true,
            aging_ms: 500,
            anticipation_ms: 20,
            segment_bytes: 64 * 1024,
            system_apps: Vec::new(),
            tasks_file: None,
        }
    }
}

/// Settings of one app, matched by uid or by name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppConfig {
    pub name: String,
    /// uids that belong to this app.
    #[serde(default)]
    pub uids: Vec<u32>,
    #[serde(default)]
    pub mode: Option<SyncMode>,
    #[serde(default)]
    pub max_stale_bytes: Option<u64>,
    #[serde(default)]
    pub max_stale_seconds: Option<f64>,
}

pub const MIB: u64 = 1024 * 1024;

impl Default for Config {
    fn default() -> Config {
        Config {
            cache_size: 256 * MIB,
            dirty_high_ratio: 0.75,
            dirty_background_ratio: 0.5,
            mode: SyncMode::Memory,
            // Seed 000's background ratio (50 %) of the default cache.
            max_stale_bytes: 128 * MIB,
            max_stale_seconds: 120.0,
            writeback_interval_seconds: 60.0,
            low_battery_percent: 15,
            low_battery_writeback_seconds: 30.0,
            checkpoint_segment_bytes: 4 * MIB,
            transaction_policy: "staleness-limit".to_string(),
            idle_predictor: "none".to_string(),
            checkpoint_write_rate: 46.23e6,
            fasttrack: FastTrackConfig::default(),
            apps: Vec::new(),
        }
    }
}

/// The name of an app no `[[apps]]` table claims: `uid:N`.
pub fn uid_app_name(uid: u32) -> String {
    format!("uid:{uid}")
}

impl Config {
    /// The name of the app a uid belongs to, as the engine names it: the
    /// `[[apps]]` table that lists the uid, else `uid:N`.
    pub fn app_name_of(&self, uid: u32) -> String {
        self.apps.iter().find(|a| a.uids.contains(&uid)).map_or_else(|| uid_app_name(uid), |a| a.name.clone())
    }

    /// Parses TOML; the error names the offending key.
    pub fn from_toml(text: &str) -> Result<Config, String> {
        let config: Config = toml::from_str(text).map_err(|e| e.to_string())?;
        config.validate()?;
        Ok(config)
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.cache_size < 16 * 4096 {
            return Err(format!("cache_size {} is below the minimum of 64 KiB", self.cache_size));
        }
        for (key, v) in
            [("dirty_high_ratio", self.dirty_high_ratio), ("dirty_background_ratio", self.dirty_background_ratio)]
        {
            if !(v > 0.0 && v <= 1.0) {
                return Err(format!("{key} must be in (0, 1], got {v}"));
            }
        }
        for (key, v) in [
            ("max_stale_seconds", self.max_stale_seconds),
            ("writeback_interval_seconds", self.writeback_interval_seconds),
            ("low_battery_writeback_seconds", self.low_battery_writeback_seconds),
            ("checkpoint_write_rate", self.checkpoint_write_rate),
        ] {
            if !(v > 0.0 && v.is_finite()) {
                return Err(format!("{key} must be a positive number, got {v}"));
            }
        }
        if self.apps.iter().any(|a| a.name == "none") {
            return Err("an app may not be named \"none\": `mcfs ctl MNT fg none` clears the foreground app".into());
        }
        if self.fasttrack.segment_bytes < 4096 {
            return Err(format!("fasttrack.segment_bytes must be at least 4096, got {}", self.fasttrack.segment_bytes));
        }
        if self.low_battery_percent > 100 {
            return Err(format!("low_battery_percent must be 0..=100, got {}", self.low_battery_percent));
        }
        if !crate::policy::POLICY_NAMES.contains(&self.transaction_policy.as_str()) {
            return Err(format!(
                "transaction_policy \"{}\" is unknown; known: {}",
                self.transaction_policy,
                crate::policy::POLICY_NAMES.join(", ")
            ));
        }
        let predictors = crate::policy::interval::PREDICTOR_NAMES;
        if !predictors.contains(&self.idle_predictor.as_str()) {
            return Err(format!(
                "idle_predictor \"{}\" is unknown; known: {}",
                self.idle_predictor,
                predictors.join(", ")
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fasttrack_keys_parse_and_bad_values_are_named() {
        let config = Config::from_toml("[fasttrack]\npreempt = false\naging_ms = 50\nsystem_apps = [\"media\"]\n")
            .expect("valid");
        assert!(!config.fasttrack.preempt && config.fasttrack.reclaim);
        assert_eq!((config.fasttrack.aging_ms, config.fasttrack.system_apps.len()), (50, 1));
        let err = Config::from_toml("[fasttrack]\nsegment_bytes = 10\n").unwrap_err();
        assert!(err.contains("fasttrack.segment_bytes"), "{err}");
        let err = Config::from_toml("[[apps]]\nname = \"none\"\n").unwrap_err();
        assert!(err.contains("\"none\""), "{err}");
        let err = Config::from_toml("[fasttrack]\npreemt = true\n").unwrap_err();
        assert!(err.contains("preemt"), "{err}");
    }
}
