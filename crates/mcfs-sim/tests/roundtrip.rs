//! Round trips between the two trace forms: every event survives, and converting back and forth is
//! byte-for-byte stable (text → binary → text, binary → text → binary).

mod common;

use mcfs_sim::binary::{BinaryReader, BinaryWriter};
use mcfs_sim::text::{TextReader, TextWriter};
use mcfs_sim::TraceEvent;

fn to_text(events: &[TraceEvent]) -> Vec<u8> {
    let mut w = TextWriter::new(Vec::new()).unwrap();
    events.iter().for_each(|e| w.write_event(e).unwrap());
    w.finish().unwrap()
}

fn to_binary(events: &[TraceEvent]) -> Vec<u8> {
    let mut w = BinaryWriter::new(Vec::new()).unwrap();
    events.iter().for_each(|e| w.write_event(e).unwrap());
    w.finish().unwrap()
}

fn from_text(bytes: &[u8]) -> Vec<TraceEvent> {
    TextReader::new(bytes).collect::<Result<_, _>>().unwrap()
}

fn from_binary(bytes: &[u8]) -> Vec<TraceEvent> {
    BinaryReader::new(bytes).collect::<Result<_, _>>().unwrap()
}

#[test]
fn random_traces_round_trip_through_both_forms() {
    let mut rng = common::seeded_rng("random_traces_round_trip_through_both_forms");
    for len in [0usize, 1, 2, 10, 100, 2000] {
        let events = common::random_trace(&mut rng, len);
        let text = to_text(&events);
        let binary = to_binary(&events);
        assert_eq!(from_text(&text), events);
        assert_eq!(from_binary(&binary), events);
        // text -> binary -> text
        assert_eq!(to_text(&from_binary(&to_binary(&from_text(&text)))), text);
        // binary -> text -> binary
        assert_eq!(to_binary(&from_text(&to_text(&from_binary(&binary)))), binary);
    }
}

#[test]
fn binary_is_smaller_than_text_for_realistic_traces() {
    let mut rng = common::seeded_rng("binary_is_smaller_than_text_for_realistic_traces");
    let events = common::random_trace(&mut rng, 5000);
    let (text, binary) = (to_text(&events), to_binary(&events));
    assert!(binary.len() * 2 < text.len(), "binary {} bytes, text {} bytes", binary.len(), text.len());
}

/// A version 1 trace reads and is written back in the current version.
#[test]
fn hand_written_text_reads_and_normalizes() {
    let text = b"mcfs-trace 1\n# comment\n1.5\tapp 7 write /f 0 10   # trailing\n2 app 7 fsync /f\n";
    let events = from_text(text);
    assert_eq!(events.len(), 2);
    let canonical = to_text(&events);
    assert_eq!(canonical, b"mcfs-trace 2\n1.500000000 app 7 write /f 0 10\n2.000000000 app 7 fsync /f\n");
}
