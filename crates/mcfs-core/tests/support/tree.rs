//! `Tree`: the part of a file tree the crash test compares — for every path,
//! its kind, permission bits, full contents (regular files), symlink target,
//! extended attributes (files and directories), and which earlier path it
//! is a hard link of. Times and owners are left out on purpose (the engine
//! may run without root).
//!
//! Built the same way from the reference model, from a backing store after
//! recovery (without the engine's `.mcfs/`), and from a live engine's view,
//! so any two can be compared with `==` and explained with `diff`.

use mcfs_core::{Backend, Engine, FileKind, MemBackend, ROOT_INO, STATE_DIR};
use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Extended attributes: name → value.
pub type Xattrs = BTreeMap<OsString, Vec<u8>>;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Node {
    File {
        perm: u32,
        data: Arc<Vec<u8>>,
        xattrs: Xattrs,
        link_of: Option<PathBuf>,
    },
    Dir {
        perm: u32,
        xattrs: Xattrs,
    },
    Symlink {
        target: OsString,
    },
    /// A kind the workload never makes (fifo, device, …).
    Other(String),
}

/// Relative path (never the root itself) → node.
pub type Tree = BTreeMap<PathBuf, Node>;

/// Fills in `link_of`: every name of a file after the first (in path order)
/// points at the first. `ids` gives each file path its inode identity.
pub fn link_files(tree: &mut Tree, ids: &HashMap<PathBuf, u64>) {
    let mut first: HashMap<u64, PathBuf> = HashMap::new();
    for (path, node) in tree.iter_mut() {
        if let Node::File { link_of, .. } = node {
            let head = first.entry(ids[path]).or_insert_with(|| path.clone());
            *link_of = (head != path).then(|| head.clone());
        }
    }
}

/// The entries of `tree` at or under the top-level directory `top`.
pub fn subtree(tree: &Tree, top: &str) -> Tree {
    tree.range(PathBuf::from(top)..)
        .take_while(|(p, _)| p.starts_with(top))
        .map(|(p, n)| (p.clone(), n.clone()))
        .collect()
}

/// What a backing store holds, without the engine's state directory.
pub fn from_backend(backend: &MemBackend) -> Result<Tree, String> {
    let snapshot = backend.snapshot().without_prefix(STATE_DIR);
    let mut tree = Tree::new();
    for (path, entry) in snapshot.entries() {
        if path.as_os_str().is_empty() {
            continue;
        }
        let node = match entry.kind {
            FileKind::Dir => Node::Dir { perm: entry.perm, xattrs: entry.xattrs.clone() },
            FileKind::Symlink => Node::Symlink { target: entry.target.clone().unwrap_or_default() },
            FileKind::File => {
                let link_of = (entry.first_link != *path).then(|| entry.first_link.clone());
                let data = Arc::new(read_backing(backend, path)?);
                Node::File { perm: entry.perm, data, xattrs: entry.xattrs.clone(), link_of }
            }
            other => Node::Other(format!("{other:?}")),
        };
        tree.insert(path.clone(), node);
    }
    Ok(tree)
}

fn read_backing(backend: &MemBackend, path: &Path) -> Result<Vec<u8>, String> {
    let size = backend.stat(path).map_err(|e| e.to_string())?.size as usize;
    let mut data = vec![0; size];
    let mut got = 0;
    while got < size {
        match backend.read_at(path, got as u64, &mut data[got..]) {
            Ok(0) => return Err(format!("{}: short read at {got} of {size}", path.display())),
            Ok(n) => got += n,
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(data)
}

/// What a live engine shows, walked with readdir (which takes no kernel
/// references, so the walk does not change what the engine keeps).
pub fn from_engine(engine: &Engine) -> Result<Tree, String> {
    let mut tree = Tree::new();
    let mut ids = HashMap::new();
    let mut dirs = vec![(PathBuf::new(), ROOT_INO)];
    while let Some((dir, ino)) = dirs.pop() {
        for entry in engine.readdir(ino, 0, usize::MAX).map_err(|e| format!("readdir {}: {e}", dir.display()))? {
            let path = dir.join(&entry.name);
            let failed = |what: &str, e: mcfs_core::Errno| format!("{what} {}: {e}", path.display());
            let attr = engine.getattr(entry.ino).map_err(|e| failed("getattr", e))?;
            let xattrs = || -> Result<Xattrs, String> {
                let names = engine.listxattr(entry.ino).map_err(|e| failed("listxattr", e))?;
                names
                    .into_iter()
                    .map(|n| Ok((n.clone(), engine.getxattr(entry.ino, &n).map_err(|e| failed("getxattr", e))?)))
                    .collect()
            };
            let node = match attr.kind {
                FileKind::Dir => {
                    dirs.push((path.clone(), entry.ino));
                    Node::Dir { perm: attr.perm, xattrs: xattrs()? }
                }
                FileKind::Symlink => {
                    Node::Symlink { target: engine.readlink(entry.ino).map_err(|e| failed("readlink", e))? }
                }
                FileKind::File => {
                    let data = engine.read(entry.ino, 0, attr.size as u32).map_err(|e| failed("read", e))?;
                    if data.len() as u64 != attr.size {
                        return Err(format!("{}: read {} bytes of {}", path.display(), data.len(), attr.size));
                    }
                    ids.insert(path.clone(), entry.ino);
                    Node::File { perm: attr.perm, data: Arc::new(data), xattrs: xattrs()?, link_of: None }
                }
                other => Node::Other(format!("{other:?}")),
            };
            tree.insert(path, node);
        }
    }
    link_files(&mut tree, &ids);
    Ok(tree)
}

/// One line per difference, `path: <got> vs <want>`; empty when equal.
pub fn diff(got: &Tree, want: &Tree) -> Vec<String> {
    let mut out = Vec::new();
    let mut paths: Vec<&PathBuf> = got.keys().chain(want.keys()).collect();
    paths.sort();
    paths.dedup();
    for path in paths {
        let (g, w) = (got.get(path), want.get(path));
        if g != w {
            out.push(format!("{}: {} vs {}", path.display(), describe(g, w), describe(w, g)));
        }
    }
    out
}

/// A node for a diff line; file contents are summarised by size and, when
/// the other side is a file too, the first offset where they differ.
fn describe(node: Option<&Node>, other: Option<&Node>) -> String {
    match node {
        None => "missing".to_string(),
        Some(Node::File { perm, data, xattrs, link_of }) => {
            let mut s = format!("file {perm:o} {} bytes{}", data.len(), describe_xattrs(xattrs));
            if let Some(Node::File { data: theirs, .. }) = other {
                if let Some(at) = data.iter().zip(theirs.iter()).position(|(a, b)| a != b) {
                    s += &format!(" (first difference at {at}: {:#04x})", data[at]);
                }
            }
            if let Some(l) = link_of {
                s += &format!(" link of {}", l.display());
            }
            s
        }
        Some(Node::Dir { perm, xattrs }) => format!("dir {perm:o}{}", describe_xattrs(xattrs)),
        Some(Node::Symlink { target }) => format!("symlink -> {target:?}"),
        Some(Node::Other(kind)) => kind.clone(),
    }
}

/// ` xattrs {name: length, …}`, or nothing when there are none.
fn describe_xattrs(xattrs: &Xattrs) -> String {
    if xattrs.is_empty() {
        return String::new();
    }
    let each: Vec<String> = xattrs.iter().map(|(n, v)| format!("{}: {} bytes", n.to_string_lossy(), v.len())).collect();
    format!(" xattrs {{{}}}", each.join(", "))
}
