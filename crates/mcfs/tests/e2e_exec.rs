//! A program running from an mcfs mount is protected as on any Linux file
//! system: opening it for writing, or with O_TRUNC, fails with ETXTBSY and
//! leaves its bytes whole, so the running program goes on.
//!
//! The O_TRUNC case is the one a FUSE file system can get wrong: with
//! FUSE_ATOMIC_O_TRUNC the kernel hands the truncation to the daemon before it
//! checks for a running program, and the program loses its text (pjdfstest's
//! open::etxtbsy caught it, when the emptied program crashed in time).

mod common;

use common::{Daemon, Dirs};
use std::ffi::CString;
use std::fs::{self, Permissions};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

/// `open(2)` with raw flags (std refuses O_TRUNC without write access); the errno on failure.
fn open_errno(path: &Path, flags: libc::c_int) -> Result<(), i32> {
    let c_path = CString::new(path.as_os_str().as_bytes()).expect("no NUL in the path");
    // SAFETY: a valid NUL-terminated path; the descriptor is closed at once.
    let fd = unsafe { libc::open(c_path.as_ptr(), flags) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0));
    }
    // SAFETY: fd was just opened by us.
    unsafe { libc::close(fd) };
    Ok(())
}

#[test]
fn opening_a_running_program_for_writing_or_truncation_fails_with_etxtbsy_and_leaves_it_whole() {
    let dirs = Dirs::new(None);
    let daemon = Daemon::daemonised(&dirs, &[]);
    let source = Path::new("/bin/sleep");
    let program = dirs.mnt.join("sleeper");
    fs::copy(source, &program).unwrap_or_else(|e| panic!("copy {} to {}: {e}", source.display(), program.display()));
    fs::set_permissions(&program, Permissions::from_mode(0o755)).expect("chmod the program");
    let text = fs::read(source).expect("read /bin/sleep");

    let mut running =
        Command::new(&program).arg("60").spawn().unwrap_or_else(|e| panic!("run {}: {e}", program.display()));
    let cases = [
        ("O_WRONLY", libc::O_WRONLY),
        ("O_RDWR", libc::O_RDWR),
        ("O_RDONLY|O_TRUNC", libc::O_RDONLY | libc::O_TRUNC),
        ("O_WRONLY|O_TRUNC", libc::O_WRONLY | libc::O_TRUNC),
    ];
    let results: Vec<_> = cases.iter().map(|&(name, flags)| (name, open_errno(&program, flags))).collect();
    let still_running = running.try_wait().expect("poll the program").is_none();
    let after = fs::read(&program).expect("read the program back");
    running.kill().expect("stop the program");
    running.wait().expect("reap the program");

    for (name, result) in results {
        assert_eq!(result, Err(libc::ETXTBSY), "open({name}) of a running program: want ETXTBSY");
    }
    assert!(after == text, "the running program's bytes changed: {} bytes, {} before", after.len(), text.len());
    assert!(still_running, "the program died while its file was opened for writing");
    daemon.unmount();
}
