//! The daemon's control socket server. One thread accepts; each connection
//! gets a short-lived thread that checks the peer (SO_PEERCRED: root or the
//! user who mounted), reads one request line, answers one response line.
//! The socket file is 0600 in a 0700 directory (see `socket_path`); the peer
//! check is the second lock on the same door.

use crate::protocol::{self, Request, Response};
use std::io::{self, BufReader};
use std::os::fd::AsRawFd;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// A client that sends nothing is dropped after this long.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

pub type Handler = dyn Fn(Request) -> Response + Send + Sync;

pub struct ControlServer {
    path: PathBuf,
    in_flight: Arc<InFlight>,
}

/// Connections being served, so the daemon can let an answer (say, to
/// `unmount`) reach its client before the process exits.
#[derive(Default)]
struct InFlight {
    count: Mutex<usize>,
    idle: Condvar,
}

struct InFlightGuard(Arc<InFlight>);

impl InFlight {
    fn enter(self: &Arc<Self>) -> InFlightGuard {
        *self.count.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        InFlightGuard(self.clone())
    }
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        let mut count = self.0.count.lock().unwrap_or_else(|p| p.into_inner());
        *count -= 1;
        if *count == 0 {
            self.0.idle.notify_all();
        }
    }
}

impl ControlServer {
    /// Binds `path`, replacing a stale socket file but never a live daemon's.
    pub fn bind(path: &Path) -> Result<(ControlServer, UnixListener), String> {
        let fail = |e: io::Error| format!("control socket {}: {}", path.display(), e);
        if path.exists() {
            if UnixStream::connect(path).is_ok() {
                return Err(format!("control socket {}: another mcfs daemon is listening on it", path.display()));
            }
            std::fs::remove_file(path).map_err(fail)?;
        }
        let listener = UnixListener::bind(path).map_err(fail)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(fail)?;
        Ok((ControlServer { path: path.to_path_buf(), in_flight: Arc::default() }, listener))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Serves on a background thread; `owner` is the uid allowed besides root.
    pub fn spawn(&self, listener: UnixListener, owner: u32, handler: Arc<Handler>) -> io::Result<()> {
        let in_flight = self.in_flight.clone();
        std::thread::Builder::new().name("mcfs-control".into()).spawn(move || {
            for conn in listener.incoming() {
                match conn {
                    Ok(stream) => {
                        let handler = handler.clone();
                        let guard = in_flight.enter();
                        let spawned = std::thread::Builder::new().name("mcfs-control-conn".into()).spawn(move || {
                            serve_connection(stream, owner, &*handler);
                            drop(guard);
                        });
                        if let Err(e) = spawned {
                            tracing::warn!("control: cannot start a connection thread: {e}");
                        }
                    }
                    Err(e) => tracing::warn!("control: accept failed: {e}"),
                }
            }
        })?;
        Ok(())
    }

    /// Removes the socket file so clients stop finding a daemon that is
    /// leaving, then waits (at most `wait`) for answers still being sent.
    pub fn close(&self, wait: Duration) {
        self.remove_socket_file();
        let count = self.in_flight.count.lock().unwrap_or_else(|p| p.into_inner());
        let (count, _) =
            self.in_flight.idle.wait_timeout_while(count, wait, |c| *c > 0).unwrap_or_else(|p| p.into_inner());
        if *count > 0 {
            tracing::warn!("control: leaving with {} request(s) unanswered", *count);
        }
    }

    fn remove_socket_file(&self) {
        match std::fs::remove_file(&self.path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!("control socket {}: cannot remove: {e}", self.path.display()),
        }
    }
}

/// A daemon that fails to start leaves no socket behind for clients to trip on.
impl Drop for ControlServer {
    fn drop(&mut self) {
        self.remove_socket_file();
    }
}

fn serve_connection(stream: UnixStream, owner: u32, handler: &Handler) {
    let peer = match peer_uid(&stream) {
        Ok(uid) => uid,
        Err(e) => return tracing::warn!("control: cannot identify peer: {e}"),
    };
    let mut writer = match stream.try_clone() {
        Ok(w) => w,
        Err(e) => return tracing::warn!("control: {e}"),
    };
    let response = if !peer_allowed(peer, owner) {
        tracing::warn!("control: refused uid {peer} (only root and uid {owner} may control this mount)");
        Response::Error { message: format!("permission denied: uid {peer} may not control this mount") }
    } else {
        let _ = stream.set_read_timeout(Some(REQUEST_TIMEOUT));
        match protocol::receive::<Request>(&mut BufReader::new(&stream)) {
            Ok(request) => {
                tracing::debug!("control: uid {peer}: {request:?}");
                handler(request)
            }
            Err(e) => Response::Error { message: format!("bad request: {e}") },
        }
    };
    let _ = writer.set_write_timeout(Some(REQUEST_TIMEOUT));
    if let Err(e) = protocol::send(&mut writer, &response) {
        tracing::debug!("control: cannot answer uid {peer}: {e}");
    }
}

pub fn peer_allowed(peer: u32, owner: u32) -> bool {
    peer == 0 || peer == owner
}

fn peer_uid(stream: &UnixStream) -> io::Result<u32> {
    let mut cred = libc::ucred { pid: 0, uid: 0, gid: 0 };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are valid for getsockopt to write a ucred into.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            &mut cred as *mut libc::ucred as *mut libc::c_void,
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(cred.uid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control_client;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn only_root_and_the_owner_are_allowed() {
        assert!(peer_allowed(0, 1000));
        assert!(peer_allowed(1000, 1000));
        assert!(!peer_allowed(1001, 1000));
        assert!(peer_allowed(0, 0));
        assert!(!peer_allowed(1000, 0));
    }

    #[test]
    fn serves_requests_and_refuses_a_second_daemon() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.sock");
        let (server, listener) = ControlServer::bind(&path).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        let me = unsafe { libc::getuid() };
        let handler: Arc<Handler> = Arc::new(|req| match req {
            Request::Battery { percent } => Response::Error { message: format!("got {percent}") },
            _ => Response::Done,
        });
        server.spawn(listener, me, handler).unwrap();
        assert_eq!(control_client::call_socket(&path, &Request::Checkpoint).unwrap(), Response::Done);
        assert_eq!(
            control_client::call_socket(&path, &Request::Battery { percent: 9 }).unwrap(),
            Response::Error { message: "got 9".into() }
        );
        let err = ControlServer::bind(&path).err().unwrap();
        assert!(err.contains("another mcfs daemon"), "{err}");
        server.close(Duration::from_secs(5));
        assert!(!path.exists());
    }

    #[test]
    fn garbage_gets_an_error_line() {
        use std::io::{BufRead, Write};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.sock");
        let (server, listener) = ControlServer::bind(&path).unwrap();
        server.spawn(listener, unsafe { libc::getuid() }, Arc::new(|_| Response::Done)).unwrap();
        let mut s = UnixStream::connect(&path).unwrap();
        s.write_all(b"{\"op\":\"format_disk\"}\n").unwrap();
        let mut line = String::new();
        BufReader::new(&s).read_line(&mut line).unwrap();
        assert!(line.starts_with("{\"status\":\"error\""), "{line}");
    }

    #[test]
    fn close_waits_for_an_answer_in_progress() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.sock");
        let (server, listener) = ControlServer::bind(&path).unwrap();
        let (entered_tx, entered_rx) = std::sync::mpsc::channel();
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        let release_rx = Mutex::new(release_rx);
        let entered_tx = Mutex::new(entered_tx);
        server
            .spawn(
                listener,
                unsafe { libc::getuid() },
                Arc::new(move |_| {
                    entered_tx.lock().unwrap().send(()).unwrap();
                    release_rx.lock().unwrap().recv().unwrap();
                    Response::Unmounting { pid: 1 }
                }),
            )
            .unwrap();
        let client = {
            let path = path.clone();
            std::thread::spawn(move || control_client::call_socket(&path, &Request::Unmount).unwrap())
        };
        entered_rx.recv().unwrap();
        release_tx.send(()).unwrap();
        server.close(Duration::from_secs(600));
        assert_eq!(*server.in_flight.count.lock().unwrap(), 0);
        assert_eq!(client.join().unwrap(), Response::Unmounting { pid: 1 });
    }

    #[test]
    fn stale_socket_file_is_replaced_and_dropping_removes_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        drop(UnixListener::bind(&path).unwrap());
        assert!(path.exists());
        let (server, _listener) = ControlServer::bind(&path).unwrap();
        assert!(path.exists());
        drop(server);
        assert!(!path.exists());
    }
}
