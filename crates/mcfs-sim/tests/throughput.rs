//! Reader and writer throughput, for the record (no assertions on time). Run in release:
//! `cargo test -p mcfs-sim --release --test throughput -- --ignored --nocapture`.

mod common;

use std::time::Instant;

use mcfs_sim::binary::{BinaryReader, BinaryWriter};
use mcfs_sim::text::{TextReader, TextWriter};

#[test]
#[ignore = "measurement, run by hand in release mode"]
fn measure_reader_and_writer_throughput() {
    let mut rng = common::seeded_rng("measure_reader_and_writer_throughput");
    let events = common::random_trace(&mut rng, 1_000_000);
    let rate = |start: Instant| events.len() as f64 / start.elapsed().as_secs_f64() / 1e6;

    let start = Instant::now();
    let mut w = BinaryWriter::new(Vec::new()).unwrap();
    events.iter().for_each(|e| w.write_event(e).unwrap());
    let binary = w.finish().unwrap();
    println!("binary write: {:.2} M events/s, {} bytes", rate(start), binary.len());
    let start = Instant::now();
    let read = BinaryReader::new(binary.as_slice()).filter(Result::is_ok).count();
    println!("binary read:  {:.2} M events/s", rate(start));
    assert_eq!(read, events.len());

    let start = Instant::now();
    let mut w = TextWriter::new(Vec::new()).unwrap();
    events.iter().for_each(|e| w.write_event(e).unwrap());
    let text = w.finish().unwrap();
    println!("text write:   {:.2} M events/s, {} bytes", rate(start), text.len());
    let start = Instant::now();
    let read = TextReader::new(text.as_slice()).filter(Result::is_ok).count();
    println!("text read:    {:.2} M events/s", rate(start));
    assert_eq!(read, events.len());
}
