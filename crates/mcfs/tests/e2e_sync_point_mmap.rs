//! A file mapped shared (as SQLite maps its WAL index, `-shm`) and written
//! through the mapping, on a sync-point mount (the kernel's writeback
//! cache), while the same app's fsyncs of another file make sync points
//! that hand the mapped file's dirty pages over: its bytes arrive exact;
//! and a daemon SIGKILLed meanwhile neither hangs the mount nor kills the
//! app with SIGBUS on pages it had mapped, and recovery finds the mapped
//! file as it was at one of the app's sync points. Over both transports.
//!
//! The app is a child process (this test binary running `mapper_process`):
//! a SIGBUS kills it, not the test.

mod common;

use common::{recover, Daemon, Dirs};
use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};

const PAGE: usize = 4096;
/// Pages of the mapped file (SQLite's WAL index grows in 32 KiB chunks).
const PAGES: usize = 24;
/// Rounds of the run that ends cleanly.
const ROUNDS: u64 = 200;
/// Rounds acknowledged before the daemon is killed.
const ROUNDS_BEFORE_KILL: u64 = 30;
/// Where `mapper_process` works, and how many rounds it makes (0: until an fsync fails).
const MAPPER_DIR: &str = "MCFS_TEST_MAPPER_DIR";
const MAPPER_ROUNDS: &str = "MCFS_TEST_MAPPER_ROUNDS";
/// The transports: the ring where the kernel has it, and `/dev/fuse`.
const TRANSPORTS: [&str; 2] = ["auto", "off"];

/// Page `index` as round `round` leaves it: the round, the page, then bytes of both.
fn page_bytes(round: u64, index: usize) -> Vec<u8> {
    let mut page: Vec<u8> = (0..PAGE).map(|i| (round as usize * 31 + index * 7 + i) as u8).collect();
    page[..8].copy_from_slice(&round.to_le_bytes());
    page[8..16].copy_from_slice(&(index as u64).to_le_bytes());
    page
}

fn mapped_file(round: u64) -> Vec<u8> {
    (0..PAGES).flat_map(|index| page_bytes(round, index)).collect()
}

fn sync_point_dirs(transport: &str) -> Dirs {
    Dirs::new(Some(&format!("consistency = \"sync-point\"\n[fuse]\nio_uring = \"{transport}\"\n")))
}

/// The app, started on `dir`, and its output.
fn start_mapper(dir: &Path, rounds: u64) -> (Child, BufReader<ChildStdout>) {
    let mut child = Command::new(std::env::current_exe().expect("this test binary"))
        .args(["--exact", "mapper_process", "--ignored", "--nocapture", "--test-threads", "1"])
        .env(MAPPER_DIR, dir)
        .env(MAPPER_ROUNDS, rounds.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the mapper");
    let out = BufReader::new(child.stdout.take().expect("stdout"));
    (child, out)
}

/// The app's next line that starts with `word`, and the number after it;
/// if the app ends first, fails saying how it ended (SIGBUS, say).
fn hear(app: &mut Child, out: &mut BufReader<ChildStdout>, word: &str) -> u64 {
    let mut line = String::new();
    loop {
        line.clear();
        if out.read_line(&mut line).expect("hear the mapper") == 0 {
            let status = app.wait().expect("wait for the mapper");
            let bus = if status.signal() == Some(libc::SIGBUS) { ": SIGBUS on its mapping" } else { "" };
            panic!("the app ended ({status}{bus}) before saying {word:?}");
        }
        // The harness prints "test mapper_process ... " before the first word.
        if let Some(rest) = line.trim_end().split(' ').skip_while(|w| *w != word).nth(1) {
            return rest.parse().unwrap_or_else(|_| panic!("bad line from the mapper: {line:?}"));
        }
    }
}

/// Fails unless the app ended well; a SIGBUS is named.
fn assert_app_ended_well(child: &mut Child, what: &str) {
    let status = child.wait().expect("wait for the mapper");
    assert_ne!(status.signal(), Some(libc::SIGBUS), "{what}: the app died of SIGBUS on its mapping");
    assert!(status.success(), "{what}: the app ended with {status}");
}

#[test]
fn pages_written_through_a_mapping_across_sync_points_arrive_exact() {
    for transport in TRANSPORTS {
        let dirs = sync_point_dirs(transport);
        let daemon = Daemon::foreground(&dirs, &[]);
        let (mut app, mut out) = start_mapper(&dirs.mnt, ROUNDS);
        assert_eq!(hear(&mut app, &mut out, "done"), ROUNDS, "{transport}");
        assert_app_ended_well(&mut app, transport);
        daemon.unmount();
        let backing = fs::read(dirs.backing.join("map")).expect("the mapped file in the backing directory");
        assert!(backing == mapped_file(ROUNDS), "{transport}: the backing directory holds the last round's bytes");
        let daemon = Daemon::foreground(&dirs, &[]);
        assert!(fs::read(dirs.mnt.join("map")).expect("read") == mapped_file(ROUNDS), "{transport}: after a remount");
        daemon.unmount();
    }
}

#[test]
fn a_daemon_killed_under_a_mapping_app_hangs_nothing_and_leaves_a_sync_point() {
    for transport in TRANSPORTS {
        let dirs = sync_point_dirs(transport);
        let daemon = Daemon::foreground(&dirs, &[]);
        let (mut app, mut out) = start_mapper(&dirs.mnt, 0);
        while hear(&mut app, &mut out, "round") < ROUNDS_BEFORE_KILL {}
        // The app keeps writing and fsyncing while the daemon dies.
        daemon.kill();
        let acked = hear(&mut app, &mut out, "dead");
        assert!(acked >= ROUNDS_BEFORE_KILL, "{transport}: {acked} rounds acknowledged");
        assert_eq!(hear(&mut app, &mut out, "touched"), PAGES as u64, "{transport}");
        assert_app_ended_well(&mut app, transport);

        recover(&dirs);
        let daemon = Daemon::foreground(&dirs, &[]);
        let found = fs::read(dirs.mnt.join("map")).unwrap_or_default();
        let round = found.get(..8).map_or(0, |r| u64::from_le_bytes(r.try_into().expect("8 bytes")));
        let at_a_sync_point = (round == 0 && found.iter().all(|b| *b == 0)) || found == mapped_file(round);
        assert!(at_a_sync_point, "{transport}: the mapped file is not as one round left it (round {round} in page 0)");
        assert!(round <= acked + 1, "{transport}: round {round} recovered, only {acked} acknowledged");
        daemon.unmount();
    }
}

/// Not a test of its own: the app of the tests above. Grows `map` to
/// `PAGES` pages as SQLite grows its WAL index (a byte at the end of each
/// page), maps it shared, and each round writes every page through the
/// mapping and then writes and fsyncs `log` (a sync point), saying
/// `round N`. When an fsync fails (the daemon died) it says `dead N` (the
/// last round acknowledged), reads and rewrites every page of the mapping,
/// says `touched PAGES` and ends; after `MAPPER_ROUNDS` rounds it says
/// `done N` and ends.
#[test]
#[ignore = "run by the tests of this file"]
fn mapper_process() {
    let dir = PathBuf::from(std::env::var_os(MAPPER_DIR).expect("run by another test, which sets the dir"));
    let rounds: u64 = std::env::var(MAPPER_ROUNDS).ok().and_then(|r| r.parse().ok()).expect("rounds");
    let open = |name: &str| -> File {
        OpenOptions::new().read(true).write(true).create(true).truncate(false).open(dir.join(name)).expect("open")
    };
    let (map_file, log) = (open("map"), open("log"));
    for index in 0..PAGES {
        map_file.write_all_at(&[0], (index * PAGE + PAGE - 1) as u64).expect("grow the mapped file");
    }
    let len = PAGES * PAGE;
    // SAFETY: a fresh shared mapping of `len` bytes of a file this process
    // holds open; nothing else in this process refers to that memory.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            map_file.as_raw_fd(),
            0,
        )
    };
    assert_ne!(base, libc::MAP_FAILED, "mmap: {}", std::io::Error::last_os_error());
    // SAFETY: `base` maps `len` bytes, readable and writable, until munmap below.
    let mapping = unsafe { std::slice::from_raw_parts_mut(base.cast::<u8>(), len) };
    let say = |word: &str, n: u64| {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{word} {n}").and_then(|()| out.flush()).expect("stdout");
    };
    let mut round = 0;
    loop {
        round += 1;
        for index in 0..PAGES {
            mapping[index * PAGE..(index + 1) * PAGE].copy_from_slice(&page_bytes(round, index));
        }
        let synced = log.write_all_at(&round.to_le_bytes(), 0).and_then(|()| log.sync_all());
        if synced.is_err() {
            say("dead", round - 1);
            for index in 0..PAGES {
                let page = &mut mapping[index * PAGE..(index + 1) * PAGE];
                assert!(page == page_bytes(round, index), "page {index} changed under the mapping");
                page[16] ^= 1;
            }
            say("touched", PAGES as u64);
            break;
        }
        say("round", round);
        if round == rounds {
            say("done", round);
            break;
        }
    }
    // SAFETY: the mapping made above; `mapping` is not used after this.
    unsafe { libc::munmap(base, len) };
}
