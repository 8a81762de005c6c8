//! The threads that serve background requests FastTrack may hold back.
//!
//! A thread that reads `/dev/fuse` never waits for foreground work: a BG
//! request that may wait (`Engine::admit_at_once`) is handed over here with
//! everything it needs — its reply and owned copies of its arguments — and
//! the reading thread goes back for the next request, which may be the FG
//! request the BG one waits for. So the reading threads can be as many as
//! the cores, not one per request that might be held (FastTrack §4.2: an FG
//! request must never queue behind BG ones, here not even for a thread).
//!
//! A few threads share one queue: BG requests of several apps still run side
//! by side (each may wait for the device), and at most that many are held at
//! once; the others wait in the queue, as they would wait at admission. The
//! queue is bounded, since each request in it holds a copy of its data: when
//! it is full, the reading thread waits for room, as it waited before.

use parking_lot::Mutex;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Threads serving held-back BG requests.
pub const HELD_REQUEST_THREADS: usize = 4;

/// Held-back requests waiting for one of those threads, at most.
const QUEUED_AT_MOST: usize = 16;

/// Requests held back at once at most: one per thread, the others queued.
pub const HELD_AT_MOST: usize = HELD_REQUEST_THREADS + QUEUED_AT_MOST;

/// One request's work, its reply included.
pub type Job = Box<dyn FnOnce() + Send>;

pub struct HeldRequests {
    queue: Option<SyncSender<Job>>,
    threads: Vec<JoinHandle<()>>,
}

impl HeldRequests {
    /// Starts `threads` threads. One that cannot be started is left out (a
    /// warning says so); with none at all, a job runs on the caller's thread.
    pub fn start(threads: usize) -> HeldRequests {
        let (queue, jobs) = mpsc::sync_channel::<Job>(QUEUED_AT_MOST);
        let jobs = Arc::new(Mutex::new(jobs));
        let threads: Vec<JoinHandle<()>> = (0..threads)
            .filter_map(|i| {
                let jobs = Arc::clone(&jobs);
                std::thread::Builder::new()
                    .name(format!("mcfs-held-{i}"))
                    .spawn(move || serve(&jobs))
                    .inspect_err(|e| tracing::warn!("cannot start a thread for held-back requests: {e}"))
                    .ok()
            })
            .collect();
        HeldRequests { queue: (!threads.is_empty()).then_some(queue), threads }
    }

    /// Runs `job` on one of the threads, once one is free.
    pub fn hand_over(&self, job: Job) {
        match &self.queue {
            Some(queue) => {
                if let Err(mpsc::SendError(job)) = queue.send(job) {
                    job();
                }
            }
            None => job(),
        }
    }
}

fn serve(jobs: &Mutex<Receiver<Job>>) {
    loop {
        // The lock is let go before the job runs: only the wait for a job is one at a time.
        let job = jobs.lock().recv();
        match job {
            Ok(job) => job(),
            Err(mpsc::RecvError) => return,
        }
    }
}

impl Drop for HeldRequests {
    /// Serves what is still queued, then ends the threads: the engine is
    /// shut down after the file system is dropped, never under a request.
    fn drop(&mut self) {
        drop(self.queue.take());
        for thread in self.threads.drain(..) {
            if thread.join().is_err() {
                tracing::error!("a thread serving held-back requests panicked");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Barrier;

    #[test]
    fn every_job_runs_before_drop_returns() {
        let ran = Arc::new(AtomicUsize::new(0));
        let held = HeldRequests::start(HELD_REQUEST_THREADS);
        for _ in 0..100 {
            let ran = Arc::clone(&ran);
            held.hand_over(Box::new(move || {
                ran.fetch_add(1, Ordering::SeqCst);
            }));
        }
        drop(held);
        assert_eq!(ran.load(Ordering::SeqCst), 100);
    }

    #[test]
    fn jobs_run_side_by_side_and_off_the_caller_thread() {
        // Every thread must hold a job at once for the barrier to open:
        // one job waiting does not stop the others.
        let barrier = Arc::new(Barrier::new(HELD_REQUEST_THREADS + 1));
        let ran_on = Arc::new(Mutex::new(Vec::new()));
        let held = HeldRequests::start(HELD_REQUEST_THREADS);
        for _ in 0..HELD_REQUEST_THREADS {
            let (barrier, ran_on) = (Arc::clone(&barrier), Arc::clone(&ran_on));
            held.hand_over(Box::new(move || {
                ran_on.lock().push(std::thread::current().id());
                barrier.wait();
            }));
        }
        barrier.wait();
        let ran_on = ran_on.lock();
        assert_eq!(ran_on.len(), HELD_REQUEST_THREADS);
        assert!(!ran_on.contains(&std::thread::current().id()), "a held request ran on the reading thread");
    }

    #[test]
    fn without_threads_a_job_runs_at_once_on_the_caller() {
        let held = HeldRequests::start(0);
        let caller = std::thread::current().id();
        let ran_on = Arc::new(Mutex::new(None));
        let slot = Arc::clone(&ran_on);
        held.hand_over(Box::new(move || *slot.lock() = Some(std::thread::current().id())));
        assert_eq!(*ran_on.lock(), Some(caller));
    }
}
