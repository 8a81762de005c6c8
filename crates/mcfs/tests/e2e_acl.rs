//! Issue 10, item 7 and DESIGN.md invariant 7, on a real mount: POSIX ACLs
//! are enforced and kept in step with the mode, and one app (uid) cannot
//! read or change another app's private files. Every step runs twice, as
//! the same uid, on a directory of a loop-mounted ext4 image (the
//! reference) and on an mcfs mount; the results must be equal step for
//! step: the errno of each system call, and what `getfacl` and `stat` show.
//! Before, mcfs stored ACLs but the kernel never asked for them: a user an
//! ACL shut out could still read and write.

mod common;

use common::{Daemon, Dirs, Ext4Image};
use std::ffi::CString;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Who runs a step: uid, gid, supplementary groups, umask.
#[derive(Clone, Copy)]
struct Who {
    uid: u32,
    gid: u32,
    groups: &'static [u32],
    umask: u32,
}

const ROOT: Who = Who { uid: 0, gid: 0, groups: &[], umask: 0o022 };
const OWNER: Who = Who { uid: 10001, gid: 10001, groups: &[], umask: 0o022 };
const OTHER_APP: Who = Who { uid: 10002, gid: 10002, groups: &[], umask: 0o022 };
const STRANGER: Who = Who { uid: 10003, gid: 10003, groups: &[], umask: 0o022 };
/// A member of group 20000 by a supplementary group.
const MEMBER: Who = Who { uid: 10004, gid: 10004, groups: &[20000], umask: 0o022 };

/// One system call, on paths relative to the tree the step runs in.
enum Call {
    /// open(O_RDONLY) and read one byte.
    Read(&'static str),
    /// open(O_WRONLY) and write one byte.
    Write(&'static str),
    /// open(O_CREAT | O_EXCL | O_WRONLY, mode).
    Create(&'static str, u32),
    Mkdir(&'static str, u32),
    Truncate(&'static str),
    Unlink(&'static str),
    Rename(&'static str, &'static str),
    Chmod(&'static str, u32),
    Chown(&'static str, u32),
    SetXattr(&'static str),
    Stat(&'static str),
    ListDir(&'static str),
}

/// A step: a call as someone, or a command line (`setfacl`, `getfacl`,
/// `stat`) with `{}` standing for a path in the tree.
enum Step {
    Call(Who, Call),
    Run(Who, &'static str, &'static [&'static str]),
}

/// Runs `call` in a child process with `who`'s credentials and umask;
/// returns its errno (0: success). Everything the child needs is made
/// before the fork: the child only makes system calls.
fn call_as(who: Who, root: &Path, call: &Call) -> i32 {
    let c = |rel: &str| CString::new(root.join(rel).as_os_str().as_bytes()).unwrap();
    let (a, b) = match call {
        Call::Rename(from, to) => (c(from), c(to)),
        Call::Read(p) | Call::Write(p) | Call::Create(p, _) | Call::Mkdir(p, _) | Call::Truncate(p) => (c(p), c(p)),
        Call::Unlink(p) | Call::Chmod(p, _) | Call::Chown(p, _) | Call::SetXattr(p) | Call::Stat(p) => (c(p), c(p)),
        Call::ListDir(p) => (c(p), c(p)),
    };
    let groups: Vec<libc::gid_t> = who.groups.to_vec();
    let mut byte = [0u8; 1];
    // SAFETY: the child makes async-signal-safe system calls only, then _exit.
    match unsafe { libc::fork() } {
        -1 => panic!("fork: {}", std::io::Error::last_os_error()),
        0 => unsafe {
            let fail = || libc::_exit(*libc::__errno_location());
            if libc::setgroups(groups.len(), groups.as_ptr()) != 0
                || libc::setresgid(who.gid, who.gid, who.gid) != 0
                || libc::setresuid(who.uid, who.uid, who.uid) != 0
            {
                libc::_exit(255);
            }
            libc::umask(who.umask);
            let ok = match call {
                Call::Read(_) | Call::Write(_) | Call::ListDir(_) => {
                    let flags = match call {
                        Call::Write(_) => libc::O_WRONLY,
                        Call::ListDir(_) => libc::O_RDONLY | libc::O_DIRECTORY,
                        _ => libc::O_RDONLY,
                    };
                    let fd = libc::open(a.as_ptr(), flags);
                    if fd < 0 {
                        fail();
                    }
                    match call {
                        Call::Read(_) => libc::read(fd, byte.as_mut_ptr().cast(), 1) >= 0,
                        Call::Write(_) => libc::write(fd, b"x".as_ptr().cast(), 1) >= 0,
                        _ => true,
                    }
                }
                Call::Create(_, mode) => {
                    libc::open(a.as_ptr(), libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY, *mode) >= 0
                }
                Call::Mkdir(_, mode) => libc::mkdir(a.as_ptr(), *mode) == 0,
                Call::Truncate(_) => libc::truncate(a.as_ptr(), 0) == 0,
                Call::Unlink(_) => libc::unlink(a.as_ptr()) == 0,
                Call::Rename(..) => libc::rename(a.as_ptr(), b.as_ptr()) == 0,
                Call::Chmod(_, mode) => libc::chmod(a.as_ptr(), *mode) == 0,
                Call::Chown(_, uid) => libc::chown(a.as_ptr(), *uid, u32::MAX) == 0,
                Call::SetXattr(_) => libc::setxattr(a.as_ptr(), c"user.x".as_ptr(), b"1".as_ptr().cast(), 1, 0) == 0,
                Call::Stat(_) => {
                    let mut st: libc::stat = std::mem::zeroed();
                    libc::stat(a.as_ptr(), &mut st) == 0
                }
            };
            if !ok {
                fail();
            }
            libc::_exit(0)
        },
        child => {
            let mut status = 0;
            assert_eq!(unsafe { libc::waitpid(child, &mut status, 0) }, child, "waitpid");
            assert!(libc::WIFEXITED(status), "the child died: status {status}");
            let code = libc::WEXITSTATUS(status);
            assert_ne!(code, 255, "the child could not take the credentials of uid {}", who.uid);
            code
        }
    }
}

/// Runs a command line as `who` with `{}` replaced by `root`; its exit
/// status and output, with `root` shown as `ROOT`.
fn run_as(who: Who, root: &Path, program: &str, args: &[&str]) -> String {
    let root_text = root.display().to_string();
    let args: Vec<String> = args.iter().map(|a| a.replace("{}", &root_text)).collect();
    let mut cmd = Command::new(program);
    // Dropping root, Command also drops the supplementary groups.
    cmd.args(&args).uid(who.uid).gid(who.gid);
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    let text = format!(
        "{} {}{}",
        out.status.code().map_or("killed".into(), |c| c.to_string()),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    text.replace(&root_text, "ROOT")
}

/// What each step gave on the tree at `root`.
fn run(steps: &[Step], root: &Path) -> Vec<String> {
    steps
        .iter()
        .map(|step| match step {
            Step::Call(who, call) => match call_as(*who, root, call) {
                0 => "ok".to_string(),
                errno => std::io::Error::from_raw_os_error(errno).to_string(),
            },
            Step::Run(who, program, args) => run_as(*who, root, program, args),
        })
        .collect()
}

/// A short description of a step, for failure messages.
fn describe(step: &Step) -> String {
    match step {
        Step::Call(who, call) => {
            let what = match call {
                Call::Read(p) => format!("read {p}"),
                Call::Write(p) => format!("write {p}"),
                Call::Create(p, m) => format!("create {p} {m:o}"),
                Call::Mkdir(p, m) => format!("mkdir {p} {m:o}"),
                Call::Truncate(p) => format!("truncate {p}"),
                Call::Unlink(p) => format!("unlink {p}"),
                Call::Rename(a, b) => format!("rename {a} {b}"),
                Call::Chmod(p, m) => format!("chmod {m:o} {p}"),
                Call::Chown(p, u) => format!("chown {u} {p}"),
                Call::SetXattr(p) => format!("setxattr user.x {p}"),
                Call::Stat(p) => format!("stat {p}"),
                Call::ListDir(p) => format!("ls {p}"),
            };
            format!("uid {} (umask {:03o}): {what}", who.uid, who.umask)
        }
        Step::Run(who, program, args) => format!("uid {}: {program} {}", who.uid, args.join(" ")),
    }
}

/// The same steps on ext4 and on mcfs: every result equal.
fn same_on_both(steps: &[Step], ext4: &Path, mcfs: &Path) -> Vec<String> {
    let (on_ext4, on_mcfs) = (run(steps, ext4), run(steps, mcfs));
    let differ: Vec<String> = steps
        .iter()
        .zip(on_ext4.iter().zip(&on_mcfs))
        .filter(|(_, (e, m))| e != m)
        .map(|(step, (e, m))| format!("{}\n      ext4: {}\n      mcfs: {}", describe(step), e.trim(), m.trim()))
        .collect();
    assert!(differ.is_empty(), "mcfs differs from ext4:\n  {}", differ.join("\n  "));
    on_ext4
}

/// The root of an ext4 image and of an mcfs mount, each with a world-writable `t/`.
struct Trees {
    _image: Ext4Image,
    daemon: Option<Daemon>,
    dirs: Dirs,
    ext4: PathBuf,
    mcfs: PathBuf,
}

fn trees() -> Trees {
    let image = Ext4Image::new(512);
    let dirs = Dirs::new(None);
    let top = dirs.mnt.parent().unwrap();
    fs::set_permissions(top, fs::Permissions::from_mode(0o755)).expect("chmod the test directory");
    let daemon = Daemon::foreground(&dirs, &["--allow-other"]);
    let (ext4, mcfs) = (image.mnt.clone(), dirs.mnt.clone());
    for root in [&ext4, &mcfs] {
        fs::create_dir(root.join("t")).unwrap();
        fs::set_permissions(root.join("t"), fs::Permissions::from_mode(0o777)).unwrap();
    }
    Trees { _image: image, daemon: Some(daemon), dirs, ext4, mcfs }
}

impl Drop for Trees {
    fn drop(&mut self) {
        if let Some(daemon) = self.daemon.take() {
            if !std::thread::panicking() {
                daemon.unmount();
                assert!(self.dirs.backing.join("t").exists());
            }
        }
    }
}

const GETFACL: &str = "getfacl";
const STAT: &str = "stat";

#[test]
fn posix_acls_are_enforced_and_kept_in_step_with_the_mode() {
    use Call::*;
    use Step::{Call as C, Run as R};
    let t = trees();
    macro_rules! facl {
        ($path:literal) => {
            R(ROOT, GETFACL, &["-cn", $path])
        };
    }
    macro_rules! mode {
        ($path:literal) => {
            R(ROOT, STAT, &["-c", "%A %a", $path])
        };
    }
    let steps = [
        // The repro: mode 666, `setfacl -m u:10002:---`.
        C(Who { umask: 0, ..OWNER }, Create("t/f", 0o666)),
        R(OWNER, "setfacl", &["-m", "u:10002:---", "{}/t/f"]),
        facl!("{}/t/f"),
        mode!("{}/t/f"),
        C(OTHER_APP, Read("t/f")),
        C(OTHER_APP, Write("t/f")),
        C(STRANGER, Read("t/f")),
        C(STRANGER, Write("t/f")),
        // A named group, reached through a supplementary group.
        C(OWNER, Chmod("t/f", 0o600)),
        R(OWNER, "setfacl", &["-m", "g:20000:r--", "{}/t/f"]),
        facl!("{}/t/f"),
        mode!("{}/t/f"),
        C(MEMBER, Read("t/f")),
        C(MEMBER, Write("t/f")),
        C(STRANGER, Read("t/f")),
        // The mask limits named entries; chmod of the group bits sets the mask.
        R(OWNER, "setfacl", &["-m", "m::---", "{}/t/f"]),
        mode!("{}/t/f"),
        C(MEMBER, Read("t/f")),
        C(OWNER, Chmod("t/f", 0o640)),
        facl!("{}/t/f"),
        C(MEMBER, Read("t/f")),
        // Only the owner sets ACLs.
        R(OTHER_APP, "setfacl", &["-m", "u:10002:rw-", "{}/t/f"]),
        // Removing the ACL leaves the mode.
        R(OWNER, "setfacl", &["-b", "{}/t/f"]),
        facl!("{}/t/f"),
        mode!("{}/t/f"),
        C(MEMBER, Read("t/f")),
        // Default ACLs: inherited by new objects, and no umask then.
        C(OWNER, Mkdir("t/d", 0o700)),
        R(OWNER, "setfacl", &["-m", "u:10002:rwx", "-d", "-m", "u:10002:rwx,g::r-x,o::---", "{}/t/d"]),
        R(OWNER, "setfacl", &["-m", "u:10002:rwx", "{}/t/d"]),
        facl!("{}/t/d"),
        C(Who { umask: 0o077, ..OWNER }, Create("t/d/new", 0o666)),
        facl!("{}/t/d/new"),
        mode!("{}/t/d/new"),
        C(OTHER_APP, Write("t/d/new")),
        C(STRANGER, Read("t/d/new")),
        C(Who { umask: 0o077, ..OWNER }, Mkdir("t/d/sub", 0o777)),
        facl!("{}/t/d/sub"),
        mode!("{}/t/d/sub"),
        C(Who { umask: 0o022, ..OTHER_APP }, Create("t/d/sub/by-10002", 0o644)),
        facl!("{}/t/d/sub/by-10002"),
        // Without a default ACL the umask applies.
        C(Who { umask: 0o027, ..OWNER }, Create("t/plain", 0o666)),
        C(Who { umask: 0o027, ..OWNER }, Mkdir("t/plain-dir", 0o777)),
        mode!("{}/t/plain"),
        mode!("{}/t/plain-dir"),
        facl!("{}/t/plain"),
    ];
    let results = same_on_both(&steps, &t.ext4, &t.mcfs);
    let result = |step: &str| {
        let at = steps.iter().position(|s| describe(s) == step).unwrap_or_else(|| panic!("no step {step:?}"));
        results[at].trim().to_string()
    };
    // The exact repro, and inheritance, as ext4 (and so mcfs) gives them.
    assert_eq!(result("uid 10002 (umask 022): read t/f"), "Permission denied (os error 13)");
    assert_eq!(result("uid 10002 (umask 022): write t/f"), "Permission denied (os error 13)");
    assert_eq!(result("uid 10003 (umask 022): write t/f"), "ok");
    assert_eq!(result("uid 10002 (umask 022): write t/d/new"), "ok", "the inherited named user");
    assert_eq!(result("uid 0: stat -c %A %a {}/t/d/new"), "0 -rw-rw---- 660", "inherited, the umask not applied");
}

/// Writes and truncates by anyone but root drop set-user-id, and
/// set-group-id on group-executables, as ext4 does. The kernel leaves that
/// to mcfs (FUSE_HANDLE_KILLPRIV_V2, so that it need not ask for the
/// file's `security.capability` before every write).
#[test]
fn writes_and_truncates_drop_set_id_bits_as_on_ext4() {
    use Call::*;
    use Step::{Call as C, Run as R};
    let t = trees();
    macro_rules! mode {
        () => {
            R(ROOT, STAT, &["-c", "%A %a", "{}/t/s"])
        };
    }
    let steps = [
        C(Who { umask: 0, ..OWNER }, Create("t/s", 0o666)),
        C(OWNER, Chmod("t/s", 0o6777)),
        mode!(),
        C(STRANGER, Write("t/s")),
        mode!(),
        // Without group execute, set-group-id stays for a writer in the
        // file's group and goes for one outside it.
        C(OWNER, Chmod("t/s", 0o6767)),
        C(OWNER, Write("t/s")),
        mode!(),
        C(OWNER, Chmod("t/s", 0o6767)),
        C(STRANGER, Write("t/s")),
        mode!(),
        C(OWNER, Chmod("t/s", 0o6777)),
        C(STRANGER, Truncate("t/s")),
        mode!(),
        // Root (CAP_FSETID) keeps them.
        C(OWNER, Chmod("t/s", 0o6777)),
        C(ROOT, Write("t/s")),
        C(ROOT, Truncate("t/s")),
        mode!(),
    ];
    let results = same_on_both(&steps, &t.ext4, &t.mcfs);
    let modes: Vec<&str> = steps
        .iter()
        .zip(&results)
        .filter(|(s, _)| describe(s).contains("stat"))
        .map(|(_, r)| r.trim().rsplit(' ').next().unwrap_or(""))
        .collect();
    assert_eq!(modes, ["6777", "777", "2767", "767", "777", "6777"]);
}

#[test]
fn one_app_cannot_read_or_change_another_apps_private_files() {
    use Call::*;
    use Step::Call as C;
    let t = trees();
    let me = Who { umask: 0o077, ..OWNER };
    let setup = [
        C(ROOT, Mkdir("t/shared", 0o1777)),
        C(ROOT, Chmod("t/shared", 0o1777)),
        C(me, Mkdir("t/app1", 0o700)),
        C(me, Create("t/app1/private", 0o600)),
        C(me, Write("t/app1/private")),
        C(me, Create("t/shared/mine", 0o600)),
        C(me, Write("t/shared/mine")),
        C(me, Create("t/shared/open", 0o666)),
        C(me, Chmod("t/shared/open", 0o666)),
    ];
    same_on_both(&setup, &t.ext4, &t.mcfs);
    // Every way to read or change a file, as another app.
    let read_or_change = |path: &'static str| {
        let who = OTHER_APP;
        [Read(path), Write(path), Truncate(path), Unlink(path), Rename(path, "t/shared/taken")]
            .into_iter()
            .chain([Chmod(path, 0o666), Chown(path, who.uid), SetXattr(path)])
            .map(move |call| C(who, call))
    };
    let mut attempts: Vec<Step> = read_or_change("t/shared/mine").chain(read_or_change("t/app1/private")).collect();
    attempts.extend([
        // A file others may write, in a sticky directory: still not theirs to remove.
        C(OTHER_APP, Unlink("t/shared/open")),
        C(OTHER_APP, Rename("t/shared/open", "t/shared/taken")),
        C(OTHER_APP, Chmod("t/shared/open", 0o600)),
        // A private directory.
        C(OTHER_APP, Stat("t/app1/private")),
        C(OTHER_APP, ListDir("t/app1")),
        C(OTHER_APP, Create("t/app1/planted", 0o644)),
        C(OTHER_APP, Chmod("t/app1", 0o777)),
        C(OTHER_APP, SetXattr("t/app1")),
    ]);
    let results = same_on_both(&attempts, &t.ext4, &t.mcfs);
    let let_through: Vec<String> =
        attempts.iter().zip(&results).filter(|(_, r)| *r == "ok").map(|(s, _)| describe(s)).collect();
    assert!(let_through.is_empty(), "allowed on both:\n  {}", let_through.join("\n  "));
    // The owner still can.
    let owner = [C(me, Read("t/app1/private")), C(me, Unlink("t/shared/mine")), C(me, Chmod("t/app1", 0o755))];
    assert_eq!(same_on_both(&owner, &t.ext4, &t.mcfs), ["ok", "ok", "ok"]);
}
