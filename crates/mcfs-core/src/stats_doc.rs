//! The document `mcfs stat --json` prints (docs/STAT.md): the engine's
//! counters with a schema version, the time they were taken, and one unit
//! convention. Here rather than in the `mcfs` program so that a test can
//! hold the simulator's counters, put through the same function, against a
//! live mount's. The engine counts time in ns or µs and energy in nJ; here
//! every duration becomes seconds and every energy joules, and the field's
//! name says so (`bg_wait_ns` → `bg_wait_seconds`), so a consumer never has
//! to guess a unit.

use serde_json::{Map, Value};
use std::time::{SystemTime, UNIX_EPOCH};

/// Bumped when a field is renamed, removed or changes meaning (adding one is not a change).
pub const SCHEMA_VERSION: u64 = 1;

/// Engine suffixes and what they become: (suffix, new suffix, divisor).
const UNIT_RENAMES: &[(&str, &str, f64)] =
    &[("_ns", "_seconds", 1e9), ("_us", "_seconds", 1e6), ("_nj", "_joules", 1e9)];

/// The daemon's raw stats (engine stats plus device estimate, log counts
/// and daemon facts) as the documented schema, stamped with `now`.
pub fn document(raw: Value, now: SystemTime) -> Value {
    let mut doc = Map::new();
    doc.insert("schema_version".into(), SCHEMA_VERSION.into());
    let timestamp = now.duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
    doc.insert("timestamp_seconds".into(), timestamp.into());
    let Value::Object(top) = in_seconds(raw) else {
        return Value::Object(doc);
    };
    doc.extend(top);
    Value::Object(doc)
}

/// Renames every field with an engine unit suffix, at any depth, and
/// rescales its number (a `null`, a value not known yet, stays `null`).
fn in_seconds(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(map.into_iter().map(|(key, v)| rescale(key, in_seconds(v))).collect()),
        Value::Array(items) => Value::Array(items.into_iter().map(in_seconds).collect()),
        other => other,
    }
}

fn rescale(key: String, value: Value) -> (String, Value) {
    for (suffix, unit, divisor) in UNIT_RENAMES {
        if let Some(stem) = key.strip_suffix(suffix) {
            let value = value.as_f64().map_or(value, |n| (n / divisor).into());
            return (format!("{stem}{unit}"), value);
        }
    }
    (key, value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    #[test]
    fn every_duration_is_seconds_and_energy_joules() {
        let raw = json!({
            "bytes_written": 7, "checkpoints": 2, "last_checkpoint_duration_ns": 500_000_000u64,
            "fasttrack": {"bg_wait_ns": 250_000_000u64, "foreground": null},
            "apps": {"a": {"fsync_p99_us": 0.127, "stalled_seconds": 1.5}},
            "device_estimate": {"busy_ns": 3_000_000_000u64, "energy": {"total_nj": 2_500_000_000u64}},
            "unapplied_recent": [{"app": "a", "errno": 95}]
        });
        let doc = document(raw, UNIX_EPOCH + Duration::from_millis(1_700_000_000_250));
        assert_eq!(doc["schema_version"], json!(SCHEMA_VERSION));
        assert_eq!(doc["timestamp_seconds"], json!(1_700_000_000.25));
        assert_eq!(doc["fasttrack"]["bg_wait_seconds"], json!(0.25));
        assert_eq!(doc["fasttrack"]["foreground"], Value::Null);
        assert_eq!(doc["apps"]["a"]["fsync_p99_seconds"].as_f64(), Some(0.127e-6));
        assert_eq!(doc["apps"]["a"]["stalled_seconds"], json!(1.5));
        assert_eq!(doc["device_estimate"]["busy_seconds"], json!(3.0));
        assert_eq!(doc["device_estimate"]["energy"]["total_joules"], json!(2.5));
        assert_eq!(doc["last_checkpoint_duration_seconds"], json!(0.5));
        assert_eq!((doc["bytes_written"].clone(), doc["unapplied_recent"][0]["errno"].clone()), (json!(7), json!(95)));
        let text = doc.to_string();
        for engine_unit in ["_ns\"", "_us\"", "_nj\""] {
            assert!(!text.contains(engine_unit), "{engine_unit} left in {text}");
        }
    }

    #[test]
    fn no_checkpoint_yet_has_no_duration() {
        let doc = document(json!({"checkpoints": 0, "last_checkpoint_duration_ns": null}), UNIX_EPOCH);
        assert_eq!(doc["last_checkpoint_duration_seconds"], Value::Null);
        assert_eq!(doc["timestamp_seconds"], json!(0.0));
    }
}
