//! `mcfs bench --device-profile PROFILE`: every target's device on emulated phone
//! flash. A `mcfs flashdev` mount (FIFO device scheduler: no FastTrack) is
//! started in the scratch directory and the targets' scratch space — the
//! ext4 images under ext4 and under mcfs's backing directory — lives inside
//! it, so ext4 and mcfs meet the same emulated eMMC or UFS.
//!
//! Invariant: the emulator outlives every target (they are torn down inside
//! each cell) and is unmounted when `EmulatedFlash` drops.

use super::cmd;
use std::fs;
use std::path::{Path, PathBuf};

pub struct EmulatedFlash {
    /// Where the targets put their scratch files.
    pub mountpoint: PathBuf,
    mounted: bool,
}

impl EmulatedFlash {
    /// Mounts `mcfs flashdev --device-profile PROFILE` over `scratch/flash-backing` at `scratch/flash`.
    pub fn start(mcfs_bin: &Path, profile: &str, scratch: &Path) -> Result<EmulatedFlash, String> {
        let backing = scratch.join("flash-backing");
        let mountpoint = scratch.join("flash");
        for dir in [&backing, &mountpoint] {
            fs::create_dir(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        let log = scratch.join("flashdev.log");
        cmd::run(
            mcfs_bin,
            [
                "flashdev".as_ref(),
                "--device-profile".as_ref(),
                profile.as_ref(),
                "--scheduler".as_ref(),
                "fifo".as_ref(),
                "--log".as_ref(),
                log.as_os_str(),
                backing.as_os_str(),
                mountpoint.as_os_str(),
            ],
        )
        .map_err(|e| format!("cannot start the flash emulator: {e} (log: {})", log.display()))?;
        Ok(EmulatedFlash { mountpoint, mounted: true })
    }
}

impl Drop for EmulatedFlash {
    fn drop(&mut self) {
        if self.mounted {
            self.mounted = false;
            if let Err(e) = cmd::run("fusermount3", ["-u".as_ref(), self.mountpoint.as_os_str()]) {
                eprintln!("mcfs bench: cleanup of the flash emulator: {e}");
            }
        }
    }
}
