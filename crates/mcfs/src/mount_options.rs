//! `mcfs mount -o OPTION[,OPTION...]`: the options of an fstab line or of
//! `mount -o`, sorted into what the kernel mount takes, what mcfs itself
//! takes (config file, threads), engine config keys (`config_override`),
//! and the options mount(8) and mount.fuse3 pass on that a FUSE file system
//! must ignore. Anything else is an error naming the option.

use crate::config_override::{self, Override};
use mcfs_fuse::MountFlags;
use std::path::PathBuf;

/// Everything the `-o` arguments said; later options win.
#[derive(Debug, Default, PartialEq)]
pub struct MountOptions {
    pub allow_other: bool,
    pub flags: MountFlags,
    pub fsname: Option<String>,
    pub subtype: Option<String>,
    pub config_file: Option<PathBuf>,
    pub threads: Option<u32>,
    /// `metrics_file=FILE` (`metrics_file`).
    pub metrics_file: Option<PathBuf>,
    /// Config keys, in the order given.
    pub overrides: Vec<Override>,
    /// Accepted with no effect on mcfs (logged, so a user sees what was dropped).
    pub ignored: Vec<String>,
}

/// Options with no effect that a FUSE file system accepts (mount(8) and
/// mount.fuse3 pass some of them on): fstab bookkeeping, and the atime
/// family, since the kernel leaves atime to a FUSE file system and mcfs
/// changes it only when asked (utimensat), never on reads.
const IGNORED: &[&str] = &[
    "defaults",
    "auto",
    "noauto",
    "nofail",
    "_netdev",
    "user",
    "nouser",
    "users",
    "owner",
    "group",
    "async",
    "atime",
    "noatime",
    "relatime",
    "norelatime",
    "strictatime",
    "nostrictatime",
    "diratime",
    "nodiratime",
    "lazytime",
    "nolazytime",
    // Always on: the kernel checks permissions from the attributes mcfs reports.
    "default_permissions",
];

/// Largest `threads=` (as `--threads`).
pub const MAX_THREADS: u32 = 256;

/// Parses every `-o` argument.
pub fn parse(args: &[String]) -> Result<MountOptions, String> {
    let mut options = MountOptions::default();
    for option in args.iter().flat_map(|arg| arg.split(',')).filter(|o| !o.is_empty()) {
        options.add(option)?;
    }
    Ok(options)
}

impl MountOptions {
    fn add(&mut self, option: &str) -> Result<(), String> {
        let (name, value) = option.split_once('=').map_or((option, None), |(name, value)| (name, Some(value)));
        if IGNORED.contains(&name) || name.starts_with("x-") || name == "comment" {
            self.ignored.push(option.to_string());
            return Ok(());
        }
        let needs_value = || format!("option {name} needs a value: -o {name}=VALUE");
        if config_override::is_key(name) {
            let value = value.ok_or_else(needs_value)?.to_string();
            self.overrides.push(Override { key: name.to_string(), value });
            return Ok(());
        }
        if self.set_flag(name) {
            return match value {
                None => Ok(()),
                Some(_) => Err(format!("option {name} takes no value")),
            };
        }
        match name {
            "fsname" | "subtype" | "config" | "threads" | "metrics_file" => {
                self.set_value(name, value.filter(|v| !v.is_empty()).ok_or_else(needs_value)?)
            }
            "sync" | "dirsync" => Err(format!(
                "option {name} is not supported: mcfs keeps writes in memory until a checkpoint; \
                 for an fsync that returns once the data is durable use -o mode=sync"
            )),
            _ => Err(format!("unknown mount option \"{option}\" (see mcfs mount --help and docs/CONFIG.md)")),
        }
    }

    /// Sets a flag option (`ro`, `nosuid`, `allow_other`...); false if `name` is none.
    fn set_flag(&mut self, name: &str) -> bool {
        let flags = &mut self.flags;
        let (field, on) = match name {
            "rw" => (&mut flags.read_only, false),
            "ro" => (&mut flags.read_only, true),
            "suid" => (&mut flags.no_suid, false),
            "nosuid" => (&mut flags.no_suid, true),
            "dev" => (&mut flags.no_dev, false),
            "nodev" => (&mut flags.no_dev, true),
            "exec" => (&mut flags.no_exec, false),
            "noexec" => (&mut flags.no_exec, true),
            "allow_other" => (&mut self.allow_other, true),
            _ => return false,
        };
        *field = on;
        true
    }

    fn set_value(&mut self, name: &str, value: &str) -> Result<(), String> {
        match name {
            "fsname" => self.fsname = Some(value.to_string()),
            "subtype" => self.subtype = Some(value.to_string()),
            "config" => self.config_file = Some(PathBuf::from(value)),
            "threads" => self.threads = Some(parse_threads(value)?),
            "metrics_file" => self.metrics_file = Some(PathBuf::from(value)),
            other => return Err(format!("option {other} takes no value")),
        }
        Ok(())
    }
}

fn parse_threads(text: &str) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(n) if (1..=MAX_THREADS).contains(&n) => Ok(n),
        _ => Err(format!("option threads must be in 1..={MAX_THREADS}, got \"{text}\"")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(args: &[&str]) -> Result<MountOptions, String> {
        parse(&args.iter().map(|a| a.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn an_fstab_option_list_is_sorted_out() {
        let o = parsed(&[
            "rw,noexec,nosuid,dev,allow_other,default_permissions,noatime,fsname=data",
            "cache_size=64M,fasttrack.aging_ms=200,config=/etc/mcfs.toml,threads=8",
        ])
        .unwrap();
        assert!(o.allow_other);
        assert_eq!(o.flags, MountFlags { read_only: false, no_suid: true, no_dev: false, no_exec: true });
        assert_eq!((o.fsname.as_deref(), o.subtype), (Some("data"), None));
        assert_eq!((o.config_file, o.threads), (Some(PathBuf::from("/etc/mcfs.toml")), Some(8)));
        let keys: Vec<(&str, &str)> = o.overrides.iter().map(|o| (o.key.as_str(), o.value.as_str())).collect();
        assert_eq!(keys, [("cache_size", "64M"), ("fasttrack.aging_ms", "200")]);
        assert_eq!(o.ignored, ["default_permissions", "noatime"]);
    }

    #[test]
    fn no_options_give_fuse_defaults_and_later_options_win() {
        assert_eq!(parsed(&[]).unwrap(), MountOptions::default());
        assert_eq!(MountOptions::default().flags, MountFlags::default());
        let o = parsed(&["ro,rw,ro", "subtype=a,subtype=b"]).unwrap();
        assert!(o.flags.read_only);
        assert_eq!(o.subtype.as_deref(), Some("b"));
        assert!(!parsed(&["ro,rw"]).unwrap().flags.read_only);
    }

    #[test]
    fn what_mount_passes_on_for_the_fstab_is_ignored() {
        let o = parsed(&["defaults,_netdev,nofail,noauto,auto,user,users,x-systemd.automount,x-mine=1,comment=hi"])
            .unwrap();
        assert_eq!(o.ignored.len(), 10, "{:?}", o.ignored);
        assert_eq!((o.overrides.len(), o.flags), (0, MountFlags::default()));
        assert_eq!(parsed(&[",,"]).unwrap(), MountOptions::default(), "empty items are nothing");
    }

    #[test]
    fn errors_name_the_option() {
        for (args, wanted) in [
            ("cache_sise=1M", "unknown mount option \"cache_sise=1M\""),
            ("nonempty", "unknown mount option \"nonempty\""),
            ("cache_size", "option cache_size needs a value"),
            ("fsname=", "option fsname needs a value"),
            ("config", "option config needs a value"),
            ("ro=1", "option ro takes no value"),
            ("threads=0", "option threads must be in 1..=256, got \"0\""),
            ("threads=x", "option threads must be in 1..=256, got \"x\""),
            ("sync", "option sync is not supported"),
            ("dirsync", "use -o mode=sync"),
        ] {
            let err = parsed(&[args]).unwrap_err();
            assert!(err.contains(wanted), "{args}: {err}");
        }
    }
}
