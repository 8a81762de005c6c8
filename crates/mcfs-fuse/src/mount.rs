//! Mounting an engine: checks the mount point, starts a multi-threaded fuser
//! session (one `/dev/fuse` clone per thread) and hands back `Mounted`, which
//! waits for the session to end and unmounts on request.
//!
//! Invariant: when `Mounted::wait` returns, the session is over and no
//! request will reach the engine any more, so the caller may shut it down.

use crate::filesystem::McfsFs;
use crate::handover::InvalidatorSlot;
use crate::uring::Counters;
use crate::write_back::MountRoot;
use crate::{mount_error, session_thread};
use fuser::{Config, Filesystem, MountOption, SessionACL};
use mcfs_core::{Engine, IoUringMode};
use std::ffi::CString;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountOptions {
    /// Threads serving requests, each on its own `/dev/fuse` clone.
    pub threads: usize,
    /// Let users other than the mounting one in (`allow_other`; a non-root
    /// mounter needs `user_allow_other` in /etc/fuse.conf).
    pub allow_other: bool,
    /// Source name shown in /proc/mounts, e.g. the backing directory.
    pub fsname: String,
    /// File system type shown in /proc/mounts after `fuse.`.
    pub subtype: String,
    /// What the kernel enforces on the mount (`ro`, `nosuid`, ...).
    pub flags: MountFlags,
    /// Serve over io_uring (`ring_mount`; then `threads` is one per CPU) or `/dev/fuse`.
    pub io_uring: IoUringMode,
}

/// The kernel's mount flags a user may ask for. `read_only` is enforced by
/// the kernel before a request reaches the file system: every write,
/// create, rename or attribute change fails with EROFS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MountFlags {
    pub read_only: bool,
    /// Set-user-id and set-group-id bits are not honoured.
    pub no_suid: bool,
    /// Device nodes cannot be opened as devices.
    pub no_dev: bool,
    /// Files cannot be executed.
    pub no_exec: bool,
}

impl Default for MountFlags {
    /// FUSE's defaults (fusermount3 and libfuse): `nosuid,nodev`.
    fn default() -> MountFlags {
        MountFlags { read_only: false, no_suid: true, no_dev: true, no_exec: false }
    }
}

impl Default for MountOptions {
    /// At least two threads, one per CPU; `allow_other` when running as
    /// root, since a root-mounted file system is usually shared by apps.
    fn default() -> MountOptions {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        // SAFETY: geteuid has no preconditions and cannot fail.
        let root = unsafe { libc::geteuid() } == 0;
        MountOptions {
            threads: cpus.max(2),
            allow_other: root,
            fsname: "mcfs".to_string(),
            subtype: "mcfs".to_string(),
            flags: MountFlags::default(),
            io_uring: IoUringMode::default(),
        }
    }
}

impl MountOptions {
    /// The fuser session settings: `threads` threads each on its own
    /// `/dev/fuse` clone, permissions checked by the kernel, `allow_other`
    /// and the flags as asked. Shared by every FUSE file system mcfs mounts.
    pub fn session_config(&self) -> Config {
        let mut config = Config::default();
        config.n_threads = Some(self.threads.max(1));
        config.clone_fd = true;
        let pick = |on: bool, yes: MountOption, no: MountOption| if on { yes } else { no };
        let flags = &self.flags;
        config.mount_options = vec![
            MountOption::FSName(self.fsname.clone()),
            MountOption::Subtype(self.subtype.clone()),
            // The kernel enforces Unix permissions from the attributes we report.
            MountOption::DefaultPermissions,
            pick(flags.read_only, MountOption::RO, MountOption::RW),
            pick(flags.no_suid, MountOption::NoSuid, MountOption::Suid),
            pick(flags.no_dev, MountOption::NoDev, MountOption::Dev),
            pick(flags.no_exec, MountOption::NoExec, MountOption::Exec),
        ];
        // fuser turns SessionACL::All into the allow_other mount option; with
        // Owner it also refuses requests from other uids itself.
        config.acl = if self.allow_other { SessionACL::All } else { SessionACL::Owner };
        config
    }
}

/// Mounts `engine` at `mountpoint` and serves it on background threads. The
/// error names the mount point and the cause.
pub fn mount(engine: Arc<Engine>, mountpoint: &Path, opts: &MountOptions) -> io::Result<Mounted> {
    mount_fs(McfsFs::new(engine, None), mountpoint, opts)
}

/// `mount` for a file system set up by the caller (with an observer, say).
pub fn mount_fs(fs: McfsFs, mountpoint: &Path, opts: &MountOptions) -> io::Result<Mounted> {
    let root = fs.mount_root_slot();
    let mounted = match opts.io_uring {
        IoUringMode::Off => {
            let slot = fs.invalidator_slot();
            start_session(fs, mountpoint, opts, slot)
        }
        mode => crate::ring_mount::start(fs, mountpoint, opts, mode == IoUringMode::On),
    }?;
    crate::kernel_config::raise_readahead(mounted.mountpoint());
    // The mount is live and served: its root stands for its file system.
    let live = MountRoot::of(mounted.mountpoint())
        .inspect_err(|e| {
            tracing::warn!(
                "{}: cannot stat the new mount ({e}); sync-point handovers drop the pages they hand over",
                mounted.mountpoint().display()
            )
        })
        .ok();
    let _ = root.set(live);
    Ok(mounted)
}

/// Mounts and serves `fs` over `/dev/fuse`; the session's notifier goes to
/// `invalidators` (sync-point mode) before the first request is served.
pub(crate) fn start_session<FS: Filesystem>(
    fs: FS,
    mountpoint: &Path,
    opts: &MountOptions,
    invalidators: InvalidatorSlot,
) -> io::Result<Mounted> {
    let mountpoint = usable_mount_point(mountpoint)?;
    let session = crate::kernel_mount::open_session(fs, &mountpoint, opts)
        .map_err(|e| mount_error::explain(&mountpoint, "mcfs", e))?;
    let _ = invalidators.set(Box::new(session.notifier()));
    let serving = Arc::new(AtomicBool::new(true));
    let thread = {
        let serving = serving.clone();
        session_thread::serve(session, mountpoint.clone(), "mcfs-session", move || {
            serving.store(false, Ordering::SeqCst)
        })?
    };
    let unmounter = Unmounter { mountpoint: Arc::new(mountpoint), serving };
    Ok(Mounted { thread, unmounter, transport: Transport::DevFuse })
}

/// A live mount. Dropping it leaves the file system mounted and served.
#[derive(Debug)]
pub struct Mounted {
    thread: JoinHandle<io::Result<()>>,
    unmounter: Unmounter,
    transport: Transport,
}

/// How a mount's requests reach the daemon.
#[derive(Clone, Debug)]
pub enum Transport {
    /// read(2) and write(2) on `/dev/fuse` (fuser).
    DevFuse,
    /// FUSE over io_uring, with the requests served by each path so far.
    IoUring(Arc<Counters>),
}

impl Transport {
    /// `dev_fuse` or `io_uring`, as `mcfs stat` shows it.
    pub fn name(&self) -> &'static str {
        match self {
            Transport::DevFuse => "dev_fuse",
            Transport::IoUring(_) => "io_uring",
        }
    }
}

impl Mounted {
    /// A mount served on `thread`, which ends (and clears `serving`) when the session does.
    pub(crate) fn new(
        thread: JoinHandle<io::Result<()>>,
        mountpoint: PathBuf,
        serving: Arc<AtomicBool>,
        transport: Transport,
    ) -> Mounted {
        Mounted { thread, unmounter: Unmounter { mountpoint: Arc::new(mountpoint), serving }, transport }
    }

    pub fn transport(&self) -> &Transport {
        &self.transport
    }

    pub fn mountpoint(&self) -> &Path {
        &self.unmounter.mountpoint
    }

    /// A handle that can unmount from another thread (a signal handler
    /// thread, say) while this one waits.
    pub fn unmounter(&self) -> Unmounter {
        self.unmounter.clone()
    }

    /// Blocks until the session ends: the file system was unmounted (by
    /// `unmount`, `fusermount3 -u` or `umount`) and the kernel let go.
    pub fn wait(self) -> io::Result<()> {
        let mountpoint = self.unmounter.mountpoint.clone();
        match self.thread.join() {
            Ok(result) => result.map_err(|e| with_context(&mountpoint, "FUSE session failed", e)),
            Err(_) => Err(io::Error::other(format!("{}: FUSE session thread panicked", mountpoint.display()))),
        }
    }

    /// Unmounts and waits for the session to end. If the unmount fails (the
    /// mount is busy) the error says so and the file system stays mounted
    /// and served; use `unmounter()` and `wait()` to retry instead.
    pub fn unmount(self) -> io::Result<()> {
        self.unmounter.unmount()?;
        self.wait()
    }
}

/// Unmounts one mcfs mount; clonable and usable from any thread.
#[derive(Clone, Debug)]
pub struct Unmounter {
    mountpoint: Arc<PathBuf>,
    /// False once the session has ended: then the path may hold some other
    /// mount, which must not be touched.
    serving: Arc<AtomicBool>,
}

impl Unmounter {
    /// Asks the kernel to unmount; returns once the name is gone (the
    /// session then ends by itself). Fails with EBUSY while files in the
    /// mount are in use. Already unmounted is success.
    pub fn unmount(&self) -> io::Result<()> {
        if !self.serving.load(Ordering::SeqCst) {
            return Ok(());
        }
        let path = CString::new(self.mountpoint.as_os_str().as_bytes())
            .map_err(|e| with_context(&self.mountpoint, "cannot unmount", e.into()))?;
        // SAFETY: `path` is a valid NUL-terminated string that outlives the call.
        if unsafe { libc::umount2(path.as_ptr(), 0) } == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        match err.raw_os_error() {
            // Not privileged: the setuid helper unmounts mounts we made.
            Some(libc::EPERM) => self.fusermount_unmount(),
            // Not a mount point any more: someone unmounted it already.
            Some(libc::EINVAL) => Ok(()),
            _ => Err(with_context(&self.mountpoint, "cannot unmount", err)),
        }
    }

    fn fusermount_unmount(&self) -> io::Result<()> {
        let output = Command::new("fusermount3")
            .arg("-u")
            .arg(self.mountpoint.as_os_str())
            .output()
            .map_err(|e| with_context(&self.mountpoint, "cannot run fusermount3 -u", e))?;
        if output.status.success() {
            return Ok(());
        }
        let stderr = String::from_utf8_lossy(&output.stderr);
        Err(io::Error::other(format!("{}: fusermount3 -u failed: {}", self.mountpoint.display(), stderr.trim())))
    }
}

/// The canonical path of `path` if it is an existing directory that is not
/// already a mount point. The error names the path and the cause.
pub fn usable_mount_point(path: &Path) -> io::Result<PathBuf> {
    let context = "cannot be used as a mount point";
    let canonical = path.canonicalize().map_err(|e| with_context(path, context, e))?;
    let meta = fs::metadata(&canonical).map_err(|e| with_context(path, context, e))?;
    if !meta.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::NotADirectory,
            format!("{}: {context}: not a directory", path.display()),
        ));
    }
    if is_mount_root(&canonical, &meta).map_err(|e| with_context(path, context, e))? {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("{}: {context}: something is already mounted there", path.display()),
        ));
    }
    Ok(canonical)
}

/// Whether the directory `path` (canonical) is the root of a mount. The
/// kernel says so through statx (Linux 5.8+), bind mounts included; older
/// kernels get the classic test: another device than the parent, or its own
/// parent (`/`).
fn is_mount_root(path: &Path, meta: &fs::Metadata) -> io::Result<bool> {
    let c_path = CString::new(path.as_os_str().as_bytes())?;
    // SAFETY: statx is plain old data, for which all-zero is a valid value.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: `c_path` is NUL-terminated and `stx` is a writable statx that outlives the call.
    if unsafe { libc::statx(libc::AT_FDCWD, c_path.as_ptr(), 0, libc::STATX_BASIC_STATS, &mut stx) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let mount_root = libc::STATX_ATTR_MOUNT_ROOT as u64;
    if stx.stx_attributes_mask & mount_root != 0 {
        return Ok(stx.stx_attributes & mount_root != 0);
    }
    let parent = fs::metadata(path.parent().unwrap_or(path))?;
    Ok(meta.dev() != parent.dev() || meta.ino() == parent.ino())
}

pub(crate) fn with_context(path: &Path, what: &str, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {what}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use fuser::{FileAttr, FileType, INodeNo, ReplyAttr, Request};
    use std::time::{Duration, SystemTime};

    #[test]
    fn a_plain_directory_is_usable_and_canonicalised() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("mnt");
        fs::create_dir(&sub).unwrap();
        let winding = dir.path().join("mnt/../mnt");
        assert_eq!(usable_mount_point(&winding).unwrap(), sub.canonicalize().unwrap());
    }

    #[test]
    fn missing_paths_files_and_mount_points_are_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope");
        let err = usable_mount_point(&missing).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert!(err.to_string().contains("nope"), "{err}");

        let file = dir.path().join("file");
        fs::write(&file, b"x").unwrap();
        let err = usable_mount_point(&file).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotADirectory);
        assert!(err.to_string().contains("file: cannot be used as a mount point: not a directory"), "{err}");

        let err = usable_mount_point(Path::new("/")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        // /proc is a mount point on any Linux with procfs.
        if Path::new("/proc/self").exists() {
            assert_eq!(usable_mount_point(Path::new("/proc")).unwrap_err().kind(), io::ErrorKind::AlreadyExists);
        }
    }

    #[test]
    fn default_options_use_several_threads() {
        let opts = MountOptions::default();
        assert!(opts.threads >= 2);
        assert_eq!(opts.fsname, "mcfs");
        // SAFETY: no preconditions.
        assert_eq!(opts.allow_other, unsafe { libc::geteuid() } == 0);
    }

    #[test]
    fn session_config_carries_the_options() {
        let opts = MountOptions {
            threads: 0,
            allow_other: true,
            fsname: "/srv/back".into(),
            subtype: "flashdev".into(),
            flags: MountFlags { read_only: true, ..MountFlags::default() },
            io_uring: IoUringMode::Off,
        };
        let config = opts.session_config();
        assert_eq!(config.n_threads, Some(1), "zero threads would never serve");
        assert!(config.clone_fd);
        assert_eq!(config.acl, SessionACL::All);
        assert!(config.mount_options.contains(&MountOption::FSName("/srv/back".into())));
        assert!(config.mount_options.contains(&MountOption::Subtype("flashdev".into())));
        assert!(config.mount_options.contains(&MountOption::DefaultPermissions));
        for flag in [MountOption::RO, MountOption::NoSuid, MountOption::NoDev, MountOption::Exec] {
            assert!(config.mount_options.contains(&flag), "{flag:?} missing");
        }
        let private = MountOptions { allow_other: false, ..opts };
        assert_eq!(private.session_config().acl, SessionACL::Owner);
    }

    /// Serves only the root directory's attributes: enough to mount, stat
    /// the mount point and unmount, without an engine.
    struct RootOnly;

    impl Filesystem for RootOnly {
        fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<fuser::FileHandle>, reply: ReplyAttr) {
            if ino != INodeNo::ROOT {
                return reply.error(fuser::Errno::ENOENT);
            }
            let now = SystemTime::now();
            let attr = FileAttr {
                ino,
                size: 0,
                blocks: 0,
                atime: now,
                mtime: now,
                ctime: now,
                crtime: now,
                kind: FileType::Directory,
                perm: 0o755,
                nlink: 2,
                uid: 0,
                gid: 0,
                rdev: 0,
                blksize: 4096,
                flags: 0,
            };
            reply.attr(&Duration::from_secs(1), &attr);
        }
    }

    /// Mounting needs /dev/fuse and the right to mount; where they are
    /// missing the mount tests fail and say so (they never skip).
    fn require_mount() {
        let fuse = fs::OpenOptions::new().read(true).write(true).open("/dev/fuse");
        assert!(fuse.is_ok(), "these tests need FUSE: cannot open /dev/fuse: {:?}", fuse.err());
        // SAFETY: no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        assert!(
            root || Path::new("/usr/bin/fusermount3").exists(),
            "these tests need root or fusermount3 (apt-get install fuse3)"
        );
    }

    fn mount_root_only(dir: &Path) -> Mounted {
        let opts = MountOptions { threads: 2, ..MountOptions::default() };
        start_session(RootOnly, dir, &opts, Default::default()).unwrap()
    }

    /// The type /proc/self/mountinfo gives the topmost mount on `dir`.
    fn mount_type(dir: &Path) -> Option<String> {
        let dir = dir.canonicalize().unwrap();
        let table = fs::read_to_string("/proc/self/mountinfo").unwrap();
        table.lines().rev().find_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            (Path::new(left.split(' ').nth(4)?) == dir).then(|| right.split(' ').next().unwrap_or("").to_string())
        })
    }

    /// A chmod reaches the file system (which has no setattr: ENOSYS) unless
    /// the kernel refuses it first on a read-only mount (EROFS).
    #[test]
    fn a_read_only_mount_is_read_only_in_the_kernel() {
        require_mount();
        for (read_only, errno) in [(false, libc::ENOSYS), (true, libc::EROFS)] {
            let dir = tempfile::tempdir().unwrap();
            let flags = MountFlags { read_only, ..MountFlags::default() };
            let mounted = start_session(
                RootOnly,
                dir.path(),
                &MountOptions { flags, ..MountOptions::default() },
                Default::default(),
            )
            .unwrap();
            let err = fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap_err();
            mounted.unmount().unwrap();
            assert_eq!(err.raw_os_error(), Some(errno), "read_only {read_only}: {err}");
        }
    }

    /// Root raises a mount's read-ahead window to one request (the kernel's
    /// 128 KiB otherwise); other users leave it.
    #[test]
    fn the_read_ahead_window_is_one_request_for_root() {
        require_mount();
        let dir = tempfile::tempdir().unwrap();
        let mounted = mount_root_only(dir.path());
        let entry = crate::kernel_config::readahead_path(fs::metadata(dir.path()).unwrap().dev());
        let before = fs::read_to_string(&entry).unwrap();
        crate::kernel_config::raise_readahead(dir.path());
        let after = fs::read_to_string(&entry).unwrap();
        mounted.unmount().unwrap();
        assert_eq!(before.trim(), "128", "the kernel's own window");
        // SAFETY: no preconditions.
        let want = if unsafe { libc::geteuid() } == 0 { "1024" } else { "128" };
        assert_eq!(after.trim(), want, "{}", entry.display());
    }

    #[test]
    fn mount_then_unmount_programmatically() {
        require_mount();
        let dir = tempfile::tempdir().unwrap();
        let mounted = mount_root_only(dir.path());
        let err = usable_mount_point(dir.path()).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists, "{err}");
        // Root mounts used to lose the subtype (fuser's own mount(2) says `fuse`).
        assert_eq!(mount_type(dir.path()).as_deref(), Some("fuse.mcfs"));
        let second = start_session(RootOnly, dir.path(), &MountOptions::default(), Default::default()).unwrap_err();
        assert!(second.to_string().contains("already mounted"), "{second}");
        mounted.unmount().unwrap();
        usable_mount_point(dir.path()).unwrap();
    }

    #[test]
    fn wait_returns_when_unmounted_from_outside_and_unmount_again_is_harmless() {
        require_mount();
        let dir = tempfile::tempdir().unwrap();
        let mounted = mount_root_only(dir.path());
        let handle = mounted.unmounter();
        // `umount -i`: the kernel alone, not an installed umount.fuse.mcfs helper.
        // SAFETY: no preconditions.
        let (tool, args): (&str, &[&str]) =
            if unsafe { libc::geteuid() } == 0 { ("umount", &["-i"]) } else { ("fusermount3", &["-u"]) };
        let status = Command::new(tool).args(args).arg(dir.path()).status().unwrap();
        assert!(status.success(), "{tool} failed");
        mounted.wait().unwrap();
        handle.unmount().unwrap();
        usable_mount_point(dir.path()).unwrap();
    }

    #[test]
    fn a_bind_mount_on_the_same_device_is_a_mount_point() {
        // SAFETY: no preconditions.
        assert!(unsafe { libc::geteuid() } == 0, "this test needs root (it makes a bind mount)");
        let dir = tempfile::tempdir().unwrap();
        let path = CString::new(dir.path().as_os_str().as_bytes()).unwrap();
        // SAFETY: valid NUL-terminated paths; null fstype and data are allowed for MS_BIND.
        let bound =
            unsafe { libc::mount(path.as_ptr(), path.as_ptr(), std::ptr::null(), libc::MS_BIND, std::ptr::null()) };
        assert_eq!(bound, 0, "bind mount refused: {}", io::Error::last_os_error());
        let refused = usable_mount_point(dir.path());
        // SAFETY: valid NUL-terminated path.
        assert_eq!(unsafe { libc::umount2(path.as_ptr(), 0) }, 0);
        assert_eq!(refused.unwrap_err().kind(), io::ErrorKind::AlreadyExists);
        usable_mount_point(dir.path()).unwrap();
    }
}
