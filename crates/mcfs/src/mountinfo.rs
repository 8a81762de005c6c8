//! Reads /proc/self/mountinfo: whether a path is a mount point, and who
//! mounted a FUSE file system there (the `user_id=` super option), which the
//! client needs to find a daemon started by another user.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq)]
pub struct MountEntry {
    pub mount_point: PathBuf,
    pub fs_type: String,
    pub source: String,
    pub super_options: String,
}

impl MountEntry {
    /// The uid a FUSE mount was made by, if the kernel reports it.
    pub fn fuse_user_id(&self) -> Option<u32> {
        self.super_options.split(',').find_map(|o| o.strip_prefix("user_id=")?.parse().ok())
    }

    pub fn is_fuse(&self) -> bool {
        self.fs_type == "fuse" || self.fs_type.starts_with("fuse.")
    }
}

/// The topmost mount whose mount point is exactly `path` (already canonical).
pub fn mount_at(path: &Path) -> Option<MountEntry> {
    let text = std::fs::read("/proc/self/mountinfo").ok()?;
    parse(&text).into_iter().rev().find(|m| m.mount_point == path)
}

/// Parses mountinfo text; malformed lines are skipped.
pub fn parse(text: &[u8]) -> Vec<MountEntry> {
    text.split(|&b| b == b'\n').filter_map(parse_line).collect()
}

// Format (proc(5)): id parent maj:min root MOUNT_POINT opts [optional...] - FSTYPE SOURCE SUPER_OPTS
fn parse_line(line: &[u8]) -> Option<MountEntry> {
    let fields: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
    let mount_point = *fields.get(4)?;
    let sep = fields.iter().position(|f| *f == b"-")?;
    let text = |i: usize| fields.get(i).map(|f| String::from_utf8_lossy(&unescape(f)).into_owned());
    Some(MountEntry {
        mount_point: PathBuf::from(OsString::from_vec(unescape(mount_point))),
        fs_type: text(sep + 1)?,
        source: text(sep + 2)?,
        super_options: text(sep + 3).unwrap_or_default(),
    })
}

/// Undoes the kernel's octal escapes (`\040` for space, `\134` for backslash...).
fn unescape(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        let octal =
            field.get(i + 1..i + 4).filter(|d| field[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match octal {
            Some(d) => {
                out.push(d.iter().fold(0u8, |acc, c| acc.wrapping_mul(8).wrapping_add(c - b'0')));
                i += 4;
            }
            None => {
                out.push(field[i]);
                i += 1;
            }
        }
    }
    out
}

/// True if `path` (canonical) is the mount point of some mount.
pub fn is_mount_point(path: &Path) -> bool {
    mount_at(path).is_some() || path.as_os_str().as_bytes() == b"/"
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &[u8] = b"22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n\
        40 22 0:35 / /mnt/my\\040disk rw,nosuid,nodev,relatime shared:7 - fuse.mcfs /srv/back rw,user_id=1000,group_id=1000,allow_other\n\
        garbage line\n\
        41 22 0:36 / /proc rw - proc proc rw\n";

    #[test]
    fn parses_fields_and_escapes() {
        let mounts = parse(SAMPLE);
        assert_eq!(mounts.len(), 3);
        let fuse = &mounts[1];
        assert_eq!(fuse.mount_point, PathBuf::from("/mnt/my disk"));
        assert_eq!(fuse.fs_type, "fuse.mcfs");
        assert_eq!(fuse.source, "/srv/back");
        assert!(fuse.is_fuse());
        assert_eq!(fuse.fuse_user_id(), Some(1000));
        assert_eq!(mounts[2].fuse_user_id(), None);
        assert!(!mounts[2].is_fuse());
    }

    #[test]
    fn unescape_handles_backslash_and_truncated_escapes() {
        assert_eq!(unescape(b"a\\134b"), b"a\\b");
        assert_eq!(unescape(b"tab\\011"), b"tab\t");
        assert_eq!(unescape(b"end\\04"), b"end\\04");
        assert_eq!(unescape(b"\\x41"), b"\\x41");
    }

    #[test]
    fn proc_is_a_mount_point_and_a_fresh_dir_is_not() {
        assert!(is_mount_point(Path::new("/proc")));
        assert!(is_mount_point(Path::new("/")));
        let dir = tempfile::tempdir().unwrap();
        assert!(!is_mount_point(&dir.path().canonicalize().unwrap()));
    }
}
