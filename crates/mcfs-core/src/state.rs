//! The engine's in-memory state behind its one lock: live inodes, the page
//! cache, the apps with their open VCTs, and the queue of closed VCTs waiting
//! for the checkpointer (oldest first, across apps).
//!
//! Invariant: every cross-app dependency points from a later VCT to an
//! earlier one and is recorded. When an app's operation touches an inode
//! another app changed in its still-open VCT, that VCT is closed first; the
//! app's open VCT lists every uncommitted VCT of another app it built on
//! (`OpenVct::deps`), so any commit order that keeps dependencies first —
//! FIFO, or the scheduler's batches (`batch_selection`) — is consistent.

use crate::app_status::{AppStatus, IoClass};
use crate::apps::Apps;
use crate::backend::{Backend, BackendAttr, KnownContent};
use crate::backlog::{JournaledEntry, JournaledVct};
use crate::cache::Cache;
use crate::children::Children;
use crate::committed::{Committed, Moving};
use crate::config::{Config, Periods, SyncMode};
use crate::inode::Inode;
use crate::space::Space;
use crate::split_writes::SplitWrites;
use crate::types::*;
use crate::vct::{AppId, ClosedEntry, ClosedVct, LogEntry};
use crate::STATE_DIR;
use parking_lot::RwLock;
use std::collections::{HashMap, VecDeque};
use std::ffi::OsStr;
use std::path::PathBuf;
use std::time::SystemTime;

pub struct State {
    pub config: Config,
    /// `config`'s periods as `Duration`s.
    pub periods: Periods,
    pub inodes: InoMap<Inode>,
    next_ino: Ino,
    next_vct: u64,
    pub cache: Cache,
    pub apps: Apps,
    pub closed: VecDeque<ClosedVct>,
    pub battery: Option<u8>,
    /// Inodes dropped while kept as orphans in the backing store.
    pub dead_orphans: Vec<DeadOrphan>,
    /// Engine inodes of backing objects with several names, by backing
    /// inode number, so every name of a hard-linked file finds one inode.
    linked: HashMap<u64, Ino>,
    /// The foreground app (FastTrack's app status detector).
    pub status: AppStatus,
    /// The foreground app wrote past background apps' dirty pages: the
    /// background thread owes a checkpoint of them (`Trigger::Background`).
    pub background_commit_owed: bool,
    /// `write(2)`s the kernel split whose rest may still come (`split_writes`).
    pub split_writes: SplitWrites,
    /// Backing space reserved for what is accepted and not committed (`space`).
    pub space: Space,
}

/// What loading from the backing store needs.
pub struct Store<'a> {
    pub backend: &'a dyn Backend,
    pub tree: &'a RwLock<Committed>,
}

impl Store<'_> {
    /// The backing path to read an inode from; waits while a checkpoint in
    /// flight moves it (see `committed`).
    pub fn stable_path(&self, ino: Ino) -> FsResult<Option<PathBuf>> {
        loop {
            match self.tree.read().stable_path(ino) {
                Ok(path) => return Ok(path),
                Err(Moving) => std::thread::sleep(std::time::Duration::from_millis(1)),
            }
        }
    }
}

impl State {
    /// The engine's state; its cache keeps pages of the store's `known`
    /// content without their bytes (`Cache::new`).
    pub fn new(config: Config, root: Inode, known: Option<KnownContent>) -> State {
        let apps = Apps::new(&config);
        let cache = Cache::new(&config, known);
        let mut state = State {
            periods: Periods::of(&config),
            config,
            inodes: InoMap::default(),
            next_ino: ROOT_INO + 1,
            next_vct: 1,
            cache,
            apps,
            closed: VecDeque::new(),
            battery: None,
            dead_orphans: Vec::new(),
            linked: HashMap::new(),
            status: AppStatus::default(),
            background_commit_owed: false,
            split_writes: SplitWrites::default(),
            space: Space::default(),
        };
        state.inodes.insert(ROOT_INO, root);
        for app in 0..state.apps.list.len() {
            state.apps.list[app].open.id = state.take_vct_id();
        }
        state
    }

    fn take_vct_id(&mut self) -> u64 {
        self.next_vct += 1;
        self.next_vct
    }

    pub fn app_of_uid(&mut self, uid: u32) -> AppId {
        let known = self.apps.list.len();
        let app = self.apps.of_uid(uid);
        if app >= known {
            self.apps.list[app].open.id = self.take_vct_id();
        }
        app
    }

    /// The class of `app`'s I/O now: foreground, background or system.
    pub fn io_class(&self, app: AppId) -> IoClass {
        self.status.class_of(app, self.apps.list[app].system)
    }

    /// The app on whose behalf the calling thread works: the uid of the
    /// admitted request (see `dispatch`), else the owner of `ino`.
    pub fn accessor(&mut self, ino: Ino) -> FsResult<AppId> {
        match crate::dispatch::current().and_then(|w| w.uid) {
            Some(uid) => Ok(self.app_of_uid(uid)),
            None => Ok(self.inode(ino)?.app),
        }
    }

    pub fn app_by_name(&mut self, name: &str) -> Option<AppId> {
        let known = self.apps.list.len();
        let app = self.apps.by_name(name)?;
        if app >= known {
            self.apps.list[app].open.id = self.take_vct_id();
        }
        Some(app)
    }

    pub fn low_battery(&self) -> bool {
        self.battery.is_some_and(|b| b < self.config.low_battery_percent)
    }

    pub fn mode_of(&self, app: AppId) -> SyncMode {
        let app = &self.apps.list[app];
        if self.low_battery() || app.policy.fsync_durable() {
            return SyncMode::Sync;
        }
        app.mode.unwrap_or(self.config.mode)
    }

    pub fn inode(&self, ino: Ino) -> FsResult<&Inode> {
        self.inodes.get(&ino).ok_or(Errno::ENOENT)
    }

    pub fn inode_mut(&mut self, ino: Ino) -> FsResult<&mut Inode> {
        self.inodes.get_mut(&ino).ok_or(Errno::ENOENT)
    }

    pub fn new_ino(&mut self) -> Ino {
        self.next_ino += 1;
        self.next_ino - 1
    }

    /// Makes sure a directory's children are in memory, loading them from
    /// the backing store the first time.
    pub fn load_dir(&mut self, store: &Store, dir: Ino) -> FsResult<()> {
        let inode = self.inode(dir)?;
        if inode.attr.kind != FileKind::Dir {
            return Err(Errno::ENOTDIR);
        }
        if inode.children.is_some() {
            return Ok(());
        }
        let path = store.stable_path(dir)?.ok_or(Errno::EIO)?;
        let mut tree = store.tree.write();
        let listing = store.backend.list_dir(&path)?;
        let mut children = Children::default();
        for (name, _) in listing {
            if dir == ROOT_INO && name == STATE_DIR {
                continue;
            }
            let attr = match store.backend.stat(&path.join(&name)) {
                Ok(a) => a,
                Err(e) if crate::backend::is_not_found(&e) => continue,
                Err(e) => return Err(e.into()),
            };
            if let Some(&known) = self.linked.get(&attr.ino).filter(|_| attr.nlink > 1 && attr.kind != FileKind::Dir) {
                if self.inodes.get(&known).is_some_and(|i| i.attr.kind == attr.kind) {
                    tree.add_link(known, dir, &name);
                    children.insert(&name, known);
                    continue;
                }
            }
            let ino = self.new_ino();
            if attr.nlink > 1 && attr.kind != FileKind::Dir {
                self.linked.insert(attr.ino, ino);
            }
            let app = self.app_of_uid(attr.uid);
            let mut child = Inode::new(attr_from_backend(ino, &attr), app, dir);
            if child.attr.kind == FileKind::Dir {
                child.children = None;
            }
            if child.attr.kind == FileKind::Symlink {
                child.symlink_target = Some(store.backend.read_link(&path.join(&name))?);
            }
            tree.add_link(ino, dir, &name);
            self.inodes.insert(ino, child);
            children.insert(&name, ino);
        }
        self.inode_mut(dir)?.children = Some(children);
        Ok(())
    }

    /// Looks up a name, loading the directory if needed.
    pub fn find(&mut self, store: &Store, parent: Ino, name: &OsStr) -> FsResult<Option<Ino>> {
        self.load_dir(store, parent)?;
        Ok(self.inode(parent)?.child(name))
    }

    /// Appends a metadata entry to `app`'s open VCT. `touched` are the inodes
    /// whose state the entry depends on or changes.
    pub fn log(&mut self, app: AppId, entry: LogEntry, touched: &[Ino], now: SystemTime) {
        self.close_conflicting(app, touched);
        if entry.changes_names() {
            self.depend_on_moved_ancestors(app, touched);
        }
        let vct = self.apps.list[app].open.id;
        for ino in touched {
            if let Some(i) = self.inodes.get_mut(ino) {
                i.last_change = Some((app, vct));
            }
        }
        if let LogEntry::Rename { ino, .. } = &entry {
            self.note_move(app, *ino);
        }
        self.reserve_object(&entry);
        self.apps.recording(app).record(entry, now);
        crate::sync_points::after_changing_other_apps(self, app, touched);
    }

    /// Closes the open VCT of any other app that changed one of `touched`,
    /// and makes `app`'s open VCT depend on every uncommitted VCT of another
    /// app that changed one (so the checkpointer never commits it first).
    pub fn close_conflicting(&mut self, app: AppId, touched: &[Ino]) {
        for ino in touched {
            let Some((other, vct)) = self.inodes.get(ino).and_then(|i| i.last_change) else { continue };
            if other == app {
                continue;
            }
            if self.apps.list[other].open.id == vct {
                self.close_vct(other);
            }
            if self.closed.iter().any(|v| v.id == vct) {
                self.apps.list[app].open.deps.insert(vct);
            }
        }
    }

    /// `app`'s open VCT moves `ino` (a rename or an exchange).
    pub fn note_move(&mut self, app: AppId, ino: Ino) {
        let vct = self.apps.list[app].open.id;
        if let Some(i) = self.inodes.get_mut(&ino) {
            i.last_move = Some((app, vct));
        }
    }

    /// A name made or removed below a directory another app moved in a VCT
    /// not committed yet was found through that move: `app`'s VCT depends
    /// on it (and it closes, if open), so the name never reaches the backing
    /// store in a place that exists only after the move.
    fn depend_on_moved_ancestors(&mut self, app: AppId, touched: &[Ino]) {
        let mut moves = Vec::new();
        for &ino in touched {
            let mut at = self.inodes.get(&ino).map(|i| i.parent);
            while let Some(dir) = at.filter(|d| *d != ROOT_INO) {
                let Some(inode) = self.inodes.get(&dir) else { break };
                moves.extend(inode.last_move.filter(|(other, _)| *other != app));
                at = Some(inode.parent);
            }
        }
        for (other, vct) in moves {
            if self.apps.list[other].open.id == vct {
                self.close_vct(other);
            }
            if self.closed.iter().any(|v| v.id == vct) {
                self.apps.list[app].open.deps.insert(vct);
            }
        }
    }

    /// Closes `app`'s open VCT: snapshots each page it wrote (later writes
    /// copy the page), logs the final times of what it changed, and queues it
    /// for the checkpointer.
    pub fn close_vct(&mut self, app: AppId) {
        if self.apps.list[app].open.is_empty() {
            return;
        }
        let next_id = self.take_vct_id();
        let open = &mut self.apps.list[app].open;
        let (id, bytes, first_entry_at) = (open.id, open.bytes, open.first_entry_at);
        let deps = open.deps.iter().copied().collect();
        let mut closed = Vec::with_capacity(open.closed_len_bound());
        // Writes come in runs of one file's pages: its size is looked up once a run.
        let mut last_size: Option<(Ino, Option<u64>)> = None;
        let (inodes, cache) = (&self.inodes, &mut self.cache);
        let changed = open.take(|e| match e {
            LogEntry::Write { ino, page } => {
                let size = match last_size {
                    Some((last, size)) if last == ino => size,
                    _ => last_size.insert((ino, inodes.get(&ino).map(|i| i.attr.size))).1,
                };
                let Some(size) = size else { return };
                let len = size.saturating_sub(page * PAGE_SIZE).min(PAGE_SIZE) as usize;
                let Some((slot, data)) = cache.freeze(ino, page) else { return };
                closed.push(ClosedEntry::Write { ino, page, slot, data, len });
            }
            other => closed.push(ClosedEntry::Other(other)),
        });
        open.id = next_id;
        for ino in changed {
            if let Some(i) = self.inodes.get(&ino) {
                let (atime, mtime) = (i.attr.atime, i.attr.mtime);
                closed.push(ClosedEntry::Other(LogEntry::SetTimes { ino, atime, mtime }));
            }
        }
        self.apps.list[app].counters.vcts_closed += 1;
        // Moved from the open VCT: the apps' total at risk stays.
        self.apps.list[app].closed_bytes += bytes;
        self.closed.push_back(ClosedVct { app, id, entries: closed, bytes, first_entry_at, deps, age: 0 });
    }

    /// Takes the closed VCTs `chosen` picks out of the queue (oldest first) for a checkpoint.
    pub fn take_closed(&mut self, chosen: impl Fn(&ClosedVct) -> bool) -> Vec<ClosedVct> {
        let (batch, waiting): (VecDeque<ClosedVct>, _) = self.closed.drain(..).partition(|v| chosen(v));
        self.closed = waiting;
        for v in &batch {
            self.apps.closed_less(v.app, v.bytes);
        }
        batch.into()
    }

    /// Puts a batch that could not be committed back at the front of the queue.
    pub fn requeue_closed(&mut self, batch: Vec<ClosedVct>) {
        for vct in batch.into_iter().rev() {
            self.apps.closed_more(vct.app, vct.bytes);
            self.closed.push_front(vct);
        }
    }

    pub fn close_all(&mut self) {
        for app in 0..self.apps.list.len() {
            self.close_vct(app);
        }
    }

    /// Closes every open VCT but the one of the app reclaim spares (the
    /// foreground app under FastTrack PR): background data goes first.
    pub fn close_all_but_spared(&mut self) {
        let spared = self.reclaim_spares();
        for app in (0..self.apps.list.len()).filter(|a| Some(*a) != spared) {
            self.close_vct(app);
        }
    }

    /// Bookkeeping once a batch of VCTs is durable in the journal (its
    /// commit record synced): its apps' data is committed, and what they
    /// flushed for it (`flushed`, shared by VCT size) is counted.
    pub fn journaled(&mut self, batch: &[ClosedVct], flushed: u64, now: SystemTime) {
        self.count_flushed(batch.iter().map(|v| (v.app, v.bytes)), flushed);
        let mut apps: Vec<AppId> = batch.iter().map(|v| v.app).collect();
        apps.sort_unstable();
        apps.dedup();
        for vct in batch {
            self.apps.list[vct.app].counters.vcts_committed += 1;
        }
        for app in apps {
            self.apps.list[app].metrics.intervals.checkpointed(now);
            self.note_staleness(app, now);
        }
    }

    /// Shares `flushed` bytes among the batch's apps by VCT size (the
    /// batch's VCTs as their apps and sizes).
    fn count_flushed(&mut self, vcts: impl Iterator<Item = (AppId, u64)> + Clone, flushed: u64) {
        let total: u64 = vcts.clone().map(|(_, bytes)| bytes).sum::<u64>().max(1);
        for (app, bytes) in vcts {
            let share = u128::from(flushed) * u128::from(bytes) / u128::from(total);
            self.apps.list[app].counters.bytes_flushed += share as u64;
        }
    }

    /// Bookkeeping once a journaled batch is applied in place (`flushed`
    /// bytes for it): its pages become clean, its truncates, punched holes
    /// and zeroed ranges stop hiding backing data.
    pub fn committed(&mut self, batch: Vec<JournaledVct>, flushed: u64, tree: &RwLock<Committed>) {
        self.space.changed();
        self.count_flushed(batch.iter().map(|v| (v.app, v.bytes)), flushed);
        let mut touched = Vec::new();
        for vct in batch {
            for e in vct.entries {
                match e {
                    JournaledEntry::Page { ino, page, slot, len } => {
                        let known = self.committed_page(ino, page, len);
                        self.cache.unpin(ino, page, slot);
                        // A run of one file's pages names it once (as `dedup` below would leave it).
                        if known && touched.last() != Some(&ino) {
                            touched.push(ino);
                        }
                    }
                    JournaledEntry::Other(LogEntry::SetLen { ino, size }) => {
                        self.committed_entry(&LogEntry::SetLen { ino, size });
                        if let Some(inode) = self.inodes.get_mut(&ino) {
                            inode.pending_truncates.retain(|(v, _)| *v != vct.id);
                            inode.backing_valid_len =
                                inode.pending_truncates.iter().map(|(_, s)| *s).min().unwrap_or(u64::MAX);
                        }
                    }
                    JournaledEntry::Other(LogEntry::Fallocate { ino, mode, offset, len }) => {
                        self.committed_entry(&LogEntry::Fallocate { ino, mode, offset, len });
                        if let Some(inode) = self.inodes.get_mut(&ino) {
                            inode.pending_zeroed.retain(|(v, _)| *v != vct.id);
                        }
                    }
                    JournaledEntry::Other(e) => self.committed_entry(&e),
                }
            }
        }
        touched.dedup();
        for ino in touched {
            self.drop_if_unreferenced(ino, tree);
        }
        self.reclaim_committed();
    }

    /// Records the app's bytes at risk from `now` on (after a write or a commit).
    pub fn note_staleness(&mut self, app: AppId, now: SystemTime) {
        let bytes = crate::checkpoint::stale_bytes(self, app);
        self.apps.list[app].metrics.staleness.set(now, bytes);
    }

    /// Forgets an inode nothing refers to any more.
    pub fn drop_if_unreferenced(&mut self, ino: Ino, tree: &RwLock<Committed>) {
        let Some(inode) = self.inodes.get(&ino) else { return };
        // Pages pinned for a VCT go too: nothing can read them any more, a
        // commit writes the versions it took at close, and the apply the
        // data the journal's ops hold (a VCT that closes later skips them).
        if ino == ROOT_INO || !inode.unreferenced() {
            return;
        }
        let last_change = inode.last_change;
        self.release_pages(ino, 0..u64::MAX);
        self.inodes.remove(&ino);
        self.cache.remove_from(ino, 0);
        if tree.read().latest().is_orphan(ino) {
            self.dead_orphans.push(DeadOrphan { ino, last_change });
        }
    }

    /// Whether the VCT of `change` (an inode's `last_change`) is not
    /// committed yet: still some app's open VCT, or closed and waiting.
    pub fn change_pending(&self, change: Option<(AppId, u64)>) -> bool {
        change.is_some_and(|(app, vct)| self.apps.list[app].open.id == vct || self.closed.iter().any(|v| v.id == vct))
    }
}

/// An inode dropped while the backing store keeps it as an orphan. Its
/// orphan may go once the VCT of its last change committed and was applied:
/// that VCT's ops may still name the orphan (a link of a file made with
/// `O_TMPFILE` to a name, then renamed, truncated and unlinked, all in one
/// VCT: deleting the orphan first had the replay's truncate, by path, hit the
/// file the rename replaced).
pub struct DeadOrphan {
    pub ino: Ino,
    pub last_change: Option<(AppId, u64)>,
}

pub fn attr_from_backend(ino: Ino, a: &BackendAttr) -> Attr {
    Attr {
        ino,
        kind: a.kind,
        perm: a.perm,
        nlink: a.nlink,
        uid: a.uid,
        gid: a.gid,
        size: a.size,
        rdev: a.rdev,
        atime: a.atime,
        mtime: a.mtime,
        ctime: a.ctime,
        blocks: a.blocks,
    }
}
