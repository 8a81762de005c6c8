//! `mcfs flashdev [--device-profile P] [--scheduler S] [--stats FILE] [--foreground] BACKING MOUNTPOINT`: mounts
//! a pass-through of BACKING whose files behave like phone flash (crate `mcfs-flashdev`,
//! docs/FLASHDEV.md), as a daemon unless --foreground, with the same conventions as `mcfs mount`:
//! everything is checked before the fork, the parent exits 0 once the mount is live or prints why
//! it failed. It ends on `fusermount3 -u MOUNTPOINT`, `mcfs umount MOUNTPOINT` (through a control
//! socket that answers only that) or SIGTERM/SIGINT/SIGHUP, and then writes the final stats.
//!
//! Invariant: the stats file, when asked for, always holds a complete report: written at start,
//! every second while mounted, and once more after the session has ended.

use crate::control::ControlServer;
use crate::daemonize::StartupReport;
use crate::logging::LogFile;
use crate::protocol::{Request, Response};
use crate::stop_signal::StopSignal;
use crate::{daemon_start, logging, mountinfo, preflight, signals, socket_path, unmount};
use clap::Args;
use mcfs_device::scheduler::SchedPolicy;
use mcfs_device::DeviceProfile;
use mcfs_flashdev::{Flash, FlashFs};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver};
use std::sync::Arc;
use std::time::Duration;

/// How often the stats file is rewritten while mounted.
const STATS_EVERY: Duration = Duration::from_secs(1);
/// How long a signalled daemon waits for the session to end after unmounting.
const SESSION_END_WAIT: Duration = Duration::from_secs(30);
/// How long an exiting daemon lets control answers reach their clients.
const CONTROL_DRAIN_WAIT: Duration = Duration::from_secs(5);

#[derive(Args, Debug)]
pub struct FlashdevArgs {
    #[arg(long = "device-profile", alias = "profile", value_name = "PROFILE", default_value = "emmc",
          help = crate::cli::device_profile_help("The flash to emulate"))]
    pub profile: String,
    /// The device's command scheduler: `priority` (FG read > FG write > BG read > BG write,
    /// FastTrack §4.5) or `fifo` (a priority-unaware device).
    #[arg(long, value_name = "POLICY", default_value = crate::cli::DEFAULT_SCHEDULER, value_parser = crate::cli::parse_scheduler)]
    pub scheduler: SchedPolicy,
    /// Write the statistics (JSON) to FILE every second and when the mount ends.
    #[arg(long, value_name = "FILE")]
    pub stats: Option<PathBuf>,
    /// Stay in the foreground and log to stderr.
    #[arg(long, short = 'f')]
    pub foreground: bool,
    /// Where the daemon logs (default: next to its control socket, /run/mcfs/<mount point>.log or
    /// the like).
    #[arg(long, value_name = "FILE", conflicts_with = "foreground")]
    pub log: Option<PathBuf>,
    /// Threads serving FUSE requests; each waits while the device serves its command, so this
    /// bounds how many commands can be queued at once (the default fills ufs's 32 slots).
    #[arg(long, value_name = "N", default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub threads: u32,
    /// Directory whose files the mount shows.
    #[arg(value_name = "BACKING")]
    pub backing: PathBuf,
    /// Where to mount.
    #[arg(value_name = "MOUNTPOINT")]
    pub mountpoint: PathBuf,
}

/// What the daemon runs with, all of it checked before the fork.
struct Plan {
    backing: PathBuf,
    mountpoint: PathBuf,
    profile: DeviceProfile,
    policy: SchedPolicy,
    stats: Option<PathBuf>,
    threads: u32,
    socket: PathBuf,
    log: PathBuf,
}

/// Returns only on errors found before the daemon starts; otherwise exits with the daemon's (or,
/// after a fork, the waiting parent's) status.
pub fn run(args: FlashdevArgs) -> Result<(), String> {
    let foreground = args.foreground;
    let plan = check(args)?;
    let report = daemon_start::start(foreground, None, || open_log(&plan.log))?;
    std::process::exit(serve(plan, report))
}

fn check(args: FlashdevArgs) -> Result<Plan, String> {
    let profile = DeviceProfile::load(&args.profile)?;
    let backing = preflight::existing_dir("backing directory", &args.backing)?;
    let mountpoint = preflight::existing_dir("mount point", &args.mountpoint)?;
    if mountinfo::is_mount_point(&mountpoint) {
        return Err(format!("mount point {}: is already a mount point", mountpoint.display()));
    }
    preflight::check_not_nested(&backing, &mountpoint)?;
    let stats = args.stats.map(|path| stats_path(&path, &mountpoint)).transpose()?;
    // SAFETY: getuid has no preconditions.
    let socket = socket_path::daemon_socket(&mountpoint, unsafe { libc::getuid() })?;
    let log = match args.log {
        Some(log) => std::path::absolute(&log).map_err(|e| format!("log file {}: {e}", log.display()))?,
        None => socket.with_extension("log"),
    };
    Ok(Plan { backing, mountpoint, profile, policy: args.scheduler, stats, threads: args.threads, socket, log })
}

/// The daemon's log file (absolute, see `check`), opened through its
/// directory like the mount's log (`LogFile`: never through a symlink).
fn open_log(path: &Path) -> Result<LogFile, String> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(format!("log file {}: not a file name", path.display()));
    };
    let dir = std::fs::File::open(dir).map_err(|e| format!("log file {}: {}: {e}", path.display(), dir.display()))?;
    LogFile::open(dir.as_fd(), name, path)
}

/// The stats file with its directory made absolute (the daemon changes to /); refused under the
/// mount point, where the final report, written after unmounting, would vanish.
fn stats_path(path: &Path, mountpoint: &Path) -> Result<PathBuf, String> {
    let name = path.file_name().ok_or_else(|| format!("stats file {}: not a file name", path.display()))?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let dir = dir.canonicalize().map_err(|e| format!("stats file {}: {}: {e}", path.display(), dir.display()))?;
    if dir.starts_with(mountpoint) {
        return Err(format!(
            "stats file {}: must lie outside the mount point {}",
            path.display(),
            mountpoint.display()
        ));
    }
    Ok(dir.join(name))
}

enum Event {
    Signal(libc::c_int),
    SessionEnded,
}

/// Runs the daemon; returns its exit status. Must be called while the process has one thread.
fn serve(plan: Plan, report: StartupReport) -> i32 {
    match start(&plan) {
        Ok(running) => {
            tracing::info!(
                "flashdev: {} on {} as {} ({} scheduler, pid {})",
                plan.backing.display(),
                plan.mountpoint.display(),
                plan.profile.name,
                plan.policy,
                std::process::id()
            );
            report.ready();
            running.wait_and_stop()
        }
        Err(message) => {
            report.failed(&message);
            1
        }
    }
}

struct Running {
    flash: Arc<Flash>,
    mountpoint: PathBuf,
    stats: Option<PathBuf>,
    stats_stop: Arc<StopSignal>,
    stats_writer: Option<std::thread::JoinHandle<()>>,
    control: ControlServer,
    events: Receiver<Event>,
}

fn start(plan: &Plan) -> Result<Running, String> {
    signals::block_stop_signals().map_err(|e| format!("cannot block signals: {e}"))?;
    let flash = Arc::new(Flash::start(&plan.profile, plan.policy).map_err(thread_error)?);
    if let Some(path) = &plan.stats {
        flash.report().write_to(path)?;
    }
    let fs = FlashFs::new(&plan.backing, flash.clone())?;
    let (control, listener) = ControlServer::bind(&plan.socket)?;
    let settings = mcfs_fuse::MountOptions {
        threads: plan.threads as usize,
        fsname: plan.backing.display().to_string(),
        subtype: "flashdev".to_string(),
        ..mcfs_fuse::MountOptions::default()
    };
    let serving = mcfs_flashdev::mount(fs, &plan.mountpoint, &settings).map_err(|e| e.to_string())?;

    // From here on a failure must undo the mount.
    let (events_tx, events) = mpsc::channel();
    let stats_stop = Arc::new(StopSignal::default());
    let session_events = events_tx.clone();
    let mountpoint = plan.mountpoint.clone();
    let handler = Arc::new(move |request| handle_request(&mountpoint, request));
    // SAFETY: getuid has no preconditions.
    let owner = unsafe { libc::getuid() };
    let threads = control
        .spawn(listener, owner, handler)
        .and_then(|()| {
            std::thread::Builder::new().name("flashdev-wait".into()).spawn(move || {
                if let Err(e) = serving.wait() {
                    tracing::error!("{e}");
                }
                let _ = session_events.send(Event::SessionEnded);
            })
        })
        .and_then(|_| {
            signals::spawn_waiter(move |sig| {
                tracing::info!("received {}", signals::name(sig));
                let _ = events_tx.send(Event::Signal(sig));
            })
        })
        .and_then(|()| spawn_stats_writer(flash.clone(), plan.stats.clone(), stats_stop.clone()));
    let stats_writer = threads.map_err(|e| {
        let _ = unmount::unmount(&plan.mountpoint, true);
        thread_error(e)
    })?;
    Ok(Running {
        flash,
        mountpoint: plan.mountpoint.clone(),
        stats: plan.stats.clone(),
        stats_stop,
        stats_writer,
        control,
        events,
    })
}

fn thread_error(e: std::io::Error) -> String {
    format!("cannot start a thread: {e}")
}

/// A flashdev mount answers `mcfs umount` only; it has no engine to ask anything else.
fn handle_request(mountpoint: &Path, request: Request) -> Response {
    match request {
        Request::Unmount => match unmount::unmount(mountpoint, false) {
            Ok(()) => Response::Unmounting { pid: std::process::id() },
            Err(message) => Response::Error { message },
        },
        _ => Response::Error {
            message: "this is a flashdev mount: it takes only `mcfs umount`; its statistics are in its --stats file"
                .to_string(),
        },
    }
}

/// Rewrites the stats file every `STATS_EVERY` until stopped (none without --stats).
fn spawn_stats_writer(
    flash: Arc<Flash>,
    path: Option<PathBuf>,
    stop: Arc<StopSignal>,
) -> std::io::Result<Option<std::thread::JoinHandle<()>>> {
    let Some(path) = path else { return Ok(None) };
    let writer = std::thread::Builder::new().name("flashdev-stats".into()).spawn(move || {
        while !stop.sleep(STATS_EVERY) {
            if let Err(e) = flash.report().write_to(&path) {
                tracing::warn!("{e}");
            }
        }
    })?;
    Ok(Some(writer))
}

impl Running {
    fn wait_and_stop(self) -> i32 {
        match self.events.recv() {
            Ok(Event::Signal(sig)) => {
                tracing::info!("{}: unmounting {}", signals::name(sig), self.mountpoint.display());
                self.unmount_for_exit();
            }
            Ok(Event::SessionEnded) => tracing::info!("{} was unmounted", self.mountpoint.display()),
            Err(_) => tracing::error!("every event source is gone; stopping"),
        }
        self.finish()
    }

    /// A signalled daemon must go even if the mount is busy: then it is detached.
    fn unmount_for_exit(&self) {
        if let Err(e) = unmount::unmount(&self.mountpoint, false) {
            tracing::warn!("{e}; detaching the mount instead");
            if let Err(e) = unmount::unmount(&self.mountpoint, true) {
                tracing::error!("{e}");
            }
        }
        loop {
            match self.events.recv_timeout(SESSION_END_WAIT) {
                Ok(Event::SessionEnded) => return,
                Ok(Event::Signal(sig)) => tracing::info!("{} ignored: already stopping", signals::name(sig)),
                Err(_) => return tracing::warn!("the FUSE session did not end; exiting anyway"),
            }
        }
    }

    fn finish(self) -> i32 {
        self.stats_stop.stop();
        if let Some(writer) = self.stats_writer {
            let _ = writer.join();
        }
        let mut status = 0;
        if let Some(path) = &self.stats {
            match self.flash.report().write_to(path) {
                Ok(()) => tracing::info!("final statistics in {}", path.display()),
                Err(e) => {
                    tracing::error!("{e}");
                    status = 1;
                }
            }
        }
        self.control.close(CONTROL_DRAIN_WAIT);
        logging::flush();
        status
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_file_is_made_absolute_and_kept_out_of_the_mount() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let mnt = base.join("mnt");
        std::fs::create_dir(&mnt).unwrap();
        assert_eq!(stats_path(&base.join("s.json"), &mnt).unwrap(), base.join("s.json"));
        let err = stats_path(&mnt.join("s.json"), &mnt).unwrap_err();
        assert!(err.contains("must lie outside the mount point"), "{err}");
        let err = stats_path(&base.join("missing/s.json"), &mnt).unwrap_err();
        assert!(err.contains("missing"), "{err}");
    }

    #[test]
    fn only_umount_is_answered() {
        let dir = tempfile::tempdir().unwrap();
        match handle_request(dir.path(), Request::Stats) {
            Response::Error { message } => assert!(message.contains("flashdev"), "{message}"),
            other => panic!("{other:?}"),
        }
        // Not mounted: the unmount fails with the path in the message.
        match handle_request(dir.path(), Request::Unmount) {
            Response::Error { message } => assert!(message.contains(&dir.path().display().to_string()), "{message}"),
            other => panic!("{other:?}"),
        }
    }
}
