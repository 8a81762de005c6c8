//! dbench (Debian package `dbench`) with its stock load file: N clients
//! replaying a file-server trace for a fixed time. Its closing line gives
//! the throughput (MB/s, 10^6 bytes per second) and the largest latency of
//! any operation (ms, kept here in µs); the client count on that line is
//! checked against the one asked for.

use super::cmd;
use super::metrics::{Metric, Outcome};
use super::Sizes;
use std::path::Path;

/// Where Debian's dbench package puts its load file.
const LOADFILE: &str = "/usr/share/dbench/client.txt";

pub fn run(dir: &Path, sizes: &Sizes) -> Result<Outcome, String> {
    if !Path::new(LOADFILE).is_file() {
        return Err(format!("{LOADFILE} is missing (Debian: apt-get install dbench; scripts/bench-setup.sh)"));
    }
    let args = [
        "-D".to_string(),
        dir.display().to_string(),
        "-t".to_string(),
        sizes.dbench_seconds.to_string(),
        "-c".to_string(),
        LOADFILE.to_string(),
        sizes.dbench_clients.to_string(),
    ];
    let out = cmd::run("dbench", &args)?;
    let result = parse(&out)?;
    if result.clients != sizes.dbench_clients {
        return Err(format!("dbench ran {} clients, not {}", result.clients, sizes.dbench_clients));
    }
    let mut outcome = Outcome::default();
    outcome.sample(Metric::DbenchMbps, result.mb_per_sec);
    outcome.sample(Metric::DbenchMaxLatencyUs, result.max_latency_ms * 1000.0);
    outcome.extra("clients", sizes.dbench_clients);
    outcome.extra("seconds", sizes.dbench_seconds);
    Ok(outcome)
}

#[derive(Debug, PartialEq)]
struct Closing {
    mb_per_sec: f64,
    clients: u32,
    max_latency_ms: f64,
}

/// "Throughput 144.976 MB/sec  2 clients  2 procs  max_latency=24.076 ms"
fn parse(out: &str) -> Result<Closing, String> {
    let line = out
        .lines()
        .rev()
        .find(|l| l.starts_with("Throughput "))
        .ok_or_else(|| format!("dbench printed no Throughput line: {}", out.lines().last().unwrap_or("")))?;
    let bad = || format!("cannot read dbench's line {line:?}");
    let words: Vec<&str> = line.split_whitespace().collect();
    let word_before = |word: &str| words.iter().position(|w| *w == word).and_then(|i| words.get(i.checked_sub(1)?));
    let mb_per_sec = words.get(1).and_then(|w| w.parse::<f64>().ok()).filter(|_| words.get(2) == Some(&"MB/sec"));
    let clients = word_before("clients").and_then(|w| w.parse().ok());
    let max_latency_ms = words
        .iter()
        .find_map(|w| w.strip_prefix("max_latency="))
        .and_then(|w| w.parse::<f64>().ok())
        .filter(|_| words.last() == Some(&"ms"));
    match (mb_per_sec, clients, max_latency_ms) {
        (Some(mb_per_sec), Some(clients), Some(max_latency_ms)) => Ok(Closing { mb_per_sec, clients, max_latency_ms }),
        _ => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "dbench version 4.00 - Copyright Andrew Tridgell 1999-2004

Running for 3 seconds with load '/usr/share/dbench/client.txt' and minimum warmup 0 secs
   2     23742   144.98 MB/sec  execute   2 sec  latency 15.215 ms
 Flush            911     3.940    23.245

Throughput 144.976 MB/sec  2 clients  2 procs  max_latency=24.076 ms
";

    #[test]
    fn the_closing_line_gives_throughput_clients_and_max_latency() {
        assert_eq!(parse(SAMPLE), Ok(Closing { mb_per_sec: 144.976, clients: 2, max_latency_ms: 24.076 }));
    }

    #[test]
    fn a_missing_or_changed_closing_line_is_an_error() {
        let cut = SAMPLE.replace("Throughput", "Thruput");
        assert!(parse(&cut).unwrap_err().contains("no Throughput line"));
        let unit = SAMPLE.replace("max_latency=24.076 ms", "max_latency=24.076 us");
        assert!(parse(&unit).unwrap_err().contains("cannot read"));
        let rate = SAMPLE.replace("144.976 MB/sec", "144.976 KB/sec");
        assert!(parse(&rate).unwrap_err().contains("cannot read"));
    }
}
