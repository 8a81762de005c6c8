//! The MobiFS in-house benchmark: one region of a file written 16 times,
//! with an fsync after every second write, and the bytes the backing block
//! device actually wrote for it. The counter is read after `Target::settle`
//! (mcfs: unmount, whose final checkpoint writes everything; then syncfs of
//! the device's ext4), so data still held in memory cannot be missed.

use super::metrics::{Metric, Outcome};
use super::targets::Target;
use super::Sizes;
use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;

const WRITES: u32 = 16;
const WRITES_PER_FSYNC: u32 = 2;

pub fn run(target: &mut Target, sizes: &Sizes) -> Result<Outcome, String> {
    // Set-up writes (mkfs leftovers, mcfs's state directory) are not ours.
    target.sync_device_fs()?;
    let before = target.device_bytes_written()?;
    let path = target.dir.join("mobifs.dat");
    let io = |what: &str, e: std::io::Error| format!("{what} {}: {e}", path.display());
    let file =
        OpenOptions::new().create(true).truncate(true).read(true).write(true).open(&path).map_err(|e| io("open", e))?;
    let mut region = vec![0u8; sizes.mobifs_region_bytes as usize];
    for write in 1..=WRITES {
        // New contents each time, as an app rewriting its state would.
        region.fill(write as u8);
        file.write_all_at(&region, 0).map_err(|e| io("write", e))?;
        if write % WRITES_PER_FSYNC == 0 {
            file.sync_all().map_err(|e| io("fsync", e))?;
        }
    }
    drop(file);
    let mut outcome = Outcome::default();
    if target.kind.is_mcfs() {
        outcome.extra("mcfs_stats", target.mcfs_stats()?);
    }
    target.settle()?;
    let after = target.device_bytes_written()?;
    outcome.sample(Metric::MobifsDeviceBytes, after.saturating_sub(before) as f64);
    outcome.extra("region_bytes", sizes.mobifs_region_bytes);
    outcome.extra("app_bytes_written", sizes.mobifs_region_bytes * u64::from(WRITES));
    outcome.extra("fsyncs", WRITES / WRITES_PER_FSYNC);
    Ok(outcome)
}
