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
//! Invariant: in sync-point mode the policy never closes a VCT outside
//! `at_sync_point`.

use crate::config::Consistency;
use crate::policy::Limits;
use crate::state::State;
use crate::vct::AppId;
use std::time::SystemTime;

/// Whether `app`'s open VCT must close now, between sync points: what the
/// policy says in operation mode; in sync-point mode only a limit reached.
pub(crate) fn closes_between_sync_points(st: &mut State, app: AppId, limits: &Limits, now: SystemTime) -> bool {
    let sync_points_only = st.config.consistency == Consistency::SyncPoint;
    let a = &mut st.apps.list[app];
    if sync_points_only {
        limits.reached(&a.open, now)
    } else {
        a.policy.should_close(&a.open, limits, now)
    }
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
    let halfway = Limits { max_stale_bytes: (limits.max_stale_bytes / 2).max(1), max_stale: limits.max_stale / 2 };
    let a = &mut st.apps.list[app];
    let due = a.policy.should_close(&a.open, &limits, now) || halfway.reached(&a.open, now);
    if due {
        st.close_vct(app);
    }
    due
}
