//! Importer for `strace -f -tt -y` logs (also `-ttt`, and `[pid N]` prefixes of strace writing to a terminal).
//!
//! Each completed, successful file syscall becomes one or two events; every other line is skipped. `-y` makes
//! strace print the path behind every fd (`3</data/x.db>`), so events carry paths without replaying the fd
//! table. What strace does not print is reconstructed: the file position of `read`/`write` (tracked per fd
//! and path, moved by `lseek`; `O_APPEND` writes go to the size seen so far) and the app (the basename of the
//! last `execve` of the process, inherited through `clone`/`fork`). A call split into `<unfinished ...>` and
//! `<... resumed>` lines is joined and stamped with the time of the line that completes it, so output times
//! never go backwards while the log's do not.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::io::BufRead;
use std::sync::Arc;

use super::workdirs::{join, WorkDirs};
use crate::error::TraceError;
use crate::lines::LineReader;
use crate::timefmt::{parse_decimal, NANOS_PER_SECOND};
use crate::trace::{EventKind, PathBytes, TraceEvent};

/// What to keep and how to name it.
#[derive(Debug, Clone)]
pub struct StraceOptions {
    /// App of processes whose `execve` is not in the log.
    pub default_app: String,
    /// Keep only events whose paths start with one of these prefixes; when empty, keep every absolute path
    /// outside `/proc/`, `/sys/` and `/dev/` (pipes and sockets never have absolute paths).
    pub path_prefixes: Vec<PathBytes>,
    /// Working directory of processes whose own the log does not show (no `chdir`, no `AT_FDCWD</dir>`).
    pub cwd: Option<PathBytes>,
}

impl Default for StraceOptions {
    fn default() -> Self {
        StraceOptions { default_app: "strace".into(), path_prefixes: Vec::new(), cwd: None }
    }
}

/// Why a successful call on a file gave no event (counted in [`StraceImporter::skipped`]).
pub mod skip {
    /// The descriptor's file was unlinked while open (`3</x>(deleted)`): it has no name a trace can use.
    pub const DELETED: &str = "file deleted while open";
    /// A relative path of a process whose working directory the log does not show (give `--cwd`).
    pub const UNKNOWN_CWD: &str = "relative path, working directory unknown";
    /// `renameat2(..., RENAME_EXCHANGE)`: no trace event swaps two names.
    pub const EXCHANGE: &str = "RENAME_EXCHANGE";
    /// Making, renaming or removing a symbolic link: the trace format has no symbolic links (calls through
    /// one carry the path it leads to).
    pub const SYMLINK: &str = "symbolic link";
}

/// A path argument made absolute, or the reason it cannot be.
type Resolved = Result<PathBytes, &'static str>;

const AT_FDCWD: i64 = -100;
const NANOS_PER_DAY: u64 = 86_400 * NANOS_PER_SECOND;

/// Streams events out of an strace log.
pub struct StraceImporter<R: BufRead> {
    lines: LineReader<R>,
    options: StraceOptions,
    /// Start of an `<unfinished ...>` call, by pid.
    pending: HashMap<u32, String>,
    /// App of each process whose `execve` is in the log (shared with its children and its events).
    apps: HashMap<u32, Arc<str>>,
    /// `options.default_app`, shared the same way.
    default_app: Arc<str>,
    /// File position by (fd, path) for calls without an explicit offset.
    positions: HashMap<(i64, PathBytes), u64>,
    append_fds: HashSet<(i64, PathBytes)>,
    /// Largest end offset written or size set, by path: where `O_APPEND` writes land.
    sizes: HashMap<PathBytes, u64>,
    dirs: WorkDirs,
    /// Symbolic links the log made, so that removing or renaming one gives no event either.
    symlinks: HashSet<PathBytes>,
    skipped: BTreeMap<&'static str, u64>,
    /// Days added to `HH:MM:SS` stamps after the log crossed midnight.
    day_ns: u64,
    last_clock_ns: Option<u64>,
    queue: VecDeque<TraceEvent>,
    done: bool,
}

/// A parsed, completed call.
struct Call<'a> {
    pid: u32,
    time_ns: u64,
    name: &'a str,
    args: Vec<&'a str>,
    ret: i64,
    /// The `<path>` strace printed after a returned fd, and whether it was marked deleted.
    ret_path: Option<(PathBytes, bool)>,
}

/// An fd argument with the path `-y` printed for it.
struct Fd {
    fd: i64,
    path: PathBytes,
    deleted: bool,
}

impl<R: BufRead> StraceImporter<R> {
    pub fn new(input: R, options: StraceOptions) -> Self {
        StraceImporter {
            lines: LineReader::new(input),
            dirs: WorkDirs::new(options.cwd.clone()),
            symlinks: HashSet::new(),
            skipped: BTreeMap::new(),
            default_app: options.default_app.as_str().into(),
            options,
            pending: HashMap::new(),
            apps: HashMap::new(),
            positions: HashMap::new(),
            append_fds: HashSet::new(),
            sizes: HashMap::new(),
            day_ns: 0,
            last_clock_ns: None,
            queue: VecDeque::new(),
            done: false,
        }
    }

    /// Successful calls on files that gave no event, by reason (the `skip` constants).
    pub fn skipped(&self) -> &BTreeMap<&'static str, u64> {
        &self.skipped
    }

    fn skip(&mut self, reason: &'static str) {
        *self.skipped.entry(reason).or_default() += 1;
    }

    /// Counts a call on a deleted file or a symbolic link, if its path is one the user wants.
    fn skip_kept(&mut self, path: &[u8], reason: &'static str) {
        if self.keep(path) {
            self.skip(reason);
        }
    }

    /// Path argument `index` made absolute: against the directory fd at `dirfd_index` (`*at` calls) or the
    /// process's working directory.
    fn path_arg(&self, call: &Call<'_>, dirfd_index: Option<usize>, index: usize) -> Result<Resolved, String> {
        let path = string_arg(arg(call, index)?)?;
        let Some(dirfd) = dirfd_index.filter(|_| !path.starts_with(b"/")) else {
            return Ok(self.dirs.absolute(call.pid, &path).ok_or(skip::UNKNOWN_CWD));
        };
        if arg(call, dirfd)? == "AT_FDCWD" {
            return Ok(self.dirs.absolute(call.pid, &path).ok_or(skip::UNKNOWN_CWD));
        }
        let dir = fd_arg(call, dirfd)?;
        Ok(if dir.deleted { Err(skip::DELETED) } else { Ok(join(&dir.path, &path)) })
    }

    /// Two path arguments, both resolved or the reason one is not.
    fn path_args(
        &self,
        call: &Call<'_>,
        first: (Option<usize>, usize),
        second: (Option<usize>, usize),
    ) -> Result<Result<(PathBytes, PathBytes), &'static str>, String> {
        let a = self.path_arg(call, first.0, first.1)?;
        let b = self.path_arg(call, second.0, second.1)?;
        Ok(a.and_then(|a| b.map(|b| (a, b))))
    }

    /// `strace -y` prints the working directory as `AT_FDCWD</dir>`: the most recent word on it.
    fn learn_cwd(&mut self, call: &Call<'_>) {
        let shown = call.args.iter().find_map(|a| a.strip_prefix("AT_FDCWD<")?.strip_suffix('>'));
        if let Some(dir) = shown.and_then(|d| decode_angle(d).ok()) {
            self.dirs.set(call.pid, &dir);
        }
    }

    /// Reads lines until at least one event is queued or the input ends.
    fn fill(&mut self) -> Result<(), TraceError> {
        while self.queue.is_empty() {
            let Some(line) = self.lines.next_line()? else { return Ok(()) };
            let line = String::from_utf8_lossy(line).into_owned();
            self.handle_line(&line).map_err(|r| TraceError::at(self.lines.position(), r))?;
        }
        Ok(())
    }

    fn handle_line(&mut self, line: &str) -> Result<(), String> {
        let line = line.trim_end();
        if line.is_empty() || line.starts_with("strace: ") {
            return Ok(());
        }
        let (pid, rest) = split_pid(line)?;
        let (stamp, rest) = rest.split_once(' ').ok_or("expected a timestamp after the pid (run strace with -tt)")?;
        let time_ns = self.clock(stamp)?;
        let rest = rest.trim_start();
        if rest.starts_with("+++ ") || rest.starts_with("--- ") {
            return Ok(()); // exits and signals
        }
        let text = if let Some(resumed) = rest.strip_prefix("<... ") {
            let (_, tail) = resumed.split_once(" resumed>").ok_or("'<...' without ' resumed>'")?;
            // A resume whose start is not in the log (strace attached mid-call) tells nothing usable.
            let Some(head) = self.pending.remove(&pid) else { return Ok(()) };
            head + tail
        } else {
            rest.to_string()
        };
        if let Some(head) = text.strip_suffix("<unfinished ...>") {
            self.pending.insert(pid, head.to_string());
            return Ok(());
        }
        let Some(call) = parse_call(pid, time_ns, &text)? else { return Ok(()) };
        self.apply(&call)
    }

    /// Nanoseconds from a `HH:MM:SS.frac` (`-tt`) or `SECONDS.frac` (`-ttt`) stamp.
    fn clock(&mut self, stamp: &str) -> Result<u64, String> {
        let bad = || format!("bad timestamp '{stamp}' (expected HH:MM:SS.micro from strace -tt)");
        let parts: Vec<&str> = stamp.split(':').collect();
        let ns = match parts.as_slice() {
            [secs] => return parse_decimal(secs, NANOS_PER_SECOND).map_err(|_| bad()),
            [h, m, s] => {
                let h: u64 = h.parse().map_err(|_| bad())?;
                let m: u64 = m.parse().map_err(|_| bad())?;
                let s = parse_decimal(s, NANOS_PER_SECOND).map_err(|_| bad())?;
                if h > 23 || m > 59 || s >= 61 * NANOS_PER_SECOND {
                    return Err(bad());
                }
                (h * 3600 + m * 60) * NANOS_PER_SECOND + s
            }
            _ => return Err(bad()),
        };
        // A wall-clock stamp more than half a day earlier than the last one means the log crossed midnight.
        if self.last_clock_ns.is_some_and(|last| ns + NANOS_PER_DAY / 2 < last) {
            self.day_ns += NANOS_PER_DAY;
        }
        self.last_clock_ns = Some(ns);
        Ok(self.day_ns + ns)
    }

    fn keep(&self, path: &[u8]) -> bool {
        if self.options.path_prefixes.is_empty() {
            path.starts_with(b"/") && !["/proc/", "/sys/", "/dev/"].iter().any(|p| path.starts_with(p.as_bytes()))
        } else {
            self.options.path_prefixes.iter().any(|p| path.starts_with(p))
        }
    }

    fn emit(&mut self, call: &Call<'_>, kind: EventKind) {
        let app = self.apps.get(&call.pid).unwrap_or(&self.default_app).clone();
        self.queue.push_back(TraceEvent { time_ns: call.time_ns, app, pid: call.pid, kind });
    }

    fn grow(&mut self, path: &[u8], end: u64) {
        let size = self.sizes.entry(path.into()).or_insert(0);
        *size = (*size).max(end);
    }

    /// Turns a completed call into events and bookkeeping.
    fn apply(&mut self, call: &Call<'_>) -> Result<(), String> {
        self.learn_cwd(call);
        match call.name {
            "execve" | "execveat" => {
                let arg = if call.name == "execve" { 0 } else { 1 };
                let program = string_arg(call.args.get(arg).copied().unwrap_or(""))?;
                let base = program.rsplit(|&b| b == b'/').next().unwrap_or(&program);
                self.apps.insert(call.pid, String::from_utf8_lossy(base).into());
            }
            "clone" | "clone3" | "fork" | "vfork" => {
                if let Ok(child) = u32::try_from(call.ret) {
                    if let Some(app) = self.apps.get(&call.pid).cloned() {
                        self.apps.insert(child, app);
                    }
                    self.dirs.inherit(call.pid, child);
                }
            }
            "chdir" => match self.path_arg(call, None, 0)? {
                Ok(dir) => self.dirs.set(call.pid, &dir),
                Err(reason) => self.skip(reason),
            },
            "fchdir" => {
                let dir = fd_arg(call, 0)?;
                self.dirs.set(call.pid, &dir.path);
            }
            "open" | "openat" | "creat" => self.open(call)?,
            "read" | "readv" | "write" | "writev" | "pread64" | "preadv" | "preadv2" | "pwrite64" | "pwritev"
            | "pwritev2" => self.transfer(call)?,
            "lseek" => {
                let Fd { fd, path, .. } = fd_arg(call, 0)?;
                self.positions.insert((fd, path), call.ret as u64);
            }
            "fsync" | "fdatasync" | "close" | "ftruncate" => self.fd_op(call)?,
            "truncate" => {
                let size = number_arg(call, 1)?;
                match self.path_arg(call, None, 0)? {
                    Ok(path) if self.keep(&path) => {
                        self.sizes.insert(path.clone(), size);
                        self.emit(call, EventKind::Truncate { path, size });
                    }
                    Ok(_) => {}
                    Err(reason) => self.skip(reason),
                }
            }
            "unlink" | "rmdir" | "mkdir" => {
                let path = self.path_arg(call, None, 0)?;
                self.emit_path_op(call, path, call.name == "unlink", call.name == "mkdir");
            }
            "unlinkat" | "mkdirat" => {
                let path = self.path_arg(call, Some(0), 1)?;
                let is_mkdir = call.name == "mkdirat";
                let removes_dir = !is_mkdir && arg(call, 2)?.contains("AT_REMOVEDIR");
                self.emit_path_op(call, path, !is_mkdir && !removes_dir, is_mkdir);
            }
            "rename" | "renameat" | "renameat2" => {
                let paths = if call.name == "rename" {
                    self.path_args(call, (None, 0), (None, 1))?
                } else {
                    self.path_args(call, (Some(0), 1), (Some(2), 3))?
                };
                let exchange = call.name == "renameat2" && arg(call, 4)?.contains("RENAME_EXCHANGE");
                match paths {
                    Ok((from, to)) => self.rename(call, from, to, exchange),
                    Err(reason) => self.skip(reason),
                }
            }
            "link" | "linkat" => {
                let paths = if call.name == "link" {
                    self.path_args(call, (None, 0), (None, 1))?
                } else {
                    self.path_args(call, (Some(0), 1), (Some(2), 3))?
                };
                match paths {
                    Ok((from, to)) if self.keep(&from) && self.keep(&to) => {
                        if let Some(&size) = self.sizes.get(&from) {
                            self.sizes.insert(to.clone(), size);
                        }
                        self.emit(call, EventKind::Link { from, to });
                    }
                    Ok(_) => {}
                    Err(reason) => self.skip(reason),
                }
            }
            "symlink" | "symlinkat" => {
                let path = if call.name == "symlink" {
                    self.path_arg(call, None, 1)?
                } else {
                    self.path_arg(call, Some(1), 2)?
                };
                match path {
                    Ok(path) => {
                        self.skip_kept(&path, skip::SYMLINK);
                        self.symlinks.insert(path);
                    }
                    Err(reason) => self.skip(reason),
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// `fsync`, `fdatasync`, `close` and `ftruncate`: calls on a descriptor's file.
    fn fd_op(&mut self, call: &Call<'_>) -> Result<(), String> {
        let Fd { fd, path, deleted } = fd_arg(call, 0)?;
        if call.name == "close" {
            self.positions.remove(&(fd, path.clone()));
            self.append_fds.remove(&(fd, path.clone()));
        }
        if deleted {
            self.skip_kept(&path, skip::DELETED);
            return Ok(());
        }
        if self.keep(&path) {
            let kind = match call.name {
                "fsync" => EventKind::Fsync { path },
                "fdatasync" => EventKind::Fdatasync { path },
                "close" => EventKind::Close { path },
                _ => {
                    let size = number_arg(call, 1)?;
                    self.sizes.insert(path.clone(), size);
                    EventKind::Truncate { path, size }
                }
            };
            self.emit(call, kind);
        }
        Ok(())
    }

    fn rename(&mut self, call: &Call<'_>, from: PathBytes, to: PathBytes, exchange: bool) {
        if exchange {
            let (a, b) = (self.sizes.remove(&from), self.sizes.remove(&to));
            if let Some(size) = a {
                self.sizes.insert(to.clone(), size);
            }
            if let Some(size) = b {
                self.sizes.insert(from.clone(), size);
            }
            self.skip_kept(&from, skip::EXCHANGE);
            return;
        }
        if self.symlinks.remove(&from) {
            self.skip_kept(&from, skip::SYMLINK);
            self.symlinks.insert(to);
            return;
        }
        self.symlinks.remove(&to);
        if self.keep(&from) && self.keep(&to) {
            if let Some(size) = self.sizes.remove(&from) {
                self.sizes.insert(to.clone(), size);
            }
            self.emit(call, EventKind::Rename { from, to });
        }
    }

    fn emit_path_op(&mut self, call: &Call<'_>, path: Resolved, unlink: bool, mkdir: bool) {
        let path = match path {
            Ok(path) => path,
            Err(reason) => return self.skip(reason),
        };
        if unlink && self.symlinks.remove(&path) {
            return self.skip_kept(&path, skip::SYMLINK);
        }
        if !self.keep(&path) {
            return;
        }
        let kind = match (unlink, mkdir) {
            (true, _) => {
                self.sizes.remove(&path);
                EventKind::Unlink { path }
            }
            (false, true) => EventKind::Mkdir { path },
            (false, false) => EventKind::Rmdir { path },
        };
        self.emit(call, kind);
    }

    fn open(&mut self, call: &Call<'_>) -> Result<(), String> {
        let (flags, dirfd, index) = match call.name {
            "creat" => ("O_CREAT|O_TRUNC", None, 0),
            "open" => (arg(call, 1)?, None, 0),
            _ => (arg(call, 2)?, Some(0), 1),
        };
        if flags.contains("O_DIRECTORY") || flags.contains("O_PATH") {
            return Ok(());
        }
        // -y prints the resolved path of the new fd; fall back to the argument.
        let (path, deleted) = match &call.ret_path {
            Some(shown) => shown.clone(),
            None => match self.path_arg(call, dirfd, index)? {
                Ok(path) => (path, false),
                Err(reason) => {
                    self.skip(reason);
                    return Ok(());
                }
            },
        };
        let fd = call.ret;
        self.positions.insert((fd, path.clone()), 0);
        if flags.contains("O_APPEND") {
            self.append_fds.insert((fd, path.clone()));
        } else {
            self.append_fds.remove(&(fd, path.clone()));
        }
        if deleted {
            // An `O_TMPFILE` file: nameless from the start.
            self.skip_kept(&path, skip::DELETED);
            return Ok(());
        }
        if !self.keep(&path) {
            return Ok(());
        }
        let kind = if flags.contains("O_CREAT") {
            EventKind::Create { path: path.clone() }
        } else {
            EventKind::Open { path: path.clone() }
        };
        self.emit(call, kind);
        if flags.contains("O_TRUNC") {
            self.sizes.insert(path.clone(), 0);
            self.emit(call, EventKind::Truncate { path, size: 0 });
        }
        Ok(())
    }

    fn transfer(&mut self, call: &Call<'_>) -> Result<(), String> {
        let Fd { fd, path, deleted } = fd_arg(call, 0)?;
        let len = call.ret as u64; // failed calls never get here
        let explicit = call.name.starts_with('p');
        let offset = if explicit {
            number_arg(call, 3)?
        } else {
            let key = (fd, path.clone());
            let start = if call.name.starts_with('w') && self.append_fds.contains(&key) {
                self.sizes.get(&path).copied().unwrap_or(0)
            } else {
                self.positions.get(&key).copied().unwrap_or(0)
            };
            self.positions.insert(key, start.saturating_add(len));
            start
        };
        let is_write = call.name.contains("write");
        if is_write {
            self.grow(&path, offset.saturating_add(len));
        }
        if deleted {
            self.skip_kept(&path, skip::DELETED);
        } else if self.keep(&path) {
            let kind =
                if is_write { EventKind::Write { path, offset, len } } else { EventKind::Read { path, offset, len } };
            self.emit(call, kind);
        }
        Ok(())
    }
}

impl<R: BufRead> Iterator for StraceImporter<R> {
    type Item = Result<TraceEvent, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if let Err(e) = self.fill() {
            self.done = true;
            return Some(Err(e));
        }
        let event = self.queue.pop_front();
        self.done = event.is_none();
        event.map(Ok)
    }
}

/// Splits off the pid (`1234 ` from `-o`/`-ff` logs, `[pid 1234] ` on a terminal); 0 when absent.
fn split_pid(line: &str) -> Result<(u32, &str), String> {
    if let Some(rest) = line.strip_prefix("[pid ") {
        let (pid, rest) = rest.split_once(']').ok_or("unterminated '[pid N]' prefix")?;
        let pid = pid.trim().parse().map_err(|_| format!("bad pid '{pid}'"))?;
        return Ok((pid, rest.trim_start()));
    }
    match line.split_once(' ') {
        Some((first, rest)) if first.bytes().all(|b| b.is_ascii_digit()) => {
            Ok((first.parse().map_err(|_| format!("bad pid '{first}'"))?, rest.trim_start()))
        }
        _ => Ok((0, line)),
    }
}

/// Parses `name(args) = ret ...`; `None` for calls that failed or did not return (`= ?`).
fn parse_call(pid: u32, time_ns: u64, text: &str) -> Result<Option<Call<'_>>, String> {
    let open = text.find('(').ok_or_else(|| format!("unrecognized line '{text}'"))?;
    let name = &text[..open];
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return Err(format!("unrecognized syscall name '{name}'"));
    }
    let (args, after) = split_args(&text[open + 1..]).ok_or_else(|| format!("unbalanced arguments in '{text}'"))?;
    let ret_text = after.trim_start().strip_prefix('=').ok_or_else(|| format!("missing '= result' in '{text}'"))?;
    let ret_text = ret_text.trim_start();
    if ret_text.starts_with('?') {
        return Ok(None);
    }
    let digits_end = ret_text
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || (i == 0 && c == '-')))
        .map_or(ret_text.len(), |(i, _)| i);
    let (number, tail) = ret_text.split_at(digits_end);
    // Hex results (mmap addresses) parse as 0 here; no call we import returns one.
    let ret: i64 =
        if tail.starts_with('x') { 0 } else { number.parse().map_err(|_| format!("bad result '{ret_text}'"))? };
    if ret < 0 {
        return Ok(None);
    }
    let ret_path = match tail.strip_prefix('<') {
        Some(p) => Some(shown_path(p).ok_or_else(|| format!("unterminated <path> in result '{ret_text}'"))??),
        None => None,
    };
    Ok(Some(Call { pid, time_ns, name, args, ret, ret_path }))
}

/// Splits the argument list (after the opening parenthesis) at top-level commas, up to the closing
/// parenthesis; returns the trimmed arguments and the text after it. The ` => ` strace puts between an
/// argument and its changed value (`clone3({...} => {parent_tid=[2]}, 88)`) is no bracket.
fn split_args(text: &str) -> Option<(Vec<&str>, &str)> {
    let bytes = text.as_bytes();
    let (mut depth, mut in_string, mut start, mut args) = (0usize, false, 0usize, Vec::new());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            match b {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
        } else {
            match b {
                b'"' => in_string = true,
                b'=' if bytes.get(i + 1) == Some(&b'>') => i += 1,
                b'(' | b'[' | b'{' | b'<' => depth += 1,
                b']' | b'}' | b'>' => depth = depth.checked_sub(1)?,
                b')' if depth == 0 => {
                    let last = text[start..i].trim();
                    if !last.is_empty() || !args.is_empty() {
                        args.push(last);
                    }
                    return Some((args, &text[i + 1..]));
                }
                b')' => depth -= 1,
                b',' if depth == 0 => {
                    args.push(text[start..i].trim());
                    start = i + 1;
                }
                _ => {}
            }
        }
        i += 1;
    }
    None
}

fn arg<'a>(call: &Call<'a>, index: usize) -> Result<&'a str, String> {
    call.args.get(index).copied().ok_or_else(|| format!("{} needs argument {}", call.name, index + 1))
}

fn number_arg(call: &Call<'_>, index: usize) -> Result<u64, String> {
    let text = arg(call, index)?;
    text.parse().map_err(|_| format!("{}: argument {} '{text}' is not a non-negative number", call.name, index + 1))
}

/// An fd argument with its `-y` path: `3</data/x.db>` or `AT_FDCWD</data>`; a file deleted while open is
/// `3</x>(deleted)` (strace 5.x on) or `3</x (deleted)>` (before).
fn fd_arg(call: &Call<'_>, index: usize) -> Result<Fd, String> {
    let text = arg(call, index)?;
    let missing = || format!("{}: fd argument '{text}' has no <path> (run strace with -y)", call.name);
    let (fd, rest) = text.split_once('<').ok_or_else(missing)?;
    let (path, deleted) = match shown_path(rest) {
        Some(Ok(shown)) if rest.ends_with('>') || rest.ends_with(DELETED_MARK) => shown,
        Some(Err(e)) => return Err(e),
        _ => return Err(missing()),
    };
    let fd = if fd == "AT_FDCWD" { AT_FDCWD } else { fd.parse().map_err(|_| format!("bad fd '{fd}'"))? };
    Ok(Fd { fd, path, deleted })
}

/// What strace prints after a path unlinked while its file is open.
const DELETED_MARK: &str = "(deleted)";

/// The path of `path>` or `path>(deleted)` (the text after a `<`) and whether it is marked deleted;
/// `None` without the closing `>`.
fn shown_path(text: &str) -> Option<Result<(PathBytes, bool), String>> {
    let (inner, after) = text.split_once('>')?;
    let (inner, deleted_inside) = match inner.strip_suffix(" (deleted)") {
        Some(inner) => (inner, true),
        None => (inner, false),
    };
    Some(decode_angle(inner).map(|path| (path, deleted_inside || after.starts_with(DELETED_MARK))))
}

/// Decodes a `<...>` path, where strace escapes unusual bytes as in strings.
fn decode_angle(inner: &str) -> Result<PathBytes, String> {
    unquote(inner).map_err(|e| format!("path <{inner}>: {e}"))
}

/// Decodes a quoted C string argument (`"..."`, possibly followed by `...` when strace cut it short).
fn string_arg(text: &str) -> Result<PathBytes, String> {
    let inner = text
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix("\"...").or_else(|| t.strip_suffix('"')))
        .ok_or_else(|| format!("expected a quoted string, found '{text}'"))?;
    unquote(inner)
}

/// Undoes strace's C-style escapes: `\n \t \r \v \f \" \\`, `\xHH` and octal `\NNN`.
fn unquote(text: &str) -> Result<PathBytes, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        let escape = *bytes.get(i + 1).ok_or("string ends with a lone backslash")?;
        i += 2;
        let simple = match escape {
            b'n' => Some(b'\n'),
            b't' => Some(b'\t'),
            b'r' => Some(b'\r'),
            b'v' => Some(0x0b),
            b'f' => Some(0x0c),
            b'"' | b'\\' | b'\'' | b'<' | b'>' | b'|' => Some(escape),
            _ => None,
        };
        if let Some(b) = simple {
            out.push(b);
        } else if escape == b'x' {
            let hex = text.get(i..i + 2).ok_or("short \\x escape")?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| format!("bad \\x escape '{hex}'"))?);
            i += 2;
        } else if escape.is_ascii_digit() {
            let end = (i..(i + 2).min(bytes.len()))
                .find(|&j| !(b'0'..=b'7').contains(&bytes[j]))
                .unwrap_or((i + 2).min(bytes.len()));
            let digits = &text[i - 1..end];
            let value = u16::from_str_radix(digits, 8).map_err(|_| format!("bad octal escape '\\{digits}'"))?;
            out.push(u8::try_from(value).map_err(|_| format!("octal escape '\\{digits}' is above 255"))?);
            i = end;
        } else {
            return Err(format!("unknown escape '\\{}'", escape as char));
        }
    }
    Ok(out.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unquote_handles_c_escapes() {
        assert_eq!(&unquote(r#"a\"b\\c\n\x41\101\0"#).unwrap()[..], b"a\"b\\c\nAA\0");
        assert!(unquote(r"\q").is_err());
        assert!(unquote(r"\x4").is_err());
        assert!(unquote(r"\777").is_err());
    }

    #[test]
    fn split_args_respects_nesting_and_strings() {
        let (args, rest) = split_args(r#"3</a,b>, "x,)\"", [1, 2], {a=1}) = 3"#).unwrap();
        assert_eq!(args, vec!["3</a,b>", r#""x,)\"""#, "[1, 2]", "{a=1}"]);
        assert_eq!(rest, " = 3");
        assert_eq!(split_args(") = 0").unwrap().0, Vec::<&str>::new());
        assert!(split_args("3, \"x").is_none());
    }
}
