//! The crash test: each transaction is committed and applied on a
//! `RecordingBackend`; for every cut (a crash after every backend op of the
//! commit, of apply and of recovery) the allowed crash states are built,
//! `recover` is run on each, and the tree must be the pre- or the
//! post-transaction tree — the post one whenever the commit record was
//! durable. Some states are also recovered on a recorder, and that recovery
//! is itself crashed at every cut and recovered again.
//!
//! `MCFS_SEED` picks the seed (printed); `MCFS_CRASH_STATES` the number of
//! crash states tried per cut (default 16).

use super::scenarios::{base_tree, copy, random_txn, scenarios, tree_of};
use super::*;
use crate::backend::{MemBackend, RecordingBackend, TreeSnapshot};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn seed() -> u64 {
    let seed = env_u64("MCFS_SEED", 0x006a_6f75_726e_616c);
    eprintln!("journal crash test: seed {seed} (set MCFS_SEED to repeat)");
    seed
}

/// The two trees a crash may end in.
struct Outcomes {
    pre: TreeSnapshot,
    post: TreeSnapshot,
}

impl Outcomes {
    fn name(&self, tree: &TreeSnapshot) -> Option<&'static str> {
        if *tree == self.post {
            Some("post")
        } else if *tree == self.pre {
            Some("pre")
        } else {
            None
        }
    }
}

/// Recovers `state` and returns which outcome it reached, failing the test
/// (with `what` and a diff) on an error or on any other tree.
fn recover_to_outcome(state: &MemBackend, outcomes: &Outcomes, what: &dyn Fn() -> String) -> &'static str {
    if let Err(e) = recover(state) {
        panic!("{}: recover failed: {e}", what());
    }
    let tree = tree_of(state);
    let Some(name) = outcomes.name(&tree) else {
        panic!(
            "{}: recovered to neither tree\n  vs post: {:?}\n  vs pre: {:?}",
            what(),
            tree.diff(&outcomes.post),
            tree.diff(&outcomes.pre)
        );
    };
    assert_eq!(state.stat(&journal_path()).map(|a| a.size).ok(), Some(0), "{}: journal not freed", what());
    let again = recover(state).unwrap_or_else(|e| panic!("{}: second recover: {e}", what()));
    assert_eq!(again, RecoveryReport::default(), "{}: a second recovery found work", what());
    name
}

/// Commits and applies `ops` on a recorder and checks every crash state.
/// Returns the number of crash states checked.
fn crash_test_txn(label: &str, ops: &[JournalOp], seed: u64, states_per_cut: usize) -> usize {
    // The state directory exists before recording, as after any first mount.
    let pre_backend = Arc::new(MemBackend::new());
    base_tree(&*pre_backend);
    drop(Journal::open(pre_backend.clone()).unwrap());
    let pre = tree_of(&pre_backend);
    let rec = Arc::new(RecordingBackend::new(copy(&pre_backend)));
    let mut journal = Journal::open(rec.clone()).unwrap();
    journal.set_segment_bytes(4096);
    journal.begin(1).unwrap();
    for op in ops {
        journal.append(op).unwrap();
    }
    journal.end().unwrap();
    journal.wait_sync().unwrap();
    let commit_point = rec.op_count();
    journal.apply(&mut || {}).unwrap();
    let post = tree_of(rec.live());
    let outcomes = Outcomes { pre, post };
    assert_eq!(
        outcomes.post,
        super::scenarios::apply_directly(&pre_backend, ops),
        "{label}: live apply differs from the oracle"
    );

    let mut checked = 0;
    for cut in 0..=rec.op_count() {
        for (i, crash) in rec.crash_states(cut, seed ^ cut as u64, states_per_cut).into_iter().enumerate() {
            let what = || format!("{label}: seed {seed}: apply crash {}", crash.describe());
            let committed = crash.durable >= commit_point;
            let image = copy(&crash.state);
            let reached = recover_to_outcome(&crash.state, &outcomes, &what);
            if committed {
                assert_eq!(reached, "post", "{}: commit record was durable", what());
            }
            checked += 1;
            // Crash the recovery of every fourth state, at every cut.
            if (cut + i).is_multiple_of(4) {
                checked += crash_test_recovery(&image, &outcomes, reached, seed ^ (cut as u64) << 20, &what);
            }
        }
    }
    checked
}

/// Runs recovery of `image` on a recorder, then crashes it at every cut: a
/// recovery of each crash state must reach what the uninterrupted recovery
/// reached (`expected`).
fn crash_test_recovery(
    image: &MemBackend,
    outcomes: &Outcomes,
    expected: &str,
    seed: u64,
    outer: &dyn Fn() -> String,
) -> usize {
    let rec = RecordingBackend::new(copy(image));
    recover(&rec).unwrap_or_else(|e| panic!("{}: recorded recovery: {e}", outer()));
    let mut checked = 0;
    for cut in 0..=rec.op_count() {
        for crash in rec.crash_states(cut, seed ^ cut as u64, 4) {
            let what = || format!("{}; then recovery crash {}", outer(), crash.describe());
            let reached = recover_to_outcome(&crash.state, outcomes, &what);
            assert_eq!(reached, expected, "{}: recovery of a recovery changed the outcome", what());
            checked += 1;
        }
    }
    checked
}

#[test]
fn journal_crash_at_every_step_of_apply_and_recovery_named_scenarios() {
    let seed = seed();
    let per_cut = env_u64("MCFS_CRASH_STATES", 16) as usize;
    for (name, ops) in scenarios() {
        let checked = crash_test_txn(name, &ops, seed, per_cut);
        eprintln!("{name}: {checked} crash states recovered");
        assert!(checked > ops.len(), "{name}: too few crash states ({checked})");
    }
}

#[test]
fn journal_crash_at_every_step_of_apply_and_recovery_random_txns() {
    let seed = seed();
    let per_cut = env_u64("MCFS_CRASH_STATES", 16) as usize / 2;
    for i in 0..12 {
        let txn_seed = seed.wrapping_add(i);
        let ops = random_txn(txn_seed, 14);
        assert!(ops.len() >= 7, "generator made only {} ops", ops.len());
        let namespace = ops.iter().filter(|op| op.is_namespace()).count();
        let checked = crash_test_txn(&format!("random txn {txn_seed}"), &ops, txn_seed, per_cut.max(2));
        eprintln!("random txn {txn_seed}: {} ops ({namespace} namespace), {checked} crash states", ops.len());
    }
}
