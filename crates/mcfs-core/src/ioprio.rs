//! Linux I/O priorities of threads (`ioprio_set`/`ioprio_get`, see
//! ioprio_set(2)): how mcfs tells the device which I/O is foreground
//! (FastTrack's I/O dispatcher, §4.4), and how the flash emulator reads it
//! back from the thread that issued a request.
//!
//! The mapping both sides share: foreground = best-effort level 0,
//! background = best-effort level 7. A thread that never set one reports
//! class NONE, which the emulator counts as background.

use crate::app_status::IoClass;
use std::io;

const IOPRIO_WHO_PROCESS: libc::c_int = 1;
const IOPRIO_CLASS_SHIFT: u32 = 13;
const IOPRIO_CLASS_RT: u32 = 1;
const IOPRIO_CLASS_BE: u32 = 2;
const LEVEL_MASK: u32 = (1 << IOPRIO_CLASS_SHIFT) - 1;

/// Best-effort levels run 0 (highest) to 7 (lowest).
const FOREGROUND_LEVEL: u32 = 0;
const BACKGROUND_LEVEL: u32 = 7;
/// Best-effort levels at or below this count as foreground when read back.
const HIGHEST_BACKGROUND_LEVEL_FOR_FG: u32 = 3;

/// An I/O priority value as the kernel encodes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoPriority(u32);

impl IoPriority {
    pub fn for_class(class: IoClass) -> IoPriority {
        let level = match class {
            IoClass::Foreground => FOREGROUND_LEVEL,
            // System work keeps the default priority the kernel derives from the nice value (BE 4).
            IoClass::System => 4,
            IoClass::Background => BACKGROUND_LEVEL,
        };
        IoPriority((IOPRIO_CLASS_BE << IOPRIO_CLASS_SHIFT) | level)
    }

    /// Whether a request at this priority is foreground I/O: real-time, or
    /// best-effort at a high level (0–3).
    pub fn is_foreground(self) -> bool {
        let class = self.0 >> IOPRIO_CLASS_SHIFT;
        class == IOPRIO_CLASS_RT || (class == IOPRIO_CLASS_BE && self.0 & LEVEL_MASK <= HIGHEST_BACKGROUND_LEVEL_FOR_FG)
    }
}

/// Sets the calling thread's I/O priority.
pub fn set_current_thread(prio: IoPriority) -> io::Result<()> {
    // who = 0 names the calling thread.
    set_thread(0, prio)
}

/// Sets the I/O priority of thread `tid` (0: the calling thread).
pub fn set_thread(tid: u32, prio: IoPriority) -> io::Result<()> {
    // SAFETY: ioprio_set takes three integers.
    let r =
        unsafe { libc::syscall(libc::SYS_ioprio_set, IOPRIO_WHO_PROCESS, tid as libc::c_int, prio.0 as libc::c_int) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The I/O priority of thread `tid` (a thread id, as FUSE reports a request's pid).
pub fn of_thread(tid: u32) -> io::Result<IoPriority> {
    // SAFETY: ioprio_get takes two integers and returns the priority or -1.
    let r = unsafe { libc::syscall(libc::SYS_ioprio_get, IOPRIO_WHO_PROCESS, tid as libc::c_int) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(IoPriority(r as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_round_trip_through_the_kernel_encoding() {
        assert!(IoPriority::for_class(IoClass::Foreground).is_foreground());
        assert!(!IoPriority::for_class(IoClass::Background).is_foreground());
        assert!(!IoPriority::for_class(IoClass::System).is_foreground());
        assert!(!IoPriority(0).is_foreground(), "class NONE (never set) is background");
        assert!(IoPriority(IOPRIO_CLASS_RT << IOPRIO_CLASS_SHIFT).is_foreground());
    }

    #[test]
    fn a_thread_reads_back_the_priority_it_set() {
        std::thread::spawn(|| {
            let tid = unsafe { libc::gettid() } as u32;
            set_current_thread(IoPriority::for_class(IoClass::Foreground)).expect("ioprio_set");
            assert!(of_thread(tid).expect("ioprio_get").is_foreground());
            set_current_thread(IoPriority::for_class(IoClass::Background)).expect("ioprio_set");
            assert!(!of_thread(tid).expect("ioprio_get").is_foreground());
        })
        .join()
        .expect("thread");
    }
}
