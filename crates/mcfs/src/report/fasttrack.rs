//! The FastTrack study's section of the report (seed 001, §5): the FG app's response time normalized to
//! FG-only, per scenario, BG app kind and config (Figures 10 and 12), and for the app switch against the
//! number of BG apps (Figure 13), measured live (real processes on real mounts over the emulated eMMC) and
//! in the simulator, side by side, with the paper's numbers beside ours.
//!
//! Normalization: a config's time is divided by the FG-only time of its file system without FastTrack —
//! `ext4` by ext4 alone, every mcfs config by `mcfs-off` alone — measured the same way (live or sim), so a
//! ratio says what the BG apps cost the FG app on that file system. Invariant: every number printed is
//! computed from the results read (medians of the repetitions), or is the paper's (`fasttrack_paper`), and
//! says which; a point the results do not have prints as "–".

use super::fasttrack_paper as paper;
use super::fasttrack_results::{PointKey, Points};
use super::format::{count_range, fixed, percent, times2, Table};
use super::legend::Config;
use super::plots::{figure, Bar, BarChart, Reference, Series};
use super::stats::{mean, ratio, reduction};

/// The study's config names (`config` of the run records) with the series they are in the report.
pub const CONFIGS: [(&str, Config); 7] = [
    (EXT4, Config::Ext4),
    (MCFS_OFF, Config::McfsOff),
    ("pa", Config::Pa),
    ("pr", Config::Pr),
    ("id", Config::Id),
    (FASTT_MINUS, Config::FastTMinus),
    (FASTT, Config::FastT),
];
pub const EXT4: &str = "ext4";
pub const MCFS_OFF: &str = "mcfs-off";
pub const FASTT_MINUS: &str = "fastt-minus";
pub const FASTT: &str = "fastt";
/// Where runs come from, with their labels.
pub const SOURCES: [(&str, &str); 2] = [("live", "live"), ("sim", "simulated")];
/// FG scenarios, with the app of the paper each stands for.
pub const SCENARIOS: [(&str, &str); 3] =
    [("launch", "Gallery launch"), ("switch", "Camera switch"), ("load", "Game load")];
/// BG app kinds of Figures 10 and 12 (one BG app).
pub const BG_KINDS: [(&str, &str); 2] = [("update", "Update"), ("backup", "Backup")];
/// BG kind of Figure 13's points: half Update, half Backup (`none` without BG apps).
pub const MIXED: &str = "mixed";
pub const NONE: &str = "none";
/// Figure 13's scenario, configs and BG counts.
const FIG13_SCENARIO: &str = "switch";
const FIG13_CONFIGS: [&str; 4] = [EXT4, MCFS_OFF, FASTT_MINUS, FASTT];
const FIG13_COUNTS: [u32; 4] = [0, 2, 4, 6];

/// The section's Markdown and its charts (file name, SVG).
pub struct Section {
    pub markdown: String,
    pub plots: Vec<(String, String)>,
}

/// The series of a config name of the run records.
fn series_of(config: &str) -> Option<Config> {
    CONFIGS.iter().find(|(c, _)| *c == config).map(|(_, s)| *s)
}

/// A config's name in the report: its legend name, or the record's name for a config the study lacks.
fn label(config: &str) -> &str {
    series_of(config).map_or(config, |s| s.name())
}

/// The config whose FG-only time normalizes `config`'s: the same file system without FastTrack.
fn fg_only_config(config: &str) -> &'static str {
    if config == EXT4 {
        EXT4
    } else {
        MCFS_OFF
    }
}

/// The study's numbers, read from the points.
pub struct Study<'a> {
    points: &'a Points,
}

impl<'a> Study<'a> {
    pub fn new(points: &'a Points) -> Study<'a> {
        Study { points }
    }

    /// Median FG response time in seconds.
    pub fn seconds(&self, source: &str, scenario: &str, bg_kind: &str, bg_count: u32, config: &str) -> Option<f64> {
        self.points.median(&PointKey::new(source, scenario, bg_kind, bg_count, config))
    }

    /// FG-only time of `config`'s file system.
    pub fn fg_only(&self, source: &str, scenario: &str, config: &str) -> Option<f64> {
        self.seconds(source, scenario, NONE, 0, fg_only_config(config))
    }

    /// A point's time over its file system's FG-only time: the median, fastest and slowest run over the
    /// median FG-only run (whose own spread the whisker leaves out).
    pub fn normalized(&self, source: &str, scenario: &str, bg_kind: &str, bg_count: u32, config: &str) -> Option<Bar> {
        let key = PointKey::new(source, scenario, bg_kind, bg_count, config);
        let fg_only = self.fg_only(source, scenario, config)?;
        let (low, high) = self.points.range(&key)?;
        Some(Bar {
            value: ratio(self.points.median(&key)?, fg_only)?,
            runs: self.points.reps(&key),
            low: ratio(low, fg_only)?,
            high: ratio(high, fg_only)?,
        })
    }

    /// One BG app of `bg_kind` (Figures 10 and 12).
    fn one_bg(&self, source: &str, scenario: &str, bg_kind: &str, config: &str) -> Option<f64> {
        self.one_bg_bar(source, scenario, bg_kind, config).map(|b| b.value)
    }

    fn one_bg_bar(&self, source: &str, scenario: &str, bg_kind: &str, config: &str) -> Option<Bar> {
        self.normalized(source, scenario, bg_kind, 1, config)
    }

    /// Figure 13's point for `count` BG apps (the FG-only run of the config itself at 0).
    fn fig13(&self, source: &str, count: u32, config: &str) -> Option<f64> {
        self.fig13_bar(source, count, config).map(|b| b.value)
    }

    fn fig13_bar(&self, source: &str, count: u32, config: &str) -> Option<Bar> {
        let kind = if count == 0 { NONE } else { MIXED };
        self.normalized(source, FIG13_SCENARIO, kind, count, config)
    }

    /// The mean over the six FG/BG combinations of one BG app of 1 − `config` / `baseline` (absolute
    /// times); `None` unless all six have both.
    pub fn mean_reduction(&self, source: &str, config: &str, baseline: &str) -> Option<f64> {
        let mut reductions = Vec::new();
        for (scenario, _) in SCENARIOS {
            for (kind, _) in BG_KINDS {
                let new = self.seconds(source, scenario, kind, 1, config)?;
                let old = self.seconds(source, scenario, kind, 1, baseline)?;
                reductions.push(reduction(new, old)?);
            }
        }
        mean(&reductions)
    }

    /// 1 − `config` / `baseline` for the app switch with `count` BG apps (absolute times).
    pub fn fig13_reduction(&self, source: &str, count: u32, config: &str, baseline: &str) -> Option<f64> {
        let new = self.seconds(source, FIG13_SCENARIO, MIXED, count, config)?;
        reduction(new, self.seconds(source, FIG13_SCENARIO, MIXED, count, baseline)?)
    }
}

/// The section for `points`; charts are linked as `plot_link/FILE`.
pub fn build(points: &Points, plot_link: &str) -> Result<Section, String> {
    let study = Study::new(points);
    let mut md = String::new();
    let mut plots = Vec::new();
    md.push_str("## FastTrack study (seed 001, §5)\n\n");
    md.push_str(
        "_Generated by `mcfs report --fasttrack` from the run records of `experiments/fasttrack/run.sh`; \
         edits between the markers are overwritten._\n\n",
    );
    md.push_str(&format!(
        "Every app is a synthetic trace (`mcfs trace synth --fasttrack`, docs/SYNTH.md): FG scenarios \
         `launch` (Gallery), `switch` (Camera), `load` (Game); BG apps `update` (write-heavy) and `backup` \
         (read-heavy), looped while the FG app runs. **Live**: each app is a real process with its own uid \
         replaying its trace (`mcfs trace replay`) on a real mount over the emulated flash (`mcfs flashdev`, \
         profile {}); the FG response time is its trace's first operation to its last completion. \
         **Simulated**: the same traces through the engine in virtual time on the modelled device \
         (`mcfs sim --fasttrack`). Configs: {}. FastT alone \
         uses the device's FG-first scheduler; every other config a FIFO device. Times are medians of \
         {} run(s) per point ({} runs read); ratios are over the FG-only time of the same file system \
         (ext4 alone for ext4, mcfs with FastTrack off alone for every mcfs config).\n\n",
        devices_text(points),
        configs_text(),
        reps_text(points),
        points.runs()
    ));
    md.push_str(&targets(&study));
    for (source, source_label) in SOURCES {
        if !points.keys().any(|k| k.source == source) {
            continue;
        }
        md.push_str(&format!("### Figures 10 and 12, {source_label}: one BG app\n\n"));
        md.push_str(&fig10_table(&study, source));
        let mut chart = |file: String, chart: BarChart| -> Result<String, String> {
            let (markdown, svg) = figure(&chart, plot_link, &file)?;
            plots.push((file, svg));
            Ok(markdown)
        };
        md.push_str(&chart(format!("fasttrack-fig10-{source}.svg"), fig10_chart(&study, source, source_label))?);
        md.push_str(&format!("### Figure 13, {source_label}: app switch against the number of BG apps\n\n"));
        md.push_str(&fig13_table(&study, source));
        md.push_str(&chart(format!("fasttrack-fig13-{source}.svg"), fig13_chart(&study, source, source_label))?);
    }
    md.push_str(&censored_note(points));
    Ok(Section { markdown: md, plots })
}

/// The points whose runs hit the study's time limit: their times, and every ratio made from them, are
/// lower bounds.
fn censored_note(points: &Points) -> String {
    let list: Vec<String> = points
        .censored()
        .map(|(k, n)| {
            let bg = if k.bg_count == 0 { "alone".to_string() } else { format!("{} × {}", k.bg_count, k.bg_kind) };
            format!("{} {} {bg} under {} ({n} of {} runs)", k.source, k.scenario, label(&k.config), points.reps(k))
        })
        .collect();
    if list.is_empty() {
        return String::new();
    }
    format!(
        "**Stopped at the time limit** (the FG app was stopped between two operations; these times and the \
         ratios made from them are lower bounds; so the time saved against them is a lower bound, and the time \
         they save an upper bound): {}.\n\n",
        list.join("; ")
    )
}

fn configs_text() -> String {
    let about = [
        (EXT4, "ext4 in an image on the emulated device (the simulator stands in with `ext4-like` transactions and synchronous fsync)"),
        (MCFS_OFF, "mcfs with every FastTrack part off"),
        ("pa", "preemption only (§4.2)"),
        ("pr", "FG-aware reclaim only (§4.3)"),
        ("id", "FG-first dispatch only (§4.4)"),
        (FASTT_MINUS, "all three"),
        (FASTT, "all three and the device's FG-first scheduler (§4.5)"),
    ];
    let list: Vec<String> = about.iter().map(|(c, what)| format!("{} (`{c}`) = {what}", label(c))).collect();
    list.join("; ")
}

/// "`emmc-cq`", or "unknown" when no record names its device.
fn devices_text(points: &Points) -> String {
    let names: Vec<String> = points.devices().map(|d| format!("`{d}`")).collect();
    if names.is_empty() {
        "unknown".into()
    } else {
        names.join(", ")
    }
}

/// "3" when every point has as many repetitions, else "1–3".
fn reps_text(points: &Points) -> String {
    count_range(points.keys().map(|k| points.reps(k)))
}

/// The paper's headline numbers beside ours, live and simulated.
fn targets(study: &Study) -> String {
    let mut md = String::from("### The paper's numbers and ours\n\n");
    let mut t = Table::new(&["what", "paper", "live", "simulated"]);
    let both = |f: &dyn Fn(&str) -> String| (f("live"), f("sim"));
    let mut row = |what: &str, paper: String, (live, sim): (String, String)| {
        t.row(vec![what.to_string(), paper, live, sim]);
    };
    row(
        "Gallery launch, ext4 FG+BG, 1 Update (× FG-only)",
        format!("{} (Fig. 1a, N6)", times2(Some(paper::FIG1_LAUNCH_UPDATE))),
        both(&|s| times2(study.one_bg(s, "launch", "update", EXT4))),
    );
    row(
        "Gallery launch, ext4 FG+BG, 1 Backup (× FG-only)",
        format!("{} (Fig. 1a, N6)", times2(Some(paper::FIG1_LAUNCH_BACKUP))),
        both(&|s| times2(study.one_bg(s, "launch", "backup", EXT4))),
    );
    row(
        "Camera switch, ext4 FG+BG, 6 BG apps (× FG-only)",
        format!("{} (Fig. 1b, N6, heavy BG I/O)", times2(Some(paper::FIG1_SWITCH_HEAVY_BG))),
        both(&|s| times2(study.fig13(s, 6, EXT4))),
    );
    row(
        "Camera switch under Update, FastT⁻ (× FG-only)",
        format!(
            "{} (Fig. 12: {} s over {} s)",
            times2(ratio(paper::FIG12_SWITCH_UPDATE_FASTT_MINUS_S, paper::FIG12_SWITCH_UPDATE_FG_ONLY_S)),
            paper::FIG12_SWITCH_UPDATE_FASTT_MINUS_S,
            paper::FIG12_SWITCH_UPDATE_FG_ONLY_S
        ),
        both(&|s| times2(study.one_bg(s, "switch", "update", FASTT_MINUS))),
    );
    row(
        "Camera switch under Update, FastT (× FG-only)",
        format!(
            "{} (Fig. 12: {} s over {} s)",
            times2(ratio(paper::FIG12_SWITCH_UPDATE_FASTT_S, paper::FIG12_SWITCH_UPDATE_FG_ONLY_S)),
            paper::FIG12_SWITCH_UPDATE_FASTT_S,
            paper::FIG12_SWITCH_UPDATE_FG_ONLY_S
        ),
        both(&|s| times2(study.one_bg(s, "switch", "update", FASTT))),
    );
    row(
        "FastT⁻ against ext4 FG+BG, mean of the six FG/BG pairs (time saved)",
        format!("{} (§5.1, against Android FG+BG)", percent(Some(paper::FIG10_FASTT_MINUS_REDUCTION))),
        both(&|s| percent(study.mean_reduction(s, FASTT_MINUS, EXT4))),
    );
    row(
        "FastT⁻ against mcfs FG+BG, mean of the six pairs (time saved)",
        "–".into(),
        both(&|s| percent(study.mean_reduction(s, FASTT_MINUS, MCFS_OFF))),
    );
    row(
        "ID alone against mcfs FG+BG, mean of the six pairs (time saved)",
        format!("{} (§5.1)", percent(Some(paper::FIG10_ID_REDUCTION))),
        both(&|s| percent(study.mean_reduction(s, "id", MCFS_OFF))),
    );
    row(
        "Camera switch, FastT, 2 BG apps (× FG-only)",
        format!("{} (Fig. 13)", times2(Some(paper::FIG13_FASTT_2BG))),
        both(&|s| times2(study.fig13(s, 2, FASTT))),
    );
    row(
        "Camera switch, FastT, 6 BG apps (× FG-only)",
        format!("{} (Fig. 13)", times2(Some(paper::FIG13_FASTT_6BG))),
        both(&|s| times2(study.fig13(s, 6, FASTT))),
    );
    for baseline in [EXT4, MCFS_OFF] {
        row(
            &format!("Camera switch, 6 BG apps, FastT against {} (time saved)", label(baseline)),
            format!("{} (Fig. 13)", percent(Some(paper::FIG13_FASTT_REDUCTION_6BG))),
            both(&|s| percent(study.fig13_reduction(s, 6, FASTT, baseline))),
        );
    }
    row(
        "Worst FG+BG with 6 BG apps (× FG-only)",
        format!("up to {} (§1)", times2(Some(paper::FG_BG_6BG_WORST))),
        both(&|s| times2(study.fig13(s, 6, EXT4))),
    );
    md.push_str(&t.render());
    md.push_str(
        "\nThe paper's FG+BG is unmodified Android on ext4; ours is ext4 on the same emulated device, and, to \
         separate FastTrack from the rest of mcfs, mcfs with FastTrack off. Its Figure 10 ran on phones \
         without the device scheduler (FastT⁻) and Figures 12–13 on an emulated device (FastT).\n\n",
    );
    md
}

fn fig10_table(study: &Study, source: &str) -> String {
    let mut header = vec!["FG app + BG app", "FG-only ext4 (s)", "FG-only mcfs (s)"];
    header.extend(CONFIGS.iter().map(|(_, series)| series.name()));
    let mut t = Table::new(&header);
    for (scenario, scenario_label) in SCENARIOS {
        for (kind, kind_label) in BG_KINDS {
            let mut row = vec![
                format!("{scenario_label} + {kind_label}"),
                fixed(study.fg_only(source, scenario, EXT4), 2),
                fixed(study.fg_only(source, scenario, MCFS_OFF), 2),
            ];
            row.extend(CONFIGS.iter().map(|(c, _)| times2(study.one_bg(source, scenario, kind, c))));
            t.row(row);
        }
    }
    let mut mean_row = vec!["mean".to_string(), String::new(), String::new()];
    for (config, _) in CONFIGS {
        let values: Option<Vec<f64>> = SCENARIOS
            .iter()
            .flat_map(|(s, _)| BG_KINDS.iter().map(move |(k, _)| (*s, *k)))
            .map(|(s, k)| study.one_bg(source, s, k, config))
            .collect();
        mean_row.push(times2(values.as_deref().and_then(mean)));
    }
    t.row(mean_row);
    format!(
        "FG response time with one BG app, × the FG-only time of the same file system (FG-only columns in \
         seconds).\n\n{}\n",
        t.render()
    )
}

fn fig10_chart(study: &Study, source: &str, source_label: &str) -> BarChart {
    let pairs: Vec<(&str, &str, String)> = SCENARIOS
        .iter()
        .flat_map(|(s, sl)| BG_KINDS.iter().map(move |(k, kl)| (*s, *k, format!("{} + {kl}", short(sl)))))
        .collect();
    normalized_chart(
        format!("FastTrack Fig. 10/12 ({source_label}): FG time with one BG app"),
        "FG app + BG app",
        pairs.iter().map(|(_, _, l)| l.clone()).collect(),
        &CONFIGS.map(|(c, _)| c),
        "FG apps: Gallery launches, Camera switches, Game loads; BG apps: Update (write-heavy), Backup (read-heavy)",
        |config, i| pairs.get(i).and_then(|(s, k, _)| study.one_bg_bar(source, s, k, config)),
    )
}

/// A chart of FG response times over FG-only, a series per config of `configs` and `bar(config,
/// category)` its bars, with the line at 1× (no slowdown).
fn normalized_chart(
    title: String,
    x_label: &str,
    categories: Vec<String>,
    configs: &[&str],
    about: &str,
    bar: impl Fn(&str, usize) -> Option<Bar>,
) -> BarChart {
    let series = configs
        .iter()
        .filter_map(|c| {
            Some(Series { config: series_of(c)?, bars: (0..categories.len()).map(|i| bar(c, i)).collect() })
        })
        .collect();
    BarChart {
        title,
        x_label: x_label.into(),
        y_label: "FG response time (× FG-only time)".into(),
        categories,
        series,
        log_y: false,
        reference: Some(Reference { y: 1.0, label: "1× = FG-only time".into() }),
        notes: vec![
            about.into(),
            "Bars: median run over the median FG-only run of the same file system (ext4's for ext4, mcfs FG+BG's \
             for every mcfs config)"
                .into(),
        ],
    }
}

/// "Gallery" of "Gallery launch".
fn short(label: &str) -> &str {
    label.split(' ').next().unwrap_or(label)
}

fn fig13_table(study: &Study, source: &str) -> String {
    let mut header = vec!["BG apps"];
    header.extend(FIG13_CONFIGS.iter().map(|c| label(c)));
    header.extend(["FastT saves against ext4", "against mcfs FG+BG"]);
    let mut t = Table::new(&header);
    for count in FIG13_COUNTS {
        let mut row = vec![count.to_string()];
        row.extend(FIG13_CONFIGS.iter().map(|c| times2(study.fig13(source, count, c))));
        for baseline in [EXT4, MCFS_OFF] {
            let saved = study.fig13_reduction(source, count, FASTT, baseline);
            row.push(if count == 0 { "–".into() } else { percent(saved) });
        }
        t.row(row);
    }
    format!(
        "Camera switch time with 0–6 BG apps (half Update, half Backup), × the FG-only time of the same file \
         system; the last column compares absolute times (negative: FastT was slower).\n\n{}\n",
        t.render()
    )
}

fn fig13_chart(study: &Study, source: &str, source_label: &str) -> BarChart {
    normalized_chart(
        format!("FastTrack Fig. 13 ({source_label}): Camera switch against BG apps"),
        "BG apps running beside the Camera switch (count; half Update, half Backup)",
        FIG13_COUNTS.iter().map(u32::to_string).collect(),
        &FIG13_CONFIGS,
        "At 0 BG apps each config runs alone, over the FG-only run of its file system",
        |config, i| FIG13_COUNTS.get(i).and_then(|n| study.fig13_bar(source, *n, config)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fasttrack_results::Run;
    use crate::report::plots::texts;

    fn run(source: &str, scenario: &str, bg_kind: &str, bg_count: u32, config: &str, fg_seconds: f64) -> Run {
        Run {
            source: source.into(),
            scenario: scenario.into(),
            bg_kind: bg_kind.into(),
            bg_count,
            config: config.into(),
            rep: 0,
            fg_seconds,
            device: "emmc-cq".into(),
            censored: false,
        }
    }

    /// Live results where every config of Fig. 10 takes `factor` × FG-only, ext4 4×, and Fig. 13's
    /// switch takes 1 + n/10 under FastT and 2n under ext4.
    fn points() -> Points {
        let mut runs = Vec::new();
        let factors =
            [(EXT4, 4.0), (MCFS_OFF, 3.0), ("pa", 2.0), ("pr", 2.0), ("id", 2.7), (FASTT_MINUS, 1.5), (FASTT, 1.2)];
        for (scenario, _) in SCENARIOS {
            runs.push(run("live", scenario, NONE, 0, EXT4, 1.0));
            runs.push(run("live", scenario, NONE, 0, MCFS_OFF, 0.5));
            for (kind, _) in BG_KINDS {
                for (config, factor) in factors {
                    let base = if config == EXT4 { 1.0 } else { 0.5 };
                    // Three repetitions; the median is the middle one.
                    for jitter in [0.9, 1.0, 1.3] {
                        runs.push(run("live", scenario, kind, 1, config, base * factor * jitter));
                    }
                }
            }
        }
        for n in [2, 4, 6] {
            runs.push(run("live", "switch", MIXED, n, FASTT, 0.5 * (1.0 + f64::from(n) / 10.0)));
            runs.push(run("live", "switch", MIXED, n, EXT4, 2.0 * f64::from(n)));
            runs.push(run("live", "switch", MIXED, n, MCFS_OFF, 4.0 * f64::from(n)));
        }
        runs.push(run("live", "switch", NONE, 0, FASTT, 0.5));
        runs.push(Run { censored: true, ..run("live", "switch", MIXED, 6, FASTT_MINUS, 30.0) });
        Points::from_runs(runs)
    }

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-9)
    }

    #[test]
    fn ratios_are_over_the_fg_only_time_of_the_same_file_system() {
        let points = points();
        let study = Study::new(&points);
        assert!(close(study.normalized("live", "launch", "update", 1, EXT4).map(|b| b.value), 4.0));
        assert!(
            close(study.normalized("live", "launch", "update", 1, FASTT).map(|b| b.value), 1.2),
            "over mcfs-off alone"
        );
        assert!(close(study.fig13("live", 6, FASTT), 1.6));
        assert!(close(study.fig13("live", 0, FASTT), 1.0));
        assert_eq!(study.normalized("sim", "launch", "update", 1, EXT4), None);
    }

    #[test]
    fn reductions_compare_absolute_times_and_need_all_six_pairs() {
        let points = points();
        let study = Study::new(&points);
        // FastT⁻ 0.75 s against ext4's 4 s in every pair.
        assert!(close(study.mean_reduction("live", FASTT_MINUS, EXT4), 1.0 - 0.75 / 4.0));
        assert!(close(study.mean_reduction("live", "id", MCFS_OFF), 1.0 - 2.7 / 3.0));
        assert!(close(study.fig13_reduction("live", 6, FASTT, EXT4), 1.0 - 0.8 / 12.0));
        let partial = Points::from_runs(vec![
            run("live", "launch", "update", 1, FASTT_MINUS, 1.0),
            run("live", "launch", "update", 1, EXT4, 2.0),
        ]);
        assert_eq!(Study::new(&partial).mean_reduction("live", FASTT_MINUS, EXT4), None);
    }

    #[test]
    fn the_section_has_the_tables_the_paper_beside_ours_and_the_charts() {
        let section = build(&points(), "report").unwrap();
        let md = &section.markdown;
        assert!(
            md.contains(
                "| Gallery launch + Update | 1.00 | 0.50 | 4.00× | 3.00× | 2.00× | 2.00× | 2.70× | 1.50× | 1.20× |"
            ),
            "{md}"
        );
        assert!(md.contains("| Camera switch, FastT, 6 BG apps (× FG-only) | 1.27× (Fig. 13) | 1.60× | – |"), "{md}");
        // FastT 0.8 s against ext4's 12 s and mcfs FG+BG's 24 s.
        assert!(md.contains("| 6 | 12.00× | 48.00× | 60.00× | 1.60× | 93.3 % | 96.7 % |"), "{md}");
        assert!(md.contains("81.2 %"), "FastT⁻ saves 1 − 0.75/4: {md}");
        assert!(md.contains("Times are medians of 1–3 run(s)"), "{md}");
        assert!(md.contains("profile `emmc-cq`"), "{md}");
        assert!(md.contains("an upper bound): live switch 6 × mixed under FastT⁻ (1 of 1 runs)."), "{md}");
        assert!(md.contains("the time saved against them is a lower bound"), "{md}");
        assert!(!md.contains("simulated: one BG app"), "no simulated results, no simulated tables");
        let files: Vec<&str> = section.plots.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(files, ["fasttrack-fig10-live.svg", "fasttrack-fig13-live.svg"]);
        assert!(
            md.contains("![FastTrack Fig. 13 (live): Camera switch against BG apps](report/fasttrack-fig13-live.svg)")
        );
        assert_eq!(build(&points(), "report").unwrap().markdown, *md, "deterministic");
    }

    #[test]
    fn the_charts_label_their_axes_draw_the_1x_line_and_show_the_runs() {
        let section = build(&points(), "report").unwrap();
        let svg = |file: &str| section.plots.iter().find(|(f, _)| f == file).map(|(_, svg)| texts(svg)).unwrap();
        let (fig10, fig13) = (svg("fasttrack-fig10-live.svg"), svg("fasttrack-fig13-live.svg"));
        for (texts, x_label) in [(&fig10, "FG app + BG app"), (&fig13, "BG apps running beside the Camera switch")] {
            assert!(texts.iter().any(|t| t.starts_with(x_label)), "{x_label} missing in {texts:?}");
            for text in ["FG response time (× FG-only time)", "1× = FG-only time", Config::FastT.name()] {
                assert!(texts.contains(&text), "{text} missing in {texts:?}");
            }
        }
        for (_, config) in CONFIGS {
            assert!(fig10.contains(&config.name()), "{config:?}'s legend name missing in {fig10:?}");
        }
        assert!(!fig13.contains(&Config::Pa.name()), "Figure 13 does not run PA");
        // Figure 10's points ran three times each (whiskers); Figure 13's once.
        assert!(fig10.contains(&"n = 3 runs per bar; whiskers span the smallest to the largest run"), "{fig10:?}");
        assert!(fig13.contains(&"n = 1 run per bar, so no spread to show"), "{fig13:?}");
        assert!(section.markdown.contains("_FG apps: Gallery launches"), "the caption is in the report too");
        let ext4 = study_bar(&points(), "launch", "update");
        assert_eq!((ext4.runs, ext4.low, ext4.high), (3, 4.0 * 0.9, 4.0 * 1.3), "median 4×, runs 0.9–1.3 of it");
    }

    fn study_bar(points: &Points, scenario: &str, kind: &str) -> Bar {
        Study::new(points).one_bg_bar("live", scenario, kind, EXT4).unwrap()
    }
}
