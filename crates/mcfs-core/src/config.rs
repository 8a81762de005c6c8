//! Engine configuration: the TOML a user writes (documented key by key in
//! docs/CONFIG.md). Every field has a default, so an empty file is valid.

use serde::{Deserialize, Serialize};
use std::time::Duration;

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

/// Where VCT boundaries may fall, per mount (docs/ENGINE.md, "Consistency modes").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Consistency {
    /// After any operation: every request reaches the engine in the app's
    /// order (no kernel writeback cache).
    #[default]
    Operation,
    /// Only at the app's sync points (fsync, fdatasync, fsyncdir, rename,
    /// unlink, rmdir, link): the kernel's writeback cache holds writes and
    /// sends them later, in no particular order.
    SyncPoint,
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
    /// Where VCT boundaries may fall: after any operation, or only at sync points.
    pub consistency: Consistency,
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
    /// Committed transactions wait in the journal to be applied in place
    /// until they take this many bytes of it (then they are applied at once).
    pub apply_backlog_bytes: u64,
    /// ... or until the oldest of them has waited this long.
    pub apply_backlog_seconds: f64,
    /// A commit writes data appended past the end of an existing backing
    /// file straight in place (not into the journal) from the first write
    /// of at least this many bytes; `0`: never (docs/JOURNAL.md).
    pub append_in_place_bytes: u64,
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
    /// How the daemon talks to the kernel (`[fuse]`).
    pub fuse: FuseConfig,
    /// The page cache's policies (`[cache]`).
    pub cache: CacheConfig,
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

/// The FUSE connection's settings (`[fuse]` in the config file).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FuseConfig {
    /// Serve requests over io_uring (docs/FUSE_URING.md) or over `/dev/fuse`.
    pub io_uring: IoUringMode,
}

/// Whether FUSE requests come over io_uring.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IoUringMode {
    /// io_uring when the kernel offers it and mcfs mounts itself (as root), else `/dev/fuse`.
    #[default]
    Auto,
    /// io_uring or no mount: the mount fails, naming the cause, where it cannot be had.
    On,
    /// `/dev/fuse` (read and write per request).
    Off,
}

/// The page cache's policies, by name (`[cache]` in the config file;
/// docs/ENGINE.md, "The page cache").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CacheConfig {
    /// Which page reclaim takes next (`crate::cache::REPLACEMENT_NAMES`).
    pub replacement: String,
    /// Which tier a page goes to (`crate::cache::PLACEMENT_NAMES`).
    pub placement: String,
}

impl Default for CacheConfig {
    fn default() -> CacheConfig {
        CacheConfig { replacement: "fasttrack+lru".to_string(), placement: "dram".to_string() }
    }
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
            consistency: Consistency::Operation,
            // Seed 000's background ratio (50 %) of the default cache.
            max_stale_bytes: 128 * MIB,
            max_stale_seconds: 120.0,
            writeback_interval_seconds: 60.0,
            low_battery_percent: 15,
            low_battery_writeback_seconds: 30.0,
            checkpoint_segment_bytes: 4 * MIB,
            apply_backlog_bytes: 32 * MIB,
            apply_backlog_seconds: 5.0,
            append_in_place_bytes: 64 * 1024,
            transaction_policy: "staleness-limit".to_string(),
            idle_predictor: "none".to_string(),
            checkpoint_write_rate: 46.23e6,
            fasttrack: FastTrackConfig::default(),
            fuse: FuseConfig::default(),
            cache: CacheConfig::default(),
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

    /// Checks every key against its allowed range (docs/CONFIG.md); the
    /// error names the key, the value and the range. Mount and simulator
    /// both load configs through this, so what one accepts the other runs.
    pub fn validate(&self) -> Result<(), String> {
        in_range("cache_size", self.cache_size, MIN_CACHE_SIZE, MAX_BYTES, " bytes")?;
        for (key, v) in
            [("dirty_high_ratio", self.dirty_high_ratio), ("dirty_background_ratio", self.dirty_background_ratio)]
        {
            if !(v > 0.0 && v <= 1.0) {
                return Err(format!("{key} must be in (0, 1], got {v:?}"));
            }
        }
        in_range("max_stale_bytes", self.max_stale_bytes, 1, MAX_BYTES, " bytes")?;
        for (key, v) in [
            ("max_stale_seconds", self.max_stale_seconds),
            ("writeback_interval_seconds", self.writeback_interval_seconds),
            ("low_battery_writeback_seconds", self.low_battery_writeback_seconds),
            ("apply_backlog_seconds", self.apply_backlog_seconds),
        ] {
            in_range(key, v, MIN_SECONDS, MAX_SECONDS, " seconds")?;
        }
        in_range("low_battery_percent", self.low_battery_percent, 0, 100, "")?;
        in_range("checkpoint_segment_bytes", self.checkpoint_segment_bytes, 1, MAX_BYTES, " bytes")?;
        in_range("apply_backlog_bytes", self.apply_backlog_bytes, 0, MAX_BYTES, " bytes")?;
        in_range("append_in_place_bytes", self.append_in_place_bytes, 0, MAX_BYTES, " bytes")?;
        in_range("checkpoint_write_rate", self.checkpoint_write_rate, 1.0, MAX_WRITE_RATE, " bytes/s")?;
        known("transaction_policy", &self.transaction_policy, crate::policy::POLICY_NAMES)?;
        known("idle_predictor", &self.idle_predictor, crate::policy::interval::PREDICTOR_NAMES)?;
        known("cache.replacement", &self.cache.replacement, crate::cache::REPLACEMENT_NAMES)?;
        known("cache.placement", &self.cache.placement, crate::cache::PLACEMENT_NAMES)?;
        self.validate_fasttrack()?;
        self.validate_apps()
    }

    fn validate_fasttrack(&self) -> Result<(), String> {
        let ft = &self.fasttrack;
        in_range("fasttrack.aging_ms", ft.aging_ms, 0, MAX_MILLIS, " ms")?;
        in_range("fasttrack.anticipation_ms", ft.anticipation_ms, 0, MAX_MILLIS, " ms")?;
        in_range("fasttrack.segment_bytes", ft.segment_bytes, 4096, MAX_BYTES, " bytes")?;
        for name in &ft.system_apps {
            if !self.apps.iter().any(|a| &a.name == name) && uid_of_app_name(name).is_none() {
                return Err(format!(
                    "fasttrack.system_apps names \"{name}\", which is neither an [[apps]] name nor uid:N"
                ));
            }
        }
        Ok(())
    }

    /// Each app's own limits, and names and uids that say one thing only.
    fn validate_apps(&self) -> Result<(), String> {
        let mut owner_of_uid = std::collections::HashMap::new();
        for (i, app) in self.apps.iter().enumerate() {
            let name = &app.name;
            if name.is_empty() {
                return Err(format!("[[apps]] number {} has an empty name", i + 1));
            }
            if name == "none" {
                return Err("an app may not be named \"none\": `mcfs ctl MNT fg none` clears the foreground app".into());
            }
            if self.apps[..i].iter().any(|earlier| &earlier.name == name) {
                return Err(format!("two [[apps]] are named \"{name}\""));
            }
            // `uid:N` is how the engine names the app of a uid no table claims.
            if uid_of_app_name(name).is_some_and(|uid| !app.uids.contains(&uid)) {
                return Err(format!("[[apps]] \"{name}\": a name uid:N must list uid N in its uids"));
            }
            for uid in &app.uids {
                if let Some(other) = owner_of_uid.insert(*uid, name) {
                    return Err(format!("uid {uid} is in two [[apps]]: \"{other}\" and \"{name}\""));
                }
            }
            if let Some(bytes) = app.max_stale_bytes {
                in_range(&format!("[[apps]] \"{name}\": max_stale_bytes"), bytes, 1, MAX_BYTES, " bytes")?;
            }
            if let Some(seconds) = app.max_stale_seconds {
                let key = format!("[[apps]] \"{name}\": max_stale_seconds");
                in_range(&key, seconds, MIN_SECONDS, MAX_SECONDS, " seconds")?;
            }
        }
        Ok(())
    }
}

/// The uid in an app name of the form `uid:N`.
fn uid_of_app_name(name: &str) -> Option<u32> {
    name.strip_prefix("uid:")?.parse().ok()
}

/// Smallest `cache_size`: 16 pages.
const MIN_CACHE_SIZE: u64 = 16 * 4096;
/// Largest size any key takes (1 PiB): beyond any device, and far enough
/// below `u64::MAX` that sums and products with page counts cannot overflow.
pub const MAX_BYTES: u64 = 1 << 50;
/// Shortest interval a time key takes (1 ms); shorter ones would spin.
pub const MIN_SECONDS: f64 = 0.001;
/// Longest time any key takes (about 31 years): a deadline this far off
/// still fits every clock and `Duration`.
pub const MAX_SECONDS: f64 = 1e9;
const MAX_MILLIS: u64 = 1_000_000_000_000;
/// Largest `checkpoint_write_rate` (1 PB/s).
const MAX_WRITE_RATE: f64 = 1e15;

/// `Err` naming `key`, the range and `value` unless `min <= value <= max`
/// (never for NaN). Values print in Rust's shortest form (`1e308`).
fn in_range<T: PartialOrd + std::fmt::Debug>(key: &str, value: T, min: T, max: T, unit: &str) -> Result<(), String> {
    if min <= value && value <= max {
        return Ok(());
    }
    Err(format!("{key} must be in {min:?}..={max:?}{unit}, got {value:?}"))
}

/// `value` must be one of the names `names` (a registry's).
fn known(key: &str, value: &str, names: &[&str]) -> Result<(), String> {
    if names.contains(&value) {
        return Ok(());
    }
    Err(format!("{key} \"{value}\" is unknown; known: {}", names.join(", ")))
}

/// The config's periods the engine asks for before every call, as
/// `Duration`s worked out once (`seconds` converts a float: about 50
/// instructions each time).
#[derive(Clone, Copy, Debug)]
pub struct Periods {
    pub writeback_interval: Duration,
    pub low_battery_writeback: Duration,
    pub apply_backlog: Duration,
}

impl Periods {
    pub fn of(config: &Config) -> Periods {
        Periods {
            writeback_interval: seconds(config.writeback_interval_seconds),
            low_battery_writeback: seconds(config.low_battery_writeback_seconds),
            apply_backlog: seconds(config.apply_backlog_seconds),
        }
    }
}

/// A number of seconds as a `Duration`, never panicking: NaN and negatives
/// are zero, anything past `MAX_SECONDS` is `MAX_SECONDS` (validated
/// configs never get there; computed values such as bytes / rate might).
pub fn seconds(s: f64) -> Duration {
    Duration::from_secs_f64(if s > 0.0 { s.min(MAX_SECONDS) } else { 0.0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fuse_io_uring_is_auto_unless_set() {
        assert_eq!(Config::default().fuse.io_uring, IoUringMode::Auto);
        for (text, mode) in [("on", IoUringMode::On), ("off", IoUringMode::Off), ("auto", IoUringMode::Auto)] {
            let config = Config::from_toml(&format!("[fuse]\nio_uring = \"{text}\"\n")).unwrap();
            assert_eq!(config.fuse.io_uring, mode);
        }
        let err = Config::from_toml("[fuse]\nio_uring = \"yes\"\n").unwrap_err();
        assert!(err.contains("io_uring") || err.contains("yes"), "{err}");
    }

    #[test]
    fn fasttrack_keys_parse_and_bad_values_are_named() {
        let config = Config::from_toml(
            "[fasttrack]\npreempt = false\naging_ms = 50\nsystem_apps = [\"media\"]\n[[apps]]\nname = \"media\"\n",
        )
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

    #[test]
    fn cache_policies_are_chosen_by_name_and_unknown_ones_are_named() {
        assert_eq!(Config::default().cache, CacheConfig::default());
        assert_eq!(
            (CacheConfig::default().replacement.as_str(), CacheConfig::default().placement.as_str()),
            ("fasttrack+lru", "dram")
        );
        let config = Config::from_toml("[cache]\nreplacement = \"lru\"\n").expect("valid");
        assert_eq!((config.cache.replacement.as_str(), config.cache.placement.as_str()), ("lru", "dram"));
        let err = Config::from_toml("[cache]\nreplacement = \"arc\"\n").unwrap_err();
        assert_eq!(err, "cache.replacement \"arc\" is unknown; known: fasttrack+lru, lru");
        let err = Config::from_toml("[cache]\nplacement = \"nvm\"\n").unwrap_err();
        assert_eq!(err, "cache.placement \"nvm\" is unknown; known: dram");
    }

    /// Every numeric key refuses values outside its range, naming the key,
    /// the value and the range; a value at either end of the range passes.
    #[test]
    fn every_numeric_key_is_range_checked() {
        let bad = [
            ("cache_size = 10", "cache_size"),
            ("cache_size = 1152921504606846976", "cache_size"),
            ("dirty_high_ratio = nan", "dirty_high_ratio"),
            ("dirty_background_ratio = 0.0", "dirty_background_ratio"),
            ("max_stale_bytes = 0", "max_stale_bytes"),
            ("max_stale_bytes = 9223372036854775807", "max_stale_bytes"),
            ("max_stale_seconds = 1e308", "max_stale_seconds"),
            ("max_stale_seconds = inf", "max_stale_seconds"),
            ("max_stale_seconds = -1", "max_stale_seconds"),
            ("writeback_interval_seconds = 1e308", "writeback_interval_seconds"),
            ("writeback_interval_seconds = nan", "writeback_interval_seconds"),
            ("writeback_interval_seconds = 1e-300", "writeback_interval_seconds"),
            ("low_battery_writeback_seconds = -inf", "low_battery_writeback_seconds"),
            ("low_battery_percent = 101", "low_battery_percent"),
            ("checkpoint_segment_bytes = 0", "checkpoint_segment_bytes"),
            ("checkpoint_write_rate = 1e-300", "checkpoint_write_rate"),
            ("checkpoint_write_rate = 1e300", "checkpoint_write_rate"),
            ("[fasttrack]\naging_ms = 9223372036854775807", "fasttrack.aging_ms"),
            ("[fasttrack]\nanticipation_ms = 9223372036854775807", "fasttrack.anticipation_ms"),
            ("[fasttrack]\nsegment_bytes = 1152921504606846976", "fasttrack.segment_bytes"),
            ("[[apps]]\nname = \"a\"\nmax_stale_seconds = 1e308", "[[apps]] \"a\": max_stale_seconds"),
            ("[[apps]]\nname = \"a\"\nmax_stale_seconds = nan", "[[apps]] \"a\": max_stale_seconds"),
            ("[[apps]]\nname = \"a\"\nmax_stale_bytes = 0", "[[apps]] \"a\": max_stale_bytes"),
        ];
        for (toml, key) in bad {
            let err = Config::from_toml(toml).expect_err(toml);
            assert!(err.starts_with(&format!("{key} must be in ")), "{toml}: {err}");
            assert!(err.contains(", got "), "{toml}: {err}");
        }
        let err = Config::from_toml("max_stale_seconds = 1e308").unwrap_err();
        assert_eq!(err, "max_stale_seconds must be in 0.001..=1000000000.0 seconds, got 1e308");
        let edges = "cache_size = 65536\nmax_stale_bytes = 1\nmax_stale_seconds = 0.001\n\
                     writeback_interval_seconds = 1e9\nlow_battery_percent = 100\ncheckpoint_write_rate = 1\n\
                     [fasttrack]\naging_ms = 0\nsegment_bytes = 4096\n";
        Config::from_toml(edges).expect("the ends of every range are allowed");
    }

    #[test]
    fn apps_must_be_named_once_and_own_distinct_uids() {
        let two = |extra: &str| format!("[[apps]]\nname = \"a\"\nuids = [10001]\n[[apps]]\n{extra}\n");
        let err = Config::from_toml(&two("name = \"a\"")).unwrap_err();
        assert_eq!(err, "two [[apps]] are named \"a\"");
        let err = Config::from_toml(&two("name = \"b\"\nuids = [10002, 10001]")).unwrap_err();
        assert_eq!(err, "uid 10001 is in two [[apps]]: \"a\" and \"b\"");
        let err = Config::from_toml(&two("name = \"\"")).unwrap_err();
        assert!(err.contains("empty name"), "{err}");
        let err = Config::from_toml(&two("name = \"uid:10001\"")).unwrap_err();
        assert!(err.contains("uid:10001") && err.contains("uid N"), "{err}");
        Config::from_toml(&two("name = \"uid:10002\"\nuids = [10002]")).expect("uid:N for its own uid");
        Config::from_toml(&two("name = \"b\"\nuids = [10002]")).expect("distinct names and uids");
    }

    #[test]
    fn system_apps_must_name_an_app_or_a_uid() {
        let err = Config::from_toml("[fasttrack]\nsystem_apps = [\"media\"]\n").unwrap_err();
        assert!(err.contains("fasttrack.system_apps") && err.contains("\"media\""), "{err}");
        let err = Config::from_toml("[fasttrack]\nsystem_apps = [\"uid:x\"]\n").unwrap_err();
        assert!(err.contains("\"uid:x\""), "{err}");
        let ok = "[fasttrack]\nsystem_apps = [\"media\", \"uid:1013\"]\n[[apps]]\nname = \"media\"\n";
        Config::from_toml(ok).expect("an [[apps]] name and a uid:N");
    }

    #[test]
    fn consistency_is_operation_unless_set_and_unknown_modes_are_named() {
        assert_eq!(Config::from_toml("").unwrap().consistency, Consistency::Operation);
        let config = Config::from_toml("consistency = \"sync-point\"").expect("valid");
        assert_eq!(config.consistency, Consistency::SyncPoint);
        let err = Config::from_toml("consistency = \"syncpoint\"").unwrap_err();
        assert!(err.contains("syncpoint") && err.contains("sync-point"), "{err}");
    }

    #[test]
    fn seconds_never_panic() {
        assert_eq!(seconds(1.5), Duration::from_millis(1500));
        for (s, expected) in
            [(f64::NAN, 0.0), (-1.0, 0.0), (f64::NEG_INFINITY, 0.0), (1e308, MAX_SECONDS), (f64::INFINITY, MAX_SECONDS)]
        {
            assert_eq!(seconds(s), Duration::from_secs_f64(expected), "{s}");
        }
    }
}
