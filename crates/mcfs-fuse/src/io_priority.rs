//! The I/O priority of a thread serving requests follows the class of the
//! request it serves (FastTrack's I/O dispatcher, §4.4): what the engine
//! reads from or writes to the backing store on an FG request's behalf goes
//! to the device at a high priority, a BG request's at a low one. A thread
//! holding the journal an FG request waits for is raised by the waiting
//! thread (`ThreadPriorities::raise_thread`).
//!
//! Invariant: each thread remembers the priority it last set, so a thread
//! serving a run of requests of one class makes no `ioprio_set` call after
//! the first, unless some thread was raised since (a raise changes another
//! thread's priority behind its back, so it makes every remembered one stale).

use mcfs_core::dispatch::IoPriorities;
use mcfs_core::ioprio::{self, IoPriority};
use mcfs_core::IoClass;
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

/// Raises so far; a thread's remembered priority is good only under the count it was set at.
static RAISES: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// What this thread last asked `ioprio_set` for (even if the kernel refused), and `RAISES` then.
    static LAST_SET: Cell<Option<(IoPriority, u64)>> = const { Cell::new(None) };
}

/// Gives the calling thread the I/O priority of `class`, unless it has it already.
pub(crate) fn follow_class(class: IoClass) {
    let wanted = (IoPriority::for_class(class), RAISES.load(Ordering::Acquire));
    if LAST_SET.with(|last| last.replace(Some(wanted))) == Some(wanted) {
        return;
    }
    // Refused only by an unusual kernel or policy; serving goes on at the old priority.
    if let Err(e) = ioprio::set_current_thread(wanted.0) {
        tracing::debug!("ioprio_set for {class:?} I/O failed: {e}");
    }
}

/// The engine's handle on threads' I/O priorities (`fasttrack.dispatch`).
pub(crate) struct ThreadPriorities;

impl IoPriorities for ThreadPriorities {
    fn set_own(&self, class: IoClass) {
        follow_class(class);
    }

    fn own_thread(&self) -> u32 {
        // SAFETY: gettid has no preconditions.
        unsafe { libc::gettid() as u32 }
    }

    fn raise_thread(&self, tid: u32) {
        // Counted before the change, so the raised thread cannot take its old cache for the truth after it.
        RAISES.fetch_add(1, Ordering::AcqRel);
        if let Err(e) = ioprio::set_thread(tid, IoPriority::for_class(IoClass::Foreground)) {
            tracing::debug!("ioprio_set raising thread {tid} failed: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A raise in one test makes every thread's cache stale, so the tests that count on the cache run one at a time.
    static RAISES_SERIAL: Mutex<()> = Mutex::new(());

    fn own_priority() -> IoPriority {
        ioprio::of_thread(ThreadPriorities.own_thread()).expect("ioprio_get")
    }

    #[test]
    fn the_thread_takes_the_priority_of_each_class_it_serves() {
        std::thread::spawn(|| {
            follow_class(IoClass::Foreground);
            assert!(own_priority().is_foreground());
            follow_class(IoClass::Background);
            assert_eq!(own_priority(), IoPriority::for_class(IoClass::Background));
            follow_class(IoClass::Background);
            assert_eq!(own_priority(), IoPriority::for_class(IoClass::Background));
            follow_class(IoClass::System);
            assert_eq!(own_priority(), IoPriority::for_class(IoClass::System));
        })
        .join()
        .expect("thread");
    }

    #[test]
    fn an_unchanged_class_costs_no_syscall() {
        let _serial = RAISES_SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        std::thread::spawn(|| {
            follow_class(IoClass::Background);
            // Changed behind the cache's back: a repeat of the class must not notice.
            ioprio::set_current_thread(IoPriority::for_class(IoClass::Foreground)).expect("ioprio_set");
            follow_class(IoClass::Background);
            assert!(own_priority().is_foreground(), "the cached class made no ioprio_set call");
        })
        .join()
        .expect("thread");
    }

    #[test]
    fn a_raised_thread_is_foreground_and_gets_its_own_class_back() {
        let _serial = RAISES_SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let (raised_tx, raised_rx) = std::sync::mpsc::channel::<()>();
        let holder = std::thread::spawn(move || {
            follow_class(IoClass::Background);
            tid_tx.send(ThreadPriorities.own_thread()).expect("send");
            raised_rx.recv().expect("raised");
            assert!(own_priority().is_foreground(), "raised by another thread");
            // Its cache still says background: the raise must make it set for real.
            ThreadPriorities.set_own(IoClass::Background);
            assert_eq!(own_priority(), IoPriority::for_class(IoClass::Background));
        });
        let tid = tid_rx.recv().expect("tid");
        ThreadPriorities.raise_thread(tid);
        raised_tx.send(()).expect("send");
        holder.join().expect("holder thread");
    }
}
