//! Finding and calling the daemon that serves a mount point. The socket is
//! looked up from the canonical mount point in the directories a daemon of
//! the mount's owner (from mountinfo) or of the caller would have used
//! (`socket_path::dirs_of`); the first socket a daemon answers on is the
//! one. A socket nobody listens on (a killed daemon's) or one the caller may
//! not reach (another user's directory) is passed over, so neither hides the
//! live daemon.

use crate::protocol::{self, Request, Response};
use crate::{mountinfo, socket_path};
use std::io::{BufReader, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

/// Why no answer came; `NoDaemon` lets `umount` fall back to fusermount3.
#[derive(Debug)]
pub enum CallError {
    NoDaemon(String),
    /// The caller may not reach the socket (another user's directory).
    Denied(String),
    Failed(String),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::NoDaemon(m) | CallError::Denied(m) | CallError::Failed(m) => f.write_str(m),
        }
    }
}

impl From<CallError> for String {
    fn from(e: CallError) -> String {
        e.to_string()
    }
}

/// The mount point as the daemon named it. A dead FUSE mount cannot be
/// stat'ed (ENOTCONN), so then only its parent is resolved.
pub fn canonical_mount_point(path: &Path) -> Result<PathBuf, String> {
    if let Ok(p) = path.canonicalize() {
        return Ok(p);
    }
    let absolute = std::path::absolute(path).map_err(|e| format!("{}: {}", path.display(), e))?;
    let (Some(parent), Some(name)) = (absolute.parent(), absolute.file_name()) else {
        return Err(format!("{}: cannot resolve", path.display()));
    };
    let parent = parent.canonicalize().map_err(|e| format!("{}: {}", parent.display(), e))?;
    Ok(parent.join(name))
}

/// Sends `request` to the daemon serving `mountpoint`; also returns the
/// canonical mount point for messages.
pub fn call(mountpoint: &Path, request: &Request) -> Result<(Response, PathBuf), CallError> {
    let canonical = canonical_mount_point(mountpoint).map_err(CallError::Failed)?;
    let candidates = candidates(&canonical);
    let mut denied = None;
    for socket in &candidates {
        match call_socket(socket, request) {
            // Absent, or left by a daemon that died: look further.
            Err(CallError::NoDaemon(_)) => {}
            Err(CallError::Denied(message)) => {
                denied.get_or_insert(message);
            }
            answered => return answered.map(|response| (response, canonical)),
        }
    }
    if let Some(message) = denied {
        return Err(CallError::Denied(message));
    }
    Err(CallError::NoDaemon(format!(
        "no mcfs daemon serves {} (no live control socket {})",
        canonical.display(),
        candidates.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
    )))
}

fn candidates(canonical: &Path) -> Vec<PathBuf> {
    let owner = mountinfo::mount_at(canonical).filter(|m| m.is_fuse()).and_then(|m| m.fuse_user_id());
    // SAFETY: getuid has no preconditions.
    let me = unsafe { libc::getuid() };
    socket_path::client_candidates(canonical, owner, me)
}

/// Removes socket files for `canonical` that nobody listens on any more
/// (left by a daemon that was killed), so later commands see no daemon at once.
pub fn remove_dead_sockets(canonical: &Path) {
    for socket in candidates(canonical) {
        let refused = UnixStream::connect(&socket).err().and_then(|e| e.raw_os_error()) == Some(libc::ECONNREFUSED);
        if refused {
            let _ = std::fs::remove_file(&socket);
        }
    }
}

/// One request/response exchange on a known socket.
pub fn call_socket(socket: &Path, request: &Request) -> Result<Response, CallError> {
    let stream = UnixStream::connect(socket).map_err(|e| {
        let msg = format!("control socket {}: {} (has the daemon died?)", socket.display(), e);
        match e.raw_os_error() {
            Some(libc::ECONNREFUSED) | Some(libc::ENOENT) => CallError::NoDaemon(msg),
            Some(libc::EACCES | libc::EPERM) => CallError::Denied(format!(
                "control socket {}: {} (only root and the user who mounted may control this mount)",
                socket.display(),
                e
            )),
            _ => CallError::Failed(msg),
        }
    })?;
    let failed = |e: std::io::Error| CallError::Failed(format!("control socket {}: {}", socket.display(), e));
    protocol::send(&mut NoSigpipe(&stream), request).map_err(failed)?;
    protocol::receive(&mut BufReader::new(&stream)).map_err(failed)
}

/// Writes to a socket with `MSG_NOSIGNAL`: a daemon that hung up early is an
/// error to report, not a SIGPIPE that silently ends the command (commands
/// run with SIGPIPE's default action; see `output`).
struct NoSigpipe<'a>(&'a UnixStream);

impl Write for NoSigpipe<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // SAFETY: `buf` is valid for `buf.len()` bytes; the fd is the open stream's.
        let sent = unsafe { libc::send(self.0.as_raw_fd(), buf.as_ptr().cast(), buf.len(), libc::MSG_NOSIGNAL) };
        usize::try_from(sent).map_err(|_| std::io::Error::last_os_error())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A daemon's error as the user sees it: prefixed with the mount point
/// unless the daemon's message already starts with it.
pub fn daemon_error(mountpoint: &Path, message: &str) -> String {
    let shown = mountpoint.display().to_string();
    if message.starts_with(&shown) {
        message.to_string()
    } else {
        format!("{shown}: {message}")
    }
}

/// `call` for requests with one good kind of answer, which `accept` takes
/// apart (handing any other answer back); also returns the canonical mount point.
pub fn call_expecting<T>(
    mountpoint: &Path,
    request: &Request,
    accept: impl FnOnce(Response) -> Result<T, Response>,
) -> Result<(T, PathBuf), String> {
    let (response, canonical) = call(mountpoint, request)?;
    match accept(response) {
        Ok(value) => Ok((value, canonical)),
        Err(Response::Error { message }) => Err(daemon_error(&canonical, &message)),
        Err(other) => Err(format!("{}: unexpected answer from the daemon: {other:?}", canonical.display())),
    }
}

/// `call` for requests whose only good answer is `Done`.
pub fn call_expect_done(mountpoint: &Path, request: &Request) -> Result<(), String> {
    let accept = |response| match response {
        Response::Done => Ok(()),
        other => Err(other),
    };
    call_expecting(mountpoint, request, accept).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_mount_point_resolves_through_a_missing_last_component() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().canonicalize().unwrap();
        assert_eq!(canonical_mount_point(dir.path()).unwrap(), real);
        assert_eq!(canonical_mount_point(&dir.path().join("gone")).unwrap(), real.join("gone"));
        assert!(canonical_mount_point(&dir.path().join("a/b")).is_err());
    }

    #[test]
    fn daemon_errors_name_the_mount_point_once() {
        let mp = Path::new("/mnt/m");
        assert_eq!(daemon_error(mp, "no app named \"x\""), "/mnt/m: no app named \"x\"");
        assert_eq!(daemon_error(mp, "/mnt/m: cannot unmount: busy"), "/mnt/m: cannot unmount: busy");
    }

    #[test]
    fn unserved_mount_point_is_no_daemon() {
        let dir = tempfile::tempdir().unwrap();
        match call(dir.path(), &Request::Stats) {
            Err(CallError::NoDaemon(m)) => assert!(m.contains("no mcfs daemon serves"), "{m}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn dead_socket_file_is_no_daemon() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dead.sock");
        drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
        assert!(matches!(call_socket(&path, &Request::Stats), Err(CallError::NoDaemon(_))));
    }

    #[test]
    fn only_dead_sockets_are_removed() {
        // The client looks in /tmp/mcfs-<uid>; use a mount point name no one else uses.
        let me = unsafe { libc::getuid() };
        let dir = PathBuf::from(format!("/tmp/mcfs-{me}"));
        socket_path::ensure_private_dir(&dir, me).unwrap();
        let scratch = tempfile::tempdir().unwrap();
        let (dead_mp, live_mp) = (scratch.path().join("dead"), scratch.path().join("live"));
        let dead = socket_path::socket_file(&dir, &dead_mp);
        let live = socket_path::socket_file(&dir, &live_mp);
        drop(std::os::unix::net::UnixListener::bind(&dead).unwrap());
        let _listener = std::os::unix::net::UnixListener::bind(&live).unwrap();
        remove_dead_sockets(&dead_mp);
        remove_dead_sockets(&live_mp);
        assert!(!dead.exists());
        assert!(live.exists());
        std::fs::remove_file(&live).unwrap();
    }
}
