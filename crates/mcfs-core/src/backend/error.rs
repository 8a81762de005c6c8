//! Errors of the backends: an errno plus the operation and the path it
//! failed on, so a message printed by the engine names the file and the cause.
//!
//! `std::io::Error` can hold either a bare OS errno (`raw_os_error()` is
//! `Some`) or a custom payload with a message (`raw_os_error()` is `None`),
//! never both. Backends return the custom form with a `BackendError`
//! payload; its errno survives and is read back with `errno_of`, which also
//! accepts bare OS errors. The `io::ErrorKind` is the one the errno maps to,
//! so `kind()` checks (`NotFound`, `AlreadyExists`, ...) keep working.

use std::error::Error;
use std::fmt;
use std::io;
use std::path::Path;

/// Payload of every error a backend returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendError {
    /// The POSIX error number.
    pub errno: i32,
    /// What was being done and on which path(s), e.g. `rename a -> b`.
    pub context: String,
}

impl fmt::Display for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.context, io::Error::from_raw_os_error(self.errno))
    }
}

impl Error for BackendError {}

/// The errno carried by an error from a backend (or any bare OS error);
/// `EIO` for errors that carry none.
pub fn errno_of(e: &io::Error) -> i32 {
    if let Some(errno) = e.raw_os_error() {
        return errno;
    }
    e.get_ref().and_then(|inner| inner.downcast_ref::<BackendError>()).map_or(libc::EIO, |b| b.errno)
}

/// An error for `op` on `path` with `errno`.
pub(crate) fn path_error(op: &str, path: &Path, errno: i32) -> io::Error {
    error_with_context(format!("{op} {}", shown(path)), errno)
}

/// An error for `op` from `from` to `to` (rename, link).
pub(crate) fn two_path_error(op: &str, from: &Path, to: &Path, errno: i32) -> io::Error {
    error_with_context(format!("{op} {} -> {}", shown(from), shown(to)), errno)
}

/// Re-labels an I/O error with the operation and path, keeping its errno.
pub(crate) fn at_path(op: &str, path: &Path, e: io::Error) -> io::Error {
    path_error(op, path, errno_of(&e))
}

fn error_with_context(context: String, errno: i32) -> io::Error {
    let kind = io::Error::from_raw_os_error(errno).kind();
    io::Error::new(kind, BackendError { errno, context })
}

/// The root is the empty relative path; show it as `.` so messages stay readable.
fn shown(path: &Path) -> std::path::Display<'_> {
    if path.as_os_str().is_empty() {
        Path::new(".").display()
    } else {
        path.display()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_and_kind_survive_and_message_names_path() {
        let e = path_error("open", Path::new("a/b"), libc::ENOENT);
        assert_eq!(errno_of(&e), libc::ENOENT);
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert!(crate::backend::is_not_found(&e));
        let text = e.to_string();
        assert!(text.starts_with("open a/b: "), "{text}");
        assert!(text.contains("os error 2"), "{text}");
    }

    #[test]
    fn bare_os_errors_and_foreign_errors() {
        assert_eq!(errno_of(&io::Error::from_raw_os_error(libc::EEXIST)), libc::EEXIST);
        assert_eq!(errno_of(&io::Error::other("no errno here")), libc::EIO);
        let relabelled = at_path("stat", Path::new(""), io::Error::from_raw_os_error(libc::EACCES));
        assert_eq!(errno_of(&relabelled), libc::EACCES);
        assert!(relabelled.to_string().starts_with("stat .: "));
    }
}
