//! A named background thread that runs one step at a fixed interval (the
//! battery watcher, the foreground-tasks watcher) until it is stopped.
//!
//! Invariant: `stop` returns only after the thread has ended; a step in
//! progress is finished, never cut, and a sleep in progress ends at once.

use crate::stop_signal::StopSignal;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

pub struct PollingThread {
    stop: Arc<StopSignal>,
    thread: JoinHandle<()>,
}

impl PollingThread {
    /// Runs `step` at once, then every `interval` until stopped.
    pub fn spawn(name: &str, interval: Duration, mut step: impl FnMut() + Send + 'static) -> std::io::Result<Self> {
        let stop = Arc::new(StopSignal::default());
        let thread = {
            let stop = stop.clone();
            std::thread::Builder::new().name(name.into()).spawn(move || loop {
                step();
                if stop.sleep(interval) {
                    return;
                }
            })?
        };
        Ok(PollingThread { stop, thread })
    }

    /// Stops the thread and waits for it.
    pub fn stop(self) {
        self.stop.stop();
        if self.thread.join().is_err() {
            tracing::error!("a polling thread panicked");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn steps_at_once_and_again_until_stopped_even_with_a_long_interval() {
        let (tx, rx) = mpsc::channel();
        let poller = PollingThread::spawn("test-poll", Duration::from_millis(1), move || {
            let _ = tx.send(());
        })
        .unwrap();
        rx.recv().unwrap();
        rx.recv().unwrap();
        poller.stop();

        let (tx, rx) = mpsc::channel();
        let poller = PollingThread::spawn("test-poll", Duration::from_secs(24 * 3600), move || {
            let _ = tx.send(());
        })
        .unwrap();
        rx.recv().unwrap();
        poller.stop();
        assert!(rx.try_recv().is_err(), "no step after stop");
    }
}
