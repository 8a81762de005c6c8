//! The class a request carries to the device, learned from the I/O priority of the thread that made
//! it: FUSE reports the calling thread's id as the request's pid, and `ioprio_get` reads that thread's
//! priority (the mapping is `mcfs_core::ioprio`'s: real-time or best-effort 0–3 is foreground).
//!
//! Invariant: a class is always found. A thread that is gone, or a pid of 0 (a caller outside our pid
//! namespace, such as a kernel worker the kernel does not name to us), counts as background; such
//! requests are counted as `unknown` too, so a study can see how many there were.

use mcfs_core::ioprio;
use mcfs_device::scheduler::Priority;

/// The class of one request, and whether it was read from the thread or assumed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestClass {
    pub priority: Priority,
    /// False when the thread's priority could not be read (then `priority` is background).
    pub known: bool,
}

impl RequestClass {
    /// The class of a request made by thread `tid`.
    pub fn of_thread(tid: u32) -> RequestClass {
        // ioprio_get(who = 0) would name the calling thread: ours, not the requester.
        if tid == 0 {
            return RequestClass { priority: Priority::Background, known: false };
        }
        match ioprio::of_thread(tid) {
            Ok(prio) if prio.is_foreground() => RequestClass { priority: Priority::Foreground, known: true },
            Ok(_) => RequestClass { priority: Priority::Background, known: true },
            Err(_) => RequestClass { priority: Priority::Background, known: false },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcfs_core::app_status::IoClass;
    use mcfs_core::ioprio::IoPriority;

    fn gettid() -> u32 {
        // SAFETY: gettid has no preconditions.
        unsafe { libc::gettid() as u32 }
    }

    #[test]
    fn a_thread_is_classed_by_the_priority_it_set() {
        std::thread::spawn(|| {
            let tid = gettid();
            ioprio::set_current_thread(IoPriority::for_class(IoClass::Foreground)).expect("ioprio_set");
            assert_eq!(RequestClass::of_thread(tid), RequestClass { priority: Priority::Foreground, known: true });
            ioprio::set_current_thread(IoPriority::for_class(IoClass::Background)).expect("ioprio_set");
            assert_eq!(RequestClass::of_thread(tid), RequestClass { priority: Priority::Background, known: true });
        })
        .join()
        .expect("thread");
    }

    #[test]
    fn pid_zero_and_missing_threads_are_unknown_background() {
        let unknown = RequestClass { priority: Priority::Background, known: false };
        assert_eq!(RequestClass::of_thread(0), unknown);
        // Above any pid_max: no such thread.
        assert_eq!(RequestClass::of_thread(i32::MAX as u32), unknown);
    }
}
