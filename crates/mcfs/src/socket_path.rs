//! Where the control socket of the daemon serving a mount point lives.
//!
//! The name is derived from the canonical mount point alone, so a client that
//! knows only MOUNTPOINT finds the socket: `<dir>/<escaped mount point>.sock`.
//! `<dir>` depends on the daemon's uid alone (`dirs_of`), never on its
//! environment, so a client of any user who knows the mount's owner (from
//! mountinfo) looks in the right place: root's daemons use /run/mcfs, another
//! user's /run/user/<uid>/mcfs when that user has a runtime directory, else
//! /tmp/mcfs-<uid>. It must be a real directory owned by the daemon's user
//! with mode 0700, so no other user can plant or reach a socket there.

use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Longest socket path `sockaddr_un` holds (108 bytes with the final NUL).
const MAX_SOCKET_PATH: usize = 107;

/// Escapes a canonical path into one file name, reversibly: `/` becomes `-`,
/// letters, digits and `.` stay (except a leading `.`), every other byte is
/// `_xx` in hex. `/` alone becomes `-`.
pub fn escape_mount_point(path: &Path) -> String {
    let bytes = path.as_os_str().as_bytes();
    let trimmed = bytes.strip_prefix(b"/").unwrap_or(bytes);
    if trimmed.is_empty() {
        return "-".to_string();
    }
    let mut out = String::with_capacity(trimmed.len());
    for (i, &b) in trimmed.iter().enumerate() {
        match b {
            b'/' => out.push('-'),
            b'.' if i > 0 => out.push('.'),
            b if b.is_ascii_alphanumeric() => out.push(b as char),
            b => out.push_str(&format!("_{b:02x}")),
        }
    }
    out
}

/// The socket file name inside `dir`; names too long for `sockaddr_un` keep
/// their head and gain a hash of the whole path, so they stay unique.
pub fn socket_file(dir: &Path, mount_point: &Path) -> PathBuf {
    let escaped = escape_mount_point(mount_point);
    let full = dir.join(format!("{escaped}.sock"));
    if full.as_os_str().len() <= MAX_SOCKET_PATH {
        return full;
    }
    let hash = format!("{:016x}", fnv1a(mount_point.as_os_str().as_bytes()));
    // dir + '/' + head + '~' + hash + ".sock"
    let room = MAX_SOCKET_PATH.saturating_sub(dir.as_os_str().len() + 1 + 1 + hash.len() + 5);
    let head: String = escaped.chars().take(room).collect();
    dir.join(format!("{head}~{hash}.sock"))
}

/// FNV-1a: stable across builds, unlike std's hasher.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

/// Directories a daemon running as `uid` uses, in order of preference: it
/// takes the first it can make private (`daemon_socket`), a client tries
/// them all. A user's runtime directory is preferred only when it is theirs
/// (logind makes it at login, and may remove it at logout: a client also
/// looks in /tmp/mcfs-<uid>, where a daemon started without one went).
pub fn dirs_of(uid: u32) -> Vec<PathBuf> {
    if uid == 0 {
        return vec![PathBuf::from("/run/mcfs"), PathBuf::from("/tmp/mcfs-0")];
    }
    let runtime = PathBuf::from(format!("/run/user/{uid}"));
    let tmp = PathBuf::from(format!("/tmp/mcfs-{uid}"));
    match std::fs::symlink_metadata(&runtime) {
        Ok(meta) if meta.is_dir() && meta.uid() == uid => vec![runtime.join("mcfs"), tmp],
        _ => vec![tmp, runtime.join("mcfs")],
    }
}

fn dedup(paths: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for p in paths {
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// Picks the daemon's socket path, creating its private directory.
/// The error lists why each candidate was refused.
pub fn daemon_socket(mount_point: &Path, uid: u32) -> Result<PathBuf, String> {
    let mut refusals = Vec::new();
    for dir in dirs_of(uid) {
        match ensure_private_dir(&dir, uid) {
            Ok(()) => return Ok(socket_file(&dir, mount_point)),
            Err(e) => refusals.push(format!("{}: {}", dir.display(), e)),
        }
    }
    Err(format!("no usable directory for the control socket ({})", refusals.join("; ")))
}

/// Socket paths a client should try for `mount_point`, for a daemon run by
/// `owner` (from mountinfo) first, then by the client's own user.
pub fn client_candidates(mount_point: &Path, owner: Option<u32>, me: u32) -> Vec<PathBuf> {
    let dirs = owner.into_iter().chain(std::iter::once(me)).flat_map(dirs_of).collect();
    dedup(dirs).iter().map(|d| socket_file(d, mount_point)).collect()
}

/// Creates `dir` (mode 0700) if absent and checks it is a directory, not a
/// symlink, owned by `uid` and closed to everyone else.
pub fn ensure_private_dir(dir: &Path, uid: u32) -> io::Result<()> {
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = std::fs::symlink_metadata(dir)?;
    if !meta.is_dir() {
        return Err(io::Error::other("exists and is not a directory"));
    }
    if meta.uid() != uid {
        return Err(io::Error::new(io::ErrorKind::PermissionDenied, format!("owned by uid {}, not {uid}", meta.uid())));
    }
    if meta.mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    // Probe writability: an existing 0700 dir of ours may still sit on a read-only fs.
    let probe = dir.join(format!(".probe-{}", std::process::id()));
    std::fs::File::create(&probe)?;
    std::fs::remove_file(&probe)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_is_injective_on_tricky_names() {
        let cases =
            ["/", "/mnt/a", "/mnt-a", "/mnt/a-b", "/mnt/a_2db", "/mnt/a b", "/mnt/.hidden", "/mnt/x.y", "/mnt/é"];
        let escaped: Vec<String> = cases.iter().map(|c| escape_mount_point(Path::new(c))).collect();
        assert_eq!(escaped[0], "-");
        assert_eq!(escaped[1], "mnt-a");
        assert_eq!(escaped[2], "mnt_2da");
        assert_eq!(escaped[5], "mnt-a_20b");
        assert_eq!(escaped[6], "mnt-.hidden");
        assert_eq!(escaped[7], "mnt-x.y");
        for (i, a) in escaped.iter().enumerate() {
            assert!(!a.contains('/'), "{a}");
            for b in &escaped[i + 1..] {
                assert_ne!(a, b);
            }
        }
    }

    #[test]
    fn leading_dot_cannot_make_hidden_or_dot_dot_names() {
        assert_eq!(escape_mount_point(Path::new("/..")), "_2e.");
        assert_eq!(escape_mount_point(Path::new("/.x")), "_2ex");
    }

    #[test]
    fn long_paths_fit_sockaddr_and_stay_distinct() {
        let dir = Path::new("/run/mcfs");
        let long_a = PathBuf::from(format!("/{}", "a".repeat(300)));
        let long_b = PathBuf::from(format!("/{}b", "a".repeat(299)));
        let (sa, sb) = (socket_file(dir, &long_a), socket_file(dir, &long_b));
        assert!(sa.as_os_str().len() <= MAX_SOCKET_PATH, "{}", sa.display());
        assert!(sb.as_os_str().len() <= MAX_SOCKET_PATH);
        assert_ne!(sa, sb);
        assert!(sa.starts_with(dir));
        assert_eq!(socket_file(dir, Path::new("/mnt/x")), PathBuf::from("/run/mcfs/mnt-x.sock"));
    }

    #[test]
    fn each_uid_has_its_own_dirs_whatever_the_environment() {
        assert_eq!(dirs_of(0), [PathBuf::from("/run/mcfs"), PathBuf::from("/tmp/mcfs-0")]);
        // No runtime directory for this uid: /tmp first.
        let uid = 4_000_123;
        assert_eq!(dirs_of(uid), [PathBuf::from("/tmp/mcfs-4000123"), PathBuf::from("/run/user/4000123/mcfs")]);
        for other in [1000, 65534] {
            assert!(dirs_of(other).iter().all(|d| !d.starts_with("/run/mcfs")), "root's dir is root's only");
        }
    }

    #[test]
    fn client_tries_the_owners_dirs_first_without_duplicates() {
        let c = client_candidates(Path::new("/m"), Some(4_000_123), 0);
        assert_eq!(c[0], PathBuf::from("/tmp/mcfs-4000123/m.sock"));
        let pos = |p: &str| c.iter().position(|x| x == Path::new(p)).unwrap();
        assert!(pos("/run/user/4000123/mcfs/m.sock") < pos("/run/mcfs/m.sock"));
        assert!(pos("/run/mcfs/m.sock") < pos("/tmp/mcfs-0/m.sock"));
        assert_eq!(c.len(), 4);
        assert_eq!(client_candidates(Path::new("/m"), Some(0), 0).len(), 2, "no duplicates");
    }

    #[test]
    fn private_dir_is_created_0700_and_foreign_owner_refused() {
        let base = tempfile::tempdir().unwrap();
        let dir = base.path().join("sock");
        let me = unsafe { libc::getuid() };
        ensure_private_dir(&dir, me).unwrap();
        assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        ensure_private_dir(&dir, me).unwrap();
        assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o777, 0o700, "loose mode is tightened");
        let err = ensure_private_dir(&dir, me + 1).unwrap_err();
        assert!(err.to_string().contains("owned by"), "{err}");
        let file = base.path().join("file");
        std::fs::write(&file, b"").unwrap();
        assert!(ensure_private_dir(&file, me).is_err());
        let link = base.path().join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        assert!(ensure_private_dir(&link, me).is_err(), "a symlink is refused");
    }
}
