//! The mounted file system's process: starts the engine on the backing
//! directory, the FUSE session, the ticker, the battery watcher, the
//! foreground-tasks watcher (if a tasks file is set), the control socket,
//! the signal thread and, if asked, the trace recorder and the input device
//! watchers, reports readiness (to `mcfs mount`, and to systemd through
//! `sd_notify`, which also hears the status and the stop), then waits for
//! the one event that ends it (a stop signal, or the mount going away) and
//! stops in an order that loses nothing: checkpoint, unmount, complete the
//! trace, shut the engine down (which checkpoints whatever arrived in
//! between), exit.

use crate::control::{ControlServer, Handler};
use crate::daemonize::StartupReport;
use crate::fuse_mount::{self, FuseSettings, MountHandle};
use crate::input_devices::{self, InputDevice, InputWatchers};
use crate::metrics_file::MetricsFile;
use crate::polling::PollingThread;
use crate::preflight::{self, MountPlan};
use crate::protocol::{Request, Response};
use crate::record::{Recorder, TraceFile};
use crate::sd_notify::Notifier;
use crate::ticker::{self, Ticker};
use crate::user_input::UserInput;
use crate::{
    battery, fg_watch, logging, panic_guard, proc_table, prometheus, service_status, signals, socket_path, unmount,
};
use mcfs_core::ioprio::IoPriority;
use mcfs_core::{Clock, DirBackend, Engine, IoClass, ManualClock, SystemClock};
use mcfs_fuse::{RequestObserver, Transport};
use mcfs_sim::device::SimBackend;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// How long a signalled daemon waits for its session to end after unmounting.
const SESSION_END_WAIT: Duration = Duration::from_secs(30);
/// How long an exiting daemon lets control answers reach their clients.
const CONTROL_DRAIN_WAIT: Duration = Duration::from_secs(5);

/// What the daemon captures besides serving: the trace it records
/// (`--record`) and the input devices it watches (`--input-device`), both
/// opened before the daemon starts.
pub struct Capture {
    pub record: Option<TraceFile>,
    pub input_devices: Vec<InputDevice>,
}

enum Event {
    Signal(libc::c_int),
    SessionEnded,
}

/// Everything the stop sequence needs.
struct Running {
    engine: Arc<Engine>,
    mountpoint: PathBuf,
    mount: MountHandle,
    control: ControlServer,
    /// The background thread; none on a virtual clock (`ctl advance` ticks).
    ticker: Option<Ticker>,
    battery_watcher: Option<PollingThread>,
    /// Follows `fasttrack.tasks_file`, if set.
    fg_watcher: Option<PollingThread>,
    /// Keeps `metrics_file` up to date, if set.
    metrics: Option<MetricsFile>,
    inputs: InputWatchers,
    recorder: Option<Arc<Recorder>>,
    events: Receiver<Event>,
    notify: Arc<Notifier>,
    /// Status lines and watchdog pings for systemd, if it listens.
    status_thread: Option<PollingThread>,
}

/// Runs the daemon; returns its exit status. Must be called while the
/// process has one thread (it blocks the stop signals for all threads).
pub fn serve(
    mut plan: MountPlan,
    fuse: FuseSettings,
    capture: Capture,
    report: StartupReport,
    notify: Notifier,
) -> i32 {
    limit_malloc_arenas();
    if let Err(e) = plan.lock.record_pid() {
        tracing::warn!("cannot record the pid in the lock file: {e}");
    }
    let (backing, mountpoint) = (plan.backing.display().to_string(), plan.mountpoint.display().to_string());
    notify.status(&format!("recovering {backing} and mounting it on {mountpoint}"));
    match start(&plan, &fuse, capture, Arc::new(notify)) {
        Ok(running) => {
            tracing::info!("mounted {backing} on {mountpoint} (pid {})", std::process::id());
            report.ready();
            running.notify.ready(&format!("serving {backing} on {mountpoint}"));
            running.wait_and_stop()
        }
        Err(message) => {
            report.failed(&message);
            1
        }
    }
}

fn start(plan: &MountPlan, fuse: &FuseSettings, capture: Capture, notify: Arc<Notifier>) -> Result<Running, String> {
    signals::block_stop_signals().map_err(|e| format!("cannot block signals: {e}"))?;
    let backend = preflight::open_backend(&plan.backing)?;
    // A virtual clock starts at the real time, so file times stay plausible.
    let virtual_clock = plan.virtual_clock.then(|| Arc::new(ManualClock::starting_at(SystemClock.now())));
    let clock: Arc<dyn Clock> = match &virtual_clock {
        Some(clock) => clock.clone(),
        None => Arc::new(SystemClock),
    };
    // The backing I/O also runs through the device model: `mcfs stat` shows its estimate.
    let backend = Arc::new(SimBackend::over(backend, plan.device.clone(), clock.clone()));
    let engine = Arc::new(Engine::start(backend.clone(), clock, plan.config.clone())?);
    panic_guard::install(engine.clone(), plan.mountpoint.clone());

    // SAFETY: getuid has no preconditions.
    let owner = unsafe { libc::getuid() };
    let socket = socket_path::daemon_socket(&plan.mountpoint, owner)?;
    let (control, listener) = ControlServer::bind(&socket)?;

    let checkpoint_priority = plan.config.fasttrack.dispatch.then(|| IoPriority::for_class(IoClass::Background));
    let ticker = match virtual_clock {
        Some(_) => None,
        None => Some(ticker::spawn(engine.clone(), checkpoint_priority).map_err(thread_error)?),
    };
    let battery_engine = engine.clone();
    let battery_watcher =
        battery::spawn_watcher(battery::POWER_SUPPLY_DIR.into(), move |p| battery_engine.set_battery(p))
            .map_err(thread_error)?;
    let fg_watcher = match &plan.config.fasttrack.tasks_file {
        Some(tasks) => Some(spawn_fg_watcher(tasks.clone(), engine.clone()).map_err(thread_error)?),
        None => None,
    };

    // Known once mounted, last.
    let transport: Arc<OnceLock<Transport>> = Arc::default();
    let metrics = match &plan.metrics_file {
        Some(path) => {
            let (engine, backend, transport) = (engine.clone(), backend.clone(), transport.clone());
            let render = move || stats_document(&engine, &backend, &transport).map(|doc| prometheus::render(&doc));
            Some(MetricsFile::spawn(path.clone(), render).map_err(thread_error)?)
        }
        None => None,
    };

    let recorder = match capture.record {
        Some(file) => Some(Arc::new(Recorder::start(file, engine.clone(), &plan.config)?)),
        None => None,
    };
    let user_input = Arc::new(UserInput::new(engine.clone(), recorder.clone()));

    // Last, so that nothing can fail with the mount left behind but the
    // thread starts below, which undo it.
    let observer = recorder.clone().map(|r| r as Arc<dyn RequestObserver>);
    let mounted = fuse_mount::start(engine.clone(), &plan.mountpoint, fuse, observer)?;
    let _ = transport.set(mounted.transport());
    let mount = mounted.handle();
    let handler: Arc<Handler> = {
        let (engine, mount, user_input) = (engine.clone(), mount.clone(), user_input.clone());
        let live = Live { engine, mount, user_input, virtual_clock, backend, transport };
        Arc::new(move |request| handle_request(&live, request))
    };
    let (events_tx, events) = mpsc::channel();
    let (inputs, status_thread) = control
        .spawn(listener, owner, handler)
        .and_then(|()| spawn_event_threads(mounted, events_tx))
        .and_then(|()| input_devices::watch(capture.input_devices, Arc::new(move |g| user_input.gesture(g))))
        .and_then(|inputs| {
            let status = service_status::spawn(notify.clone(), engine.clone(), plan.mountpoint.clone())?;
            Ok((inputs, status))
        })
        .map_err(|e| {
            let _ = unmount::unmount(&plan.mountpoint, true);
            thread_error(e)
        })?;
    tracing::info!("control socket {}", control.path().display());
    Ok(Running {
        engine,
        mountpoint: plan.mountpoint.clone(),
        mount,
        control,
        ticker,
        battery_watcher,
        fg_watcher,
        metrics,
        inputs,
        recorder,
        events,
        notify,
        status_thread,
    })
}

/// The engine follows the foreground app the tasks file names.
fn spawn_fg_watcher(tasks: PathBuf, engine: Arc<Engine>) -> std::io::Result<PollingThread> {
    tracing::info!("following the foreground app in {}", tasks.display());
    fg_watch::spawn(tasks, proc_table::PROC_ROOT.into(), move |uid| {
        engine.set_foreground_uid(uid);
        let app = engine.foreground();
        tracing::info!("foreground app (from the tasks file): {}", app.as_deref().unwrap_or("none"));
    })
}

fn thread_error(e: std::io::Error) -> String {
    format!("cannot start a thread: {e}")
}

/// The two sources of the event that ends the daemon: the session ending, and stop signals.
fn spawn_event_threads(mounted: fuse_mount::LiveMount, events: Sender<Event>) -> std::io::Result<()> {
    let session_events = events.clone();
    std::thread::Builder::new().name("mcfs-session".into()).spawn(move || {
        mounted.wait();
        let _ = session_events.send(Event::SessionEnded);
    })?;
    signals::spawn_waiter(move |sig| {
        tracing::info!("received {}", signals::name(sig));
        let _ = events.send(Event::Signal(sig));
    })
}

/// What control requests act on.
struct Live {
    engine: Arc<Engine>,
    mount: MountHandle,
    user_input: Arc<UserInput>,
    virtual_clock: Option<Arc<ManualClock>>,
    backend: Arc<SimBackend<DirBackend>>,
    transport: Arc<OnceLock<Transport>>,
}

/// The stat document (docs/STAT.md): the engine's counters, the device
/// estimate, the log's counts, the daemon's pid and log place and the FUSE
/// transport (once mounted), now.
fn stats_document(
    engine: &Engine,
    backend: &SimBackend<DirBackend>,
    transport: &OnceLock<Transport>,
) -> Result<serde_json::Value, String> {
    let raw = serde_json::to_value(engine.stats()).and_then(|mut stats| {
        stats["device_estimate"] = serde_json::to_value(backend.report())?;
        stats["log"] = serde_json::to_value(logging::counts())?;
        stats["daemon"] = serde_json::json!({ "pid": std::process::id(), "log": logging::place() });
        if let Some(transport) = transport.get() {
            stats["fuse"] = fuse_section(transport);
        }
        Ok(stats)
    });
    raw.map(|raw| mcfs_core::stats_doc::document(raw, std::time::SystemTime::now()))
        .map_err(|e| format!("cannot encode stats: {e}"))
}

/// The `fuse` section: the transport and the requests each path served.
fn fuse_section(transport: &Transport) -> serde_json::Value {
    let (ring, dev) = match transport {
        Transport::IoUring(served) => (served.ring.load(Ordering::Relaxed), served.dev.load(Ordering::Relaxed)),
        Transport::DevFuse => (0, 0),
    };
    serde_json::json!({ "transport": transport.name(), "ring_requests": ring, "dev_requests": dev })
}

/// Answers one control request.
fn handle_request(live: &Live, request: Request) -> Response {
    let Live { engine, mount, user_input, .. } = live;
    let outcome = match request {
        Request::Stats => {
            return match stats_document(engine, &live.backend, &live.transport) {
                Ok(stats) => Response::Stats { stats },
                Err(message) => Response::Error { message },
            };
        }
        Request::Checkpoint => checkpoint_with_handover(engine, mount).map_err(|e| format!("checkpoint failed: {e}")),
        Request::Battery { percent } if percent > 100 => Err(format!("battery percent must be 0..=100, got {percent}")),
        Request::Battery { percent } => {
            engine.set_battery(percent);
            Ok(())
        }
        Request::Mode { app, mode } => engine.set_app_mode(&app, mode),
        Request::Input => {
            user_input.tap();
            Ok(())
        }
        Request::SetForeground { app } => engine.set_foreground(app.as_deref()),
        Request::Foreground => return Response::Foreground { app: engine.foreground() },
        Request::Advance { nanos } => match &live.virtual_clock {
            Some(clock) => {
                mcfs_core::virtual_time::advance(engine, clock, Duration::from_nanos(nanos), || engine.tick());
                Ok(())
            }
            None => Err("this mount runs on the system clock; mount with --virtual-clock to move time".to_string()),
        },
        Request::Unmount => {
            return match checkpoint_and_unmount(engine, mount) {
                Ok(()) => Response::Unmounting { pid: std::process::id() },
                Err(message) => Response::Error { message },
            }
        }
    };
    match outcome {
        Ok(()) => Response::Done,
        Err(message) => Response::Error { message },
    }
}

/// The data is made durable before the mount goes, so a failing unmount
/// (busy) or a kill right after it loses nothing.
fn checkpoint_and_unmount(engine: &Engine, mount: &MountHandle) -> Result<(), String> {
    checkpoint_with_handover(engine, mount).map_err(|e| format!("checkpoint failed, not unmounting: {e}"))?;
    mount.unmount()
}

/// A checkpoint asked for (`mcfs ctl checkpoint`, an unmount, a stop)
/// holds everything written before it: in sync-point mode the kernel
/// first hands over the pages its writeback cache still holds, which
/// would otherwise reach the engine only with its own writeback (at the
/// unmount, and never should the unmount fail and the daemon die).
fn checkpoint_with_handover(engine: &Engine, mount: &MountHandle) -> mcfs_core::FsResult<()> {
    mount.hand_over_dirty_pages();
    engine.checkpoint()
}

impl Running {
    fn wait_and_stop(self) -> i32 {
        match self.events.recv() {
            Ok(Event::Signal(sig)) => {
                tracing::info!("{}: checkpointing and unmounting", signals::name(sig));
                let mnt = self.mountpoint.display();
                self.notify.stopping(&format!("{}: checkpointing and unmounting {mnt}", signals::name(sig)));
                if let Err(e) = checkpoint_with_handover(&self.engine, &self.mount) {
                    tracing::error!("checkpoint failed: {e}");
                }
                self.unmount_for_exit();
            }
            Ok(Event::SessionEnded) => {
                tracing::info!("{} was unmounted", self.mountpoint.display());
                self.notify.stopping(&format!("{} was unmounted; final checkpoint", self.mountpoint.display()));
            }
            Err(_) => tracing::error!("every event source is gone; stopping"),
        }
        self.finish()
    }

    /// A signalled daemon must go even if the mount is busy: then it is detached.
    fn unmount_for_exit(&self) {
        if let Err(e) = self.mount.unmount() {
            tracing::warn!("{e}; detaching the mount instead");
            if let Err(e) = unmount::unmount(&self.mountpoint, true) {
                tracing::error!("{e}");
            }
        }
        loop {
            match self.events.recv_timeout(SESSION_END_WAIT) {
                Ok(Event::SessionEnded) => return,
                Ok(Event::Signal(sig)) => {
                    tracing::info!("{} ignored: already stopping", signals::name(sig))
                }
                Err(_) => return tracing::warn!("the FUSE session did not end; exiting anyway"),
            }
        }
    }

    fn finish(self) -> i32 {
        if !panic_guard::claim_orderly_stop() {
            // A panic is already shutting the engine down and will exit the process.
            loop {
                std::thread::park();
            }
        }
        self.inputs.stop();
        if let Some(ticker) = self.ticker {
            ticker.stop();
        }
        for watcher in [self.battery_watcher, self.fg_watcher, self.status_thread].into_iter().flatten() {
            watcher.stop();
        }
        if let Some(metrics) = self.metrics {
            metrics.stop();
        }
        // The session is over and the input watchers are gone: nothing records any more.
        if let Some(recorder) = &self.recorder {
            match recorder.finish() {
                Ok(events) => tracing::info!("trace {}: {events} events recorded", recorder.path().display()),
                Err(e) => tracing::error!("{e}"),
            }
        }
        let status = match self.engine.shutdown() {
            Ok(()) => {
                tracing::info!("engine shut down; everything is checkpointed");
                0
            }
            Err(e) => {
                tracing::error!("engine shutdown failed: {e}");
                1
            }
        };
        self.control.close(CONTROL_DRAIN_WAIT);
        logging::flush();
        status
    }
}

/// glibc gives threads their own heap arenas; a cache page freed on one
/// thread goes back to the arena of the thread that allocated it, so with
/// several arenas each grows towards the whole cache and the daemon's RSS
/// reached about twice `cache_size` (docs/BENCHMARKS.md, "Peak RSS"). One
/// arena keeps it within `cache_size` plus the bounded buffers ENGINE.md
/// lists; the cost in lock contention did not show in the benchmarks.
fn limit_malloc_arenas() {
    // SAFETY: mallopt only changes allocator tuning; called before the
    // daemon starts its threads.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}
