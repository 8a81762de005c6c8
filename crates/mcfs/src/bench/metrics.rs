//! What the benchmark measures and what the issue asks of mcfs: the metrics
//! (each with its workload, unit and display scale), what one workload run
//! on one target yields, and the goals with their pass/miss evaluation.
//! Values are kept in base units (µs, seconds, bytes, per second, bytes per
//! second, MB/s = 10^6 B/s where a tool reports that); only the display
//! scales them.

use super::targets::TargetKind;
use super::WorkloadName;
use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    FsyncP50Us,
    FsyncP99Us,
    WriteClatP50Us,
    WriteClatP99Us,
    WriteIops,
    SqliteWalTps,
    SqliteDeleteTps,
    MobifsDeviceBytes,
    SeqReadMbps,
    RandReadMbps,
    PeakRssBytes,
    PeakRssWritersBytes,
    SpeedtestWalSeconds,
    SpeedtestDeleteSeconds,
    MixedWriteSeconds,
    MixedSelectSeconds,
    PostmarkSeconds,
    DbenchMbps,
    DbenchMaxLatencyUs,
    GitCloneSeconds,
    GitGcSeconds,
    SeqWriteBytesPerSec,
    SeqColdReadBytesPerSec,
    PwriteUs,
    OpenCloseUs,
    StatMissingUs,
    PreadCachedUs,
    StatUs,
    FsyncAfterWriteUs,
}

impl Metric {
    pub const ALL: [Metric; 29] = [
        Metric::FsyncP50Us,
        Metric::FsyncP99Us,
        Metric::WriteClatP50Us,
        Metric::WriteClatP99Us,
        Metric::WriteIops,
        Metric::SqliteWalTps,
        Metric::SqliteDeleteTps,
        Metric::MobifsDeviceBytes,
        Metric::SeqReadMbps,
        Metric::RandReadMbps,
        Metric::PeakRssBytes,
        Metric::PeakRssWritersBytes,
        Metric::SpeedtestWalSeconds,
        Metric::SpeedtestDeleteSeconds,
        Metric::MixedWriteSeconds,
        Metric::MixedSelectSeconds,
        Metric::PostmarkSeconds,
        Metric::DbenchMbps,
        Metric::DbenchMaxLatencyUs,
        Metric::GitCloneSeconds,
        Metric::GitGcSeconds,
        Metric::SeqWriteBytesPerSec,
        Metric::SeqColdReadBytesPerSec,
        Metric::PwriteUs,
        Metric::OpenCloseUs,
        Metric::StatMissingUs,
        Metric::PreadCachedUs,
        Metric::StatUs,
        Metric::FsyncAfterWriteUs,
    ];

    pub fn workload(self) -> WorkloadName {
        match self {
            Metric::FsyncP50Us
            | Metric::FsyncP99Us
            | Metric::WriteClatP50Us
            | Metric::WriteClatP99Us
            | Metric::WriteIops => WorkloadName::Fio,
            Metric::SqliteWalTps | Metric::SqliteDeleteTps => WorkloadName::Sqlite,
            Metric::MobifsDeviceBytes => WorkloadName::Mobifs,
            Metric::SeqReadMbps | Metric::RandReadMbps => WorkloadName::Reads,
            Metric::PeakRssBytes => WorkloadName::Rss,
            Metric::PeakRssWritersBytes => WorkloadName::RssWriters,
            Metric::SpeedtestWalSeconds | Metric::SpeedtestDeleteSeconds => WorkloadName::Speedtest,
            Metric::MixedWriteSeconds | Metric::MixedSelectSeconds => WorkloadName::SqliteMixed,
            Metric::PostmarkSeconds => WorkloadName::Postmark,
            Metric::DbenchMbps | Metric::DbenchMaxLatencyUs => WorkloadName::Dbench,
            Metric::GitCloneSeconds | Metric::GitGcSeconds => WorkloadName::Git,
            Metric::SeqWriteBytesPerSec | Metric::SeqColdReadBytesPerSec => WorkloadName::Seq,
            Metric::PwriteUs
            | Metric::OpenCloseUs
            | Metric::StatMissingUs
            | Metric::PreadCachedUs
            | Metric::StatUs
            | Metric::FsyncAfterWriteUs => WorkloadName::Percall,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Metric::FsyncP50Us => "fsync latency p50",
            Metric::FsyncP99Us => "fsync latency p99",
            Metric::WriteClatP50Us => "write latency p50",
            Metric::WriteClatP99Us => "write latency p99",
            Metric::WriteIops => "4k write+fsync IOPS",
            Metric::SqliteWalTps => "WAL inserts",
            Metric::SqliteDeleteTps => "DELETE inserts",
            Metric::MobifsDeviceBytes => "device bytes written",
            Metric::SeqReadMbps => "cached seq read 1M",
            Metric::RandReadMbps => "cached rand read 4k",
            Metric::PeakRssBytes => "daemon peak RSS",
            Metric::PeakRssWritersBytes => "peak RSS, 48 writers",
            Metric::SpeedtestWalSeconds => "speedtest1, WAL",
            Metric::SpeedtestDeleteSeconds => "speedtest1, DELETE",
            Metric::MixedWriteSeconds => "insert+update transactions",
            Metric::MixedSelectSeconds => "range selects",
            Metric::PostmarkSeconds => "whole run",
            Metric::DbenchMbps => "throughput",
            Metric::DbenchMaxLatencyUs => "max latency",
            Metric::GitCloneSeconds => "clone",
            Metric::GitGcSeconds => "gc",
            Metric::SeqWriteBytesPerSec => "write + fsync",
            Metric::SeqColdReadBytesPerSec => "read, caches dropped",
            Metric::PwriteUs => "pwrite 4k",
            Metric::OpenCloseUs => "open+close",
            Metric::StatMissingUs => "stat, missing name",
            Metric::PreadCachedUs => "pread 4k, cached",
            Metric::StatUs => "stat, existing file",
            Metric::FsyncAfterWriteUs => "fsync after 4k write",
        }
    }

    /// Unit as displayed, and the divisor from the base unit to it.
    fn display_unit(self) -> (&'static str, f64) {
        match self {
            Metric::FsyncP50Us | Metric::FsyncP99Us | Metric::WriteClatP50Us | Metric::WriteClatP99Us => ("us", 1.0),
            Metric::WriteIops => ("IOPS", 1.0),
            Metric::SqliteWalTps | Metric::SqliteDeleteTps => ("tx/s", 1.0),
            Metric::MobifsDeviceBytes | Metric::PeakRssBytes | Metric::PeakRssWritersBytes => ("MiB", MIB),
            Metric::SeqReadMbps | Metric::RandReadMbps | Metric::DbenchMbps => ("MB/s", 1.0),
            Metric::SpeedtestWalSeconds
            | Metric::SpeedtestDeleteSeconds
            | Metric::MixedWriteSeconds
            | Metric::MixedSelectSeconds
            | Metric::PostmarkSeconds
            | Metric::GitCloneSeconds
            | Metric::GitGcSeconds => ("s", 1.0),
            Metric::DbenchMaxLatencyUs => ("ms", 1000.0),
            Metric::SeqWriteBytesPerSec | Metric::SeqColdReadBytesPerSec => ("MiB/s", MIB),
            Metric::PwriteUs
            | Metric::OpenCloseUs
            | Metric::StatMissingUs
            | Metric::PreadCachedUs
            | Metric::StatUs
            | Metric::FsyncAfterWriteUs => ("us", 1.0),
        }
    }

    pub fn unit(self) -> &'static str {
        self.display_unit().0
    }

    /// The value in display units with a precision that suits its size.
    pub fn format(self, value: f64) -> String {
        format_number(value / self.display_unit().1)
    }
}

const MIB: f64 = 1024.0 * 1024.0;

/// About three significant digits (a ratio of 0.253 must not read as the
/// 0.25 it misses); tiny values keep two, so 0.00048 stays visible.
pub fn format_number(v: f64) -> String {
    let magnitude = v.abs();
    if magnitude >= 100.0 {
        format!("{v:.0}")
    } else if magnitude >= 10.0 {
        format!("{v:.1}")
    } else if magnitude >= 1.0 || magnitude == 0.0 || !v.is_finite() {
        format!("{v:.2}")
    } else if magnitude >= 0.1 {
        format!("{v:.3}")
    } else {
        let decimals = (1 - magnitude.log10().floor() as i32).clamp(2, 9) as usize;
        format!("{v:.decimals$}")
    }
}

/// What one workload run on one target yielded.
#[derive(Debug, Default)]
pub struct Outcome {
    pub samples: Vec<(Metric, f64)>,
    /// Context that is not a headline number (sizes, mcfs counters).
    pub extras: serde_json::Map<String, serde_json::Value>,
}

impl Outcome {
    pub fn sample(&mut self, metric: Metric, value: f64) {
        self.samples.push((metric, value));
    }

    pub fn extra(&mut self, key: &str, value: impl Into<serde_json::Value>) {
        self.extras.insert(key.to_string(), value.into());
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cmp {
    AtMost,
    AtLeast,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bound {
    /// `factor` times the same metric on another target.
    Times(f64, TargetKind),
    /// A fixed value in the metric's base unit, with a note on where it comes from.
    Absolute(f64, &'static str),
}

/// One target the issue sets for mcfs.
#[derive(Clone, Debug, PartialEq)]
pub struct Goal {
    pub metric: Metric,
    pub subject: TargetKind,
    pub cmp: Cmp,
    pub bound: Bound,
}

/// How a goal came out; `pass` is None when a value is missing.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Verdict {
    pub metric: Metric,
    pub goal: String,
    /// The subject's value (base unit).
    pub value: Option<f64>,
    /// The bound in the metric's base unit (the reference value times the factor).
    pub bound: Option<f64>,
    /// value / reference value, for relative goals.
    pub ratio: Option<f64>,
    pub pass: Option<bool>,
}

/// The issue's goals; the RSS bound depends on the cache size used.
pub fn goals(rss_cache_bytes: u64) -> Vec<Goal> {
    use Bound::{Absolute, Times};
    use Cmp::{AtLeast, AtMost};
    use TargetKind::{Ext4, FuseFloor, Mcfs, McfsDevFuse, McfsSync, McfsSyncPoint, McfsTpl};
    let goal = |metric, cmp, bound| Goal { metric, subject: Mcfs, cmp, bound };
    // Issue 3: the TPL policy costs at most 5 % of the write path.
    let tpl = |metric| Goal { metric, subject: McfsTpl, cmp: AtLeast, bound: Times(0.95, Mcfs) };
    // Issue 11: sync-point mode at least as fast as ext4 on every real workload.
    let sync_point = |metric, cmp| Goal { metric, subject: McfsSyncPoint, cmp, bound: Times(1.0, Ext4) };
    vec![
        goal(Metric::FsyncP50Us, AtMost, Times(0.5, Ext4)),
        goal(Metric::SqliteWalTps, AtLeast, Times(1.0, Ext4)),
        goal(Metric::SqliteWalTps, AtLeast, Times(3.0, McfsSync)),
        goal(Metric::SqliteDeleteTps, AtLeast, Times(1.0, Ext4)),
        goal(Metric::SqliteDeleteTps, AtLeast, Times(3.0, McfsSync)),
        goal(Metric::MobifsDeviceBytes, AtMost, Times(0.25, Ext4)),
        goal(Metric::SeqReadMbps, AtLeast, Times(0.5, Ext4)),
        goal(Metric::PeakRssBytes, AtMost, Absolute(rss_cache_bytes as f64 + 64.0 * MIB, "cache_size + 64 MiB")),
        goal(Metric::PeakRssWritersBytes, AtMost, Absolute(rss_cache_bytes as f64 + 64.0 * MIB, "cache_size + 64 MiB")),
        tpl(Metric::SqliteWalTps),
        tpl(Metric::SqliteDeleteTps),
        // Issue 11: per request at most 1.1x the write-through FUSE floor,
        // a missing name's stat within 2 us, and over io_uring 1.5x less
        // latency per request than over /dev/fuse (1 / 1.5 = 0.667); the
        // 1 GiB write and read at least 0.8x ext4.
        goal(Metric::PwriteUs, AtMost, Times(1.1, FuseFloor)),
        goal(Metric::StatMissingUs, AtMost, Absolute(2.0, "issue 11")),
        goal(Metric::PwriteUs, AtMost, Times(0.667, McfsDevFuse)),
        goal(Metric::OpenCloseUs, AtMost, Times(0.667, McfsDevFuse)),
        goal(Metric::SeqWriteBytesPerSec, AtLeast, Times(0.8, Ext4)),
        goal(Metric::SeqColdReadBytesPerSec, AtLeast, Times(0.8, Ext4)),
        sync_point(Metric::SpeedtestWalSeconds, AtMost),
        sync_point(Metric::SpeedtestDeleteSeconds, AtMost),
        sync_point(Metric::MixedWriteSeconds, AtMost),
        sync_point(Metric::SqliteWalTps, AtLeast),
        sync_point(Metric::SqliteDeleteTps, AtLeast),
        sync_point(Metric::PostmarkSeconds, AtMost),
        sync_point(Metric::DbenchMbps, AtLeast),
        sync_point(Metric::GitCloneSeconds, AtMost),
    ]
}

impl Goal {
    pub fn describe(&self) -> String {
        let cmp = match self.cmp {
            Cmp::AtMost => "<=",
            Cmp::AtLeast => ">=",
        };
        // The table's goal column is about mcfs; other subjects say who.
        let cmp = match self.subject {
            TargetKind::Mcfs => cmp.to_string(),
            other => format!("{} {cmp}", other.name()),
        };
        match self.bound {
            Bound::Times(factor, reference) => {
                format!("{cmp} {factor}x {}", reference.name())
            }
            Bound::Absolute(limit, why) => {
                format!("{cmp} {} {} ({why})", self.metric.format(limit), self.metric.unit())
            }
        }
    }

    /// `value_of` gives this metric's measured value on a target, if any.
    pub fn evaluate(&self, value_of: impl Fn(TargetKind) -> Option<f64>) -> Verdict {
        let value = value_of(self.subject);
        let (bound, ratio) = match self.bound {
            Bound::Times(factor, reference) => {
                let reference = value_of(reference);
                let ratio = value.zip(reference).filter(|(_, r)| *r > 0.0).map(|(v, r)| v / r);
                (reference.map(|r| r * factor), ratio)
            }
            Bound::Absolute(limit, _) => (Some(limit), None),
        };
        let pass = value.zip(bound).map(|(v, b)| match self.cmp {
            Cmp::AtMost => v <= b,
            Cmp::AtLeast => v >= b,
        });
        Verdict { metric: self.metric, goal: self.describe(), value, bound, ratio, pass }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(pairs: &[(TargetKind, f64)]) -> impl Fn(TargetKind) -> Option<f64> + '_ {
        move |t| pairs.iter().find(|(k, _)| *k == t).map(|(_, v)| *v)
    }

    #[test]
    fn relative_goals_compare_against_the_scaled_reference() {
        let fsync = &goals(64 << 20)[0];
        assert_eq!(fsync.describe(), "<= 0.5x ext4");
        let v = fsync.evaluate(lookup(&[(TargetKind::Ext4, 1000.0), (TargetKind::Mcfs, 400.0)]));
        assert_eq!((v.pass, v.ratio, v.bound), (Some(true), Some(0.4), Some(500.0)));
        let v = fsync.evaluate(lookup(&[(TargetKind::Ext4, 1000.0), (TargetKind::Mcfs, 600.0)]));
        assert_eq!(v.pass, Some(false));
        let wal_vs_sync =
            goals(64 << 20).into_iter().find(|g| g.bound == Bound::Times(3.0, TargetKind::McfsSync)).unwrap();
        let v = wal_vs_sync.evaluate(lookup(&[(TargetKind::McfsSync, 100.0), (TargetKind::Mcfs, 299.0)]));
        assert_eq!(v.pass, Some(false));
    }

    #[test]
    fn missing_values_give_no_verdict_and_no_division_by_zero() {
        let fsync = &goals(64 << 20)[0];
        assert_eq!(fsync.evaluate(lookup(&[(TargetKind::Mcfs, 1.0)])).pass, None);
        assert_eq!(fsync.evaluate(lookup(&[(TargetKind::Ext4, 1.0)])).pass, None);
        let v = fsync.evaluate(lookup(&[(TargetKind::Ext4, 0.0), (TargetKind::Mcfs, 0.0)]));
        assert_eq!((v.pass, v.ratio), (Some(true), None));
    }

    #[test]
    fn issue_11_goals_judge_the_ring_and_sync_point_mode_against_their_references() {
        let all = goals(64 << 20);
        let ring = all
            .iter()
            .find(|g| g.metric == Metric::PwriteUs && g.bound == Bound::Times(0.667, TargetKind::McfsDevFuse))
            .unwrap();
        assert_eq!(ring.describe(), "<= 0.667x mcfs-dev-fuse");
        let faster = ring.evaluate(lookup(&[(TargetKind::Mcfs, 6.0), (TargetKind::McfsDevFuse, 10.0)]));
        assert_eq!(faster.pass, Some(true), "1.67x lower latency over the ring");
        let level = ring.evaluate(lookup(&[(TargetKind::Mcfs, 7.0), (TargetKind::McfsDevFuse, 10.0)]));
        assert_eq!(level.pass, Some(false), "1.43x lower is not 1.5x");
        let dbench = all.iter().find(|g| g.metric == Metric::DbenchMbps).unwrap();
        assert_eq!(dbench.describe(), "mcfs-sync-point >= 1x ext4");
        let slower = dbench.evaluate(lookup(&[(TargetKind::McfsSyncPoint, 400.0), (TargetKind::Ext4, 766.0)]));
        assert_eq!(slower.pass, Some(false));
        let postmark = all.iter().find(|g| g.metric == Metric::PostmarkSeconds).unwrap();
        let quicker = postmark.evaluate(lookup(&[(TargetKind::McfsSyncPoint, 0.3), (TargetKind::Ext4, 0.35)]));
        assert_eq!(quicker.pass, Some(true), "less time than ext4 passes");
        let missing = postmark.evaluate(lookup(&[(TargetKind::Ext4, 0.35)]));
        assert_eq!(missing.pass, None, "no verdict without the subject's run");
    }

    #[test]
    fn rss_goal_is_cache_size_plus_64_mib() {
        let rss = goals(64 << 20).into_iter().find(|g| g.metric == Metric::PeakRssBytes).unwrap();
        assert_eq!(rss.describe(), "<= 128 MiB (cache_size + 64 MiB)");
        assert_eq!(rss.evaluate(lookup(&[(TargetKind::Mcfs, 128.0 * MIB)])).pass, Some(true));
        assert_eq!(rss.evaluate(lookup(&[(TargetKind::Mcfs, 129.0 * MIB)])).pass, Some(false));
    }

    #[test]
    fn every_metric_belongs_to_a_workload_and_has_a_unit() {
        for metric in Metric::ALL {
            assert!(!metric.label().is_empty() && !metric.unit().is_empty(), "{metric:?}");
        }
        assert!(Metric::ALL.windows(2).all(|w| w[0] < w[1]), "ALL lists each metric once, in declaration order");
    }

    #[test]
    fn values_are_shown_in_display_units() {
        assert_eq!(Metric::MobifsDeviceBytes.format(8.0 * MIB), "8.00");
        assert_eq!(Metric::DbenchMaxLatencyUs.format(24_076.0), "24.1");
        assert_eq!(Metric::SeqWriteBytesPerSec.format(512.0 * MIB), "512");
        assert_eq!(Metric::FsyncP50Us.format(1234.4), "1234");
        assert_eq!(format_number(0.2527), "0.253");
        assert_eq!(format_number(2.929), "2.93");
        assert_eq!(format_number(0.055), "0.055");
        assert_eq!(format_number(0.00048), "0.00048");
        assert_eq!(format_number(0.0), "0.00");
        assert_eq!(format_number(12.34), "12.3");
    }
}
