//! The plain-file habits of apps: a cache of downloaded objects (images, pages), a media stream buffered
//! to files, and Android's SharedPreferences commits.
//!
//! Invariant: cache and stream files are written once, front to back, and never rewritten (fresh data,
//! e = 0); only the preferences file is rewritten, through the rename-to-backup protocol Android uses, so
//! a replay sees a rename, a create, a write, an fsync and an unlink in that order.

use std::collections::VecDeque;
use std::ops::RangeInclusive;

use super::timeline::{join, Timeline};
use crate::trace::{EventKind, PathBytes};

/// Microseconds between two chunks of one download (the network delivering the next piece).
const CHUNK_GAP_US: RangeInclusive<u64> = 200..=3_000;
/// Microseconds between two files of one burst.
const FILE_GAP_US: RangeInclusive<u64> = 1_000..=20_000;

#[derive(Debug, Clone)]
pub(crate) struct CacheParams {
    /// Directory under `cache/`.
    pub dir: &'static str,
    /// Chance that a burst touches the cache at all.
    pub burst_per_mille: u32,
    pub files_per_burst: RangeInclusive<u64>,
    /// Size of one object, in KiB (drawn log-uniformly: many small, few large).
    pub file_kib: RangeInclusive<u64>,
    pub chunk_bytes: u64,
    /// Chance that an object of the burst is a cache hit (read back) rather than a download.
    pub hit_per_mille: u32,
    /// Objects kept; the oldest is unlinked beyond that (LRU eviction).
    pub keep_files: usize,
}

pub(crate) struct Cache {
    params: &'static CacheParams,
    dir: PathBytes,
    next_id: u64,
    /// Cached objects, oldest first, with their sizes.
    files: VecDeque<(PathBytes, u64)>,
}

impl Cache {
    pub(crate) fn new(params: &'static CacheParams, cache_dir: &[u8]) -> Cache {
        Cache { params, dir: join(cache_dir, params.dir), next_id: 0, files: VecDeque::new() }
    }

    pub(crate) fn dir(&self) -> &PathBytes {
        &self.dir
    }

    pub(crate) fn burst(&mut self, tl: &mut Timeline) {
        if !tl.rng.chance(self.params.burst_per_mille) {
            return;
        }
        for _ in 0..tl.rng.uniform(&self.params.files_per_burst) {
            if !self.files.is_empty() && tl.rng.chance(self.params.hit_per_mille) {
                self.read_back(tl);
            } else {
                self.download(tl);
            }
            tl.think(&FILE_GAP_US);
        }
    }

    fn download(&mut self, tl: &mut Timeline) {
        let path = join(&self.dir, &format!("{:08x}.0", self.next_id));
        self.next_id += 1;
        let size = tl.rng.spread(&self.params.file_kib) * 1024;
        tl.call(EventKind::Create { path: path.clone() });
        write_sequentially(tl, &path, 0, size, self.params.chunk_bytes);
        tl.call(EventKind::Close { path: path.clone() });
        self.files.push_back((path, size));
        while self.files.len() > self.params.keep_files {
            let Some((old, _)) = self.files.pop_front() else { break };
            tl.call(EventKind::Unlink { path: old });
        }
    }

    fn read_back(&mut self, tl: &mut Timeline) {
        let (path, size) = self.files[tl.rng.below(self.files.len() as u64) as usize].clone();
        tl.call(EventKind::Open { path: path.clone() });
        let mut offset = 0;
        while offset < size {
            let len = self.params.chunk_bytes.min(size - offset);
            tl.read(&path, offset, len);
            offset += len;
        }
        tl.call(EventKind::Close { path });
    }
}

#[derive(Debug, Clone)]
pub(crate) struct StreamParams {
    /// Directory under `cache/`.
    pub dir: &'static str,
    /// Bytes buffered per burst, in KiB.
    pub burst_kib: RangeInclusive<u64>,
    pub chunk_bytes: u64,
    /// A buffer file is closed and a new one started at this size.
    pub file_bytes: u64,
    /// Finished buffer files kept; older ones are unlinked.
    pub keep_files: usize,
}

pub(crate) struct Stream {
    params: &'static StreamParams,
    dir: PathBytes,
    next_id: u64,
    /// The file being filled and its size so far.
    current: Option<(PathBytes, u64)>,
    finished: VecDeque<PathBytes>,
}

impl Stream {
    pub(crate) fn new(params: &'static StreamParams, cache_dir: &[u8]) -> Stream {
        Stream { params, dir: join(cache_dir, params.dir), next_id: 0, current: None, finished: VecDeque::new() }
    }

    pub(crate) fn dir(&self) -> &PathBytes {
        &self.dir
    }

    pub(crate) fn burst(&mut self, tl: &mut Timeline) {
        let mut left = tl.rng.spread(&self.params.burst_kib) * 1024;
        while left > 0 {
            let (path, size) = match self.current.take() {
                Some(current) => current,
                None => {
                    let path = join(&self.dir, &format!("segment{:05}.buf", self.next_id));
                    self.next_id += 1;
                    tl.call(EventKind::Create { path: path.clone() });
                    (path, 0)
                }
            };
            let len = left.min(self.params.file_bytes - size);
            write_sequentially(tl, &path, size, len, self.params.chunk_bytes);
            left -= len;
            if size + len < self.params.file_bytes {
                self.current = Some((path, size + len));
            } else {
                tl.call(EventKind::Close { path: path.clone() });
                self.finished.push_back(path);
                while self.finished.len() > self.params.keep_files {
                    let Some(old) = self.finished.pop_front() else { break };
                    tl.call(EventKind::Unlink { path: old });
                }
            }
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct PrefsParams {
    /// Chance that a burst commits the preferences.
    pub commit_per_mille: u32,
    pub file_bytes: RangeInclusive<u64>,
}

pub(crate) struct Prefs {
    params: &'static PrefsParams,
    path: PathBytes,
    backup: PathBytes,
    exists: bool,
}

impl Prefs {
    pub(crate) fn new(params: &'static PrefsParams, prefs_dir: &[u8], app: &str) -> Prefs {
        let path = join(prefs_dir, &format!("{app}_preferences.xml"));
        let backup = [&path[..], b".bak"].concat().into();
        Prefs { params, path, backup, exists: false }
    }

    pub(crate) fn burst(&mut self, tl: &mut Timeline) {
        if tl.rng.chance(self.params.commit_per_mille) {
            self.commit(tl);
        }
    }

    /// Android's commit: keep the old file as `.bak`, write and fsync the new one, then drop the backup.
    pub(crate) fn commit(&mut self, tl: &mut Timeline) {
        if self.exists {
            tl.call(EventKind::Rename { from: self.path.clone(), to: self.backup.clone() });
        }
        tl.call(EventKind::Create { path: self.path.clone() });
        let size = tl.rng.uniform(&self.params.file_bytes);
        tl.write(&self.path, 0, size);
        tl.call(EventKind::Fsync { path: self.path.clone() });
        tl.call(EventKind::Close { path: self.path.clone() });
        if self.exists {
            tl.call(EventKind::Unlink { path: self.backup.clone() });
        }
        self.exists = true;
    }
}

/// Writes `len` bytes at `offset` in chunks, as data arrives from the network.
fn write_sequentially(tl: &mut Timeline, path: &PathBytes, offset: u64, len: u64, chunk_bytes: u64) {
    let mut done = 0;
    while done < len {
        let piece = chunk_bytes.max(1).min(len - done);
        tl.write(path, offset + done, piece);
        done += piece;
        tl.think(&CHUNK_GAP_US);
    }
}
