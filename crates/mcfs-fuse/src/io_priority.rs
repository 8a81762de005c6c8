//! The I/O priority of a thread serving requests follows the class of the
//! request it serves (FastTrack's I/O dispatcher, §4.4): what the engine
//! reads from or writes to the backing store on an FG request's behalf goes
//! to the device at a high priority, a BG request's at a low one.
//!
//! Invariant: each thread remembers the priority it last set, so a thread
//! serving a run of requests of one class makes no `ioprio_set` call after
//! the first.

use mcfs_core::ioprio::{self, IoPriority};
use mcfs_core::IoClass;
use std::cell::Cell;

thread_local! {
    /// What this thread last asked `ioprio_set` for (even if the kernel refused).
    static LAST_SET: Cell<Option<IoPriority>> = const { Cell::new(None) };
}

/// Gives the calling thread the I/O priority of `class`, unless it has it already.
pub(crate) fn follow_class(class: IoClass) {
    let wanted = IoPriority::for_class(class);
    if LAST_SET.with(|last| last.replace(Some(wanted))) == Some(wanted) {
        return;
    }
    // Refused only by an unusual kernel or policy; serving goes on at the old priority.
    if let Err(e) = ioprio::set_current_thread(wanted) {
        tracing::debug!("ioprio_set for {class:?} I/O failed: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own_priority() -> IoPriority {
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() } as u32;
        ioprio::of_thread(tid).expect("ioprio_get")
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
}
