//! Battery level for the engine (seed 000: below a threshold every app goes
//! back to real sync). Reads the kernel's power-supply class; machines
//! without a battery report none and the engine is never told anything.

use crate::polling::PollingThread;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub const POWER_SUPPLY_DIR: &str = "/sys/class/power_supply";
pub const POLL_INTERVAL: Duration = Duration::from_secs(30);

/// The lowest capacity among batteries under `root`, if any reports one.
/// The lowest is the safe choice: it is the one that runs out first.
pub fn read_percent(root: &Path) -> Option<u8> {
    let entries = std::fs::read_dir(root).ok()?;
    entries
        .flatten()
        .filter(|e| is_battery(&e.path()))
        .filter_map(|e| std::fs::read_to_string(e.path().join("capacity")).ok())
        .filter_map(|text| text.trim().parse::<u32>().ok())
        .map(|p| p.min(100) as u8)
        .min()
}

/// Supplies without a `type` file are taken for batteries if they have a capacity.
fn is_battery(supply: &Path) -> bool {
    match std::fs::read_to_string(supply.join("type")) {
        Ok(kind) => kind.trim() == "Battery",
        Err(_) => supply.join("capacity").is_file(),
    }
}

/// Starts the watcher thread if a battery is present; `report` is called
/// with each reading, the first one right away.
pub fn spawn_watcher(root: PathBuf, report: impl Fn(u8) + Send + 'static) -> std::io::Result<Option<PollingThread>> {
    if read_percent(&root).is_none() {
        tracing::debug!("no battery under {}; battery watcher not started", root.display());
        return Ok(None);
    }
    let watcher = PollingThread::spawn("mcfs-battery", POLL_INTERVAL, move || {
        if let Some(p) = read_percent(&root) {
            report(p);
        }
    })?;
    Ok(Some(watcher))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn supply(root: &Path, name: &str, kind: Option<&str>, capacity: Option<&str>) {
        let dir = root.join(name);
        std::fs::create_dir(&dir).unwrap();
        if let Some(k) = kind {
            std::fs::write(dir.join("type"), format!("{k}\n")).unwrap();
        }
        if let Some(c) = capacity {
            std::fs::write(dir.join("capacity"), format!("{c}\n")).unwrap();
        }
    }

    #[test]
    fn no_supply_dir_or_no_battery_gives_none() {
        let root = tempfile::tempdir().unwrap();
        assert_eq!(read_percent(&root.path().join("absent")), None);
        supply(root.path(), "AC", Some("Mains"), None);
        assert_eq!(read_percent(root.path()), None);
    }

    #[test]
    fn lowest_battery_wins_and_junk_is_ignored() {
        let root = tempfile::tempdir().unwrap();
        supply(root.path(), "BAT0", Some("Battery"), Some("80"));
        supply(root.path(), "BAT1", Some("Battery"), Some("35"));
        supply(root.path(), "BAT2", Some("Battery"), Some("n/a"));
        supply(root.path(), "usb", Some("USB"), Some("5"));
        assert_eq!(read_percent(root.path()), Some(35));
    }

    #[test]
    fn watcher_reports_at_once_and_stops_when_told() {
        let root = tempfile::tempdir().unwrap();
        let none = spawn_watcher(root.path().to_path_buf(), |_| {}).unwrap();
        assert!(none.is_none(), "no battery, no thread");
        supply(root.path(), "BAT0", Some("Battery"), Some("12"));
        let (tx, rx) = std::sync::mpsc::channel();
        let watcher = spawn_watcher(root.path().to_path_buf(), move |p| tx.send(p).unwrap()).unwrap().unwrap();
        assert_eq!(rx.recv().unwrap(), 12);
        watcher.stop();
    }

    #[test]
    fn capacity_is_clamped_and_untyped_supplies_count() {
        let root = tempfile::tempdir().unwrap();
        supply(root.path(), "odd", None, Some("140"));
        assert_eq!(read_percent(root.path()), Some(100));
    }
}
