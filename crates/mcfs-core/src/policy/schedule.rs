//! Multi-app checkpoint scheduling (MobiFS §5.4): given the closed VCTs of
//! several apps and a predicted idle interval, choose which to checkpoint
//! now.
//!
//! Apps wait in three queues by age — the number of idle intervals their
//! oldest VCT was skipped — and the most urgent queue goes first. The four
//! rules, in descending precedence:
//! 1. affinity: an app skipped in a queue moves to the next higher queue;
//!    once an app is picked, its further VCTs go right after its first;
//! 2. age: apps enter the lowest queue; when no app is feasible, the
//!    shortest first-VCT in the most urgent non-empty queue goes anyway;
//! 3. length: an app is feasible when its first VCT's flush time is shorter
//!    than what is left of the interval;
//! 4. replenishment: VCTs of an app left over when its turn ends go back to
//!    the lowest queue.
//!
//! Pure: the caller keeps each VCT's age and applies the ages the plan
//! returns. Invariant: an app's VCTs are checkpointed in log order, a prefix
//! of its list at a time (point-in-time consistency). Not wired into the
//! engine yet: the checkpointer still commits every closed VCT.

use crate::vct::AppId;
use std::time::Duration;

/// Queues, lowest priority first; an age at or above the last is the last.
pub const QUEUES: u32 = 3;

/// A closed VCT waiting for a checkpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PendingVct {
    pub app: AppId,
    pub vct: u64,
    /// Idle intervals this VCT's app was skipped in (0 = lowest queue).
    pub age: u32,
    /// Estimated time to checkpoint it (its length: pages over the device's
    /// write rate).
    pub flush_time: Duration,
}

/// What to do in one idle interval.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// VCTs to checkpoint now, in this order.
    pub checkpoint: Vec<u64>,
    /// The new age of every VCT not checkpointed.
    pub ages: Vec<(u64, u32)>,
}

/// One app's VCTs in log order and its queue.
struct AppTurn {
    queue: u32,
    vcts: Vec<PendingVct>,
}

/// Plans the checkpoints of one predicted idle interval of length `window`.
/// `pending` lists each app's VCTs in log order (apps may interleave); the
/// order of apps' first VCTs breaks ties inside a queue.
pub fn schedule(pending: &[PendingVct], window: Duration) -> Plan {
    let mut turns = group_by_app(pending);
    // Most urgent queue first; the stable sort keeps arrival order inside one.
    turns.sort_by_key(|turn| std::cmp::Reverse(turn.queue));
    let mut left = window;
    let mut taken = vec![0usize; turns.len()];
    for (turn, taken) in turns.iter().zip(taken.iter_mut()) {
        *taken = fitting_prefix(&turn.vcts, &mut left);
    }
    if taken.iter().all(|n| *n == 0) {
        if let Some(i) = shortest_in_most_urgent(&turns) {
            taken[i] = 1;
        }
    }
    let mut plan = Plan::default();
    for (turn, taken) in turns.iter().zip(taken) {
        let (done, rest) = turn.vcts.split_at(taken);
        plan.checkpoint.extend(done.iter().map(|v| v.vct));
        let age = if taken > 0 { 0 } else { (turn.queue + 1).min(QUEUES - 1) };
        plan.ages.extend(rest.iter().map(|v| (v.vct, age)));
    }
    plan
}

fn group_by_app(pending: &[PendingVct]) -> Vec<AppTurn> {
    let mut turns: Vec<AppTurn> = Vec::new();
    for v in pending {
        match turns.iter_mut().find(|turn| turn.vcts[0].app == v.app) {
            Some(turn) => turn.vcts.push(*v),
            None => turns.push(AppTurn { queue: v.age.min(QUEUES - 1), vcts: vec![*v] }),
        }
    }
    turns
}

/// How many of `vcts`, from the first, fit in `left` (each strictly shorter
/// than what remains); takes their time out of `left`.
fn fitting_prefix(vcts: &[PendingVct], left: &mut Duration) -> usize {
    let mut n = 0;
    for v in vcts {
        if v.flush_time >= *left {
            break;
        }
        *left -= v.flush_time;
        n += 1;
    }
    n
}

/// Rule 2's fallback: the app of the most urgent non-empty queue whose first
/// VCT is shortest (the first such app on a tie). `turns` is sorted by queue.
fn shortest_in_most_urgent(turns: &[AppTurn]) -> Option<usize> {
    let top = turns.first()?.queue;
    (0..turns.len()).take_while(|i| turns[*i].queue == top).min_by_key(|i| turns[*i].vcts[0].flush_time)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    fn vct(app: AppId, vct: u64, age: u32, flush: u64) -> PendingVct {
        PendingVct { app, vct, age, flush_time: secs(flush) }
    }

    fn age_of(plan: &Plan, id: u64) -> Option<u32> {
        plan.ages.iter().find(|(v, _)| *v == id).map(|(_, a)| *a)
    }

    #[test]
    fn nothing_pending_plans_nothing() {
        assert_eq!(schedule(&[], secs(10)), Plan::default());
    }

    #[test]
    fn rule1_affinity_keeps_an_apps_vcts_together_and_promotes_the_skipped() {
        // App 1's two VCTs are interleaved with app 2's in the input.
        let pending = [vct(1, 10, 0, 2), vct(2, 20, 0, 3), vct(1, 11, 0, 2), vct(3, 30, 1, 9)];
        let plan = schedule(&pending, secs(8));
        // Queue 1 first: app 3 does not fit (9 s ≥ 8 s) and is skipped.
        assert_eq!(plan.checkpoint, vec![10, 11, 20], "app 1's VCTs back to back, then app 2");
        assert_eq!(plan.ages, vec![(30, 2)], "the skipped app moves up one queue");
    }

    #[test]
    fn rule2_age_orders_the_queues_and_falls_back_to_the_shortest_urgent_vct() {
        let pending = [vct(1, 10, 0, 4), vct(2, 20, 2, 4), vct(3, 30, 1, 4)];
        let plan = schedule(&pending, secs(9));
        assert_eq!(plan.checkpoint, vec![20, 30], "queue 2, then queue 1; queue 0 is out of time");
        assert_eq!(plan.ages, vec![(10, 1)]);
        // Nothing fits: the shortest first VCT of the top queue goes.
        let pending = [vct(1, 10, 0, 1), vct(2, 20, 2, 7), vct(3, 30, 5, 6), vct(3, 31, 5, 1)];
        let plan = schedule(&pending, secs(1));
        assert_eq!(plan.checkpoint, vec![30], "not app 1's 1 s VCT: it waits in queue 0");
        assert_eq!(age_of(&plan, 31), Some(0), "app 3's rest goes to the lowest queue");
        assert_eq!(age_of(&plan, 20), Some(2), "the top queue is the ceiling");
        assert_eq!(age_of(&plan, 10), Some(1));
    }

    #[test]
    fn rule3_length_needs_the_first_vct_strictly_shorter_than_what_is_left() {
        let pending = [vct(1, 10, 1, 5), vct(2, 20, 0, 3), vct(3, 30, 0, 2)];
        let plan = schedule(&pending, secs(8));
        // 8 − 5 = 3 left: app 2's 3 s VCT is not shorter; app 3's 2 s one is.
        assert_eq!(plan.checkpoint, vec![10, 30]);
        assert_eq!(plan.ages, vec![(20, 1)]);
        let plan = schedule(&[vct(1, 10, 0, 5)], secs(5));
        assert_eq!(plan.checkpoint, vec![10], "an exact fit is infeasible; the fallback still takes it");
    }

    #[test]
    fn rule4_leftovers_of_a_picked_app_go_to_the_lowest_queue() {
        let pending = [vct(1, 10, 2, 2), vct(1, 11, 2, 5), vct(1, 12, 2, 1), vct(2, 20, 2, 1)];
        let plan = schedule(&pending, secs(6));
        // App 1 fits 10 (2 s) but not 11 (5 s ≥ 4 s left); 12 must wait for 11.
        assert_eq!(plan.checkpoint, vec![10, 20]);
        assert_eq!(plan.ages, vec![(11, 0), (12, 0)], "replenished into queue 0");
    }

    #[test]
    fn an_apps_vcts_stay_in_log_order() {
        let pending = [vct(1, 10, 0, 9), vct(1, 11, 0, 1)];
        let plan = schedule(&pending, secs(5));
        assert!(!plan.checkpoint.contains(&11) || plan.checkpoint.contains(&10), "11 before 10: {plan:?}");
        assert_eq!(plan.checkpoint, vec![10], "the fallback takes the app's first VCT only");
    }
}
