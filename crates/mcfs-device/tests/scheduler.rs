//! The device scheduler (FastTrack §4.5) in virtual time: service times from the profile's figures, the
//! order each policy serves a mixed queue in, the queue depth's limit on overtaking, the aging bound, and
//! a randomized run checked against the model's invariants (seed from `MCFS_SEED`, printed).

use mcfs_device::scheduler::{CommandId, Completion, Op, Priority, SchedPolicy, Scheduler, DEFAULT_AGING_NS};
use mcfs_device::DeviceProfile;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;

use Priority::{Background as Bg, Foreground as Fg};

const KIB: u64 = 1024;

fn emmc() -> DeviceProfile {
    DeviceProfile::builtin("emmc").expect("built-in")
}

/// The eMMC figures with a command queue of `depth` (the built-in eMMC has none: depth 1).
fn emmc_with_depth(depth: u32) -> DeviceProfile {
    DeviceProfile { queue_depth: depth, ..emmc() }
}

/// Runs the scheduler until nothing is pending; returns every completion in the order given.
fn drain(s: &mut Scheduler) -> Vec<Completion> {
    let mut out = Vec::new();
    while let Some(t) = s.next_completion_ns() {
        out.extend(s.advance(t));
    }
    assert_eq!(s.pending(), 0, "nothing pending once the device is idle");
    out
}

fn ids(done: &[Completion]) -> Vec<u64> {
    done.iter().map(|c| c.id.0).collect()
}

#[test]
fn service_times_on_emmc_are_the_profiles_figures() {
    // emmc: read 86.57 MB/s + 50 µs, write 46.23 MB/s + 100 µs, flush 2 ms; transfers rounded up to the ns.
    let s = Scheduler::new(&emmc(), SchedPolicy::Fifo);
    // 4096 B / 86.57 MB/s = 47 314.31 ns → 47 315.
    assert_eq!(s.service_ns(Op::Read(4 * KIB)), 50_000 + 47_315);
    // 131 072 B / 86.57 MB/s = 1 514 057.99 ns → 1 514 058.
    assert_eq!(s.service_ns(Op::Read(128 * KIB)), 50_000 + 1_514_058);
    // 4096 B / 46.23 MB/s = 88 600.48 ns → 88 601.
    assert_eq!(s.service_ns(Op::Write(4 * KIB)), 100_000 + 88_601);
    // 1 048 576 B / 46.23 MB/s = 22 681 721.83 ns → 22 681 722.
    assert_eq!(s.service_ns(Op::Write(1024 * KIB)), 100_000 + 22_681_722);
    assert_eq!(s.service_ns(Op::Flush), 2_000_000);
    assert_eq!(s.service_ns(Op::Read(0)), 50_000, "an empty read still pays the latency");
    assert_eq!(s.service_ns(Op::Write(u64::MAX)), u64::MAX, "saturates instead of overflowing");
}

#[test]
fn an_idle_device_starts_a_command_at_once() {
    let mut s = Scheduler::new(&emmc(), SchedPolicy::Priority);
    assert_eq!((s.pending(), s.next_completion_ns()), (0, None));
    let id = s.submit(1_000, Fg, Op::Read(4 * KIB));
    assert_eq!((s.pending(), s.next_completion_ns()), (1, Some(1_000 + 97_315)));
    assert!(s.advance(1_000 + 97_314).is_empty(), "not done one ns early");
    let done = s.advance(1_000 + 97_315);
    let expect =
        Completion { id, priority: Fg, op: Op::Read(4 * KIB), submitted_ns: 1_000, started_ns: 1_000, done_ns: 98_315 };
    assert_eq!(done, vec![expect]);
    assert_eq!(s.pending(), 0);
    let st = s.stats().foreground.read;
    assert_eq!((st.commands, st.bytes, st.total_wait_ns, st.max_response_ns), (1, 4 * KIB, 0, 97_315));
}

/// Background writes queued, then a foreground read: which order each policy serves them in.
fn mixed_queue(policy: SchedPolicy) -> Vec<Completion> {
    let mut s = Scheduler::new(&emmc_with_depth(8), policy);
    for _ in 0..4 {
        s.submit(0, Bg, Op::Write(4 * KIB));
    }
    s.submit(1_000, Fg, Op::Read(4 * KIB));
    drain(&mut s)
}

#[test]
fn priority_serves_a_late_foreground_read_next_fifo_after_everything_before_it() {
    let (write, read) = (188_601, 97_315);
    let prio = mixed_queue(SchedPolicy::Priority);
    assert_eq!(ids(&prio), [0, 4, 1, 2, 3]);
    assert_eq!(
        (prio[1].started_ns, prio[1].done_ns),
        (write, write + read),
        "FG read right after the write in service"
    );
    let fifo = mixed_queue(SchedPolicy::Fifo);
    assert_eq!(ids(&fifo), [0, 1, 2, 3, 4]);
    assert_eq!((fifo[4].started_ns, fifo[4].done_ns), (4 * write, 4 * write + read));
    // Either way the device never idles: the last completion is the same.
    assert_eq!(prio.last().map(|c| c.done_ns), fifo.last().map(|c| c.done_ns));
}

#[test]
fn priority_ranks_fg_read_fg_write_bg_read_bg_write_and_flushes_with_writes() {
    let mut s = Scheduler::new(&emmc_with_depth(16), SchedPolicy::Priority);
    let submitted = [
        (Bg, Op::Write(4 * KIB)), // 0: in service at once
        (Bg, Op::Write(4 * KIB)), // 1
        (Bg, Op::Read(4 * KIB)),  // 2
        (Fg, Op::Write(4 * KIB)), // 3
        (Fg, Op::Flush),          // 4: ranks with FG writes, after 3
        (Bg, Op::Flush),          // 5: ranks with BG writes, after 1
        (Fg, Op::Read(4 * KIB)),  // 6
        (Bg, Op::Read(8 * KIB)),  // 7: FIFO behind 2
    ];
    for (priority, op) in submitted {
        s.submit(0, priority, op);
    }
    let done = drain(&mut s);
    assert_eq!(ids(&done), [0, 6, 3, 4, 2, 7, 1, 5]);
    for pair in done.windows(2) {
        assert_eq!(pair[1].started_ns, pair[0].done_ns, "back to back");
    }
    assert_eq!(s.stats().foreground.flush.commands, 1);
    assert_eq!(s.stats().background.read.bytes, 12 * KIB);
}

#[test]
fn a_command_outside_the_device_queue_cannot_overtake() {
    // Depth 2: the write in service and one write queued inside; the FG read waits on the host side.
    let run = |depth| {
        let mut s = Scheduler::new(&emmc_with_depth(depth), SchedPolicy::Priority);
        s.submit(0, Bg, Op::Write(4 * KIB));
        s.submit(0, Bg, Op::Write(4 * KIB));
        s.submit(0, Fg, Op::Read(4 * KIB));
        assert_eq!(s.pending(), 3);
        ids(&drain(&mut s))
    };
    assert_eq!(run(2), [0, 1, 2], "the device picks before the host refills its freed slot");
    assert_eq!(run(3), [0, 2, 1], "inside the device it goes first");
    // Without a command queue (the built-in eMMC) the device cannot reorder at all.
    assert_eq!(run(1), [0, 1, 2]);
}

#[test]
fn host_dispatch_lets_a_foreground_command_enter_the_device_first() {
    // Depth 2: a write in service, one queued inside; a BG write then an FG read wait on the host side.
    let run = |host_dispatch| {
        let mut s = Scheduler::new(&emmc_with_depth(2), SchedPolicy::Fifo).with_host_dispatch(host_dispatch);
        for (priority, op) in
            [(Bg, Op::Write(4 * KIB)), (Bg, Op::Write(4 * KIB)), (Bg, Op::Write(4 * KIB)), (Fg, Op::Read(4 * KIB))]
        {
            s.submit(0, priority, op);
        }
        ids(&drain(&mut s))
    };
    assert_eq!(run(false), [0, 1, 2, 3], "first come, first served on the host side");
    assert_eq!(run(true), [0, 1, 3, 2], "the FG read enters the freed slot first, but not ahead of the device's pick");
}

#[test]
fn a_promoted_background_command_goes_with_the_foreground_in_submission_order() {
    let mut s = Scheduler::new(&emmc_with_depth(8), SchedPolicy::Priority);
    let in_service = s.submit(0, Bg, Op::Read(4 * KIB));
    let reads: Vec<CommandId> = (0..2).map(|_| s.submit(0, Bg, Op::Read(4 * KIB))).collect();
    let write = s.submit(0, Bg, Op::Write(4 * KIB));
    let fg_write = s.submit(0, Fg, Op::Write(4 * KIB));
    assert!(s.waits_as_background(write));
    assert!(!s.promote(in_service), "a command in service is not touched");
    assert!(!s.promote(fg_write), "nor a foreground one");
    assert!(s.promote(write));
    assert!(!s.waits_as_background(write) && !s.promote(write), "promoted once");
    let done = drain(&mut s);
    assert_eq!(
        ids(&done),
        [in_service.0, write.0, fg_write.0, reads[0].0, reads[1].0],
        "FG writes by id, then BG reads"
    );
    assert_eq!(done[1].priority, Fg, "completes as a foreground write");
    let stats = s.stats();
    assert_eq!((stats.promoted, stats.foreground.write.commands, stats.background.write.commands), (1, 2, 0));
}

#[test]
fn a_command_promoted_on_the_host_side_enters_the_device_as_foreground() {
    // Depth 1 with host dispatch: a read in service, three BG commands wait on the host side.
    let mut s = Scheduler::new(&emmc_with_depth(1), SchedPolicy::Priority).with_host_dispatch(true);
    let waiting: Vec<CommandId> = (0..4).map(|_| s.submit(0, Bg, Op::Write(4 * KIB))).collect();
    assert!(s.promote(waiting[3]));
    assert_eq!(ids(&drain(&mut s)), [0, 3, 1, 2]);
}

#[test]
fn the_aging_bound_lets_a_starved_background_command_through() {
    // One BG write behind a stream of FG reads (97 315 ns each), all queued at 0.
    let run = |aging_ns| {
        let mut s = Scheduler::new(&emmc_with_depth(64), SchedPolicy::Priority).with_aging(aging_ns);
        s.submit(0, Fg, Op::Read(4 * KIB));
        let bg = s.submit(0, Bg, Op::Write(4 * KIB));
        for _ in 0..30 {
            s.submit(0, Fg, Op::Read(4 * KIB));
        }
        let done = drain(&mut s);
        let at = done.iter().position(|c| c.id == bg).expect("the BG write completes");
        (at, done[at].started_ns, s.stats().background.write.aged)
    };
    // 1 ms: the first pick after more than 1 ms of waiting is the 11th (11 × 97 315 = 1 070 465 ns).
    assert_eq!(run(1_000_000), (11, 1_070_465, 1));
    // The default bound (100 ms) is far off: the write goes last, after all 31 reads.
    assert_eq!(DEFAULT_AGING_NS, 100_000_000);
    assert_eq!(run(DEFAULT_AGING_NS), (31, 31 * 97_315, 0));
}

#[test]
fn a_device_full_of_aged_background_commands_still_serves_the_foreground_first() {
    // 200 BG reads (each 4 KiB: 97 315 ns) queued at 0 keep the device busy for 19.5 ms; an FG read comes
    // every ms from 1 ms on. With a bound of 150 µs every BG read is aged by the time it could start, yet
    // at most one starts per bound ahead of a waiting FG read, so an FG read waits for at most two.
    let mut s = Scheduler::new(&emmc_with_depth(256), SchedPolicy::Priority).with_aging(150_000);
    for _ in 0..200 {
        s.submit(0, Bg, Op::Read(4 * KIB));
    }
    let mut done = Vec::new();
    let mut fg = Vec::new();
    for i in 1..=5u64 {
        done.extend(s.advance(i * 1_000_000));
        fg.push((s.submit(i * 1_000_000, Fg, Op::Read(4 * KIB)), i * 1_000_000));
    }
    done.extend(drain(&mut s));
    for (id, submitted) in fg {
        let c = done.iter().find(|c| c.id == id).expect("the FG read completes");
        assert!(c.started_ns - submitted <= 2 * 97_315, "an FG read waited {} ns", c.started_ns - submitted);
    }
    assert_eq!(done.len(), 205, "every BG read completes too");
}

#[test]
fn aged_background_writes_go_before_background_reads_every_time() {
    // 4 BG writes, then 300 BG reads (4 KiB: 97 315 ns each), all at 0, no FG command: with a bound of
    // 1 ms every write is aged after the 11th read, and then all four go back to back, not one per bound.
    let mut s = Scheduler::new(&emmc_with_depth(512), SchedPolicy::Priority).with_aging(1_000_000);
    s.submit(0, Bg, Op::Read(4 * KIB));
    let writes: Vec<_> = (0..4).map(|_| s.submit(0, Bg, Op::Write(4 * KIB))).collect();
    for _ in 0..300 {
        s.submit(0, Bg, Op::Read(4 * KIB));
    }
    let done = drain(&mut s);
    let order: Vec<usize> = writes.iter().map(|w| done.iter().position(|c| c.id == *w).expect("completes")).collect();
    assert_eq!(order, [11, 12, 13, 14], "the aged writes start one after another");
}

#[test]
fn aged_means_waited_longer_than_the_bound() {
    // A BG write and an FG read wait behind a 4 KiB write (188 601 ns); at that pick the BG write has
    // waited exactly 188 601 ns.
    let run = |aging_ns| {
        let mut s = Scheduler::new(&emmc_with_depth(4), SchedPolicy::Priority).with_aging(aging_ns);
        s.submit(0, Fg, Op::Write(4 * KIB));
        s.submit(0, Bg, Op::Write(4 * KIB));
        s.submit(0, Fg, Op::Read(4 * KIB));
        ids(&drain(&mut s))
    };
    assert_eq!(run(188_601), [0, 2, 1], "waited exactly the bound: not aged");
    assert_eq!(run(188_600), [0, 1, 2], "waited one ns longer: aged, goes first");
}

#[test]
fn policies_parse_from_their_names_with_a_clear_error() {
    assert_eq!("fifo".parse::<SchedPolicy>(), Ok(SchedPolicy::Fifo));
    assert_eq!("priority".parse::<SchedPolicy>(), Ok(SchedPolicy::Priority));
    let err = "FIFO".parse::<SchedPolicy>().expect_err("names are lower case");
    assert_eq!(err, "unknown device scheduling policy \"FIFO\"; known: fifo, priority");
    assert_eq!(serde_json::to_string(&SchedPolicy::Priority).unwrap(), "\"priority\"");
    assert_eq!(serde_json::from_str::<SchedPolicy>("\"fifo\"").unwrap(), SchedPolicy::Fifo);
    assert_eq!(SchedPolicy::Priority.to_string(), "priority");
}

#[test]
fn a_time_earlier_than_the_last_one_counts_as_the_last_one() {
    let mut s = Scheduler::new(&emmc(), SchedPolicy::Fifo);
    s.advance(5_000);
    s.submit(1_000, Bg, Op::Flush);
    assert_eq!(drain(&mut s)[0].submitted_ns, 5_000);
}

// ---- randomized run against the model's invariants ----

/// Rank under `Priority` (lower first), as the paper orders classes.
fn rank(c: &Completion) -> u8 {
    match (c.priority, c.op) {
        (Fg, Op::Read(_)) => 0,
        (Fg, _) => 1,
        (Bg, Op::Read(_)) => 2,
        (Bg, _) => 3,
    }
}

/// When each command entered the device queue: commands enter in submission order, the k-th once at most
/// `depth - 1` earlier ones are outstanding, i.e. at the (k - depth + 1)-th completion.
fn entry_times(by_id: &[Completion], depth: usize) -> Vec<u64> {
    let mut done: Vec<u64> = by_id.iter().map(|c| c.done_ns).collect();
    done.sort_unstable();
    by_id
        .iter()
        .enumerate()
        .map(|(k, c)| if k < depth { c.submitted_ns } else { c.submitted_ns.max(done[k - depth]) })
        .collect()
}

/// Invariants of any run (`by_id` holds the completions indexed by id): one command at a time, no idling
/// while commands wait, the profile's service times, and stats that add up.
fn check_service(by_id: &[Completion], s: &Scheduler) {
    let mut by_start: Vec<&Completion> = by_id.iter().collect();
    by_start.sort_by_key(|c| c.started_ns);
    for pair in by_start.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        assert!(b.started_ns >= a.done_ns, "one command at a time: {a:?} then {b:?}");
        if b.started_ns > a.done_ns {
            assert_eq!(b.started_ns, b.submitted_ns, "the device idled while {b:?} waited");
        }
    }
    for c in by_id {
        assert!(c.submitted_ns <= c.started_ns, "{c:?}");
        assert_eq!(c.done_ns - c.started_ns, s.service_ns(c.op), "{c:?}");
    }
    let stats = s.stats();
    let counted: u64 = [Fg, Bg]
        .iter()
        .flat_map(|p| [Op::Read(0), Op::Write(0), Op::Flush].map(|op| stats.of(*p).of(op).commands))
        .sum();
    assert_eq!(counted, by_id.len() as u64);
    let bg_write_wait: u64 = by_id
        .iter()
        .filter(|c| c.priority == Bg && matches!(c.op, Op::Write(_)))
        .map(|c| c.started_ns - c.submitted_ns)
        .sum();
    assert_eq!(stats.background.write.total_wait_ns, bg_write_wait);
}

/// Invariants of a run with a first-come-first-served host queue: the limit the queue depth puts on
/// overtaking, and at each start the command the policy names among those waiting inside the device.
fn check_order(by_id: &[Completion], depth: usize, policy: SchedPolicy, aging_ns: u64) {
    for c in by_id {
        // When it entered the device, at most `depth - 2` earlier commands waited there beside the one in
        // service (an idle device holds no waiting command).
        let overtaken = by_id[..c.id.0 as usize].iter().filter(|d| d.started_ns > c.started_ns).count();
        assert!(overtaken <= depth.saturating_sub(2), "{c:?} overtook {overtaken} earlier commands, depth {depth}");
    }
    let entered = entry_times(by_id, depth);
    let mut in_start_order: Vec<&Completion> = by_id.iter().collect();
    in_start_order.sort_by_key(|c| c.started_ns);
    // When the aging bound last started a command ahead of a waiting FG command: one per bound at most
    // (ahead of BG commands alone, an aged command always goes first).
    let mut last_aged: Option<u64> = None;
    for c in in_start_order {
        let at = c.started_ns;
        let entered_c = entered[c.id.0 as usize];
        assert!(entered_c <= at, "{c:?} started before it entered the device at {entered_c}");
        let waiting: Vec<&Completion> =
            by_id.iter().filter(|d| entered[d.id.0 as usize] < at && d.started_ns > at).collect();
        // Entering through a freed slot comes after the device's pick at that instant: such a command starts
        // then only if the device had nothing else to pick.
        if entered_c == at && entered_c > c.submitted_ns {
            assert!(waiting.is_empty(), "{c:?} entered through a freed slot and overtook {waiting:?}");
        }
        let candidates: Vec<&Completion> = waiting.into_iter().chain(std::iter::once(c)).collect();
        let oldest = candidates.iter().min_by_key(|d| d.id).expect("c itself");
        let top = candidates.iter().min_by_key(|d| (rank(d), d.id)).expect("c itself");
        let fg_waiting = top.priority == Fg;
        let may_age = !fg_waiting || last_aged.is_none_or(|last| at - last >= aging_ns);
        let expected = match policy {
            SchedPolicy::Fifo => oldest,
            SchedPolicy::Priority if at - oldest.submitted_ns > aging_ns && may_age => {
                if rank(oldest) != rank(top) && fg_waiting {
                    last_aged = Some(at);
                }
                oldest
            }
            SchedPolicy::Priority => top,
        };
        assert_eq!(
            expected.id, c.id,
            "{policy} (aging {aging_ns} ns, depth {depth}) started {c:?} instead of {expected:?}"
        );
        if policy == SchedPolicy::Priority && c.priority == Bg && at - c.submitted_ns <= aging_ns {
            assert!(candidates.iter().all(|d| d.priority == Bg), "BG {c:?} started before a waiting FG command");
        }
    }
}

#[test]
fn random_runs_keep_the_models_invariants() {
    let seed = std::env::var("MCFS_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random::<u64>);
    eprintln!("random_runs_keep_the_models_invariants: MCFS_SEED={seed}");
    let mut rng = StdRng::seed_from_u64(seed);
    for round in 0..40 {
        let depth = [1, 2, 4, 32][rng.gen_range(0..4)];
        let policy = if rng.gen() { SchedPolicy::Priority } else { SchedPolicy::Fifo };
        let aging_ns = [0, 1_000_000, DEFAULT_AGING_NS][rng.gen_range(0..3)];
        // The invariants that follow the host queue's order are checked when it is first come, first served.
        let host_dispatch = rng.gen_bool(0.25);
        let make =
            || Scheduler::new(&emmc_with_depth(depth), policy).with_aging(aging_ns).with_host_dispatch(host_dispatch);
        let mut s = make();
        let commands = rng.gen_range(1..400);
        let mut now = 0u64;
        let mut submitted = Vec::new();
        let mut returned: Vec<Completion> = Vec::new();
        while submitted.len() < commands {
            now += [0, rng.gen_range(0..50_000), rng.gen_range(0..5_000_000)][rng.gen_range(0..3)];
            if rng.gen_bool(0.3) {
                returned.extend(s.advance(now));
                continue;
            }
            let priority = if rng.gen_bool(0.4) { Fg } else { Bg };
            let op = match rng.gen_range(0..10) {
                0 => Op::Flush,
                1..=4 => Op::Read(rng.gen_range(0..=512 * KIB)),
                _ => Op::Write(rng.gen_range(0..=512 * KIB)),
            };
            let id = s.submit(now, priority, op);
            assert_eq!(id, CommandId(submitted.len() as u64), "ids follow submission order");
            submitted.push((now, priority, op));
            assert!(s.pending() <= submitted.len() - returned.len());
        }
        returned.extend(drain(&mut s));
        let mut by_id: Vec<Option<Completion>> = vec![None; commands];
        for c in &returned {
            let slot = by_id.get_mut(c.id.0 as usize).expect("a known id");
            assert!(slot.replace(*c).is_none(), "round {round}: {:?} completed twice", c.id);
            let (at, priority, op) = submitted[c.id.0 as usize];
            assert_eq!((c.submitted_ns, c.priority, c.op), (at, priority, op));
        }
        assert!(returned.windows(2).all(|w| w[0].done_ns <= w[1].done_ns), "completions come in time order");
        let by_id: Vec<Completion> = by_id.into_iter().map(|c| c.expect("every command completes")).collect();
        check_service(&by_id, &s);
        if !host_dispatch {
            check_order(&by_id, depth as usize, policy, aging_ns);
        }
        // Same inputs, same outputs.
        let mut again = make();
        let mut replayed = Vec::new();
        for (at, priority, op) in &submitted {
            replayed.extend(again.advance(*at));
            again.submit(*at, *priority, *op);
        }
        replayed.extend(drain(&mut again));
        let first: HashMap<CommandId, Completion> = returned.iter().map(|c| (c.id, *c)).collect();
        assert!(replayed.iter().all(|c| first[&c.id] == *c), "round {round}: the run is deterministic");
    }
}
