//! Sync-point consistency (`consistency = "sync-point"`, docs/ENGINE.md).
//!
//! With the kernel's writeback cache, an app's writes reach the engine late
//! and in no particular order, so a VCT boundary between two of its sync
//! points could hold any mix of them. In this mode the transactioning
//! policy is asked only at the app's sync points (fsync, fdatasync,
//! fsyncdir, rename, unlink, rmdir, link), after the FUSE adapter had the
//! kernel hand over every dirty page of the app's files: a VCT closed there
//! holds exactly what the app did before it. Between sync points only the
//! hard limits close a VCT (bounded staleness and memory), the documented
//! exception.
//!
//! Apps that share files and directories need two more rules, or a kernel
//! writeback of one app's file could close another app's VCT halfway
//! between its sync points (a dependency, `State::close_conflicting`), and
//! nothing can be handed over in the middle of a writeback:
//!
//! * an operation of an app that changes another app's file, or that
//!   would close another app's open VCT, comes after the kernel handed over
//!   every dirty page (the FUSE adapter asks `touches_other_apps` first),
//!   and
//! * the app's VCT closes right after it changed another app's file
//!   (`after_changing_other_apps`), so no open VCT is ever the last change
//!   of another app's file, and a writeback never closes one.
//!
//! A SETATTR of only the times is neither: with the writeback cache the
//! kernel sends one with each writeback of a file (from whichever process
//! writes back, possibly inside an unlink that holds the file's writeback
//! lock, so it must never wait for a handover), and it is logged in the
//! file's app like the data it comes with (`times_go_with_the_data`).
//!
//! Each such boundary holds all its app did before it: the app's files may
//! come back as at that moment, a prefix of its operations, as in
//! operation mode.
//!
//! Most sync points close nothing (with the default policy only one at
//! half a limit does), and a handover costs a writeback of each file open
//! for writing. So the adapter asks
//! `boundary_possible` first, and runs a sync point that cannot close the
//! VCT without a handover, inside `without_boundary`, where it places none.
//!
//! Invariant: in sync-point mode the policy never closes a VCT outside
//! `at_sync_point`, and never inside `without_boundary`.

use crate::config::{Consistency, SyncMode};
use crate::inode::Inode;
use crate::policy::Limits;
use crate::state::State;
use crate::types::{FileKind, Ino, SetAttr, ROOT_INO};
use crate::vct::AppId;
use std::cell::Cell;
use std::time::SystemTime;

thread_local! {
    /// Set while this thread runs a sync point the kernel's dirty pages
    /// were not handed over for (`without_boundary`).
    static NOT_HANDED_OVER: Cell<bool> = const { Cell::new(false) };
}

/// Whether `app`'s open VCT must close now, between sync points: in
/// operation mode what the policy says, or the VCT holds half
/// `max_stale_bytes` of mostly new data; in sync-point mode only a limit
/// reached, or half the byte limit once a limit closed one since the app's
/// last sync point.
///
/// Why half (operation mode, where a boundary may fall after any
/// operation): a writer whose next write would take its app past
/// `max_stale_bytes` commits on its own thread first. A VCT that closed
/// only at the limit leaves the next write no room at all, so a long
/// writer would wait for every commit of its data; closed at half, the
/// background thread commits it while the writer fills the other half.
/// The age limit has no writer waiting on it and keeps its full length.
/// Why mostly new data: a VCT whose writes land mostly on its own pages
/// (overwrites o at least half its bytes s) commits far fewer bytes than it
/// counts, and closing it early would give up what staying open saves — the
/// MobiFS benchmark's 8 MiB region rewritten 16 times reached the backing
/// store three times instead of twice. Such a writer meets the limit with
/// little to commit; the policy still closes it where it decides to.
///
/// In sync-point mode half would put a boundary between sync points into
/// the write of an app that writes less than the limit between them, which
/// keeps its guarantee today. Once a limit placed such a boundary, though,
/// a crash may already leave the app's files between its last sync point
/// and the next: further boundaries before the next sync point fall at half
/// the byte limit, for the same overlap (a 1 GiB write between two sync
/// points waits for the commit of its first 128 MiB only).
pub(crate) fn closes_between_sync_points(st: &mut State, app: AppId, limits: &Limits, now: SystemTime) -> bool {
    let sync_points_only = st.config.consistency == Consistency::SyncPoint;
    let a = &mut st.apps.list[app];
    let half_full = a.open.bytes >= halfway(limits).max_stale_bytes;
    if sync_points_only {
        let due = limits.reached(&a.open, now) || (a.limit_closed_since_sync_point && half_full);
        a.limit_closed_since_sync_point |= due;
        due
    } else {
        let mostly_new = a.open.overwrite_bytes < a.open.bytes / 2;
        a.policy.should_close(&a.open, limits, now) || (half_full && mostly_new)
    }
}

/// A writer at `app`'s byte limit commits its data, open VCT and all (it
/// would not fit next to it): in sync-point mode a boundary between sync
/// points, as a limit closing the VCT is (`closes_between_sync_points`).
pub(crate) fn limit_closes(st: &mut State, app: AppId) {
    let sync_points_only = st.config.consistency == Consistency::SyncPoint;
    let a = &mut st.apps.list[app];
    a.limit_closed_since_sync_point |= sync_points_only && !a.open.is_empty();
}

/// Half of each limit (at least a byte).
fn halfway(limits: &Limits) -> Limits {
    Limits { max_stale_bytes: (limits.max_stale_bytes / 2).max(1), max_stale: limits.max_stale / 2 }
}

/// `app` is at a sync point with everything it wrote before handed over:
/// in sync-point mode its open VCT closes if the policy wants a boundary or
/// the VCT is halfway to a limit, so an app that syncs at least that often
/// never meets a limit between its sync points. Returns whether it closed
/// (in operation mode nothing happens here).
pub(crate) fn at_sync_point(st: &mut State, app: AppId, now: SystemTime) -> bool {
    if st.config.consistency != Consistency::SyncPoint {
        return false;
    }
    let limits = crate::checkpoint::limits_of(st, app);
    let a = &mut st.apps.list[app];
    a.limit_closed_since_sync_point = false;
    if NOT_HANDED_OVER.get() {
        return false;
    }
    let due = a.policy.should_close(&a.open, &limits, now) || halfway(&limits).reached(&a.open, now);
    if due {
        st.close_vct(app);
    }
    due
}

/// Whether a sync point of `app` now may close its VCT or commit it, so
/// that the kernel must hand over first (sync-point mode): an app in sync
/// mode commits at fsync; else the policy may want a boundary
/// (`TransactionPolicy::may_close`), or the VCT is halfway to a limit. The
/// pages still in the kernel are not counted: a sync point that would
/// reach half a limit with them only closes at a later one.
pub(crate) fn boundary_possible(st: &State, app: AppId, now: SystemTime) -> bool {
    if st.mode_of(app) == SyncMode::Sync {
        return true;
    }
    let limits = crate::checkpoint::limits_of(st, app);
    let a = &st.apps.list[app];
    a.policy.may_close(&a.open, &limits, now) || halfway(&limits).reached(&a.open, now)
}

/// Runs `op`, a sync point the kernel's dirty pages were not handed over
/// for because `boundary_possible` said no: it closes no VCT. (An app that
/// went into sync mode meanwhile, its battery low, still commits at
/// fsync: the file fsync names was written back by the kernel itself.)
pub(crate) fn without_boundary<T>(op: impl FnOnce() -> T) -> T {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            NOT_HANDED_OVER.set(self.0);
        }
    }
    let _restore = Restore(NOT_HANDED_OVER.replace(true));
    op()
}

/// Whether an operation of `app` on `touched` (the inodes it names, the
/// parent directories among them) changes another app's file, or would
/// close another app's open VCT: one of them was last changed in it, or a
/// directory above one of them was moved in it (the dependencies
/// `State::log` follows).
pub(crate) fn touches_other_apps(st: &State, app: AppId, touched: &[Ino]) -> bool {
    let open_elsewhere = |change: Option<(AppId, u64)>| {
        change.is_some_and(|(other, vct)| other != app && st.apps.list[other].open.id == vct)
    };
    touched.iter().any(|ino| {
        let Some(inode) = st.inodes.get(ino) else { return false };
        if others_file(inode, app) || open_elsewhere(inode.last_change) {
            return true;
        }
        let mut at = inode.parent;
        while at != ROOT_INO {
            let Some(dir) = st.inodes.get(&at) else { return false };
            if open_elsewhere(dir.last_move) {
                return true;
            }
            at = dir.parent;
        }
        false
    })
}

/// In sync-point mode, `app` just logged a change to `touched`: if one of
/// them is another app's file, its VCT closes now (the kernel handed
/// everything over before the operation).
pub(crate) fn after_changing_other_apps(st: &mut State, app: AppId, touched: &[Ino]) {
    if st.config.consistency != Consistency::SyncPoint {
        return;
    }
    if touched.iter().any(|ino| st.inodes.get(ino).is_some_and(|i| others_file(i, app))) {
        st.close_vct(app);
    }
}

/// A regular file of another app: only files get writebacks, so only a
/// change to one can leave an open VCT that a writeback would close.
/// (A change to another app's directory is a dependency only for other
/// operations, which `touches_other_apps` sees coming.)
fn others_file(inode: &Inode, app: AppId) -> bool {
    inode.app != app && inode.attr.kind == FileKind::File
}

/// Whether a setattr of `set` is logged in the file's app rather than the
/// caller's: in sync-point mode, one that sets only times.
pub(crate) fn times_go_with_the_data(st: &State, set: &SetAttr) -> bool {
    st.config.consistency == Consistency::SyncPoint && set.sets_only_times()
}
