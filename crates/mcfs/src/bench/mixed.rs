//! A mixed SQLite load (rusqlite, bundled SQLite): WAL, synchronous=FULL;
//! transactions that each insert a batch of rows into a table with an index
//! on a random key and update one earlier row, then range selects over that
//! index. The two phases are timed apart, in seconds (lower is better).
//! Row count and the selects' total are checked afterwards, so a lost
//! commit or a short answer fails the run instead of timing less work.

use super::metrics::{Metric, Outcome};
use super::Sizes;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rusqlite::{params, Connection};
use std::path::Path;
use std::time::Instant;

/// Keys are drawn from 0..KEY_SPACE; a range select spans RANGE_WIDTH keys.
const KEY_SPACE: i64 = 1_000_000;
const RANGE_WIDTH: i64 = 2_000;
/// Bytes of payload per row.
const ROW_BYTES: usize = 100;

pub fn run(dir: &Path, sizes: &Sizes, seed: u64) -> Result<Outcome, String> {
    let path = dir.join("mixed.db");
    let sql = |e: rusqlite::Error| format!("{}: {e}", path.display());
    let conn = Connection::open(&path).map_err(sql)?;
    let granted: String = conn.query_row("PRAGMA journal_mode=wal", [], |r| r.get(0)).map_err(sql)?;
    if !granted.eq_ignore_ascii_case("wal") {
        return Err(format!("SQLite refused journal_mode=wal (it kept {granted})"));
    }
    conn.execute_batch(
        "PRAGMA synchronous=FULL;
         CREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER NOT NULL, v BLOB NOT NULL, hits INTEGER NOT NULL DEFAULT 0);
         CREATE INDEX t_k ON t(k);",
    )
    .map_err(sql)?;
    let mut rng = StdRng::seed_from_u64(seed);

    let start = Instant::now();
    write_phase(&conn, sizes, &mut rng).map_err(sql)?;
    let write_seconds = start.elapsed().as_secs_f64();

    let start = Instant::now();
    let rows_seen = select_phase(&conn, sizes, &mut rng).map_err(sql)?;
    let select_seconds = start.elapsed().as_secs_f64();

    let rows: u64 = conn.query_row("SELECT count(*) FROM t", [], |r| r.get(0)).map_err(sql)?;
    let expected = sizes.mixed_transactions * sizes.mixed_rows_per_transaction;
    if rows != expected {
        return Err(format!("{expected} rows committed but the table holds {rows}"));
    }
    let updates: u64 = conn.query_row("SELECT sum(hits) FROM t", [], |r| r.get(0)).map_err(sql)?;
    if updates != sizes.mixed_transactions {
        return Err(format!("{} updates committed but the table counts {updates}", sizes.mixed_transactions));
    }
    let mut outcome = Outcome::default();
    outcome.sample(Metric::MixedWriteSeconds, write_seconds);
    outcome.sample(Metric::MixedSelectSeconds, select_seconds);
    outcome.extra("transactions", sizes.mixed_transactions);
    outcome.extra("rows_per_transaction", sizes.mixed_rows_per_transaction);
    outcome.extra("selects", sizes.mixed_selects);
    outcome.extra("rows_selected", rows_seen);
    outcome.extra("row_bytes", ROW_BYTES);
    Ok(outcome)
}

/// Each transaction: a batch of inserts, then an update of a row an
/// earlier transaction (or this one) inserted.
fn write_phase(conn: &Connection, sizes: &Sizes, rng: &mut StdRng) -> rusqlite::Result<()> {
    let mut insert = conn.prepare("INSERT INTO t(k, v) VALUES (?1, ?2)")?;
    let mut update = conn.prepare("UPDATE t SET hits = hits + 1, v = ?2 WHERE id = ?1")?;
    let mut payload = [0u8; ROW_BYTES];
    let mut inserted = 0u64;
    for _ in 0..sizes.mixed_transactions {
        conn.execute_batch("BEGIN")?;
        for _ in 0..sizes.mixed_rows_per_transaction {
            rng.fill(&mut payload[..]);
            insert.execute(params![rng.gen_range(0..KEY_SPACE), &payload[..]])?;
        }
        inserted += sizes.mixed_rows_per_transaction;
        let id = rng.gen_range(1..=inserted) as i64;
        rng.fill(&mut payload[..]);
        if update.execute(params![id, &payload[..]])? != 1 {
            return Err(rusqlite::Error::StatementChangedRows(0));
        }
        conn.execute_batch("COMMIT")?;
    }
    Ok(())
}

/// Range selects over the key index; returns the rows they matched.
fn select_phase(conn: &Connection, sizes: &Sizes, rng: &mut StdRng) -> rusqlite::Result<u64> {
    let mut select = conn.prepare("SELECT count(*), coalesce(sum(length(v)), 0) FROM t WHERE k BETWEEN ?1 AND ?2")?;
    let mut rows = 0u64;
    for _ in 0..sizes.mixed_selects {
        let low = rng.gen_range(0..KEY_SPACE - RANGE_WIDTH);
        let (count, bytes): (u64, u64) =
            select.query_row(params![low, low + RANGE_WIDTH], |r| Ok((r.get(0)?, r.get(1)?)))?;
        if bytes != count * ROW_BYTES as u64 {
            return Err(rusqlite::Error::IntegralValueOutOfRange(1, bytes as i64));
        }
        rows += count;
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_phases_are_timed_and_the_work_is_checked() {
        let dir = tempfile::tempdir().unwrap();
        let sizes =
            Sizes { mixed_transactions: 4, mixed_rows_per_transaction: 300, mixed_selects: 50, ..Sizes::quick() };
        let outcome = run(dir.path(), &sizes, 3).unwrap();
        let metrics: Vec<Metric> = outcome.samples.iter().map(|(m, _)| *m).collect();
        assert_eq!(metrics, [Metric::MixedWriteSeconds, Metric::MixedSelectSeconds]);
        assert!(outcome.samples.iter().all(|(_, v)| *v > 0.0 && v.is_finite()));
        // 1,200 keys in a million, 2,000 wide: about 2.4 rows per select.
        let seen = outcome.extras["rows_selected"].as_u64().unwrap();
        assert!(seen > 20 && seen < 500, "{seen}");
        let conn = Connection::open(dir.path().join("mixed.db")).unwrap();
        let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
        assert_eq!(mode, "wal");
    }
}
