//! The `mcfs stat` document in the Prometheus text exposition format
//! (version 0.0.4), as `mcfs stat --format prometheus` prints it and the
//! daemon's `metrics_file` holds it for node_exporter's textfile collector.
//!
//! Names: `mcfs_` and the field's path joined by `_`, per-app fields as
//! `mcfs_app_<field>{app="NAME"}`; counters end in `_total`. Text fields
//! become labels of one `<object>_info` gauge of value 1 per object.
//! Samples carry no timestamp: the textfile collector refuses them.

use crate::stats_fields::{self, Kind};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt::Write;

/// One metric family: its type, help and samples (label set, value).
struct Family {
    kind: &'static str,
    help: &'static str,
    samples: Vec<(String, String)>,
}

#[derive(Default)]
struct Families(BTreeMap<String, Family>);

impl Families {
    fn add(&mut self, name: String, kind: &'static str, help: &'static str, labels: String, value: String) {
        let family = self.0.entry(name).or_insert(Family { kind, help, samples: Vec::new() });
        family.samples.push((labels, value));
    }
}

pub fn render(doc: &Value) -> String {
    let mut families = Families::default();
    if let Some(top) = doc.as_object() {
        object(&mut families, top, "", &BTreeMap::new());
    }
    let mut out = String::new();
    for (name, family) in families.0 {
        if !family.help.is_empty() {
            let _ = writeln!(out, "# HELP {name} {}", escape_help(family.help));
        }
        let _ = writeln!(out, "# TYPE {name} {}", family.kind);
        for (labels, value) in family.samples {
            let _ = writeln!(out, "{name}{labels} {value}");
        }
    }
    out
}

/// The fields of one object whose document path starts with `path` ("" or "idle." ...).
fn object(families: &mut Families, map: &Map<String, Value>, path: &str, labels: &BTreeMap<String, String>) {
    let metric_prefix = format!("mcfs_{}", path.replace("apps.*.", "app_").replace('.', "_"));
    let mut info = labels.clone();
    for (key, value) in map {
        let field_path = format!("{path}{key}");
        if key == "apps" && path.is_empty() {
            for (app, fields) in value.as_object().into_iter().flatten() {
                let mut app_labels = labels.clone();
                app_labels.insert("app".into(), app.clone());
                if let Some(fields) = fields.as_object() {
                    object(families, fields, "apps.*.", &app_labels);
                }
            }
            continue;
        }
        let field = stats_fields::find(&field_path);
        match (value, field.map(|f| f.kind)) {
            (Value::Object(inner), _) => object(families, inner, &format!("{field_path}."), labels),
            (_, Some(Kind::Meta)) | (Value::Null | Value::Array(_), _) => {}
            (Value::String(text), _) => {
                info.insert(key.clone(), text.clone());
            }
            (_, Some(Kind::Label)) => {
                info.insert(key.clone(), value.to_string());
            }
            (Value::Bool(b), kind) => {
                let (kind, help) = type_and_help(kind, field);
                families.add(format!("{metric_prefix}{key}"), kind, help, label_text(labels), u8::from(*b).to_string());
            }
            (Value::Number(n), kind) => {
                let suffix = if kind == Some(Kind::Counter) { "_total" } else { "" };
                let (kind, help) = type_and_help(kind, field);
                families.add(format!("{metric_prefix}{key}{suffix}"), kind, help, label_text(labels), number(n));
            }
        }
    }
    if info.len() > labels.len() {
        let help = "Text facts of the object as labels; the value is always 1.";
        families.add(format!("{metric_prefix}info"), "gauge", help, label_text(&info), "1".into());
    }
}

/// A field missing from `stats_fields` (one the engine added since) is still exported, untyped.
fn type_and_help(kind: Option<Kind>, field: Option<&stats_fields::Field>) -> (&'static str, &'static str) {
    let name = match kind {
        Some(Kind::Counter) => "counter",
        Some(Kind::Gauge) => "gauge",
        _ => "untyped",
    };
    (name, field.map_or("", |f| f.help))
}

/// Integers as they are; floats without an exponent (Rust's `Display`), which every parser reads.
fn number(n: &serde_json::Number) -> String {
    match (n.as_u64(), n.as_i64(), n.as_f64()) {
        (Some(u), _, _) => u.to_string(),
        (_, Some(i), _) => i.to_string(),
        (_, _, Some(f)) => f.to_string(),
        _ => n.to_string(),
    }
}

/// `{a="x",b="y"}`, or nothing for no labels.
fn label_text(labels: &BTreeMap<String, String>) -> String {
    if labels.is_empty() {
        return String::new();
    }
    let pairs: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", escape_label(v))).collect();
    format!("{{{}}}", pairs.join(","))
}

fn escape_label(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

fn escape_help(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn counters_gauges_labels_and_apps() {
        let doc = json!({
            "schema_version": 1, "timestamp_seconds": 5.5, "bytes_written": 10, "stale_bytes": 3,
            "low_battery": true, "battery_percent": null, "idle_predictor": "last-min",
            "checkpoint_error": "EIO on \"a\"\nb", "unapplied_recent": [{"app": "x"}],
            "fasttrack": {"bg_wait_seconds": 0.25, "foreground": "mail"},
            "apps": {"mail": {"app": "mail", "mode": "sync", "bytes_written": 4, "fsync_p99_seconds": 1.27e-7}},
        });
        let text = render(&doc);
        let has = |line: &str| assert!(text.lines().any(|l| l == line), "no line {line:?} in\n{text}");
        has("# TYPE mcfs_bytes_written_total counter");
        has("mcfs_bytes_written_total 10");
        has("# TYPE mcfs_stale_bytes gauge");
        has("mcfs_low_battery 1");
        has("mcfs_fasttrack_bg_wait_seconds_total 0.25");
        has("mcfs_fasttrack_info{foreground=\"mail\"} 1");
        has("mcfs_info{checkpoint_error=\"EIO on \\\"a\\\"\\nb\",idle_predictor=\"last-min\"} 1");
        has("mcfs_app_bytes_written_total{app=\"mail\"} 4");
        has("mcfs_app_fsync_p99_seconds{app=\"mail\"} 0.000000127");
        has("mcfs_app_info{app=\"mail\",mode=\"sync\"} 1");
        for absent in ["mcfs_battery_percent", "mcfs_schema_version", "mcfs_timestamp", "mcfs_unapplied_recent"] {
            assert!(!text.contains(absent), "{absent} exported:\n{text}");
        }
        assert_eq!(text.matches("# TYPE mcfs_app_bytes_written_total").count(), 1);
    }

    /// Every counter and gauge of `stats_fields`, read back by a Prometheus
    /// parser, has its type and its value.
    #[test]
    fn a_prometheus_parser_reads_back_every_field() {
        let mut doc = json!({"apps": {"a": {}}, "idle_predictor": "last-min", "daemon": {"pid": 7, "log": "x"}});
        let mut expected = Vec::new();
        for (i, field) in stats_fields::FIELDS.iter().enumerate() {
            let value = i as f64 + 0.5;
            let pointer = format!("/{}", field.path.replace("apps.*", "apps.a").replace('.', "/"));
            let (parent, key) = pointer.rsplit_once('/').unwrap();
            let mut node = &mut doc;
            for part in parent.split('/').skip(1) {
                node = node.as_object_mut().unwrap().entry(part).or_insert_with(|| json!({}));
            }
            if matches!(field.kind, Kind::Counter | Kind::Gauge) {
                node[key] = json!(value);
                expected.push((field, value));
            }
        }
        let text = render(&doc);
        let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap();
        assert_eq!(scrape.samples.len(), text.lines().filter(|l| !l.starts_with('#')).count(), "{text}");
        for (field, value) in expected {
            let suffix = if field.kind == Kind::Counter { "_total" } else { "" };
            let name = format!("mcfs_{}{suffix}", field.path.replace("apps.*.", "app_").replace('.', "_"));
            let sample = scrape.samples.iter().find(|s| s.metric == name).unwrap_or_else(|| panic!("{name}:\n{text}"));
            let want = match field.kind {
                Kind::Counter => prometheus_parse::Value::Counter(value),
                _ => prometheus_parse::Value::Gauge(value),
            };
            assert_eq!(sample.value, want, "{name}");
            assert_eq!(scrape.docs.get(&name).map(String::as_str), Some(field.help), "{name}");
        }
        let info = scrape.samples.iter().find(|s| s.metric == "mcfs_daemon_info").expect("daemon info");
        assert_eq!((info.labels.get("pid"), info.labels.get("log")), (Some("7"), Some("x")));
    }

    #[test]
    fn an_unknown_number_is_untyped_not_lost() {
        let text = render(&json!({"new_counter": 3}));
        assert!(text.contains("# TYPE mcfs_new_counter untyped\nmcfs_new_counter 3\n"), "{text}");
    }
}
