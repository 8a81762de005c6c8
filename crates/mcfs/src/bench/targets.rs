//! The file systems a workload runs on, each set up fresh in its own scratch
//! directory: ext4 on a loop device, tmpfs, the FUSE floor (libfuse's
//! `passthrough_ll` example, with and without the writeback cache) and mcfs
//! (memory or sync mode, or sync-point consistency), the last two passing through to a directory on
//! their own loop-mounted ext4, so that what the backing device really wrote
//! can be read from /sys/block/loopN/stat.
//!
//! Invariant: whatever a `Target` set up is undone by guards in the reverse
//! order (mcfs or passthrough daemon, then the ext4 mount, then the loop
//! device, then the scratch files), on success, on error and on panic alike.

use super::cmd;
use serde::Serialize;
use std::fs::{self, File};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum TargetKind {
    /// ext4 on a loop device, used directly.
    Ext4,
    /// tmpfs (memory only; no device).
    Tmpfs,
    /// The FUSE floor: libfuse's passthrough_ll example over a loop-mounted
    /// ext4, without the writeback cache (writes go through to the daemon).
    FuseFloor,
    /// The FUSE floor with the kernel's writeback cache (`-o writeback`).
    FuseFloorWb,
    /// mcfs in memory-centric mode, backing directory on a loop-mounted ext4.
    Mcfs,
    /// mcfs with every app in sync mode (`mode = "sync"`).
    McfsSync,
    /// mcfs in memory mode with the tradeoff-point-location policy
    /// (`transaction_policy = "tpl"`): the policy's cost on the write path.
    McfsTpl,
    /// mcfs in memory mode with `consistency = "sync-point"`: the kernel's
    /// writeback cache, VCT boundaries only at sync points.
    McfsSyncPoint,
    /// mcfs as `mcfs`, but served over `/dev/fuse` (`fuse.io_uring =
    /// "off"`) where `mcfs` takes FUSE over io_uring if the kernel offers
    /// it: the two side by side measure the ring.
    McfsDevFuse,
}

impl TargetKind {
    pub const ALL: [TargetKind; 9] = [
        TargetKind::Ext4,
        TargetKind::Tmpfs,
        TargetKind::FuseFloor,
        TargetKind::FuseFloorWb,
        TargetKind::Mcfs,
        TargetKind::McfsSync,
        TargetKind::McfsTpl,
        TargetKind::McfsSyncPoint,
        TargetKind::McfsDevFuse,
    ];

    pub fn name(self) -> &'static str {
        match self {
            TargetKind::Ext4 => "ext4",
            TargetKind::Tmpfs => "tmpfs",
            TargetKind::FuseFloor => "fuse-floor",
            TargetKind::FuseFloorWb => "fuse-floor-wb",
            TargetKind::Mcfs => "mcfs",
            TargetKind::McfsSync => "mcfs-sync",
            TargetKind::McfsTpl => "mcfs-tpl",
            TargetKind::McfsSyncPoint => "mcfs-sync-point",
            TargetKind::McfsDevFuse => "mcfs-dev-fuse",
        }
    }

    pub fn is_mcfs(self) -> bool {
        matches!(
            self,
            TargetKind::Mcfs
                | TargetKind::McfsSync
                | TargetKind::McfsTpl
                | TargetKind::McfsSyncPoint
                | TargetKind::McfsDevFuse
        )
    }

    pub fn has_device(self) -> bool {
        self != TargetKind::Tmpfs
    }

    pub fn is_fuse_floor(self) -> bool {
        matches!(self, TargetKind::FuseFloor | TargetKind::FuseFloorWb)
    }
}

/// What every target of one run shares.
pub struct TargetEnv<'a> {
    /// Parent of the per-target scratch directories.
    pub scratch: &'a Path,
    /// Size of each sparse ext4 image.
    pub image_bytes: u64,
    pub mcfs_bin: &'a Path,
    /// TOML lines added to every mcfs config (`--mcfs-option`).
    pub mcfs_options: &'a [String],
    /// libfuse's passthrough_ll, built by scripts/bench-setup.sh; needed
    /// only by the fuse-floor targets.
    pub passthrough_bin: Option<&'a Path>,
}

/// One set-up file system. Fields drop in declaration order, which is the
/// tear-down order the module invariant asks for.
pub struct Target {
    pub kind: TargetKind,
    /// Directory the workload puts its files in.
    pub dir: PathBuf,
    mcfs: Option<McfsMount>,
    floor: Option<PassthroughMount>,
    mount: Option<Mount>,
    device: Option<LoopDevice>,
    /// Root of the mounted ext4 (the device's file system), for syncfs.
    device_fs: Option<PathBuf>,
    /// Holds the image, the mount points and the mcfs config.
    root: tempfile::TempDir,
}

impl Target {
    /// Sets up `kind` in a new directory under `env.scratch`. For mcfs,
    /// `cache_size` goes into the config (the engine default otherwise).
    pub fn set_up(kind: TargetKind, env: &TargetEnv, cache_size: Option<u64>) -> Result<Target, String> {
        let root = tempfile::Builder::new()
            .prefix(&format!("{}-", kind.name()))
            .tempdir_in(env.scratch)
            .map_err(|e| format!("cannot create a scratch directory in {}: {e}", env.scratch.display()))?;
        let mnt = make_dir(root.path(), "mnt")?;
        if kind == TargetKind::Tmpfs {
            let mount = Mount::attach("tmpfs", &mnt, "tmpfs", "size=4g")?;
            return Ok(Target {
                kind,
                dir: mnt,
                mcfs: None,
                floor: None,
                mount: Some(mount),
                device: None,
                device_fs: None,
                root,
            });
        }
        let device = LoopDevice::with_new_ext4(&root.path().join("ext4.img"), env.image_bytes)?;
        let mount = Mount::attach(&device.path.to_string_lossy(), &mnt, "ext4", "defaults")?;
        let data = make_dir(&mnt, "data")?;
        let mut target = Target {
            kind,
            dir: data,
            mcfs: None,
            floor: None,
            mount: Some(mount),
            device: Some(device),
            device_fs: Some(mnt),
            root,
        };
        if kind.is_mcfs() {
            // The config lives beside the image, off the measured device.
            let config = target.root.path().join("mcfs.toml");
            let text = mcfs_config(kind, cache_size, env.mcfs_options);
            fs::write(&config, text).map_err(|e| format!("{}: {e}", config.display()))?;
            let mountpoint = make_dir(target.root.path(), "mcfs")?;
            target.mcfs = Some(McfsMount::attach(env.mcfs_bin, &config, &target.dir, &mountpoint)?);
            target.dir = mountpoint;
        } else if kind.is_fuse_floor() {
            let bin = env.passthrough_bin.ok_or("no passthrough_ll binary was given for the fuse-floor targets")?;
            let mountpoint = make_dir(target.root.path(), "fuse")?;
            let log = target.root.path().join("passthrough_ll.log");
            let writeback = kind == TargetKind::FuseFloorWb;
            target.floor = Some(PassthroughMount::attach(bin, &target.dir, &mountpoint, writeback, &log)?);
            target.dir = mountpoint;
        }
        Ok(target)
    }

    /// Whether the target has a block device of its own (all but tmpfs).
    pub fn has_device(&self) -> bool {
        self.device.is_some()
    }

    /// Bytes the target's block device has written since it was attached.
    pub fn device_bytes_written(&self) -> Result<u64, String> {
        let device = self.device.as_ref().ok_or_else(|| format!("{} has no block device", self.kind.name()))?;
        device.bytes_written()
    }

    /// Makes everything written so far reach the device: mcfs unmounts (its
    /// final checkpoint) and so does the FUSE floor (its writeback cache),
    /// then the device's ext4 is synced. After this, for those, `dir` is no
    /// longer mounted.
    pub fn settle(&mut self) -> Result<(), String> {
        if let Some(mcfs) = self.mcfs.as_mut() {
            mcfs.unmount()?;
        }
        if let Some(floor) = self.floor.as_mut() {
            floor.unmount()?;
        }
        self.sync_device_fs()
    }

    /// syncfs(2) on the ext4 that sits on the loop device.
    pub fn sync_device_fs(&self) -> Result<(), String> {
        let Some(root) = &self.device_fs else {
            return Ok(());
        };
        let dir = File::open(root).map_err(|e| format!("{}: {e}", root.display()))?;
        // SAFETY: syncfs on a descriptor we own; no memory is passed.
        if unsafe { libc::syncfs(dir.as_raw_fd()) } != 0 {
            return Err(format!("syncfs {}: {}", root.display(), std::io::Error::last_os_error()));
        }
        Ok(())
    }

    /// The mcfs daemon serving this target.
    pub fn daemon_pid(&self) -> Result<u32, String> {
        self.live_mcfs()?.daemon_pid()
    }

    /// `mcfs stat --json` of this target.
    pub fn mcfs_stats(&self) -> Result<serde_json::Value, String> {
        self.live_mcfs()?.stats()
    }

    fn live_mcfs(&self) -> Result<&McfsMount, String> {
        self.mcfs.as_ref().filter(|m| m.mounted).ok_or_else(|| format!("{} is not a mounted mcfs", self.kind.name()))
    }

    /// Undoes the set-up and reports the first thing that failed (Drop would
    /// only print it).
    pub fn tear_down(mut self) -> Result<(), String> {
        let mut first_error = None;
        if let Some(mcfs) = self.mcfs.as_mut() {
            first_error = first_error.or(mcfs.unmount().err());
        }
        if let Some(floor) = self.floor.as_mut() {
            first_error = first_error.or(floor.unmount().err());
        }
        if let Some(mount) = self.mount.as_mut() {
            first_error = first_error.or(mount.unmount().err());
        }
        if let Some(device) = self.device.as_mut() {
            first_error = first_error.or(device.detach().err());
        }
        first_error.map_or(Ok(()), Err)
    }
}

/// The harness's own keys first; mcfs rejects a key given twice, so a
/// clash with `options` fails the mount with TOML's message.
fn mcfs_config(kind: TargetKind, cache_size: Option<u64>, options: &[String]) -> String {
    let mode = if kind == TargetKind::McfsSync { "sync" } else { "memory" };
    let mut text = format!("mode = \"{mode}\"\n");
    if kind == TargetKind::McfsTpl {
        text.push_str("transaction_policy = \"tpl\"\n");
    }
    if kind == TargetKind::McfsSyncPoint {
        text.push_str("consistency = \"sync-point\"\n");
    }
    if kind == TargetKind::McfsDevFuse {
        text.push_str("fuse.io_uring = \"off\"\n");
    }
    if let Some(bytes) = cache_size {
        text.push_str(&format!("cache_size = {bytes}\n"));
    }
    for option in options {
        text.push_str(option);
        text.push('\n');
    }
    text
}

fn make_dir(parent: &Path, name: &str) -> Result<PathBuf, String> {
    let dir = parent.join(name);
    fs::create_dir(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    Ok(dir)
}

/// A loop device over a sparse image file holding a fresh ext4.
struct LoopDevice {
    path: PathBuf,
    attached: bool,
}

impl LoopDevice {
    fn with_new_ext4(image: &Path, bytes: u64) -> Result<LoopDevice, String> {
        let file = File::create(image).map_err(|e| format!("cannot create {}: {e}", image.display()))?;
        file.set_len(bytes).map_err(|e| format!("cannot size {} to {bytes} bytes: {e}", image.display()))?;
        drop(file);
        // Initialise inode tables and journal now: ext4's lazy initialiser
        // would otherwise write in the background during the measurements.
        cmd::run(
            "mkfs.ext4",
            [
                "-q".as_ref(),
                "-F".as_ref(),
                "-E".as_ref(),
                "lazy_itable_init=0,lazy_journal_init=0".as_ref(),
                image.as_os_str(),
            ],
        )?;
        // Direct I/O: the loop device then behaves like a disk, without a
        // second copy of every block in the host page cache.
        let out =
            cmd::run("losetup", ["--find".as_ref(), "--show".as_ref(), "--direct-io=on".as_ref(), image.as_os_str()])?;
        let path = PathBuf::from(out.trim());
        if !path.to_string_lossy().starts_with("/dev/loop") {
            return Err(format!("losetup printed an unexpected device name: {:?}", out.trim()));
        }
        Ok(LoopDevice { path, attached: true })
    }

    fn stat_path(&self) -> PathBuf {
        let name = self.path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
        Path::new("/sys/block").join(name).join("stat")
    }

    fn bytes_written(&self) -> Result<u64, String> {
        let path = self.stat_path();
        let text = fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        sectors_written(&text)
            .map(|s| s * 512)
            .ok_or_else(|| format!("{}: unexpected format: {text:?}", path.display()))
    }

    fn detach(&mut self) -> Result<(), String> {
        if !self.attached {
            return Ok(());
        }
        self.attached = false;
        cmd::run("losetup", ["-d".as_ref(), self.path.as_os_str()]).map(drop)
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        if let Err(e) = self.detach() {
            eprintln!("mcfs bench: cleanup: {e}");
        }
    }
}

/// Field 7 of /sys/block/<dev>/stat: sectors (512 bytes) written.
fn sectors_written(stat: &str) -> Option<u64> {
    stat.split_whitespace().nth(6)?.parse().ok()
}

/// A kernel mount (ext4 or tmpfs).
struct Mount {
    dir: PathBuf,
    mounted: bool,
}

impl Mount {
    fn attach(source: &str, dir: &Path, fs_type: &str, options: &str) -> Result<Mount, String> {
        cmd::run(
            "mount",
            ["-t".as_ref(), fs_type.as_ref(), "-o".as_ref(), options.as_ref(), source.as_ref(), dir.as_os_str()],
        )?;
        Ok(Mount { dir: dir.to_path_buf(), mounted: true })
    }

    /// A file closed a moment ago can keep the mount busy briefly; retry,
    /// and detach lazily as the last resort so the loop device can go.
    fn unmount(&mut self) -> Result<(), String> {
        if !self.mounted {
            return Ok(());
        }
        self.mounted = false;
        let mut last = String::new();
        for _ in 0..5 {
            match cmd::run("umount", [self.dir.as_os_str()]) {
                Ok(_) => return Ok(()),
                Err(e) => last = e,
            }
            sleep(Duration::from_millis(200));
        }
        cmd::run("umount", ["-l".as_ref(), self.dir.as_os_str()]).map(drop)?;
        Err(format!("{last} (detached lazily instead)"))
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        if let Err(e) = self.unmount() {
            eprintln!("mcfs bench: cleanup: {e}");
        }
    }
}

/// An mcfs daemon mounted with `mcfs mount --config`.
struct McfsMount {
    bin: PathBuf,
    backing: PathBuf,
    mountpoint: PathBuf,
    mounted: bool,
}

impl McfsMount {
    fn attach(bin: &Path, config: &Path, backing: &Path, mountpoint: &Path) -> Result<McfsMount, String> {
        cmd::run(
            bin,
            ["mount".as_ref(), "--config".as_ref(), config.as_os_str(), backing.as_os_str(), mountpoint.as_os_str()],
        )
        .map_err(|e| format!("{e} (daemon log: {})", backing.join(".mcfs/mcfs.log").display()))?;
        Ok(McfsMount {
            bin: bin.to_path_buf(),
            backing: backing.to_path_buf(),
            mountpoint: mountpoint.to_path_buf(),
            mounted: true,
        })
    }

    fn stats(&self) -> Result<serde_json::Value, String> {
        let text = cmd::run(&self.bin, ["stat".as_ref(), "--json".as_ref(), self.mountpoint.as_os_str()])?;
        serde_json::from_str(&text).map_err(|e| format!("mcfs stat --json printed something that is not JSON: {e}"))
    }

    /// From `mcfs stat --json` if it reports a pid, else the process whose
    /// command line is `… mount … MOUNTPOINT` (what `pgrep -f` would find).
    fn daemon_pid(&self) -> Result<u32, String> {
        if let Some(pid) = self.stats().ok().and_then(|s| s.get("daemon")?.get("pid")?.as_u64()) {
            return u32::try_from(pid).map_err(|_| format!("mcfs stat reported an impossible pid {pid}"));
        }
        find_mount_process(&self.mountpoint)
            .ok_or_else(|| format!("no process with `mount … {}` on its command line", self.mountpoint.display()))
    }

    /// `mcfs umount` checkpoints and waits for the daemon to exit; if that
    /// fails the mount is detached so the ext4 below can still go.
    fn unmount(&mut self) -> Result<(), String> {
        if !self.mounted {
            return Ok(());
        }
        self.mounted = false;
        match cmd::run(&self.bin, ["umount".as_ref(), self.mountpoint.as_os_str()]) {
            Ok(_) => Ok(()),
            Err(e) => {
                let detached = cmd::run("umount", ["-l".as_ref(), self.mountpoint.as_os_str()]).is_ok();
                let log = self.backing.join(".mcfs/mcfs.log");
                Err(format!("{e} (lazily detached: {detached}; daemon log: {})", log.display()))
            }
        }
    }
}

impl Drop for McfsMount {
    fn drop(&mut self) {
        if let Err(e) = self.unmount() {
            eprintln!("mcfs bench: cleanup: {e}");
        }
    }
}

/// libfuse's passthrough_ll in the foreground as our child, mirroring
/// `source` at `mountpoint`; its output goes to a log beside the image.
struct PassthroughMount {
    mountpoint: PathBuf,
    child: Child,
    log: PathBuf,
    mounted: bool,
}

/// How long a FUSE daemon may take to mount or to exit after its unmount.
const DAEMON_PATIENCE: Duration = Duration::from_secs(10);

impl PassthroughMount {
    fn attach(
        bin: &Path,
        source: &Path,
        mountpoint: &Path,
        writeback: bool,
        log: &Path,
    ) -> Result<PassthroughMount, String> {
        let log_file = File::create(log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        let err_file = log_file.try_clone().map_err(|e| format!("{}: {e}", log.display()))?;
        let mut options = format!("source={}", source.display());
        if writeback {
            options.push_str(",writeback");
        }
        let child = Command::new(bin)
            .args(["-f".as_ref(), "-o".as_ref(), options.as_ref(), mountpoint.as_os_str()])
            .stdin(Stdio::null())
            .stdout(log_file)
            .stderr(err_file)
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
        let mut floor =
            PassthroughMount { mountpoint: mountpoint.to_path_buf(), child, log: log.to_path_buf(), mounted: false };
        let start = Instant::now();
        while !is_mount_point(mountpoint) {
            if let Ok(Some(status)) = floor.child.try_wait() {
                return Err(format!("{} exited ({status}) before mounting: {}", bin.display(), floor.log_tail()));
            }
            if start.elapsed() > DAEMON_PATIENCE {
                return Err(format!(
                    "{} did not mount within {DAEMON_PATIENCE:?}: {}",
                    bin.display(),
                    floor.log_tail()
                ));
            }
            sleep(Duration::from_millis(10));
        }
        floor.mounted = true;
        Ok(floor)
    }

    fn log_tail(&self) -> String {
        let text = fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        format!("{} (log: {})", lines[lines.len().saturating_sub(4)..].join(" | "), self.log.display())
    }

    /// Unmounts and waits for the daemon to exit, which closes its
    /// descriptors on the ext4 below; kills it if it does not.
    fn unmount(&mut self) -> Result<(), String> {
        if !self.mounted {
            return Ok(());
        }
        self.mounted = false;
        let unmounted = cmd::run("umount", [self.mountpoint.as_os_str()]);
        if unmounted.is_err() {
            cmd::run("umount", ["-l".as_ref(), self.mountpoint.as_os_str()]).ok();
        }
        let start = Instant::now();
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) if status.success() => break,
                Ok(Some(status)) => return Err(format!("passthrough_ll exited with {status}: {}", self.log_tail())),
                Ok(None) if start.elapsed() < DAEMON_PATIENCE => sleep(Duration::from_millis(10)),
                _ => {
                    self.child.kill().ok();
                    self.child.wait().ok();
                    return Err(format!("passthrough_ll did not exit after its unmount; killed: {}", self.log_tail()));
                }
            }
        }
        unmounted.map(drop).map_err(|e| format!("{e} (detached lazily instead)"))
    }
}

impl Drop for PassthroughMount {
    fn drop(&mut self) {
        if let Err(e) = self.unmount() {
            eprintln!("mcfs bench: cleanup: {e}");
        }
        // Mounting failed: the daemon may still run.
        if let Ok(None) = self.child.try_wait() {
            self.child.kill().ok();
            self.child.wait().ok();
        }
    }
}

/// A directory is a mount point when it sits on another device than its
/// parent (a statfs type check would not do: the scratch directory may
/// itself be on a FUSE file system, the flash emulator).
fn is_mount_point(dir: &Path) -> bool {
    let Some(parent) = dir.parent() else {
        return false;
    };
    match (fs::metadata(dir), fs::metadata(parent)) {
        (Ok(d), Ok(p)) => d.dev() != p.dev(),
        _ => false,
    }
}

fn find_mount_process(mountpoint: &Path) -> Option<u32> {
    let me = std::process::id();
    let wanted = mountpoint.as_os_str().as_bytes();
    fs::read_dir("/proc").ok()?.flatten().find_map(|entry| {
        let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
        let cmdline = fs::read(entry.path().join("cmdline")).ok()?;
        let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
        let is_daemon = pid != me && args.contains(&&b"mount"[..]) && args.contains(&wanted);
        is_daemon.then_some(pid)
    })
}

/// Peak resident set size (VmHWM) of a process, in bytes.
pub fn peak_rss_bytes(pid: u32) -> Result<u64, String> {
    let path = format!("/proc/{pid}/status");
    let text = fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    status_field_kib(&text, "VmHWM").map(|kib| kib * 1024).ok_or_else(|| format!("{path}: no VmHWM line"))
}

fn status_field_kib(status: &str, field: &str) -> Option<u64> {
    status.lines().find_map(|line| {
        let value = line.strip_prefix(field)?.strip_prefix(':')?;
        value.trim().strip_suffix("kB")?.trim().parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sectors_written_is_the_seventh_field() {
        let stat = "      57        1     2162        5       13        6    20560       23        0       12       35";
        assert_eq!(sectors_written(stat), Some(20560));
        assert_eq!(sectors_written("1 2 3"), None);
        assert_eq!(sectors_written("1 2 3 4 5 6 x"), None);
    }

    #[test]
    fn mount_points_are_told_by_their_device() {
        assert!(is_mount_point(Path::new("/proc")));
        let dir = tempfile::tempdir().unwrap();
        assert!(!is_mount_point(dir.path()));
        assert!(!is_mount_point(&dir.path().join("missing")));
        assert!(!is_mount_point(Path::new("/")));
    }

    #[test]
    fn vmhwm_is_read_in_kib() {
        let status = "Name:\tmcfs\nVmPeak:\t  900 kB\nVmHWM:\t   12345 kB\nVmRSS:\t 100 kB\n";
        assert_eq!(status_field_kib(status, "VmHWM"), Some(12345));
        assert_eq!(status_field_kib(status, "VmSwap"), None);
        assert_eq!(status_field_kib("VmHWM:\tlots\n", "VmHWM"), None);
    }

    #[test]
    fn own_peak_rss_is_plausible() {
        let rss = peak_rss_bytes(std::process::id()).unwrap();
        assert!(rss > 100 * 1024, "{rss}");
    }

    #[test]
    fn config_sets_mode_and_cache_size() {
        assert_eq!(mcfs_config(TargetKind::McfsSync, None, &[]), "mode = \"sync\"\n");
        assert_eq!(mcfs_config(TargetKind::McfsTpl, None, &[]), "mode = \"memory\"\ntransaction_policy = \"tpl\"\n");
        assert_eq!(mcfs_config(TargetKind::McfsDevFuse, None, &[]), "mode = \"memory\"\nfuse.io_uring = \"off\"\n");
        let options = ["max_stale_bytes = 1".to_string(), "dirty_high_ratio = 0.5".to_string()];
        assert_eq!(
            mcfs_config(TargetKind::Mcfs, Some(4096), &options),
            "mode = \"memory\"\ncache_size = 4096\nmax_stale_bytes = 1\ndirty_high_ratio = 0.5\n"
        );
    }

    #[test]
    fn a_process_is_found_by_its_mount_arguments() {
        // `read` keeps sh itself (not an exec'd child) alive until killed.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "read _line; :", "mount", "/tmp/mcfs-bench-test-mountpoint"])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // The child's cmdline is visible as soon as it has exec'd.
        let mut found = None;
        for _ in 0..50 {
            found = find_mount_process(Path::new("/tmp/mcfs-bench-test-mountpoint"));
            if found.is_some() {
                break;
            }
            sleep(Duration::from_millis(20));
        }
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(found, Some(child.id()));
        assert_eq!(find_mount_process(Path::new("/tmp/mcfs-bench-no-such-mountpoint")), None);
    }
}
