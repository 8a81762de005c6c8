//! `mcfs bench`: the benchmark harness. It runs each selected workload on
//! each selected target (ext4, tmpfs, the FUSE floor, mcfs and its modes),
//! every time on a freshly set-up file system, in one run on this machine,
//! `--repeat` times over; then prints one table of medians with their
//! spread, ratios to ext4 and the goals, and optionally writes
//! everything as JSON.
//!
//! Invariants: a failed run of a cell (set-up, workload or tear-down) is
//! recorded with its cause and the run goes on; nothing set up outlives the
//! run (see `targets`); missing values are shown as missing, never as
//! numbers.

mod cmd;
mod dbench;
mod fio;
mod flash;
mod git;
mod machine;
mod metrics;
mod mixed;
mod mobifs;
mod percall;
mod postmark;
mod reads;
mod report;
mod rss;
mod seq;
mod speedtest;
mod spread;
mod sqlite;
mod targets;

use metrics::Outcome;
use report::Cell;
use serde::Serialize;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;
use targets::{Target, TargetEnv, TargetKind};

#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// Also write every result, the goals and the machine description to FILE as JSON
    /// (`--json` alone prints JSON in other commands, so the file has its own name).
    #[arg(long = "json-file", alias = "json", value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Small sizes and short time limits: a smoke test of the harness, not a measurement.
    #[arg(long)]
    pub quick: bool,
    /// Workloads to run, comma-separated (default: all).
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub workloads: Vec<WorkloadName>,
    /// Targets to run on, comma-separated (default: all).
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub targets: Vec<TargetKind>,
    /// mcfs cache_size for the peak-RSS workloads, in MiB; they write 8 and 6 times this
    /// [default: 64, with --quick 16].
    #[arg(long, value_name = "MIB", value_parser = clap::value_parser!(u64).range(1..=65536))]
    pub cache_mib: Option<u64>,
    /// Directory in which the scratch directory (loop images, mount points) is made
    /// [default: $TMPDIR or /tmp]. Put it on a disk: ext4 images on tmpfs measure memory.
    #[arg(long, value_name = "DIR")]
    pub scratch: Option<PathBuf>,
    /// A TOML line added to both mcfs configs, e.g. 'max_stale_bytes = 268435456' (repeatable;
    /// `mode` is set by the target, `cache_size` by --cache-mib for the rss workload).
    #[arg(long, value_name = "TOML")]
    pub mcfs_option: Vec<String>,
    /// mcfs binary to benchmark [default: this program].
    #[arg(long, value_name = "FILE")]
    pub mcfs_bin: Option<PathBuf>,
    /// Seed for fio's offsets and the random reads [default: $MCFS_SEED or 1].
    #[arg(long)]
    pub seed: Option<u64>,
    #[arg(long = "device-profile", alias = "flash", value_name = "PROFILE",
          help = crate::cli::device_profile_help("Put every target's device on emulated phone flash \
                  (`mcfs flashdev --device-profile PROFILE`; tmpfs is left out unless named)"))]
    pub flash: Option<String>,
    /// Run every cell N times (each on a fresh file system) and report the median and the
    /// spread (min-max).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,
    /// Directory holding the tools scripts/bench-setup.sh builds (passthrough_ll, speedtest1)
    /// [default: bench-tools beside the directory of this program, e.g. target/bench-tools].
    #[arg(long, value_name = "DIR")]
    pub tools: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub enum WorkloadName {
    /// fio 4 KiB random writes, fsync after each.
    Fio,
    /// SQLite single-row transactions, WAL and DELETE journals, synchronous=FULL.
    Sqlite,
    /// MobiFS benchmark: one region written 16 times, fsync every second write; device bytes.
    Mobifs,
    /// Cached sequential 1 MiB and random 4 KiB reads.
    Reads,
    /// mcfs daemon peak RSS while writing 8 x cache_size to one file.
    Rss,
    /// mcfs daemon peak RSS while 48 writers of 4 uids write 6 x cache_size.
    RssWriters,
    /// SQLite's speedtest1 (--size 50), rollback (DELETE) journal and WAL; seconds.
    Speedtest,
    /// SQLite: 100 transactions of 500 inserts into an indexed table plus an update, WAL,
    /// synchronous=FULL; then 2,000 range selects; seconds.
    SqliteMixed,
    /// postmark: 2,000 files, 8,000 transactions; seconds.
    Postmark,
    /// dbench: 4 clients for 20 s; MB/s and max latency.
    Dbench,
    /// git clone of a local repository of a few hundred commits, then git gc; seconds.
    Git,
    /// 1 GiB sequential write with an fsync at the end, read back after dropping caches; MiB/s.
    Seq,
    /// Per-call latencies: pwrite, open+close, stat (missing, existing), cached pread, fsync; us.
    Percall,
}

impl WorkloadName {
    const ALL: [WorkloadName; 13] = [
        WorkloadName::Fio,
        WorkloadName::Sqlite,
        WorkloadName::Mobifs,
        WorkloadName::Reads,
        WorkloadName::Rss,
        WorkloadName::RssWriters,
        WorkloadName::Speedtest,
        WorkloadName::SqliteMixed,
        WorkloadName::Postmark,
        WorkloadName::Dbench,
        WorkloadName::Git,
        WorkloadName::Seq,
        WorkloadName::Percall,
    ];

    pub fn name(self) -> &'static str {
        match self {
            WorkloadName::Fio => "fio",
            WorkloadName::Sqlite => "sqlite",
            WorkloadName::Mobifs => "mobifs",
            WorkloadName::Reads => "reads",
            WorkloadName::Rss => "rss",
            WorkloadName::RssWriters => "rss-writers",
            WorkloadName::Speedtest => "speedtest",
            WorkloadName::SqliteMixed => "sqlite-mixed",
            WorkloadName::Postmark => "postmark",
            WorkloadName::Dbench => "dbench",
            WorkloadName::Git => "git",
            WorkloadName::Seq => "seq",
            WorkloadName::Percall => "percall",
        }
    }

    /// Programs on PATH this workload runs.
    fn tools(self) -> &'static [&'static str] {
        match self {
            WorkloadName::Fio => &["fio"],
            WorkloadName::Postmark => &["postmark"],
            WorkloadName::Dbench => &["dbench"],
            WorkloadName::Git => &["git"],
            _ => &[],
        }
    }

    /// tmpfs has no device to count bytes on; only mcfs has a daemon.
    fn applies_to(self, target: TargetKind) -> bool {
        match self {
            WorkloadName::Mobifs => target.has_device(),
            WorkloadName::Rss | WorkloadName::RssWriters => target.is_mcfs(),
            _ => true,
        }
    }
}

/// How much each workload does.
#[derive(Clone, Debug, Serialize)]
pub struct Sizes {
    pub fio_file_bytes: u64,
    /// fio stops at the file size or after this long, whichever comes first.
    pub fio_max_seconds: u64,
    pub sqlite_max_transactions: u64,
    pub sqlite_max_seconds: f64,
    /// The region the MobiFS benchmark rewrites (8 MiB in the paper).
    pub mobifs_region_bytes: u64,
    pub read_file_bytes: u64,
    /// Time spent on each of the sequential and the random read phases.
    pub read_seconds: f64,
    pub rss_cache_bytes: u64,
    /// speedtest1's --size (100 is its default).
    pub speedtest_size: u32,
    pub mixed_transactions: u64,
    pub mixed_rows_per_transaction: u64,
    pub mixed_selects: u64,
    pub postmark_files: u64,
    pub postmark_transactions: u64,
    pub dbench_clients: u32,
    pub dbench_seconds: u64,
    /// Commits in the repository the git workload clones.
    pub git_commits: u32,
    pub seq_bytes: u64,
    /// Timed calls per cheap per-call benchmark, and fsyncs for the fsync one.
    pub percall_iterations: u32,
    pub percall_fsyncs: u32,
}

const MIB: u64 = 1 << 20;

impl Sizes {
    pub fn full() -> Sizes {
        Sizes {
            fio_file_bytes: 64 * MIB,
            fio_max_seconds: 30,
            sqlite_max_transactions: 5000,
            sqlite_max_seconds: 15.0,
            mobifs_region_bytes: 8 * MIB,
            read_file_bytes: 64 * MIB,
            read_seconds: 3.0,
            rss_cache_bytes: 64 * MIB,
            speedtest_size: 50,
            mixed_transactions: 100,
            mixed_rows_per_transaction: 500,
            mixed_selects: 2000,
            postmark_files: 2000,
            postmark_transactions: 8000,
            dbench_clients: 4,
            dbench_seconds: 20,
            git_commits: 300,
            seq_bytes: 1024 * MIB,
            percall_iterations: 20_000,
            percall_fsyncs: 500,
        }
    }

    pub fn quick() -> Sizes {
        Sizes {
            fio_file_bytes: 4 * MIB,
            fio_max_seconds: 3,
            sqlite_max_transactions: 100,
            sqlite_max_seconds: 2.0,
            mobifs_region_bytes: MIB,
            read_file_bytes: 8 * MIB,
            read_seconds: 0.3,
            rss_cache_bytes: 16 * MIB,
            speedtest_size: 5,
            mixed_transactions: 10,
            mixed_rows_per_transaction: 50,
            mixed_selects: 200,
            postmark_files: 200,
            postmark_transactions: 500,
            dbench_clients: 2,
            dbench_seconds: 3,
            git_commits: 30,
            seq_bytes: 32 * MIB,
            percall_iterations: 1000,
            percall_fsyncs: 50,
        }
    }

    /// Each sparse ext4 image: room for the largest workload's files with
    /// mcfs's journal beside them.
    fn image_bytes(&self) -> u64 {
        let rss = self.rss_cache_bytes * rss::CACHE_MULTIPLE.max(rss::WRITERS_CACHE_MULTIPLE);
        let largest = rss.max(self.fio_file_bytes).max(self.read_file_bytes).max(self.seq_bytes);
        (3 * largest + 512 * MIB).next_multiple_of(MIB)
    }
}

pub fn run(args: &BenchArgs) -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("mcfs bench needs root: it attaches loop devices and mounts ext4, tmpfs and mcfs".to_string());
    }
    let workloads = chosen(&args.workloads, &WorkloadName::ALL);
    let mut target_kinds = chosen(&args.targets, &TargetKind::ALL);
    if args.flash.is_some() && args.targets.is_empty() {
        target_kinds.retain(|t| t.has_device());
    }
    let mut tools = vec!["mkfs.ext4", "losetup", "mount", "umount"];
    if args.flash.is_some() {
        tools.push("fusermount3");
    }
    tools.extend(workloads.iter().flat_map(|w| w.tools()));
    cmd::require_tools(&tools)?;
    let tools_dir = match &args.tools {
        Some(dir) => dir.clone(),
        None => default_tools_dir()?,
    };
    let passthrough_bin = target_kinds
        .iter()
        .any(|t| t.is_fuse_floor())
        .then(|| built_tool(&tools_dir, "passthrough_ll", "the fuse-floor targets"))
        .transpose()?;
    let speedtest_bin = workloads
        .contains(&WorkloadName::Speedtest)
        .then(|| built_tool(&tools_dir, "speedtest1", "the speedtest workload"))
        .transpose()?;
    let mcfs_bin = match &args.mcfs_bin {
        Some(bin) => bin.clone(),
        None => std::env::current_exe().map_err(|e| format!("cannot find the mcfs binary itself: {e}"))?,
    };
    let mut sizes = if args.quick { Sizes::quick() } else { Sizes::full() };
    if let Some(mib) = args.cache_mib {
        sizes.rss_cache_bytes = mib * MIB;
    }
    let seed = args.seed.or_else(|| std::env::var("MCFS_SEED").ok()?.parse().ok()).unwrap_or(1);
    let scratch_parent = args.scratch.clone().unwrap_or_else(std::env::temp_dir);
    let scratch = tempfile::Builder::new()
        .prefix("mcfs-bench-")
        .tempdir_in(&scratch_parent)
        .map_err(|e| format!("cannot create a scratch directory in {}: {e}", scratch_parent.display()))?;
    let flash = match &args.flash {
        Some(profile) => Some(flash::EmulatedFlash::start(&mcfs_bin, profile, scratch.path())?),
        None => None,
    };
    let env = TargetEnv {
        scratch: flash.as_ref().map_or(scratch.path(), |f| f.mountpoint.as_path()),
        image_bytes: sizes.image_bytes(),
        mcfs_bin: &mcfs_bin,
        mcfs_options: &args.mcfs_option,
        passthrough_bin: passthrough_bin.as_deref(),
    };
    // Made once, outside every target: each git cell clones the same history.
    let git_source = if workloads.contains(&WorkloadName::Git) {
        Some(git::make_source_repo(&scratch.path().join("git-source"), sizes.git_commits, seed)?)
    } else {
        None
    };
    let inputs =
        Inputs { sizes: &sizes, seed, git_source: git_source.as_deref(), speedtest_bin: speedtest_bin.as_deref() };
    let context = json!({
        "machine": machine::describe(scratch.path()),
        "command": std::env::args().collect::<Vec<_>>(),
        "quick": args.quick,
        "seed": seed,
        "flash_profile": args.flash,
        "repeat": args.repeat,
        "tools_dir": tools_dir,
        "sizes": sizes,
        "mcfs_bin": mcfs_bin,
        "mcfs_options": args.mcfs_option,
        // Inherited by the mcfs daemons; it changes their peak RSS.
        "malloc_arena_max": std::env::var("MALLOC_ARENA_MAX").ok(),
    });
    eprintln!(
        "mcfs bench: seed {seed}, scratch {}{}, {} run(s) per cell",
        scratch.path().display(),
        if args.quick { ", quick sizes" } else { "" },
        args.repeat
    );

    let mut cells: Vec<Cell> = workloads
        .iter()
        .flat_map(|&w| target_kinds.iter().filter(move |&&t| w.applies_to(t)).map(move |&t| (w, t)))
        .map(|(workload, target)| Cell { workload, target, runs: Vec::new() })
        .collect();
    // Round by round rather than cell by cell: a noisy spell on the machine
    // then spreads over every target instead of spoiling one cell's runs.
    let per_round = cells.len();
    let total = per_round * args.repeat as usize;
    stop_on_signals();
    'rounds: for round in 0..args.repeat as usize {
        for (n, cell) in cells.iter_mut().enumerate() {
            if STOP.load(Ordering::Relaxed) {
                eprintln!("mcfs bench: interrupted; what ran so far follows");
                break 'rounds;
            }
            let step = round * per_round + n + 1;
            eprint!("mcfs bench: [{step}/{total}] {} on {} ... ", cell.workload.name(), cell.target.name());
            let start = Instant::now();
            let result = run_cell(cell.workload, cell.target, &env, &inputs);
            match &result {
                Ok(_) => eprintln!("done in {:.1} s", start.elapsed().as_secs_f64()),
                Err(e) => eprintln!("FAILED: {e}"),
            }
            cell.runs.push(result);
        }
    }

    drop(flash);
    let verdicts = report::verdicts(&cells, &metrics::goals(sizes.rss_cache_bytes));
    print!("{}", report::render_table(&cells, &target_kinds, &verdicts));
    if let Some(path) = &args.json {
        let doc = report::to_json(&cells, &verdicts, context);
        let text = serde_json::to_string_pretty(&doc).map_err(|e| format!("cannot encode the results: {e}"))?;
        std::fs::write(path, text + "\n").map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    let failed: usize = cells.iter().map(|c| c.failures().count()).sum();
    let ran: usize = cells.iter().map(|c| c.runs.len()).sum();
    if ran < total {
        return Err(format!("interrupted after {ran} of {total} measurements ({failed} failed)"));
    }
    if failed > 0 {
        return Err(format!("{failed} of {total} measurements failed (see Errors above)"));
    }
    Ok(())
}

/// Set by SIGINT or SIGTERM: the run stops after the cell in progress, whose
/// tear-down still runs, instead of dying with file systems still mounted.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn request_stop(_signal: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

fn stop_on_signals() {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = request_stop as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// `bench-tools` beside the directory holding this program: target/release/mcfs
/// finds target/bench-tools, where scripts/bench-setup.sh puts what it builds.
fn default_tools_dir() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the mcfs binary itself: {e}"))?;
    let profile_dir = exe.parent().ok_or("the mcfs binary has no parent directory")?;
    Ok(profile_dir.parent().unwrap_or(profile_dir).join("bench-tools"))
}

/// A tool scripts/bench-setup.sh builds, or an error saying how to get it.
fn built_tool(dir: &Path, name: &str, needed_by: &str) -> Result<PathBuf, String> {
    let path = dir.join(name);
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "{needed_by} need {} which is missing: run scripts/bench-setup.sh (it builds it there), \
             or pass --tools DIR",
            path.display()
        ))
    }
}

/// What the workloads take besides their target.
struct Inputs<'a> {
    sizes: &'a Sizes,
    seed: u64,
    /// The repository the git workload clones.
    git_source: Option<&'a Path>,
    speedtest_bin: Option<&'a Path>,
}

/// The selection in a stable order, or everything when nothing was named.
fn chosen<T: Copy + Ord>(named: &[T], all: &[T]) -> Vec<T> {
    let mut list = if named.is_empty() { all.to_vec() } else { named.to_vec() };
    list.sort();
    list.dedup();
    list
}

fn run_cell(workload: WorkloadName, kind: TargetKind, env: &TargetEnv, inputs: &Inputs) -> Result<Outcome, String> {
    let (sizes, seed) = (inputs.sizes, inputs.seed);
    let rss = matches!(workload, WorkloadName::Rss | WorkloadName::RssWriters);
    let cache_size = rss.then_some(sizes.rss_cache_bytes);
    let mut target = Target::set_up(kind, env, cache_size).map_err(|e| format!("set-up: {e}"))?;
    let result = match workload {
        WorkloadName::Fio => fio::run(&target.dir, sizes, seed),
        WorkloadName::Sqlite => sqlite::run(&target.dir, sizes),
        WorkloadName::Mobifs => mobifs::run(&mut target, sizes),
        WorkloadName::Reads => reads::run(&target.dir, sizes, seed),
        WorkloadName::Rss => rss::run(&target, sizes),
        WorkloadName::RssWriters => rss::run_writers(&target, sizes),
        WorkloadName::Speedtest => {
            speedtest::run(&target.dir, inputs.speedtest_bin.ok_or("no speedtest1 binary was given")?, sizes)
        }
        WorkloadName::SqliteMixed => mixed::run(&target.dir, sizes, seed),
        WorkloadName::Postmark => postmark::run(&target.dir, sizes, seed),
        WorkloadName::Dbench => dbench::run(&target.dir, sizes),
        WorkloadName::Git => git::run(&target.dir, inputs.git_source.ok_or("no git source repository was made")?),
        WorkloadName::Seq => seq::run(&target, sizes),
        WorkloadName::Percall => percall::run(&target.dir, sizes),
    };
    // A failed tear-down (e.g. mcfs's final checkpoint) spoils the cell too.
    let torn_down = target.tear_down().map_err(|e| format!("tear-down: {e}"));
    let outcome = result?;
    torn_down?;
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        bench: BenchArgs,
    }

    #[test]
    fn selections_parse_as_comma_lists() {
        let cli = Cli::try_parse_from(["bench", "--workloads", "sqlite,fio", "--targets", "mcfs-sync,ext4", "--quick"])
            .unwrap();
        assert_eq!(chosen(&cli.bench.workloads, &WorkloadName::ALL), [WorkloadName::Fio, WorkloadName::Sqlite]);
        assert_eq!(chosen(&cli.bench.targets, &TargetKind::ALL), [TargetKind::Ext4, TargetKind::McfsSync]);
        assert!(cli.bench.quick);
        assert!(Cli::try_parse_from(["bench", "--workloads", "fio,nope"]).is_err());
        assert!(Cli::try_parse_from(["bench", "--cache-mib", "0"]).is_err());
        for spelling in ["--device-profile", "--flash"] {
            let flash = Cli::try_parse_from(["bench", spelling, "emmc"]).unwrap();
            assert_eq!(flash.bench.flash.as_deref(), Some("emmc"), "{spelling}");
        }
        let all = Cli::try_parse_from(["bench"]).unwrap();
        assert_eq!(chosen(&all.bench.workloads, &WorkloadName::ALL), WorkloadName::ALL);
        assert_eq!(all.bench.repeat, 1);
        let real = Cli::try_parse_from([
            "bench",
            "--workloads",
            "speedtest,sqlite-mixed,sqlite,postmark,dbench,git,seq,percall",
            "--targets",
            "ext4,tmpfs,fuse-floor,fuse-floor-wb,mcfs,mcfs-sync",
            "--repeat",
            "3",
        ])
        .unwrap();
        assert_eq!(real.bench.workloads.len(), 8);
        assert_eq!(
            chosen(&real.bench.targets, &TargetKind::ALL),
            [
                TargetKind::Ext4,
                TargetKind::Tmpfs,
                TargetKind::FuseFloor,
                TargetKind::FuseFloorWb,
                TargetKind::Mcfs,
                TargetKind::McfsSync
            ]
        );
        assert_eq!(real.bench.repeat, 3);
        assert!(Cli::try_parse_from(["bench", "--repeat", "0"]).is_err());
    }

    #[test]
    fn workload_names_match_their_command_line_spelling() {
        use clap::ValueEnum;
        for w in WorkloadName::ALL {
            assert_eq!(w.to_possible_value().unwrap().get_name(), w.name());
        }
        for t in TargetKind::ALL {
            assert_eq!(t.to_possible_value().unwrap().get_name(), t.name());
        }
    }

    #[test]
    fn a_missing_built_tool_names_the_setup_script() {
        let dir = tempfile::tempdir().unwrap();
        let err = built_tool(dir.path(), "passthrough_ll", "the fuse-floor targets").unwrap_err();
        assert!(err.contains("scripts/bench-setup.sh"), "{err}");
        assert!(err.contains(&dir.path().join("passthrough_ll").display().to_string()), "{err}");
        std::fs::write(dir.path().join("speedtest1"), "").unwrap();
        assert_eq!(built_tool(dir.path(), "speedtest1", "x").unwrap(), dir.path().join("speedtest1"));
    }

    #[test]
    fn workloads_run_only_where_they_mean_something() {
        assert!(!WorkloadName::Mobifs.applies_to(TargetKind::Tmpfs));
        assert!(WorkloadName::Mobifs.applies_to(TargetKind::McfsSync));
        assert!(!WorkloadName::Rss.applies_to(TargetKind::Ext4));
        assert!(WorkloadName::Rss.applies_to(TargetKind::Mcfs));
        assert!(TargetKind::ALL.iter().all(|&t| WorkloadName::Fio.applies_to(t)));
    }

    #[test]
    fn images_hold_the_largest_workload_three_times_over() {
        for sizes in [Sizes::full(), Sizes::quick()] {
            let largest = rss::CACHE_MULTIPLE.max(rss::WRITERS_CACHE_MULTIPLE);
            assert!(sizes.image_bytes() >= 3 * sizes.rss_cache_bytes * largest);
            assert!(sizes.image_bytes() >= 3 * sizes.seq_bytes);
            assert_eq!(sizes.image_bytes() % MIB, 0);
        }
    }
}
