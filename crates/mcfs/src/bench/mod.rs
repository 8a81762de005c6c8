//! `mcfs bench`: the benchmark harness. It runs each selected workload on
//! each selected target (ext4, tmpfs, mcfs, mcfs in sync mode), every time
//! on a freshly set-up file system, in one run on this machine; then prints
//! one table of values, ratios to ext4 and the goals, and optionally
//! writes everything as JSON.
//!
//! Invariants: a failed cell (set-up, workload or tear-down) is recorded with
//! its cause and the run goes on; nothing set up outlives the cell (see
//! `targets`); missing values are shown as missing, never as numbers.

mod cmd;
mod fio;
mod flash;
mod machine;
mod metrics;
mod mobifs;
mod reads;
mod report;
mod rss;
mod sqlite;
mod targets;

use metrics::Outcome;
use report::Cell;
use serde::Serialize;
use serde_json::json;
use std::path::PathBuf;
use std::time::Instant;
use targets::{Target, TargetEnv, TargetKind};

#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// Also write every result, the goals and the machine description to FILE as JSON.
    #[arg(long, value_name = "FILE")]
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
    /// Put every target's device on emulated phone flash (`mcfs flashdev --profile PROFILE`:
    /// emmc, emmc-cq, ufs or a profile TOML); tmpfs is left out unless named.
    #[arg(long, value_name = "PROFILE")]
    pub flash: Option<String>,
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
}

impl WorkloadName {
    const ALL: [WorkloadName; 6] = [
        WorkloadName::Fio,
        WorkloadName::Sqlite,
        WorkloadName::Mobifs,
        WorkloadName::Reads,
        WorkloadName::Rss,
        WorkloadName::RssWriters,
    ];

    pub fn name(self) -> &'static str {
        match self {
            WorkloadName::Fio => "fio",
            WorkloadName::Sqlite => "sqlite",
            WorkloadName::Mobifs => "mobifs",
            WorkloadName::Reads => "reads",
            WorkloadName::Rss => "rss",
            WorkloadName::RssWriters => "rss-writers",
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
        }
    }

    /// Each sparse ext4 image: room for the largest workload's files with
    /// mcfs's journal beside them.
    fn image_bytes(&self) -> u64 {
        let rss = self.rss_cache_bytes * rss::CACHE_MULTIPLE.max(rss::WRITERS_CACHE_MULTIPLE);
        let largest = rss.max(self.fio_file_bytes).max(self.read_file_bytes);
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
    if workloads.contains(&WorkloadName::Fio) {
        tools.push("fio");
    }
    cmd::require_tools(&tools)?;
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
    };
    let context = json!({
        "machine": machine::describe(scratch.path()),
        "command": std::env::args().collect::<Vec<_>>(),
        "quick": args.quick,
        "seed": seed,
        "flash_profile": args.flash,
        "sizes": sizes,
        "mcfs_bin": mcfs_bin,
        "mcfs_options": args.mcfs_option,
        // Inherited by the mcfs daemons; it changes their peak RSS.
        "malloc_arena_max": std::env::var("MALLOC_ARENA_MAX").ok(),
    });
    eprintln!(
        "mcfs bench: seed {seed}, scratch {}{}",
        scratch.path().display(),
        if args.quick { ", quick sizes" } else { "" }
    );

    let plan: Vec<(WorkloadName, TargetKind)> = workloads
        .iter()
        .flat_map(|&w| target_kinds.iter().filter(move |&&t| w.applies_to(t)).map(move |&t| (w, t)))
        .collect();
    let mut cells = Vec::new();
    for (n, &(workload, target)) in plan.iter().enumerate() {
        eprint!("mcfs bench: [{}/{}] {} on {} ... ", n + 1, plan.len(), workload.name(), target.name());
        let start = Instant::now();
        let result = run_cell(workload, target, &env, &sizes, seed);
        match &result {
            Ok(_) => eprintln!("done in {:.1} s", start.elapsed().as_secs_f64()),
            Err(e) => eprintln!("FAILED: {e}"),
        }
        cells.push(Cell { workload, target, result });
    }

    drop(flash);
    let verdicts = report::verdicts(&cells, &metrics::goals(sizes.rss_cache_bytes));
    print!("{}", report::render_table(&cells, &target_kinds, &verdicts));
    if let Some(path) = &args.json {
        let doc = report::to_json(&cells, &verdicts, context);
        let text = serde_json::to_string_pretty(&doc).map_err(|e| format!("cannot encode the results: {e}"))?;
        std::fs::write(path, text + "\n").map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    let failed = cells.iter().filter(|c| c.result.is_err()).count();
    if failed > 0 {
        return Err(format!("{failed} of {} measurements failed (see Errors above)", cells.len()));
    }
    Ok(())
}

/// The selection in a stable order, or everything when nothing was named.
fn chosen<T: Copy + Ord>(named: &[T], all: &[T]) -> Vec<T> {
    let mut list = if named.is_empty() { all.to_vec() } else { named.to_vec() };
    list.sort();
    list.dedup();
    list
}

fn run_cell(
    workload: WorkloadName,
    kind: TargetKind,
    env: &TargetEnv,
    sizes: &Sizes,
    seed: u64,
) -> Result<Outcome, String> {
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
        let flash = Cli::try_parse_from(["bench", "--flash", "emmc"]).unwrap();
        assert_eq!(flash.bench.flash.as_deref(), Some("emmc"));
        let all = Cli::try_parse_from(["bench"]).unwrap();
        assert_eq!(chosen(&all.bench.workloads, &WorkloadName::ALL), WorkloadName::ALL);
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
            assert_eq!(sizes.image_bytes() % MIB, 0);
        }
    }
}
