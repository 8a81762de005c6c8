//! mcfs run by mount(8), umount(8) or mount.fuse3 rather than by a user.
//! Their command lines are turned into the `mcfs mount` / `mcfs umount`
//! command lines they mean, which the normal grammar (`cli`) then parses:
//!
//! * `/sbin/mount.fuse.mcfs SOURCE MOUNTPOINT [-fnsv] [-o OPTIONS] [-t TYPE]`:
//!   mount(8) for `-t fuse.mcfs` (and an fstab line of that type); also as
//!   `mount.mcfs`, for `-t mcfs`.
//! * `mcfs SOURCE MOUNTPOINT -o OPTIONS`: mount.fuse3 for `mcfs#SOURCE`
//!   (fstab type `fuse`) or `-t fuse.mcfs` when no mount.fuse.mcfs exists.
//! * `/sbin/umount.fuse.mcfs MOUNTPOINT [-flnv] [-t TYPE]`: umount(8), so
//!   that `umount MOUNTPOINT` checkpoints and waits for the daemon as
//!   `mcfs umount` does.
//!
//! Either mount form daemonizes like `mcfs mount`: mount(8) waits for the
//! helper, which returns once the mount is live.

use std::ffi::{OsStr, OsString};
use std::path::Path;

/// What the process was asked to do.
#[derive(Debug, PartialEq)]
pub enum Invocation {
    /// Parse these arguments as the `mcfs` command line.
    Args(Vec<OsString>),
    /// `mount -f`: pretend to mount, i.e. do nothing.
    Fake,
}

/// `args` (argv, program name first) as an `mcfs` command line.
/// `is_subcommand` tells the mount.fuse3 form from a mistyped subcommand.
pub fn translate(args: Vec<OsString>, is_subcommand: impl Fn(&OsStr) -> bool) -> Result<Invocation, String> {
    let program = args.first().and_then(|p| Path::new(p).file_name()).map(|n| n.to_string_lossy().into_owned());
    let program = program.unwrap_or_default();
    let rest = args.get(1..).unwrap_or_default();
    if program.starts_with("mount.") {
        return mount_args(&program, rest, "fnsv");
    }
    if program.starts_with("umount.") {
        return umount_args(&program, rest).map(Invocation::Args);
    }
    let positional = |i: usize| rest.get(i).is_some_and(|a| !a.as_encoded_bytes().starts_with(b"-"));
    // mount.fuse3 passes no flags but -o; a user's `-f` here is not `mount -f`.
    if positional(0) && positional(1) && !is_subcommand(&rest[0]) {
        return mount_args("mcfs", rest, "");
    }
    Ok(Invocation::Args(args))
}

/// `SOURCE MOUNTPOINT` plus the helper flags `flags` allows, in any order.
fn mount_args(program: &str, args: &[OsString], flags: &str) -> Result<Invocation, String> {
    let parsed = HelperArgs::parse(program, args, flags)?;
    let [source, mountpoint] = parsed.paths.as_slice() else {
        return Err(format!("usage: {program} SOURCE MOUNTPOINT [-o OPTION[,OPTION...]]"));
    };
    if parsed.flags.contains('f') {
        return Ok(Invocation::Fake);
    }
    let mut line: Vec<OsString> = vec!["mcfs".into(), "mount".into()];
    for options in parsed.options {
        line.extend(["-o".into(), options]);
    }
    line.extend(["--".into(), source.clone(), mountpoint.clone()]);
    Ok(Invocation::Args(line))
}

/// `MOUNTPOINT` plus umount(8)'s helper flags; `-l` and `-f` detach at once.
fn umount_args(program: &str, args: &[OsString]) -> Result<Vec<OsString>, String> {
    let parsed = HelperArgs::parse(program, args, "flnv")?;
    if !parsed.options.is_empty() {
        return Err(format!("{program}: -o is not an umount flag"));
    }
    let [mountpoint] = parsed.paths.as_slice() else {
        return Err(format!("usage: {program} MOUNTPOINT [-l]"));
    };
    let mut line: Vec<OsString> = vec!["mcfs".into(), "umount".into()];
    if parsed.flags.contains(['l', 'f']) {
        line.push("--lazy".into());
    }
    line.extend(["--".into(), mountpoint.clone()]);
    Ok(line)
}

/// A helper's command line: paths, single-letter flags, `-o OPTIONS`
/// (repeatable) and `-t TYPE` (the caller already knows the type).
#[derive(Debug, Default)]
struct HelperArgs {
    paths: Vec<OsString>,
    flags: String,
    options: Vec<OsString>,
}

impl HelperArgs {
    fn parse(program: &str, args: &[OsString], known_flags: &str) -> Result<HelperArgs, String> {
        let mut parsed = HelperArgs::default();
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            let text = arg.to_string_lossy();
            let Some(letters) = text.strip_prefix('-').filter(|l| !l.is_empty()) else {
                parsed.paths.push(arg.clone());
                continue;
            };
            match letters {
                "o" | "t" => {
                    let value = args.next().ok_or_else(|| format!("{program}: -{letters} needs a value"))?;
                    if letters == "o" {
                        parsed.options.push(value.clone());
                    }
                }
                "-" => parsed.paths.extend(args.by_ref().cloned()),
                long if long.starts_with('-') => return Err(format!("{program}: unknown option {text}")),
                _ => match letters.chars().find(|c| !known_flags.contains(*c)) {
                    Some(c) => return Err(format!("{program}: unknown flag -{c} (known: -{known_flags}, -o, -t)")),
                    None => parsed.flags.push_str(letters),
                },
            }
        }
        Ok(parsed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn translated(args: &[&str]) -> Result<Invocation, String> {
        translate(args.iter().map(OsString::from).collect(), |a| a == "stat" || a == "mount")
    }

    fn line(args: &[&str]) -> Invocation {
        Invocation::Args(args.iter().map(OsString::from).collect())
    }

    #[test]
    fn mount_helper_lines_become_mcfs_mount() {
        let expected = line(&["mcfs", "mount", "-o", "rw,cache_size=64M", "--", "/srv/b", "/mnt/m"]);
        let by_mount = ["/sbin/mount.fuse.mcfs", "/srv/b", "/mnt/m", "-o", "rw,cache_size=64M"];
        assert_eq!(translated(&by_mount), Ok(expected));
        let sloppy = ["/sbin/mount.mcfs", "/srv/b", "/mnt/m", "-s", "-nv", "-o", "ro", "-t", "fuse.mcfs", "-o", "dev"];
        let expected = line(&["mcfs", "mount", "-o", "ro", "-o", "dev", "--", "/srv/b", "/mnt/m"]);
        assert_eq!(translated(&sloppy), Ok(expected));
        assert_eq!(translated(&["mount.fuse.mcfs", "/srv/b", "/mnt/m", "-f", "-o", "ro"]), Ok(Invocation::Fake));
    }

    #[test]
    fn two_paths_without_a_subcommand_are_mount_fuse3s_form() {
        let by_mount_fuse3 = ["mcfs", "/srv/b", "/mnt/m", "-o", "rw,allow_other,dev,suid"];
        let expected = line(&["mcfs", "mount", "-o", "rw,allow_other,dev,suid", "--", "/srv/b", "/mnt/m"]);
        assert_eq!(translated(&by_mount_fuse3), Ok(expected));
        let err = translated(&["mcfs", "/srv/b", "/mnt/m", "-f"]).unwrap_err();
        assert!(err.contains("unknown flag -f"), "{err}");
        for untouched in [&["mcfs", "stat", "/mnt/m"][..], &["mcfs", "--help"], &["mcfs", "nosuch"], &["mcfs"]] {
            assert_eq!(translated(untouched), Ok(line(untouched)), "{untouched:?}");
        }
    }

    #[test]
    fn umount_helper_lines_become_mcfs_umount() {
        let plain = ["/sbin/umount.fuse.mcfs", "/mnt/m", "-n", "-t", "fuse.mcfs"];
        assert_eq!(translated(&plain), Ok(line(&["mcfs", "umount", "--", "/mnt/m"])));
        for flag in ["-l", "-f", "-fl"] {
            let lazy = ["umount.fuse.mcfs", "/mnt/m", flag];
            assert_eq!(translated(&lazy), Ok(line(&["mcfs", "umount", "--lazy", "--", "/mnt/m"])), "{flag}");
        }
    }

    #[test]
    fn bad_helper_lines_say_what_is_wrong() {
        let err = translated(&["mount.fuse.mcfs", "/srv/b"]).unwrap_err();
        assert!(err.starts_with("usage: mount.fuse.mcfs SOURCE MOUNTPOINT"), "{err}");
        let err = translated(&["mount.fuse.mcfs", "/srv/b", "/mnt/m", "-x"]).unwrap_err();
        assert!(err.contains("unknown flag -x"), "{err}");
        let err = translated(&["mount.fuse.mcfs", "/srv/b", "/mnt/m", "-o"]).unwrap_err();
        assert!(err.contains("-o needs a value"), "{err}");
        let err = translated(&["mount.fuse.mcfs", "/srv/b", "/mnt/m", "--help"]).unwrap_err();
        assert!(err.ends_with("unknown option --help"), "{err}");
        let err = translated(&["umount.fuse.mcfs", "/mnt/m", "-r"]).unwrap_err();
        assert!(err.contains("unknown flag -r"), "{err}");
        let err = translated(&["umount.fuse.mcfs", "/mnt/a", "/mnt/b"]).unwrap_err();
        assert!(err.starts_with("usage: umount.fuse.mcfs MOUNTPOINT"), "{err}");
    }
}
