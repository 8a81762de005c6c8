//! Logging with `tracing`, always to stderr: in the foreground that is the
//! terminal; a daemon points its stderr at BACKING/.mcfs/mcfs.log first (see
//! `daemonize`), so panic messages land in the same file as the log. The
//! level comes from MCFS_LOG, else RUST_LOG, else the caller's default.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use tracing_subscriber::EnvFilter;

pub const LOG_FILE: &str = "mcfs.log";

pub fn log_path(backing: &Path) -> PathBuf {
    backing.join(mcfs_core::STATE_DIR).join(LOG_FILE)
}

pub fn init(default_level: &str) {
    let spec = ["MCFS_LOG", "RUST_LOG"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
        .unwrap_or_else(|| default_level.to_string());
    let filter = EnvFilter::try_new(&spec).unwrap_or_else(|e| {
        eprintln!("mcfs: ignoring bad log filter {spec:?}: {e}");
        EnvFilter::new(default_level)
    });
    // A second init (never expected) is harmless, so its error is ignored.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .try_init();
}
