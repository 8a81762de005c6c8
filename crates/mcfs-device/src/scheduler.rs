//! The flash device's own command scheduler (FastTrack §4.5, §3.4, §5.2) as a deterministic
//! discrete-event model: which command the device serves next, and when each one completes, in virtual
//! time. The real-time flash emulator and the simulator's FastTrack scenarios both run on it.
//!
//! Model. The device holds up to `queue_depth` commands (the profile's figure; the command in service
//! counts, as a UFS task tag or an eMMC command-queue slot does); further commands wait on the host side,
//! first in first out, and enter the device one by one as slots free. The device serves one command at a
//! time: a read or write takes the profile's per-request latency of its direction plus its bytes over the
//! bandwidth of that direction (rounded up to the ns), a flush takes the flush latency. When the command
//! in service completes, the device picks the next one from its internal queue *before* the host refills
//! the freed slot (the host learns of the completion only then), so a host-side command never overtakes
//! a command already inside the device. What it picks:
//!
//! * `Fifo`: the oldest submitted command (a priority-unaware device, §3.4).
//! * `Priority`: FG read > FG write > BG read > BG write, a flush ranking with the writes of its class,
//!   first in first out within a rank (§4.5). Aging bound (ours; the paper gives none): a command that
//!   has waited longer than `aging_ns` since its submission goes first (the oldest such one); ahead of
//!   a foreground command at most one such command per `aging_ns` — otherwise a device saturated by
//!   background commands, all of them aged, would serve them first in first out and the foreground
//!   would lose its priority just when it matters. Among background commands alone an aged one goes
//!   first every time: a background write that a foreground request waits for (a commit holding a
//!   lock) must not crawl at one command per bound behind a stream of background reads. Default
//!   100 ms (`DEFAULT_AGING_NS`): a few times the longest single command a phone issues (512 KiB
//!   written on eMMC take 11 ms), yet well below the ~1 s a user tolerates.
//!   Background commands are never starved: the oldest command in the device starts at least once per
//!   bound, so one waits at most about `queue_depth` bounds plus one service time.
//!
//! Host side: first come, first served; `with_host_dispatch(true)` lets foreground commands enter the
//! device ahead of background ones waiting there (FastTrack's I/O dispatcher, §4.4, moves FG BIOs
//! straight to the dispatch queue), still in submission order within a class.
//!
//! Promotion: a background command still waiting (host side or device queue) can become a foreground one
//! (`promote`), keeping its place in submission order among the foreground commands: its issuer was
//! raised to foreground priority after submitting it, because a foreground request waits for what that
//! command is part of (priority inheritance). A command in service is not touched.
//!
//! A flush is not a barrier across classes: it makes durable what its issuer wrote before it, and those
//! writes (same class, same rank) are served before it in either policy.
//!
//! Time. Calls come in non-decreasing time (an earlier time is taken as the latest one seen). At one
//! instant, completions (and the picks they cause) happen before a submission made at that instant.
//! Everything is an integer; ties between commands go to the smaller `CommandId`, i.e. the earlier
//! submission. Invariants: one command is in service at a time, each starts no earlier than the previous
//! one completed, and the host side holds commands only while the device queue is full.

use crate::model::{transfer_ns, Request, METADATA_WRITE_BYTES};
use crate::profile::DeviceProfile;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::fmt;
use std::str::FromStr;

/// The default aging bound: 100 ms (chosen, see the module comment).
pub const DEFAULT_AGING_NS: u64 = 100_000_000;

/// The class a command carries to the device (FastTrack's FG flag in a reserved opcode bit, §4.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    Foreground,
    Background,
}

/// One device command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Reads this many bytes.
    Read(u64),
    /// Writes this many bytes.
    Write(u64),
    /// Flushes the device's write cache.
    Flush,
}

impl Op {
    /// Whether the issuer waits for the command: for read data and for a flush. Writes are queued and the
    /// issuer goes on, as over a page cache and a block-layer queue (`Request::blocks_issuer`).
    pub fn blocks_issuer(self) -> bool {
        matches!(self, Op::Read(_) | Op::Flush)
    }
}

impl From<Request> for Op {
    /// The command a backend request (`MeteredStore`) is (a metadata write writes one block).
    fn from(request: Request) -> Op {
        match request {
            Request::Read(bytes) => Op::Read(bytes),
            Request::Write(bytes) => Op::Write(bytes),
            Request::MetadataWrite => Op::Write(METADATA_WRITE_BYTES),
            Request::Flush => Op::Flush,
        }
    }
}

/// How the device picks its next command.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SchedPolicy {
    /// Oldest submitted first.
    Fifo,
    /// FG read > FG write > BG read > BG write, with the aging bound.
    Priority,
}

impl SchedPolicy {
    pub const NAMES: &'static [&'static str] = &["fifo", "priority"];
}

impl FromStr for SchedPolicy {
    type Err = String;

    fn from_str(s: &str) -> Result<SchedPolicy, String> {
        match s {
            "fifo" => Ok(SchedPolicy::Fifo),
            "priority" => Ok(SchedPolicy::Priority),
            _ => Err(format!("unknown device scheduling policy \"{s}\"; known: {}", SchedPolicy::NAMES.join(", "))),
        }
    }
}

impl fmt::Display for SchedPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SchedPolicy::Fifo => "fifo",
            SchedPolicy::Priority => "priority",
        })
    }
}

/// Names a submitted command; ids grow with submission order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CommandId(pub u64);

/// A completed command and its three instants (virtual ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    pub id: CommandId,
    pub priority: Priority,
    pub op: Op,
    pub submitted_ns: u64,
    pub started_ns: u64,
    pub done_ns: u64,
}

/// Counters of one (class, kind) of command, taken at completion.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct OpStats {
    pub commands: u64,
    pub bytes: u64,
    /// Waits are start − submit, responses done − submit.
    pub total_wait_ns: u64,
    pub max_wait_ns: u64,
    pub total_response_ns: u64,
    pub max_response_ns: u64,
    /// Commands the aging bound started ahead of a higher-ranked one (`Priority` only).
    pub aged: u64,
}

/// The counters of one class, by kind of command.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ClassStats {
    pub read: OpStats,
    pub write: OpStats,
    pub flush: OpStats,
}

impl ClassStats {
    /// The counters of `op`'s kind.
    pub fn of(&self, op: Op) -> &OpStats {
        match op {
            Op::Read(_) => &self.read,
            Op::Write(_) => &self.write,
            Op::Flush => &self.flush,
        }
    }

    fn of_mut(&mut self, op: Op) -> &mut OpStats {
        match op {
            Op::Read(_) => &mut self.read,
            Op::Write(_) => &mut self.write,
            Op::Flush => &mut self.flush,
        }
    }
}

/// What the device served, per class and kind of command.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SchedulerStats {
    pub foreground: ClassStats,
    pub background: ClassStats,
    /// Background commands promoted to foreground while waiting (counted with the foreground at completion).
    pub promoted: u64,
}

impl SchedulerStats {
    pub fn of(&self, priority: Priority) -> &ClassStats {
        match priority {
            Priority::Foreground => &self.foreground,
            Priority::Background => &self.background,
        }
    }

    fn record(&mut self, c: &Completion, aged: bool) {
        let class = match c.priority {
            Priority::Foreground => &mut self.foreground,
            Priority::Background => &mut self.background,
        };
        let s = class.of_mut(c.op);
        let (wait, response) = (c.started_ns - c.submitted_ns, c.done_ns - c.submitted_ns);
        s.commands += 1;
        s.bytes = s.bytes.saturating_add(bytes_of(c.op));
        s.total_wait_ns = s.total_wait_ns.saturating_add(wait);
        s.max_wait_ns = s.max_wait_ns.max(wait);
        s.total_response_ns = s.total_response_ns.saturating_add(response);
        s.max_response_ns = s.max_response_ns.max(response);
        s.aged += u64::from(aged);
    }
}

#[derive(Clone, Copy, Debug)]
struct Command {
    id: CommandId,
    priority: Priority,
    op: Op,
    submitted_ns: u64,
}

#[derive(Clone, Copy, Debug)]
struct InService {
    command: Command,
    started_ns: u64,
    done_ns: u64,
    /// Started by the aging bound ahead of a higher-ranked command.
    aged: bool,
}

/// Ranks under `Priority`, served lowest first.
const RANKS: usize = 4;

fn rank(priority: Priority, op: Op) -> usize {
    match (priority, op) {
        (Priority::Foreground, Op::Read(_)) => 0,
        (Priority::Foreground, _) => 1,
        (Priority::Background, Op::Read(_)) => 2,
        (Priority::Background, _) => 3,
    }
}

/// Moves command `id` from `from` to its place by id in `to`, as a foreground command; false if not in `from`.
fn move_command(id: CommandId, from: &mut VecDeque<Command>, to: &mut VecDeque<Command>) -> bool {
    let Some(mut command) = from.iter().position(|c| c.id == id).and_then(|at| from.remove(at)) else {
        return false;
    };
    command.priority = Priority::Foreground;
    to.insert(to.partition_point(|c| c.id < id), command);
    true
}

fn bytes_of(op: Op) -> u64 {
    match op {
        Op::Read(n) | Op::Write(n) => n,
        Op::Flush => 0,
    }
}

/// The device's command scheduler (see the module comment for the model).
#[derive(Clone, Debug)]
pub struct Scheduler {
    profile: DeviceProfile,
    policy: SchedPolicy,
    aging_ns: u64,
    /// Commands the device holds, the one in service included.
    depth: usize,
    /// The latest time seen.
    now_ns: u64,
    next_id: u64,
    /// Commands waiting to enter the device, oldest first, foreground and background apart.
    host: [VecDeque<Command>; 2],
    /// Foreground commands enter the device ahead of background ones waiting on the host side.
    host_dispatch: bool,
    /// The device's internal queue (commands not in service), one FIFO per rank; `Fifo` takes the oldest
    /// front, which is the oldest command since each FIFO is in submission order.
    device: [VecDeque<Command>; RANKS],
    in_service: Option<InService>,
    /// When the aging bound last started a command ahead of a higher-ranked one.
    last_aged_start_ns: Option<u64>,
    /// Completed by `now_ns`, not yet returned by `advance`.
    completed: Vec<Completion>,
    stats: SchedulerStats,
}

impl Scheduler {
    /// An idle device of `profile` at virtual time zero, with the default aging bound.
    pub fn new(profile: &DeviceProfile, policy: SchedPolicy) -> Scheduler {
        Scheduler {
            profile: profile.clone(),
            policy,
            aging_ns: DEFAULT_AGING_NS,
            depth: profile.queue_depth.max(1) as usize,
            now_ns: 0,
            next_id: 0,
            host: Default::default(),
            host_dispatch: false,
            device: Default::default(),
            in_service: None,
            last_aged_start_ns: None,
            completed: Vec::new(),
            stats: SchedulerStats::default(),
        }
    }

    /// The same scheduler with an aging bound of `aging_ns` (`Priority` only).
    pub fn with_aging(mut self, aging_ns: u64) -> Scheduler {
        self.aging_ns = aging_ns;
        self
    }

    /// The same scheduler where foreground commands waiting on the host side enter the device ahead of
    /// background ones (FastTrack's I/O dispatcher, §4.4, which moves FG BIOs straight to the dispatch
    /// queue); off by default: the host queue is first come, first served.
    pub fn with_host_dispatch(mut self, on: bool) -> Scheduler {
        self.host_dispatch = on;
        self
    }

    pub fn policy(&self) -> SchedPolicy {
        self.policy
    }

    pub fn aging_ns(&self) -> u64 {
        self.aging_ns
    }

    /// Service time of one command on this profile (latency + bytes / bandwidth; flush: flush latency). Pure.
    pub fn service_ns(&self, op: Op) -> u64 {
        let p = &self.profile;
        match op {
            Op::Read(bytes) => p.read_latency_ns.saturating_add(transfer_ns(bytes, p.read_bytes_per_s)),
            Op::Write(bytes) => p.write_latency_ns.saturating_add(transfer_ns(bytes, p.write_bytes_per_s)),
            Op::Flush => p.flush_latency_ns,
        }
    }

    /// Submits a command at `now_ns` (calls must come in non-decreasing time; it first advances to now_ns).
    pub fn submit(&mut self, now_ns: u64, priority: Priority, op: Op) -> CommandId {
        let now = self.run_until(now_ns);
        let id = CommandId(self.next_id);
        self.next_id += 1;
        self.host[usize::from(priority == Priority::Background)].push_back(Command {
            id,
            priority,
            op,
            submitted_ns: now,
        });
        self.dispatch(now);
        id
    }

    /// Makes command `id`, waiting as a background command, a foreground one (see the module comment);
    /// false if it is not waiting as a background command (in service, done, unknown, or foreground).
    pub fn promote(&mut self, id: CommandId) -> bool {
        let [host_fg, host_bg] = &mut self.host;
        let [fg_read, fg_write, bg_read, bg_write] = &mut self.device; // in rank order
        let promoted = [(host_bg, host_fg), (bg_read, fg_read), (bg_write, fg_write)]
            .into_iter()
            .any(|(from, to)| move_command(id, from, to));
        self.stats.promoted += u64::from(promoted);
        promoted
    }

    /// Whether a command's class changes the order commands are served in (the `Priority` policy, or host
    /// dispatch); if not, promoting one changes nothing but the counters.
    pub fn serves_by_class(&self) -> bool {
        self.policy == SchedPolicy::Priority || self.host_dispatch
    }

    /// Whether command `id` waits (not yet in service) as a background command.
    pub fn waits_as_background(&self, id: CommandId) -> bool {
        let waiting = |q: &VecDeque<Command>| q.iter().any(|c| c.id == id && c.priority == Priority::Background);
        self.host.iter().chain(&self.device).any(waiting)
    }

    /// Completes everything done by `now_ns`, in completion order, starting the next commands as the device frees.
    pub fn advance(&mut self, now_ns: u64) -> Vec<Completion> {
        self.run_until(now_ns);
        std::mem::take(&mut self.completed)
    }

    /// When the command in service completes, if one is.
    pub fn next_completion_ns(&self) -> Option<u64> {
        self.in_service.map(|s| s.done_ns)
    }

    /// Commands submitted and not completed.
    pub fn pending(&self) -> usize {
        self.host.iter().map(VecDeque::len).sum::<usize>()
            + self.device_queue_len()
            + usize::from(self.in_service.is_some())
    }

    pub fn stats(&self) -> SchedulerStats {
        self.stats
    }

    /// Completes what is done by `now_ns` (taken as the latest time seen if earlier) and returns that time.
    fn run_until(&mut self, now_ns: u64) -> u64 {
        let now = now_ns.max(self.now_ns);
        while let Some(s) = self.in_service.filter(|s| s.done_ns <= now) {
            self.in_service = None;
            let c = s.command;
            let completion = Completion {
                id: c.id,
                priority: c.priority,
                op: c.op,
                submitted_ns: c.submitted_ns,
                started_ns: s.started_ns,
                done_ns: s.done_ns,
            };
            self.stats.record(&completion, s.aged);
            self.completed.push(completion);
            self.dispatch(s.done_ns);
        }
        self.now_ns = now;
        now
    }

    /// At `at`, with a slot possibly free: the device picks its next command, then the host refills the
    /// device queue, then an idle device starts what just entered.
    fn dispatch(&mut self, at: u64) {
        self.start_next(at);
        while self.device_queue_len() + usize::from(self.in_service.is_some()) < self.depth {
            let Some(c) = self.next_from_host() else { break };
            self.device[rank(c.priority, c.op)].push_back(c);
        }
        self.start_next(at);
    }

    /// Starts the command the policy picks, if the device is idle and holds one.
    fn start_next(&mut self, at: u64) {
        if self.in_service.is_some() {
            return;
        }
        let fronts = || self.device.iter().enumerate().filter_map(|(r, q)| q.front().map(|c| (r, c)));
        let Some((oldest_rank, oldest)) = fronts().min_by_key(|(_, c)| c.id) else { return };
        let Some((top_rank, _)) = fronts().next() else { return };
        let overtakes_fg = top_rank < rank(Priority::Background, Op::Read(0));
        let (chosen, aged) = match self.policy {
            SchedPolicy::Fifo => (oldest_rank, false),
            SchedPolicy::Priority if self.ages(oldest.submitted_ns, at, overtakes_fg) => {
                (oldest_rank, oldest_rank != top_rank)
            }
            SchedPolicy::Priority => (top_rank, false),
        };
        if aged && overtakes_fg {
            self.last_aged_start_ns = Some(at);
        }
        if let Some(command) = self.device[chosen].pop_front() {
            let done_ns = at.saturating_add(self.service_ns(command.op));
            self.in_service = Some(InService { command, started_ns: at, done_ns, aged });
        }
    }

    /// Whether a command submitted at `submitted_ns` goes first at `at` by the aging bound: it waited
    /// longer than the bound, and, if it would overtake a foreground command, no aged command overtook
    /// one within the last bound.
    fn ages(&self, submitted_ns: u64, at: u64, overtakes_fg: bool) -> bool {
        let waited_out = at.saturating_sub(submitted_ns) > self.aging_ns;
        let rate_ok =
            !overtakes_fg || self.last_aged_start_ns.is_none_or(|last| at.saturating_sub(last) >= self.aging_ns);
        waited_out && rate_ok
    }

    /// The host-side command that enters the device next: the oldest, or with host dispatch the oldest
    /// foreground one if any.
    fn next_from_host(&mut self) -> Option<Command> {
        let [fg, bg] = &mut self.host;
        let take_fg = match (fg.front(), bg.front()) {
            (Some(_), _) if self.host_dispatch => true,
            (Some(f), Some(b)) => f.id < b.id,
            (f, _) => f.is_some(),
        };
        if take_fg {
            fg.pop_front()
        } else {
            bg.pop_front()
        }
    }

    fn device_queue_len(&self) -> usize {
        self.device.iter().map(VecDeque::len).sum()
    }
}
