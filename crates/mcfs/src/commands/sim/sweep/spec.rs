//! SWEEP.toml: what a sweep runs (docs/SWEEP.md). `load` reads the file and makes the run list, the
//! product of its traces × configs × devices, each run named by its key `TRACE@CONFIG@DEVICE`.
//!
//! Invariant: the run list is a pure function of the file and of the files it names: runs come sorted by
//! (trace, config, device) name, whatever order the file or a glob lists them in. Relative paths are
//! taken from the directory of SWEEP.toml. Every error names SWEEP.toml (as the user gave it) and the key
//! at fault, then the cause; nothing is run until the whole file checks out.

use crate::commands::trace::parse_seconds;
use crate::config_file;
use mcfs_core::Config;
use mcfs_device::DeviceProfile;
use mcfs_sim::replay::{ReplayOptions, Timing};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use toml::{Table, Value};

/// The keys SWEEP.toml may have.
const KEYS: &[&str] =
    &["traces", "configs", "devices", "out", "open_loop", "keep_data", "allow_skipped", "sample_every"];

/// Joins the names of a run's trace, config and device into its key.
pub const KEY_SEPARATOR: char = '@';

/// One run of the sweep.
#[derive(Clone, Debug)]
pub struct Run {
    pub key: String,
    pub trace_name: String,
    pub config_name: String,
    pub device_name: String,
    pub trace: PathBuf,
    pub options: ReplayOptions,
}

/// A loaded SWEEP.toml.
#[derive(Debug)]
pub struct Sweep {
    /// The results directory.
    pub out: PathBuf,
    /// Sorted by key.
    pub runs: Vec<Run>,
    /// A replay that skipped more than 1 % of its file operations still counts as done.
    pub allow_skipped: bool,
}

impl Sweep {
    /// Where each run's JSON (or its error) goes.
    pub fn runs_dir(&self) -> PathBuf {
        self.out.join("runs")
    }

    /// The combined table.
    pub fn table_path(&self) -> PathBuf {
        self.out.join("results.csv")
    }
}

/// Reads `file` and makes its run list.
pub fn load(file: &Path) -> Result<Sweep, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let base = std::fs::canonicalize(file)
        .map_err(|e| format!("{}: {e}", file.display()))?
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    parse(&text, &base).map_err(|e| format!("{}: {e}", file.display()))
}

/// Parses SWEEP.toml text whose relative paths start at `base`; the error names the key, not the file.
fn parse(text: &str, base: &Path) -> Result<Sweep, String> {
    let mut table: Table = toml::from_str(text).map_err(|e| e.to_string().trim_end().to_string())?;
    if let Some(unknown) = table.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(format!("unknown key '{unknown}' (known: {})", KEYS.join(", ")));
    }
    let traces = traces(&required(&mut table, "traces")?, base)?;
    let configs = configs(required(&mut table, "configs")?, base)?;
    let devices = devices(&required(&mut table, "devices")?, base)?;
    let out = base.join(string(&required(&mut table, "out")?, "out")?);
    let timing = if flag(&table, "open_loop")? { Timing::OpenLoop } else { Timing::ClosedLoop };
    let keep_data = flag(&table, "keep_data")?;
    let allow_skipped = flag(&table, "allow_skipped")?;
    let sample_every = sample_every(table.get("sample_every"))?;
    let mut runs = Vec::with_capacity(traces.len() * configs.len() * devices.len());
    for (trace_name, trace) in &traces {
        for (config_name, config) in &configs {
            for (device_name, device) in &devices {
                let key = [trace_name.as_str(), config_name, device_name].join(&KEY_SEPARATOR.to_string());
                let options =
                    ReplayOptions { config: config.clone(), device: device.clone(), timing, keep_data, sample_every };
                runs.push(Run {
                    key,
                    trace_name: trace_name.clone(),
                    config_name: config_name.clone(),
                    device_name: device_name.clone(),
                    trace: trace.clone(),
                    options,
                });
            }
        }
    }
    Ok(Sweep { out, runs, allow_skipped })
}

fn required(table: &mut Table, key: &str) -> Result<Value, String> {
    table.remove(key).ok_or_else(|| format!("missing key '{key}'"))
}

fn string<'v>(value: &'v Value, key: &str) -> Result<&'v str, String> {
    value.as_str().ok_or_else(|| format!("{key}: expected a string, found {}", value.type_str()))
}

fn strings<'v>(value: &'v Value, key: &str) -> Result<Vec<&'v str>, String> {
    let items = value.as_array().ok_or_else(|| format!("{key}: expected an array, found {}", value.type_str()))?;
    if items.is_empty() {
        return Err(format!("{key}: the list is empty"));
    }
    items.iter().enumerate().map(|(i, item)| string(item, &format!("{key}[{i}]"))).collect()
}

fn flag(table: &Table, key: &str) -> Result<bool, String> {
    match table.get(key) {
        None => Ok(false),
        Some(v) => v.as_bool().ok_or_else(|| format!("{key}: expected true or false, found {}", v.type_str())),
    }
}

/// `sample_every`: seconds of virtual time, a number or a string ("0.5"); 1 s when absent.
fn sample_every(value: Option<&Value>) -> Result<Duration, String> {
    let text = match value {
        None => return Ok(Duration::from_secs(1)),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Integer(n)) => n.to_string(),
        Some(Value::Float(f)) => f.to_string(),
        Some(v) => return Err(format!("sample_every: expected seconds, found {}", v.type_str())),
    };
    match parse_seconds(&text) {
        Ok(d) if !d.is_zero() => Ok(d),
        Ok(_) => Err("sample_every: must be longer than zero".into()),
        Err(e) => Err(format!("sample_every: {e}")),
    }
}

/// A name that can stand in a key and a file name.
fn check_name(name: &str, key: &str) -> Result<(), String> {
    if name.is_empty() || name.starts_with('.') || name.contains(['/', KEY_SEPARATOR]) {
        return Err(format!(
            "{key}: '{name}' cannot name runs (empty, starting with '.', or holding '/' or '{KEY_SEPARATOR}')"
        ));
    }
    Ok(())
}

/// Adds `name` → `item` unless the name is taken; `what` shows the two clashing sources.
fn insert_unique<T>(
    map: &mut BTreeMap<String, (T, String)>,
    name: String,
    item: T,
    source: String,
    key: &str,
) -> Result<(), String> {
    if let Some((_, earlier)) = map.get(&name) {
        return Err(format!("{key}: '{earlier}' and '{source}' both make the name '{name}'; runs need distinct names"));
    }
    map.insert(name, (item, source));
    Ok(())
}

/// The file name without its last extension.
fn stem(path: &Path) -> String {
    path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

/// `traces`: paths or globs (matching files only), each trace named by its file stem.
fn traces(value: &Value, base: &Path) -> Result<BTreeMap<String, PathBuf>, String> {
    let mut found = BTreeMap::new();
    for (i, entry) in strings(value, "traces")?.into_iter().enumerate() {
        let key = format!("traces[{i}]");
        let pattern = base.join(entry);
        let paths = if entry.contains(['*', '?', '[']) {
            let text = pattern.to_str().ok_or_else(|| format!("{key}: '{entry}' is not UTF-8"))?;
            // As in a shell, `*` does not match a leading dot: hidden files are not traces.
            let options = glob::MatchOptions { require_literal_leading_dot: true, ..glob::MatchOptions::new() };
            let matches = glob::glob_with(text, options).map_err(|e| format!("{key}: '{entry}': {e}"))?;
            let mut paths: Vec<PathBuf> =
                matches.map(|m| m.map_err(|e| format!("{key}: '{entry}': {e}"))).collect::<Result<_, _>>()?;
            paths.retain(|p| p.is_file());
            if paths.is_empty() {
                return Err(format!("{key}: '{entry}' matches no file"));
            }
            paths
        } else {
            std::fs::metadata(&pattern).map_err(|e| format!("{key}: {}: {e}", pattern.display()))?;
            vec![pattern]
        };
        for path in paths {
            let name = stem(&path);
            check_name(&name, &key)?;
            let source = path.display().to_string();
            insert_unique(&mut found, name, path, source, &key)?;
        }
    }
    Ok(found.into_iter().map(|(name, (path, _))| (name, path)).collect())
}

/// `configs`: an array of config files (named by file stem), or a table of name → config file or inline
/// config table.
fn configs(value: Value, base: &Path) -> Result<BTreeMap<String, Config>, String> {
    let mut found = BTreeMap::new();
    match value {
        Value::Array(_) => {
            for (i, entry) in strings(&value, "configs")?.into_iter().enumerate() {
                let key = format!("configs[{i}]");
                let path = base.join(entry);
                let config = config_file::load(Some(&path)).map_err(|e| format!("{key}: {e}"))?;
                let name = stem(&path);
                check_name(&name, &key)?;
                insert_unique(&mut found, name, config, entry.to_string(), &key)?;
            }
        }
        Value::Table(table) => {
            if table.is_empty() {
                return Err("configs: the table is empty".into());
            }
            for (name, entry) in table {
                let key = format!("configs.{name}");
                check_name(&name, &key)?;
                let config = match entry {
                    Value::String(file) => config_file::load(Some(&base.join(file))),
                    Value::Table(inline) => inline_config(inline),
                    other => Err(format!("expected a config file or a table, found {}", other.type_str())),
                }
                .map_err(|e| format!("{key}: {e}"))?;
                found.insert(name, (config, String::new()));
            }
        }
        other => return Err(format!("configs: expected an array or a table, found {}", other.type_str())),
    }
    Ok(found.into_iter().map(|(name, (config, _))| (name, config)).collect())
}

fn inline_config(table: Table) -> Result<Config, String> {
    let config: Config =
        Value::Table(table).try_into().map_err(|e: toml::de::Error| e.to_string().trim_end().to_string())?;
    config.validate()?;
    Ok(config)
}

/// `devices`: built-in profile names (named so) or profile files (named by file stem).
fn devices(value: &Value, base: &Path) -> Result<BTreeMap<String, DeviceProfile>, String> {
    let mut found = BTreeMap::new();
    for (i, entry) in strings(value, "devices")?.into_iter().enumerate() {
        let key = format!("devices[{i}]");
        let (name, profile) = match DeviceProfile::builtin(entry) {
            Some(profile) => (entry.to_string(), profile),
            None => {
                let path = base.join(entry);
                let profile = DeviceProfile::load(&path.to_string_lossy()).map_err(|e| format!("{key}: {e}"))?;
                (stem(&path), profile)
            }
        };
        check_name(&name, &key)?;
        insert_unique(&mut found, name, profile, entry.to_string(), &key)?;
    }
    Ok(found.into_iter().map(|(name, (profile, _))| (name, profile)).collect())
}
