//! Device profiles: the figures the device and energy models run on, read from TOML (`profiles/*.toml`
//! are built in; docs/DEVICE_MODEL.md documents every key and every figure's source).
//!
//! The TOML uses the units papers use (MB/s, µs, nJ per byte, mW); a profile holds them converted once to
//! integers (bytes per second, ns, pJ, µW), so the models compute with integers only and the same profile
//! gives the same results, bit for bit, everywhere. A profile may also carry the `[published]` figures its
//! model parameters were derived from (sequential bandwidths, random 4 KiB IOPS), with their source: the
//! tests check that the model reproduces them. Invariant: a `DeviceProfile` built by `from_toml` has
//! positive bandwidths, a queue depth of at least one and every value small enough that the models'
//! integer arithmetic cannot overflow.

use serde::{Deserialize, Serialize};
use std::path::Path;

/// The figures of one storage device (see the module comment for the units).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DeviceProfile {
    pub name: String,
    /// Where the figures come from.
    pub source: String,
    pub read_bytes_per_s: u64,
    pub write_bytes_per_s: u64,
    /// Fixed time a request takes before its data moves.
    pub read_latency_ns: u64,
    pub write_latency_ns: u64,
    /// Time a flush (cache flush, the barrier of `sync`) takes once everything before it is done.
    pub flush_latency_ns: u64,
    /// Requests whose fixed latencies may overlap.
    pub queue_depth: u32,
    pub read_pj_per_byte: u64,
    pub write_pj_per_byte: u64,
    /// Fixed energy of one flush batch.
    pub flush_batch_pj: u64,
    /// Tail: how long the device stays in its active idle state after its last command before it drops to
    /// standby.
    pub tail_ns: u64,
    /// Power drawn during the tail, in µW (a µW for a ns is a thousandth of a pJ).
    pub tail_uw: u64,
    /// Energy of one transition from standby to active.
    pub wakeup_pj: u64,
    /// Time one transition from standby to active adds before the command that caused it starts.
    pub wakeup_latency_ns: u64,
    /// The published figures the model was derived from, if the profile gives them.
    pub published: Option<Published>,
}

/// Figures a source publishes for a device, in its units; the tests check that the model reproduces each
/// one given (bursts of 1 MiB requests for the sequential bandwidths, of 4 KiB requests at the profile's
/// queue depth for the random IOPS).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Published {
    /// Title, year and where in it the figures are.
    pub source: String,
    pub seq_read_mb_per_s: Option<f64>,
    pub seq_write_mb_per_s: Option<f64>,
    pub random_read_iops: Option<f64>,
    pub random_write_iops: Option<f64>,
}

// `from_toml` refuses published figures that are not finite and positive (no NaN), so equality is total.
impl Eq for Published {}

impl Published {
    /// The figures given, by their TOML key.
    pub fn figures(&self) -> impl Iterator<Item = (&'static str, f64)> {
        [
            ("seq_read_mb_per_s", self.seq_read_mb_per_s),
            ("seq_write_mb_per_s", self.seq_write_mb_per_s),
            ("random_read_iops", self.random_read_iops),
            ("random_write_iops", self.random_write_iops),
        ]
        .into_iter()
        .filter_map(|(key, value)| value.map(|v| (key, v)))
    }
}

/// The profile as written in TOML.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    name: String,
    #[serde(default)]
    source: Option<String>,
    read_mb_per_s: f64,
    write_mb_per_s: f64,
    read_latency_us: f64,
    write_latency_us: f64,
    flush_latency_us: f64,
    queue_depth: u32,
    read_nj_per_byte: f64,
    write_nj_per_byte: f64,
    flush_batch_uj: f64,
    tail_ms: f64,
    tail_mw: f64,
    wakeup_uj: f64,
    wakeup_latency_us: f64,
    #[serde(default)]
    published: Option<Published>,
}

/// Largest queue depth accepted (NVMe's limit; no phone storage comes near it).
const MAX_QUEUE_DEPTH: u32 = 65_536;

impl DeviceProfile {
    /// Names of the built-in profiles.
    pub const BUILTIN: &'static [&'static str] = &["emmc", "emmc-cq", "emmc-5.1", "ufs-3.1", "ufs-4.0", "ufs"];

    /// A built-in profile by name.
    pub fn builtin(name: &str) -> Option<DeviceProfile> {
        let text = match name {
            "emmc" => include_str!("../profiles/emmc.toml"),
            "emmc-cq" => include_str!("../profiles/emmc-cq.toml"),
            "emmc-5.1" => include_str!("../profiles/emmc-5.1.toml"),
            "ufs-3.1" => include_str!("../profiles/ufs-3.1.toml"),
            "ufs-4.0" => include_str!("../profiles/ufs-4.0.toml"),
            "ufs" => include_str!("../profiles/ufs.toml"),
            _ => return None,
        };
        DeviceProfile::from_toml(text).ok()
    }

    /// Parses and checks a profile; the error names the offending key.
    pub fn from_toml(text: &str) -> Result<DeviceProfile, String> {
        let file: ProfileFile = toml::from_str(text).map_err(|e| e.to_string().trim_end().to_string())?;
        if file.queue_depth == 0 || file.queue_depth > MAX_QUEUE_DEPTH {
            return Err(format!("queue_depth must be 1..={MAX_QUEUE_DEPTH}, got {}", file.queue_depth));
        }
        if let Some(published) = &file.published {
            if let Some((key, value)) = published.figures().find(|(_, v)| !(v.is_finite() && *v > 0.0)) {
                return Err(format!("published.{key} must be a finite positive number, got {value}"));
            }
        }
        Ok(DeviceProfile {
            name: file.name,
            source: file.source.unwrap_or_else(|| "not given".to_string()),
            // Up to 1 TB/s and 1 s of latency: far beyond any device, and small enough that the models'
            // u128 products cannot overflow.
            read_bytes_per_s: scaled("read_mb_per_s", file.read_mb_per_s, 1e6, 1.0, 1e12)?,
            write_bytes_per_s: scaled("write_mb_per_s", file.write_mb_per_s, 1e6, 1.0, 1e12)?,
            read_latency_ns: scaled("read_latency_us", file.read_latency_us, 1e3, 0.0, 1e9)?,
            write_latency_ns: scaled("write_latency_us", file.write_latency_us, 1e3, 0.0, 1e9)?,
            flush_latency_ns: scaled("flush_latency_us", file.flush_latency_us, 1e3, 0.0, 1e9)?,
            queue_depth: file.queue_depth,
            read_pj_per_byte: scaled("read_nj_per_byte", file.read_nj_per_byte, 1e3, 0.0, 1e9)?,
            write_pj_per_byte: scaled("write_nj_per_byte", file.write_nj_per_byte, 1e3, 0.0, 1e9)?,
            flush_batch_pj: scaled("flush_batch_uj", file.flush_batch_uj, 1e6, 0.0, 1e15)?,
            tail_ns: scaled("tail_ms", file.tail_ms, 1e6, 0.0, 1e16)?,
            // Up to 1 kW: a µW for up to 1e16 ns stays within the energy meter's u128.
            tail_uw: scaled("tail_mw", file.tail_mw, 1e3, 0.0, 1e9)?,
            wakeup_pj: scaled("wakeup_uj", file.wakeup_uj, 1e6, 0.0, 1e15)?,
            wakeup_latency_ns: scaled("wakeup_latency_us", file.wakeup_latency_us, 1e3, 0.0, 1e9)?,
            published: file.published,
        })
    }

    /// A built-in profile by name, else the TOML file at that path; the error names the file.
    pub fn load(name_or_path: &str) -> Result<DeviceProfile, String> {
        if let Some(profile) = DeviceProfile::builtin(name_or_path) {
            return Ok(profile);
        }
        let text = std::fs::read_to_string(Path::new(name_or_path)).map_err(|e| {
            format!(
                "device profile {name_or_path}: {e} (it is not a built-in profile either: {})",
                DeviceProfile::BUILTIN.join(", ")
            )
        })?;
        DeviceProfile::from_toml(&text).map_err(|e| format!("device profile {name_or_path}: {e}"))
    }
}

/// `value * scale` rounded to an integer, if `value` is finite and `value * scale` lies in `min..=max`.
fn scaled(key: &str, value: f64, scale: f64, min: f64, max: f64) -> Result<u64, String> {
    let v = value * scale;
    if !v.is_finite() || v.round() < min || v > max {
        let (lo, hi) = (min / scale, max / scale);
        return Err(format!("{key} must be a finite number in {lo}..={hi}, got {value}"));
    }
    Ok(v.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_parse_with_the_papers_figures() {
        for name in DeviceProfile::BUILTIN {
            let p = DeviceProfile::builtin(name).unwrap_or_else(|| panic!("built-in {name} parses"));
            assert_eq!(p.name, *name);
            assert!(p.tail_ns > 0 && p.tail_uw > 0 && p.wakeup_pj > 0, "{name} has a standby model");
            assert_eq!(p.write_pj_per_byte, 6 * p.read_pj_per_byte, "reads cost 1/6 of writes");
        }
        let emmc = DeviceProfile::builtin("emmc").unwrap();
        let ufs = DeviceProfile::builtin("ufs").unwrap();
        assert_eq!((emmc.read_bytes_per_s, emmc.write_bytes_per_s), (86_570_000, 46_230_000));
        assert_eq!((ufs.read_bytes_per_s, ufs.write_bytes_per_s), (3 * 86_570_000, 3 * 46_230_000));
        let emmc_cq = DeviceProfile::builtin("emmc-cq").unwrap();
        assert_eq!((emmc_cq.queue_depth, emmc.queue_depth), (32, 1));
        assert_eq!(
            DeviceProfile { name: emmc.name.clone(), source: emmc.source.clone(), queue_depth: 1, ..emmc_cq },
            emmc
        );
        assert!(DeviceProfile::builtin("nvme").is_none());
    }

    #[test]
    fn scaled_rounds_and_refuses_out_of_range_values() {
        assert_eq!(scaled("k", 2.29, 1e6, 1e6, 1e8), Ok(2_290_000));
        assert_eq!(scaled("k", 0.0004, 1e3, 0.0, 1e9), Ok(0));
        for bad in [f64::NAN, f64::INFINITY, -1.0, 2e6] {
            let err = scaled("read_latency_us", bad, 1e3, 0.0, 1e9).expect_err("refused");
            assert!(err.starts_with("read_latency_us must be"), "{err}");
        }
    }
}
