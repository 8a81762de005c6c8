//! Holds a checkpoint in flight: its first write to the journal waits until
//! the test lets it go on.

use mcfs_core::backend::{Op, RecordingBackend};
use std::path::Path;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Mutex;

/// Pauses the first write to the journal until the test lets it go on
/// (and fails nothing). Later journal writes pass straight through.
/// Gives the receiver told when the write is reached and the sender that
/// lets it go on (dropping it does too).
pub fn pause_first_journal_write(backend: &RecordingBackend) -> (Receiver<()>, Sender<()>) {
    let (reached_tx, reached_rx) = channel();
    let (go_on_tx, go_on_rx) = channel::<()>();
    let once = Mutex::new(Some((reached_tx, go_on_rx)));
    backend.fail_when(
        move |op| {
            if matches!(op, Op::Write { path, .. } if path == Path::new(".mcfs/journal")) {
                let first = once.lock().unwrap().take();
                if let Some((reached, go_on)) = first {
                    let _ = reached.send(());
                    // Returns at once if the test dropped its sender (it panicked).
                    let _ = go_on.recv();
                }
            }
            false
        },
        libc::EIO,
    );
    (reached_rx, go_on_tx)
}
