//! Has the kernel write every dirty page of the mount back to this daemon
//! and wait for the answers, keeping the pages in its cache: syncfs(2) on
//! the mount's root. The sync-point handover uses it (`handover.rs`).
//!
//! Why not FUSE_NOTIFY_INVAL_INODE, which the handover used first: it
//! drops the pages it writes back. A page an app has mapped (SQLite's
//! `-shm` file) is then faulted in again from the daemon at its next
//! access, and once the daemon is dead that fault is a SIGBUS. And a
//! daemon killed while a notification waited for its WRITEs hung its mount
//! for good: the notifying thread kept the `/dev/fuse` descriptor in use,
//! so the kernel never ended the connection, so the wait never ended.
//!
//! The syncfs runs on a thread of its own, `mcfs-write-back`, whose
//! descriptor table is its own and empty but for the root it opens.
//! Invariant: no thread that may wait in syncfs shares the daemon's
//! descriptors, so when the rest of the daemon dies its `/dev/fuse`
//! descriptors close, the kernel ends the connection and with it the wait
//! for the WRITEs; and no descriptor of the daemon (a pipe a parent reads
//! to its end, a lock) outlives the daemon's own use of it.

use parking_lot::Mutex;
use std::fs::{self, File};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, OnceLock};

/// The live mount: where its root is and which device it has.
pub struct MountRoot {
    path: PathBuf,
    dev: u64,
}

/// Where the mount puts its root once it is live.
pub type MountRootSlot = Arc<OnceLock<MountRoot>>;

impl MountRoot {
    /// The mount at `path`, live now (its device is read through it).
    pub fn of(path: &Path) -> io::Result<MountRoot> {
        Ok(MountRoot { path: path.to_path_buf(), dev: fs::metadata(path)?.dev() })
    }

    /// Has the kernel write back every dirty page (and the times) of every
    /// file of the mount and waits for the daemon's answers; the pages stay
    /// cached. Fails, touching nothing, if the root cannot be opened or
    /// another file system now sits at its path.
    pub fn write_back(&self) -> io::Result<()> {
        let named = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", self.path.display()));
        let root = File::open(&self.path).map_err(named)?;
        if root.metadata().map_err(named)?.dev() != self.dev {
            return Err(named(io::Error::other("another file system is mounted over it")));
        }
        // SAFETY: syncfs only reads the descriptor, which `root` keeps open.
        if unsafe { libc::syncfs(root.as_raw_fd()) } != 0 {
            // A WRITE the daemon refused (ENOSPC, say): the pages were handed
            // over all the same, and the app hears of it at its own fsync.
            let e = io::Error::last_os_error();
            tracing::debug!("{}: syncfs reported a writeback error: {e}", self.path.display());
        }
        Ok(())
    }
}

/// The `mcfs-write-back` thread: writes the mount back when asked.
pub struct WriteBack {
    /// Requests out, answers back (one caller at a time: the handover thread).
    link: Mutex<(Sender<()>, Receiver<io::Result<()>>)>,
}

impl WriteBack {
    /// Starts the thread, which writes back the mount `mount` holds once
    /// it is live. Without the thread, `run` answers `None`.
    pub fn start(mount: MountRootSlot) -> WriteBack {
        let (requests, asked) = mpsc::channel::<()>();
        let (answer, answers) = mpsc::channel();
        let started = std::thread::Builder::new().name("mcfs-write-back".into()).spawn(move || {
            let alone = leave_all_descriptors();
            for () in asked {
                let done = match (&alone, mount.get()) {
                    (Err(e), _) => Err(io::Error::new(e.kind(), format!("cannot leave the daemon's descriptors: {e}"))),
                    (Ok(()), None) => Err(io::Error::other("the mount is not live yet")),
                    (Ok(()), Some(root)) => root.write_back(),
                };
                if answer.send(done).is_err() {
                    break;
                }
            }
        });
        if let Err(e) = started {
            tracing::warn!("cannot start the write-back thread: {e}");
        }
        WriteBack { link: Mutex::new((requests, answers)) }
    }

    /// Has the thread write the mount back and waits for it; `None` if the
    /// thread is gone.
    pub fn run(&self) -> Option<io::Result<()>> {
        let link = self.link.lock();
        link.0.send(()).ok()?;
        link.1.recv().ok()
    }
}

/// Gives the calling thread a descriptor table of its own, empty.
fn leave_all_descriptors() -> io::Result<()> {
    // SAFETY: close_range with CLOSE_RANGE_UNSHARE first copies this
    // thread's descriptor table, then closes the copy's descriptors; no
    // other thread's descriptors change.
    let closed = unsafe { libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, libc::CLOSE_RANGE_UNSHARE) };
    if closed != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_that_leaves_the_descriptors_holds_no_dev_fuse_and_the_others_keep_theirs() {
        let Ok(fuse) = File::options().read(true).write(true).open("/dev/fuse") else {
            panic!("/dev/fuse cannot be opened: this test needs FUSE (run scripts/setup.sh as root)");
        };
        let fd = fuse.as_raw_fd();
        let link = move || fs::read_link(format!("/proc/thread-self/fd/{fd}")).ok();
        let seen_in_thread = std::thread::spawn(move || {
            leave_all_descriptors().expect("leave the descriptors");
            link()
        })
        .join()
        .expect("the thread");
        assert_eq!(seen_in_thread, None, "the thread's own table has no /dev/fuse");
        assert_eq!(link(), Some(PathBuf::from("/dev/fuse")), "the process keeps its descriptor");
    }

    #[test]
    fn write_back_refuses_a_path_whose_device_changed() {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut root = MountRoot::of(dir.path()).expect("a directory");
        root.dev = root.dev.wrapping_add(1);
        let err = root.write_back().expect_err("another device");
        assert!(err.to_string().contains("mounted over"), "{err}");
    }
}
