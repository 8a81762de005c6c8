//! Engine config keys set as mount options (`-o cache_size=64M`). An
//! option overrides the same key of the config file and goes through the
//! same checks: the value is typed after the key's TOML type, put into the
//! config's TOML form and read back with `Config::validate`, so an option
//! and a file line fail alike, naming the key and the range. Nested keys
//! take dotted names (`fasttrack.aging_ms=200`); sizes take K, M, G or T.

use mcfs_core::Config;
use std::collections::HashMap;
use std::path::PathBuf;
use toml::{Table, Value};

/// One `KEY=VALUE` mount option that names a config key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Override {
    pub key: String,
    pub value: String,
}

/// Whether `key` is a config key a mount option can set.
pub fn is_key(key: &str) -> bool {
    schema().is_ok_and(|schema| matches!(lookup(&schema, key), Ok(Some(_))))
}

/// `config` with each override applied in order, each checked as it comes:
/// the error names the option, then the cause (as for the file).
pub fn apply(config: Config, overrides: &[Override]) -> Result<Config, String> {
    let schema = schema()?;
    let mut config = config;
    // A list option replaces the file's list; its repeats add to it.
    let mut lists: HashMap<&str, Vec<Value>> = HashMap::new();
    for o in overrides {
        let fail = |cause: String| format!("option {}={}: {cause}", o.key, o.value);
        let kind = lookup(&schema, &o.key).map_err(fail)?.ok_or_else(|| fail("not a config key".into()))?;
        let value = match kind {
            Value::Array(_) => {
                let items = lists.entry(&o.key).or_default();
                // An empty item empties the list: `-o fasttrack.system_apps=`.
                items.extend((!o.value.is_empty()).then(|| Value::String(o.value.clone())));
                Value::Array(items.clone())
            }
            _ => typed(&o.key, kind, &o.value).map_err(fail)?,
        };
        let mut table = Table::try_from(&config).map_err(|e| fail(e.to_string()))?;
        set(&mut table, &o.key, value);
        config = Value::Table(table).try_into().map_err(|e: toml::de::Error| fail(e.to_string()))?;
        config.validate().map_err(fail)?;
    }
    Ok(config)
}

/// The config's TOML form with every key present, so each key's type can
/// be read off it: the defaults, plus a value for each optional key (an
/// unset option has no TOML form).
fn schema() -> Result<Table, String> {
    let mut config = Config::default();
    config.fasttrack.tasks_file = Some(PathBuf::new());
    Table::try_from(&config).map_err(|e| format!("cannot list the config keys: {e}"))
}

/// The schema value of a dotted key: `Ok(None)` if there is none, an error
/// if the key names a table (only its keys are options).
fn lookup<'a>(schema: &'a Table, key: &str) -> Result<Option<&'a Value>, String> {
    if key == "apps" {
        return Err("[[apps]] tables are set in the config file only".into());
    }
    let mut table = schema;
    let mut parts = key.split('.').peekable();
    while let Some(part) = parts.next() {
        let Some(value) = table.get(part) else { return Ok(None) };
        match (value, parts.peek()) {
            (Value::Table(inner), Some(_)) => table = inner,
            (Value::Table(_), None) => return Err(format!("{key} is a table; set its keys, e.g. -o {key}.KEY=VALUE")),
            (_, Some(_)) => return Ok(None),
            (value, None) => return Ok(Some(value)),
        }
    }
    Ok(None)
}

/// `text` as a value of the type `kind` has.
fn typed(key: &str, kind: &Value, text: &str) -> Result<Value, String> {
    match kind {
        Value::Integer(_) if is_size_key(key) => parse_size(text).map(Value::Integer),
        Value::Integer(_) => {
            text.parse().map(Value::Integer).map_err(|_| format!("expected an integer, got \"{text}\""))
        }
        Value::Float(_) => text.parse().map(Value::Float).map_err(|_| format!("expected a number, got \"{text}\"")),
        Value::Boolean(_) => match text {
            "true" => Ok(Value::Boolean(true)),
            "false" => Ok(Value::Boolean(false)),
            _ => Err(format!("expected true or false, got \"{text}\"")),
        },
        _ => Ok(Value::String(text.to_string())),
    }
}

/// Byte counts: the keys named `*_size` or `*_bytes`.
fn is_size_key(key: &str) -> bool {
    key.ends_with("_size") || key.ends_with("_bytes")
}

/// A byte count with an optional binary suffix: `65536`, `64K`, `256M`, `1G`, `1T`.
fn parse_size(text: &str) -> Result<i64, String> {
    let bad = || format!("expected a size in bytes with an optional K, M, G or T suffix, got \"{text}\"");
    let (digits, shift) = match text.char_indices().last() {
        Some((i, unit)) if unit.is_ascii_alphabetic() => {
            let shift = match unit.to_ascii_uppercase() {
                'K' => 10,
                'M' => 20,
                'G' => 30,
                'T' => 40,
                _ => return Err(bad()),
            };
            (&text[..i], shift)
        }
        _ => (text, 0),
    };
    let number: i64 = digits.parse().map_err(|_| bad())?;
    number.checked_mul(1 << shift).ok_or_else(|| format!("{text} is too large"))
}

/// Puts `value` at the dotted `key` (whose tables the schema has).
fn set(table: &mut Table, key: &str, value: Value) {
    let mut parts: Vec<&str> = key.split('.').collect();
    let Some(last) = parts.pop() else { return };
    let mut table = table;
    for part in parts {
        table = match table.entry(part).or_insert_with(|| Value::Table(Table::new())) {
            Value::Table(inner) => inner,
            _ => return,
        };
    }
    table.insert(last.to_string(), value);
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcfs_core::SyncMode;

    fn with(options: &[(&str, &str)]) -> Result<Config, String> {
        let overrides: Vec<Override> =
            options.iter().map(|(k, v)| Override { key: k.to_string(), value: v.to_string() }).collect();
        apply(Config::default(), &overrides)
    }

    #[test]
    fn values_are_typed_after_their_key() {
        let c = with(&[
            ("cache_size", "64M"),
            ("dirty_high_ratio", "0.5"),
            ("max_stale_seconds", "30"),
            ("mode", "sync"),
            ("low_battery_percent", "20"),
            ("transaction_policy", "tpl"),
            ("consistency", "sync-point"),
            ("fasttrack.preempt", "false"),
            ("fasttrack.aging_ms", "200"),
            ("fasttrack.segment_bytes", "8K"),
            ("fasttrack.tasks_file", "/dev/cpuset/top-app/tasks"),
            ("fuse.io_uring", "off"),
            ("cache.replacement", "lru"),
        ])
        .unwrap();
        assert_eq!(c.cache_size, 64 << 20);
        assert_eq!((c.dirty_high_ratio, c.max_stale_seconds), (0.5, 30.0));
        assert_eq!((c.mode, c.low_battery_percent), (SyncMode::Sync, 20));
        assert_eq!(c.transaction_policy, "tpl");
        assert_eq!(c.consistency, mcfs_core::Consistency::SyncPoint);
        assert!(!c.fasttrack.preempt && c.fasttrack.reclaim);
        assert_eq!((c.fasttrack.aging_ms, c.fasttrack.segment_bytes), (200, 8192));
        assert_eq!(c.fasttrack.tasks_file, Some(PathBuf::from("/dev/cpuset/top-app/tasks")));
        assert_eq!(c.fuse.io_uring, mcfs_core::IoUringMode::Off);
        assert_eq!((c.cache.replacement.as_str(), c.cache.placement.as_str()), ("lru", "dram"));
        let err = with(&[("cache.placement", "nvm")]).unwrap_err();
        assert!(err.contains("cache.placement \"nvm\" is unknown"), "{err}");
    }

    #[test]
    fn an_option_overrides_the_file_and_later_options_earlier_ones() {
        let file = crate::config_file::parse("cache_size = 1048576\nmode = \"sync\"\n").unwrap();
        let o = |k: &str, v: &str| Override { key: k.into(), value: v.into() };
        let c = apply(file, &[o("cache_size", "2M"), o("cache_size", "3M")]).unwrap();
        assert_eq!((c.cache_size, c.mode), (3 << 20, SyncMode::Sync), "the file's other keys stay");
    }

    #[test]
    fn sizes_take_binary_suffixes_and_only_size_keys_do() {
        for (text, bytes) in [("65536", 65536), ("64K", 64 << 10), ("64k", 64 << 10), ("1G", 1 << 30), ("2T", 2 << 40)]
        {
            assert_eq!(parse_size(text), Ok(bytes), "{text}");
        }
        for bad in ["", "M", "12X", "1.5M", "-", "1MB"] {
            assert!(parse_size(bad).unwrap_err().contains("K, M, G or T"), "{bad}");
        }
        assert!(parse_size("99999999999T").unwrap_err().contains("too large"));
        let sizes: Vec<&str> = [
            "cache_size",
            "max_stale_bytes",
            "checkpoint_segment_bytes",
            "apply_backlog_bytes",
            "fasttrack.segment_bytes",
        ]
        .into_iter()
        .filter(|k| is_key(k))
        .collect();
        assert_eq!(sizes.len(), 5, "every size key exists: {sizes:?}");
        let err = with(&[("fasttrack.aging_ms", "1K")]).unwrap_err();
        assert!(err.contains("expected an integer"), "{err}");
    }

    /// The option fails like the same line in the file: same key, same range.
    #[test]
    fn bad_values_fail_as_in_the_file() {
        for (key, value, file_line) in [
            ("cache_size", "1K", "cache_size = 1024"),
            ("dirty_high_ratio", "1.5", "dirty_high_ratio = 1.5"),
            ("low_battery_percent", "101", "low_battery_percent = 101"),
            ("max_stale_seconds", "0", "max_stale_seconds = 0"),
            ("fasttrack.segment_bytes", "10", "[fasttrack]\nsegment_bytes = 10"),
            ("idle_predictor", "psychic", "idle_predictor = \"psychic\""),
            ("fasttrack.system_apps", "mail", "[fasttrack]\nsystem_apps = [\"mail\"]"),
        ] {
            let from_option = with(&[(key, value)]).unwrap_err();
            let from_file = crate::config_file::parse(file_line).unwrap_err();
            assert_eq!(from_option, format!("option {key}={value}: {from_file}"));
        }
        let err = with(&[("mode", "lazy")]).unwrap_err();
        assert!(err.starts_with("option mode=lazy: ") && err.contains("lazy"), "{err}");
        let err = with(&[("low_battery_percent", "300")]).unwrap_err();
        assert!(err.starts_with("option low_battery_percent=300: "), "{err}");
        let err = with(&[("fasttrack.preempt", "yes")]).unwrap_err();
        assert!(err.contains("expected true or false"), "{err}");
    }

    #[test]
    fn list_options_replace_the_file_list_and_add_up() {
        let file = "[fasttrack]\nsystem_apps = [\"a\"]\n[[apps]]\nname = \"a\"\n[[apps]]\nname = \"b\"\n";
        let o = |v: &str| Override { key: "fasttrack.system_apps".into(), value: v.into() };
        let c = apply(crate::config_file::parse(file).unwrap(), &[o("b"), o("uid:1013")]).unwrap();
        assert_eq!(c.fasttrack.system_apps, ["b", "uid:1013"]);
        assert_eq!(c.apps.len(), 2, "the file's apps stay");
    }

    #[test]
    fn tables_and_unknown_keys_are_not_options() {
        assert!(!is_key("fasttrack") && !is_key("apps") && !is_key("cache") && !is_key("cache_size.x"));
        assert!(is_key("fasttrack.tasks_file") && is_key("fasttrack.system_apps") && is_key("mode"));
        let err = with(&[("fasttrack", "1")]).unwrap_err();
        assert!(err.contains("fasttrack is a table"), "{err}");
        let err = with(&[("apps", "x")]).unwrap_err();
        assert!(err.contains("config file only"), "{err}");
    }

    /// Every key docs/CONFIG.md documents (outside [[apps]]) is an option.
    #[test]
    fn every_documented_key_is_an_option() {
        let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/CONFIG.md")).unwrap();
        let mut section = "";
        let mut checked = 0;
        for line in doc.lines() {
            if let Some(title) = line.strip_prefix("## ") {
                section = title;
            }
            let Some(key) = line.strip_prefix("| `").and_then(|rest| rest.split('`').next()) else { continue };
            let key = match section {
                s if s.starts_with("Top-level") => key.to_string(),
                "`[fasttrack]` table" => format!("fasttrack.{key}"),
                "`[cache]` table" => format!("cache.{key}"),
                _ => continue,
            };
            if !["fasttrack", "fuse", "cache", "apps"].contains(&key.as_str()) {
                assert!(is_key(&key), "{key} is documented but not a mount option");
                checked += 1;
            }
        }
        assert!(checked >= 20, "only {checked} keys found in docs/CONFIG.md");
    }
}
