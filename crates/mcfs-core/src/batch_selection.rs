//! Which closed VCTs a background checkpoint commits (MobiFS §5.3–5.4).
//!
//! Without an idle predictor, all of them, at once. With one, closed VCTs
//! wait for a predicted user-idle window; the multi-app scheduler
//! (`policy::schedule`) picks the VCTs whose estimated flush time fits it,
//! and ages the rest. Whatever the prediction, a VCT goes when its app's
//! staleness time limit is reached or its app is in sync mode (invariant 2),
//! and everything goes when dirty data passes the background ratio (the
//! memory-footprint rule of §7.2).
//!
//! Invariant of every selection: it is closed under "must commit no later
//! than" — each app's selected VCTs are a prefix of its closed ones, and
//! every cross-app dependency of a selected VCT is selected — so committing
//! it keeps every app at a VCT boundary and all apps jointly consistent.

use crate::checkpoint::{limits_of, over_background_ratio};
use crate::config::SyncMode;
use crate::policy::prediction_score::ScoredPredictor;
use crate::policy::schedule::{schedule, PendingVct};
use crate::state::State;
use crate::types::PAGE_SIZE;
use crate::vct::{AppId, ClosedEntry, ClosedVct};
use std::collections::HashSet;
use std::time::{Duration, SystemTime};

/// What a checkpoint takes.
pub enum Selection {
    All,
    Only(HashSet<u64>),
    /// An app's closed VCTs and everything they need first (a sync-mode
    /// fsync: the app does not wait for other apps' independent data).
    AppAndNeeds(AppId),
}

/// The ids of `app`'s closed VCTs and of every VCT they need first.
pub fn app_and_needs(st: &State, app: AppId) -> HashSet<u64> {
    let mut chosen = st.closed.iter().filter(|v| v.app == app).map(|v| v.id).collect();
    close_under_dependencies(st, &mut chosen);
    chosen
}

pub fn select(st: &mut State, predictor: Option<&mut ScoredPredictor>, now: SystemTime) -> Selection {
    let Some(predictor) = predictor else { return Selection::All };
    if over_background_ratio(st) {
        return Selection::All;
    }
    let mut chosen: HashSet<u64> = st.closed.iter().filter(|v| must_go(st, v, now)).map(|v| v.id).collect();
    if let Some(window) = predictor.window(now) {
        let rate = st.config.checkpoint_write_rate;
        let pending: Vec<PendingVct> = st
            .closed
            .iter()
            .map(|v| PendingVct { app: v.app, vct: v.id, age: v.age, flush_time: flush_time(v, rate) })
            .collect();
        let plan = schedule(&pending, window.left);
        chosen.extend(plan.checkpoint);
        // Ages count idle intervals passed over, not polls of one interval.
        if window.fresh {
            for (id, age) in plan.ages {
                if let Some(v) = st.closed.iter_mut().find(|v| v.id == id) {
                    v.age = age;
                }
            }
        }
    }
    close_under_dependencies(st, &mut chosen);
    Selection::Only(chosen)
}

/// The VCT may not wait for idle time: its app's oldest data reached the
/// time limit, or the app wants durable data now.
fn must_go(st: &State, v: &ClosedVct, now: SystemTime) -> bool {
    let max_stale = limits_of(st, v.app).max_stale;
    let too_old = v.first_entry_at.is_some_and(|t| crate::clock::aged(t, max_stale, now));
    too_old || st.mode_of(v.app) == SyncMode::Sync
}

/// Estimated time to checkpoint `v`: the bytes it writes (pages, plus a
/// block per metadata operation) at `rate` bytes per second.
fn flush_time(v: &ClosedVct, rate: f64) -> Duration {
    let bytes: u64 = v
        .entries
        .iter()
        .map(|e| match e {
            ClosedEntry::Write { len, .. } => *len as u64,
            ClosedEntry::Other(_) => PAGE_SIZE,
        })
        .sum();
    crate::config::seconds(bytes as f64 / rate)
}

/// Adds to `chosen` every VCT a chosen one needs first: its app's earlier
/// VCTs and its cross-app dependencies, transitively.
fn close_under_dependencies(st: &State, chosen: &mut HashSet<u64>) {
    loop {
        let mut added = false;
        // Newest first, so one pass carries a late VCT's needs back to the front.
        for (i, v) in st.closed.iter().enumerate().rev() {
            if !chosen.contains(&v.id) {
                continue;
            }
            let earlier_same_app = st.closed.iter().take(i).filter(|e| e.app == v.app).map(|e| e.id);
            for id in earlier_same_app.chain(v.deps.iter().copied()) {
                // A dependency no longer queued is committed already.
                if st.closed.iter().any(|e| e.id == id) {
                    added |= chosen.insert(id);
                }
            }
        }
        if !added {
            return;
        }
    }
}
