//! The kernel hands over an app's dirty pages before the app's sync point
//! (sync-point consistency, with the kernel's writeback cache).
//!
//! With the writeback cache the kernel keeps an app's writes and sends them
//! later, in its own order. A sync point may become a VCT boundary, so every
//! page the app dirtied before it must reach the engine first. Only a file
//! open for writing can hold dirty pages: close(2) writes a file's pages
//! back (before FLUSH, which the kernel stops sending once answered
//! `ENOSYS`, `McfsFs::flush`), and a shared writable mapping keeps
//! its file open until munmap. So `Handover` counts write opens per inode;
//! at a sync point of an app with such a file (other than the one an fsync
//! names, which the kernel wrote back itself) the handover thread has the
//! kernel write back each such file whose data goes to the app's log
//! (`write_back.rs`: `sync_file_range` of it, opened by the path the engine
//! has for it, which keeps the pages cached) and waits for the WRITEs to be
//! answered. Where that cannot be done (a file unlinked while open has no
//! path; the mount's root cannot be opened) it falls back to
//! `FUSE_NOTIFY_INVAL_INODE` for the file, which writes the pages back but
//! drops them from the cache.
//!
//! Either blocks until those WRITEs are served, so it must never run on a
//! thread that reads requests (with all of them waiting, nobody would serve
//! the WRITEs): a sync point with files to hand over moves, reply and all,
//! to the one handover thread, which holds no engine lock while it waits
//! (the wait itself is in a process that holds nothing of the
//! daemon's, so a killed daemon's connection ends, and the wait with it).
//! Sync points that queue while a handover runs share the next one.
//! Invariant: a sync point's engine
//! call runs only after every file picked for it was handed over.

use fuser::{INodeNo, Notifier};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::io;
use std::path::PathBuf;
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, OnceLock};

use crate::write_back::{MountRootSlot, WriteBack};

/// A sync point's work (its engine call and its reply).
pub type Job = Box<dyn FnOnce() + Send>;

/// Has the kernel drop its cached attributes of a file and, from `offset`
/// for `len` bytes (0: to the end; negative `offset`: none), its cached
/// pages, writing dirty ones back first (FUSE_NOTIFY_INVAL_INODE); returns
/// once it has. Each transport sends it its own way.
pub trait InodeInvalidator: Send + Sync {
    fn invalidate(&self, ino: u64, offset: i64, len: i64) -> io::Result<()>;
}

impl InodeInvalidator for Notifier {
    fn invalidate(&self, ino: u64, offset: i64, len: i64) -> io::Result<()> {
        self.inval_inode(INodeNo(ino), offset, len)
    }
}

impl InodeInvalidator for crate::uring::Notifier {
    fn invalidate(&self, ino: u64, offset: i64, len: i64) -> io::Result<()> {
        self.inval_inode(ino, offset, len)
    }
}

/// Where a session puts its invalidator once it has one.
pub type InvalidatorSlot = Arc<OnceLock<Box<dyn InodeInvalidator>>>;

/// The path of a file below the mount's root, as the engine has it now
/// (`None`: unlinked, or gone).
pub type PathOf = Box<dyn Fn(u64) -> Option<PathBuf> + Send>;

pub struct Handover {
    /// Write opens (`O_WRONLY`, `O_RDWR`) not released yet, per inode.
    writers: Mutex<HashMap<u64, u32>>,
    /// The handover thread's queue; unbounded, so a reading thread never
    /// waits for it (each job is one request the kernel waits for).
    queue: Mutex<Sender<(Vec<u64>, Job)>>,
}

impl Handover {
    /// Starts the handover thread, which hands over through the mount's
    /// root (set in `mount` once the mount is live) or else the session's
    /// invalidator (set in `notifier` once the session exists, after INIT);
    /// `path_of` names each file to open. Without the thread, a sync
    /// point's work runs without a handover (a warning says so).
    pub fn start(mount: MountRootSlot, notifier: InvalidatorSlot, path_of: PathOf) -> Handover {
        let (queue, jobs) = mpsc::channel::<(Vec<u64>, Job)>();
        let write_back = WriteBack::start(mount);
        let started = std::thread::Builder::new().name("mcfs-handover".into()).spawn(move || {
            // Sync points that queued while a handover ran share the next
            // one: it starts after each of them came, so it hands over all
            // that each needs.
            while let Ok(first) = jobs.recv() {
                let mut batch = vec![first];
                batch.extend(jobs.try_iter());
                let mut inos: Vec<u64> = batch.iter().flat_map(|(inos, _)| inos.iter().copied()).collect();
                inos.sort_unstable();
                inos.dedup();
                hand_over(&write_back, notifier.get().map(|n| &**n), &path_of, &inos);
                for (_, job) in batch {
                    job();
                }
            }
        });
        if let Err(e) = started {
            tracing::warn!("cannot start the handover thread: {e}; sync points go without handing over dirty pages");
        }
        Handover { writers: Mutex::default(), queue: Mutex::new(queue) }
    }

    /// An open (or create) of `ino` with `flags` succeeded.
    pub fn opened(&self, ino: u64, flags: i32) {
        if writes(flags) {
            *self.writers.lock().entry(ino).or_default() += 1;
        }
    }

    /// An open of `ino` with `flags` was released.
    pub fn released(&self, ino: u64, flags: i32) {
        if !writes(flags) {
            return;
        }
        let mut writers = self.writers.lock();
        if let Some(count) = writers.get_mut(&ino) {
            *count -= 1;
            if *count == 0 {
                writers.remove(&ino);
            }
        }
    }

    /// Has every file open for writing handed over and returns once it
    /// was (the caller, a thread of the daemon, waits on a channel; only
    /// the write-back process waits for the kernel, see `write_back.rs`).
    pub fn hand_over_all(&self) {
        let (done, handed_over) = mpsc::channel();
        self.then(
            |_| true,
            Box::new(move || {
                let _ = done.send(());
            }),
        );
        let _ = handed_over.recv();
    }

    /// Runs `job` once every file open for writing that `pick` keeps was
    /// handed over: on this thread if there is none, else on the handover
    /// thread (this one returns at once).
    pub fn then(&self, pick: impl Fn(u64) -> bool, job: Job) {
        let inos: Vec<u64> = self.writers.lock().keys().copied().filter(|ino| pick(*ino)).collect();
        if inos.is_empty() {
            return job();
        }
        if let Err(mpsc::SendError((_, job))) = self.queue.lock().send((inos, job)) {
            job();
        }
    }
}

/// Has the kernel hand over its dirty pages of the mount before a
/// checkpoint that must hold them: one the daemon is asked for (`mcfs ctl
/// checkpoint`, an unmount, a stop; sync-point mode, nothing to do in
/// operation mode, where every write reached the engine as it was made).
#[derive(Clone, Default)]
pub struct DirtyPages(pub(crate) Option<Arc<Handover>>);

impl DirtyPages {
    /// Returns once every file open for writing was handed over.
    pub fn hand_over(&self) {
        if let Some(handover) = &self.0 {
            handover.hand_over_all();
        }
    }
}

/// Whether an open with `flags` may write.
fn writes(flags: i32) -> bool {
    flags & libc::O_ACCMODE != libc::O_RDONLY
}

/// Has the kernel write back its dirty pages of each of `inos` through the
/// write-back process, or else write back and drop its pages of the file
/// (offset 0, length 0: the whole file); returns once it has.
fn hand_over(write_back: &WriteBack, notifier: Option<&dyn InodeInvalidator>, path_of: &PathOf, inos: &[u64]) {
    let mut to_drop = Vec::new();
    for &ino in inos {
        // An unlinked file has no path to open it by: its pages are dropped.
        let Some(path) = path_of(ino) else {
            to_drop.push(ino);
            continue;
        };
        match write_back.run(&path) {
            Some(Ok(())) => {}
            Some(Err(e)) => {
                tracing::warn!(
                    "cannot have the kernel write back {}: {e}; dropping it from its cache instead",
                    path.display()
                );
                to_drop.push(ino);
            }
            None => {
                tracing::warn!(
                    "the write-back process is gone; dropping {} from the kernel's cache instead",
                    path.display()
                );
                to_drop.push(ino);
            }
        }
    }
    if to_drop.is_empty() {
        return;
    }
    let Some(notifier) = notifier else {
        tracing::warn!("a sync point came before the session's notifier was set; no pages handed over");
        return;
    };
    for ino in to_drop {
        if let Err(e) = notifier.invalidate(ino, 0, 0) {
            tracing::warn!("inode {ino}: the kernel did not hand over its dirty pages: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// Files the engine knows no path of (unlinked): each handover drops them.
    fn no_paths() -> PathOf {
        Box::new(|_| None)
    }

    #[test]
    fn only_write_opens_count_and_each_release_takes_one_back() {
        let h = Handover::start(MountRootSlot::default(), InvalidatorSlot::default(), no_paths());
        h.opened(5, libc::O_RDONLY);
        h.opened(6, libc::O_WRONLY);
        h.opened(6, libc::O_RDWR | libc::O_APPEND);
        h.released(6, libc::O_WRONLY);
        h.released(5, libc::O_RDONLY);
        let picked = Mutex::new(Vec::new());
        h.then(
            |ino| {
                picked.lock().push(ino);
                false
            },
            Box::new(|| {}),
        );
        assert_eq!(*picked.lock(), [6], "one write open of 6 is left, 5 was never one");
        h.released(6, libc::O_RDWR);
        assert!(h.writers.lock().is_empty());
    }

    #[test]
    fn with_nothing_to_hand_over_the_job_runs_on_the_callers_thread() {
        let h = Handover::start(MountRootSlot::default(), InvalidatorSlot::default(), no_paths());
        h.opened(9, libc::O_WRONLY);
        let ran = Arc::new(AtomicBool::new(false));
        let caller = std::thread::current().id();
        let flag = Arc::clone(&ran);
        h.then(
            |_| false,
            Box::new(move || {
                assert_eq!(std::thread::current().id(), caller);
                flag.store(true, Ordering::SeqCst);
            }),
        );
        assert!(ran.load(Ordering::SeqCst));
    }

    /// Counts handovers (no mount here, so each falls back to invalidating
    /// the files) and holds the first until told to go on.
    struct Gate {
        calls: Mutex<Vec<u64>>,
        go: Mutex<Option<mpsc::Receiver<()>>>,
    }

    impl InodeInvalidator for Arc<Gate> {
        fn invalidate(&self, ino: u64, _offset: i64, _len: i64) -> io::Result<()> {
            self.calls.lock().push(ino);
            if let Some(go) = self.go.lock().take() {
                go.recv().expect("the test lets the first handover finish");
            }
            Ok(())
        }
    }

    #[test]
    fn sync_points_queued_during_a_handover_share_the_next_one() {
        let (release, go) = mpsc::channel();
        let gate = Arc::new(Gate { calls: Mutex::default(), go: Mutex::new(Some(go)) });
        let slot = InvalidatorSlot::default();
        assert!(slot.set(Box::new(Arc::clone(&gate))).is_ok());
        let h = Handover::start(MountRootSlot::default(), slot, no_paths());
        for ino in [1, 2, 3] {
            h.opened(ino, libc::O_WRONLY);
        }
        let (done, finished) = mpsc::channel();
        let job = |n: u32| {
            let done = done.clone();
            Box::new(move || done.send(n).unwrap()) as Job
        };
        h.then(|ino| ino == 1, job(1));
        // The first handover is under way (it holds in the gate) before the others queue.
        while gate.calls.lock().is_empty() {
            std::thread::yield_now();
        }
        h.then(|ino| ino == 2, job(2));
        h.then(|ino| ino == 3 || ino == 2, job(3));
        release.send(()).unwrap();
        let order: Vec<u32> = (0..3).map(|_| finished.recv().unwrap()).collect();
        assert_eq!(order, [1, 2, 3], "each job after its handover, in the order they came");
        assert_eq!(*gate.calls.lock(), [1, 2, 3], "one handover for the first, one for the two queued meanwhile");
    }

    #[test]
    fn dirty_pages_hands_over_every_file_open_for_writing_before_it_returns() {
        let gate = Arc::new(Gate { calls: Mutex::default(), go: Mutex::new(None) });
        let slot = InvalidatorSlot::default();
        assert!(slot.set(Box::new(Arc::clone(&gate))).is_ok());
        let h = Arc::new(Handover::start(MountRootSlot::default(), slot, no_paths()));
        for (ino, flags) in [(4, libc::O_WRONLY), (5, libc::O_RDONLY), (6, libc::O_RDWR)] {
            h.opened(ino, flags);
        }
        DirtyPages(Some(h)).hand_over();
        let mut handed_over = gate.calls.lock().clone();
        handed_over.sort_unstable();
        assert_eq!(handed_over, [4, 6], "both write opens, not the read-only one");
        DirtyPages::default().hand_over();
    }
}
