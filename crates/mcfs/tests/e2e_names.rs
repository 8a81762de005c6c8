//! Missing names through a real mount (issue 11): the kernel keeps the
//! answer to a lookup that found nothing (a negative entry), so a name
//! probed again and again reaches the daemon about once; and every way of
//! making a name, then removing it again, is seen by the next `stat` at
//! once, negative entry or not.

mod common;

use common::{Daemon, Dirs};
use std::fs;
use std::io::ErrorKind;
use std::os::unix::fs::symlink;
use std::path::Path;

const PROBES: u64 = 1000;

/// Makes the name `probed` in directory `d` one way.
type MakeName = fn(&Path, &Path);

fn missing_lookups(dirs: &Dirs) -> u64 {
    let stats = common::stats(dirs);
    stats["missing_lookups"].as_u64().unwrap_or_else(|| panic!("no missing_lookups in mcfs stat: {stats}"))
}

#[track_caller]
fn assert_missing(path: &Path, when: &str) {
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        other => panic!("{} {when}: expected ENOENT, got {other:?}", path.display()),
    }
}

#[track_caller]
fn assert_present(path: &Path, when: &str) {
    if let Err(e) = fs::symlink_metadata(path) {
        panic!("{} {when}: {e}", path.display());
    }
}

#[test]
fn a_missing_name_is_asked_about_once_and_a_name_made_later_is_seen_at_once() {
    let dirs = Dirs::new(None);
    let daemon = Daemon::foreground(&dirs, &[]);
    let m = &dirs.mnt;
    fs::create_dir(m.join("d")).expect("mkdir d");
    fs::write(m.join("d/existing"), b"x").expect("write d/existing");

    let before = missing_lookups(&dirs);
    let probed = m.join("d/db-journal");
    for _ in 0..PROBES {
        assert_missing(&probed, "probed");
    }
    let asked = missing_lookups(&dirs) - before;
    assert!(
        (1..=2).contains(&asked),
        "{PROBES} stats of a missing name reached the daemon {asked} times (the kernel should keep the answer)"
    );

    // Each way of making a name, on a name the kernel holds as missing.
    let d = m.join("d");
    let made: [(&str, MakeName); 6] = [
        ("create", |_, p| fs::write(p, b"journal").expect("create")),
        ("mkdir", |_, p| fs::create_dir(p).expect("mkdir")),
        ("symlink", |_, p| symlink("existing", p).expect("symlink")),
        ("link", |d, p| fs::hard_link(d.join("existing"), p).expect("link")),
        ("rename", |d, p| {
            fs::write(d.join("tmp"), b"new").expect("write d/tmp");
            fs::rename(d.join("tmp"), p).expect("rename");
        }),
        ("mknod", |_, p| {
            let path = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).expect("no NUL");
            // SAFETY: a valid C string and plain integers.
            let made = unsafe { libc::mknod(path.as_ptr(), libc::S_IFIFO | 0o644, 0) };
            assert_eq!(made, 0, "mknod: {}", std::io::Error::last_os_error());
        }),
    ];
    for (how, make) in made {
        assert_missing(&probed, &format!("before {how}"));
        make(&d, &probed);
        assert_present(&probed, &format!("right after {how}"));
        assert_present(&m.join("d/existing"), &format!("after {how}"));
        match fs::symlink_metadata(&probed).expect("stat").is_dir() {
            true => fs::remove_dir(&probed).expect("rmdir"),
            false => fs::remove_file(&probed).expect("unlink"),
        }
        assert_missing(&probed, &format!("right after removing what {how} made"));
        assert_missing(&m.join("d/tmp"), &format!("after {how}"));
    }
    drop(daemon);
}
