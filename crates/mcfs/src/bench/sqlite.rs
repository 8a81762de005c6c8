//! SQLite inserts, one row per transaction, with synchronous=FULL, in WAL
//! and in DELETE journal mode: committed transactions per second. Each mode
//! runs until its transaction count or its time limit is reached, and the
//! row count is checked afterwards so a silently lost commit cannot inflate
//! the rate.

use super::metrics::{Metric, Outcome};
use super::Sizes;
use rusqlite::Connection;
use std::path::Path;
use std::time::{Duration, Instant};

/// Bytes of payload per row: a small record, as apps store.
const ROW_BYTES: usize = 100;

pub fn run(dir: &Path, sizes: &Sizes) -> Result<Outcome, String> {
    let mut outcome = Outcome::default();
    for (mode, metric) in [("wal", Metric::SqliteWalTps), ("delete", Metric::SqliteDeleteTps)] {
        let path = dir.join(format!("bench-{mode}.db"));
        let (count, elapsed) =
            inserts(&path, mode, sizes).map_err(|e| format!("{mode} mode, {}: {e}", path.display()))?;
        outcome.sample(metric, count as f64 / elapsed.as_secs_f64());
        outcome.extra(&format!("{mode}_transactions"), count);
    }
    outcome.extra("row_bytes", ROW_BYTES);
    Ok(outcome)
}

/// Returns (transactions committed, time taken).
fn inserts(path: &Path, mode: &str, sizes: &Sizes) -> Result<(u64, Duration), String> {
    let sql = |e: rusqlite::Error| e.to_string();
    let conn = Connection::open(path).map_err(sql)?;
    let granted: String = conn.query_row(&format!("PRAGMA journal_mode={mode}"), [], |r| r.get(0)).map_err(sql)?;
    if !granted.eq_ignore_ascii_case(mode) {
        return Err(format!("SQLite refused journal_mode={mode} (it kept {granted})"));
    }
    conn.execute_batch("PRAGMA synchronous=FULL; CREATE TABLE t(id INTEGER PRIMARY KEY, payload BLOB NOT NULL);")
        .map_err(sql)?;
    let mut insert = conn.prepare("INSERT INTO t(payload) VALUES (?1)").map_err(sql)?;
    let limit = Duration::from_secs_f64(sizes.sqlite_max_seconds);
    let mut payload = [0u8; ROW_BYTES];
    let mut count = 0u64;
    let start = Instant::now();
    // Outside an explicit BEGIN every INSERT is its own transaction.
    while count < sizes.sqlite_max_transactions && start.elapsed() < limit {
        payload[..8].copy_from_slice(&count.to_le_bytes());
        insert.execute([&payload[..]]).map_err(sql)?;
        count += 1;
    }
    let elapsed = start.elapsed();
    let rows: u64 = conn.query_row("SELECT count(*) FROM t", [], |r| r.get(0)).map_err(sql)?;
    if rows != count {
        return Err(format!("{count} inserts committed but the table holds {rows} rows"));
    }
    Ok((count, elapsed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_modes_report_a_rate_from_a_checked_row_count() {
        let dir = tempfile::tempdir().unwrap();
        let sizes = Sizes { sqlite_max_transactions: 20, sqlite_max_seconds: 60.0, ..Sizes::quick() };
        let outcome = run(dir.path(), &sizes).unwrap();
        let metrics: Vec<Metric> = outcome.samples.iter().map(|(m, _)| *m).collect();
        assert_eq!(metrics, [Metric::SqliteWalTps, Metric::SqliteDeleteTps]);
        assert!(outcome.samples.iter().all(|(_, v)| *v > 0.0 && v.is_finite()));
        assert_eq!(outcome.extras["wal_transactions"], 20);
        assert_eq!(outcome.extras["delete_transactions"], 20);
    }
}
