//! fio 4 KiB random writes with an fsync after every write (psync engine,
//! buffered): fsync latency percentiles (fio's `sync` latencies), write
//! completion latency percentiles and write IOPS, read from fio's JSON.

use super::cmd;
use super::metrics::{Metric, Outcome};
use super::Sizes;
use serde_json::Value;
use std::path::Path;

pub fn run(dir: &Path, sizes: &Sizes, seed: u64) -> Result<Outcome, String> {
    let args = [
        "--name=randwrite-fsync".to_string(),
        format!("--directory={}", dir.display()),
        "--filename=fio.dat".to_string(),
        "--rw=randwrite".to_string(),
        "--bs=4k".to_string(),
        "--fsync=1".to_string(),
        format!("--size={}", sizes.fio_file_bytes),
        format!("--runtime={}", sizes.fio_max_seconds),
        "--ioengine=psync".to_string(),
        "--direct=0".to_string(),
        // FUSE file systems need not implement fallocate; lay the file out
        // with plain writes everywhere so every target does the same work.
        "--fallocate=none".to_string(),
        format!("--randseed={seed}"),
        "--output-format=json".to_string(),
    ];
    let out = cmd::run("fio", &args)?;
    let mut outcome = parse(&out)?;
    outcome.extra("file_bytes", sizes.fio_file_bytes);
    outcome.extra("max_seconds", sizes.fio_max_seconds);
    Ok(outcome)
}

fn parse(out: &str) -> Result<Outcome, String> {
    // fio may print warnings before the JSON document.
    let start = out.find('{').ok_or_else(|| format!("fio printed no JSON: {}", out.trim()))?;
    let doc: Value = serde_json::from_str(&out[start..]).map_err(|e| format!("cannot parse fio's JSON: {e}"))?;
    let job = doc.pointer("/jobs/0").ok_or("fio's JSON has no job")?;
    match job.get("error").and_then(Value::as_i64) {
        Some(0) => {}
        other => return Err(format!("fio job failed with error {other:?}")),
    }
    let number = |pointer: &str| {
        job.pointer(pointer).and_then(Value::as_f64).ok_or_else(|| format!("fio's JSON lacks {pointer}"))
    };
    let ns_to_us = |pointer: &str| number(pointer).map(|ns| ns / 1000.0);
    let mut outcome = Outcome::default();
    outcome.sample(Metric::FsyncP50Us, ns_to_us("/sync/lat_ns/percentile/50.000000")?);
    outcome.sample(Metric::FsyncP99Us, ns_to_us("/sync/lat_ns/percentile/99.000000")?);
    outcome.sample(Metric::WriteClatP50Us, ns_to_us("/write/clat_ns/percentile/50.000000")?);
    outcome.sample(Metric::WriteClatP99Us, ns_to_us("/write/clat_ns/percentile/99.000000")?);
    outcome.sample(Metric::WriteIops, number("/write/iops")?);
    outcome.extra("fsyncs", number("/sync/total_ios")?);
    outcome.extra("runtime_ms", number("/job_runtime")?);
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"note: both iodepth >= 1 and synchronous I/O engine are selected
{
  "fio version" : "fio-3.33",
  "jobs" : [ { "jobname" : "randwrite-fsync", "error" : 0, "job_runtime" : 3000,
      "write" : { "iops" : 325.18, "clat_ns" : { "percentile" : { "50.000000" : 7000, "99.000000" : 21000 } } },
      "sync" : { "total_ios" : 1023, "lat_ns" : { "percentile" : { "50.000000" : 2900000, "99.000000" : 5500000 } } } } ]
}"#;

    #[test]
    fn percentiles_and_iops_come_from_the_json() {
        let outcome = parse(SAMPLE).unwrap();
        assert_eq!(
            outcome.samples,
            vec![
                (Metric::FsyncP50Us, 2900.0),
                (Metric::FsyncP99Us, 5500.0),
                (Metric::WriteClatP50Us, 7.0),
                (Metric::WriteClatP99Us, 21.0),
                (Metric::WriteIops, 325.18),
            ]
        );
        assert_eq!(outcome.extras["fsyncs"], 1023.0);
    }

    #[test]
    fn a_failed_job_or_missing_field_is_an_error() {
        assert!(parse(&SAMPLE.replace("\"error\" : 0", "\"error\" : 5")).unwrap_err().contains("error Some(5)"));
        assert!(parse(&SAMPLE.replace("99.000000", "98.000000")).unwrap_err().contains("/sync/lat_ns/percentile/99"));
        assert!(parse("fio: pid=0, err=2/file:filesetup.c").unwrap_err().contains("no JSON"));
    }
}
