//! Metadata-heavy checkpoints take a bounded number of barriers and no ops
//! that cancel out: a file renamed thousands of times costs one rename, a
//! rename there and back costs none, stress-ng's create / rename / exchange /
//! unlink loop costs no namespace op at all, and a deep directory chain or
//! many links to one file take a few barriers, not two per op. Counted on a
//! `RecordingBackend` (its ops and its `sync` barriers).

use mcfs_core::backend::{Op, RecordingBackend};
use mcfs_core::*;
use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;

const ME: Caller = Caller { uid: 10001, gid: 10001, pid: 7 };

struct Fixture {
    recorder: Arc<RecordingBackend>,
    engine: Engine,
}

impl Fixture {
    fn new() -> Fixture {
        let recorder = Arc::new(RecordingBackend::new(MemBackend::new()));
        let engine = Engine::start(recorder.clone(), Arc::new(ManualClock::new()), Config::default()).expect("start");
        Fixture { recorder, engine }
    }

    /// Runs a checkpoint; returns the ops it recorded and the barriers it took.
    fn checkpoint(&self) -> (Vec<Op>, usize) {
        let (ops, barriers) = (self.recorder.op_count(), self.recorder.barriers().len());
        self.engine.checkpoint().expect("checkpoint");
        let recorded = (ops..self.recorder.op_count()).filter_map(|i| self.recorder.op(i)).collect();
        (recorded, self.recorder.barriers().len() - barriers)
    }

    fn rename(&self, from: (Ino, &str), to: (Ino, &str), mode: RenameMode) {
        let (from, to) = ((from.0, OsStr::new(from.1)), (to.0, OsStr::new(to.1)));
        self.engine.rename(ME, from.0, from.1, to.0, to.1, mode).expect("rename");
    }
}

/// The namespace ops among `ops` outside mcfs's own state directory.
fn namespace_ops(ops: &[Op]) -> Vec<String> {
    let outside = |p: &Path| !p.starts_with(STATE_DIR);
    ops.iter()
        .filter(|op| match op {
            Op::Create { path, .. } | Op::Symlink { path, .. } | Op::RemoveFile { path } | Op::RemoveDir { path } => {
                outside(path)
            }
            Op::Link { new: a, .. } | Op::Rename { to: a, .. } => outside(a),
            _ => false,
        })
        .map(|op| op.to_string())
        .collect()
}

#[test]
fn a_file_renamed_thousands_of_times_costs_one_rename() {
    let f = Fixture::new();
    let ino = f.engine.create(ME, ROOT_INO, OsStr::new("n0"), 0o644, true).expect("create").ino;
    f.engine.write(Some(ME), ino, 0, b"moved along").expect("write");
    f.checkpoint();
    for i in 0..3000 {
        f.rename((ROOT_INO, &format!("n{i}")), (ROOT_INO, &format!("n{}", i + 1)), RenameMode::Replace);
    }
    let (ops, barriers) = f.checkpoint();
    assert_eq!(namespace_ops(&ops), ["rename n0 -> n3000"]);
    assert!(barriers <= 3, "{barriers} barriers");
    let backing = f.recorder.live();
    assert!(backing.stat(Path::new("n0")).is_err());
    assert_eq!(backing.stat(Path::new("n3000")).expect("n3000").size, 11);

    // There and back again: nothing at all.
    for i in 0..100 {
        let (a, b) = if i % 2 == 0 { ("n3000", "tmp") } else { ("tmp", "n3000") };
        f.rename((ROOT_INO, a), (ROOT_INO, b), RenameMode::Replace);
    }
    assert!(namespace_ops(&f.checkpoint().0).is_empty());
}

/// stress-ng `--rename`: create a file, rename it into another directory and
/// back, rename it again, exchange it with itself, unlink it; many times.
#[test]
fn a_create_rename_exchange_unlink_loop_costs_no_namespace_op() {
    let f = Fixture::new();
    let d0 = f.engine.mkdir(ME, ROOT_INO, OsStr::new("d0"), 0o755).expect("mkdir").ino;
    let d1 = f.engine.mkdir(ME, ROOT_INO, OsStr::new("d1"), 0o755).expect("mkdir").ino;
    f.checkpoint();
    for i in 0..500 {
        let names: Vec<String> = (0..4).map(|k| format!("f{i}-{k}")).collect();
        let ino = f.engine.create(ME, d0, OsStr::new(&names[0]), 0o644, true).expect("create").ino;
        f.engine.release(ino);
        f.engine.forget(ino, 1);
        f.rename((d0, &names[0]), (d1, &names[1]), RenameMode::Replace);
        f.rename((d1, &names[1]), (d0, &names[2]), RenameMode::Replace);
        f.rename((d0, &names[2]), (d0, &names[3]), RenameMode::Replace);
        f.rename((d0, &names[3]), (d0, &names[3]), RenameMode::Exchange);
        f.engine.unlink(ME, d0, OsStr::new(&names[3])).expect("unlink");
    }
    let (ops, barriers) = f.checkpoint();
    assert_eq!(namespace_ops(&ops), Vec::<String>::new());
    assert!(barriers <= 3, "{barriers} barriers");
    assert!(f.recorder.live().list_dir(Path::new("d0")).expect("d0").is_empty());
}

#[test]
fn deep_directory_chains_and_many_links_take_a_few_barriers() {
    let f = Fixture::new();
    let mut dir = ROOT_INO;
    for _ in 0..300 {
        dir = f.engine.mkdir(ME, dir, OsStr::new("d"), 0o755).expect("mkdir").ino;
    }
    let file = f.engine.create(ME, dir, OsStr::new("f"), 0o644, true).expect("create").ino;
    f.engine.write(Some(ME), file, 0, b"deep").expect("write");
    let (ops, barriers) = f.checkpoint();
    assert_eq!(namespace_ops(&ops).len(), 301);
    assert!(barriers <= 3, "mkdir chain: {barriers} barriers");

    for i in 0..1000 {
        f.engine.link(ME, file, ROOT_INO, OsStr::new(&format!("l{i}"))).expect("link");
    }
    let (ops, barriers) = f.checkpoint();
    assert_eq!(namespace_ops(&ops).len(), 1000);
    assert!(barriers <= 3, "links: {barriers} barriers");
    assert_eq!(f.recorder.live().stat(Path::new("l999")).expect("l999").nlink, 1001);
}
