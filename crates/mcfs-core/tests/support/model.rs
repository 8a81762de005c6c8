//! The reference model: a plain in-memory file system that applies workload
//! steps by path, with the POSIX rules the workload relies on. It answers two
//! questions for the crash test: what the tree is after a sequence of steps,
//! and into which app's write log the engine puts each step.
//!
//! It refuses a step that is not valid in its current state (or that would
//! break the workload's rule that app `j` changes only `app<j>/` and
//! `shared/`); the driver skips refused steps, so a shrunk or filtered
//! script still runs. A valid step the backing store's limits forbid (too
//! many extended attributes, an unknown namespace, a file too large) is
//! not applied but run: the engine must refuse it with the errno the
//! model names (`refused_with`, asking a `MemBackend` with ext4's limits,
//! the store the crash test runs on).

use super::script::{write_data, Step, Target};
use super::tree::{link_files, Node, Tree, Xattrs};
use mcfs_core::backend::errno_of;
use mcfs_core::{Backend, FileKind, MemBackend};
use std::collections::{BTreeMap, HashMap};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

type Fid = u64;

#[derive(Clone)]
struct File {
    data: Arc<Vec<u8>>,
    perm: u32,
    xattrs: Xattrs,
    /// The app that created it: its data steps go to that app's log.
    app: usize,
    names: u32,
}

#[derive(Clone)]
enum Name {
    File(Fid),
    Dir { perm: u32, xattrs: Xattrs },
    Symlink(String),
}

#[derive(Clone, Default)]
pub struct Model {
    names: BTreeMap<PathBuf, Name>,
    files: HashMap<Fid, File>,
    handles: HashMap<u32, Fid>,
    next_fid: Fid,
}

/// Top-level directory every app may change besides its own.
pub const SHARED: &str = "shared";

/// The top-level directory of app `j`.
pub fn app_dir(j: usize) -> String {
    format!("app{j}")
}

type Refusal = &'static str;

impl Model {
    /// Applies `step`. Returns the app whose write log the engine records it
    /// in (`None` for steps that log nothing), or why the step is refused.
    pub fn apply(&mut self, step: &Step) -> Result<Option<usize>, Refusal> {
        match step {
            Step::Mkdir { app, path, perm } => {
                self.check_new(*app, path)?;
                self.names.insert(path.into(), Name::Dir { perm: perm & 0o7777, xattrs: Xattrs::new() });
                Ok(Some(*app))
            }
            Step::Rmdir { app, path } => {
                self.check_owner(*app, path)?;
                let p = Path::new(path);
                match self.names.get(p) {
                    Some(Name::Dir { .. }) => {}
                    _ => return Err("rmdir of a non-directory"),
                }
                if self.children(p).next().is_some() {
                    return Err("rmdir of a non-empty directory");
                }
                self.names.remove(p);
                Ok(Some(*app))
            }
            Step::Create { app, path, perm, open } => {
                self.check_new(*app, path)?;
                if open.is_some_and(|h| self.handles.contains_key(&h)) {
                    return Err("handle already open");
                }
                let fid = self.new_file(*app, *perm, 1);
                self.names.insert(path.into(), Name::File(fid));
                if let Some(h) = open {
                    self.handles.insert(*h, fid);
                }
                Ok(Some(*app))
            }
            Step::Write { app, file, offset, len, pattern } => {
                let fid = self.file(*app, file)?;
                let f = self.files.get_mut(&fid).expect("live");
                let data = Arc::make_mut(&mut f.data);
                let end = (offset + len) as usize;
                if data.len() < end {
                    data.resize(end, 0);
                }
                data[*offset as usize..end].copy_from_slice(&write_data(*pattern, *offset, *len));
                Ok(Some(f.app))
            }
            Step::Truncate { app, file, size } => {
                let fid = self.file(*app, file)?;
                let f = self.files.get_mut(&fid).expect("live");
                Arc::make_mut(&mut f.data).resize(*size as usize, 0);
                Ok(Some(f.app))
            }
            Step::Punch { app, file, offset, len } | Step::ZeroRange { app, file, offset, len, .. } => {
                let fid = self.file(*app, file)?;
                if *len == 0 {
                    return Err("fallocate of nothing");
                }
                let f = self.files.get_mut(&fid).expect("live");
                let data = Arc::make_mut(&mut f.data);
                let size = data.len() as u64;
                // A punch at or past the end does nothing and logs nothing (ext4).
                if matches!(step, Step::Punch { .. }) && *offset >= size {
                    return Ok(None);
                }
                let end = offset + len;
                if matches!(step, Step::ZeroRange { keep_size: false, .. }) && end > size {
                    data.resize(end as usize, 0);
                }
                let cleared = (*offset).min(data.len() as u64) as usize..end.min(data.len() as u64) as usize;
                data[cleared].fill(0);
                Ok(Some(f.app))
            }
            Step::Tmpfile { app, dir, perm, handle } => {
                self.check_owner(*app, dir)?;
                if !matches!(self.names.get(Path::new(dir)), Some(Name::Dir { .. })) {
                    return Err("tmpfile in a missing directory");
                }
                if self.handles.contains_key(handle) {
                    return Err("handle already open");
                }
                let fid = self.new_file(*app, *perm, 0);
                self.handles.insert(*handle, fid);
                Ok(Some(*app))
            }
            Step::LinkHandle { app, handle, to } => {
                self.check_new(*app, to)?;
                let fid = *self.handles.get(handle).ok_or("handle not open")?;
                let f = self.files.get_mut(&fid).expect("live");
                if top(to) != app_dir(f.app) && top(to) != SHARED {
                    return Err("link of another app's file outside its directories");
                }
                f.names += 1;
                self.names.insert(to.into(), Name::File(fid));
                Ok(Some(*app))
            }
            Step::Chmod { app, path, perm } => {
                self.check_owner(*app, path)?;
                match self.names.get_mut(Path::new(path)) {
                    Some(Name::Dir { perm: p, .. }) => *p = perm & 0o7777,
                    Some(Name::File(fid)) => self.files.get_mut(fid).expect("live").perm = perm & 0o7777,
                    _ => return Err("chmod of a missing path or a symlink"),
                }
                Ok(Some(*app))
            }
            Step::Rename { app, from, to } => {
                self.check_owner(*app, from)?;
                self.check_owner(*app, to)?;
                self.check_parent(to)?;
                if top(from) != top(to) {
                    return Err("rename across top-level directories");
                }
                let (from, to) = (PathBuf::from(from), PathBuf::from(to));
                let source = self.names.get(&from).ok_or("rename of a missing path")?.clone();
                if let Name::Dir { .. } = source {
                    if to.starts_with(&from) {
                        return Err("rename of a directory into itself");
                    }
                }
                match (&source, self.names.get(&to)) {
                    // Two names of one file: rename(2) does nothing, and logs nothing.
                    (Name::File(a), Some(Name::File(b))) if a == b => return Ok(None),
                    (_, None) => {}
                    (Name::Dir { .. }, Some(Name::Dir { .. })) if self.children(&to).next().is_none() => {}
                    (Name::Dir { .. }, Some(_)) | (_, Some(Name::Dir { .. })) => {
                        return Err("rename between a directory and a non-directory, or over a full one")
                    }
                    (_, Some(_)) => {}
                }
                self.remove_name(&to);
                let moved = self.take_subtree(&from);
                self.put_subtree(&to, moved);
                Ok(Some(*app))
            }
            Step::Exchange { app, a, b } => {
                self.check_owner(*app, a)?;
                self.check_owner(*app, b)?;
                if top(a) != top(b) || a == b {
                    return Err("exchange across top-level directories or with itself");
                }
                let (pa, pb) = (PathBuf::from(a), PathBuf::from(b));
                if !self.names.contains_key(&pa) || !self.names.contains_key(&pb) {
                    return Err("exchange of a missing path");
                }
                if pa.starts_with(&pb) || pb.starts_with(&pa) {
                    return Err("exchange of a directory with something inside it");
                }
                let (sa, sb) = (self.take_subtree(&pa), self.take_subtree(&pb));
                self.put_subtree(&pb, sa);
                self.put_subtree(&pa, sb);
                Ok(Some(*app))
            }
            Step::SetXattr { app, path, name, pattern, len } => {
                self.check_owner(*app, path)?;
                self.xattrs_of(path)?.insert(name.into(), write_data(*pattern, 0, *len));
                Ok(Some(*app))
            }
            Step::RemoveXattr { app, path, name } => {
                self.check_owner(*app, path)?;
                self.xattrs_of(path)?.remove(OsStr::new(name)).ok_or("remove of an absent attribute")?;
                Ok(Some(*app))
            }
            Step::Link { app, from, to } => {
                self.check_owner(*app, from)?;
                self.check_new(*app, to)?;
                if top(from) != top(to) {
                    return Err("link across top-level directories");
                }
                let Some(Name::File(fid)) = self.names.get(Path::new(from)).cloned() else {
                    return Err("link of a missing path or a non-file");
                };
                self.files.get_mut(&fid).expect("live").names += 1;
                self.names.insert(to.into(), Name::File(fid));
                Ok(Some(*app))
            }
            Step::Symlink { app, path, target } => {
                self.check_new(*app, path)?;
                self.names.insert(path.into(), Name::Symlink(target.clone()));
                Ok(Some(*app))
            }
            Step::Unlink { app, path } => {
                self.check_owner(*app, path)?;
                match self.names.get(Path::new(path)) {
                    Some(Name::File(_) | Name::Symlink(_)) => {}
                    _ => return Err("unlink of a missing path or a directory"),
                }
                self.remove_name(Path::new(path));
                Ok(Some(*app))
            }
            Step::Fsync { app, file } => {
                self.file(*app, file)?;
                Ok(None)
            }
            Step::Close { handle, .. } => {
                let fid = self.handles.remove(handle).ok_or("close of a handle that is not open")?;
                self.drop_if_gone(fid);
                Ok(None)
            }
            Step::Checkpoint
            | Step::Tick { .. }
            | Step::Input
            | Step::Battery { .. }
            | Step::Shutdown
            | Step::Mount => Ok(None),
        }
    }

    /// The errno the engine must refuse a valid `step` with because the
    /// backing store cannot hold its result; `None` if it can (or if the
    /// step is not valid: `apply` refuses it).
    pub fn refused_with(&self, step: &Step) -> Option<i32> {
        let store = MemBackend::new();
        match step {
            Step::SetXattr { app, path, name, pattern, len } => {
                self.check_owner(*app, path).ok()?;
                let (kind, xattrs) = match self.names.get(Path::new(path))? {
                    Name::Dir { xattrs, .. } => (FileKind::Dir, xattrs),
                    Name::File(fid) => (FileKind::File, &self.files[fid].xattrs),
                    Name::Symlink(_) => return None,
                };
                let mut after = xattrs.clone();
                after.insert(name.into(), write_data(*pattern, 0, *len));
                let set: Vec<(&OsStr, &[u8])> = after.iter().map(|(n, v)| (n.as_os_str(), v.as_slice())).collect();
                store.check_xattrs(kind, &set).err().map(|e| errno_of(&e))
            }
            Step::Truncate { app, file, size } => {
                self.file(*app, file).ok()?;
                (*size > store.limits().max_file_size).then_some(libc::EFBIG)
            }
            _ => None,
        }
    }

    /// A new empty file of `app` with `names` names (the caller adds them).
    fn new_file(&mut self, app: usize, perm: u32, names: u32) -> Fid {
        let fid = self.next_fid;
        self.next_fid += 1;
        let file = File { data: Arc::new(Vec::new()), perm: perm & 0o7777, xattrs: Xattrs::new(), app, names };
        self.files.insert(fid, file);
        fid
    }

    /// The extended attributes of a file or directory (`user.*` ones are
    /// not allowed on symlinks).
    fn xattrs_of(&mut self, path: &str) -> Result<&mut Xattrs, Refusal> {
        match self.names.get_mut(Path::new(path)) {
            Some(Name::Dir { xattrs, .. }) => Ok(xattrs),
            Some(Name::File(fid)) => Ok(&mut self.files.get_mut(fid).expect("live").xattrs),
            _ => Err("xattr on a missing path or a symlink"),
        }
    }

    /// Removes `root` and everything under it; returns them by their path
    /// relative to `root` (`""` for `root` itself).
    fn take_subtree(&mut self, root: &Path) -> Vec<(PathBuf, Name)> {
        let paths: Vec<PathBuf> = self
            .names
            .range(root.to_path_buf()..)
            .map(|(p, _)| p.clone())
            .take_while(|p| p.starts_with(root))
            .collect();
        paths
            .into_iter()
            .map(|p| {
                let name = self.names.remove(&p).expect("listed");
                (p.strip_prefix(root).expect("under root").to_path_buf(), name)
            })
            .collect()
    }

    fn put_subtree(&mut self, root: &Path, entries: Vec<(PathBuf, Name)>) {
        for (rest, name) in entries {
            let path = if rest.as_os_str().is_empty() { root.to_path_buf() } else { root.join(rest) };
            self.names.insert(path, name);
        }
    }

    /// The file a data step is about.
    fn file(&self, app: usize, target: &Target) -> Result<Fid, Refusal> {
        match target {
            Target::Handle(h) => self.handles.get(h).copied().ok_or("handle not open"),
            Target::Path(p) => {
                self.check_owner(app, p)?;
                match self.names.get(Path::new(p)) {
                    Some(Name::File(fid)) => Ok(*fid),
                    _ => Err("not a regular file"),
                }
            }
        }
    }

    /// App `app` may change `path`: it is under its own directory or `shared/`
    /// (or it is that top-level directory itself).
    fn check_owner(&self, app: usize, path: &str) -> Result<(), Refusal> {
        let t = top(path);
        if t == app_dir(app) || t == SHARED {
            Ok(())
        } else {
            Err("path outside the app's directories")
        }
    }

    fn check_parent(&self, path: &str) -> Result<(), Refusal> {
        match Path::new(path).parent() {
            Some(p) if p.as_os_str().is_empty() => Ok(()),
            Some(p) if matches!(self.names.get(p), Some(Name::Dir { .. })) => Ok(()),
            _ => Err("parent is not a directory"),
        }
    }

    fn check_new(&self, app: usize, path: &str) -> Result<(), Refusal> {
        self.check_owner(app, path)?;
        self.check_parent(path)?;
        if self.names.contains_key(Path::new(path)) {
            return Err("path exists");
        }
        Ok(())
    }

    fn children<'a>(&'a self, dir: &'a Path) -> impl Iterator<Item = &'a PathBuf> + 'a {
        self.names
            .range(dir.to_path_buf()..)
            .map(|(p, _)| p)
            .filter(move |p| *p != dir)
            .take_while(move |p| p.starts_with(dir))
    }

    fn remove_name(&mut self, path: &Path) {
        if let Some(Name::File(fid)) = self.names.remove(path) {
            self.files.get_mut(&fid).expect("live").names -= 1;
            self.drop_if_gone(fid);
        }
    }

    fn drop_if_gone(&mut self, fid: Fid) {
        let open = self.handles.values().any(|h| *h == fid);
        if self.files[&fid].names == 0 && !open {
            self.files.remove(&fid);
        }
    }

    /// The whole tree as the crash test compares it.
    pub fn tree(&self) -> Tree {
        let mut tree = Tree::new();
        let mut ids = HashMap::new();
        for (path, name) in &self.names {
            let node = match name {
                Name::Dir { perm, xattrs } => Node::Dir { perm: *perm, xattrs: xattrs.clone() },
                Name::Symlink(target) => Node::Symlink { target: target.into() },
                Name::File(fid) => {
                    let f = &self.files[fid];
                    ids.insert(path.clone(), *fid);
                    Node::File { perm: f.perm, data: Arc::clone(&f.data), xattrs: f.xattrs.clone(), link_of: None }
                }
            };
            tree.insert(path.clone(), node);
        }
        link_files(&mut tree, &ids);
        tree
    }

    // Queries the generator uses to pick valid steps.

    /// Paths under `top` (a top-level directory), of files, directories
    /// (including `top` itself) and symlinks.
    pub fn paths_under(&self, top: &str) -> (Vec<String>, Vec<String>, Vec<String>) {
        let (mut files, mut dirs, mut links) = (Vec::new(), Vec::new(), Vec::new());
        for (p, n) in self.names.range(PathBuf::from(top)..).take_while(|(p, _)| p.starts_with(top)) {
            let s = p.to_string_lossy().into_owned();
            match n {
                Name::File(_) => files.push(s),
                Name::Dir { .. } => dirs.push(s),
                Name::Symlink(_) => links.push(s),
            }
        }
        (files, dirs, links)
    }

    pub fn exists(&self, path: &str) -> bool {
        self.names.contains_key(Path::new(path))
    }

    pub fn is_empty_dir(&self, path: &str) -> bool {
        matches!(self.names.get(Path::new(path)), Some(Name::Dir { .. }))
            && self.children(Path::new(path)).next().is_none()
    }

    pub fn size_of(&self, app: usize, target: &Target) -> Option<u64> {
        self.file(app, target).ok().map(|fid| self.files[&fid].data.len() as u64)
    }

    /// Names of the extended attributes a file or directory has.
    pub fn xattr_names(&self, path: &str) -> Vec<String> {
        let xattrs = match self.names.get(Path::new(path)) {
            Some(Name::Dir { xattrs, .. }) => xattrs,
            Some(Name::File(fid)) => &self.files[fid].xattrs,
            _ => return Vec::new(),
        };
        xattrs.keys().map(|n| n.to_string_lossy().into_owned()).collect()
    }

    /// The open handles, ascending.
    pub fn handles(&self) -> Vec<u32> {
        let mut h: Vec<u32> = self.handles.keys().copied().collect();
        h.sort_unstable();
        h
    }
}

/// The top-level directory a relative path is under.
pub fn top(path: &str) -> &str {
    path.split('/').next().unwrap_or("")
}
