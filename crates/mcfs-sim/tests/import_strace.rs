//! The strace importer on real `strace -f -tt -y` logs (tests/fixtures, trimmed) and on hand-written edge cases.

use mcfs_sim::import::strace::{StraceImporter, StraceOptions};
use mcfs_sim::{EventKind, Position, TraceEvent};

const SQLITE_LOG: &str = include_str!("fixtures/sqlite3_create_insert.strace");
const SHELL_LOG: &str = include_str!("fixtures/sh_background_write_mv.strace");

fn import(log: &str, options: StraceOptions) -> Vec<TraceEvent> {
    StraceImporter::new(log.as_bytes(), options).collect::<Result<_, _>>().unwrap()
}

fn import_default(log: &str) -> Vec<TraceEvent> {
    import(log, StraceOptions::default())
}

fn writes_to(events: &[TraceEvent], wanted: &[u8]) -> Vec<(u64, u64)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Write { path, offset, len } if &path[..] == wanted => Some((*offset, *len)),
            _ => None,
        })
        .collect()
}

fn p(s: &str) -> mcfs_sim::PathBytes {
    s.as_bytes().into()
}

#[test]
fn sqlite_log_becomes_its_journal_protocol() {
    let events = import_default(SQLITE_LOG);
    assert!(events.iter().all(|e| e.app == "sqlite3".into() && e.pid == 32168));
    assert!(events.windows(2).all(|w| w[0].time_ns <= w[1].time_ns));
    assert_eq!(writes_to(&events, b"/tmp/x.db"), vec![(0, 4096), (4096, 4096), (0, 4096), (4096, 4096)]);
    assert_eq!(
        writes_to(&events, b"/tmp/x.db-journal"),
        vec![
            (0, 512),
            (0, 12),
            (0, 512),
            (512, 4),
            (516, 4096),
            (4612, 4),
            (4616, 4),
            (4620, 4096),
            (8716, 4),
            (0, 12)
        ]
    );
    let count = |f: &dyn Fn(&EventKind) -> bool| events.iter().filter(|e| f(&e.kind)).count();
    assert_eq!(count(&|k| matches!(k, EventKind::Fdatasync { .. })), 8);
    assert_eq!(count(&|k| *k == EventKind::Unlink { path: p("/tmp/x.db-journal") }), 2);
    assert_eq!(count(&|k| *k == EventKind::Create { path: p("/tmp/x.db") }), 1);
    assert_eq!(events.last().unwrap().kind, EventKind::Close { path: p("/tmp/x.db") });
    // 21:08:46.635628 on the wall clock.
    let create = events.iter().find(|e| e.kind == EventKind::Create { path: p("/tmp/x.db") }).unwrap();
    assert_eq!(create.time_ns, (21 * 3600 + 8 * 60 + 46) * 1_000_000_000 + 635_628_000);
}

#[test]
fn path_prefixes_select_the_files_of_interest() {
    let options = StraceOptions { path_prefixes: vec![p("/tmp/x.db")], ..StraceOptions::default() };
    let events = import(SQLITE_LOG, options);
    assert!(events.iter().all(|e| !matches!(&e.kind, EventKind::Open { path } if !path.starts_with(b"/tmp/x.db"))));
    assert_eq!(events[0].kind, EventKind::Create { path: p("/tmp/x.db") });
    assert!(!events.iter().any(|e| e.kind == EventKind::Fdatasync { path: p("/tmp") }));
}

#[test]
fn shell_log_joins_unfinished_calls_and_follows_processes() {
    let events = import_default(SHELL_LOG);
    let by = |app: &str| events.iter().filter(|e| e.app == app.into()).map(|e| e.kind.clone()).collect::<Vec<_>>();
    // The background child (forked from sh) writes through fd 1 after dup2; the write was split in two lines.
    let sh = by("sh");
    assert!(sh.contains(&EventKind::Create { path: p("/tmp/y.txt") }));
    assert!(sh.contains(&EventKind::Truncate { path: p("/tmp/y.txt"), size: 0 }));
    let write =
        events.iter().find(|e| e.kind == EventKind::Write { path: p("/tmp/y.txt"), offset: 0, len: 3 }).unwrap();
    assert_eq!((write.pid, &*write.app), (32190, "sh"));
    assert_eq!(write.time_ns % 1_000_000_000, 411_298_000, "stamped with the completing line");
    let cat = by("cat");
    assert!(cat.contains(&EventKind::Read { path: p("/tmp/y.txt"), offset: 0, len: 3 }));
    assert!(cat.contains(&EventKind::Read { path: p("/tmp/y.txt"), offset: 3, len: 0 }));
    assert_eq!(by("mv").last(), Some(&EventKind::Rename { from: p("/tmp/y.txt"), to: p("/tmp/z.txt") }));
}

#[test]
fn positions_appends_relative_paths_and_clock_formats() {
    let log = "\
[pid 7] 23:59:59.900000 openat(AT_FDCWD</home/u>, \"log\", O_WRONLY|O_CREAT|O_APPEND, 0644) = 3</home/u/log>
[pid 7] 23:59:59.900001 pwrite64(3</home/u/log>, \"...\", 10, 100) = 10
[pid 7] 23:59:59.900002 write(3</home/u/log>, \"abc\", 3) = 3
[pid 7] 00:00:00.000001 openat(AT_FDCWD</home/u>, \"d\", O_RDONLY) = 4</home/u/d>
[pid 7] 00:00:00.000002 lseek(4</home/u/d>, 8192, SEEK_SET) = 8192
[pid 7] 00:00:00.000003 read(4</home/u/d>, \"\"..., 4096) = 4096
[pid 7] 00:00:00.000004 read(4</home/u/d>, \"\"..., 4096) = -1 EIO (Input/output error)
[pid 7] 00:00:00.000005 unlinkat(AT_FDCWD</home/u>, \"old dir\", AT_REMOVEDIR) = 0
[pid 7] 00:00:00.000006 mkdirat(3</home/u/sub>, \"n\\x65w\\303\\251\", 0777) = 0
[pid 7] 00:00:00.000007 <... read resumed>\"\", 10) = 0
[pid 7] 00:00:00.000008 ftruncate(4</home/u/d>, 4096) = 0
[pid 7] 00:00:00.000009 exit_group(0) = ?
[pid 7] 00:00:00.000010 +++ exited with 0 +++
";
    let events = import_default(log);
    let kinds: Vec<EventKind> = events.iter().map(|e| e.kind.clone()).collect();
    assert_eq!(
        kinds,
        vec![
            EventKind::Create { path: p("/home/u/log") },
            EventKind::Write { path: p("/home/u/log"), offset: 100, len: 10 },
            EventKind::Write { path: p("/home/u/log"), offset: 110, len: 3 },
            EventKind::Open { path: p("/home/u/d") },
            EventKind::Read { path: p("/home/u/d"), offset: 8192, len: 4096 },
            EventKind::Rmdir { path: p("/home/u/old dir") },
            EventKind::Mkdir { path: "/home/u/sub/newé".as_bytes().into() },
            EventKind::Truncate { path: p("/home/u/d"), size: 4096 },
        ]
    );
    assert!(events.iter().all(|e| e.pid == 7 && e.app == "strace".into()));
    assert_eq!(events[3].time_ns, 86_400_000_000_000 + 1_000, "crossing midnight adds a day");

    let epoch = import_default("1 1700000000.250000 fsync(3</f>) = 0\n");
    assert_eq!(epoch[0].time_ns, 1_700_000_000_250_000_000);
}

#[test]
fn bad_lines_stop_the_import_with_their_number() {
    let cases = [
        ("1 10:00:00.0 fsync(3) = 0\n", 1, "run strace with -y"),
        ("1 10:00:00.0 close(3</f>) = 0\nhello world\n", 2, "timestamp"),
        ("1 10:00:00.0 close(3</f>) = 0\n\n1 25:00:00.0 close(3</f>) = 0\n", 3, "timestamp"),
        ("1 10:00:00.0 close(3</f>\n", 1, "unbalanced"),
        ("1 10:00:00.0 pread64(3</f>, \"\", 5) = 5\n", 1, "argument 4"),
        ("1 10:00:00.0 unlink(\"/a\\q\") = 0\n", 1, "unknown escape"),
    ];
    for (log, line, reason) in cases {
        let result: Result<Vec<_>, _> = StraceImporter::new(log.as_bytes(), StraceOptions::default()).collect();
        let err = result.unwrap_err();
        assert_eq!(err.position, Position::Line(line), "{log:?}: {err}");
        assert!(err.to_string().contains(reason), "{log:?}: {err}");
    }
}

fn importer(log: &str, options: StraceOptions) -> (Vec<TraceEvent>, std::collections::BTreeMap<&'static str, u64>) {
    let mut importer = StraceImporter::new(log.as_bytes(), options);
    let events = importer.by_ref().collect::<Result<Vec<_>, _>>().unwrap();
    (events, importer.skipped().clone())
}

fn kinds(events: &[TraceEvent]) -> Vec<EventKind> {
    events.iter().map(|e| e.kind.clone()).collect()
}

/// SQLite unlinks its WAL and keeps using the descriptor: strace 5.x prints `3</x>(deleted)`, older ones
/// `3</x (deleted)>`. Those calls have no name to replay on; they are counted, not refused with a wrong hint.
#[test]
fn calls_on_files_deleted_while_open_are_skipped_and_counted() {
    let log = "\
1 10:00:00.000000 openat(AT_FDCWD</d>, \"/d/x.db-wal\", O_RDWR|O_CREAT, 0644) = 3</d/x.db-wal>
1 10:00:00.000001 pwrite64(3</d/x.db-wal>, \"\"..., 4096, 0) = 4096
1 10:00:00.000002 unlink(\"/d/x.db-wal\") = 0
1 10:00:00.000003 fsync(3</d/x.db-wal>(deleted)) = 0
1 10:00:00.000004 pwrite64(3</d/x.db-wal (deleted)>, \"\"..., 10, 0) = 10
1 10:00:00.000005 close(3</d/x.db-wal>(deleted)) = 0
1 10:00:00.000006 openat(AT_FDCWD</d>, \"/d\", O_RDWR|O_TMPFILE, 0600) = 4</d/#1234>(deleted)
";
    let (events, skipped) = importer(log, StraceOptions::default());
    assert_eq!(
        kinds(&events),
        [
            EventKind::Create { path: p("/d/x.db-wal") },
            EventKind::Write { path: p("/d/x.db-wal"), offset: 0, len: 4096 },
            EventKind::Unlink { path: p("/d/x.db-wal") },
        ]
    );
    assert_eq!(skipped.get(mcfs_sim::import::strace::skip::DELETED), Some(&4), "{skipped:?}");
    let err = StraceImporter::new("1 10:00:00.0 fsync(3</x>junk) = 0\n".as_bytes(), StraceOptions::default())
        .find_map(Result::err)
        .unwrap();
    assert!(err.to_string().contains("run strace with -y"), "{err}");
}

/// git calls `mkdir("d")` and `unlink(".git/...")` with paths relative to its working directory, which the
/// log shows through `AT_FDCWD</dir>`, `chdir` and `fchdir` and children inherit.
#[test]
fn relative_paths_resolve_against_each_process_working_directory() {
    let log = "\
1 10:00:00.000000 mkdir(\"early\", 0777) = 0
1 10:00:00.000001 openat(AT_FDCWD</repo>, \"f\", O_RDONLY) = 3</repo/f>
1 10:00:00.000002 mkdir(\"d\", 0777) = 0
1 10:00:00.000003 unlink(\".git/index.lock\") = 0
1 10:00:00.000004 chdir(\"sub\") = 0
1 10:00:00.000005 clone(child_stack=NULL, flags=SIGCHLD) = 2
2 10:00:00.000006 rmdir(\"../d\") = 0
1 10:00:00.000007 fchdir(3</tmp>) = 0
1 10:00:00.000008 rename(\"a\", \"/x/b\") = 0
1 10:00:00.000009 unlinkat(AT_FDCWD, \"c\", 0) = 0
";
    let (events, skipped) = importer(log, StraceOptions::default());
    assert_eq!(
        kinds(&events),
        [
            EventKind::Open { path: p("/repo/f") },
            EventKind::Mkdir { path: p("/repo/d") },
            EventKind::Unlink { path: p("/repo/.git/index.lock") },
            EventKind::Rmdir { path: p("/repo/d") },
            EventKind::Rename { from: p("/tmp/a"), to: p("/x/b") },
            EventKind::Unlink { path: p("/tmp/c") },
        ]
    );
    assert_eq!(skipped.get(mcfs_sim::import::strace::skip::UNKNOWN_CWD), Some(&1), "the first mkdir: {skipped:?}");
    let given = StraceOptions { cwd: Some(p("/start")), ..StraceOptions::default() };
    let (events, skipped) = importer(log, given);
    assert_eq!(events[0].kind, EventKind::Mkdir { path: p("/start/early") });
    assert!(skipped.is_empty(), "{skipped:?}");
}

/// git writes an object to a temporary name, links it to its final one and unlinks the first: the link is
/// an event, so a replay keeps the object's data. Symbolic links and name swaps have no event: counted.
#[test]
fn links_symlinks_and_rename_flags() {
    use mcfs_sim::import::strace::skip;
    let log = "\
1 10:00:00.000000 openat(AT_FDCWD</r>, \".git/objects/tmp_obj\", O_RDWR|O_CREAT|O_EXCL, 0444) = 3</r/.git/objects/tmp_obj>
1 10:00:00.000001 write(3</r/.git/objects/tmp_obj>, \"x\"..., 65536) = 65536
1 10:00:00.000002 close(3</r/.git/objects/tmp_obj>) = 0
1 10:00:00.000003 link(\".git/objects/tmp_obj\", \".git/objects/ab/cdef\") = 0
1 10:00:00.000004 unlink(\".git/objects/tmp_obj\") = 0
1 10:00:00.000005 linkat(AT_FDCWD</r>, \"/r/.git/objects/ab/cdef\", 4</r/.git>, \"copy\", 0) = 0
1 10:00:00.000006 symlink(\"target\", \"sl\") = 0
1 10:00:00.000007 renameat2(AT_FDCWD</r>, \"sl\", AT_FDCWD</r>, \"sl2\", RENAME_NOREPLACE) = 0
1 10:00:00.000008 unlink(\"/r/sl2\") = 0
1 10:00:00.000009 renameat2(AT_FDCWD</r>, \"a\", AT_FDCWD</r>, \"b\", RENAME_EXCHANGE) = 0
1 10:00:00.000010 renameat2(AT_FDCWD</r>, \"a\", AT_FDCWD</r>, \"c\", RENAME_NOREPLACE) = 0
";
    let (events, skipped) = importer(log, StraceOptions::default());
    let obj = p("/r/.git/objects/ab/cdef");
    assert_eq!(
        kinds(&events[3..]),
        [
            EventKind::Link { from: p("/r/.git/objects/tmp_obj"), to: obj.clone() },
            EventKind::Unlink { path: p("/r/.git/objects/tmp_obj") },
            EventKind::Link { from: obj.clone(), to: p("/r/.git/copy") },
            EventKind::Rename { from: p("/r/a"), to: p("/r/c") },
        ]
    );
    assert_eq!(skipped.get(skip::SYMLINK), Some(&3), "made, renamed, removed: {skipped:?}");
    assert_eq!(skipped.get(skip::EXCHANGE), Some(&1), "{skipped:?}");

    // Replayed, the object's data stays and nothing is skipped.
    let replay = mcfs_sim::replay::Replayer::run(
        mcfs_sim::replay::ReplayOptions::default(),
        events.into_iter().filter(|e| !matches!(&e.kind, EventKind::Rename { .. })).map(Ok),
    )
    .unwrap();
    assert_eq!(replay.events_skipped, 0, "{replay:#?}");
    assert!(replay.bytes_flushed >= 65536, "{replay:#?}");
}

/// strace shows a call's changed out-arguments after ` => ` (git's threads: `clone3({...} =>
/// {parent_tid=[2]}, 88)`); the `>` of the arrow is no closing bracket, and the child inherits the
/// parent's working directory as from clone.
#[test]
fn changed_out_arguments_after_an_arrow_parse() {
    let log = "\
1 10:00:00.000000 chdir(\"/repo\") = 0
1 10:00:00.000001 clone3({flags=CLONE_VM|CLONE_THREAD, child_tid=0x7f66, parent_tid=0x7f66, exit_signal=0, stack=0x7f66, stack_size=0x7fff80, tls=0x7f66} => {parent_tid=[2]}, 88) = 2
2 10:00:00.000002 mkdir(\"objects\", 0777) = 0
";
    let (events, skipped) = importer(log, StraceOptions::default());
    assert_eq!(kinds(&events), [EventKind::Mkdir { path: p("/repo/objects") }]);
    assert!(skipped.is_empty(), "{skipped:?}");
}
