//! Trace paths to engine inodes for a scenario. A path is known once an operation made it or looked it up:
//! a path no operation of the run made (a file the setup created) is looked up through the engine, name by
//! name, the first time it is used.
//!
//! Invariant: every remembered path names the inode the engine holds under it and holds exactly one kernel
//! reference on it (given back with `forget` when the path is dropped), so the engine keeps what the run
//! uses and drops unlinked files as on a mount. Keys are `file_calls::key_of`'s; the root is the empty key.

use crate::file_calls::split_last;
use mcfs_core::{Caller, Engine, Errno, FsResult, Ino, ROOT_INO};
use std::collections::BTreeMap;

pub struct Namespace {
    known: BTreeMap<Vec<u8>, Ino>,
}

impl Namespace {
    pub fn new() -> Namespace {
        Namespace { known: BTreeMap::from([(Vec::new(), ROOT_INO)]) }
    }

    /// The inode at `key`, looked up through the engine if no operation of the run named it yet.
    pub fn resolve(&mut self, engine: &Engine, caller: Caller, key: &[u8]) -> FsResult<Ino> {
        if let Some(ino) = self.known.get(key) {
            return Ok(*ino);
        }
        let (parent, name) = split_last(key).ok_or(Errno::ENOENT)?;
        let parent = self.resolve(engine, caller, parent)?;
        let ino = engine.lookup(caller, parent, name)?.ino;
        self.known.insert(key.to_vec(), ino);
        Ok(ino)
    }

    /// Remembers that `key` names `ino`, on which the caller took one reference for it.
    pub fn insert(&mut self, engine: &Engine, key: Vec<u8>, ino: Ino) {
        if let Some(old) = self.known.insert(key, ino) {
            engine.forget(old, 1);
        }
    }

    /// Forgets `key` and every path below it (they are looked up again if used); the root stays.
    pub fn drop_tree(&mut self, engine: &Engine, key: &[u8]) {
        if key.is_empty() {
            return;
        }
        let below = [key, b"/"].concat();
        let gone: Vec<Vec<u8>> =
            self.known.keys().filter(|k| k.as_slice() == key || k.starts_with(&below)).cloned().collect();
        for k in gone {
            if let Some(ino) = self.known.remove(&k) {
                engine.forget(ino, 1);
            }
        }
    }
}
