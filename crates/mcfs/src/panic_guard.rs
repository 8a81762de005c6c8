//! Seed 000: flush everything before the process dies. A panic anywhere in
//! the daemon (a FUSE worker, the ticker, ...) runs `engine.shutdown()` on a
//! fresh thread — the panicking one may hold engine locks, so the wait is
//! bounded — detaches the mount so it does not linger as a dead endpoint,
//! and exits non-zero. The orderly stop path claims the same flag first,
//! so exactly one of the two runs the final shutdown. The panic message goes
//! to the log (a daemon's stderr is /dev/null; see `logging`).

use mcfs_core::Engine;
use std::backtrace::BacktraceStatus;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Exit status after a panic (the status Rust itself uses for panics).
pub const PANIC_EXIT: i32 = 101;
const SHUTDOWN_WAIT: Duration = Duration::from_secs(60);

static STOPPING: AtomicBool = AtomicBool::new(false);
static TARGET: OnceLock<(Arc<Engine>, PathBuf)> = OnceLock::new();

pub fn install(engine: Arc<Engine>, mountpoint: PathBuf) {
    let _ = TARGET.set((engine, mountpoint));
    std::panic::set_hook(Box::new(move |info| {
        let thread = std::thread::current();
        let backtrace = std::backtrace::Backtrace::capture();
        let backtrace = match backtrace.status() {
            BacktraceStatus::Captured => format!("\n{backtrace}"),
            _ => String::new(),
        };
        tracing::error!("thread '{}' {info}{backtrace}", thread.name().unwrap_or("<unnamed>"));
        if !STOPPING.swap(true, Ordering::SeqCst) {
            emergency_stop();
        }
    }));
}

/// Claims the final shutdown for the orderly path; false if a panic already has it.
pub fn claim_orderly_stop() -> bool {
    !STOPPING.swap(true, Ordering::SeqCst)
}

fn emergency_stop() -> ! {
    if let Some((engine, mountpoint)) = TARGET.get() {
        tracing::error!("panic: checkpointing everything before exit");
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let engine = engine.clone();
        let spawned = std::thread::Builder::new().name("mcfs-panic-stop".into()).spawn(move || {
            let _ = done_tx.send(engine.shutdown());
        });
        match spawned
            .map_err(|e| e.to_string())
            .and_then(|_| done_rx.recv_timeout(SHUTDOWN_WAIT).map_err(|e| e.to_string()))
        {
            Ok(Ok(())) => tracing::error!("panic: engine shut down cleanly"),
            Ok(Err(e)) => tracing::error!("panic: engine shutdown failed: {e}"),
            Err(e) => tracing::error!("panic: engine shutdown did not finish: {e}"),
        }
        if let Err(e) = crate::unmount::unmount(mountpoint, true) {
            tracing::error!("panic: {e}");
        }
    }
    crate::logging::flush();
    std::process::exit(PANIC_EXIT)
}
