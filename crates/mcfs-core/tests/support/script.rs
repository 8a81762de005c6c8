//! Workload scripts for the crash-consistency test: the steps three apps (and
//! the test harness) take, a compact text form that prints and parses back
//! (failure messages and regression tests use it), and the data a write
//! step puts down.
//!
//! Invariant: `parse(&script_text(s)) == s` for every script, so a failing
//! case printed by the test can be pasted back as a regression test.

use std::fmt;

/// Number of apps in every workload; app `j` runs as uid `UID_BASE + j`.
pub const APPS: usize = 3;
pub const UID_BASE: u32 = 10000;

/// A file named by path, or an open handle made by a `create … hN` step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Path(String),
    Handle(u32),
}

/// One step of a workload. `app` is the caller's app index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    Mkdir {
        app: usize,
        path: String,
        perm: u32,
    },
    Rmdir {
        app: usize,
        path: String,
    },
    /// An exclusive create; with `open` the file stays open as that handle.
    Create {
        app: usize,
        path: String,
        perm: u32,
        open: Option<u32>,
    },
    Write {
        app: usize,
        file: Target,
        offset: u64,
        len: u64,
        pattern: u32,
    },
    Truncate {
        app: usize,
        file: Target,
        size: u64,
    },
    /// `fallocate(PUNCH_HOLE | KEEP_SIZE)` of bytes `offset..offset+len`.
    Punch {
        app: usize,
        file: Target,
        offset: u64,
        len: u64,
    },
    /// `fallocate(ZERO_RANGE)` of bytes `offset..offset+len`, with
    /// `KEEP_SIZE` if `keep_size`.
    ZeroRange {
        app: usize,
        file: Target,
        offset: u64,
        len: u64,
        keep_size: bool,
    },
    /// `open(dir, O_TMPFILE)`: an unnamed file, open as `handle`.
    Tmpfile {
        app: usize,
        dir: String,
        perm: u32,
        handle: u32,
    },
    /// `linkat(handle, "", AT_EMPTY_PATH)` to the new name `to`.
    LinkHandle {
        app: usize,
        handle: u32,
        to: String,
    },
    Chmod {
        app: usize,
        path: String,
        perm: u32,
    },
    Rename {
        app: usize,
        from: String,
        to: String,
    },
    Exchange {
        app: usize,
        a: String,
        b: String,
    },
    /// Sets extended attribute `name` to `write_data(pattern, 0, len)`.
    SetXattr {
        app: usize,
        path: String,
        name: String,
        pattern: u32,
        len: u64,
    },
    RemoveXattr {
        app: usize,
        path: String,
        name: String,
    },
    Link {
        app: usize,
        from: String,
        to: String,
    },
    Symlink {
        app: usize,
        path: String,
        target: String,
    },
    Unlink {
        app: usize,
        path: String,
    },
    Fsync {
        app: usize,
        file: Target,
    },
    Close {
        app: usize,
        handle: u32,
    },
    /// `Engine::checkpoint` (`mcfs ctl checkpoint`).
    Checkpoint,
    /// Advance the clock, then `Engine::tick` (the background checkpointer).
    Tick {
        seconds: u64,
    },
    /// `Engine::user_input`: a user operation (feeds the idle predictor).
    Input,
    /// `Engine::set_battery`: below the low mark every app is in sync mode.
    Battery {
        percent: u8,
    },
    /// `Engine::shutdown` (orderly stop); the last step of a workload.
    Shutdown,
    /// The engine mounts here; the steps before it are made directly in the
    /// backing store (data that predates the mount). Without this step the
    /// engine mounts before the first step.
    Mount,
}

/// The bytes a write step stores: each byte depends on the pattern and its
/// position in the file and is never zero, so a lost, torn or misplaced
/// write cannot look like a correct one, nor like a hole.
pub fn write_data(pattern: u32, offset: u64, len: u64) -> Vec<u8> {
    (offset..offset + len)
        .map(|p| (((p.wrapping_mul(7) ^ (pattern as u64).wrapping_mul(0x9e37)) >> 1) % 251 + 1) as u8)
        .collect()
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Path(p) => write!(f, "{p}"),
            Target::Handle(h) => write!(f, "h{h}"),
        }
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Mkdir { app, path, perm } => write!(f, "a{app} mkdir {path} {perm:o}"),
            Step::Rmdir { app, path } => write!(f, "a{app} rmdir {path}"),
            Step::Create { app, path, perm, open } => {
                write!(f, "a{app} create {path} {perm:o}")?;
                match open {
                    Some(h) => write!(f, " h{h}"),
                    None => Ok(()),
                }
            }
            Step::Write { app, file, offset, len, pattern } => {
                write!(f, "a{app} write {file} @{offset}+{len} #{pattern}")
            }
            Step::Truncate { app, file, size } => write!(f, "a{app} truncate {file} {size}"),
            Step::Punch { app, file, offset, len } => write!(f, "a{app} punch {file} @{offset}+{len}"),
            Step::ZeroRange { app, file, offset, len, keep_size } => {
                write!(f, "a{app} zero {file} @{offset}+{len}{}", if *keep_size { " keep" } else { "" })
            }
            Step::Tmpfile { app, dir, perm, handle } => write!(f, "a{app} tmpfile {dir} {perm:o} h{handle}"),
            Step::LinkHandle { app, handle, to } => write!(f, "a{app} linkh h{handle} {to}"),
            Step::Chmod { app, path, perm } => write!(f, "a{app} chmod {path} {perm:o}"),
            Step::Rename { app, from, to } => write!(f, "a{app} rename {from} {to}"),
            Step::Exchange { app, a, b } => write!(f, "a{app} exchange {a} {b}"),
            Step::SetXattr { app, path, name, pattern, len } => {
                write!(f, "a{app} setxattr {path} {name} #{pattern}+{len}")
            }
            Step::RemoveXattr { app, path, name } => write!(f, "a{app} rmxattr {path} {name}"),
            Step::Link { app, from, to } => write!(f, "a{app} link {from} {to}"),
            Step::Symlink { app, path, target } => write!(f, "a{app} symlink {path} {target}"),
            Step::Unlink { app, path } => write!(f, "a{app} unlink {path}"),
            Step::Fsync { app, file } => write!(f, "a{app} fsync {file}"),
            Step::Close { app, handle } => write!(f, "a{app} close h{handle}"),
            Step::Checkpoint => write!(f, "checkpoint"),
            Step::Tick { seconds } => write!(f, "tick {seconds}"),
            Step::Input => write!(f, "input"),
            Step::Battery { percent } => write!(f, "battery {percent}"),
            Step::Shutdown => write!(f, "shutdown"),
            Step::Mount => write!(f, "mount"),
        }
    }
}

/// The compact form of a whole script: steps separated by `; `.
pub fn script_text(steps: &[Step]) -> String {
    steps.iter().map(Step::to_string).collect::<Vec<_>>().join("; ")
}

/// Parses `script_text` output (steps separated by `;` or new lines).
pub fn parse(text: &str) -> Result<Vec<Step>, String> {
    text.split([';', '\n']).map(str::trim).filter(|s| !s.is_empty()).map(parse_step).collect()
}

fn parse_step(text: &str) -> Result<Step, String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let bad = || format!("cannot parse step \"{text}\"");
    let num = |w: &str| w.parse::<u64>().map_err(|_| bad());
    let octal = |w: &str| u32::from_str_radix(w, 8).map_err(|_| bad());
    let handle = |w: &str| w.strip_prefix('h').ok_or_else(bad).and_then(|n| n.parse::<u32>().map_err(|_| bad()));
    let range = |w: &str| -> Result<(u64, u64), String> {
        let (off, len) = w.strip_prefix('@').and_then(|r| r.split_once('+')).ok_or_else(bad)?;
        Ok((num(off)?, num(len)?))
    };
    let target = |w: &str| match handle(w) {
        Ok(h) => Target::Handle(h),
        Err(_) => Target::Path(w.to_string()),
    };
    match words.as_slice() {
        ["checkpoint"] => return Ok(Step::Checkpoint),
        ["shutdown"] => return Ok(Step::Shutdown),
        ["mount"] => return Ok(Step::Mount),
        ["input"] => return Ok(Step::Input),
        ["tick", s] => return Ok(Step::Tick { seconds: num(s)? }),
        ["battery", p] => return Ok(Step::Battery { percent: p.parse().map_err(|_| bad())? }),
        _ => {}
    }
    let (app, rest) = match words.split_first() {
        Some((first, rest)) => (first.strip_prefix('a').ok_or_else(bad)?.parse::<usize>().map_err(|_| bad())?, rest),
        None => return Err(bad()),
    };
    let s = |w: &&str| w.to_string();
    Ok(match rest {
        ["mkdir", p, m] => Step::Mkdir { app, path: s(p), perm: octal(m)? },
        ["rmdir", p] => Step::Rmdir { app, path: s(p) },
        ["create", p, m] => Step::Create { app, path: s(p), perm: octal(m)?, open: None },
        ["create", p, m, h] => Step::Create { app, path: s(p), perm: octal(m)?, open: Some(handle(h)?) },
        ["write", file, at, pat] => {
            let (offset, len) = range(at)?;
            let pattern = pat.strip_prefix('#').ok_or_else(bad)?.parse().map_err(|_| bad())?;
            Step::Write { app, file: target(file), offset, len, pattern }
        }
        ["punch", file, at] => {
            let (offset, len) = range(at)?;
            Step::Punch { app, file: target(file), offset, len }
        }
        ["zero", file, at, keep @ ..] if keep.is_empty() || keep == ["keep"] => {
            let (offset, len) = range(at)?;
            Step::ZeroRange { app, file: target(file), offset, len, keep_size: !keep.is_empty() }
        }
        ["tmpfile", dir, m, h] => Step::Tmpfile { app, dir: s(dir), perm: octal(m)?, handle: handle(h)? },
        ["linkh", h, to] => Step::LinkHandle { app, handle: handle(h)?, to: s(to) },
        ["truncate", file, size] => Step::Truncate { app, file: target(file), size: num(size)? },
        ["chmod", p, m] => Step::Chmod { app, path: s(p), perm: octal(m)? },
        ["rename", a, b] => Step::Rename { app, from: s(a), to: s(b) },
        ["exchange", a, b] => Step::Exchange { app, a: s(a), b: s(b) },
        ["setxattr", p, name, value] => {
            let (pat, len) = value.strip_prefix('#').and_then(|v| v.split_once('+')).ok_or_else(bad)?;
            let pattern = pat.parse().map_err(|_| bad())?;
            Step::SetXattr { app, path: s(p), name: s(name), pattern, len: num(len)? }
        }
        ["rmxattr", p, name] => Step::RemoveXattr { app, path: s(p), name: s(name) },
        ["link", a, b] => Step::Link { app, from: s(a), to: s(b) },
        ["symlink", p, t] => Step::Symlink { app, path: s(p), target: s(t) },
        ["unlink", p] => Step::Unlink { app, path: s(p) },
        ["fsync", file] => Step::Fsync { app, file: target(file) },
        ["close", h] => Step::Close { app, handle: handle(h)? },
        _ => return Err(bad()),
    })
}
