//! FUSE over io_uring (Linux 6.14+, protocol 7.42): a transport that serves
//! a mounted FUSE connection through per-CPU io_uring queues instead of
//! read(2)/write(2) on `/dev/fuse`, independent of any file system.
//!
//! API: mount yourself (mount(2) with `fd=N` of a `/dev/fuse` descriptor),
//! then `Session::start(dev, &config, handler)`: it answers INIT (asking for
//! `config.init_flags` and FUSE_OVER_IO_URING), registers `queue_depth`
//! entries on each of one queue per possible CPU (the kernel puts a request
//! on the queue of the CPU that made it), and serves every request by
//! calling `Handler::handle` with the decoded `Request` and a `Reply` to
//! answer it with (at once or later, from any thread). `Session::join`
//! returns once the file system is unmounted. `kernel_support` says whether
//! the kernel offers the ring at all (module parameter `enable_uring`).
//!
//! Which path a request takes: INIT always comes through `/dev/fuse`; so do
//! FORGET, BATCH_FORGET and INTERRUPT (the kernel's ring sends only
//! requests that take an answer) and anything sent before every queue was
//! registered; all else comes over the ring. Interrupts are not acted on (a
//! request runs to its end). Notifications (`FUSE_NOTIFY_*`) are written to
//! `/dev/fuse` by whoever needs them, as without the ring.
//!
//! Threads: one per queue (pinned to its CPU) plus one on `/dev/fuse`.
//! A request a handler answers from another thread keeps its ring entry
//! until then; the queue's other entries go on serving.

mod abi;
mod dev;
mod reply;
mod request;
mod ring;

pub use reply::{DirPlusReply, DirReply, Reply};
pub use request::{forget_pairs, InHeader, Op, Request, SetattrIn};

use dev::DevFuse;
use ring::Queue;
use std::io;
use std::os::fd::OwnedFd;
use std::sync::atomic::AtomicU64;
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

/// The module parameter that lets FUSE connections use io_uring.
pub const ENABLE_URING: &str = "/sys/module/fuse/parameters/enable_uring";

/// Serves FUSE requests; called on the transport's threads.
pub trait Handler: Send + Sync + 'static {
    /// Serves `request` and answers it through `reply` (dropping it answers EIO).
    fn handle(&self, request: &Request<'_>, reply: Reply);
}

#[derive(Clone, Debug)]
pub struct Config {
    /// FUSE_* init flags wanted (each granted only if the kernel offers it).
    pub init_flags: u64,
    /// Largest write request; also sizes each entry's payload buffer.
    pub max_write: u32,
    /// Entries per queue: requests of one CPU in flight at once.
    pub queue_depth: usize,
}

/// Requests served by each path since the session started.
#[derive(Debug, Default)]
pub struct Counters {
    pub ring: AtomicU64,
    pub dev: AtomicU64,
}

/// Whether the running kernel can serve FUSE over io_uring; the error says why not.
pub fn kernel_support() -> Result<(), String> {
    match std::fs::read_to_string(ENABLE_URING) {
        Ok(value) if value.trim() == "Y" => Ok(()),
        Ok(_) => Err(format!("{ENABLE_URING} is N (as root: echo Y > {ENABLE_URING})")),
        Err(e) => Err(format!("{ENABLE_URING}: {e} (FUSE over io_uring needs Linux 6.14 or later)")),
    }
}

/// A running session: its threads.
pub struct Session {
    threads: Vec<JoinHandle<io::Result<()>>>,
    counters: Arc<Counters>,
    dev: Arc<DevFuse>,
}

/// Sends the session's notifications to the kernel (through `/dev/fuse`,
/// as without the ring).
pub struct Notifier {
    dev: Arc<DevFuse>,
}

/// `FUSE_NOTIFY_INVAL_INODE`'s code.
const NOTIFY_INVAL_INODE: i32 = 2;

impl Notifier {
    /// Invalidates the kernel's cache of inode `ino`: its attributes, and
    /// its pages from `offset` for `len` bytes (0: to the end; a negative
    /// `offset`: no pages). The kernel writes dirty pages back first and
    /// returns once it has, so this must not run on a thread that serves
    /// the WRITEs that causes.
    pub fn inval_inode(&self, ino: u64, offset: i64, len: i64) -> io::Result<()> {
        let mut body = [0u8; 24];
        body[0..8].copy_from_slice(&ino.to_ne_bytes());
        body[8..16].copy_from_slice(&offset.to_ne_bytes());
        body[16..24].copy_from_slice(&len.to_ne_bytes());
        self.dev.notify(NOTIFY_INVAL_INODE, &body)
    }
}

impl Session {
    /// Answers INIT on `dev` (a mounted connection's descriptor), registers
    /// the queues and starts serving with `handler`. Fails if the kernel
    /// does not take the ring.
    pub fn start(dev: OwnedFd, config: &Config, handler: Arc<dyn Handler>) -> io::Result<Session> {
        let fd = Arc::new(dev);
        let dev = Arc::new(DevFuse::new(Arc::clone(&fd)));
        if !dev::handshake(&dev, config)?.ring {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "the kernel did not offer FUSE_OVER_IO_URING at INIT".to_string(),
            ));
        }
        let counters = Arc::new(Counters::default());
        let payload_len = (config.max_write as usize).max(abi::MIN_READ_BUFFER);
        let mut threads = Vec::new();
        let (ready, registered) = mpsc::channel();
        let queues = possible_cpus();
        for qid in 0..queues {
            let (handler, counters, ready) = (Arc::clone(&handler), Arc::clone(&counters), ready.clone());
            let (fd, depth) = (Arc::clone(&fd), config.queue_depth.max(1));
            threads.push(std::thread::Builder::new().name(format!("mcfs-ring-{qid}")).spawn(move || {
                pin_to_cpu(qid);
                let queue = Queue::new(qid as u16, fd, depth, payload_len).map(Arc::new);
                match queue.and_then(|queue| queue.register().map(|()| queue)) {
                    Ok(queue) => {
                        let _ = ready.send(Ok(()));
                        queue.serve(handler.as_ref(), &counters)
                    }
                    Err(e) => {
                        let _ = ready.send(Err(io::Error::new(e.kind(), format!("FUSE ring queue {qid}: {e}"))));
                        Err(e)
                    }
                }
            })?);
        }
        for _ in 0..queues {
            registered.recv().map_err(|_| io::Error::other("a FUSE ring queue thread ended"))??;
        }
        let (config, counters_dev, serving_dev) = (config.clone(), Arc::clone(&counters), Arc::clone(&dev));
        threads.push(
            std::thread::Builder::new()
                .name("mcfs-dev-fuse".to_string())
                .spawn(move || dev::serve(serving_dev, &config, handler.as_ref(), &counters_dev))?,
        );
        Ok(Session { threads, counters, dev })
    }

    /// What sends this session's notifications.
    pub fn notifier(&self) -> Notifier {
        Notifier { dev: Arc::clone(&self.dev) }
    }

    /// Requests served over the ring and over `/dev/fuse` so far.
    pub fn counters(&self) -> Arc<Counters> {
        Arc::clone(&self.counters)
    }

    /// Waits until the connection is gone; the first thread's error, if any.
    pub fn join(self) -> io::Result<()> {
        let mut result = Ok(());
        for thread in self.threads {
            let ended = thread.join().unwrap_or_else(|_| Err(io::Error::other("a FUSE ring thread panicked")));
            if result.is_ok() {
                result = ended;
            }
        }
        result
    }
}

/// Requests the transport answers itself; the rest go to the handler.
fn dispatch(handler: &dyn Handler, request: &Request<'_>, reply: Reply) {
    let h = &request.header;
    tracing::trace!(target: "mcfs_fuse::request", "FUSE({}) opcode {} ino {:#x} pid {}", h.unique, h.opcode, h.nodeid, h.pid);
    match request.op {
        // Requests run to their end; dropping the (answerless) reply sends nothing.
        Op::Interrupt { .. } => {}
        Op::Init => reply.error(fuser::Errno::EIO),
        Op::Unsupported => reply.error(fuser::Errno::ENOSYS),
        _ => handler.handle(request, reply),
    }
}

/// The kernel makes one queue per possible CPU (`/sys/devices/system/cpu/possible`, e.g. `0-3`).
fn possible_cpus() -> usize {
    let listed = std::fs::read_to_string("/sys/devices/system/cpu/possible").unwrap_or_default();
    let count: usize = listed
        .trim()
        .split(',')
        .filter_map(|range| {
            let (first, last) = range.split_once('-').unwrap_or((range, range));
            Some(last.parse::<usize>().ok()? + 1 - first.parse::<usize>().ok()?)
        })
        .sum();
    if count > 0 {
        count
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    }
}

/// Keeps the calling thread on `cpu`, where the requests of its queue come from.
fn pin_to_cpu(cpu: usize) {
    // SAFETY: cpu_set_t is plain data; CPU_SET stays within it for cpu < CPU_SETSIZE.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if cpu < libc::CPU_SETSIZE as usize {
            libc::CPU_SET(cpu, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mount::MountOptions;
    use fuser::{FileAttr, FileType, Generation, INodeNo};
    use parking_lot::Mutex;
    use std::os::unix::fs::MetadataExt;
    use std::path::Path;
    use std::sync::mpsc::{Receiver, Sender};
    use std::time::{Duration, UNIX_EPOCH};

    const WAIT: Duration = Duration::from_secs(20);

    /// `/` holds `fast` and `slow`; a lookup of `slow` is answered only
    /// when the test says so, from another thread.
    struct TwoNames {
        slow_arrived: Mutex<Sender<()>>,
        release_slow: Mutex<Receiver<()>>,
    }

    fn attr(ino: u64, kind: FileType) -> FileAttr {
        FileAttr {
            ino: INodeNo(ino),
            size: 0,
            blocks: 0,
            atime: UNIX_EPOCH,
            mtime: UNIX_EPOCH,
            ctime: UNIX_EPOCH,
            crtime: UNIX_EPOCH,
            kind,
            perm: 0o755,
            nlink: 1,
            uid: 0,
            gid: 0,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        }
    }

    impl Handler for TwoNames {
        fn handle(&self, request: &Request<'_>, reply: Reply) {
            let ino = request.header.nodeid;
            match request.op {
                Op::Getattr if ino == 1 => reply.attr(&Duration::ZERO, &attr(1, FileType::Directory)),
                Op::Getattr => reply.attr(&Duration::ZERO, &attr(ino, FileType::RegularFile)),
                Op::Lookup { name } if name == "fast" => {
                    reply.entry(&Duration::ZERO, &attr(2, FileType::RegularFile), Generation(0))
                }
                Op::Lookup { name } if name == "slow" => {
                    self.slow_arrived.lock().send(()).unwrap();
                    let release = std::mem::replace(&mut *self.release_slow.lock(), mpsc::channel().1);
                    std::thread::spawn(move || {
                        let _ = release.recv_timeout(WAIT);
                        reply.entry(&Duration::ZERO, &attr(3, FileType::RegularFile), Generation(0));
                    });
                }
                _ => reply.error(fuser::Errno::ENOENT),
            }
        }
    }

    /// stat(2) of `path` on a thread pinned to CPU 0 (so on ring queue 0); its result arrives on the channel.
    fn stat_on_cpu0(path: &Path) -> Receiver<std::io::Result<std::fs::Metadata>> {
        let (done, result) = mpsc::channel();
        let path = path.to_path_buf();
        std::thread::spawn(move || {
            pin_to_cpu(0);
            let _ = done.send(std::fs::metadata(&path));
        });
        result
    }

    /// A request answered later from another thread keeps only its own
    /// entry: the queue serves the next request meanwhile, and the late
    /// answer's commit (made by the queue's thread) leaves the entry usable
    /// after the answering thread is gone.
    #[test]
    fn a_request_answered_later_does_not_hold_up_its_queue() {
        // SAFETY: geteuid has no preconditions.
        assert_eq!(unsafe { libc::geteuid() }, 0, "this test mounts with mount(2): it must run as root");
        kernel_support().unwrap_or_else(|why| panic!("this test needs FUSE over io_uring: {why}"));
        let dir = tempfile::tempdir().unwrap();
        let dev = crate::kernel_mount::mount_fuse(dir.path(), &MountOptions::default()).unwrap().expect("root mounts");
        let (slow_arrived, arrivals) = mpsc::channel();
        let (release, release_slow) = mpsc::channel();
        let handler = TwoNames { slow_arrived: Mutex::new(slow_arrived), release_slow: Mutex::new(release_slow) };
        // Without FUSE_PARALLEL_DIROPS the kernel would run the two lookups in `/` one at a time.
        let parallel_dirops = fuser::InitFlags::FUSE_PARALLEL_DIROPS.bits();
        let config = Config { init_flags: parallel_dirops, max_write: 1 << 20, queue_depth: 2 };
        let session = Session::start(dev, &config, Arc::new(handler)).unwrap();

        let slow = stat_on_cpu0(&dir.path().join("slow"));
        arrivals.recv_timeout(WAIT).expect("the slow lookup reached the handler");
        let fast = stat_on_cpu0(&dir.path().join("fast")).recv_timeout(WAIT);
        release.send(()).unwrap();
        let slow = slow.recv_timeout(WAIT);
        // The entry the late answer gave back serves again (its answering thread has ended by now).
        for _ in 0..5 {
            let again = stat_on_cpu0(&dir.path().join("fast")).recv_timeout(WAIT);
            assert_eq!(again.expect("a stat after the late answer hung").unwrap().ino(), 2);
        }

        let path = std::ffi::CString::new(dir.path().as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::umount2(path.as_ptr(), 0) }, 0, "{}", io::Error::last_os_error());
        let counters = session.counters();
        session.join().unwrap();
        assert_eq!(fast.expect("the fast stat waited for the slow one").unwrap().ino(), 2);
        assert_eq!(slow.expect("the slow stat was never answered").unwrap().ino(), 3);
        assert!(counters.ring.load(std::sync::atomic::Ordering::Relaxed) >= 2, "the lookups came over the ring");
    }
}
