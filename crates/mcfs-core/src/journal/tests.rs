//! Tests of the journal against `MemBackend`: commit and apply, streaming,
//! segments, torn and foreign journals, misuse, resumption after injected
//! errors, run idempotence, and how many syncs grouping leaves. The crash
//! test lives in `crash_tests.rs`; the transactions both use are in
//! `scenarios.rs`.

use super::scenarios::{apply_directly, base_tree, copy, many_creates, mixed_txn, scenarios, tree_of};
use super::*;
use crate::backend::MemBackend;
use std::ffi::{OsStr, OsString};
use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::time::{SystemTime, UNIX_EPOCH};

fn mem_with_base() -> Arc<MemBackend> {
    let b = Arc::new(MemBackend::new());
    base_tree(&b);
    b
}

/// Commits `ops` as transaction `seq`.
pub(super) fn commit(journal: &mut Journal, seq: u64, ops: &[JournalOp]) {
    journal.begin(seq).unwrap();
    for op in ops {
        journal.append(op.clone()).unwrap();
    }
    journal.end().unwrap();
    journal.wait_sync().unwrap();
}

fn journal_len(b: &dyn Backend) -> u64 {
    b.stat(&journal_path()).unwrap().size
}

/// The commit record in segment `slot`, if its header sector holds a valid one.
fn record_in(b: &dyn Backend, slot: usize) -> Option<encode::TxnHeader> {
    let mut sector = [0u8; HEADER_LEN as usize];
    let n = b.read_at(&segment_path(slot), 0, &mut sector).unwrap();
    match encode::TxnHeader::decode(&sector[..n]) {
        Ok(encode::HeaderState::Valid(h)) => Some(h),
        _ => None,
    }
}

/// The bytes of the transaction `.mcfs/journal` holds (0: none).
fn journal_txn_len(b: &dyn Backend) -> u64 {
    record_in(b, 0).map_or(0, |h| HEADER_LEN + h.payload_len)
}

fn encoded_len(ops: &[JournalOp]) -> u64 {
    let mut buf = Vec::new();
    for op in ops {
        encode::encode_op(op, &mut buf).unwrap();
    }
    buf.len() as u64
}

#[test]
fn journal_commit_then_apply_reaches_the_post_state() {
    for (name, ops) in scenarios() {
        let b = mem_with_base();
        let expected = apply_directly(&b, &ops);
        let mut j = Journal::open(b.clone()).unwrap();
        let opened = j.bytes_written();
        commit(&mut j, 1, &ops);
        assert_eq!(j.waiting(), 1);
        assert_eq!(journal_txn_len(&*b), HEADER_LEN + encoded_len(&ops), "{name}");
        let report = j.apply(&mut || {}).unwrap();
        assert_eq!(tree_of(&b), expected, "{name}: {:?}", tree_of(&b).diff(&expected));
        assert_eq!(report.ops, ops.len() as u64, "{name}");
        assert_eq!(report.resumed_at, 0);
        assert_eq!(report.already_done + report.skipped_missing, 0, "{name}: {report:?}");
        let applied = |i: usize| !report.unapplied.iter().any(|u| u.index == i as u64);
        let data: u64 = ops.iter().enumerate().filter(|(i, _)| applied(*i)).map(|(_, op)| op.data_len()).sum();
        assert_eq!(report.data_bytes, data, "{name}");
        let kept = SEGMENT_READY_BYTES.max(HEADER_LEN + encoded_len(&ops));
        assert_eq!(journal_len(&*b), kept, "{name}: the segment is kept for the next transaction");
        let zeros = SEGMENT_READY_BYTES; // the new segment's zero fill
        assert_eq!(j.bytes_written() - opened, zeros + HEADER_LEN + encoded_len(&ops) + report.journal_bytes, "{name}");
        assert_eq!(j.waiting(), 0);
        // Recovery afterwards finds nothing to do.
        let r = recover(&*b).unwrap();
        assert_eq!(r, RecoveryReport::default(), "{name}");
        assert_eq!(tree_of(&b), expected, "{name}");
    }
}

#[test]
fn journal_streams_large_payloads_and_yields_between_segments() {
    let b = mem_with_base();
    let chunk = vec![0x5au8; 300 * 1024];
    let ops: Vec<JournalOp> = (0..8u64)
        .map(|i| JournalOp::Write { path: "a".into(), offset: i * chunk.len() as u64, data: chunk.clone() })
        .collect();
    let expected = apply_directly(&b, &ops);
    let mut j = Journal::open(b.clone()).unwrap();
    j.set_segment_bytes(chunk.len() as u64 * 2);
    j.begin(1).unwrap();
    for op in &ops {
        j.append(op.clone()).unwrap();
    }
    // More than one streaming chunk went to the file before `end`.
    assert!(journal_len(&*b) > HEADER_LEN + (1 << 20), "payload is streamed, not held");
    j.end().unwrap();
    j.wait_sync().unwrap();
    let mut yields = 0;
    let report = j.apply(&mut || yields += 1).unwrap();
    assert_eq!(yields, 4);
    assert_eq!(report.data_bytes, 8 * chunk.len() as u64);
    assert_eq!(tree_of(&b), expected);
}

#[test]
fn journal_segment_is_the_same_whether_the_store_takes_pieces_or_not() {
    // MemBackend takes a write's data apart from the record buffer;
    // FaultyBackend (never failing here) takes the payload joined.
    let big = JournalOp::Write { path: "a".into(), offset: 7, data: vec![0xa5; 600 << 10] };
    for (name, mut ops) in scenarios() {
        ops.push(big.clone());
        let pieces = mem_with_base();
        let joined = FaultyBackend::new(mem_with_base());
        assert!(pieces.takes_pieces() && !joined.takes_pieces());
        let mut segments = Vec::new();
        for b in [pieces.clone() as Arc<dyn Backend>, Arc::new(joined)] {
            let mut j = Journal::open(b.clone()).unwrap();
            commit(&mut j, 1, &ops);
            let mut segment = vec![0; journal_len(&*b) as usize];
            b.read_at(&journal_path(), 0, &mut segment).unwrap();
            segments.push((segment, j.bytes_written()));
        }
        assert!(segments[0] == segments[1], "{name}: segments or journal bytes differ");
        // And recovery reads the pieces' segment back.
        let expected = apply_directly(&mem_with_base(), &ops);
        recover(&*pieces).unwrap().replayed.expect("replayed");
        assert_eq!(tree_of(&pieces), expected, "{name}");
    }
}

#[test]
fn journal_over_a_store_without_payloads_writes_their_extent_and_applies_its_ops() {
    for (name, ops) in scenarios() {
        let keeping = mem_with_base();
        let expected = apply_directly(&mem_with_base(), &ops);
        let b = Arc::new(MemBackend::new().without_journal_payloads());
        base_tree(&b);
        let mut journals = Vec::new();
        for b in [keeping.clone(), b.clone()] {
            let mut j = Journal::open(b.clone()).unwrap();
            commit(&mut j, 1, &ops);
            journals.push((j, b.stat(&journal_path()).unwrap().size));
        }
        let [(mut kept, kept_len), (mut unkept, unkept_len)] = <[_; 2]>::try_from(journals).ok().unwrap();
        assert_eq!((unkept.bytes_written(), unkept_len), (kept.bytes_written(), kept_len), "{name}");
        kept.apply(&mut || {}).unwrap();
        unkept.apply(&mut || {}).unwrap();
        assert_eq!(tree_of(&b), expected, "{name}: {:?}", tree_of(&b).diff(&expected));
        assert_eq!(unkept.bytes_written(), kept.bytes_written(), "{name}");
    }
    // Its log cannot be read back: recovery says so rather than guess.
    let b = Arc::new(MemBackend::new().without_journal_payloads());
    base_tree(&b);
    let mut j = Journal::open(b.clone()).unwrap();
    commit(&mut j, 1, &many_creates("d", 3));
    drop(j);
    assert_eq!(crate::backend::errno_of(&recover(&*b).unwrap_err()), libc::EIO);
    // A store that keeps payloads has no use for their extent alone.
    let e = FaultyBackend::new(mem_with_base()).write_unkept_at(&journal_path(), 0, 1).unwrap_err();
    assert_eq!(crate::backend::errno_of(&e), libc::EOPNOTSUPP);
}

/// Over a store that recreates known content and keeps no journal payload, a
/// write of that content goes in as its extent (`WriteKnown`) and applies,
/// coalesced with writes of other bytes, to the tree, reports and journal
/// bytes its bytes would give; a journal that keeps its payload offers no
/// known content and refuses such an op.
#[test]
fn journal_over_a_data_less_store_takes_writes_of_known_content_as_their_extent() {
    use crate::backend::test_content::{ramp, RAMP};
    let write = |path: &str, offset: u64, len: usize, known: bool| {
        let mut data = vec![0; len];
        ramp(offset, &mut data);
        if !known {
            data[len / 2] ^= 1;
        }
        JournalOp::Write { path: path.into(), offset, data }
    };
    // Overlapping across transactions (coalesced), aligned or not, another file between.
    let txns: Vec<Vec<JournalOp>> = vec![
        vec![write("a", 0, 3 * 4096, true), write("a", 10_000, 5000, false), write("c", 4096, 4096, true)],
        vec![write("a", 4096 - 7, 4096, true), write("a", 20_000, 9000, true)],
        vec![write("a", 8192, 8192, false), write("a", 16_000, 8000, true), write("c", 0, 100, true)],
    ];
    let extent_of = |op: &JournalOp| match op {
        JournalOp::Write { path, offset, data } if (RAMP.matches)(*offset, data) => {
            JournalOp::WriteKnown { path: path.clone(), offset: *offset, len: data.len() as u64 }
        }
        op => op.clone(),
    };
    let expected = apply_directly(&mem_with_base(), &txns.concat());
    let mut outcomes = Vec::new();
    for extents in [false, true] {
        let b = Arc::new(MemBackend::with_known_content(RAMP).without_journal_payloads());
        base_tree(&b);
        let mut j = Journal::open(b.clone()).unwrap();
        assert!(j.known_content().is_some());
        for (i, ops) in txns.iter().enumerate() {
            let ops: Vec<JournalOp> = if extents { ops.iter().map(extent_of).collect() } else { ops.clone() };
            commit(&mut j, i as u64 + 1, &ops);
        }
        let report = j.apply(&mut || {}).unwrap();
        assert_eq!(tree_of(&b), expected, "extents: {extents}");
        assert!(report.coalesced_bytes > 0, "extents: {extents}: {report:?}");
        outcomes.push((report, j.bytes_written()));
    }
    assert_eq!(outcomes[0], outcomes[1]);
    // Keeping payloads, whether the store takes pieces or joins them: no
    // known content offered, and such an op is refused, not logged.
    let known_keeping = Arc::new(MemBackend::with_known_content(RAMP));
    base_tree(&known_keeping);
    let extent = extent_of(&txns[0][0]);
    assert!(matches!(extent, JournalOp::WriteKnown { .. }));
    for b in [known_keeping as Arc<dyn Backend>, Arc::new(FaultyBackend::new(mem_with_base()))] {
        let mut j = Journal::open(b).unwrap();
        assert!(j.known_content().is_none());
        j.begin(1).unwrap();
        assert_eq!(crate::backend::errno_of(&j.append(extent.clone()).unwrap_err()), libc::EINVAL);
        j.abort().unwrap();
    }
    let e = encode::encode_op(&extent, &mut Vec::new()).unwrap_err();
    assert_eq!(crate::backend::errno_of(&e), libc::EINVAL);
}

#[test]
fn journal_recover_replays_a_committed_txn_that_was_not_applied() {
    for (name, ops) in scenarios() {
        let b = mem_with_base();
        let expected = apply_directly(&b, &ops);
        let mut j = Journal::open(b.clone()).unwrap();
        commit(&mut j, 9, &ops);
        drop(j);
        assert!(Journal::open(b.clone()).is_err(), "{name}: open refuses a committed journal");
        let r = recover(&*b).unwrap();
        let replayed = r.replayed.expect("replayed");
        assert_eq!((replayed.seq, replayed.ops), (9, ops.len() as u64), "{name}");
        assert_eq!(tree_of(&b), expected, "{name}: {:?}", tree_of(&b).diff(&expected));
        Journal::open(b.clone()).unwrap();
    }
}

#[test]
fn journal_torn_or_corrupt_commit_is_dropped_whole() {
    let (_, ops) = scenarios().swap_remove(0);
    let b = mem_with_base();
    let before = tree_of(&b);
    let mut j = Journal::open(b.clone()).unwrap();
    commit(&mut j, 3, &ops);
    let len = journal_txn_len(&*b);
    let mut image = vec![0u8; len as usize];
    assert_eq!(b.read_at(&journal_path(), 0, &mut image).unwrap(), len as usize);

    let check_dropped = |bytes: &[u8], what: &str| {
        let c = copy(&b);
        c.set_len(&journal_path(), 0).unwrap();
        c.write_at(&journal_path(), 0, bytes).unwrap();
        let r = recover(&c).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(r.replayed, None, "{what}");
        // A payload without any byte of its commit record is a free segment.
        let record_written = bytes.iter().take(HEADER_LEN as usize).any(|b| *b != 0);
        assert_eq!(r.dropped_torn_bytes, if record_written { bytes.len() as u64 } else { 0 }, "{what}");
        assert_eq!(tree_of(&c), before, "{what}");
        assert_eq!(journal_txn_len(&c), 0, "{what}");
        assert_eq!(recover(&c).unwrap(), RecoveryReport::default(), "{what}: recovered once for all");
    };
    // Every truncation: a missing tail of the payload or of the header.
    for cut in 1..len as usize {
        check_dropped(&image[..cut], &format!("truncated to {cut}"));
    }
    // The header missing entirely (payload written, commit record never).
    let mut no_header = image.clone();
    no_header[..HEADER_LEN as usize].fill(0);
    check_dropped(&no_header, "zero header");
    // Every flipped byte past magic and version (those are refused, below).
    for i in 12..len as usize {
        let mut bad = image.clone();
        bad[i] ^= 0x41;
        check_dropped(&bad, &format!("byte {i} flipped"));
    }
    // The intact image still replays.
    let c = copy(&b);
    assert!(recover(&c).unwrap().replayed.is_some());
}

#[test]
fn journal_foreign_magic_or_unknown_version_is_refused_naming_the_file() {
    let b = mem_with_base();
    Journal::open(b.clone()).unwrap();
    let foreign = b"SQLite format 3\0 and more bytes".to_vec();
    b.write_at(&journal_path(), 0, &foreign).unwrap();
    for attempt in [recover(&*b).map(|_| ()), Journal::open(b.clone()).map(|_| ())] {
        let e = attempt.unwrap_err();
        assert!(e.to_string().contains(".mcfs/journal"), "{e}");
        assert!(e.to_string().contains("not an mcfs journal"), "{e}");
    }
    assert_eq!(journal_len(&*b), foreign.len() as u64, "a foreign file is left alone");

    let header = encode::TxnHeader { version: encode::VERSION, seq: 1, payload_len: 0, op_count: 0, payload_crc: 0 };
    let mut newer = header.encode();
    newer[8] = 7;
    b.write_at(&journal_path(), 0, &newer).unwrap();
    let e = recover(&*b).unwrap_err();
    assert!(e.to_string().contains(".mcfs/journal") && e.to_string().contains("version 7"), "{e}");
}

#[test]
fn journal_calls_out_of_order_are_refused() {
    let b = mem_with_base();
    let mut j = Journal::open(b.clone()).unwrap();
    let op = JournalOp::SetPerm { path: "a".into(), perm: 0o600 };
    assert!(j.append(op.clone()).is_err());
    assert!(j.end().is_err());
    assert!(j.wait_sync().is_err());
    assert!(j.apply(&mut || {}).is_err());
    j.begin(5).unwrap();
    assert!(j.begin(6).is_err(), "one transaction at a time");
    assert!(j.wait_sync().is_err(), "wait_sync before end");
    j.append(op.clone()).unwrap();
    j.end().unwrap();
    j.wait_sync().unwrap();
    assert!(j.begin(5).is_err(), "sequence numbers grow");
    j.abort().unwrap(); // nothing is being built: a committed txn stays committed
    assert_eq!(j.waiting(), 1);
    j.apply(&mut || {}).unwrap();
    assert!(j.apply(&mut || {}).is_err(), "nothing waits");
    j.begin(6).unwrap();
}

#[test]
fn journal_abort_drops_an_uncommitted_txn_and_frees_its_number() {
    let (_, ops) = scenarios().swap_remove(1);
    let b = mem_with_base();
    let before = tree_of(&b);
    let mut j = Journal::open(b.clone()).unwrap();
    j.begin(1).unwrap();
    for op in &ops {
        j.append(op.clone()).unwrap();
    }
    j.end().unwrap();
    j.abort().unwrap();
    assert_eq!(journal_txn_len(&*b), 0, "the commit record is cleared");
    assert_eq!(recover(&*b).unwrap(), RecoveryReport::default());
    assert_eq!(tree_of(&b), before);
    // The same number may be used again: the aborted txn never got progress.
    let expected = apply_directly(&b, &ops);
    commit(&mut j, 1, &ops);
    j.apply(&mut || {}).unwrap();
    assert_eq!(tree_of(&b), expected);
}

#[test]
fn journal_open_forgets_progress_so_numbers_may_restart() {
    let all = scenarios();
    let b = mem_with_base();
    let mut j = Journal::open(b.clone()).unwrap();
    commit(&mut j, 1, &all[1].1);
    j.apply(&mut || {}).unwrap();
    drop(j);
    // A new mount counts from 1 again; its txn must replay from op 0.
    let mut j = Journal::open(b.clone()).unwrap();
    let second = &all[2].1;
    let expected = apply_directly(&b, second);
    commit(&mut j, 1, second);
    drop(j);
    let r = recover(&*b).unwrap().replayed.unwrap();
    assert_eq!((r.resumed_at, r.ops), (0, second.len() as u64));
    assert_eq!(tree_of(&b), expected, "{:?}", tree_of(&b).diff(&expected));
}

#[test]
fn journal_recover_removes_orphans() {
    let b = mem_with_base();
    Journal::open(b.clone()).unwrap();
    let orphans = orphans_dir();
    b.create(&orphans.join("17"), FileKind::File, 0o600, 0).unwrap();
    b.write_at(&orphans.join("17"), 0, b"unlinked but open").unwrap();
    b.create(&orphans.join("d"), FileKind::Dir, 0o700, 0).unwrap();
    b.create(&orphans.join("d/x"), FileKind::File, 0o600, 0).unwrap();
    b.symlink(OsStr::new("nowhere"), &orphans.join("s")).unwrap();
    let r = recover(&*b).unwrap();
    assert_eq!(r.orphans_removed, 3);
    assert!(b.list_dir(&orphans).unwrap().is_empty());
    assert_eq!(recover(&*b).unwrap().orphans_removed, 0);
}

/// Runs `apply` on a backend that fails its `k`-th mutating call — before
/// doing it, or after doing it (the reply lost) — then resumes by `apply` or
/// by `recover`: every failure point must end in the post state.
#[test]
fn journal_apply_resumes_after_an_error_at_every_step() {
    for (name, ops) in scenarios() {
        for (after, via_recover) in [(false, false), (false, true), (true, false), (true, true)] {
            let mut k = 0;
            loop {
                let what = format!("{name}: call {k} fails (after: {after}, recover: {via_recover})");
                let inner = mem_with_base();
                let expected = apply_directly(&inner, &ops);
                let faulty = Arc::new(FaultyBackend::new(inner.clone()));
                let mut j = Journal::open(faulty.clone()).unwrap();
                commit(&mut j, 1, &ops);
                faulty.fail_at(k, after);
                let first = j.apply(&mut || {});
                faulty.fail_at(u64::MAX, after);
                if first.is_ok() {
                    assert_eq!(tree_of(&inner), expected, "{name}: no failure");
                    break;
                }
                assert!(j.waiting() > 0, "{what}: not committed after {first:?}");
                if via_recover {
                    drop(j);
                    recover(&*inner).unwrap_or_else(|e| panic!("{what}: recover: {e}"));
                } else {
                    j.apply(&mut || {}).unwrap_or_else(|e| panic!("{what}: retry: {e}"));
                }
                assert_eq!(tree_of(&inner), expected, "{what}: {:?}", tree_of(&inner).diff(&expected));
                k += 1;
            }
            // An empty transaction's apply writes nothing (its segment is kept as it is).
            assert!(ops.is_empty() || k >= 3, "{name}: the fault reached only {k} calls");
        }
    }
}

/// Applies `ops` as one transaction on the base tree, checks the result
/// against the oracle, and returns the report.
fn apply_on_base(ops: &[JournalOp]) -> ApplyReport {
    let b = mem_with_base();
    let expected = apply_directly(&b, ops);
    let mut j = Journal::open(b.clone()).unwrap();
    commit(&mut j, 1, ops);
    let report = j.apply(&mut || {}).unwrap();
    assert_eq!(tree_of(&b), expected, "{:?}", tree_of(&b).diff(&expected));
    report
}

/// Progress records one apply wrote: each is a pair of slots (2 × 28 bytes, see progress.rs).
fn records(report: &ApplyReport) -> u64 {
    report.journal_bytes / 56
}

/// 3,000 creates in one directory, each with its chown and write, then the
/// times: no op's paths meet an earlier op's, so the whole transaction is one
/// group — no barrier but the one before the "done" record (the old
/// protocol took two per create: 5,999).
#[test]
fn journal_creates_in_one_directory_share_one_group() {
    let ops = many_creates("e", 3000);
    let report = apply_on_base(&ops);
    assert_eq!(report.ops, ops.len() as u64);
    assert_eq!(records(&report), 1, "only the done record: {report:?}");
    assert!(report.syncs <= 2, "{report:?}");
}

/// An engine-shaped mix. New groups start exactly where the rule says: at
/// each atomic save's rename (its source was created and written in the
/// group), and at the link into `m` after `m`'s times were set — not at the
/// creates inside the new directory `m`. The first rename target that gets
/// its times set costs one more sync, and the "done" record one more, as the
/// transaction had records in its middle. (The old protocol: 1,604 syncs.)
#[test]
fn journal_groups_split_where_paths_meet() {
    let files = 400;
    let saves = files as u64 / 4;
    let ops = mixed_txn(files);
    let report = apply_on_base(&ops);
    let group_starts = saves + 1;
    assert_eq!(records(&report), group_starts + 1, "group starts and the done record: {report:?}");
    assert_eq!(report.syncs, 2 * group_starts + 1 + 1 + 1, "{report:?}");
}

/// A run of data ops replayed on a state where any subset of it already
/// took effect ends where one clean application ends.
#[test]
fn journal_data_run_is_idempotent_over_any_applied_subset() {
    let run = vec![
        JournalOp::Write { path: "a".into(), offset: 3, data: b"0123456789".to_vec() },
        JournalOp::SetLen { path: "a".into(), size: 5 },
        JournalOp::SetXattr { path: "a".into(), name: "user.k".into(), value: b"one".to_vec() },
        JournalOp::Write { path: "a".into(), offset: 8000, data: b"far".to_vec() },
        JournalOp::SetPerm { path: "a".into(), perm: 0o4711 },
        JournalOp::SetOwner { path: "a".into(), uid: 1000, gid: 1000 },
        JournalOp::RemoveXattr { path: "a".into(), name: "user.k".into() },
        JournalOp::SetLen { path: "a".into(), size: 8001 },
        JournalOp::Write { path: "b".into(), offset: 0, data: b"bb".to_vec() },
        JournalOp::SetTimes { path: "a".into(), atime: UNIX_EPOCH, mtime: UNIX_EPOCH },
    ];
    replay_over_every_applied_subset(&run);
}

/// The same for a run of punched holes, zeroed ranges and allocations
/// among writes and truncates (JOURNAL.md: each byte's final value is set
/// by the last op that touches it, the size by the last truncate and the
/// ends of the ops that may extend it).
#[test]
fn journal_fallocate_run_is_idempotent_over_any_applied_subset() {
    use crate::types::FallocMode::{Allocate, PunchHole, ZeroRange};
    let run = vec![
        scenarios::fallocate("a", PunchHole, 10, 5000),
        JournalOp::Write { path: "a".into(), offset: 4090, data: b"0123456789".to_vec() },
        scenarios::fallocate("a", ZeroRange { keep_size: true }, 4095, 10_000),
        JournalOp::SetLen { path: "a".into(), size: 4097 },
        scenarios::fallocate("a", ZeroRange { keep_size: false }, 8000, 100),
        JournalOp::Write { path: "a".into(), offset: 8050, data: b"mid".to_vec() },
        scenarios::fallocate("a", Allocate { keep_size: false }, 0, 12_000),
        scenarios::fallocate("a", PunchHole, 8051, 1),
        scenarios::fallocate("c", ZeroRange { keep_size: false }, 2, 3),
        scenarios::fallocate("a", Allocate { keep_size: true }, 0, 1 << 20),
    ];
    replay_over_every_applied_subset(&run);
}

/// Commits `run` and recovers it on every state where a subset of it took
/// effect: each ends as one clean application of `run` does.
fn replay_over_every_applied_subset(run: &[JournalOp]) {
    let base = mem_with_base();
    let mut j = Journal::open(base.clone()).unwrap();
    commit(&mut j, 1, run);
    drop(j);
    let expected = apply_directly(&base, run);
    for subset in 0u32..(1 << run.len()) {
        let c = copy(&base);
        for (i, op) in run.iter().enumerate() {
            if subset & (1 << i) != 0 {
                scenarios::apply_op(&c, op).unwrap();
            }
        }
        recover(&c).unwrap();
        assert_eq!(tree_of(&c), expected, "subset {subset:#b}: {:?}", tree_of(&c).diff(&expected));
    }
}

/// Delegates to a `MemBackend`, failing one chosen mutating call.
struct FaultyBackend {
    inner: Arc<MemBackend>,
    calls: AtomicU64,
    fail_at: AtomicU64,
    /// Fail after doing the call rather than instead of it.
    after: AtomicBool,
}

impl FaultyBackend {
    fn new(inner: Arc<MemBackend>) -> FaultyBackend {
        FaultyBackend { inner, calls: 0.into(), fail_at: u64::MAX.into(), after: false.into() }
    }

    /// Fails the `k`-th mutating call from now (0 = the next one).
    fn fail_at(&self, k: u64, after: bool) {
        self.calls.store(0, SeqCst);
        self.fail_at.store(k, SeqCst);
        self.after.store(after, SeqCst);
    }

    fn gate(&self, errno: i32, call: impl FnOnce() -> io::Result<()>) -> io::Result<()> {
        if self.calls.fetch_add(1, SeqCst) != self.fail_at.load(SeqCst) {
            return call();
        }
        if self.after.load(SeqCst) {
            if let Err(e) = call() {
                // Refused on its own (an op the store cannot hold): the next call takes the fault.
                self.fail_at.fetch_add(1, SeqCst);
                return Err(e);
            }
        }
        Err(io::Error::from_raw_os_error(errno))
    }
}

impl Backend for FaultyBackend {
    fn stat(&self, path: &Path) -> io::Result<crate::backend::BackendAttr> {
        self.inner.stat(path)
    }
    fn list_dir(&self, path: &Path) -> io::Result<Vec<(OsString, FileKind)>> {
        self.inner.list_dir(path)
    }
    fn read_at(&self, path: &Path, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read_at(path, offset, buf)
    }
    fn write_at(&self, path: &Path, offset: u64, data: &[u8]) -> io::Result<()> {
        self.gate(libc::ENOSPC, || self.inner.write_at(path, offset, data))
    }
    fn set_len(&self, path: &Path, size: u64) -> io::Result<()> {
        self.gate(libc::ENOSPC, || self.inner.set_len(path, size))
    }
    fn create(&self, path: &Path, kind: FileKind, perm: u32, rdev: u32) -> io::Result<()> {
        self.gate(libc::ENOSPC, || self.inner.create(path, kind, perm, rdev))
    }
    fn symlink(&self, target: &OsStr, path: &Path) -> io::Result<()> {
        self.gate(libc::ENOSPC, || self.inner.symlink(target, path))
    }
    fn read_link(&self, path: &Path) -> io::Result<OsString> {
        self.inner.read_link(path)
    }
    fn link(&self, existing: &Path, new: &Path) -> io::Result<()> {
        self.gate(libc::ENOSPC, || self.inner.link(existing, new))
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.gate(libc::EIO, || self.inner.remove_file(path))
    }
    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        self.gate(libc::EIO, || self.inner.remove_dir(path))
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.gate(libc::ENOSPC, || self.inner.rename(from, to))
    }
    fn set_owner(&self, path: &Path, uid: u32, gid: u32) -> io::Result<()> {
        self.gate(libc::EIO, || self.inner.set_owner(path, uid, gid))
    }
    fn set_perm(&self, path: &Path, perm: u32) -> io::Result<()> {
        self.gate(libc::EIO, || self.inner.set_perm(path, perm))
    }
    fn set_times(&self, path: &Path, atime: SystemTime, mtime: SystemTime) -> io::Result<()> {
        self.gate(libc::EIO, || self.inner.set_times(path, atime, mtime))
    }
    fn get_xattr(&self, path: &Path, name: &OsStr) -> io::Result<Option<Vec<u8>>> {
        self.inner.get_xattr(path, name)
    }
    fn list_xattr(&self, path: &Path) -> io::Result<Vec<OsString>> {
        self.inner.list_xattr(path)
    }
    fn set_xattr(&self, path: &Path, name: &OsStr, value: &[u8]) -> io::Result<()> {
        self.gate(libc::EIO, || self.inner.set_xattr(path, name, value))
    }
    fn remove_xattr(&self, path: &Path, name: &OsStr) -> io::Result<()> {
        self.gate(libc::EIO, || self.inner.remove_xattr(path, name))
    }
    fn sync(&self) -> io::Result<()> {
        self.gate(libc::EIO, || self.inner.sync())
    }
    fn statfs(&self) -> io::Result<crate::types::FsStats> {
        self.inner.statfs()
    }
    fn limits(&self) -> crate::backend::BackendLimits {
        self.inner.limits()
    }
    fn check_xattrs(&self, kind: FileKind, xattrs: &[(&OsStr, &[u8])]) -> io::Result<()> {
        self.inner.check_xattrs(kind, xattrs)
    }
    fn fallocate(&self, path: &Path, mode: crate::types::FallocMode, offset: u64, len: u64) -> io::Result<()> {
        self.gate(libc::ENOSPC, || self.inner.fallocate(path, mode, offset, len))
    }
    fn data_extents(&self, path: &Path) -> io::Result<Vec<std::ops::Range<u64>>> {
        self.inner.data_extents(path)
    }
}

/// Ops the store can never hold (an xattr namespace it lacks, a value too
/// big, a size beyond its limit, a name too long, a create in a directory
/// that is not there) are skipped; the rest of the transaction is applied,
/// and the report names each skipped op with its errno — by `apply` and by
/// `recover` alike.
#[test]
fn journal_apply_and_recover_skip_ops_the_store_cannot_hold_and_report_them() {
    let (_, ops) = scenarios().into_iter().find(|(n, _)| *n == "ops the store cannot hold").expect("scenario");
    let long = "n".repeat(300);
    let expected_skips = [
        (0, "setxattr a".to_string(), libc::EOPNOTSUPP),
        (2, "setxattr b".to_string(), libc::E2BIG),
        (3, "truncate c to 9223372036854775808".to_string(), libc::EFBIG),
        (4, format!("create {long}"), libc::ENAMETOOLONG),
        (5, format!("write {long} @0+1"), libc::ENAMETOOLONG),
        (6, "create nodir/f".to_string(), libc::ENOENT),
    ];
    let skips = |unapplied: &[UnappliedOp]| -> Vec<(u64, String, i32)> {
        unapplied.iter().map(|u| (u.index, u.op.clone(), u.errno)).collect()
    };
    for via_recover in [false, true] {
        let b = mem_with_base();
        let expected = apply_directly(&b, &ops);
        let mut j = Journal::open(b.clone()).unwrap();
        commit(&mut j, 1, &ops);
        let report = if via_recover {
            drop(j);
            let r = recover(&*b).unwrap();
            let text = r.to_string();
            assert!(text.contains("txn 1 op 0: setxattr a: Operation not supported"), "{text}");
            r.replayed.expect("replayed")
        } else {
            j.apply(&mut || {}).unwrap()
        };
        assert_eq!(skips(&report.unapplied), expected_skips, "recover: {via_recover}");
        assert_eq!(report.ops, ops.len() as u64);
        assert_eq!(tree_of(&b), expected, "recover: {via_recover}: {:?}", tree_of(&b).diff(&expected));
        let mut value = vec![0; 4];
        assert_eq!(b.get_xattr("b".as_ref(), OsStr::new("user.ok")).unwrap().as_deref(), Some(&b"kept"[..]));
        assert_eq!(b.read_at("n".as_ref(), 0, &mut value).unwrap(), 3, "the ops after the skipped ones ran");
        assert_eq!(recover(&*b).unwrap(), RecoveryReport::default(), "nothing is left to retry");
    }
}

/// A transaction committed by an mcfs of journal format 1 (which cleared
/// the progress file at every mount) is still recovered from op 0: an empty
/// progress file is only damage next to a transaction of the current format.
#[test]
fn journal_legacy_transaction_with_an_empty_progress_file_is_recovered() {
    let (_, ops) = scenarios().swap_remove(1);
    let b = mem_with_base();
    let expected = apply_directly(&b, &ops);
    let mut j = Journal::open(b.clone()).unwrap();
    commit(&mut j, 4, &ops);
    drop(j);
    let mut sector = vec![0u8; HEADER_LEN as usize];
    b.read_at(&journal_path(), 0, &mut sector).unwrap();
    let encode::HeaderState::Valid(header) = encode::TxnHeader::decode(&sector).unwrap() else { panic!("header") };
    let legacy = encode::TxnHeader { version: encode::LEGACY_VERSION, ..header };
    b.write_at(&journal_path(), 0, &legacy.encode()).unwrap();
    b.set_len(&progress_path(), 0).unwrap();
    let r = recover(&*b).unwrap().replayed.expect("replayed");
    assert_eq!((r.seq, r.resumed_at, r.ops), (4, 0, ops.len() as u64));
    assert_eq!(tree_of(&b), expected);

    // The same next to a current-format journal is damage, and refused.
    let b = mem_with_base();
    let mut j = Journal::open(b.clone()).unwrap();
    commit(&mut j, 4, &ops);
    drop(j);
    b.set_len(&progress_path(), 0).unwrap();
    let before = tree_of(&b);
    let e = recover(&*b).unwrap_err();
    assert!(e.to_string().contains(".mcfs/progress") && e.to_string().contains("truncated"), "{e}");
    assert_eq!(tree_of(&b), before, "a refusal changes nothing");
}

/// Metadata-heavy transactions take a bounded number of barriers: a chain
/// of 1,000 directories (each chowned), 1,000 links to one file, and the
/// removal of a 1,000-deep tree, bottom up, are one group each — only the
/// "done" record (the old protocol: two syncs per op).
#[test]
fn journal_deep_mkdir_chains_many_links_and_rmdir_chains_are_one_group_each() {
    let depth = 1000;
    let chain: Vec<String> = (0..depth).map(|i| format!("e/{}", vec!["n"; i + 1].join("/"))).collect();
    let mut mkdirs = Vec::new();
    for dir in &chain {
        mkdirs.push(JournalOp::Create { path: dir.into(), kind: FileKind::Dir, perm: 0o755, rdev: 0 });
        mkdirs.push(JournalOp::SetOwner { path: dir.into(), uid: 1000, gid: 1000 });
    }
    let links: Vec<JournalOp> =
        (0..depth).map(|i| JournalOp::Link { existing: "a".into(), new: format!("e/l{i}").into() }).collect();
    let mut rmdirs: Vec<JournalOp> = chain.iter().rev().map(|d| JournalOp::RemoveDir { path: d.into() }).collect();
    rmdirs.insert(0, JournalOp::RemoveFile { path: format!("{}/f", chain[depth - 1]).into() });
    for (name, ops, setup) in [("mkdir chain", mkdirs, false), ("links", links, false), ("rmdir chain", rmdirs, true)] {
        let b = mem_with_base();
        b.set_link_max(u32::MAX);
        if setup {
            for dir in &chain {
                b.create(dir.as_ref(), FileKind::Dir, 0o755, 0).unwrap();
            }
            b.create(format!("{}/f", chain[depth - 1]).as_ref(), FileKind::File, 0o644, 0).unwrap();
        }
        let expected = apply_directly(&b, &ops);
        let mut j = Journal::open(b.clone()).unwrap();
        commit(&mut j, 1, &ops);
        let report = j.apply(&mut || {}).unwrap();
        assert_eq!(tree_of(&b), expected, "{name}");
        assert_eq!((records(&report), report.ops), (1, ops.len() as u64), "{name}: one group: {report:?}");
        assert!(report.syncs <= 2, "{name}: {report:?}");
    }
}

/// The segment files that hold a valid commit record (waiting, or applied
/// and left for reuse), by slot.
fn used_segments(b: &dyn Backend) -> Vec<usize> {
    segment_slots(b).unwrap().into_iter().filter(|s| record_in(b, *s).is_some()).collect()
}

/// The tree after each of `txns` in turn, starting from `b` (left as it is).
fn trees_after(b: &MemBackend, txns: &[Vec<JournalOp>]) -> Vec<crate::backend::TreeSnapshot> {
    let oracle = copy(b);
    txns.iter()
        .map(|ops| {
            ops.iter().for_each(|op| drop(super::scenarios::apply_op(&oracle, op)));
            tree_of(&oracle)
        })
        .collect()
}

/// Consecutive slices of one random op sequence: each valid after the ones before.
fn random_run(seed: u64, txns: usize) -> Vec<Vec<JournalOp>> {
    slices(super::scenarios::random_txn(seed, 12 * txns), txns)
}

fn slices(ops: Vec<JournalOp>, txns: usize) -> Vec<Vec<JournalOp>> {
    ops.chunks(ops.len().div_ceil(txns)).map(<[JournalOp]>::to_vec).collect()
}

#[test]
fn journal_log_holds_many_transactions_and_reuses_its_segments() {
    let txns = random_run(7, 5);
    let b = mem_with_base();
    let expected = trees_after(&b, &txns).pop().unwrap();
    let mut j = Journal::open(b.clone()).unwrap();
    for (i, ops) in txns.iter().enumerate() {
        commit(&mut j, i as u64 + 1, ops);
        assert_eq!(used_segments(&*b), (0..=i).collect::<Vec<_>>(), "one segment per waiting transaction");
    }
    assert_eq!(j.waiting(), txns.len());
    let held: u64 = used_segments(&*b).iter().map(|s| HEADER_LEN + record_in(&*b, *s).unwrap().payload_len).sum();
    assert_eq!(j.waiting_bytes(), held, "waiting bytes are what the transactions take in their segments");
    // Recovery of the log as it stands (nothing applied) reaches the end too.
    let image = copy(&b);
    let report = recover(&image).unwrap();
    assert_eq!(tree_of(&image), expected, "recovery of five waiting transactions");
    assert_eq!(report.replayed.map(|r| r.txns), Some(5));
    let report = j.apply(&mut || {}).unwrap();
    assert_eq!((report.seq, report.txns), (1, 5));
    assert_eq!(tree_of(&b), expected, "one run applies them all, in order");
    assert_eq!(recover(&copy(&b)).unwrap().replayed, None, "the run leaves nothing to replay");
    let sizes = |b: &MemBackend| -> Vec<u64> {
        segment_slots(b).unwrap().iter().map(|s| b.stat(&segment_path(*s)).unwrap().size).collect()
    };
    let before_reuse = sizes(&b);
    // The next transactions take the free segments again, in place: no new
    // file, no size changed.
    let create = JournalOp::Create { path: "fresh".into(), kind: crate::types::FileKind::File, perm: 0o644, rdev: 0 };
    commit(&mut j, 6, &[create, JournalOp::Write { path: "fresh".into(), offset: 0, data: vec![1; 10] }]);
    commit(&mut j, 7, &[JournalOp::Write { path: "fresh".into(), offset: 0, data: vec![2; 10] }]);
    assert_eq!([record_in(&*b, 0).map(|h| h.seq), record_in(&*b, 1).map(|h| h.seq)], [Some(6), Some(7)]);
    assert_eq!(segment_slots(&*b).unwrap().len(), 5, "no segment file beyond the most ever waiting");
    assert_eq!(sizes(&b), before_reuse, "the commits overwrote their segments in place");
    assert!(before_reuse.iter().all(|s| *s == SEGMENT_READY_BYTES), "{before_reuse:?}");
    let report = j.apply(&mut || {}).unwrap();
    assert_eq!((report.data_bytes, report.coalesced_bytes), (10, 10), "the page went home once, last version");
}

/// Two transactions wait; a third one's segment is cut at every byte (a
/// crash while it was written) or has any one byte flipped: recovery always
/// applies the first two and drops the third unless it is whole.
#[test]
fn journal_log_a_torn_segment_at_every_position_is_dropped_and_the_others_applied() {
    let txns = random_run(11, 3);
    let b = mem_with_base();
    let trees = trees_after(&b, &txns);
    let mut j = Journal::open(b.clone()).unwrap();
    for (i, ops) in txns.iter().enumerate() {
        commit(&mut j, i as u64 + 1, ops);
    }
    let third = segment_path(2);
    let size = (HEADER_LEN + record_in(&*b, 2).unwrap().payload_len) as usize;
    let mut bytes = vec![0; size];
    b.read_at(&third, 0, &mut bytes).unwrap();
    let mut images: Vec<(String, Vec<u8>)> =
        (0..size).map(|len| (format!("cut to {len}"), bytes[..len].to_vec())).collect();
    // A payload whole but its commit record still a zero hole (`end` not reached).
    let mut no_header = bytes.clone();
    no_header[..HEADER_LEN as usize].fill(0);
    images.push(("header not written".into(), no_header));
    for i in (0..size).step_by(7) {
        let mut flipped = bytes.clone();
        flipped[i] ^= 0x40;
        images.push((format!("byte {i} flipped"), flipped));
    }
    for (damage, image_bytes) in images {
        let image = copy(&b);
        image.set_len(&third, 0).unwrap();
        image.write_at(&third, 0, &image_bytes).unwrap();
        match recover(&image) {
            Ok(report) => {
                let reached = if tree_of(&image) == trees[2] { 3 } else { 2 };
                assert_eq!(tree_of(&image), trees[reached - 1], "third segment {damage}");
                assert_eq!(report.replayed.map(|r| r.txns), Some(reached as u64), "third segment {damage}");
                assert!(used_segments(&image).is_empty(), "third segment {damage}: the log is freed");
            }
            // A flipped magic byte makes the segment foreign: refused, naming it.
            Err(e) => assert!(e.to_string().contains(".mcfs/journal.2"), "third segment {damage}: {e}"),
        }
    }
}

/// `txns` committed on `b` and left waiting. Returns `b`, the journal, a
/// copy of `b` recovered (with its report: what a crash now would leave)
/// and the tree after every transaction.
fn waiting_log(
    b: Arc<MemBackend>,
    txns: &[Vec<JournalOp>],
) -> (Arc<MemBackend>, Journal, (MemBackend, RecoveryReport), crate::backend::TreeSnapshot) {
    let expected = trees_after(&b, txns).pop().unwrap();
    let mut j = Journal::open(b.clone()).unwrap();
    for (i, ops) in txns.iter().enumerate() {
        commit(&mut j, i as u64 + 1, ops);
    }
    let image = copy(&b);
    let report = recover(&image).unwrap();
    (b, j, (image, report), expected)
}

/// Seeded random runs (`MCFS_SEED` repeats one): each is committed in 2 to 6
/// transactions and applied as one coalesced run (the last third with files
/// born and gone within it, elided); the live tree must equal
/// the ops applied one by one, and recovery of the log before the run too.
#[test]
fn journal_log_random_coalesced_runs_equal_the_ops_applied_one_by_one() {
    let base_seed: u64 = std::env::var("MCFS_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5eed_c0a1);
    eprintln!("coalesced runs: seed {base_seed} (set MCFS_SEED to repeat)");
    let (mut coalesced, mut elided) = (0, 0);
    for round in 0..225u64 {
        let seed = base_seed.wrapping_add(round);
        let count = 2 + (seed % 5) as usize;
        // The last third also holds files created, written and unlinked.
        let txns = match round {
            0..150 => random_run(seed, count),
            _ => slices(super::scenarios::random_txn_with_transient_files(seed, 12 * count), count),
        };
        let (b, mut j, image, expected) = waiting_log(mem_with_base(), &txns);
        assert_eq!(tree_of(&image.0), expected, "seed {seed}: recovery of the waiting run");
        let report = j.apply(&mut || {}).unwrap();
        assert_eq!(tree_of(&b), expected, "seed {seed}: the coalesced run");
        coalesced += report.coalesced_bytes;
        elided += report.elided;
    }
    assert!(coalesced > 0, "no random run coalesced anything");
    assert!(elided > 0, "no random run elided anything");
}

/// A transaction reusing a segment whose earlier, longer transaction was
/// applied (its commit record and payload still there, as the live applier
/// leaves them): a crash image may hold any prefix of the new payload over
/// the stale one, under the stale commit record or the new one. Recovery
/// never takes stale bytes for a transaction: it reaches the state after the
/// first transaction, or after the second once its record and payload are
/// whole, and leaves the log free.
#[test]
fn journal_a_segment_reused_over_a_longer_stale_transaction_recovers_at_every_cut() {
    let long: Vec<JournalOp> = (0..6u64)
        .map(|i| JournalOp::Write { path: "a".into(), offset: i * 700, data: vec![i as u8 + 1; 700] })
        .collect();
    let short = vec![JournalOp::Write { path: "a".into(), offset: 100, data: vec![0xee; 50] }];
    let b = mem_with_base();
    let mut j = Journal::open(b.clone()).unwrap();
    commit(&mut j, 1, &long);
    j.apply(&mut || {}).unwrap();
    let after_first = tree_of(&b);
    let stale_image = copy(&b);
    let stale = file_bytes_of(&b, &journal_path());
    commit(&mut j, 2, &short);
    let after_second = apply_directly(&copy(&b), &short);
    let new = file_bytes_of(&b, &journal_path());
    let new_len = (HEADER_LEN + record_in(&*b, 0).expect("the second record").payload_len) as usize;
    assert!(new_len < HEADER_LEN as usize + record_len_of(&stale), "the stale transaction is the longer one");
    assert_eq!(new.len(), stale.len(), "the commit overwrote the segment in place");
    let header = HEADER_LEN as usize;
    let mut images = Vec::new();
    for cut in header..=new_len {
        for (which, record) in [("stale record", &stale[..header]), ("new record", &new[..header])] {
            let mut bytes = stale.clone();
            bytes[header..cut].copy_from_slice(&new[header..cut]);
            bytes[..header].copy_from_slice(record);
            images.push((
                format!("{which}, payload written to byte {cut}"),
                bytes,
                which == "new record" && cut == new_len,
            ));
        }
    }
    // The new record torn over the stale one: any mix of the two.
    for mix in 1..48 {
        let mut bytes = new.clone();
        bytes[mix..header].copy_from_slice(&stale[mix..header]);
        images.push((format!("new record torn after byte {mix}"), bytes, false));
    }
    for (what, bytes, whole) in images {
        let image = copy(&stale_image);
        image.write_at(&journal_path(), 0, &bytes).unwrap();
        let report = recover(&image).unwrap_or_else(|e| panic!("{what}: {e}"));
        let expected = if whole { &after_second } else { &after_first };
        assert_eq!(tree_of(&image), *expected, "{what}: {report:?}");
        assert_eq!(report.replayed.is_some(), whole, "{what}: {report:?}");
        assert_eq!(record_in(&image, 0), None, "{what}: the record is cleared");
        assert_eq!(recover(&image).unwrap(), RecoveryReport::default(), "{what}: recovered once for all");
    }
}

/// Applied transactions stay in their segments with valid commit records;
/// numbers restart at 1 with the next `open`. Neither `open` nor a recovery
/// after it may take an earlier session's record for a new transaction.
#[test]
fn journal_records_left_by_an_earlier_session_are_cleared_before_numbers_restart() {
    let txns = random_run(23, 3);
    let b = mem_with_base();
    let mut j = Journal::open(b.clone()).unwrap();
    for (i, ops) in txns.iter().enumerate() {
        commit(&mut j, i as u64 + 1, ops);
    }
    j.apply(&mut || {}).unwrap();
    drop(j);
    assert_eq!(used_segments(&*b), vec![0, 1, 2], "the applied records are left in place");
    let after_run = tree_of(&b);
    for via_recover in [false, true] {
        let b = Arc::new(copy(&b));
        if via_recover {
            assert_eq!(recover(&*b).unwrap(), RecoveryReport::default(), "nothing to replay, nothing to report");
        }
        let mut j = Journal::open(b.clone()).expect("open takes a log of applied transactions");
        assert!(used_segments(&*b).is_empty(), "open (or recovery) cleared every record");
        // A new session's transaction 1 in segment 0; segments 1 and 2 held
        // transactions 2 and 3 of the last session, which must not come back.
        let ops = vec![JournalOp::Write { path: "late".into(), offset: 0, data: vec![7; 10] }];
        let create =
            JournalOp::Create { path: "late".into(), kind: crate::types::FileKind::File, perm: 0o600, rdev: 0 };
        let ops = [vec![create], ops].concat();
        commit(&mut j, 1, &ops);
        drop(j);
        let expected = apply_directly(&copy(&b), &ops);
        let report = recover(&*b).unwrap();
        assert_eq!(report.replayed.map(|r| (r.seq, r.txns)), Some((1, 1)), "via recover {via_recover}");
        assert_eq!(tree_of(&b), expected);
        assert_ne!(tree_of(&b), after_run);
    }
}

/// A transaction larger than a kept segment grows it; once
/// applied, the segment is cleared and cut back, giving the room back.
#[test]
fn journal_a_segment_grown_by_a_large_transaction_is_cut_back_once_applied() {
    let ops = vec![JournalOp::Write { path: "a".into(), offset: 0, data: vec![3; 2 << 20] }];
    let b = mem_with_base();
    let expected = apply_directly(&copy(&b), &ops);
    let mut j = Journal::open(b.clone()).unwrap();
    commit(&mut j, 1, &ops);
    assert!(journal_len(&*b) > 2 << 20);
    j.apply(&mut || {}).unwrap();
    assert_eq!(tree_of(&b), expected);
    assert_eq!((journal_len(&*b), record_in(&*b, 0)), (SEGMENT_READY_BYTES, None), "cut back and cleared");
    let small = vec![JournalOp::Write { path: "a".into(), offset: 0, data: vec![4; 10] }];
    commit(&mut j, 2, &small);
    assert_eq!(journal_len(&*b), SEGMENT_READY_BYTES, "the next small one fits again");
    assert_eq!(recover(&copy(&b)).unwrap().replayed.map(|r| r.seq), Some(2));
}

fn file_bytes_of(b: &MemBackend, path: &Path) -> Vec<u8> {
    let mut bytes = vec![0; b.stat(path).unwrap().size as usize];
    assert_eq!(b.read_at(path, 0, &mut bytes).unwrap(), bytes.len());
    bytes
}

/// The payload length the commit record at the start of `segment` names.
fn record_len_of(segment: &[u8]) -> usize {
    match encode::TxnHeader::decode(&segment[..HEADER_LEN as usize]) {
        Ok(encode::HeaderState::Valid(h)) => h.payload_len as usize,
        other => panic!("no valid record: {other:?}"),
    }
}

/// A transaction's record buffer outlives it: the next `begin` starts with its capacity (no regrowth
/// from nothing every checkpoint), empty, and the next transaction's records are its own. (A store that
/// takes the payload joined: one that takes pieces never gets the data into the buffer, as the last check shows.)
#[test]
fn the_next_transaction_reuses_the_record_buffer() {
    let b = mem_with_base();
    let mut journal = Journal::open(Arc::new(FaultyBackend::new(b.clone()))).unwrap();
    let write = |byte: u8| JournalOp::Write { path: "c".into(), offset: 0, data: vec![byte; 100_000] };
    commit(&mut journal, 1, &[write(1), write(2)]);
    journal.apply(&mut || {}).unwrap();
    journal.begin(2).unwrap();
    let TxnState::Building { buf, .. } = &journal.txn else { panic!("building") };
    assert!(buf.is_empty() && buf.capacity() >= 200_000, "capacity {}", buf.capacity());
    journal.append(write(3)).unwrap();
    journal.end().unwrap();
    journal.wait_sync().unwrap();
    journal.apply(&mut || {}).unwrap();
    let mut got = vec![0u8; 100_000];
    assert_eq!(b.read_at(Path::new("c"), 0, &mut got).unwrap(), 100_000);
    assert!(got.iter().all(|x| *x == 3), "the second transaction wrote its own bytes");
    let mut pieces = Journal::open(mem_with_base()).unwrap();
    pieces.begin(1).unwrap();
    pieces.append(write(4)).unwrap();
    let TxnState::Building { buf, tail_bytes, .. } = &pieces.txn else { panic!("building") };
    assert!(buf.len() < 100 && *tail_bytes == 100_000, "record head {} bytes, tail {tail_bytes}", buf.len());
}

/// SQLite's rollback journal in `n` app transactions, three commits each
/// (journal created and written; database written; journal unlinked), with
/// the times the engine sets at the end of each.
fn sqlite_delete_commits(n: u8) -> Vec<Vec<JournalOp>> {
    let t = |secs: u64| UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000 + secs);
    let times = |path: &str, secs: u64| JournalOp::SetTimes { path: path.into(), atime: t(secs), mtime: t(secs) };
    (0..n)
        .flat_map(|i| {
            let create =
                JournalOp::Create { path: "d/j".into(), kind: crate::types::FileKind::File, perm: 0o644, rdev: 0 };
            vec![
                vec![
                    create,
                    JournalOp::Write { path: "d/j".into(), offset: 0, data: vec![i; 4608] },
                    times("d/j", 1),
                    times("d", 1),
                ],
                vec![JournalOp::Write { path: "d/x".into(), offset: 0, data: vec![i; 4096] }, times("d/x", 2)],
                vec![JournalOp::RemoveFile { path: "d/j".into() }, times("d", u64::from(i) + 3)],
            ]
        })
        .collect()
}

/// One run of 20 SQLite transactions (60 commits): the rollback journal is
/// issued once (created, written and unlinked, two groups), its other 19
/// lives are elided; the run ends where the commits applied one by one end,
/// and so does recovery of the log, which elides nothing. Applied one by
/// one, every commit after the first journal starts a group.
#[test]
fn journal_run_elides_the_rollback_journal_born_and_gone_in_it() {
    let (b, mut j, image, expected) = waiting_log(mem_with_base(), &sqlite_delete_commits(20));
    let replayed = image.1.replayed.unwrap();
    assert_eq!(tree_of(&image.0), expected, "recovery of the waiting run");
    assert_eq!(replayed.elided, 0, "recovery replays every op");
    let report = j.apply(&mut || {}).unwrap();
    assert_eq!(tree_of(&b), expected, "{:?}", tree_of(&b).diff(&expected));
    assert_eq!(report.elided, 19 * 4, "create, write, times and unlink of 19 journals: {report:?}");
    assert_eq!(records(&report), 2, "the first journal's unlink starts a group, then the done record: {report:?}");
    assert!(report.syncs <= 4, "{report:?}");
    assert!(replayed.syncs >= 2 * 38, "recovery takes two groups per journal: {replayed:?}");
}

/// An anchor the store refuses (a directory where the app's file was, put
/// there behind mcfs's back): the spans after it are issued and refused in
/// turn, and reported as recovery would report them.
#[test]
fn journal_spans_after_a_refused_anchor_are_issued_and_reported() {
    let b = mem_with_base();
    b.create("d/j".as_ref(), crate::types::FileKind::Dir, 0o755, 0).unwrap();
    let txns: Vec<Vec<JournalOp>> = sqlite_delete_commits(2).into_iter().skip(2).collect();
    let (b, mut j, image, expected) = waiting_log(b, &txns);
    let recovered = image.1.replayed.unwrap();
    let report = j.apply(&mut || {}).unwrap();
    assert_eq!(tree_of(&b), expected);
    assert_eq!(report.elided, 0, "{report:?}");
    let refused = |r: &ApplyReport| r.unapplied.iter().map(|u| (u.seq, u.index)).collect::<Vec<_>>();
    assert_eq!(refused(&report), refused(&recovered), "the live run reports what recovery reports");
    assert_eq!(refused(&report), vec![(1, 0), (2, 0), (2, 1), (4, 0)], "{report:?}");
}
