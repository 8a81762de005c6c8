//! Has the kernel write a file's dirty pages back to this daemon and wait
//! for the answers, keeping the pages in its cache: the file, opened by its
//! path below the mount's root, gets `sync_file_range(2)` with
//! `WAIT_BEFORE | WRITE | WAIT_AFTER` over all of it. The sync-point
//! handover uses it (`handover.rs`).
//!
//! Why not syncfs(2) on the mount's root, which the handover used until
//! 2026-11-29: on this kernel (6.18, with "fs/writeback: skip
//! AS_NO_DATA_INTEGRITY mappings in wait_sb_inodes()") syncfs starts the
//! writeback of a FUSE mount but does not wait for it, so it returned
//! before the daemon had answered the WRITEs it caused (traced:
//! `sys_exit_syncfs` before the `fuse_request_end` of its WRITEs), and a
//! sync point's boundary could be placed before the app's last pages had
//! arrived (`e2e_sync_point` failed 2 runs in 6). `sync_file_range` waits
//! for each page's writeback to end, and since Linux 6.14 ("fuse: remove tmp
//! folio for writebacks") FUSE ends it when the daemon answers the page's
//! WRITE. (Before 6.14 FUSE ended it once it had copied the page aside, so
//! there the wait ends when the WRITEs are queued; sync-point mode wants
//! 6.14 or later.) Why not fsync(2) of the file, which waits on every
//! kernel: FUSE's fsync takes the file's inode lock, which the app holds
//! while its `lseek(SEEK_DATA)` waits for this handover (a deadlock, seen),
//! and it sends an FSYNC the daemon would take for an app's sync point.
//! For the same lock each request runs in a child of the process, which
//! answers before it closes the file (the close's FLUSH path takes the
//! lock): a close that waits holds up neither the handover nor the next
//! request.
//!
//! Why not FUSE_NOTIFY_INVAL_INODE, which the handover used first: it
//! drops the pages it writes back. A page an app has mapped (SQLite's
//! `-shm` file) is then faulted in again from the daemon at its next
//! access, and once the daemon is dead that fault is a SIGBUS. And a
//! daemon killed while a notification waited for its WRITEs hung its mount
//! for good: the notifying thread kept the `/dev/fuse` descriptor in use,
//! so the kernel never ended the connection, so the wait never ended.
//!
//! The wait runs in a process of its own, `mcfs-write-back` (and its
//! children), forked when the handover starts, before the session maps any
//! io_uring ring; it holds two pipes to the daemon and nothing else of it.
//! Invariant: no thread that may wait for the mount's writeback shares the
//! daemon's descriptors or its memory. When the rest of the daemon dies,
//! its `/dev/fuse` descriptors close and its memory goes, and with the
//! memory the mappings of its FUSE-over-io_uring rings, which hold the
//! rings open: only then does the kernel end the connection and fail the
//! WRITEs the process waits for (a thread of the daemon waiting in syncfs
//! kept that memory alive, and with it the requests the dead daemon had
//! taken: the mount hung for good, docs/ENGINE.md, "Consistency modes").
//! The wait then returns, the child exits, the process reads the end of its
//! request pipe, and exits. It closes every other descriptor it inherited
//! before the fork returns in the daemon, so none (a pipe a parent reads to
//! its end, a lock) outlives the daemon's own use of it.

use parking_lot::Mutex;
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// The live mount: where its root is and which device it has.
pub struct MountRoot {
    path: PathBuf,
    dev: u64,
}

/// Where the mount puts its root once it is live.
/// `None` inside: the mount went live but its root could not be examined.
pub type MountRootSlot = Arc<OnceLock<Option<MountRoot>>>;

/// How long a handover waits for the mount to go live: the kernel may send
/// a sync point in the few milliseconds between the session's start and
/// the daemon's `stat` of the new mount (`mount::mount_fs`).
const LIVE_WAIT: Duration = Duration::from_secs(2);

impl MountRoot {
    /// The mount at `path`, live now (its device is read through it).
    pub fn of(path: &Path) -> io::Result<MountRoot> {
        Ok(MountRoot { path: path.to_path_buf(), dev: fs::metadata(path)?.dev() })
    }
}

/// The `mcfs-write-back` process: writes a file of the mount back when asked.
pub struct WriteBack {
    mount: MountRootSlot,
    /// `None` once the process could not be started or is gone.
    process: Mutex<Option<Process>>,
}

impl WriteBack {
    /// Starts the process, which writes back the mount `mount` holds once
    /// it is live. Without the process, `run` answers `None`.
    /// Call it before the session maps its rings: the fork copies the
    /// mappings there are (`McfsFs::new` does, before the mount).
    pub fn start(mount: MountRootSlot) -> WriteBack {
        warn_if_the_kernel_cannot_wait();
        let process = Process::fork().inspect_err(|e| tracing::warn!("cannot start the write-back process: {e}")).ok();
        WriteBack { mount, process: Mutex::new(process) }
    }

    /// Has the kernel write back every dirty page of `file` (not its times),
    /// a path below the mount's root, and waits for the daemon's answers;
    /// the pages stay cached. Fails, touching nothing, if the mount is not
    /// live, its root or the file cannot be opened or another file system
    /// now sits at its path; `None` if the process is gone.
    pub fn run(&self, file: &Path) -> Option<io::Result<()>> {
        let mut process = self.process.lock();
        let asked = process.as_mut()?;
        let root = match live(&self.mount) {
            Some(Some(root)) => root,
            Some(None) => return Some(Err(io::Error::other("the new mount's root could not be examined"))),
            None => return Some(Err(io::Error::other("the mount is not live yet"))),
        };
        let answer = match asked.ask(root, file) {
            Ok(answer) => answer,
            Err(e) => {
                tracing::warn!("the write-back process is gone: {e}");
                *process = None;
                return None;
            }
        };
        Some(match answer {
            Answer::WrittenBack { errno: 0 } => Ok(()),
            Answer::WrittenBack { errno } => {
                // A WRITE the daemon refused (ENOSPC, say): the pages were
                // handed over all the same, and the app hears of it at its
                // own fsync.
                let e = io::Error::from_raw_os_error(errno);
                tracing::debug!("{}: the writeback reported an error: {e}", root.path.join(file).display());
                Ok(())
            }
            Answer::NoRoot { errno } => Err(naming(errno, root.path.display())),
            Answer::NoFile { errno } => Err(naming(errno, root.path.join(file).display())),
            Answer::NoProcess { errno } => {
                Err(naming(errno, format_args!("cannot fork to write back {}", file.display())))
            }
            Answer::MountedOver => {
                Err(io::Error::other(format!("{}: another file system is mounted over it", root.path.display())))
            }
            Answer::BadRequest | Answer::Ready => Err(io::Error::other(format!(
                "{}: the write-back process did not understand the request",
                root.path.display()
            ))),
        })
    }
}

/// `errno` as an error that says what it concerns: "`what`: the error".
fn naming(errno: i32, what: impl std::fmt::Display) -> io::Error {
    let e = io::Error::from_raw_os_error(errno);
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

/// The forked process and the daemon's ends of its two pipes. Fields drop
/// in order: the request pipe closes, which ends the process, then it is
/// reaped.
struct Process {
    requests: File,
    answers: File,
    _child: Child,
}

/// A child process, waited for when dropped.
struct Child(libc::pid_t);

impl Drop for Child {
    fn drop(&mut self) {
        // SAFETY: waits for our own child; no memory is passed.
        unsafe { libc::waitpid(self.0, std::ptr::null_mut(), 0) };
    }
}

/// A request is the root's device, its path and the file's path below it,
/// each path NUL-terminated, in one pipe write no longer than PIPE_BUF (so
/// one read takes it whole).
const REQUEST_MAX: usize = libc::PIPE_BUF;

/// What the process answers: a code (u32) and an errno (i32), in 8 bytes.
#[derive(Debug, PartialEq)]
enum Answer {
    /// Started: it holds its two pipes and nothing else of the daemon.
    Ready,
    /// The file was written back (`errno`: the error its writeback met, or 0).
    WrittenBack {
        errno: i32,
    },
    /// The root could not be opened or examined.
    NoRoot {
        errno: i32,
    },
    /// The file could not be opened.
    NoFile {
        errno: i32,
    },
    /// No process could be forked to write the file back.
    NoProcess {
        errno: i32,
    },
    MountedOver,
    BadRequest,
}

impl Answer {
    fn encode(&self) -> [u8; 8] {
        let (code, errno) = match *self {
            Answer::WrittenBack { errno } => (0u32, errno),
            Answer::NoRoot { errno } => (1, errno),
            Answer::MountedOver => (2, 0),
            Answer::BadRequest => (3, 0),
            Answer::Ready => (4, 0),
            Answer::NoFile { errno } => (5, errno),
            Answer::NoProcess { errno } => (6, errno),
        };
        let mut bytes = [0u8; 8];
        bytes[..4].copy_from_slice(&code.to_ne_bytes());
        bytes[4..].copy_from_slice(&errno.to_ne_bytes());
        bytes
    }

    fn decode(bytes: [u8; 8]) -> Answer {
        let [c0, c1, c2, c3, e0, e1, e2, e3] = bytes;
        let errno = i32::from_ne_bytes([e0, e1, e2, e3]);
        match u32::from_ne_bytes([c0, c1, c2, c3]) {
            0 => Answer::WrittenBack { errno },
            1 => Answer::NoRoot { errno },
            2 => Answer::MountedOver,
            4 => Answer::Ready,
            5 => Answer::NoFile { errno },
            6 => Answer::NoProcess { errno },
            _ => Answer::BadRequest,
        }
    }
}

impl Process {
    fn fork() -> io::Result<Process> {
        let (request_out, request_in) = pipe()?;
        let (answer_out, answer_in) = pipe()?;
        // SAFETY: the child runs only `serve`, which makes system calls on
        // its own stack and never allocates or takes a lock (another
        // thread may have held one at the fork) and never returns.
        match unsafe { libc::fork() } {
            -1 => Err(io::Error::last_os_error()),
            0 => serve(request_out.as_raw_fd(), answer_in.as_raw_fd()),
            pid => {
                let mut process = Process { requests: request_in, answers: answer_out, _child: Child(pid) };
                drop((request_out, answer_in));
                // It answers once before any request, when it holds nothing else.
                match process.answer()? {
                    Answer::Ready => {
                        warn_of_rings_mapped_in(pid);
                        Ok(process)
                    }
                    other => Err(io::Error::other(format!("it answered {other:?} before any request"))),
                }
            }
        }
    }

    fn answer(&mut self) -> io::Result<Answer> {
        let mut answer = [0u8; 8];
        self.answers.read_exact(&mut answer)?;
        Ok(Answer::decode(answer))
    }

    fn ask(&mut self, root: &MountRoot, file: &Path) -> io::Result<Answer> {
        let (path, file) = (root.path.as_os_str().as_bytes(), file.as_os_str().as_bytes());
        let mut request = Vec::with_capacity(8 + path.len() + file.len() + 2);
        request.extend_from_slice(&root.dev.to_ne_bytes());
        for name in [path, file] {
            request.extend_from_slice(name);
            request.push(0);
        }
        if request.len() > REQUEST_MAX || path.contains(&0) || file.contains(&0) || file.is_empty() {
            return Ok(Answer::BadRequest);
        }
        self.requests.write_all(&request)?;
        self.answer()
    }
}

/// The mount's root once it is live, waiting up to `LIVE_WAIT` for it.
fn live(mount: &MountRootSlot) -> Option<&Option<MountRoot>> {
    let since = Instant::now();
    loop {
        if let Some(root) = mount.get() {
            return Some(root);
        }
        if since.elapsed() >= LIVE_WAIT {
            return None;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The first Linux whose FUSE ends a page's writeback when the daemon
/// answers its WRITE, which the wait here relies on (module header).
const WAITS_SINCE: (u32, u32) = (6, 14);

/// Warns where the running kernel is older than `WAITS_SINCE`: there a
/// handover may end before the daemon has every page.
fn warn_if_the_kernel_cannot_wait() {
    let release = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    if kernel_version(&release).is_some_and(|version| version < WAITS_SINCE) {
        tracing::warn!(
            "Linux {}: before {}.{}, FUSE ends a page's writeback before the daemon has it, so a sync point may miss pages the app wrote before it (docs/CONFIG.md, consistency)",
            release.trim(),
            WAITS_SINCE.0,
            WAITS_SINCE.1
        );
    }
}

/// A kernel release's major and minor version ("6.18.44-fc-v669": 6, 18).
fn kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut numbers = release.trim().split(|c: char| !c.is_ascii_digit());
    Some((numbers.next()?.parse().ok()?, numbers.next()?.parse().ok()?))
}

/// The module's invariant, checked once: the fork copied the rings the
/// daemon had mapped already (another session of the same process).
fn warn_of_rings_mapped_in(pid: libc::pid_t) {
    let maps = fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
    if maps.contains("[io_uring]") {
        tracing::warn!(
            "the write-back process holds an io_uring ring of this process: if the daemon is killed during a sync point's handover, the mount may hang (docs/FUSE_URING.md, Limits)"
        );
    }
}

/// A pipe, both ends close-on-exec: (read end, write end).
fn pipe() -> io::Result<(File, File)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 fills the two descriptors it creates.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors are new and owned by nobody else.
    Ok(unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) })
}

/// The forked process: keeps only its two pipes, ignores the signals that
/// stop the daemon (the daemon's orderly stop still needs it; it ends when
/// the daemon closes the request pipe, or dies), and answers requests.
fn serve(requests: RawFd, answers: RawFd) -> ! {
    let (low, high) = (requests.min(answers), requests.max(answers));
    close_range(0, low - 1);
    close_range(low + 1, high - 1);
    close_range(high + 1, RawFd::MAX);
    // SAFETY (the rest): system calls on descriptors this process owns and
    // on buffers on its stack.
    unsafe {
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
            libc::signal(signal, libc::SIG_IGN);
        }
        libc::prctl(libc::PR_SET_NAME, c"mcfs-write-back".as_ptr());
    }
    send(answers, &Answer::Ready);
    let mut buffer = [0u8; REQUEST_MAX];
    loop {
        let n = loop {
            // SAFETY: reads into `buffer`, at most its length.
            let n = unsafe { libc::read(requests, buffer.as_mut_ptr().cast(), buffer.len()) };
            if n >= 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                break n;
            }
        };
        let Some(request) = usize::try_from(n).ok().filter(|n| *n > 0).and_then(|n| buffer.get(..n)) else {
            // SAFETY: ends this process without running the daemon's exit code.
            unsafe { libc::_exit(0) };
        };
        reap_children();
        // Each request in a child of its own, which answers and then closes
        // the file: the close may wait for the file's inode lock, held by a
        // request that waits for this handover (module header), and this
        // process must go on answering meanwhile.
        // SAFETY: this process has one thread, so the child may do anything
        // it could; it runs only system calls and `_exit`s.
        match unsafe { libc::fork() } {
            -1 => send(answers, &Answer::NoProcess { errno: errno() }),
            0 => {
                let (answer, opened) = write_back(request);
                send(answers, &answer);
                // SAFETY: closes the file `write_back` opened; ends the child.
                unsafe {
                    if let Some(fd) = opened {
                        libc::close(fd);
                    }
                    libc::_exit(0);
                }
            }
            _ => {}
        }
    }
}

/// Reaps this process's children that have ended, without waiting.
fn reap_children() {
    // SAFETY: waits for our own children only, without blocking.
    while unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) } > 0 {}
}

/// The calling thread's errno.
fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Writes `answer` to the daemon, or ends this process if it cannot.
fn send(answers: RawFd, answer: &Answer) {
    let bytes = answer.encode();
    // SAFETY: writes from `bytes`, its length.
    let written = unsafe { libc::write(answers, bytes.as_ptr().cast(), bytes.len()) };
    if usize::try_from(written) != Ok(bytes.len()) {
        // SAFETY: ends this process without running the daemon's exit code.
        unsafe { libc::_exit(0) };
    }
}

/// Closes this process's descriptors `first..=last`, if any.
fn close_range(first: RawFd, last: RawFd) {
    if (0..=last).contains(&first) {
        // SAFETY: closes descriptors of this (forked) process only.
        unsafe { libc::syscall(libc::SYS_close_range, first as u32, last as u32, 0u32) };
    }
}

/// One request in the forked process: open the root, check its device,
/// open the file below it, write it back and wait. System calls only (see
/// `serve`). Returns the file's descriptor too, for `serve` to close once it
/// has answered.
fn write_back(request: &[u8]) -> (Answer, Option<RawFd>) {
    let Some((dev, paths)) = request.split_first_chunk::<8>() else {
        return (Answer::BadRequest, None);
    };
    // Two NUL-terminated paths, the second one ending the request.
    let Some(root_end) = paths.iter().position(|b| *b == 0) else {
        return (Answer::BadRequest, None);
    };
    let (path, file) = paths.split_at(root_end + 1);
    if file.len() < 2 || file.iter().position(|b| *b == 0) != Some(file.len() - 1) {
        return (Answer::BadRequest, None);
    }
    // SAFETY: `path` is NUL-terminated; the descriptor is closed below.
    let root = unsafe { libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) };
    if root < 0 {
        return (Answer::NoRoot { errno: errno() }, None);
    }
    // Read-only: the wait needs no more, and the daemon counts no write open.
    // O_NONBLOCK: a FIFO put at that name meanwhile does not block the open.
    let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;
    let all = libc::SYNC_FILE_RANGE_WAIT_BEFORE | libc::SYNC_FILE_RANGE_WRITE | libc::SYNC_FILE_RANGE_WAIT_AFTER;
    // SAFETY: fstat fills the zeroed struct; `file` is NUL-terminated; the
    // file's descriptor goes to the caller, which closes it.
    let done = unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        if libc::fstat(root, &mut stat) != 0 {
            (Answer::NoRoot { errno: errno() }, None)
        } else if stat.st_dev != u64::from_ne_bytes(*dev) {
            (Answer::MountedOver, None)
        } else {
            let fd = libc::openat(root, file.as_ptr().cast(), flags);
            if fd < 0 {
                (Answer::NoFile { errno: errno() }, None)
            } else {
                // Offset 0, length 0: the whole file.
                let synced = libc::sync_file_range(fd, 0, 0, all);
                (Answer::WrittenBack { errno: if synced == 0 { 0 } else { errno() } }, Some(fd))
            }
        }
    };
    // SAFETY: closes the root opened above.
    unsafe { libc::close(root) };
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(path: &Path, dev: u64) -> MountRootSlot {
        let slot = MountRootSlot::default();
        assert!(slot.set(Some(MountRoot { path: path.to_path_buf(), dev })).is_ok());
        slot
    }

    fn pid_of(write_back: &WriteBack) -> libc::pid_t {
        write_back.process.lock().as_ref().expect("the write-back process")._child.0
    }

    #[test]
    fn the_write_back_process_holds_none_of_the_daemons_descriptors_or_rings() {
        let Ok(fuse) = File::options().read(true).write(true).open("/dev/fuse") else {
            panic!("/dev/fuse cannot be opened: this test needs FUSE (run scripts/setup.sh as root)");
        };
        let write_back = WriteBack::start(MountRootSlot::default());
        let pid = pid_of(&write_back);
        assert_ne!(pid, std::process::id() as libc::pid_t, "a process of its own");
        let fds: Vec<PathBuf> = fs::read_dir(format!("/proc/{pid}/fd"))
            .expect("its descriptors")
            .map(|e| fs::read_link(e.expect("an entry").path()).expect("a link"))
            .collect();
        assert_eq!(fds.len(), 2, "only its two pipes: {fds:?}");
        assert!(fds.iter().all(|fd| fd.to_string_lossy().starts_with("pipe:")), "{fds:?}");
        // A ring the daemon maps after the fork is not in the process's
        // memory (a thread would share it, and with it hold the ring open).
        // Other tests of this binary may have rings of their own.
        let rings = |maps: &str| -> Vec<String> {
            let ring_lines = maps.lines().filter(|l| l.contains("io_uring"));
            ring_lines.map(|l| l.split(' ').next().unwrap_or_default().to_string()).collect()
        };
        let ours = |pid: &str| rings(&fs::read_to_string(format!("/proc/{pid}/maps")).expect("mappings"));
        let before = ours("self");
        let ring = io_uring::IoUring::new(2).expect("an io_uring");
        let new: Vec<String> = ours("self").into_iter().filter(|r| !before.contains(r)).collect();
        assert!(!new.is_empty(), "the daemon maps its ring");
        let theirs = ours(&pid.to_string());
        assert!(new.iter().all(|r| !theirs.contains(r)), "the process has none of {new:?}: {theirs:?}");
        drop(ring);
        let name = fs::read_to_string(format!("/proc/{pid}/comm")).expect("its name");
        assert_eq!(name.trim(), "mcfs-write-back");
        drop(fuse);
    }

    #[test]
    fn the_write_back_process_syncs_a_file_below_a_live_root_and_ends_when_dropped() {
        let dir = tempfile::tempdir().expect("temp dir");
        fs::create_dir(dir.path().join("d")).expect("mkdir");
        fs::write(dir.path().join("d/f"), b"data").expect("a file");
        let dev = fs::metadata(dir.path()).expect("metadata").dev();
        let write_back = WriteBack::start(live(dir.path(), dev));
        let pid = pid_of(&write_back);
        let file = Path::new("d/f");
        assert_eq!(write_back.run(file).map(|r| r.map_err(|e| e.to_string())), Some(Ok(())));
        assert_eq!(write_back.run(file).map(|r| r.map_err(|e| e.to_string())), Some(Ok(())), "and again");
        let err = write_back.run(Path::new("d/missing")).expect("the process answers").expect_err("no such file");
        assert_eq!(err.kind(), io::ErrorKind::NotFound, "{err}");
        assert!(err.to_string().contains("d/missing"), "names the file: {err}");
        drop(write_back);
        // SAFETY: kill with signal 0 only asks whether the pid exists.
        let gone = unsafe { libc::kill(pid, 0) } != 0;
        assert!(gone, "the process was reaped when its daemon let it go");
    }

    #[test]
    fn write_back_refuses_a_path_whose_device_changed() {
        let dir = tempfile::tempdir().expect("temp dir");
        let dev = fs::metadata(dir.path()).expect("metadata").dev();
        let write_back = WriteBack::start(live(dir.path(), dev.wrapping_add(1)));
        let err = write_back.run(Path::new("f")).expect("the process answers").expect_err("another device");
        assert!(err.to_string().contains("mounted over"), "{err}");
    }

    #[test]
    fn write_back_names_a_root_that_cannot_be_opened_and_waits_for_a_live_mount() {
        let dir = tempfile::tempdir().expect("temp dir");
        let gone = dir.path().join("gone");
        let write_back = WriteBack::start(live(&gone, 0));
        let err = write_back.run(Path::new("f")).expect("the process answers").expect_err("no such root");
        assert_eq!(err.kind(), io::ErrorKind::NotFound, "{err}");
        assert!(err.to_string().contains("gone"), "names the root: {err}");
        let not_live = WriteBack::start(MountRootSlot::default());
        let err = not_live.run(Path::new("f")).expect("answered here").expect_err("not live");
        assert!(err.to_string().contains("not live"), "{err}");
    }

    #[test]
    fn a_write_back_process_that_died_is_reported_gone() {
        let dir = tempfile::tempdir().expect("temp dir");
        let dev = fs::metadata(dir.path()).expect("metadata").dev();
        let write_back = WriteBack::start(live(dir.path(), dev));
        // SAFETY: kills the test's own child.
        unsafe { libc::kill(pid_of(&write_back), libc::SIGKILL) };
        assert!(write_back.run(Path::new("f")).is_none(), "gone");
        assert!(write_back.run(Path::new("f")).is_none(), "and stays gone");
    }

    #[test]
    fn kernel_versions_are_read_from_release_strings() {
        assert_eq!(kernel_version("6.18.44-fc-v669\n"), Some((6, 18)));
        assert_eq!(kernel_version("5.15.0-91-generic"), Some((5, 15)));
        assert!(kernel_version("5.15.0").unwrap() < WAITS_SINCE);
        assert!(kernel_version("6.14").unwrap() >= WAITS_SINCE);
        assert_eq!(kernel_version(""), None);
        assert_eq!(kernel_version("6"), None);
    }

    #[test]
    fn answers_survive_their_encoding() {
        for answer in [
            Answer::WrittenBack { errno: 0 },
            Answer::WrittenBack { errno: libc::ENOSPC },
            Answer::NoRoot { errno: libc::ENOENT },
            Answer::NoFile { errno: libc::EACCES },
            Answer::NoProcess { errno: libc::EAGAIN },
            Answer::MountedOver,
            Answer::BadRequest,
            Answer::Ready,
        ] {
            assert_eq!(Answer::decode(answer.encode()), answer);
        }
        assert_eq!(write_back(b"short"), (Answer::BadRequest, None));
        assert_eq!(write_back(b"12345678/no-nul"), (Answer::BadRequest, None));
        assert_eq!(write_back(b"12345678/root\0"), (Answer::BadRequest, None), "no file");
        assert_eq!(write_back(b"12345678/root\0\0"), (Answer::BadRequest, None), "an empty file name");
        assert_eq!(write_back(b"12345678/root\0f\0more"), (Answer::BadRequest, None), "bytes after the file");
    }
}
