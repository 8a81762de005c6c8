//! Recording a live mount and replaying the recording (issue 3). A program
//! works on a mount started with `--record`: the trace holds what it did —
//! operations, paths, app and pid — and replaying the trace into an empty
//! directory, and onto a fresh mcfs mount, rebuilds the same tree byte for
//! byte (the program writes the pattern bytes a replay writes). User input
//! given with `mcfs ctl MOUNTPOINT input`, and read from an input device (a
//! FIFO standing in for /dev/input/eventN), reaches the engine's idle
//! predictor and the trace.

mod common;

use common::{ctl, mcfs, stats, Daemon, Dirs};
use mcfs_sim::binary::BinaryReader;
use mcfs_sim::live_replay;
use mcfs_sim::pattern;
use mcfs_sim::text::TextReader;
use mcfs_sim::trace::{EventKind, InputKind};
use mcfs_sim::TraceEvent;
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs::{self, File, OpenOptions};
use std::io::{BufReader, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The tests of this binary run one at a time: a process one test forks
/// while the other has a workload file open inherits the descriptor, and
/// its exec closes it — a close (FUSE flush) of a file that process never
/// opened, which the other test's trace would hold.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The test's uid is named as an app, so the trace must carry that name;
/// an idle predictor makes the engine count user operations.
fn config() -> String {
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    format!("idle_predictor = \"state-machine\"\n\n[[apps]]\nname = \"recorder-test\"\nuids = [{uid}]\n")
}

fn write_pattern(file: &File, offset: u64, len: usize) {
    let mut buf = vec![0; len];
    pattern::fill(offset, &mut buf);
    file.write_all_at(&buf, offset).unwrap_or_else(|e| panic!("write {len} bytes at {offset}: {e}"));
}

/// A program's work: writes at various offsets (with a hole), appends,
/// truncation, write-temp-then-rename over an existing file, a file
/// deleted, a directory made and removed, a rewrite with O_TRUNC, a read.
fn workload(mnt: &Path) {
    fs::create_dir(mnt.join("docs")).unwrap();
    let a = File::create(mnt.join("docs/a")).unwrap();
    write_pattern(&a, 0, 10_000);
    write_pattern(&a, 50_000, 3000);
    write_pattern(&a, 4096, 100);
    a.sync_all().unwrap();
    drop(a);

    let b = OpenOptions::new().create(true).truncate(false).write(true).open(mnt.join("b")).unwrap();
    for i in 0..20 {
        write_pattern(&b, i * 777, 777);
    }
    b.sync_data().unwrap();
    drop(b);
    OpenOptions::new().write(true).open(mnt.join("b")).unwrap().set_len(9000).unwrap();

    write_pattern(&File::create(mnt.join("docs/c")).unwrap(), 0, 5000);
    let tmp = File::create(mnt.join("docs/c.tmp")).unwrap();
    write_pattern(&tmp, 0, 20_000);
    tmp.sync_all().unwrap();
    drop(tmp);
    fs::rename(mnt.join("docs/c.tmp"), mnt.join("docs/c")).unwrap();

    write_pattern(&File::create(mnt.join("junk")).unwrap(), 0, 5000);
    fs::remove_file(mnt.join("junk")).unwrap();

    // git's object store: written under a temporary name, linked to its final one, the first unlinked.
    write_pattern(&File::create(mnt.join("docs/tmp_obj")).unwrap(), 0, 6000);
    fs::create_dir(mnt.join("docs/ab")).unwrap();
    fs::hard_link(mnt.join("docs/tmp_obj"), mnt.join("docs/ab/cdef")).unwrap();
    fs::remove_file(mnt.join("docs/tmp_obj")).unwrap();
    fs::create_dir(mnt.join("empty")).unwrap();
    fs::remove_dir(mnt.join("empty")).unwrap();

    write_pattern(&File::create(mnt.join("docs/a2")).unwrap(), 0, 30_000);
    write_pattern(&File::create(mnt.join("docs/a2")).unwrap(), 0, 100);
    assert_eq!(fs::read(mnt.join("docs/c")).unwrap().len(), 20_000);
}

/// Files (with their bytes) and directories under `root`, without mcfs's state directory.
fn tree(root: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(root.join(&dir)).unwrap_or_else(|e| panic!("readdir {}: {e}", dir.display())) {
            let entry = entry.unwrap();
            let rel = dir.join(entry.file_name());
            if rel == Path::new(mcfs_core::STATE_DIR) {
                continue;
            }
            if entry.file_type().unwrap().is_dir() {
                stack.push(rel.clone());
                out.insert(rel, None);
            } else {
                out.insert(rel.clone(), Some(fs::read(root.join(&rel)).unwrap()));
            }
        }
    }
    out
}

fn read_trace(path: &Path) -> Vec<TraceEvent> {
    let input = BufReader::new(File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())));
    let events: Result<Vec<_>, _> = if path.extension() == Some(OsStr::new("bin")) {
        BinaryReader::new(input).collect()
    } else {
        TextReader::new(input).collect()
    };
    events.unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The byte ranges written to each path, merged.
fn written(events: &[TraceEvent]) -> BTreeMap<String, Vec<(u64, u64)>> {
    let mut ranges: BTreeMap<String, Vec<(u64, u64)>> = BTreeMap::new();
    for e in events {
        if let EventKind::Write { path, offset, len } = &e.kind {
            ranges.entry(String::from_utf8_lossy(path).into_owned()).or_default().push((*offset, offset + len));
        }
    }
    for list in ranges.values_mut() {
        list.sort();
        let mut merged: Vec<(u64, u64)> = Vec::new();
        for (start, end) in list.drain(..) {
            match merged.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => merged.push((start, end)),
            }
        }
        *list = merged;
    }
    ranges
}

/// The file operations other than reads, writes and closes (whose number
/// and order depend on the kernel), as `op path...` lines.
fn namespace_ops(events: &[TraceEvent]) -> Vec<String> {
    let s = |p: &[u8]| String::from_utf8_lossy(p).into_owned();
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Open { path } => Some(format!("open {}", s(path))),
            EventKind::Create { path } => Some(format!("create {}", s(path))),
            EventKind::Fsync { path } => Some(format!("fsync {}", s(path))),
            EventKind::Fdatasync { path } => Some(format!("fdatasync {}", s(path))),
            EventKind::Truncate { path, size } => Some(format!("truncate {} {size}", s(path))),
            EventKind::Unlink { path } => Some(format!("unlink {}", s(path))),
            EventKind::Rename { from, to } => Some(format!("rename {} {}", s(from), s(to))),
            EventKind::Link { from, to } => Some(format!("link {} {}", s(from), s(to))),
            EventKind::Mkdir { path } => Some(format!("mkdir {}", s(path))),
            EventKind::Rmdir { path } => Some(format!("rmdir {}", s(path))),
            _ => None,
        })
        .collect()
}

fn now_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as u64
}

fn idle_operations(dirs: &Dirs) -> u64 {
    let s = stats(dirs);
    s["idle"]["operations"].as_u64().unwrap_or_else(|| panic!("mcfs stat --json has no idle.operations: {s}"))
}

/// One `struct input_event` (64-bit layout: timeval, type, code, value).
fn input_event(at: SystemTime, kind: u16, code: u16, value: i32) -> Vec<u8> {
    let since = at.duration_since(UNIX_EPOCH).unwrap();
    let mut out = Vec::new();
    out.extend_from_slice(&(since.as_secs() as i64).to_ne_bytes());
    out.extend_from_slice(&i64::from(since.subsec_micros()).to_ne_bytes());
    out.extend_from_slice(&kind.to_ne_bytes());
    out.extend_from_slice(&code.to_ne_bytes());
    out.extend_from_slice(&value.to_ne_bytes());
    out
}

/// A touch screen's reports: a drag of 12 movements 10 ms apart from `t0`,
/// then a tap a second later (each finger lift is its own report).
fn touch_events(t0: SystemTime) -> Vec<u8> {
    const EV_SYN: u16 = 0;
    const EV_KEY: u16 = 1;
    const EV_ABS: u16 = 3;
    const BTN_TOUCH: u16 = 0x14a;
    const ABS_X: u16 = 0;
    const ABS_MT_TRACKING_ID: u16 = 0x39;
    let ms = |n: u64| t0 + Duration::from_millis(n);
    let mut out = Vec::new();
    for (start, moves) in [(0, 12), (1000, 0)] {
        out.extend(input_event(ms(start), EV_ABS, ABS_MT_TRACKING_ID, 1));
        out.extend(input_event(ms(start), EV_KEY, BTN_TOUCH, 1));
        out.extend(input_event(ms(start), EV_ABS, ABS_X, 10));
        out.extend(input_event(ms(start), EV_SYN, 0, 0));
        for i in 1..=moves {
            out.extend(input_event(ms(start + 10 * i), EV_ABS, ABS_X, 10 + i as i32));
            out.extend(input_event(ms(start + 10 * i), EV_SYN, 0, 0));
        }
        let lift = ms(start + 10 * moves + 10);
        out.extend(input_event(lift, EV_ABS, ABS_MT_TRACKING_ID, -1));
        out.extend(input_event(lift, EV_KEY, BTN_TOUCH, 0));
        out.extend(input_event(lift, EV_SYN, 0, 0));
    }
    out
}

/// `mcfs trace replay TRACE --into DIR`, which must succeed; returns its output.
fn replay(dirs: &Dirs, trace: &Path, into: &Path) -> String {
    let (trace, into) = (trace.to_str().unwrap(), into.to_str().unwrap());
    mcfs(dirs, &["trace", "replay", trace, "--into", into]).assert_success("mcfs trace replay")
}

#[test]
fn record_then_replay_reproduces_the_tree_and_input_reaches_engine_and_trace() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    assert_eq!(std::mem::size_of::<libc::input_event>(), 24, "this test writes 64-bit input_event records");
    let dirs = Dirs::new(Some(&config()));
    let trace = dirs.logs.join("recorded.trace");
    let fifo = dirs.logs.join("touchscreen");
    let c_fifo = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_fifo.as_ptr(), 0o600) }, 0, "mkfifo: {}", std::io::Error::last_os_error());
    let (trace_arg, fifo_arg) = (trace.display().to_string(), fifo.display().to_string());
    let daemon = Daemon::foreground(&dirs, &["--record", &trace_arg, "--input-device", &fifo_arg]);

    let started_ns = now_ns();
    // SAFETY: gettid has no preconditions; FUSE requests carry the calling thread's id.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) } as u32;
    workload(&dirs.mnt);

    // User input: a tap through the control socket, then, well apart (the
    // engine merges inputs less than 50 ms apart), a drag and a tap from
    // the "device". Its writer leaving ends the device's watcher.
    assert_eq!(idle_operations(&dirs), 0);
    ctl(&dirs, &["input"]);
    assert_eq!(idle_operations(&dirs), 1, "mcfs ctl input reached the idle predictor");
    std::thread::sleep(Duration::from_millis(100));
    let touch_t0 = SystemTime::now();
    let mut device = OpenOptions::new().write(true).open(&fifo).unwrap();
    device.write_all(&touch_events(touch_t0)).unwrap();
    drop(device);
    let deadline = Instant::now() + Duration::from_secs(60);
    while idle_operations(&dirs) < 2 {
        assert!(Instant::now() < deadline, "the device's input never reached the engine:\n{}", daemon.log_text());
        std::thread::sleep(Duration::from_millis(20));
    }
    daemon.unmount();

    let events = read_trace(&trace);
    let file_ops: Vec<&TraceEvent> = events.iter().filter(|e| !matches!(e.kind, EventKind::Input { .. })).collect();
    assert!(file_ops.iter().all(|e| e.app == "recorder-test".into()), "every operation is the configured app's");
    assert!(file_ops.windows(2).all(|w| w[0].time_ns <= w[1].time_ns), "times never go back");
    assert!(file_ops[0].time_ns >= started_ns && file_ops.last().unwrap().time_ns <= now_ns(), "wall-clock times");
    assert!(
        file_ops.iter().filter(|e| matches!(e.kind, EventKind::Write { .. })).all(|e| e.pid == tid),
        "writes carry the writing thread's id {tid}"
    );

    let ops = namespace_ops(&events);
    let expected = [
        "mkdir /docs",
        "create /docs/a",
        "truncate /docs/a 0",
        "fsync /docs/a",
        "create /b",
        "fdatasync /b",
        "open /b",
        "truncate /b 9000",
        "create /docs/c",
        "create /docs/c.tmp",
        "fsync /docs/c.tmp",
        "rename /docs/c.tmp /docs/c",
        "create /junk",
        "unlink /junk",
        "create /docs/tmp_obj",
        "mkdir /docs/ab",
        "link /docs/tmp_obj /docs/ab/cdef",
        "unlink /docs/tmp_obj",
        "mkdir /empty",
        "rmdir /empty",
        "create /docs/a2",
        "open /docs/a2",
        "truncate /docs/a2 0",
        "open /docs/c",
    ];
    let mut rest = ops.iter();
    for want in expected {
        assert!(rest.any(|op| op == want), "{want:?} missing or out of order in {ops:#?}");
    }
    let w = written(&events);
    assert_eq!(w["/docs/a"], [(0, 10_000), (50_000, 53_000)]);
    assert_eq!(w["/b"], [(0, 20 * 777)]);
    assert_eq!(w["/docs/c.tmp"], [(0, 20_000)]);
    assert_eq!(w["/docs/a2"], [(0, 30_000)]);
    assert_eq!(w["/junk"], [(0, 5000)]);
    let closes = events.iter().filter(|e| matches!(e.kind, EventKind::Close { .. }) && e.pid == tid).count();
    let opens = ops.iter().filter(|op| op.starts_with("open ") || op.starts_with("create ")).count();
    assert_eq!(closes, opens, "one close per open: every descriptor was closed once");

    let inputs: Vec<(&str, InputKind, u64, u64)> = events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::Input { input, duration_ns } => Some((&*e.app, input, duration_ns, e.time_ns)),
            _ => None,
        })
        .collect();
    let t0 = touch_t0.duration_since(UNIX_EPOCH).unwrap();
    let t0 = t0.as_secs() * 1_000_000_000 + u64::from(t0.subsec_micros()) * 1000;
    assert_eq!(inputs.len(), 3, "{inputs:?}");
    assert_eq!((inputs[0].0, inputs[0].1, inputs[0].2), ("-", InputKind::Tap, 0), "mcfs ctl input");
    assert_eq!(inputs[1], ("-", InputKind::Drag, 120_000_000, t0), "the drag, merged into one operation");
    assert_eq!(inputs[2], ("-", InputKind::Tap, 0, t0 + 1_000_000_000), "the tap (its lift is no operation)");

    // Replaying into an empty directory rebuilds the tree the mount left.
    let left = tree(&dirs.backing);
    assert_eq!(left[Path::new("docs/a")].as_ref().map(Vec::len), Some(53_000));
    assert_eq!(left[Path::new("docs/ab/cdef")].as_ref().map(Vec::len), Some(6000), "the linked object");
    assert!(!left.contains_key(Path::new("junk")) && !left.contains_key(Path::new("empty")));
    let scratch = tempfile::tempdir().unwrap();
    let output = replay(&dirs, &trace, scratch.path());
    assert!(output.contains(&format!("{} file operations done, 0 skipped", events.len() - inputs.len())), "{output}");
    assert_eq!(tree(scratch.path()), left, "replay into an empty directory");

    // And onto a fresh mcfs mount, itself recorded in the binary form.
    let dirs2 = Dirs::new(None);
    let trace2 = dirs2.logs.join("replayed.bin");
    let daemon2 = Daemon::foreground(&dirs2, &["--record", &trace2.display().to_string()]);
    let report = live_replay::replay_into(&dirs2.mnt, events.iter().cloned().map(Ok)).unwrap();
    assert_eq!((report.skipped, report.ignored, report.left_open), (0, 3, 0), "{report:?}");
    daemon2.unmount();
    assert_eq!(tree(&dirs2.backing), left, "replay onto an mcfs mount");
    let replayed = read_trace(&trace2);
    assert_eq!(written(&replayed), w, "the replay's own recording writes what the first one did");
    assert_eq!(namespace_ops(&replayed), ops, "and changes the namespace the same way");
}

#[test]
fn a_missing_input_device_or_a_trace_inside_the_mount_fails_the_mount_by_name() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dirs = Dirs::new(None);
    let missing = dirs.logs.join("no-such-event-device");
    let backing = dirs.backing.display().to_string();
    let mnt = dirs.mnt.display().to_string();
    let out = mcfs(&dirs, &["mount", "--input-device", missing.to_str().unwrap(), &backing, &mnt]);
    assert!(!out.status.success());
    assert!(
        out.output.contains(&format!("input device {}: cannot open: ", missing.display()))
            && out.output.contains("(os error 2)"),
        "{}",
        out.output
    );
    let inside = dirs.mnt.join("trace.txt");
    let out = mcfs(&dirs, &["mount", "--record", inside.to_str().unwrap(), &backing, &mnt]);
    assert!(!out.status.success());
    assert!(out.output.contains("is inside the mount point"), "{}", out.output);
}
