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

use super::scenarios::{base_tree, copy, mixed_txn, random_txn, random_txn_with_transient_files, scenarios, tree_of};
use super::tests::commit;
use super::*;
use super::{segment_path, segment_slots};
use crate::backend::{MemBackend, RecordingBackend, TreeSnapshot};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn seed() -> u64 {
    let seed = env_u64("MCFS_SEED", 0x006a_6f75_726e_616c);
    eprintln!("journal crash test: seed {seed} (set MCFS_SEED to repeat)");
    seed
}

/// The trees a crash may end in: before every transaction, then after
/// each one in turn.
struct Outcomes {
    trees: Vec<TreeSnapshot>,
}

impl Outcomes {
    /// How many transactions `tree` is after, if it is one of the outcomes.
    fn index(&self, tree: &TreeSnapshot) -> Option<usize> {
        self.trees.iter().rposition(|t| t == tree)
    }
}

/// Recovers `state` and returns which outcome it reached, failing the test
/// (with `what` and a diff) on an error or on any other tree.
fn recover_to_outcome(state: &MemBackend, outcomes: &Outcomes, what: &dyn Fn() -> String) -> usize {
    if let Err(e) = recover(state) {
        panic!("{}: recover failed: {e}", what());
    }
    let tree = tree_of(state);
    let Some(reached) = outcomes.index(&tree) else {
        let diffs: Vec<_> = outcomes.trees.iter().map(|t| tree.diff(t)).collect();
        panic!("{}: recovered to none of the trees (diffs: before, after each txn)\n  {diffs:?}", what());
    };
    for slot in segment_slots(state).unwrap() {
        let mut sector = [0u8; HEADER_LEN as usize];
        let n = state.read_at(&segment_path(slot), 0, &mut sector).unwrap();
        assert_eq!(
            encode::TxnHeader::decode(&sector[..n]),
            Ok(encode::HeaderState::Empty),
            "{}: journal segment {slot} not freed (its commit record not cleared)",
            what()
        );
    }
    let again = recover(state).unwrap_or_else(|e| panic!("{}: second recover: {e}", what()));
    assert_eq!(again, RecoveryReport::default(), "{}: a second recovery found work", what());
    reached
}

/// The state directory exists before recording, as after any first mount.
fn opened_base() -> Arc<MemBackend> {
    let base = Arc::new(MemBackend::new());
    base_tree(&base);
    drop(Journal::open(base.clone()).unwrap());
    base
}

/// The oracle (`opened_base`), a recorder over a copy of it, and a journal
/// on the recorder that yields after every 4 KiB of applied data.
fn recorded_journal() -> (Arc<MemBackend>, Arc<RecordingBackend>, Journal) {
    let oracle = opened_base();
    let rec = Arc::new(RecordingBackend::new(copy(&oracle)));
    let mut journal = Journal::open(rec.clone()).unwrap();
    journal.set_segment_bytes(4096);
    (oracle, rec, journal)
}

/// Commits and applies each of `txns` in turn on a recorder (the first on
/// `base_tree`), checks the live result against the oracle, and returns the
/// recorder, the outcomes and the op count at which each commit returned.
fn record_txns(label: &str, txns: &[&[JournalOp]]) -> (Arc<RecordingBackend>, Outcomes, Vec<usize>) {
    let (rec, outcomes, commit_points, _) = record_run(label, txns, 1);
    (rec, outcomes, commit_points)
}

/// What the live runs of a recorded test did beyond applying ops.
#[derive(Clone, Copy, Default)]
struct RunStats {
    /// Bytes coalesced away.
    coalesced: u64,
    /// Ops of files born and gone within a run, not issued.
    elided: u64,
}

/// As `record_txns`, but the transactions wait in the log and are applied
/// `queue` at a time, as one coalesced run (the last run may be shorter).
fn record_run(
    label: &str,
    txns: &[&[JournalOp]],
    queue: usize,
) -> (Arc<RecordingBackend>, Outcomes, Vec<usize>, RunStats) {
    let (oracle, rec, mut journal) = recorded_journal();
    let mut trees = vec![tree_of(&oracle)];
    let mut commit_points = Vec::new();
    let mut stats = RunStats::default();
    for (i, ops) in txns.iter().enumerate() {
        commit(&mut journal, i as u64 + 1, ops);
        commit_points.push(rec.op_count());
        trees.push(apply_to_oracle(&oracle, ops));
        if journal.waiting() == queue || i + 1 == txns.len() {
            let report = journal.apply(&mut || {}).unwrap();
            assert_eq!(report.txns as usize, journal_ran(i, queue), "{label}: one run applies the queue");
            stats.coalesced += report.coalesced_bytes;
            stats.elided += report.elided;
            assert_eq!(
                tree_of(rec.live()),
                trees[i + 1],
                "{label}: live apply up to txn {} differs from the oracle",
                i + 1
            );
        }
    }
    (rec, Outcomes { trees }, commit_points, stats)
}

/// Applies `ops` to the oracle; returns the tree they lead to.
fn apply_to_oracle(oracle: &MemBackend, ops: &[JournalOp]) -> TreeSnapshot {
    let expected = super::scenarios::apply_directly(oracle, ops);
    for op in ops {
        let _ = super::scenarios::apply_op(oracle, op);
    }
    expected
}

/// Commits `first` (waiting), applies them as a run taken out of the
/// journal, and commits `during` from the run's `at`-th segment boundary
/// (after the run, if it has fewer); then applies `during`. Returns what
/// `record_run` does, and whether `during` was committed mid-run.
fn record_commit_during_run(
    label: &str,
    first: &[&[JournalOp]],
    during: &[JournalOp],
    at: usize,
) -> (Arc<RecordingBackend>, Outcomes, Vec<usize>, bool) {
    let (oracle, rec, mut journal) = recorded_journal();
    let mut trees = vec![tree_of(&oracle)];
    let mut commit_points = Vec::new();
    for (i, ops) in first.iter().enumerate() {
        commit(&mut journal, i as u64 + 1, ops);
        commit_points.push(rec.op_count());
        trees.push(apply_to_oracle(&oracle, ops));
    }
    let seq = first.len() as u64 + 1;
    let mut run = journal.take_run().unwrap();
    let (mut boundaries, mut committed_at) = (0, None);
    run.apply(&mut || {
        if boundaries == at {
            commit(&mut journal, seq, during);
            committed_at = Some(rec.op_count());
        }
        boundaries += 1;
    })
    .unwrap_or_else(|e| panic!("{label}: the run failed: {e}"));
    journal.end_run(run);
    assert_eq!(tree_of(rec.live()), trees[first.len()], "{label}: the run's live apply differs from the oracle");
    let mid_run = committed_at.is_some();
    if !mid_run {
        commit(&mut journal, seq, during);
    }
    commit_points.push(committed_at.unwrap_or_else(|| rec.op_count()));
    trees.push(apply_to_oracle(&oracle, during));
    assert_eq!(journal.waiting(), 1, "{label}: the commit made during the run waits for the next");
    journal.apply(&mut || {}).unwrap();
    assert_eq!(tree_of(rec.live()), trees[seq as usize], "{label}: the live apply after the run differs");
    (rec, Outcomes { trees }, commit_points, mid_run)
}

/// How many transactions the run after commit `i` (from 0) applies.
fn journal_ran(i: usize, queue: usize) -> usize {
    i % queue + 1
}

/// Commits and applies `txns` on a recorder and checks every crash state:
/// it recovers (a crash state is never refused) to the tree before or after
/// some transaction, and after every transaction whose commit was durable.
/// Returns the number of crash states checked.
fn crash_test_txns(label: &str, txns: &[&[JournalOp]], seed: u64, states_per_cut: usize) -> usize {
    crash_test_run(label, txns, 1, seed, states_per_cut).0
}

/// `crash_test_txns` with the transactions applied `queue` at a time;
/// also returns what the live runs coalesced and elided.
fn crash_test_run(
    label: &str,
    txns: &[&[JournalOp]],
    queue: usize,
    seed: u64,
    states_per_cut: usize,
) -> (usize, RunStats) {
    let (rec, outcomes, commit_points, stats) = record_run(label, txns, queue);
    (check_crash_states(label, &rec, &outcomes, &commit_points, seed, states_per_cut), stats)
}

/// Every crash state of what `rec` recorded recovers to one of `outcomes`,
/// at least as far as the last commit durable by then (`commit_points`);
/// the recovery of every fourth state is crashed too. Returns how many
/// states were checked.
fn check_crash_states(
    label: &str,
    rec: &RecordingBackend,
    outcomes: &Outcomes,
    commit_points: &[usize],
    seed: u64,
    states_per_cut: usize,
) -> usize {
    let mut checked = 0;
    for cut in 0..=rec.op_count() {
        for (i, crash) in rec.crash_states(cut, seed ^ cut as u64, states_per_cut).into_iter().enumerate() {
            let what = || format!("{label}: seed {seed}: apply crash {}", crash.describe());
            let committed = commit_points.iter().filter(|p| crash.durable >= **p).count();
            let image = copy(&crash.state);
            let reached = recover_to_outcome(&crash.state, outcomes, &what);
            assert!(reached >= committed, "{}: reached txn {reached}, but {committed} were durable", what());
            checked += 1;
            // Crash the recovery of every fourth state, at every cut.
            if (cut + i).is_multiple_of(4) {
                checked += crash_test_recovery(&image, outcomes, reached, seed ^ (cut as u64) << 20, &what);
            }
        }
    }
    checked
}

fn crash_test_txn(label: &str, ops: &[JournalOp], seed: u64, states_per_cut: usize) -> usize {
    crash_test_txns(label, &[ops], seed, states_per_cut)
}

/// Runs recovery of `image` on a recorder, then crashes it at every cut: a
/// recovery of each crash state must reach what the uninterrupted recovery
/// reached (`expected`).
fn crash_test_recovery(
    image: &MemBackend,
    outcomes: &Outcomes,
    expected: usize,
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

/// Each named transaction, then a second one whose journal records go over
/// the first one's while its "done" record and the journal's truncation may
/// still be unsynced: no crash state is refused (recovery must tell such a
/// state from a damaged journal), and none is rolled back.
#[test]
fn journal_crash_across_two_transactions_sharing_the_journal_file() {
    let seed = seed();
    let per_cut = env_u64("MCFS_CRASH_STATES", 16) as usize / 2;
    let second = vec![
        JournalOp::Create { path: "t2".into(), kind: crate::types::FileKind::File, perm: 0o644, rdev: 0 },
        JournalOp::Write { path: "t2".into(), offset: 0, data: vec![0x5a; 9000] },
        JournalOp::SetXattr { path: "t2".into(), name: "user.t".into(), value: b"2".to_vec() },
    ];
    let mut firsts = scenarios();
    firsts.push(("engine-shaped mix", mixed_txn(8)));
    for (name, first) in firsts {
        let checked = crash_test_txns(&format!("{name}, then another"), &[&first, &second], seed, per_cut.max(2));
        eprintln!("{name}, then another: {checked} crash states recovered");
    }
}

/// The file's bytes, for checking that a refusal changed nothing.
fn file_bytes(b: &MemBackend, path: &std::path::Path) -> Vec<u8> {
    let size = b.stat(path).map_or(0, |a| a.size);
    let mut buf = vec![0; size as usize];
    let n = b.read_at(path, 0, &mut buf).unwrap_or(0);
    buf.truncate(n);
    buf
}

/// `image` with `path` replaced by `bytes`.
fn with_file(image: &MemBackend, path: &std::path::Path, bytes: &[u8]) -> MemBackend {
    let damaged = copy(image);
    damaged.set_len(path, 0).unwrap();
    damaged.write_at(path, 0, bytes).unwrap();
    damaged
}

/// How recovery of a damaged state may end.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Expect {
    /// It finishes the transaction.
    Finished,
    /// It refuses naming the file.
    Refused,
    /// Either (the damage left an older record saying "in the middle").
    FinishedOrRefused,
    /// Nothing can tell this damage from a crash (see JOURNAL.md): only no panic.
    Undetectable,
}

/// Recovers `damaged` and checks it ends as `expect` says; a refusal must
/// name `file` and change nothing.
fn check_damage(damaged: MemBackend, file: &str, expect: Expect, post: &TreeSnapshot, what: &str) {
    let tree = tree_of(&damaged);
    let state = [journal_path(), progress_path()].map(|p| file_bytes(&damaged, &p));
    match (recover(&damaged), expect) {
        (Ok(_), Expect::Finished | Expect::FinishedOrRefused) => {
            assert_eq!(tree_of(&damaged), *post, "{what}: recovered to another tree than the post tree");
        }
        (Err(e), Expect::Refused | Expect::FinishedOrRefused) => {
            assert!(e.to_string().contains(file), "{what}: the refusal does not name {file}: {e}");
            assert_eq!(tree_of(&damaged), tree, "{what}: a refusal changed the tree");
            let after = [journal_path(), progress_path()].map(|p| file_bytes(&damaged, &p));
            assert!(after == state, "{what}: a refusal changed the journal or the progress file");
        }
        (_, Expect::Undetectable) => {}
        (outcome, _) => panic!("{what}: expected {expect:?}, got {outcome:?}"),
    }
}

/// Damage to `.mcfs/progress` or `.mcfs/journal` after every op of the apply
/// of multi-group transactions: recovery finishes the transaction, or
/// refuses with an error naming the damaged file and changes nothing. It
/// never resumes from a wrong point (rolling files back), and it never drops
/// a transaction that a progress record shows was being applied.
#[test]
fn journal_damaged_progress_or_journal_mid_apply_is_finished_or_refused_never_rolled_back() {
    use super::progress::{ProgressFile, PROGRESS_LEN};
    let refused_link = scenarios().into_iter().find(|(n, _)| n.starts_with("a link refused")).expect("scenario").1;
    let mut refusals = 0;
    for (label, ops) in [("engine-shaped mix", mixed_txn(8)), ("a refused link", refused_link)] {
        let (rec, outcomes, commit_points) = record_txns(label, &[&ops]);
        let post = &outcomes.trees[1];
        for cut in commit_points[0]..=rec.op_count() {
            // The process-crash state at this cut: every op issued survived.
            let image = rec.crash_states(cut, 0, 2).pop().expect("a crash state").state;
            let progress = file_bytes(&image, &progress_path());
            let journal = file_bytes(&image, &journal_path());
            let what = |damage: &str| format!("{label}: after backend op {cut}, {damage}");
            let txn = ProgressFile::load(&image).unwrap().newest().filter(|p| p.seq == 1);
            let in_middle = txn.is_some_and(|p| !p.done);
            // The commit record stays after the apply (the segment is reused
            // in place); only the progress file says it was applied.
            let record = encode::TxnHeader::decode(&journal[..journal.len().min(HEADER_LEN as usize)]);
            let holds_txn = !matches!(record, Ok(encode::HeaderState::Empty));

            // The progress file truncated or zeroed: a committed journal
            // beside it is refused; beside an empty one, an older record may
            // be left that says "in the middle", which is refused too.
            let mut cuts: Vec<u64> = vec![0, 1, 28, 540, 1051, 1536, PROGRESS_LEN - 1];
            cuts.retain(|len| *len < progress.len() as u64);
            for len in cuts {
                let damaged = with_file(&image, &progress_path(), &progress[..len as usize]);
                let expect = if holds_txn { Expect::Refused } else { Expect::FinishedOrRefused };
                check_damage(damaged, ".mcfs/progress", expect, post, &what(&format!("progress cut to {len}")));
            }
            let zeroed = with_file(&image, &progress_path(), &vec![0; progress.len()]);
            let expect = if holds_txn { Expect::Refused } else { Expect::Finished };
            check_damage(zeroed, ".mcfs/progress", expect, post, &what("progress zeroed"));
            // One damaged byte of any slot: the other copy of its value remains.
            for i in (0..4).flat_map(|slot| slot * 512..slot * 512 + 28) {
                let mut flipped = progress.clone();
                flipped[i] ^= 0x21;
                let damaged = with_file(&image, &progress_path(), &flipped);
                check_damage(damaged, ".mcfs/progress", Expect::Finished, post, &what(&format!("progress byte {i}")));
            }

            // The journal damaged or cut short: refused while a record shows
            // the transaction in its middle; dropped (already applied) once
            // one says it is done; before the first record, nothing can tell.
            if !holds_txn {
                continue;
            }
            let expect = match txn {
                _ if in_middle => Expect::Refused,
                Some(p) if p.done => Expect::Finished,
                _ => Expect::Undetectable,
            };
            refusals += usize::from(expect == Expect::Refused);
            // Damage to the transaction's bytes, not to the zeros after them.
            let len = match record {
                Ok(encode::HeaderState::Valid(h)) => (HEADER_LEN + h.payload_len) as usize,
                _ => journal.len(),
            };
            let mut damages: Vec<(String, Vec<u8>)> = Vec::new();
            for i in [20, 44, 512, (512 + len) / 2, len - 1] {
                let mut flipped = journal.clone();
                flipped[i] ^= 0x10;
                damages.push((format!("journal byte {i} flipped"), flipped));
            }
            for cut_to in [len - 1, len / 2, 512, 40] {
                damages.push((format!("journal cut to {cut_to}"), journal[..cut_to].to_vec()));
            }
            let mut zero_header = journal.clone();
            zero_header[..512].fill(0);
            damages.push(("journal header zeroed".into(), zero_header));
            for (damage, bytes) in damages {
                let damaged = with_file(&image, &journal_path(), &bytes);
                check_damage(damaged, ".mcfs/journal", expect, post, &what(&damage));
            }
        }
    }
    assert!(refusals > 4, "too few states had a transaction in its middle ({refusals})");
}

/// Transactions waiting in the log, then applied as one coalesced run:
/// consecutive slices of one random op sequence (each valid after the one
/// before), so several of them write the same bytes of the same files and
/// rename, link and remove them in between. Crash states fall between the
/// commits, between the last commit and the run, inside the run (its
/// coalesced writes) and inside the recovery of any of them.
#[test]
fn journal_crash_between_commit_and_coalesced_apply_of_queued_txns() {
    let seed = seed();
    let per_cut = (env_u64("MCFS_CRASH_STATES", 16) as usize / 4).max(2);
    let (mut states, mut coalesced, mut elided) = (0, 0, 0);
    for i in 0..9 {
        let txn_seed = seed.wrapping_add(100 + i);
        // The last three also create, write and unlink files (and set their
        // directory's times), as SQLite's rollback journal does.
        let ops = if i < 6 { random_txn(txn_seed, 36) } else { random_txn_with_transient_files(txn_seed, 36) };
        let txns: Vec<&[JournalOp]> = ops.chunks(ops.len().div_ceil(4)).collect();
        let label = format!("queued random txns {txn_seed}");
        let (checked, run) = crash_test_run(&label, &txns, 4, txn_seed, per_cut);
        eprintln!(
            "{label}: {} txns queued, {} bytes coalesced, {} ops elided, {checked} crash states",
            txns.len(),
            run.coalesced,
            run.elided
        );
        (states, coalesced, elided) = (states + checked, coalesced + run.coalesced, elided + run.elided);
    }
    let mix = mixed_txn(8);
    let pairs: Vec<&[JournalOp]> = mix.chunks(mix.len().div_ceil(3)).collect();
    states += crash_test_run("engine-shaped mix in 3 queued txns", &pairs, 2, seed, per_cut).0;
    eprintln!("queued transactions: {states} crash states recovered, {coalesced} bytes coalesced, {elided} ops elided");
    assert!(coalesced > 0, "no run coalesced anything: the test does not reach coalesced applies");
    assert!(elided > 0, "no run elided anything: the test does not reach files born and gone within a run");
}

/// Named runs of queued transactions, each crashed at every cut with many
/// states per cut: a run that frees several segments, where replaying an
/// earlier transaction over a later one's effects rolls data back (a rename
/// `a→b`, then a new `a`), and writes coalesced across a rename, a hard
/// link and a re-created name.
#[test]
fn journal_crash_in_named_runs_of_queued_txns() {
    let seed = seed();
    let per_cut = (env_u64("MCFS_CRASH_STATES", 16) as usize * 4).max(8);
    let w = |path: &str, offset: u64, byte: u8| JournalOp::Write { path: path.into(), offset, data: vec![byte; 4096] };
    let create =
        |path: &str| JournalOp::Create { path: path.into(), kind: crate::types::FileKind::File, perm: 0o644, rdev: 0 };
    let rename = |from: &str, to: &str| JournalOp::Rename { from: from.into(), to: to.into() };
    let runs: Vec<(&str, Vec<Vec<JournalOp>>)> = vec![
        ("rename a→b, then a new a", vec![vec![rename("a", "b")], vec![create("a"), w("a", 0, 1)]]),
        (
            "a page rewritten across a rename and a re-create",
            vec![
                vec![w("a", 0, 1), w("c", 0, 2)],
                vec![rename("a", "n1"), create("a"), w("a", 0, 3)],
                vec![w("c", 0, 4), w("n1", 0, 5)],
            ],
        ),
        (
            "a page rewritten through a hard link",
            vec![vec![w("b", 0, 1)], vec![w("b_link", 0, 2)], vec![w("b", 4096, 3), w("b", 0, 4)]],
        ),
    ];
    for (name, txns) in runs {
        let txns: Vec<&[JournalOp]> = txns.iter().map(Vec::as_slice).collect();
        let (checked, run) = crash_test_run(name, &txns, txns.len(), seed, per_cut);
        eprintln!("{name}: {checked} crash states recovered, {} bytes coalesced", run.coalesced);
    }
}

/// Runs holding files born and gone within them (`transient.rs`), each
/// crashed at every cut of the commits, of the run and of recovery: the
/// live run issues none of the elided ops, recovery replays them from the
/// log. Among them the case the touches of elided ops must count for: a
/// link onto the name in a later group of the live run (without them, an
/// image holding the link is recovered by replaying the elided create over
/// it, which truncates and rewrites the linked file).
#[test]
fn journal_crash_in_runs_with_files_born_and_gone() {
    use crate::types::FileKind;
    let seed = seed();
    let per_cut = (env_u64("MCFS_CRASH_STATES", 16) as usize * 2).max(8);
    let create = |path: &str| JournalOp::Create { path: path.into(), kind: FileKind::File, perm: 0o644, rdev: 0 };
    let w = |path: &str, byte: u8| JournalOp::Write { path: path.into(), offset: 0, data: vec![byte; 3000] };
    let unlink = |path: &str| JournalOp::RemoveFile { path: path.into() };
    let times = |path: &str, secs: u64| {
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000 + secs);
        JournalOp::SetTimes { path: path.into(), atime: t, mtime: t }
    };
    let rename = |from: &str, to: &str| JournalOp::Rename { from: from.into(), to: to.into() };
    let link = |existing: &str, new: &str| JournalOp::Link { existing: existing.into(), new: new.into() };
    // SQLite DELETE mode, three commits per app transaction: the journal
    // created and written, the database written, the journal unlinked.
    let sqlite = |txns: u8| -> Vec<Vec<JournalOp>> {
        (0..txns)
            .flat_map(|t| {
                vec![
                    vec![create("d/j"), w("d/j", t + 1), times("d/j", 1), times("d", 1)],
                    vec![JournalOp::Write { path: "d/x".into(), offset: 0, data: vec![t + 10; 100] }, times("d/x", 2)],
                    vec![unlink("d/j"), times("d", u64::from(t) + 3)],
                ]
            })
            .collect()
    };
    let runs: Vec<(&str, Vec<Vec<JournalOp>>, bool)> = vec![
        ("SQLite's rollback journal, three app transactions", sqlite(3), true),
        (
            "a link onto an elided name, in a later group",
            vec![
                vec![unlink("d/j")],
                vec![rename("a", "n1"), create("a"), w("a", 1)],
                vec![create("d/j"), w("d/j", 2), unlink("d/j")],
                vec![link("c", "d/j"), times("d", 2)],
            ],
            true,
        ),
        (
            "an existing name with another hard link, removed, then born and gone twice",
            vec![
                vec![link("d/x", "hl")],
                vec![w("d/x", 1), unlink("d/x"), create("d/x"), w("d/x", 2), unlink("d/x")],
                vec![create("d/x"), w("d/x", 3), unlink("d/x"), times("d", 4)],
            ],
            true,
        ),
        (
            "an open file parked as an orphan is not elided",
            vec![
                vec![unlink("d/j"), create("d/j"), w("d/j", 1)],
                vec![rename("d/j", ".mcfs/orphans/9"), times("d", 1)],
                vec![w(".mcfs/orphans/9", 2), unlink(".mcfs/orphans/9"), times("d", 2)],
            ],
            false,
        ),
    ];
    for (name, txns, elides) in runs {
        let txns: Vec<&[JournalOp]> = txns.iter().map(Vec::as_slice).collect();
        let (checked, run) = crash_test_run(name, &txns, txns.len(), seed, per_cut);
        eprintln!("{name}: {checked} crash states recovered, {} ops elided", run.elided);
        assert_eq!(run.elided > 0, elides, "{name}: elided {} ops", run.elided);
        // Applied one at a time, no run holds a file born and gone.
        let (checked, run) = crash_test_run(name, &txns, 1, seed, per_cut / 4);
        eprintln!("{name}, one transaction per run: {checked} crash states recovered");
        assert_eq!(run.elided, 0, "{name}: nothing to elide in a run of one transaction");
    }
}

/// A transaction committed while a run of earlier ones is applied apart
/// from the journal (`take_run`), at each of the run's segment boundaries:
/// every crash state recovers to the tree before or after some transaction,
/// and after every one whose commit was durable; the later transaction,
/// compiled against the run's end, is never applied before the run.
#[test]
fn journal_crash_with_a_commit_made_while_a_run_is_applied() {
    let seed = seed();
    let per_cut = (env_u64("MCFS_CRASH_STATES", 16) as usize / 4).max(2);
    let mix = mixed_txn(8);
    let named = scenarios();
    // Over the run's own paths: it rewrites, renames and removes what the run made.
    let during = vec![
        JournalOp::Write { path: "n1".into(), offset: 0, data: vec![0x6b; 5000] },
        JournalOp::Rename { from: "n2".into(), to: "n3".into() },
        JournalOp::Create { path: "t2".into(), kind: crate::types::FileKind::File, perm: 0o644, rdev: 0 },
        JournalOp::Write { path: "t2".into(), offset: 0, data: vec![0x5a; 9000] },
        JournalOp::RemoveFile { path: "a".into() },
    ];
    let writes_far = named.iter().find(|(n, _)| n.starts_with("create, write and chmod")).map(|(_, ops)| ops.clone());
    let rewrites: Vec<JournalOp> = ["c", "b_link", "d/x"]
        .iter()
        .enumerate()
        .map(|(i, path)| JournalOp::Write { path: (*path).into(), offset: 0, data: vec![i as u8 + 1; 6000] })
        .collect();
    let first: Vec<&[JournalOp]> =
        [Some(&mix[..]), writes_far.as_deref(), Some(&rewrites[..])].into_iter().flatten().collect();
    assert_eq!(first.len(), 3, "the scenario that makes n1 and n2 is named \"create, write and chmod ...\"");
    let (mut states, mut mid_run) = (0, 0);
    for at in 0.. {
        let label = format!("commit at boundary {at} of a run of {} txns", first.len());
        let (rec, outcomes, commit_points, during_run) = record_commit_during_run(&label, &first, &during, at);
        if !during_run {
            break;
        }
        mid_run += 1;
        states += check_crash_states(&label, &rec, &outcomes, &commit_points, seed ^ at as u64, per_cut);
    }
    eprintln!("a commit during a run, at {mid_run} boundaries: {states} crash states recovered");
    assert!(mid_run >= 2, "the run has only {mid_run} segment boundaries: too little data to commit in between");
}
