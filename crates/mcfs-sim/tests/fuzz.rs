//! Fuzz-style robustness: every reader and importer, fed random and mutated inputs, returns events or one
//! error with a position inside the input, and never panics or loops.

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};

use mcfs_sim::binary::{BinaryReader, BinaryWriter};
use mcfs_sim::import::csv::{CsvImporter, CsvOptions};
use mcfs_sim::import::strace::{StraceImporter, StraceOptions};
use mcfs_sim::text::{TextReader, TextWriter};
use mcfs_sim::{Position, TraceError, TraceEvent};
use rand::rngs::StdRng;
use rand::Rng;

const CASES: usize = 3000;

/// Applies 1..8 random byte edits: flips, inserts, deletions, truncation, splices of interesting bytes.
fn mutate(rng: &mut StdRng, input: &[u8]) -> Vec<u8> {
    const INTERESTING: &[u8] = b"\n\\x\"#<>()=, 0123456789\x80\xff\x01\x10\x13\x7f";
    let mut out = input.to_vec();
    for _ in 0..rng.gen_range(1..8) {
        let at = if out.is_empty() { 0 } else { rng.gen_range(0..out.len()) };
        match rng.gen_range(0..5) {
            0 if !out.is_empty() => out[at] ^= 1 << rng.gen_range(0..8),
            1 => out.insert(at, INTERESTING[rng.gen_range(0..INTERESTING.len())]),
            2 if !out.is_empty() => {
                out.remove(at);
            }
            3 => out.truncate(at),
            _ => out.insert(at, rng.gen()),
        }
    }
    out
}

/// Drains a reader, checking it ends with at most one error, positioned inside the input.
fn drain(name: &str, input: &[u8], reader: impl Iterator<Item = Result<TraceEvent, TraceError>>) {
    let lines = input.iter().filter(|&&b| b == b'\n').count() as u64 + 1;
    let mut items = 0usize;
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        for item in reader {
            items += 1;
            assert!(items <= input.len() + 1, "{name}: more items than input bytes");
            if let Err(e) = item {
                match e.position {
                    Position::Line(n) => assert!((1..=lines + 1).contains(&n), "{name}: line {n} of {lines}: {e}"),
                    Position::Byte(n) => assert!(n <= input.len() as u64, "{name}: offset {n} of {}: {e}", input.len()),
                    Position::None => panic!("{name}: error without position: {e}"),
                }
                assert!(!e.reason.is_empty());
            }
        }
    }));
    if outcome.is_err() {
        panic!("{name} panicked on input {:?}", String::from_utf8_lossy(input));
    }
}

fn sample_trace(rng: &mut StdRng) -> Vec<TraceEvent> {
    let len = rng.gen_range(0..20);
    common::random_trace(rng, len)
}

#[test]
fn text_reader_survives_mutations() {
    let mut rng = common::seeded_rng("text_reader_survives_mutations");
    for _ in 0..CASES {
        let mut w = TextWriter::new(Vec::new()).unwrap();
        sample_trace(&mut rng).iter().for_each(|e| w.write_event(e).unwrap());
        let input = mutate(&mut rng, &w.finish().unwrap());
        drain("text", &input, TextReader::new(input.as_slice()));
    }
}

#[test]
fn binary_reader_survives_mutations_and_noise() {
    let mut rng = common::seeded_rng("binary_reader_survives_mutations_and_noise");
    for case in 0..CASES {
        let input = if case % 10 == 0 {
            let mut noise = b"MCFSTRAC\x01".to_vec();
            noise.extend((0..rng.gen_range(0..200)).map(|_| rng.gen::<u8>()));
            noise
        } else {
            let mut w = BinaryWriter::new(Vec::new()).unwrap();
            sample_trace(&mut rng).iter().for_each(|e| w.write_event(e).unwrap());
            mutate(&mut rng, &w.finish().unwrap())
        };
        drain("binary", &input, BinaryReader::new(input.as_slice()));
    }
}

const STRACE_SAMPLE: &str = include_str!("fixtures/sqlite3_create_insert.strace");
/// The calls of working directories, links and deleted files, in both spellings of `(deleted)`.
const STRACE_PATHS: &str = "\
1 10:00:00.000000 chdir(\"sub/../d\") = 0
1 10:00:00.000001 fchdir(3</tmp>) = 0
1 10:00:00.000002 mkdir(\"d\", 0777) = 0
1 10:00:00.000003 link(\"a\", \"b\") = 0
1 10:00:00.000004 linkat(AT_FDCWD</r>, \"\", 4</r/#1>(deleted), \"x\", AT_EMPTY_PATH) = 0
1 10:00:00.000005 symlinkat(\"t\", AT_FDCWD</r>, \"s\") = 0
1 10:00:00.000006 renameat2(AT_FDCWD</r>, \"s\", 5</r/d (deleted)>, \"u\", RENAME_EXCHANGE) = 0
1 10:00:00.000007 write(3</r/x.db-wal>(deleted), \"\", 8) = 8
1 10:00:00.000008 openat(AT_FDCWD</r>, \"t\", O_RDWR|O_TMPFILE, 0600) = 6</r/#2 (deleted)>
";

#[test]
fn strace_importer_survives_mutations() {
    let mut rng = common::seeded_rng("strace_importer_survives_mutations");
    let lines: Vec<&str> = STRACE_SAMPLE.lines().chain(STRACE_PATHS.lines()).collect();
    for _ in 0..CASES {
        let start = rng.gen_range(0..lines.len());
        let end = (start + rng.gen_range(1..12)).min(lines.len());
        let input = mutate(&mut rng, (lines[start..end].join("\n") + "\n").as_bytes());
        drain("strace", &input, StraceImporter::new(input.as_slice(), StraceOptions::default()));
    }
}

#[test]
fn csv_importer_survives_mutations() {
    let mut rng = common::seeded_rng("csv_importer_survives_mutations");
    let columns = "time=1,app=2,op=3,offset=4,size=5,pid=6,path=7".parse().unwrap();
    let options = CsvOptions { offset_unit: 512, ..CsvOptions::new(columns) };
    for _ in 0..CASES {
        let rows: String = (0..rng.gen_range(1..10))
            .map(|i| format!("{i}.25,app{i},{},{},{},{},\"/f,{i}\"\n", ["R", "W"][i % 2], i * 8, 4096, 100 + i))
            .collect();
        let input = mutate(&mut rng, rows.as_bytes());
        drain("csv", &input, CsvImporter::new(input.as_slice(), options.clone()));
    }
}

#[test]
fn csv_importer_with_a_process_column_and_a_file_per_app_survives_mutations() {
    let mut rng = common::seeded_rng("csv_importer_with_a_process_column_and_a_file_per_app_survives_mutations");
    let columns = "process=1,op=2,offset=3,size=4,time=5".parse().unwrap();
    let options = CsvOptions { file_per_app: true, offset_unit: 512, ..CsvOptions::new(columns) };
    for _ in 0..CASES {
        let rows: String = (0..rng.gen_range(1..10))
            .map(|i| format!("app/{i}-{},{},{},8,{i}.5\n", 100 + i, ["R", "W"][i % 2], i * 8))
            .collect();
        let input = mutate(&mut rng, rows.as_bytes());
        drain("csv", &input, CsvImporter::new(input.as_slice(), options.clone()));
    }
}

#[test]
fn every_reader_survives_random_bytes() {
    let mut rng = common::seeded_rng("every_reader_survives_random_bytes");
    let columns: mcfs_sim::import::csv::ColumnSpec = "time=1,app=2,op=3,offset=4,size=5".parse().unwrap();
    for _ in 0..CASES {
        let len = rng.gen_range(0..300);
        // Half the cases draw from a small alphabet so that structure (lines, fields, escapes) appears.
        let input: Vec<u8> = if rng.gen() {
            (0..len).map(|_| rng.gen()).collect()
        } else {
            const ALPHABET: &[u8] = b"0123456789 .:,\n\\x\"<>()=-/#abcRW";
            (0..len).map(|_| ALPHABET[rng.gen_range(0..ALPHABET.len())]).collect()
        };
        drain("text", &input, TextReader::new(input.as_slice()));
        drain("binary", &input, BinaryReader::new(input.as_slice()));
        drain("strace", &input, StraceImporter::new(input.as_slice(), StraceOptions::default()));
        drain("csv", &input, CsvImporter::new(input.as_slice(), CsvOptions::new(columns.clone())));
    }
}
