//! What a serving daemon tells systemd now and then: a STATUS line that
//! `systemctl status` shows (checkpoints so far, data not committed yet,
//! a failing checkpoint), sent with the watchdog ping when systemd watches
//! the daemon. The status comes from the engine's counters, so a ping means
//! the engine answered: an engine stuck on its state lock (and with it every
//! request) stops the pings, and systemd acts on the watchdog timeout.

use crate::polling::PollingThread;
use crate::sd_notify::Notifier;
use mcfs_core::{human, Engine, Stats};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// How often the status is refreshed when no watchdog asks for more.
const STATUS_EVERY: Duration = Duration::from_secs(30);

/// Starts the thread, if systemd listens.
pub fn spawn(
    notify: Arc<Notifier>,
    engine: Arc<Engine>,
    mountpoint: PathBuf,
) -> std::io::Result<Option<PollingThread>> {
    if !notify.enabled() {
        return Ok(None);
    }
    let every = notify.watchdog_interval().map_or(STATUS_EVERY, |w| w.min(STATUS_EVERY));
    let thread =
        PollingThread::spawn("mcfs-notify", every, move || notify.alive(&status(&engine.stats(), &mountpoint)))?;
    Ok(Some(thread))
}

/// "serving /mnt/data: 12 checkpoints, 3.0 MiB not committed yet (oldest 4 s)", and the error of a failing checkpoint.
pub fn status(stats: &Stats, mountpoint: &Path) -> String {
    let mut text = format!(
        "serving {}: {}, {} not committed yet",
        mountpoint.display(),
        human::count(stats.checkpoints as usize, "checkpoint"),
        human::bytes(stats.stale_bytes)
    );
    if stats.stale_bytes > 0 {
        text.push_str(&format!(" (oldest {:.0} s)", stats.stale_seconds));
    }
    if let Some(error) = &stats.checkpoint_error {
        text.push_str(&format!("; checkpoints failing ({} times): {error}", stats.checkpoint_failures));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_says_what_is_at_risk_and_what_fails() {
        let mut stats = Stats { checkpoints: 12, ..Stats::default() };
        let mnt = Path::new("/mnt/data");
        assert_eq!(status(&stats, mnt), "serving /mnt/data: 12 checkpoints, 0 B not committed yet");
        (stats.stale_bytes, stats.stale_seconds) = (3 << 20, 4.2);
        stats.checkpoint_error = Some("checkpoint failed writing the journal: No space left on device".into());
        stats.checkpoint_failures = 2;
        assert_eq!(
            status(&stats, mnt),
            "serving /mnt/data: 12 checkpoints, 3.0 MiB not committed yet (oldest 4 s); checkpoints failing (2 times): \
             checkpoint failed writing the journal: No space left on device"
        );
    }
}
