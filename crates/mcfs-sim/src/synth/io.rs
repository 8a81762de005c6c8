//! App I/O profiles: what an app writes, reads and flushes, burst by burst, and when bursts happen.
//!
//! A profile combines the components of `sqlite` and `files` with their parameters, and says when the app
//! does I/O: shortly after some user inputs (loading what the user asked for) and on a background timer
//! (sync, buffering). A profile with phases alternates bursts of hot-set rewriting with bursts of fresh
//! data, which is what gives its e curve a peak. docs/SYNTH.md explains each profile and its source.
//!
//! Invariant: all state of an app's I/O (database size, cached files, stream position) lives in
//! [`AppIo`], so bursts build on each other like one app's life and every operation refers to a file the
//! trace created before (no read of a file that was never written).

use std::ops::RangeInclusive;

use super::files::{Cache, CacheParams, Prefs, PrefsParams, Stream, StreamParams};
use super::sqlite::{Database, DbParams, JournalMode};
use super::timeline::{join, Timeline};
use crate::trace::{EventKind, PathBytes};

pub(crate) struct IoProfile {
    pub name: &'static str,
    pub summary: &'static str,
    pub db: Option<DbParams>,
    pub cache: Option<CacheParams>,
    pub stream: Option<StreamParams>,
    pub prefs: Option<PrefsParams>,
    /// Hot-then-fresh cycles; without them every component may act in every burst.
    pub phases: Option<Phases>,
    /// Chance that a user input starts a burst ...
    pub trigger_per_mille: u32,
    /// ... this many milliseconds after the input ends.
    pub trigger_delay_ms: RangeInclusive<u64>,
    /// Milliseconds between two background bursts, if the app has a timer.
    pub background_gap_ms: Option<RangeInclusive<u64>>,
}

/// Bursts of hot-set rewriting (the database) until `hot_bytes` are written, then bursts of fresh data
/// (cache, stream) until `fresh_bytes` are, and again. Counting bytes, not bursts, gives every cycle the
/// same shape on the s axis whatever the user's pace.
pub(crate) struct Phases {
    pub hot_bytes: u64,
    pub fresh_bytes: u64,
}

const KIB: u64 = 1024;

pub(crate) static IO_PROFILES: [IoProfile; 6] = [
    IoProfile {
        name: "fsync-heavy",
        summary: "Twitter-like: a SQLite timeline database with tens of rollback-journal transactions per \
                  burst (> 50 fsyncs/s while active), plus an image cache",
        db: Some(DbParams {
            file: "timeline.db",
            journal: JournalMode::Delete,
            initial_pages: 128,
            hot_pages: 64,
            hot_per_mille: 600,
            burst_per_mille: 900,
            txns_per_burst: 15..=45,
            pages_per_txn: 1..=2,
            reads_per_txn: 0..=2,
            think_us: 1_000..=8_000,
        }),
        cache: Some(CacheParams {
            dir: "images",
            burst_per_mille: 500,
            files_per_burst: 1..=4,
            file_kib: 4..=128,
            chunk_bytes: 16 * KIB,
            hit_per_mille: 300,
            keep_files: 200,
        }),
        stream: None,
        prefs: Some(PrefsParams { commit_per_mille: 50, file_bytes: 1_024..=4_096 }),
        phases: None,
        trigger_per_mille: 350,
        trigger_delay_ms: 50..=400,
        background_gap_ms: Some(20_000..=60_000),
    },
    IoProfile {
        name: "fsync-moderate",
        summary: "Facebook-like: a few SQLite transactions per burst (a moderate number of fsyncs), an image \
                  cache and occasional preference commits",
        db: Some(DbParams {
            file: "newsfeed.db",
            journal: JournalMode::Delete,
            initial_pages: 256,
            hot_pages: 96,
            hot_per_mille: 700,
            burst_per_mille: 700,
            txns_per_burst: 1..=4,
            pages_per_txn: 1..=4,
            reads_per_txn: 1..=4,
            think_us: 40_000..=200_000,
        }),
        cache: Some(CacheParams {
            dir: "images",
            burst_per_mille: 800,
            files_per_burst: 1..=6,
            file_kib: 8..=256,
            chunk_bytes: 16 * KIB,
            hit_per_mille: 400,
            keep_files: 300,
        }),
        stream: None,
        prefs: Some(PrefsParams { commit_per_mille: 60, file_bytes: 1_024..=8_192 }),
        phases: None,
        trigger_per_mille: 400,
        trigger_delay_ms: 50..=400,
        background_gap_ms: Some(30_000..=90_000),
    },
    IoProfile {
        name: "fsync-light",
        summary: "Browser-like: web objects written once into cache files and read back on hits; a cookie \
                  database touched so rarely that fsync almost never happens",
        db: Some(DbParams {
            file: "webview.db",
            journal: JournalMode::Delete,
            initial_pages: 32,
            hot_pages: 16,
            hot_per_mille: 800,
            burst_per_mille: 15,
            txns_per_burst: 1..=1,
            pages_per_txn: 1..=2,
            reads_per_txn: 0..=1,
            think_us: 1_000..=5_000,
        }),
        cache: Some(CacheParams {
            dir: "webviewCache",
            burst_per_mille: 950,
            files_per_burst: 2..=12,
            file_kib: 2..=256,
            chunk_bytes: 8 * KIB,
            hit_per_mille: 350,
            keep_files: 400,
        }),
        stream: None,
        prefs: None,
        phases: None,
        trigger_per_mille: 500,
        trigger_delay_ms: 50..=300,
        background_gap_ms: None,
    },
    IoProfile {
        name: "e-peak",
        summary: "game- or map-like: bursts rewriting a small hot set (saved state, visible tiles) alternate \
                  with bursts of fresh downloads, so e = o/s rises, peaks and falls",
        db: Some(DbParams {
            file: "state.db",
            journal: JournalMode::Persist,
            initial_pages: 48,
            hot_pages: 32,
            hot_per_mille: 1000,
            burst_per_mille: 1000,
            txns_per_burst: 2..=6,
            pages_per_txn: 2..=6,
            reads_per_txn: 0..=2,
            think_us: 5_000..=30_000,
        }),
        cache: Some(CacheParams {
            dir: "assets",
            burst_per_mille: 1000,
            files_per_burst: 2..=5,
            file_kib: 32..=512,
            chunk_bytes: 32 * KIB,
            hit_per_mille: 100,
            keep_files: 100,
        }),
        stream: None,
        prefs: None,
        phases: Some(Phases { hot_bytes: 768 * KIB, fresh_bytes: 4 * 1024 * KIB }),
        trigger_per_mille: 300,
        trigger_delay_ms: 50..=400,
        background_gap_ms: Some(15_000..=45_000),
    },
    IoProfile {
        name: "e-plateau",
        summary: "chat-like: a database whose hot pages (and persistent journal) are rewritten all the time, \
                  so e = o/s rises and stays high",
        db: Some(DbParams {
            file: "messages.db",
            journal: JournalMode::Persist,
            initial_pages: 64,
            hot_pages: 48,
            hot_per_mille: 950,
            burst_per_mille: 1000,
            txns_per_burst: 1..=4,
            pages_per_txn: 1..=4,
            reads_per_txn: 1..=3,
            think_us: 5_000..=40_000,
        }),
        cache: None,
        stream: None,
        prefs: Some(PrefsParams { commit_per_mille: 20, file_bytes: 512..=2_048 }),
        phases: None,
        trigger_per_mille: 500,
        trigger_delay_ms: 50..=400,
        background_gap_ms: Some(10_000..=40_000),
    },
    IoProfile {
        name: "e-flat",
        summary: "streaming-like: media buffered by appending to segment files on a timer, a few cover images; \
                  nothing is rewritten, so e = o/s stays near 0",
        db: None,
        cache: Some(CacheParams {
            dir: "artwork",
            burst_per_mille: 150,
            files_per_burst: 1..=2,
            file_kib: 16..=128,
            chunk_bytes: 16 * KIB,
            hit_per_mille: 200,
            keep_files: 100,
        }),
        stream: Some(StreamParams {
            dir: "media",
            burst_kib: 128..=1_024,
            chunk_bytes: 64 * KIB,
            file_bytes: 4 * 1024 * KIB,
            keep_files: 8,
        }),
        prefs: Some(PrefsParams { commit_per_mille: 10, file_bytes: 512..=2_048 }),
        phases: None,
        trigger_per_mille: 200,
        trigger_delay_ms: 50..=300,
        background_gap_ms: Some(4_000..=10_000),
    },
];

pub(crate) fn io_profile(name: &str) -> Option<&'static IoProfile> {
    IO_PROFILES.iter().find(|p| p.name == name)
}

/// One app's files and where its I/O stands.
pub(crate) struct AppIo {
    profile: &'static IoProfile,
    app_dir: PathBytes,
    db: Option<Database>,
    cache: Option<Cache>,
    stream: Option<Stream>,
    prefs: Option<Prefs>,
    /// Whether the app is in the hot phase of its cycle, and the bytes written in the phase so far.
    hot_phase: bool,
    phase_bytes: u64,
}

impl AppIo {
    pub(crate) fn new(profile: &'static IoProfile, app: &str) -> AppIo {
        let app_dir = join(b"/data/data", app);
        let cache_dir = join(&app_dir, "cache");
        AppIo {
            profile,
            db: profile.db.as_ref().map(|p| Database::new(p, &join(&app_dir, "databases"))),
            cache: profile.cache.as_ref().map(|p| Cache::new(p, &cache_dir)),
            stream: profile.stream.as_ref().map(|p| Stream::new(p, &cache_dir)),
            prefs: profile.prefs.as_ref().map(|p| Prefs::new(p, &join(&app_dir, "shared_prefs"), app)),
            app_dir,
            hot_phase: true,
            phase_bytes: 0,
        }
    }

    /// The first run: the app's directories, its database and its preferences.
    pub(crate) fn launch(&mut self, tl: &mut Timeline) {
        let mut dirs = vec![self.app_dir.clone()];
        if self.db.is_some() {
            dirs.push(join(&self.app_dir, "databases"));
        }
        if self.prefs.is_some() {
            dirs.push(join(&self.app_dir, "shared_prefs"));
        }
        if self.cache.is_some() || self.stream.is_some() {
            dirs.push(join(&self.app_dir, "cache"));
        }
        dirs.extend(self.cache.iter().map(|c| c.dir().clone()));
        dirs.extend(self.stream.iter().map(|s| s.dir().clone()));
        for dir in dirs {
            tl.call(EventKind::Mkdir { path: dir });
        }
        if let Some(db) = &mut self.db {
            db.create(tl);
        }
        if let Some(prefs) = &mut self.prefs {
            prefs.commit(tl);
        }
    }

    /// One burst of I/O at the timeline's cursor.
    pub(crate) fn burst(&mut self, tl: &mut Timeline) {
        let (hot, fresh) = match self.profile.phases {
            Some(_) => (self.hot_phase, !self.hot_phase),
            None => (true, true),
        };
        let written_before = tl.written_bytes();
        if fresh {
            if let Some(cache) = &mut self.cache {
                cache.burst(tl);
            }
            if let Some(stream) = &mut self.stream {
                stream.burst(tl);
            }
        }
        if hot {
            if let Some(db) = &mut self.db {
                db.burst(tl);
            }
            if let Some(prefs) = &mut self.prefs {
                prefs.burst(tl);
            }
        }
        if let Some(phases) = &self.profile.phases {
            self.phase_bytes += tl.written_bytes() - written_before;
            let target = if self.hot_phase { phases.hot_bytes } else { phases.fresh_bytes };
            if self.phase_bytes >= target {
                self.hot_phase = !self.hot_phase;
                self.phase_bytes = 0;
            }
        }
    }
}
