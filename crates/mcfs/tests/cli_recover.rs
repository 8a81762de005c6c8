//! `mcfs recover` on a backing directory whose journal holds a committed
//! transaction: an op the backing file system cannot hold (an xattr in a
//! namespace no Linux file system has) is skipped and printed, the rest is
//! applied, and the command succeeds; a damaged progress file next to a
//! transaction in the middle of its apply is refused, naming the file, and
//! nothing changes.

use mcfs_core::journal::{Journal, JournalOp};
use mcfs_core::{DirBackend, FileKind};
use std::path::Path;
use std::sync::Arc;

mod common;

use common::{run_cli as mcfs, stderr_of as stderr};

fn create(path: &str) -> JournalOp {
    JournalOp::Create { path: path.into(), kind: FileKind::File, perm: 0o644, rdev: 0 }
}

fn write(path: &str, data: &[u8]) -> JournalOp {
    JournalOp::Write { path: path.into(), offset: 0, data: data.to_vec() }
}

/// A backing directory whose journal holds `ops`, committed, not applied.
fn committed(back: &Path, ops: &[JournalOp]) {
    std::fs::create_dir(back).unwrap();
    let backend = Arc::new(DirBackend::new(back).unwrap());
    let mut journal = Journal::open(backend).unwrap();
    journal.begin(1).unwrap();
    for op in ops {
        journal.append(op.clone()).unwrap();
    }
    journal.end().unwrap();
    journal.wait_sync().unwrap();
}

#[test]
fn recover_skips_and_prints_an_op_the_backing_store_cannot_hold() {
    let root = tempfile::tempdir().unwrap();
    let back = root.path().join("back");
    let xattr = JournalOp::SetXattr { path: "f".into(), name: "foo.bar".into(), value: b"1".to_vec() };
    committed(&back, &[create("f"), write("f", b"kept"), xattr, create("g"), write("g", b"also kept")]);

    let out = mcfs(&["recover", &back.display().to_string()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "stdout: {stdout} stderr: {}", stderr(&out));
    assert!(stdout.contains("op 2: setxattr f: Operation not supported"), "{stdout}");
    assert_eq!(std::fs::read(back.join("f")).unwrap(), b"kept");
    assert_eq!(std::fs::read(back.join("g")).unwrap(), b"also kept");
    // The segment is kept for reuse; its commit record is cleared.
    let journal = std::fs::read(back.join(".mcfs/journal")).unwrap();
    assert!(journal.iter().take(512).all(|b| *b == 0), "the journal is freed");
}

#[test]
fn recover_refuses_a_truncated_progress_file_beside_a_committed_transaction() {
    let root = tempfile::tempdir().unwrap();
    let back = root.path().join("back");
    committed(&back, &[create("f"), write("f", b"data")]);
    std::fs::File::options().write(true).open(back.join(".mcfs/progress")).unwrap().set_len(0).unwrap();

    let out = mcfs(&["recover", &back.display().to_string()]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "stderr: {err}");
    assert!(err.contains(".mcfs/progress") && err.contains("truncated"), "{err}");
    assert!(!back.join("f").exists(), "a refusal applies nothing");
}
