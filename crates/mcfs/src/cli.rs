//! Command-line grammar of `mcfs` (clap derive). Only parsing and the checks
//! clap can do on a single argument live here; checks that touch the file
//! system are in `preflight`.

use crate::logging::Destination;
use clap::{Args, Parser, Subcommand, ValueEnum};
use mcfs_core::SyncMode;
use mcfs_device::DeviceProfile;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(
    name = "mcfs",
    version = crate::version::SHORT,
    long_version = crate::version::LONG,
    about = "mcfs: a memory-centric, app-aware FUSE file system",
    long_about = "mcfs keeps app data in memory and checkpoints it to a backing directory \
                  in per-app, point-in-time consistent transactions.\n\n\
                  Logging: set MCFS_LOG or RUST_LOG (e.g. MCFS_LOG=debug)."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Mount BACKING on MOUNTPOINT and serve it (as a daemon unless --foreground).
    #[command(after_help = MOUNT_EXAMPLES)]
    Mount(MountArgs),
    /// Checkpoint everything, unmount and wait until the daemon has exited.
    #[command(alias = "unmount", after_help = UMOUNT_EXAMPLES)]
    Umount(UmountArgs),
    /// Show the counters of a mounted mcfs (overall and per app), once or as rates per interval.
    #[command(after_help = STAT_EXAMPLES)]
    Stat(StatArgs),
    /// Control a mounted mcfs: checkpoint, battery level, per-app mode, user input.
    #[command(after_help = CTL_EXAMPLES)]
    Ctl(CtlArgs),
    /// Offline recovery of a backing directory after a crash.
    #[command(after_help = RECOVER_EXAMPLES)]
    Recover(RecoverArgs),
    /// Benchmark ext4, tmpfs and mcfs side by side (needs root; see docs/BENCHMARKS.md).
    #[cfg(feature = "bench")]
    #[command(after_help = BENCH_EXAMPLES)]
    Bench(crate::bench::BenchArgs),
    /// Write a study's section of the report (e.g. docs/REPORT.md) from its results, with SVG charts.
    #[cfg(feature = "report")]
    #[command(after_help = REPORT_EXAMPLES)]
    Report(ReportArgs),
    /// Trace files: import strace or CSV traces, convert, synthesize app workloads, summarize, replay.
    #[cfg(feature = "sim")]
    #[command(after_help = TRACE_EXAMPLES)]
    Trace(crate::commands::trace::TraceArgs),
    /// Replay a trace through the engine in virtual time on a simulated device and report the metrics.
    #[cfg(feature = "sim")]
    #[command(after_help = SIM_EXAMPLES)]
    Sim(crate::commands::sim::SimArgs),
    /// Mount a pass-through of BACKING whose files behave like phone flash (see docs/FLASHDEV.md).
    #[command(after_help = FLASHDEV_EXAMPLES)]
    Flashdev(crate::commands::flashdev::FlashdevArgs),
    /// Configuration files: check one as `mcfs mount` would, without mounting.
    #[command(after_help = CONFIG_CHECK_EXAMPLES)]
    Config(ConfigArgs),
    /// Print a shell completion script for mcfs (e.g. `mcfs completions bash > /etc/bash_completion.d/mcfs`).
    #[command(after_help = COMPLETIONS_EXAMPLES)]
    Completions(CompletionsArgs),
    /// Write man pages for mcfs and each subcommand (mcfs.1, mcfs-mount.1, ...) into a directory.
    #[command(after_help = MANPAGES_EXAMPLES)]
    Manpages(ManpagesArgs),
}

// Shown after each subcommand's --help (`mount`, `stat` and `config check` have theirs below).
const UMOUNT_EXAMPLES: &str = "\
Examples:
  mcfs umount /mnt/data              # checkpoint, unmount, wait for the daemon to exit
  mcfs umount --timeout 60 /mnt/data
  mcfs umount -l /mnt/data           # detach now even if busy; the daemon exits after the last close";
const CTL_EXAMPLES: &str = "\
Examples:
  mcfs ctl /mnt/data checkpoint
  mcfs ctl /mnt/data mode uid:10023 sync
  mcfs ctl /mnt/data battery 15
  mcfs ctl /mnt/data fg com.example.mail
  mcfs ctl /mnt/data input";
const RECOVER_EXAMPLES: &str = "\
Examples:
  mcfs recover /srv/data             # after a crash, with nothing mounted on it";
#[cfg(feature = "bench")]
const BENCH_EXAMPLES: &str = "\
Examples:
  sudo mcfs bench --quick                                   # a smoke test of the harness
  sudo mcfs bench --workloads sqlite,fio --targets ext4,mcfs --json-file bench.json
  sudo mcfs bench --device-profile emmc --repeat 3          # every target on emulated eMMC";
#[cfg(feature = "report")]
const REPORT_EXAMPLES: &str = "\
Examples:
  mcfs report --mobifs experiments/mobifs/results
  mcfs report --fasttrack experiments/fasttrack/results --out docs/REPORT.md";
#[cfg(feature = "sim")]
const TRACE_EXAMPLES: &str = "\
Examples:
  mcfs trace import --format strace --output app.trace strace.log
  mcfs trace synth --suite suite/
  mcfs trace stats --json mail.bin
  mcfs trace replay mail.bin --into /mnt/data --json-file replay.json";
#[cfg(feature = "sim")]
const SIM_EXAMPLES: &str = "\
Examples:
  mcfs sim --trace mail.bin
  mcfs sim --trace mail.bin --device-profile ufs -c mcfs.toml --json";
const FLASHDEV_EXAMPLES: &str = "\
Examples:
  mcfs flashdev --device-profile emmc /srv/flash-backing /mnt/flash
  mcfs flashdev --device-profile ufs --scheduler fifo --stats flash.json -f /srv/b /mnt/flash";
const COMPLETIONS_EXAMPLES: &str = "\
Examples:
  mcfs completions bash > /etc/bash_completion.d/mcfs
  mcfs completions zsh > /usr/local/share/zsh/site-functions/_mcfs";
const MANPAGES_EXAMPLES: &str = "\
Examples:
  mcfs manpages /usr/local/share/man/man1 && man mcfs-mount";

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

#[derive(Args, Debug)]
pub struct ManpagesArgs {
    /// Existing directory to write the pages into (e.g. /usr/local/share/man/man1).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

#[derive(Args, Debug)]
pub struct ConfigArgs {
    #[command(subcommand)]
    pub command: ConfigCommand,
}

#[derive(Subcommand, Debug)]
pub enum ConfigCommand {
    /// Validate a config file and `-o` options exactly as `mcfs mount` does; exit 1 naming what is wrong.
    #[command(after_help = CONFIG_CHECK_EXAMPLES)]
    Check(ConfigCheckArgs),
}

const CONFIG_CHECK_EXAMPLES: &str = "\
Examples:
  mcfs config check /etc/mcfs.toml
  mcfs config check /etc/mcfs.toml -o cache_size=256M,fasttrack.aging_ms=200
  mcfs config check -o max_stale_seconds=30";

#[derive(Args, Debug)]
pub struct ConfigCheckArgs {
    /// The TOML config file (docs/CONFIG.md); without it, the defaults with the -o options.
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Mount options, as `mcfs mount -o` takes them (config keys and `config=FILE` among them).
    #[arg(short = 'o', value_name = "OPT[,OPT...]")]
    pub options: Vec<String>,
}

/// Shown after `mcfs mount --help`.
const MOUNT_EXAMPLES: &str = "\
Examples:
  mcfs mount /srv/data /mnt/data
  mcfs mount -o allow_other,cache_size=256M,max_stale_seconds=30 /srv/data /mnt/data
  mcfs mount -o config=/etc/mcfs.toml,fasttrack.aging_ms=200 /srv/data /mnt/data

fstab and mount(8) (scripts/setup.sh installs /sbin/mount.fuse.mcfs):
  /srv/data  /mnt/data  fuse.mcfs  defaults,_netdev,cache_size=64M  0 0
  mount -t fuse.mcfs -o cache_size=64M /srv/data /mnt/data
  umount /mnt/data   # checkpoints and waits for the daemon, as mcfs umount does

Mount options (-o):
  allow_other, default_permissions (always on), ro, rw, nosuid, suid, nodev, dev, noexec, exec,
  fsname=NAME, subtype=NAME, config=FILE, threads=N, metrics_file=FILE, and every config key of docs/CONFIG.md
  (nested keys dotted: fasttrack.aging_ms=200; sizes take K, M, G, T). atime options, async,
  defaults, auto, noauto, nofail, _netdev, user, users, x-*, comment=... are accepted and ignored.";

#[derive(Args, Debug)]
pub struct MountArgs {
    /// Engine configuration (TOML, see docs/CONFIG.md); defaults when absent. Same as -o config=FILE.
    #[arg(long, short = 'c', value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Mount options, comma-separated as in fstab; may be repeated. A config key given here
    /// overrides the config file's (see the list below).
    #[arg(short = 'o', value_name = "OPTION[,OPTION...]")]
    pub options: Vec<String>,
    /// Stay in the foreground and log to stderr instead of BACKING/.mcfs/mcfs.log (see --log).
    #[arg(long, short = 'f')]
    pub foreground: bool,
    /// Where the daemon logs: file (BACKING/.mcfs/mcfs.log), stderr, or journal (stderr without
    /// timestamps, each line with its syslog priority, for systemd). Default: journal when systemd
    /// connected stderr to the journal, else stderr with --foreground, else file.
    #[arg(long, value_name = "WHERE")]
    pub log: Option<LogArg>,
    /// Threads reading and serving FUSE requests (default: one per CPU, at least 2; same as
    /// -o threads=N). A background request FastTrack holds back waits on a thread of its own,
    /// not on one of these, so they need not outnumber the cores.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=crate::mount_options::MAX_THREADS as i64))]
    pub threads: Option<u32>,
    /// Let users other than the mounting one use the mount (always on when mounted by root;
    /// needs user_allow_other in /etc/fuse.conf otherwise). Same as -o allow_other.
    #[arg(long)]
    pub allow_other: bool,
    /// Directory that holds the files (the archive); mcfs keeps its state in BACKING/.mcfs/.
    #[arg(value_name = "BACKING")]
    pub backing: PathBuf,
    /// Directory to mount on (what it holds is hidden while mounted).
    /// Where the mcfs is mounted.
    #[arg(value_name = "MOUNTPOINT")]
    pub mountpoint: PathBuf,
    /// Record every file operation on the mount, and every user input, into FILE as an mcfs trace
    /// (binary if FILE ends in .bin, text otherwise; see docs/TRACE_FORMAT.md). FILE must lie outside
    /// the mount point and the backing directory.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Read user input (taps, drags, key presses) from this Linux input device, e.g. /dev/input/event0,
    /// to feed the idle predictor; repeat for several devices.
    #[arg(long = "input-device", value_name = "PATH")]
    pub input_devices: Vec<PathBuf>,
    /// Run the engine on a virtual clock that stands still until `mcfs ctl MOUNTPOINT advance SECONDS`
    /// moves it (running the background checkpointer at its deadlines on the way, as the simulator
    /// does): for experiments that compare a live mount with the simulator.
    #[arg(long)]
    pub virtual_clock: bool,
    #[arg(long, value_name = "PROFILE", default_value = "emmc",
          help = device_profile_help("Device model for the estimate of what the backing I/O would cost on phone flash (`mcfs stat` shows it)"))]
    pub device_profile: String,
    /// Keep FILE holding the mount's metrics in the Prometheus text format, rewritten every 5 s and
    /// removed at unmount: for node_exporter's textfile collector (docs/STAT.md). Same as
    /// -o metrics_file=FILE.
    #[arg(long, value_name = "FILE")]
    pub metrics_file: Option<PathBuf>,
    /// Follow the foreground app from FILE, which lists the foreground tasks one pid per line
    /// (Android's /dev/cpuset/top-app/tasks); overrides `fasttrack.tasks_file` of the config.
    #[arg(long, value_name = "FILE")]
    pub fg_tasks: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct UmountArgs {
    /// Detach the mount at once, even if it is busy (as umount -l): the daemon checkpoints and exits
    /// once the last file open in it is closed. Does not wait.
    #[arg(long, short = 'l')]
    pub lazy: bool,
    /// Give up waiting for the daemon after this many seconds (default: wait as long as the checkpoint takes).
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<u64>,
    /// Where the mcfs is mounted.
    #[arg(value_name = "MOUNTPOINT")]
    pub mountpoint: PathBuf,
}

/// Shown after `mcfs stat --help`.
const STAT_EXAMPLES: &str = "\
Examples:
  mcfs stat /mnt/data                          # every counter, overall and per app
  mcfs stat --json /mnt/data | jq .apps        # the document docs/STAT.md describes
  mcfs stat --interval 1 --count 10 /mnt/data  # rates per second, one line a second, like vmstat
  mcfs stat --interval 5 --json /mnt/data      # the same as JSON lines, with the full document
  mcfs stat --format prometheus /mnt/data      # Prometheus text format (or: mount -o metrics_file=FILE)";

#[derive(Args, Debug)]
pub struct StatArgs {
    /// What to print.
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = StatFormat::Table)]
    pub format: StatFormat,
    /// Print JSON to stdout (same as --format json).
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// Print what changed per second every SECONDS (e.g. 0.5), one line per interval, until
    /// interrupted or --count lines.
    #[arg(long, value_name = "SECONDS", value_parser = parse_interval)]
    pub interval: Option<Duration>,
    /// With --interval: stop after N lines.
    #[arg(long, value_name = "N", requires = "interval", value_parser = clap::value_parser!(u64).range(1..))]
    pub count: Option<u64>,
    /// Where the mcfs is mounted.
    #[arg(value_name = "MOUNTPOINT")]
    pub mountpoint: PathBuf,
}

impl StatArgs {
    /// `--format`, with `--json` folded in.
    pub fn format(&self) -> StatFormat {
        if self.json {
            StatFormat::Json
        } else {
            self.format
        }
    }
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatFormat {
    /// Readable tables (with --interval: one line per interval).
    Table,
    /// The documented JSON (docs/STAT.md); with --interval, one line per interval with the rates.
    Json,
    /// Prometheus text exposition format (not with --interval).
    Prometheus,
}

/// A positive number of seconds (`parse_seconds`) as a duration.
fn parse_interval(text: &str) -> Result<Duration, String> {
    match parse_seconds(text)? {
        s if s >= 0.001 => Ok(Duration::from_secs_f64(s)),
        _ => Err("the interval must be at least 0.001 seconds".into()),
    }
}

#[derive(Args, Debug)]
pub struct CtlArgs {
    /// Where the mcfs is mounted.
    #[arg(value_name = "MOUNTPOINT")]
    pub mountpoint: PathBuf,
    #[command(subcommand)]
    pub action: CtlAction,
}

#[derive(Subcommand, Debug, Clone, PartialEq)]
pub enum CtlAction {
    /// Close every open transaction and commit all of them to the backing store now.
    #[command(after_help = "Examples:\n  mcfs ctl /mnt/data checkpoint")]
    Checkpoint,
    /// Tell the engine the battery level (below low_battery_percent every app runs in sync mode).
    #[command(after_help = "Examples:\n  mcfs ctl /mnt/data battery 15")]
    Battery {
        /// Battery level in percent, 0 to 100.
        #[arg(value_name = "PERCENT", value_parser = clap::value_parser!(u8).range(0..=100))]
        percent: u8,
    },
    /// Set how an app's fsync behaves.
    #[command(
        after_help = "Examples:\n  mcfs ctl /mnt/data mode uid:10023 sync\n  mcfs ctl /mnt/data mode mail memory"
    )]
    Mode {
        /// App name as in the config, or `uid:N`.
        #[arg(value_name = "APP")]
        app: String,
        #[arg(value_name = "MODE")]
        mode: ModeArg,
    },
    /// Tell the engine the user just did something (one tap): feeds the idle predictor, like input
    /// read from --input-device.
    #[command(after_help = "Examples:\n  mcfs ctl /mnt/data input")]
    Input,
    /// Set the foreground app, whose I/O goes first (FastTrack), or print it when APP is left out.
    /// With --fg-tasks the setting holds until the tasks file changes.
    #[command(
        after_help = "Examples:\n  mcfs ctl /mnt/data fg uid:10001\n  mcfs ctl /mnt/data fg none\n  mcfs ctl /mnt/data fg"
    )]
    Fg {
        /// App name as in the config, `uid:N`, or `none` for no foreground app.
        #[arg(value_name = "APP")]
        app: Option<String>,
    },
    /// Move a mount's virtual clock forward (only for mounts started with --virtual-clock).
    #[command(after_help = "Examples:\n  mcfs ctl /mnt/data advance 2.5")]
    Advance {
        /// Seconds to move forward, e.g. 2.5.
        #[arg(value_parser = parse_seconds)]
        seconds: f64,
    },
}

/// The help of `--device-profile`, the one name of the device-profile
/// option in every command (mount, sim, flashdev, bench): `what` it is for,
/// then the built-in profiles as the simulator names them.
pub fn device_profile_help(what: &str) -> String {
    format!(
        "{what}: a built-in profile ({}) or a profile TOML file (docs/DEVICE_MODEL.md)",
        DeviceProfile::BUILTIN.join(", ")
    )
}

/// The device scheduler of every command that has one (flashdev, sim
/// --fasttrack) unless `--scheduler` says otherwise: the FastTrack one.
pub const DEFAULT_SCHEDULER: &str = "priority";

/// `--scheduler POLICY`, the same in every command.
pub fn parse_scheduler(text: &str) -> Result<mcfs_device::scheduler::SchedPolicy, String> {
    text.parse()
}

/// A finite, non-negative number of seconds.
fn parse_seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(s) if (0.0..1e9).contains(&s) => Ok(s),
        _ => Err(format!("expected a number of seconds from 0 to 1e9, got \"{text}\"")),
    }
}

/// `SyncMode` as the command line spells it.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModeArg {
    /// POSIX fsync: returns once the data is durable in the backing store.
    Sync,
    /// fsync marks a transaction boundary; data reaches the backing store at the next checkpoint.
    Memory,
}

impl From<ModeArg> for SyncMode {
    fn from(m: ModeArg) -> SyncMode {
        match m {
            ModeArg::Sync => SyncMode::Sync,
            ModeArg::Memory => SyncMode::Memory,
        }
    }
}

/// `logging::Destination` as the command line spells it.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogArg {
    File,
    Stderr,
    Journal,
}

impl From<LogArg> for Destination {
    fn from(l: LogArg) -> Destination {
        match l {
            LogArg::File => Destination::File,
            LogArg::Stderr => Destination::Stderr,
            LogArg::Journal => Destination::Journal,
        }
    }
}

#[derive(Args, Debug)]
pub struct RecoverArgs {
    /// Backing directory of an unmounted mcfs.
    #[arg(value_name = "BACKING")]
    pub backing: PathBuf,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Results of the MobiFS study (DIR/GROUP/TRACE/CONFIG.json, as experiments/mobifs/run.sh writes
    /// them): replaces the section between <!-- mobifs:begin --> and <!-- mobifs:end --> of the report.
    #[arg(long, value_name = "DIR")]
    pub mobifs: Option<PathBuf>,
    /// Results of the FastTrack study (DIR/*.jsonl, as experiments/fasttrack/run.sh writes them):
    /// replaces the section between <!-- fasttrack:begin --> and <!-- fasttrack:end --> of the report.
    #[arg(long, value_name = "DIR")]
    pub fasttrack: Option<PathBuf>,
    /// The report file (created if missing; text outside the study's markers is kept). Charts go to
    /// the report/ directory next to it.
    #[arg(long, value_name = "FILE", default_value = "docs/REPORT.md")]
    pub out: PathBuf,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("mcfs").chain(args.iter().copied()))
    }

    #[test]
    fn grammar_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn every_subcommand_help_has_examples() {
        fn check(command: &clap::Command, path: &str) {
            for sub in command.get_subcommands() {
                let path = format!("{path} {}", sub.get_name());
                let help = sub.get_after_help().map(|h| h.to_string()).unwrap_or_default();
                assert!(help.starts_with("Examples:\n  "), "{path} --help has no examples");
                let first = help.lines().nth(1).unwrap_or_default().trim_start();
                assert!(first.starts_with("mcfs ") || first.starts_with("sudo mcfs "), "{path}: {first}");
                check(sub, &path);
            }
        }
        check(&Cli::command(), "mcfs");
    }

    /// One flag name per concept; the old spellings still parse, hidden.
    #[test]
    fn device_profile_is_one_name_with_hidden_old_spellings() {
        let cli = Cli::command();
        for (path, old) in [
            (&["mount"][..], None),
            (&["sim"], Some("device")),
            (&["flashdev"], Some("profile")),
            (&["bench"], Some("flash")),
        ] {
            let sub = path.iter().fold(&cli, |c, name| c.find_subcommand(name).unwrap());
            let arg = sub.get_arguments().find(|a| a.get_long() == Some("device-profile")).expect("--device-profile");
            let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
            for name in DeviceProfile::BUILTIN {
                assert!(help.contains(name), "mcfs {} --device-profile help lacks {name}: {help}", path[0]);
            }
            assert!(arg.get_visible_aliases().unwrap_or_default().is_empty(), "{path:?}");
            assert_eq!(arg.get_all_aliases().and_then(|a| a.first().copied()), old, "{path:?}");
        }
        for args in
            [&["sim", "--device", "ufs", "--trace", "t"][..], &["sim", "--device-profile", "ufs", "--trace", "t"]]
        {
            let Command::Sim(s) = parse(args).unwrap().command else { panic!("not sim") };
            assert_eq!(s.device, "ufs");
        }
    }

    /// `--json` is a flag that prints JSON wherever it is shown; files have `--json-file`.
    #[test]
    fn json_is_always_a_flag() {
        fn walk(cmd: &clap::Command, path: String) {
            for arg in cmd.get_arguments().filter(|a| a.get_long() == Some("json")) {
                assert!(!arg.get_action().takes_values(), "{path} --json takes a value");
            }
            for sub in cmd.get_subcommands() {
                walk(sub, format!("{path} {}", sub.get_name()));
            }
        }
        walk(&Cli::command(), "mcfs".into());
        let Command::Trace(t) = parse(&["trace", "replay", "t", "--into", "d", "--json", "f"]).unwrap().command else {
            panic!("not trace")
        };
        let crate::commands::trace::TraceAction::Replay(r) = t.action else { panic!("not replay") };
        assert_eq!(r.json, Some(PathBuf::from("f")), "the old spelling still works");
    }

    #[test]
    fn battery_percent_must_be_0_to_100() {
        for ok in ["0", "55", "100"] {
            let cli = parse(&["ctl", "/m", "battery", ok]).unwrap();
            match cli.command {
                Command::Ctl(c) => assert_eq!(c.action, CtlAction::Battery { percent: ok.parse().unwrap() }),
                other => panic!("parsed as {other:?}"),
            }
        }
        for bad in ["101", "255", "x", "50.5"] {
            let err = parse(&["ctl", "/m", "battery", bad]).unwrap_err();
            assert_eq!(err.kind(), clap::error::ErrorKind::ValueValidation, "{bad}: {err}");
        }
        let err = parse(&["ctl", "/m", "battery", "--", "-1"]).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::ValueValidation, "{err}");
    }

    #[test]
    fn mode_accepts_only_sync_and_memory() {
        let cli = parse(&["ctl", "/m", "mode", "uid:10001", "sync"]).unwrap();
        let Command::Ctl(c) = cli.command else { panic!("not ctl") };
        assert_eq!(c.action, CtlAction::Mode { app: "uid:10001".into(), mode: ModeArg::Sync });
        assert_eq!(SyncMode::from(ModeArg::Memory), SyncMode::Memory);
        assert!(parse(&["ctl", "/m", "mode", "app", "async"]).is_err());
        assert!(parse(&["ctl", "/m", "mode", "app"]).is_err());
    }

    #[test]
    fn mount_needs_two_paths_and_sane_threads() {
        assert!(parse(&["mount", "/b"]).is_err());
        assert!(parse(&["mount", "--threads", "0", "/b", "/m"]).is_err());
        let cli = parse(&["mount", "-f", "--config", "c.toml", "/b", "/m"]).unwrap();
        let Command::Mount(m) = cli.command else { panic!("not mount") };
        assert!(m.foreground);
        assert_eq!(m.log, None);
        assert_eq!(m.config, Some(PathBuf::from("c.toml")));
        assert_eq!((m.backing, m.mountpoint), (PathBuf::from("/b"), PathBuf::from("/m")));
        assert_eq!((m.record, m.input_devices), (None, vec![]));
        assert_eq!((m.threads, m.options), (None, Vec::<String>::new()));
    }

    #[test]
    fn mount_takes_repeated_o_options() {
        let cli =
            parse(&["mount", "-o", "ro,cache_size=64M", "-o", "allow_other", "--threads", "4", "/b", "/m"]).unwrap();
        let Command::Mount(m) = cli.command else { panic!("not mount") };
        assert_eq!(m.options, ["ro,cache_size=64M", "allow_other"]);
        assert_eq!(m.threads, Some(4));
        assert!(parse(&["mount", "--threads", "257", "/b", "/m"]).is_err());
        let Command::Umount(u) = parse(&["umount", "-l", "/m"]).unwrap().command else { panic!("not umount") };
        assert!(u.lazy);
    }

    #[test]
    fn mount_takes_where_to_log() {
        for (arg, want) in [("file", LogArg::File), ("stderr", LogArg::Stderr), ("journal", LogArg::Journal)] {
            let Command::Mount(m) = parse(&["mount", "--log", arg, "/b", "/m"]).unwrap().command else {
                panic!("not mount")
            };
            assert_eq!(m.log, Some(want));
        }
        assert!(parse(&["mount", "--log", "syslog", "/b", "/m"]).is_err());
    }

    #[test]
    fn mount_takes_a_record_file_and_several_input_devices() {
        let cli = parse(&[
            "mount",
            "--record",
            "t.bin",
            "--input-device",
            "/dev/input/event0",
            "--input-device",
            "/dev/input/event3",
            "/b",
            "/m",
        ])
        .unwrap();
        let Command::Mount(m) = cli.command else { panic!("not mount") };
        assert_eq!(m.record, Some(PathBuf::from("t.bin")));
        assert_eq!(m.input_devices, [PathBuf::from("/dev/input/event0"), PathBuf::from("/dev/input/event3")]);
        let cli = parse(&["ctl", "/m", "input"]).unwrap();
        let Command::Ctl(c) = cli.command else { panic!("not ctl") };
        assert_eq!(c.action, CtlAction::Input);
    }

    #[test]
    fn fg_takes_an_optional_app_and_mount_a_tasks_file() {
        let ctl = |args: &[&str]| match parse(args).unwrap().command {
            Command::Ctl(c) => c.action,
            other => panic!("parsed as {other:?}"),
        };
        assert_eq!(ctl(&["ctl", "/m", "fg"]), CtlAction::Fg { app: None });
        assert_eq!(ctl(&["ctl", "/m", "fg", "uid:10001"]), CtlAction::Fg { app: Some("uid:10001".into()) });
        assert!(parse(&["ctl", "/m", "fg", "a", "b"]).is_err());
        let Command::Mount(m) =
            parse(&["mount", "--fg-tasks", "/dev/cpuset/top-app/tasks", "/b", "/m"]).unwrap().command
        else {
            panic!("not mount")
        };
        assert_eq!(m.fg_tasks, Some(PathBuf::from("/dev/cpuset/top-app/tasks")));
    }
}
