//! Not a check: prints, for metadata-heavy transactions of the table in
//! docs/JOURNAL.md ("What this saves"), the syncs and the wall time of their
//! apply on a real directory. It uses only the journal's public interface,
//! so the same file measures older versions too. Run with
//! `cargo test -p mcfs-core --release --test journal_timing -- --ignored --nocapture`
//! (MCFS_BENCH_DIR picks the file system; /tmp by default).

use mcfs_core::backend::Backend;
use mcfs_core::journal::{Journal, JournalOp};
use mcfs_core::{DirBackend, FileKind};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Instant, UNIX_EPOCH};

fn create(path: &str, kind: FileKind) -> JournalOp {
    JournalOp::Create { path: path.into(), kind, perm: 0o755, rdev: 0 }
}

fn chown(path: &str) -> JournalOp {
    JournalOp::SetOwner { path: path.into(), uid: 0, gid: 0 }
}

/// The names of a chain of `depth` directories below `e`.
fn chain(depth: usize) -> Vec<String> {
    (1..=depth).map(|i| format!("e/{}", vec!["n"; i].join("/"))).collect()
}

/// (what, setup run before the transaction, the transaction)
fn transactions() -> Vec<(&'static str, Vec<JournalOp>, Vec<JournalOp>)> {
    let files = 3000;
    let mut creates = Vec::new();
    for i in 0..files {
        let f = format!("e/f{i}");
        creates.extend([create(&f, FileKind::File), chown(&f)]);
        creates.push(JournalOp::Write { path: f.into(), offset: 0, data: format!("file {i}").into_bytes() });
    }
    for i in 0..files {
        creates.push(JournalOp::SetTimes { path: format!("e/f{i}").into(), atime: UNIX_EPOCH, mtime: UNIX_EPOCH });
    }
    creates.push(JournalOp::SetTimes { path: "e".into(), atime: UNIX_EPOCH, mtime: UNIX_EPOCH });
    let dirs = chain(1000);
    let mkdirs = dirs.iter().flat_map(|d| [create(d, FileKind::Dir), chown(d)]).collect();
    let links = (0..1000).map(|i| JournalOp::Link { existing: "a".into(), new: format!("e/l{i}").into() }).collect();
    let deepest_file = format!("{}/f", dirs[dirs.len() - 1]);
    let mut tree: Vec<JournalOp> = dirs.iter().map(|d| create(d, FileKind::Dir)).collect();
    tree.push(create(&deepest_file, FileKind::File));
    let mut rmdirs = vec![JournalOp::RemoveFile { path: deepest_file.into() }];
    rmdirs.extend(dirs.iter().rev().map(|d| JournalOp::RemoveDir { path: d.into() }));
    vec![
        ("3,000 creates in one directory, each chowned and written, then the times", vec![], creates),
        ("a chain of 1,000 directories, each chowned", vec![], mkdirs),
        ("1,000 links to one file", vec![], links),
        ("a file and the 1,000 directories above it removed, bottom up", tree, rmdirs),
    ]
}

#[test]
#[ignore = "measurement, run by hand in release mode"]
fn journal_apply_timing_on_a_real_directory() {
    let base = std::env::var_os("MCFS_BENCH_DIR").map_or_else(std::env::temp_dir, PathBuf::from);
    for (what, setup, ops) in transactions() {
        let dir = tempfile::tempdir_in(&base).unwrap();
        let backend = Arc::new(DirBackend::new(dir.path()).unwrap());
        backend.create("e".as_ref(), FileKind::Dir, 0o755, 0).unwrap();
        backend.create("a".as_ref(), FileKind::File, 0o644, 0).unwrap();
        for op in &setup {
            op.apply(&*backend).unwrap();
        }
        backend.sync().unwrap();
        let mut journal = Journal::open(backend.clone()).unwrap();
        journal.begin(1).unwrap();
        for op in &ops {
            journal.append(op.clone()).unwrap();
        }
        journal.end().unwrap();
        journal.wait_sync().unwrap();
        let started = Instant::now();
        let report = journal.apply(&mut || {}).unwrap();
        let took = started.elapsed();
        println!(
            "{what}: {} ops, {} syncs, {:.2} s on {}",
            ops.len(),
            report.syncs,
            took.as_secs_f64(),
            base.display()
        );
    }
}
