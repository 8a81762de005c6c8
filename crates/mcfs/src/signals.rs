//! Termination signals for the daemon. SIGTERM, SIGINT and SIGHUP are
//! blocked in every thread (the mask is inherited, so this must run before
//! any thread starts) and taken synchronously by one thread with `sigwait`:
//! no async-signal-safety worries, and the stop logic runs in plain code.

use std::io;

const STOP_SIGNALS: [libc::c_int; 3] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP];

fn stop_set() -> libc::sigset_t {
    // SAFETY: sigemptyset/sigaddset initialise and fill a local sigset_t.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in STOP_SIGNALS {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

/// Blocks the stop signals in the calling thread and all threads it starts later.
pub fn block_stop_signals() -> io::Result<()> {
    let set = stop_set();
    // SAFETY: `set` is initialised; the old mask is not needed.
    let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok(())
}

/// Starts a thread that calls `on_signal` for every stop signal received.
pub fn spawn_waiter(on_signal: impl Fn(libc::c_int) + Send + 'static) -> io::Result<()> {
    std::thread::Builder::new().name("mcfs-signals".into()).spawn(move || {
        let set = stop_set();
        loop {
            let mut sig: libc::c_int = 0;
            // SAFETY: `set` is initialised and `sig` is a valid out pointer.
            if unsafe { libc::sigwait(&set, &mut sig) } == 0 {
                on_signal(sig);
            }
        }
    })?;
    Ok(())
}

pub fn name(sig: libc::c_int) -> &'static str {
    match sig {
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        libc::SIGHUP => "SIGHUP",
        _ => "signal",
    }
}
