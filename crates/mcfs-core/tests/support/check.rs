//! The crash checks: which trees a recovered backing store may hold after a
//! crash at cut `k` of a recorded run, and the loop over cuts and crash
//! states (including crashes in the middle of recovery).
//!
//! A recovered tree is accepted when
//! 1. for every app, its `app<j>/` tree equals that app's tree at one of its
//!    VCT boundaries (point-in-time consistency per app);
//! 2. the whole tree (so `shared/` too) equals the model replayed with, for
//!    every app, exactly its logged steps before such a boundary — one
//!    boundary per app, chosen together (cross-app dependencies respected);
//! 3. that choice is, for every app, at least as new as the newest boundary
//!    the engine had reported committed (`vcts_committed`) when the backend
//!    had issued fewer than `k` ops (nothing acknowledged is lost);
//! 4. recovering it again changes nothing.
//!
//! For crash states where recovery replays a committed transaction (and a
//! sample of the others), recovery itself is run on a recorder, crashed at
//! each of its cuts, and recovered again: the result must be the very tree
//! the uninterrupted recovery gave. A sample of crash states is also mounted
//! (`Engine::start`), and the engine must show what recovery left.

use super::driver::Run;
use super::model::app_dir;
use super::script::APPS;
use super::tree::{diff, from_backend, from_engine, subtree, Node, Tree};
use mcfs_core::backend::{CrashState, RecordingBackend};
use mcfs_core::journal::{recover, RecoveryReport};
use mcfs_core::{Config, Engine, ManualClock, MemBackend};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// How much to check per run.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// Cuts checked; every cut when the run has no more ops than this.
    pub max_cuts: usize,
    pub states_per_cut: usize,
    /// Crash states whose recovery is itself crashed and recovered.
    pub nested_recoveries: usize,
    pub states_per_nested_cut: usize,
    /// Crash states the engine is started on (a mount after the crash).
    pub restarts: usize,
}

/// What a run's check covered.
#[derive(Clone, Copy, Debug, Default)]
pub struct Tally {
    pub ops: usize,
    pub cuts: usize,
    pub states: usize,
    pub nested_runs: usize,
    pub nested_states: usize,
    pub restarts: usize,
    /// Crash states at cuts inside a step around which several committed
    /// transactions waited in the journal (between their commits and their
    /// apply, or inside the coalesced apply of them).
    pub queued_states: usize,
}

impl Tally {
    pub fn add(&mut self, other: &Tally) {
        self.ops += other.ops;
        self.cuts += other.cuts;
        self.states += other.states;
        self.nested_runs += other.nested_runs;
        self.nested_states += other.nested_states;
        self.restarts += other.restarts;
        self.queued_states += other.queued_states;
    }
}

impl std::fmt::Display for Tally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} backend ops, {} cuts, {} crash states recovered and checked, {} recoveries crashed ({} more \
             states), {} mounts after a crash; {} states with several transactions queued",
            self.ops, self.cuts, self.states, self.nested_runs, self.nested_states, self.restarts, self.queued_states
        )
    }
}

/// A failed check: a short kind (for grouping and shrinking) and the story.
#[derive(Debug)]
pub struct Failure {
    pub kind: &'static str,
    pub detail: String,
}

/// Which boundary choices explain one recovered tree (memoised per tree).
#[derive(Clone)]
struct Explanation {
    /// Per app, the logged-step counts whose tree it matches.
    per_app: Vec<Vec<usize>>,
    /// Choices (one count per app) whose replay is the whole tree.
    whole: Vec<Vec<usize>>,
}

pub struct Checker<'r> {
    run: &'r Run,
    replays: HashMap<Vec<usize>, Option<Tree>>,
    explained: HashMap<Tree, Result<Explanation, (&'static str, String)>>,
}

impl<'r> Checker<'r> {
    pub fn new(run: &'r Run) -> Checker<'r> {
        Checker { run, replays: HashMap::new(), explained: HashMap::new() }
    }

    /// The model after, for every app `j`, its first `counts[j]` logged
    /// steps; `None` if that selection does not replay (some kept step
    /// needs a dropped one). Steps that log nothing change no name (a
    /// rename between two names of one file among them), so they are left
    /// out: replayed without their context they might.
    fn replay(&mut self, counts: &[usize]) -> Option<Tree> {
        if let Some(tree) = self.replays.get(counts) {
            return tree.clone();
        }
        let mut model = self.run.initial.clone();
        let mut ok = true;
        for record in &self.run.steps {
            let Some((app, at)) = record.log else { continue };
            if at < counts[app] && model.apply(&record.step).is_err() {
                ok = false;
                break;
            }
        }
        let tree = ok.then(|| model.tree());
        self.replays.insert(counts.to_vec(), tree.clone());
        tree
    }

    fn explain(&mut self, tree: &Tree) -> Result<Explanation, (&'static str, String)> {
        if let Some(e) = self.explained.get(tree) {
            return e.clone();
        }
        let e = self.explain_uncached(tree);
        self.explained.insert(tree.clone(), e.clone());
        e
    }

    fn explain_uncached(&mut self, tree: &Tree) -> Result<Explanation, (&'static str, String)> {
        let mut per_app = Vec::new();
        for j in 0..APPS {
            let mine = subtree(tree, &app_dir(j));
            let states = &self.run.app_states[j];
            let mut counts: Vec<usize> = states.iter().filter(|(_, s)| **s == mine).map(|(c, _)| *c).collect();
            counts.sort_unstable();
            if counts.is_empty() {
                let closest = states
                    .iter()
                    .map(|(c, s)| (diff(&mine, s), *c))
                    .min_by_key(|(d, c)| (d.len(), usize::MAX - c))
                    .expect("the initial state is always there");
                return Err((
                    "app tree at no VCT boundary",
                    format!(
                        "app{j}/ matches no VCT boundary of app {j}; closest is after {} of its logged steps \
                         (recovered vs expected):\n    {}",
                        closest.1,
                        closest.0.join("\n    ")
                    ),
                ));
            }
            per_app.push(counts);
        }
        let mut whole = Vec::new();
        for choice in product(&per_app) {
            if self.replay(&choice).as_ref() == Some(tree) {
                whole.push(choice);
            }
        }
        if whole.is_empty() {
            let closest = product(&per_app)
                .into_iter()
                .filter_map(|choice| self.replay(&choice).map(|t| (diff(tree, &t), choice)))
                .min_by_key(|(d, _)| d.len());
            let explanation = match closest {
                Some((d, choice)) => {
                    format!("the closest choice is {choice:?} (recovered vs expected):\n    {}", d.join("\n    "))
                }
                None => "and no such choice replays".to_string(),
            };
            return Err((
                "whole tree at no consistent boundary choice",
                format!(
                    "every app's own tree is at a VCT boundary, but no choice of one boundary per app \
                     explains the whole tree; logged-step counts per app that match: {per_app:?}; {explanation}"
                ),
            ));
        }
        Ok(Explanation { per_app, whole })
    }

    /// Newest boundary of app `j` that stands for `count` logged steps.
    fn boundary_of(&self, j: usize, count: usize) -> usize {
        self.run.boundaries[j].iter().rposition(|b| b.counts.contains(&count)).expect("counts come from boundaries")
    }

    /// Boundaries per app the engine had reported committed by cut `k`. A
    /// step that ends with a sync (a commit is done once its commit record
    /// is durable) has returned by cut `k` only if an op came after it: a
    /// crash at the cut of its last op may fall before the sync returned.
    fn acknowledged(&self, k: usize) -> Vec<usize> {
        self.run
            .acks
            .iter()
            .take_while(|(ops, _)| *ops < k)
            .last()
            .map_or(vec![0; APPS], |(_, c)| c.iter().map(|n| *n as usize).collect())
    }

    /// Checks a recovered tree for a crash at cut `k`.
    pub fn check(&mut self, tree: &Tree, k: usize) -> Result<(), Failure> {
        let e = self.explain(tree).map_err(|(kind, detail)| Failure { kind, detail })?;
        let acked = self.acknowledged(k);
        let fresh = e.whole.iter().any(|choice| (0..APPS).all(|j| self.boundary_of(j, choice[j]) >= acked[j]));
        if fresh {
            return Ok(());
        }
        let reached: Vec<usize> =
            (0..APPS).map(|j| e.per_app[j].iter().map(|c| self.boundary_of(j, *c)).max().expect("non-empty")).collect();
        let lost: Vec<String> = (0..APPS)
            .filter(|j| reached[*j] < acked[*j])
            .map(|j| {
                let b = &self.run.boundaries[j][acked[j]];
                format!(
                    "app{j} recovered to VCT boundary {} but boundary {} (closed at step {:?}, {:?} logged steps) \
                     was committed before this cut",
                    reached[j], acked[j], b.step, b.counts
                )
            })
            .collect();
        Err(Failure {
            kind: "acknowledged checkpoint lost",
            detail: if lost.is_empty() {
                format!("no boundary choice that explains the tree is as new as the committed one {acked:?}")
            } else {
                lost.join("\n  ")
            },
        })
    }
}

/// Every choice of one element per list.
fn product(lists: &[Vec<usize>]) -> Vec<Vec<usize>> {
    lists.iter().fold(vec![Vec::new()], |acc, list| {
        acc.iter().flat_map(|prefix| list.iter().map(move |x| [prefix.clone(), vec![*x]].concat())).collect()
    })
}

/// The cuts to check: all of them if they fit the budget; otherwise every
/// sync barrier and its neighbours, every op of the last checkpoint (the
/// final shutdown), both ends, and a seeded sample of the rest.
pub fn select_cuts(run: &Run, seed: u64, max: usize) -> Vec<usize> {
    let n = run.recorder.op_count();
    if n < max {
        return (0..=n).collect();
    }
    let mut cuts: BTreeSet<usize> = BTreeSet::from([0, n]);
    for b in run.recorder.barriers() {
        cuts.extend([b.saturating_sub(1), b, (b + 1).min(n)]);
    }
    let last = run.steps.iter().rev().find(|s| s.ops_after > s.ops_before);
    if let Some(last) = last {
        cuts.extend(last.ops_before..=last.ops_after);
    }
    let mut rng = StdRng::seed_from_u64(seed ^ 0xc075);
    let mut attempts = 4 * max;
    while cuts.len() < max && attempts > 0 {
        cuts.insert(rng.gen_range(0..=n));
        attempts -= 1;
    }
    cuts.into_iter().collect()
}

/// Recovers `state` and reads the result: the error is the failure to report.
fn recover_and_read(state: &MemBackend) -> Result<(RecoveryReport, Tree), Failure> {
    let report = recover(state).map_err(|e| Failure { kind: "recovery failed", detail: format!("recover: {e}") })?;
    let tree = from_backend(state).map_err(|e| Failure { kind: "recovered tree unreadable", detail: e })?;
    let again =
        recover(state).map_err(|e| Failure { kind: "recovery failed", detail: format!("second recover: {e}") })?;
    if again != RecoveryReport::default() {
        return Err(Failure {
            kind: "recovery not idempotent",
            detail: format!("a second recovery still found work: {again}"),
        });
    }
    Ok((report, tree))
}

/// Where a failure happened, for the message.
fn context(run: &Run, state: &CrashState, nested: Option<&str>) -> String {
    let k = state.cut;
    let step = run.steps.iter().position(|s| s.ops_after >= k && s.ops_after > s.ops_before);
    let mut out = format!("crash at {}", state.describe());
    match step {
        Some(i) => out += &format!(" — during or right after step {i} ({})", run.steps[i].step),
        None => out += " — after the last step",
    }
    // MCFS_DUMP=1 shows every op from the durable prefix on, with barriers.
    let from =
        if std::env::var_os("MCFS_DUMP").is_some() { state.durable.saturating_sub(40) } else { k.saturating_sub(3) };
    let barriers = run.recorder.barriers();
    for i in from..(k + 2).min(run.recorder.op_count()) {
        if barriers.contains(&i) {
            out += &format!("\n    -- sync (ops before {i} durable)");
        }
        if let Some(op) = run.recorder.op(i) {
            out += &format!("\n    op {i}{}: {op}", if i < k { "" } else { " (not issued)" });
        }
    }
    if let Some(n) = nested {
        out += &format!("\n  then a crash during its recovery at {n}");
    }
    out
}

/// Checks every selected crash state of `run`. Stops at the first failure.
pub fn check_run(run: &Run, seed: u64, budget: Budget) -> Result<Tally, (Failure, String)> {
    let mut checker = Checker::new(run);
    let cuts = select_cuts(run, seed, budget.max_cuts);
    let mut tally = Tally { ops: run.recorder.op_count(), cuts: cuts.len(), ..Tally::default() };
    let mut rng = StdRng::seed_from_u64(seed ^ 0x2e57);
    for k in cuts {
        for state in run.recorder.crash_states(k, seed ^ k as u64, budget.states_per_cut) {
            let pristine = state.state.clone();
            let fail = |f: Failure, nested: Option<&str>| (f, context(run, &state, nested));
            let (report, tree) = recover_and_read(&state.state).map_err(|f| fail(f, None))?;
            tally.states += 1;
            let step = run.steps.iter().find(|s| s.ops_before < k && k <= s.ops_after);
            tally.queued_states += usize::from(step.is_some_and(|s| s.waiting >= 2));
            checker.check(&tree, k).map_err(|f| fail(f, None))?;
            if tally.restarts < budget.restarts && rng.gen_bool(0.1) {
                tally.restarts += 1;
                restart(pristine.clone(), &tree, &run.config).map_err(|f| fail(f, None))?;
            }
            let replayed = report.replayed.is_some();
            if tally.nested_runs < budget.nested_recoveries && rng.gen_bool(if replayed { 0.5 } else { 0.02 }) {
                tally.nested_runs += 1;
                tally.nested_states += crash_recovery(pristine, &tree, seed, budget.states_per_nested_cut)
                    .map_err(|(f, nested)| fail(f, Some(&nested)))?;
            }
        }
    }
    Ok(tally)
}

/// Starts the engine on a crash state (its recovery included) and compares
/// what it shows with `expected`. Hard links are left out of the
/// comparison: names that share an inode in the backing store show as
/// separate files after a mount (a documented limit).
fn restart(pristine: MemBackend, expected: &Tree, config: &Config) -> Result<(), Failure> {
    let failure = |detail: String| Failure { kind: "engine after a crash differs", detail };
    let engine = Engine::start(Arc::new(pristine), Arc::new(ManualClock::new()), config.clone())
        .map_err(|e| failure(format!("the engine does not start on the crash state: {e}")))?;
    let shown = from_engine(&engine).map_err(|e| failure(format!("the engine's tree cannot be read: {e}")))?;
    let (shown, expected) = (without_links(&shown), without_links(expected));
    if shown != expected {
        return Err(failure(format!(
            "the engine started on the crash state shows another tree than recovery left (engine vs recovered):\n    {}",
            diff(&shown, &expected).join("\n    ")
        )));
    }
    Ok(())
}

fn without_links(tree: &Tree) -> Tree {
    let mut tree = tree.clone();
    for node in tree.values_mut() {
        if let Node::File { link_of, .. } = node {
            *link_of = None;
        }
    }
    tree
}

/// Recovers `pristine` on a recorder, crashes that recovery at each of its
/// cuts, recovers each crash state again and compares with `expected`. The
/// error names the crash state inside recovery.
fn crash_recovery(
    pristine: MemBackend,
    expected: &Tree,
    seed: u64,
    states_per_cut: usize,
) -> Result<usize, (Failure, String)> {
    let recorder = RecordingBackend::new(pristine);
    let mut checked = 0;
    if let Err(e) = recover(&recorder) {
        let failure = Failure { kind: "recovery failed", detail: format!("recover on a recorder: {e}") };
        return Err((failure, "none (recovery itself failed)".to_string()));
    }
    for k in 0..=recorder.op_count() {
        for state in recorder.crash_states(k, seed ^ k as u64, states_per_cut) {
            checked += 1;
            let outcome = recover_and_read(&state.state);
            let failure = match outcome {
                Err(f) => f,
                Ok((_, tree)) if tree == *expected => continue,
                Ok((_, tree)) => Failure {
                    kind: "recovery after a crash in recovery differs",
                    detail: format!(
                        "recovering again after the crash gives a different tree than an uninterrupted \
                         recovery (got vs uninterrupted):\n    {}",
                        diff(&tree, expected).join("\n    ")
                    ),
                },
            };
            return Err((failure, state.describe()));
        }
    }
    Ok(checked)
}
