//! Working directories of the processes of a system-call log, to make the relative paths of their calls
//! absolute (`mkdir("d")`, `unlink(".git/index.lock")`).
//!
//! A process's directory is learned from what the log shows: `chdir`/`fchdir`, the `AT_FDCWD</dir>` that
//! `strace -y` prints, inheritance through `fork`/`clone`, else a directory the user gave for every process.
//! Paths are resolved by name (`.` dropped, `..` removes the name before it, never above `/`), as the trace
//! format names files; symbolic links on the way are not followed.

use std::collections::HashMap;

use crate::trace::PathBytes;

#[derive(Debug, Default)]
pub struct WorkDirs {
    by_pid: HashMap<u32, PathBytes>,
    /// Directory of processes whose own is not in the log.
    default: Option<PathBytes>,
}

impl WorkDirs {
    pub fn new(default: Option<PathBytes>) -> Self {
        WorkDirs { by_pid: HashMap::new(), default: default.map(|d| normalize(&d)) }
    }

    /// `pid` now works in `dir` (an absolute path).
    pub fn set(&mut self, pid: u32, dir: &[u8]) {
        self.by_pid.insert(pid, normalize(dir));
    }

    /// A new process starts where its parent is.
    pub fn inherit(&mut self, parent: u32, child: u32) {
        if let Some(dir) = self.by_pid.get(&parent).cloned() {
            self.by_pid.insert(child, dir);
        }
    }

    /// `path` as an absolute path for `pid`; `None` when it is relative and the directory is unknown.
    pub fn absolute(&self, pid: u32, path: &[u8]) -> Option<PathBytes> {
        if path.starts_with(b"/") {
            return Some(normalize(path));
        }
        let dir = self.by_pid.get(&pid).or(self.default.as_ref())?;
        Some(join(dir, path))
    }
}

/// `path` under the absolute directory `dir`, resolved by name.
pub fn join(dir: &[u8], path: &[u8]) -> PathBytes {
    if path.starts_with(b"/") {
        return normalize(path);
    }
    normalize(&[dir, b"/", path].concat())
}

/// An absolute path with `.`, `..` and repeated slashes resolved by name; `/` for the root.
fn normalize(path: &[u8]) -> PathBytes {
    let mut names: Vec<&[u8]> = Vec::new();
    for name in path.split(|&b| b == b'/') {
        match name {
            b"" | b"." => {}
            b".." => {
                names.pop();
            }
            _ => names.push(name),
        }
    }
    if names.is_empty() {
        return b"/"[..].into();
    }
    names.iter().flat_map(|n| std::iter::once(&b'/').chain(n.iter())).copied().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_resolve_by_name_against_the_process_directory() {
        let mut dirs = WorkDirs::new(None);
        assert_eq!(dirs.absolute(1, b"d"), None, "unknown directory");
        assert_eq!(dirs.absolute(1, b"/a//b/./c/"), Some(b"/a/b/c"[..].into()));
        dirs.set(1, b"/repo/");
        dirs.inherit(1, 2);
        assert_eq!(dirs.absolute(2, b".git/../x/./y"), Some(b"/repo/x/y"[..].into()));
        assert_eq!(dirs.absolute(2, b"../../.."), Some(b"/"[..].into()), "never above the root");
        assert_eq!(WorkDirs::new(Some(b"/home"[..].into())).absolute(9, b"f"), Some(b"/home/f"[..].into()));
    }
}
