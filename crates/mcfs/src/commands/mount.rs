//! `mcfs mount`: check everything, then fork (unless --foreground) and serve;
//! under systemd, tell it how the start went (`sd_notify`).

use crate::cli::MountArgs;
use crate::daemon::Capture;
use crate::fuse_mount::FuseSettings;
use crate::input_devices::InputDevice;
use crate::logging::LogFile;
use crate::record::TraceFile;
use crate::sd_notify::Notifier;
use crate::{daemon, daemon_start, fg_watch, logging, metrics_file, mount_options, preflight};
use mcfs_device::DeviceProfile;

/// Returns only on errors found before the daemon starts; otherwise exits
/// with the daemon's (or, after a fork, the waiting parent's) status.
pub fn run(args: MountArgs) -> Result<(), String> {
    // First, while the process has one thread: it edits the environment.
    let notify = Notifier::from_env();
    let options = mount_options::parse(&args.options)?;
    let config_file = one_of("--config", args.config, "config", options.config_file)?;
    let threads = one_of("--threads", args.threads, "threads", options.threads)?.unwrap_or_else(default_threads);
    let mut plan = preflight::check(&args.backing, &args.mountpoint, config_file.as_deref(), &options.overrides)?;
    plan.virtual_clock = args.virtual_clock;
    plan.device = DeviceProfile::load(&args.device_profile)?;
    let metrics_file = one_of("--metrics-file", args.metrics_file, "metrics_file", options.metrics_file)?;
    plan.metrics_file = metrics_file.as_deref().map(metrics_file::check).transpose()?;
    let fasttrack = &mut plan.config.fasttrack;
    if let Some(tasks) = args.fg_tasks.or(fasttrack.tasks_file.take()) {
        fasttrack.tasks_file = Some(fg_watch::check_tasks_file(&tasks)?);
    }
    let fuse = FuseSettings {
        threads,
        // SAFETY: geteuid has no preconditions.
        allow_other: args.allow_other || options.allow_other || unsafe { libc::geteuid() } == 0,
        fsname: options.fsname.unwrap_or_else(|| plan.backing.display().to_string()),
        subtype: options.subtype.unwrap_or_else(|| "mcfs".to_string()),
        flags: options.flags,
        io_uring: plan.config.fuse.io_uring,
    };
    // Opened before the fork, so that a bad path is reported here.
    let capture = Capture {
        record: args
            .record
            .as_deref()
            .map(|path| TraceFile::create(path, &plan.mountpoint, &plan.backing))
            .transpose()?,
        input_devices: args.input_devices.iter().map(|path| InputDevice::open(path)).collect::<Result<_, _>>()?,
    };
    let report = daemon_start::start(args.foreground, args.log.map(Into::into), || {
        LogFile::open(plan.state.fd(), logging::LOG_FILE.as_ref(), &plan.state.file_path(logging::LOG_FILE))
    })?;
    if !options.ignored.is_empty() {
        tracing::info!("mount options without effect on mcfs, ignored: {}", options.ignored.join(","));
    }
    std::process::exit(daemon::serve(plan, fuse, capture, report, notify))
}

/// Threads serving FUSE requests unless `--threads` or `-o threads=` says
/// otherwise: as many as the mount's defaults (one per CPU, at least 2).
fn default_threads() -> u32 {
    let max = crate::mount_options::MAX_THREADS;
    u32::try_from(mcfs_fuse::MountOptions::default().threads).map_or(max, |n| n.min(max))
}

/// The value given by a flag or by its `-o` twin; both at once is an error.
pub(crate) fn one_of<T>(
    flag: &str,
    from_flag: Option<T>,
    option: &str,
    from_option: Option<T>,
) -> Result<Option<T>, String> {
    match (from_flag, from_option) {
        (Some(_), Some(_)) => Err(format!("{flag} and -o {option}= both given; use one")),
        (flag, option) => Ok(flag.or(option)),
    }
}
