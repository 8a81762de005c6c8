//! Everything `mcfs mount` checks before it forks, so that a bad argument is
//! reported on the user's terminal with a non-zero exit instead of dying in
//! a detached daemon. Checks without side effects come first; only once all
//! pass is BACKING/.mcfs created and the backing directory locked.

use crate::backing_lock::BackingLock;
use crate::config_override::{self, Override};
use crate::state_dir::StateDir;
use crate::{config_file, mountinfo};
use mcfs_core::{Config, DirBackend};
use mcfs_device::DeviceProfile;
use std::io;
use std::path::{Path, PathBuf};

/// What a daemon needs to start, all of it checked.
#[derive(Debug)]
pub struct MountPlan {
    /// Canonical paths: the daemon chdirs to / and must not depend on the cwd.
    pub backing: PathBuf,
    pub mountpoint: PathBuf,
    pub config: Config,
    /// BACKING/.mcfs, opened and checked; the log is opened in it.
    pub state: StateDir,
    pub lock: BackingLock,
    /// Run on a virtual clock moved by `mcfs ctl advance` (`--virtual-clock`).
    pub virtual_clock: bool,
    /// The device the backing I/O is estimated on (`--device-profile`).
    pub device: DeviceProfile,
    /// Where the daemon keeps its metrics in the Prometheus text format (`metrics_file`).
    pub metrics_file: Option<PathBuf>,
}

/// `overrides` are the config keys given as mount options (`-o KEY=VALUE`).
pub fn check(
    backing: &Path,
    mountpoint: &Path,
    config: Option<&Path>,
    overrides: &[Override],
) -> Result<MountPlan, String> {
    let backing = existing_dir("backing directory", backing)?;
    let mountpoint = existing_dir("mount point", mountpoint)?;
    if mountinfo::is_mount_point(&mountpoint) {
        return Err(format!("mount point {}: is already a mount point", mountpoint.display()));
    }
    check_not_nested(&backing, &mountpoint)?;
    let config = config_override::apply(config_file::load(config)?, overrides)?;
    let (state, lock) = prepare_state_dir(&backing)?;
    let device = DeviceProfile::builtin("emmc").ok_or("the built-in emmc device profile is missing")?;
    Ok(MountPlan { backing, mountpoint, config, state, lock, virtual_clock: false, device, metrics_file: None })
}

/// Canonical path of a directory that must exist. `role` says which argument it is.
pub fn existing_dir(role: &str, path: &Path) -> Result<PathBuf, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("{role} {}: {}", path.display(), describe(&e)))?;
    if !meta.is_dir() {
        return Err(format!("{role} {}: is not a directory", path.display()));
    }
    path.canonicalize().map_err(|e| format!("{role} {}: {}", path.display(), describe(&e)))
}

fn describe(e: &io::Error) -> String {
    if e.raw_os_error() == Some(libc::ENOTCONN) {
        return format!("{e} (a crashed FUSE mount? `mcfs umount` it first)");
    }
    e.to_string()
}

/// A daemon reads its backing store by path: serving it through its own
/// mount would deadlock, and hiding it under the mount would hide it.
pub fn check_not_nested(backing: &Path, mountpoint: &Path) -> Result<(), String> {
    if mountpoint.starts_with(backing) {
        return Err(format!(
            "mount point {} is inside the backing directory {}",
            mountpoint.display(),
            backing.display()
        ));
    }
    if backing.starts_with(mountpoint) {
        return Err(format!(
            "backing directory {} is inside the mount point {}",
            backing.display(),
            mountpoint.display()
        ));
    }
    Ok(())
}

/// The engine's view of the backing directory (used by the daemon and by
/// `recover`); the backend's errors already name the path and the cause.
pub fn open_backend(backing: &Path) -> Result<DirBackend, String> {
    DirBackend::new(backing).map_err(|e| e.to_string())
}

/// Creates BACKING/.mcfs (the writability test), checks it (`StateDir`) and
/// takes the backing lock.
pub fn prepare_state_dir(backing: &Path) -> Result<(StateDir, BackingLock), String> {
    let state = StateDir::open(backing, true)?;
    let lock = BackingLock::acquire(backing, &state)?;
    Ok((state, lock))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Dirs {
        _root: tempfile::TempDir,
        backing: PathBuf,
        mnt: PathBuf,
    }

    fn dirs() -> Dirs {
        let root = tempfile::tempdir().unwrap();
        let backing = root.path().join("backing");
        let mnt = root.path().join("mnt");
        std::fs::create_dir(&backing).unwrap();
        std::fs::create_dir(&mnt).unwrap();
        Dirs { _root: root, backing, mnt }
    }

    #[test]
    fn good_inputs_give_a_plan_with_canonical_paths_and_a_state_dir() {
        let d = dirs();
        let plan = check(&d.backing.join("."), &d.mnt, None, &[]).unwrap();
        assert_eq!(plan.backing, d.backing.canonicalize().unwrap());
        assert!(plan.backing.join(".mcfs").is_dir());
        assert_eq!(plan.config, Config::default());
        drop(plan);
        let mode = Override { key: "mode".into(), value: "sync".into() };
        let plan = check(&d.backing, &d.mnt, None, &[mode]).unwrap();
        assert_eq!(plan.config.mode, mcfs_core::SyncMode::Sync);
        let err = check(&d.backing, &d.mnt, None, &[]).unwrap_err();
        assert!(err.contains("in use by a running mcfs daemon"), "the plan holds the lock: {err}");
    }

    #[test]
    fn each_bad_input_is_named() {
        let d = dirs();
        let missing = d.backing.join("nope");
        let err = check(&missing, &d.mnt, None, &[]).unwrap_err();
        assert!(err.starts_with(&format!("backing directory {}:", missing.display())), "{err}");
        assert!(err.contains("No such file"), "{err}");

        let file = d.backing.join("f");
        std::fs::write(&file, b"x").unwrap();
        let err = check(&d.backing, &file, None, &[]).unwrap_err();
        assert_eq!(err, format!("mount point {}: is not a directory", file.display()));

        let err = check(&d.backing, Path::new("/proc"), None, &[]).unwrap_err();
        assert!(err.contains("already a mount point"), "{err}");

        let err = check(&d.backing, &d.mnt, Some(&d.mnt), &[]).unwrap_err();
        assert!(err.starts_with(&format!("{}: ", d.mnt.display())), "{err}");

        let small = Override { key: "cache_size".into(), value: "1K".into() };
        let err = check(&d.backing, &d.mnt, None, &[small]).unwrap_err();
        assert!(err.starts_with("option cache_size=1K: cache_size must be in "), "{err}");
        assert!(!d.backing.join(".mcfs").exists(), "no side effects before every check passed");
    }

    #[test]
    fn nesting_either_way_is_refused() {
        let d = dirs();
        let inner = d.backing.join("sub");
        std::fs::create_dir(&inner).unwrap();
        let err = check(&d.backing, &inner, None, &[]).unwrap_err();
        assert!(err.contains("inside the backing directory"), "{err}");
        let err = check(&inner, &d.backing, None, &[]).unwrap_err();
        assert!(err.contains("inside the mount point"), "{err}");
        let err = check(&d.backing, &d.backing, None, &[]).unwrap_err();
        assert!(err.contains("inside"), "{err}");
    }

    #[test]
    fn state_dir_that_is_a_file_is_reported() {
        let d = dirs();
        std::fs::write(d.backing.join(".mcfs"), b"").unwrap();
        let err = check(&d.backing, &d.mnt, None, &[]).unwrap_err();
        assert!(err.ends_with(".mcfs: is not a directory (mcfs keeps its state there)"), "{err}");
    }
}
