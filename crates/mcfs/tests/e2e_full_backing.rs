//! A small, full backing store (issue 10, item 2): mcfs over a 32 MiB
//! loop-mounted ext4. A 20 MiB file — more than half the free space, so its
//! journal copy and its applied copy never both fit — is stored and
//! committed as ext4 itself would store it; a 48 MiB file that can never be
//! stored is refused with ENOSPC at write time (dd fails, as on ext4), not
//! accepted in memory and then failing every checkpoint; afterwards another
//! file still commits, `statfs` is net of what mcfs holds, removing a file
//! makes room for the next writer, the mount unmounts, and the backing
//! image is a clean ext4 holding the data.

mod common;

use common::{ctl, Daemon, Dirs};
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::Command;

const MIB: u64 = 1 << 20;

fn run(what: &str, cmd: &mut Command) -> std::process::Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e} (install e2fsprogs / util-linux / coreutils)"));
    assert!(out.status.success(), "{what} failed: {}", String::from_utf8_lossy(&out.stderr));
    out
}

/// A 32 MiB ext4 image loop-mounted at `at`; unmounted when dropped.
struct Ext4 {
    mount: PathBuf,
}

impl Ext4 {
    fn at(image: &Path, mount: &Path) -> Ext4 {
        File::create(image).expect("create the image").set_len(32 * MIB).expect("size the image");
        run("mkfs.ext4", Command::new("mkfs.ext4").args(["-q", "-F"]).arg(image));
        run("mount -o loop", Command::new("mount").args(["-o", "loop"]).arg(image).arg(mount));
        Ext4 { mount: mount.to_owned() }
    }
}

impl Drop for Ext4 {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.mount).status();
    }
}

/// `dd if=/dev/urandom of=PATH bs=1M count=N`: whether dd succeeded, and its stderr.
fn dd(path: &Path, mib: u64) -> (bool, String) {
    let out = Command::new("dd")
        .arg("if=/dev/urandom")
        .arg(format!("of={}", path.display()))
        .args(["bs=1M", &format!("count={mib}"), "status=none"])
        .output()
        .expect("run dd");
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn free_bytes(path: &Path) -> u64 {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: statvfs is plain data; `c` is NUL-terminated and outlives the call.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::statvfs(c.as_ptr(), &mut st) }, 0, "statvfs {}", path.display());
    st.f_bavail * st.f_frsize
}

#[test]
fn a_small_full_backing_store_neither_loses_data_nor_wedges() {
    common::require_root("it loop-mounts an ext4 image");
    let dirs = Dirs::new(None);
    let image = dirs.logs.join("backing.img");
    let ext4 = Ext4::at(&image, &dirs.backing);
    let daemon = Daemon::foreground(&dirs, &[]);

    let (ok, err) = dd(&dirs.mnt.join("big"), 20);
    assert!(ok, "a 20 MiB file fits in a 32 MiB ext4 and must be accepted: {err}");
    let big = fs::read(dirs.mnt.join("big")).expect("read big");
    ctl(&dirs, &["checkpoint"]);
    assert_eq!(fs::read(dirs.backing.join("big")).expect("big in the backing store"), big);

    let (ok, err) = dd(&dirs.mnt.join("huge"), 48);
    assert!(
        !ok && err.contains("No space left on device"),
        "48 MiB cannot be stored: dd must fail with ENOSPC, said {err:?}"
    );
    let accepted = fs::metadata(dirs.mnt.join("huge")).expect("stat huge").len();
    let (through_mcfs, in_backing) = (free_bytes(&dirs.mnt), free_bytes(&dirs.backing));
    assert!(through_mcfs <= in_backing, "statfs through mcfs ({through_mcfs}) is net of what mcfs holds");

    // Nothing is wedged: what was accepted, and a new small file, commit.
    fs::write(dirs.mnt.join("note"), b"still works").expect("write a small file after ENOSPC");
    ctl(&dirs, &["checkpoint"]);
    assert_eq!(fs::metadata(dirs.backing.join("huge")).expect("huge in the backing store").len(), accepted);
    // Removing a file gives its space to the next writer, before any checkpoint.
    fs::remove_file(dirs.mnt.join("big")).expect("rm big");
    let (ok, err) = dd(&dirs.mnt.join("again"), 16);
    assert!(ok, "the space of the removed 20 MiB file is there for the next writer: {err}");
    daemon.unmount();

    assert!(!dirs.backing.join("big").exists());
    assert_eq!(fs::read(dirs.backing.join("note")).expect("note"), b"still works");
    assert_eq!(fs::metadata(dirs.backing.join("again")).expect("again").len(), 16 * MIB);
    drop(ext4);
    let fsck = Command::new("e2fsck").args(["-f", "-n"]).arg(&image).output().expect("run e2fsck");
    assert!(fsck.status.success(), "e2fsck: {}", String::from_utf8_lossy(&fsck.stdout));
}
