//! The workloads of the FastTrack study (seed 001, §2.2 and §5) as synthetic traces: three foreground
//! scenarios — `launch` (Gallery cold-reads its images and libraries), `switch` (Camera writes its state out
//! as it goes to the background), `load` (a Game loads stage data after launch, re-reading a hot set and
//! writing cache and save data) — and two background apps — `update` (write-heavy: download a package,
//! install it) and `backup` (read-heavy: read many files to upload them). docs/SYNTH.md ("FastTrack
//! workloads") gives each size beside the paper's figure it stands for.
//!
//! Each workload is two traces: `setup` creates what the run reads (untimed, replayed before the caches
//! are made cold) and `run` is what is measured (FG kinds) or repeated until stopped (BG kinds). The same
//! two traces drive the live study (`mcfs trace replay`) and the simulator, so both measure one workload.
//!
//! Invariant: the events are a pure function of the spec and [`FASTTRACK_VERSION`] (the generator's own
//! SplitMix64, integer arithmetic only, sizes scaled in per mille), in time order; every file the run
//! reads is created by the setup with at least the bytes read, and every file the run writes is opened
//! with `O_TRUNC` first, so a run replayed again (or looped) does the same I/O on the same tree.

use std::collections::BTreeSet;
use std::ops::RangeInclusive;

use super::rng::Rng;
use super::timeline::{join, Timeline};
use super::{check_app, pid_of};
use crate::trace::{EventKind, PathBytes, TraceEvent};

/// Version of these workloads: raised whenever the same spec would give different events.
pub const FASTTRACK_VERSION: u32 = 1;
/// Size of every read and write the workloads issue (the paper's apps read and write in large chunks;
/// 128 KiB is Android's default read-ahead window).
pub const CHUNK_BYTES: u64 = 128 * KIB;
/// `scale_per_mille` of the workloads as documented.
pub const FULL_SCALE: u64 = 1000;
/// Largest scale accepted (a hundred times the documented sizes).
pub const MAX_SCALE_PER_MILLE: u64 = 100_000;

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;
/// Sub-streams of the seed.
const SIZE_STREAM: u64 = 11;
const SETUP_TIME_STREAM: u64 = 12;
const RUN_TIME_STREAM: u64 = 13;
/// Microseconds an app spends between two files (decoding, parsing).
const FILE_GAP_US: RangeInclusive<u64> = 100..=1_000;

/// One workload of the study.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FastTrackKind {
    Launch,
    Switch,
    Load,
    Update,
    Backup,
}

impl FastTrackKind {
    pub const ALL: [FastTrackKind; 5] = [
        FastTrackKind::Launch,
        FastTrackKind::Switch,
        FastTrackKind::Load,
        FastTrackKind::Update,
        FastTrackKind::Backup,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FastTrackKind::Launch => "launch",
            FastTrackKind::Switch => "switch",
            FastTrackKind::Load => "load",
            FastTrackKind::Update => "update",
            FastTrackKind::Backup => "backup",
        }
    }

    /// The kind named `name`; the error lists the known names.
    pub fn parse(name: &str) -> Result<FastTrackKind, String> {
        FastTrackKind::ALL.into_iter().find(|k| k.name() == name).ok_or_else(|| {
            let names: Vec<&str> = FastTrackKind::ALL.iter().map(|k| k.name()).collect();
            format!("unknown FastTrack workload '{name}' (known: {})", names.join(", "))
        })
    }

    /// A foreground scenario (measured once) rather than a background app (looped).
    pub fn is_foreground(self) -> bool {
        matches!(self, FastTrackKind::Launch | FastTrackKind::Switch | FastTrackKind::Load)
    }

    /// One line on what the workload does and which app of the paper it stands for.
    pub fn summary(self) -> &'static str {
        match self {
            FastTrackKind::Launch => "FG, Gallery's cold launch: reads 10 libraries and 25 images of 0.5-2 MiB",
            FastTrackKind::Switch => "FG, Camera switched out: writes and fsyncs 20 files, about 16 MiB",
            FastTrackKind::Load => {
                "FG, a Game loading a stage: reads assets, re-reads a hot set, writes cache and save"
            }
            FastTrackKind::Update => "BG, app update: downloads a 32 MiB package, reads it, writes the installed files",
            FastTrackKind::Backup => "BG, cloud backup: reads 64 files (about 192 MiB) end to end",
        }
    }
}

/// What to generate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FastTrackSpec {
    pub kind: FastTrackKind,
    /// App name: the traces' APP field and the directory `/data/data/<app>`.
    pub app: String,
    pub seed: u64,
    /// Every file size times this / 1000 (rounded up to 4 KiB): 1000 is the documented workload.
    pub scale_per_mille: u64,
}

/// The two traces of a workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FastTrackTraces {
    /// Creates the directories and the files the run reads; not timed.
    pub setup: Vec<TraceEvent>,
    /// The measured (FG) or repeated (BG) part: starts with `foreground` (FG) or `background` (BG).
    pub run: Vec<TraceEvent>,
}

/// Generates the setup and run traces of `spec`.
pub fn generate(spec: &FastTrackSpec) -> Result<FastTrackTraces, String> {
    check_app(&spec.app)?;
    if spec.scale_per_mille == 0 || spec.scale_per_mille > MAX_SCALE_PER_MILLE {
        return Err(format!(
            "scale {}.{:03} is out of range: it must be above 0 and at most {}",
            spec.scale_per_mille / 1000,
            spec.scale_per_mille % 1000,
            MAX_SCALE_PER_MILLE / 1000
        ));
    }
    let seed = Rng::new(spec.seed);
    let mut gen = Generator {
        base: join(b"/data/data", &spec.app),
        made: BTreeSet::new(),
        sizes: seed.fork(SIZE_STREAM),
        scale: spec.scale_per_mille,
        setup: Timeline::new(&spec.app, pid_of(&spec.app), seed.fork(SETUP_TIME_STREAM)),
        run: Timeline::new(&spec.app, pid_of(&spec.app), seed.fork(RUN_TIME_STREAM)),
    };
    match spec.kind {
        FastTrackKind::Launch => gen.launch(),
        FastTrackKind::Switch => gen.switch(),
        FastTrackKind::Load => gen.load(),
        FastTrackKind::Update => gen.update(),
        FastTrackKind::Backup => gen.backup(),
    }
    Ok(FastTrackTraces { setup: gen.setup.drain(), run: gen.run.drain() })
}

/// Gallery (§2.2 Scenario A): "25 image files, on average, must be preloaded"; a launch also loads
/// "executables, libraries, and files".
const LAUNCH_LIBRARIES: u64 = 10;
const LAUNCH_LIBRARY_BYTES: RangeInclusive<u64> = 64 * KIB..=2 * MIB;
const LAUNCH_IMAGES: u64 = 25;
const LAUNCH_IMAGE_BYTES: RangeInclusive<u64> = 512 * KIB..=2 * MIB;

/// Camera (§2.2 Scenario B, §3.4): the switch flushes the app's dirty data (0.45-0.6 s without BG I/O).
const SWITCH_FILES: u64 = 20;
const SWITCH_FILE_BYTES: RangeInclusive<u64> = 400 * KIB..=1200 * KIB;

/// Game (§2.2 Scenario C): stage maps and rendered images loaded after launch; FG apps re-reference the
/// same files (§3.3), here a hot set re-read every round.
const LOAD_HOT_FILES: u64 = 6;
const LOAD_HOT_BYTES: RangeInclusive<u64> = 512 * KIB..=1024 * KIB;
const LOAD_STAGE_FILES: u64 = 16;
const LOAD_STAGE_BYTES: RangeInclusive<u64> = 512 * KIB..=2 * MIB;
const LOAD_ROUNDS: u64 = 4;
const LOAD_CACHE_BYTES: RangeInclusive<u64> = 512 * KIB..=1024 * KIB;
const LOAD_SAVE_BYTES: u64 = 256 * KIB;

/// Update (§2.2, §5): "downloads and installs multiple apps"; packages average about 110 MB (footnote 3)
/// and the study's was 1.5 GB — one 32 MiB package per round here, repeated while the app runs.
const UPDATE_PACKAGE_BYTES: u64 = 32 * MIB;
const UPDATE_INSTALLED_FILES: u64 = 8;

/// Backup (§2.2, §5): "uploads a large number of files"; over 200 MB a day (footnote 3), 1 GB in the
/// study — 64 files of 2-4 MiB here (about 192 MiB, more than the study gives all apps' page cache, so
/// every pass reads from the device), read over and over while the app runs.
const BACKUP_FILES: u64 = 64;
const BACKUP_FILE_BYTES: RangeInclusive<u64> = 2 * MIB..=4 * MIB;

struct Generator {
    /// `/data/data/<app>`.
    base: PathBytes,
    /// Directories the setup has made (each is made once).
    made: BTreeSet<PathBytes>,
    sizes: Rng,
    scale: u64,
    setup: Timeline,
    run: Timeline,
}

impl Generator {
    fn launch(&mut self) {
        let libs = self.files("lib", "lib", ".so", LAUNCH_LIBRARIES, &LAUNCH_LIBRARY_BYTES, true);
        let images = self.files("files/images", "IMG_", ".jpg", LAUNCH_IMAGES, &LAUNCH_IMAGE_BYTES, false);
        self.run.mark(EventKind::Foreground);
        self.run.mark(EventKind::Launch);
        for (path, size) in libs.iter().chain(&images) {
            read_whole(&mut self.run, path, *size);
            self.run.think(&FILE_GAP_US);
        }
    }

    fn switch(&mut self) {
        let dir = self.dir("files/video");
        self.run.mark(EventKind::Foreground);
        for i in 0..SWITCH_FILES {
            let size = self.draw(&SWITCH_FILE_BYTES, false);
            write_whole(&mut self.run, &join(&dir, &format!("part{i:02}.mp4")), size, true);
        }
        self.run.mark(EventKind::Background);
    }

    fn load(&mut self) {
        let hot = self.files("files/assets", "common", ".pak", LOAD_HOT_FILES, &LOAD_HOT_BYTES, false);
        let stages = self.files("files/assets", "stage", ".pak", LOAD_STAGE_FILES, &LOAD_STAGE_BYTES, false);
        let cache = self.dir("cache/shaders");
        let save = join(&self.dir("files/save"), "slot0.sav");
        self.run.mark(EventKind::Foreground);
        let per_round = stages.len().div_ceil(LOAD_ROUNDS as usize).max(1);
        for (round, stage_files) in stages.chunks(per_round).enumerate() {
            for (path, size) in hot.iter().chain(stage_files) {
                read_whole(&mut self.run, path, *size);
                self.run.think(&FILE_GAP_US);
            }
            let size = self.draw(&LOAD_CACHE_BYTES, false);
            write_whole(&mut self.run, &join(&cache, &format!("round{round}.bin")), size, false);
        }
        let size = self.scaled(LOAD_SAVE_BYTES);
        write_whole(&mut self.run, &save, size, true);
    }

    fn update(&mut self) {
        let package = join(&self.dir("cache/download"), "package.apk");
        let install = self.dir("files/install");
        let package_bytes = self.scaled(UPDATE_PACKAGE_BYTES);
        self.run.mark(EventKind::Background);
        write_whole(&mut self.run, &package, package_bytes, true);
        read_whole(&mut self.run, &package, package_bytes);
        // The package's content, extracted into files of about equal size.
        let part = package_bytes.div_ceil(UPDATE_INSTALLED_FILES).next_multiple_of(4 * KIB);
        let mut left = package_bytes;
        for i in 0..UPDATE_INSTALLED_FILES {
            let size = part.min(left);
            write_whole(&mut self.run, &join(&install, &format!("part{i}.odex")), size, true);
            left -= size;
        }
    }

    fn backup(&mut self) {
        let files = self.files("files/backup", "file", ".dat", BACKUP_FILES, &BACKUP_FILE_BYTES, false);
        self.run.mark(EventKind::Background);
        for (path, size) in &files {
            read_whole(&mut self.run, path, *size);
        }
    }

    /// Makes `base/rel` in the setup and returns its path.
    fn dir(&mut self, rel: &str) -> PathBytes {
        let mut path = self.base.clone();
        for part in rel.split('/') {
            path = join(&path, part);
            if self.made.insert(path.clone()) {
                self.setup.call(EventKind::Mkdir { path: path.clone() });
            }
        }
        path
    }

    /// `count` files `base/rel/<prefix>NN<suffix>` of sizes drawn from `bytes` (log-uniformly if
    /// `spread`), created and filled by the setup; returns them with their sizes.
    fn files(
        &mut self,
        rel: &str,
        prefix: &str,
        suffix: &str,
        count: u64,
        bytes: &RangeInclusive<u64>,
        spread: bool,
    ) -> Vec<(PathBytes, u64)> {
        let dir = self.dir(rel);
        let mut files = Vec::new();
        for i in 0..count {
            let path = join(&dir, &format!("{prefix}{i:02}{suffix}"));
            let size = self.draw(bytes, spread);
            write_whole(&mut self.setup, &path, size, false);
            files.push((path, size));
        }
        files
    }

    /// A size from `bytes`, scaled.
    fn draw(&mut self, bytes: &RangeInclusive<u64>, spread: bool) -> u64 {
        let size = if spread { self.sizes.spread(bytes) } else { self.sizes.uniform(bytes) };
        self.scaled(size)
    }

    /// `bytes` × scale / 1000, rounded up to whole 4 KiB pages (at least one).
    fn scaled(&self, bytes: u64) -> u64 {
        let scaled = u128::from(bytes) * u128::from(self.scale) / u128::from(FULL_SCALE);
        u64::try_from(scaled).unwrap_or(u64::MAX).max(1).next_multiple_of(4 * KIB)
    }
}

/// Opens `path` and reads it front to back in chunks.
fn read_whole(tl: &mut Timeline, path: &PathBytes, size: u64) {
    tl.call(EventKind::Open { path: path.clone() });
    let mut offset = 0;
    while offset < size {
        let len = CHUNK_BYTES.min(size - offset);
        tl.read(path, offset, len);
        offset += len;
    }
    tl.call(EventKind::Close { path: path.clone() });
}

/// Creates (or empties) `path`, writes `size` bytes in chunks, optionally fsyncs, and closes it.
fn write_whole(tl: &mut Timeline, path: &PathBytes, size: u64, fsync: bool) {
    tl.call(EventKind::Create { path: path.clone() });
    tl.call(EventKind::Truncate { path: path.clone(), size: 0 });
    let mut offset = 0;
    while offset < size {
        let len = CHUNK_BYTES.min(size - offset);
        tl.write(path, offset, len);
        offset += len;
    }
    if fsync {
        tl.call(EventKind::Fsync { path: path.clone() });
    }
    tl.call(EventKind::Close { path: path.clone() });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(kind: FastTrackKind, scale: u64) -> FastTrackSpec {
        FastTrackSpec { kind, app: "com.example.gallery".into(), seed: 3, scale_per_mille: scale }
    }

    #[test]
    fn names_round_trip_and_unknown_ones_are_listed() {
        for kind in FastTrackKind::ALL {
            assert_eq!(FastTrackKind::parse(kind.name()), Ok(kind));
        }
        let err = FastTrackKind::parse("camera").unwrap_err();
        assert!(err.contains("launch, switch, load, update, backup"), "{err}");
    }

    #[test]
    fn scale_is_checked_and_rounds_up_to_pages() {
        assert!(generate(&spec(FastTrackKind::Launch, 0)).unwrap_err().contains("out of range"));
        assert!(generate(&spec(FastTrackKind::Launch, MAX_SCALE_PER_MILLE + 1)).is_err());
        let gen = |scale| Generator {
            base: PathBytes::default(),
            made: BTreeSet::new(),
            sizes: Rng::new(1),
            scale,
            setup: Timeline::new("a", 1, Rng::new(1)),
            run: Timeline::new("a", 1, Rng::new(1)),
        };
        assert_eq!(gen(1000).scaled(5000), 8192);
        assert_eq!(gen(500).scaled(MIB), MIB / 2);
        assert_eq!(gen(1).scaled(1), 4096, "never below one page");
    }

    #[test]
    fn a_bad_app_name_is_refused() {
        let mut s = spec(FastTrackKind::Backup, 1000);
        s.app = "a/b".into();
        assert!(generate(&s).unwrap_err().contains("cannot name a directory"));
    }
}
