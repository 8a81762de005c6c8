//! What machine a run happened on and when, for the report: CPU count and
//! model, memory, kernel, the disk under the scratch directory, and the UTC
//! date. Anything that cannot be read is reported as "unknown", never guessed.

use serde_json::{json, Value};
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

pub fn describe(scratch: &Path) -> Value {
    json!({
        "date_utc": utc_now(),
        "nproc": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "cpu": cpu_model().unwrap_or_else(unknown),
        "mem_total_bytes": mem_total_bytes(),
        "kernel": fs::read_to_string("/proc/sys/kernel/osrelease").map(|s| s.trim().to_string()).unwrap_or_else(|_| unknown()),
        "disk": disk_under(scratch).unwrap_or_else(unknown),
    })
}

fn unknown() -> String {
    "unknown".to_string()
}

fn cpu_model() -> Option<String> {
    let text = fs::read_to_string("/proc/cpuinfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("model name"))?;
    Some(line.split_once(':')?.1.trim().to_string())
}

fn mem_total_bytes() -> Option<u64> {
    let text = fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 =
        text.lines().find_map(|l| l.strip_prefix("MemTotal:"))?.trim().strip_suffix("kB")?.trim().parse().ok()?;
    Some(kib * 1024)
}

/// "vda (254:0), 256 GiB, rotational=1": the block device holding `path`.
fn disk_under(path: &Path) -> Option<String> {
    if is_tmpfs(path) {
        return Some("tmpfs (the loop images are in memory)".to_string());
    }
    let dev = fs::metadata(path).ok()?.dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let sys = Path::new("/sys/dev/block").join(format!("{major}:{minor}"));
    let name = fs::canonicalize(&sys).ok()?.file_name()?.to_string_lossy().into_owned();
    let sectors: u64 = fs::read_to_string(sys.join("size")).ok()?.trim().parse().ok()?;
    // A partition has no queue of its own; its disk's is one level up.
    let rotational = fs::read_to_string(sys.join("queue/rotational"))
        .or_else(|_| fs::read_to_string(sys.join("../queue/rotational")))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| unknown());
    Some(format!("{name} ({major}:{minor}), {} GiB, rotational={rotational}", (sectors * 512) >> 30))
}

fn is_tmpfs(path: &Path) -> bool {
    let Ok(c_path) = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: statfs fills the zeroed struct we pass; the path is NUL-terminated.
    let mut buf: libc::statfs = unsafe { std::mem::zeroed() };
    unsafe { libc::statfs(c_path.as_ptr(), &mut buf) == 0 && buf.f_type == libc::TMPFS_MAGIC }
}

/// ISO 8601 UTC, e.g. 2026-11-21T20:04:28Z.
pub fn utc_now() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    format_utc(secs)
}

fn format_utc(epoch_seconds: u64) -> String {
    let days = epoch_seconds / 86_400;
    let rest = epoch_seconds % 86_400;
    let (year, month, day) = civil_from_days(days as i64);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rest / 3600, rest % 3600 / 60, rest % 60)
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian
/// calendar (the well-known era-based conversion).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates_are_formatted_correctly() {
        assert_eq!(format_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(format_utc(1_795_291_468), "2026-11-21T20:04:28Z");
        assert_eq!(format_utc(4_102_444_799), "2099-12-31T23:59:59Z");
    }

    #[test]
    fn description_has_every_field() {
        let d = describe(Path::new("/"));
        for key in ["date_utc", "nproc", "cpu", "mem_total_bytes", "kernel", "disk"] {
            assert!(d.get(key).is_some(), "{key} missing in {d}");
        }
        assert!(d["nproc"].as_u64().unwrap() >= 1);
    }
}
