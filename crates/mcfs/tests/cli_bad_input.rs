//! No command-line input makes `mcfs` panic: every subcommand is run with a
//! sample of bad inputs (bad and huge numbers, NaN, missing files,
//! directories where files are expected, files where directories are,
//! non-UTF-8 paths, configs out of range) and must exit non-zero with a
//! message, never with Rust's panic status (101) or a "panicked at". And a
//! closed output pipe (`mcfs stat --json | head -c 100`) ends a command
//! quietly, killed by SIGPIPE as `cat` would be.

mod common;

use common::{mcfs_bin, Daemon, Dirs};
use std::ffi::{OsStr, OsString};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// The inputs the cases below refer to, in a temporary directory.
struct Inputs {
    root: tempfile::TempDir,
}

impl Inputs {
    fn new() -> Inputs {
        let root = tempfile::tempdir().unwrap();
        let at = |name: &str| root.path().join(name);
        for dir in ["dir", "back", "mnt", "fg"] {
            std::fs::create_dir(at(dir)).unwrap();
        }
        std::fs::write(at("garbage"), b"\x00\xffnot a trace, config, profile or anything\n\x01").unwrap();
        let configs = [
            ("huge.toml", "writeback_interval_seconds = 1e308\n"),
            ("stale.toml", "max_stale_seconds = 1e308\n"),
            ("nan.toml", "dirty_high_ratio = nan\n"),
            ("apps.toml", "[[apps]]\nname = \"a\"\nuids = [10001]\n[[apps]]\nname = \"a\"\nuids = [10001]\n"),
            ("system.toml", "[fasttrack]\nsystem_apps = [\"nobody-knows\"]\n"),
        ];
        for (name, text) in configs {
            std::fs::write(at(name), text).unwrap();
        }
        let inputs = Inputs { root };
        let synth = inputs.run("trace synth --io e-flat --user reader --duration 1 -o {trace}");
        assert!(synth.status.success(), "{}", String::from_utf8_lossy(&synth.stderr));
        inputs
    }

    /// `{name}` in an argument becomes the path of that input; `{nonutf8}`
    /// a path whose name is not UTF-8.
    fn arg(&self, template: &str) -> OsString {
        let base = self.root.path().as_os_str().as_bytes();
        let mut out = Vec::new();
        let mut rest = template.as_bytes();
        while let Some(start) = rest.iter().position(|&b| b == b'{') {
            let end = rest.iter().position(|&b| b == b'}').expect("closing brace");
            out.extend_from_slice(&rest[..start]);
            let name = &rest[start + 1..end];
            out.extend_from_slice(base);
            out.push(b'/');
            out.extend_from_slice(if name == b"nonutf8" { b"bad-\xff\xfe-name" } else { name });
            rest = &rest[end + 1..];
        }
        out.extend_from_slice(rest);
        OsStr::from_bytes(&out).to_owned()
    }

    fn run(&self, args: &str) -> Output {
        Command::new(mcfs_bin())
            .args(args.split(' ').map(|a| self.arg(a)))
            .env_remove("MCFS_LOG")
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .output()
            .expect("run mcfs")
    }
}

/// Each case must fail: with a message, and neither a panic nor success.
const CASES: &[&str] = &[
    "mount {missing} {mnt}",
    "mount {garbage} {mnt}",
    "mount {back} {garbage}",
    "mount {nonutf8} {mnt}",
    "mount --config {huge.toml} {back} {mnt}",
    "mount --config {stale.toml} {back} {mnt}",
    "mount --config {nan.toml} {back} {mnt}",
    "mount --config {apps.toml} {back} {mnt}",
    "mount --config {system.toml} {back} {mnt}",
    "mount --config {dir} {back} {mnt}",
    "mount --config {garbage} {back} {mnt}",
    "mount --threads 0 {back} {mnt}",
    "mount --threads 99999999999999999999 {back} {mnt}",
    "mount --device-profile {garbage} {back} {mnt}",
    "mount --device-profile {dir} {back} {mnt}",
    "mount --fg-tasks {missing} {back} {mnt}",
    "mount --input-device {missing} {back} {mnt}",
    "mount --input-device {dir} {back} {mnt}",
    "mount --record {mnt}/trace {back} {mnt}",
    "umount {mnt}",
    "umount {missing}",
    "umount {nonutf8}",
    "umount --timeout -1 {mnt}",
    "umount --timeout 1e308 {mnt}",
    "stat {mnt}",
    "stat --json {missing}",
    "stat {nonutf8}",
    "ctl {mnt} checkpoint",
    "ctl {mnt} battery 101",
    "ctl {mnt} battery 18446744073709551616",
    "ctl {mnt} advance 1e308",
    "ctl {mnt} advance NaN",
    "ctl {mnt} advance -1",
    "ctl {mnt} mode x fast",
    "ctl {nonutf8} fg",
    "recover {missing}",
    "recover {garbage}",
    "recover {dir}",
    "recover {nonutf8}",
    "bench --cache-mib 0",
    "bench --cache-mib abc",
    "bench --workloads nope",
    "bench --seed -1",
    "bench --scratch {missing}",
    "report",
    "report --mobifs {missing}",
    "report --mobifs {garbage}",
    "report --fasttrack {garbage}",
    "report --fasttrack {nonutf8}",
    "trace import --format strace {missing} -o {out}",
    "trace import --format strace {dir} -o {out}",
    "trace import --format csv --columns nonsense {garbage} -o {out}",
    "trace import --format csv --offset-unit 0 {garbage} -o {out}",
    "trace import --format csv --time-unit 1e308 {garbage} -o {out}",
    "trace import --format strace {garbage} -o {dir}",
    "trace convert {garbage} -o {out}",
    "trace convert {dir} -o {out}",
    "trace convert {nonutf8} -o {out}",
    "trace synth --io nope --user reader -o {out}",
    "trace synth --io e-flat --user reader --duration 1e308 -o {out}",
    "trace synth --io e-flat --user reader --duration -1 -o {out}",
    "trace synth --io e-flat --user reader --seed abc -o {out}",
    "trace synth --io e-flat --user reader -o {dir}",
    "trace synth --suite {garbage}",
    "trace synth --fasttrack nope -o {out}",
    "trace synth --fasttrack launch --scale 1e308 -o {out}",
    "trace synth --fasttrack launch --scale -1 -o {out}",
    "trace synth --fasttrack launch --scale NaN -o {out}",
    "trace stats {garbage}",
    "trace stats {dir}",
    "trace stats {missing}",
    "trace stats {nonutf8}",
    "trace replay {garbage} --into {dir}",
    "trace replay {trace} --into {missing}",
    "trace replay {trace} --into {garbage}",
    "sim --trace {garbage}",
    "sim --trace {dir}",
    "sim --trace {missing}",
    "sim --trace {nonutf8}",
    "sim --trace {trace} --config {huge.toml}",
    "sim --trace {trace} --config {stale.toml}",
    "sim --trace {trace} --config {apps.toml}",
    "sim --trace {trace} --device {garbage}",
    "sim --trace {trace} --sample-every 0",
    "sim --trace {trace} --sample-every 1e308",
    "sim --trace {trace} --sample-every 99999999999999999999999",
    "sim --fasttrack {dir}",
    "sim --fasttrack {fg} --bg {missing}",
    "sim --fasttrack {fg} --warmup 1e308",
    "sim --fasttrack {fg} --config {huge.toml}",
    "flashdev --profile {garbage} {back} {mnt}",
    "flashdev --threads 0 {back} {mnt}",
    "flashdev --stats {missing}/x.json {back} {mnt}",
    "flashdev {missing} {mnt}",
    "flashdev {back} {nonutf8}",
    "flashdev --log {dir} {back} {mnt}",
    "flashdev --scheduler nope {back} {mnt}",
];

#[test]
fn bad_input_to_every_subcommand_fails_with_a_message_and_never_panics() {
    let inputs = Inputs::new();
    let mut failures = Vec::new();
    for case in CASES {
        let out = inputs.run(case);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let problem = if out.status.code() == Some(101) || stderr.contains("panicked") {
            Some("panicked")
        } else if out.status.success() {
            Some("succeeded")
        } else if out.status.code().is_none() {
            Some("was killed by a signal")
        } else if stderr.trim().is_empty() {
            Some("said nothing on stderr")
        } else {
            None
        };
        if let Some(problem) = problem {
            failures.push(format!("mcfs {case}: {problem} ({}):\n{stderr}", out.status));
        }
    }
    assert!(failures.is_empty(), "{} of {} cases:\n{}", failures.len(), CASES.len(), failures.join("\n"));
}

/// Runs `mcfs ARGS` with stdout a pipe whose reading end is already closed.
fn into_closed_pipe(args: &[&OsStr]) -> std::process::ExitStatus {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 returns.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: pipe2 succeeded; each descriptor is owned once.
    let (read_end, write_end) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read_end);
    let out = Command::new(mcfs_bin())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::from(write_end))
        .stderr(Stdio::piped())
        .output()
        .expect("run mcfs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.is_empty(), "mcfs {args:?} into a closed pipe wrote to stderr:\n{stderr}");
    out.status
}

#[test]
fn a_closed_pipe_ends_printing_commands_quietly() {
    let inputs = Inputs::new();
    let trace = inputs.arg("{trace}");
    for args in [
        &[OsStr::new("--help")][..],
        &[OsStr::new("trace"), OsStr::new("synth"), OsStr::new("--list")],
        &[OsStr::new("trace"), OsStr::new("stats"), &trace],
        &[OsStr::new("sim"), OsStr::new("--trace"), &trace],
    ] {
        let status = into_closed_pipe(args);
        assert_eq!(status.signal(), Some(libc::SIGPIPE), "mcfs {args:?} into a closed pipe: {status}");
    }
}

#[test]
fn stat_json_into_a_closed_pipe_ends_quietly() {
    let dirs = Dirs::new(None);
    let daemon = Daemon::daemonised(&dirs, &[]);
    let status = into_closed_pipe(&[OsStr::new("stat"), OsStr::new("--json"), dirs.mnt.as_os_str()]);
    assert_eq!(status.signal(), Some(libc::SIGPIPE), "{status}");
    // The daemon lives on: its client hung up, which is no business of its.
    assert!(Path::new(&dirs.mnt).join(".").exists());
    daemon.unmount();
}
