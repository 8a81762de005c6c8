//! One file operation of a trace as the engine calls a kernel would make for it, on the inodes the
//! namespace names; missing parent directories are made on demand, as the app would have. Opening,
//! closing, reading and writing are `crate::file_calls`, as in the replayer; this module resolves paths
//! and keeps the namespace. The event loop times the call; this module only performs it.

use super::namespace::Namespace;
use crate::file_calls::{self, key_of, split_last, DIR_PERM, FILE_PERM};
use crate::trace::EventKind;
use mcfs_core::{Caller, Engine, Errno, FsResult, Ino, RenameMode, SetAttr};

/// Performs the file operation `kind` for `caller`; events that are not file operations
/// (`EventKind::is_file_op`: lifecycle, input, battery, screen) are the event loop's and do nothing here.
pub fn apply(engine: &Engine, names: &mut Namespace, caller: Caller, kind: &EventKind) -> FsResult<()> {
    let mut files = Files { engine, names, caller };
    match kind {
        EventKind::Open { path } => file_calls::open(engine, files.resolve(path)?),
        EventKind::Create { path } => files.create(path),
        EventKind::Read { path, offset, len } => file_calls::read(engine, files.resolve(path)?, *offset, *len),
        EventKind::Write { path, offset, len } => {
            file_calls::write(engine, caller, files.resolve(path)?, *offset, *len)
        }
        EventKind::Fsync { path } | EventKind::Fdatasync { path } => {
            let ino = files.resolve(path)?;
            engine.fsync(Some(caller), ino)
        }
        EventKind::Truncate { path, size } => {
            let ino = files.resolve(path)?;
            engine.setattr(caller, ino, &SetAttr { size: Some(*size), ..SetAttr::default() }).map(drop)
        }
        EventKind::Unlink { path } => files.remove(path, false),
        EventKind::Rmdir { path } => files.remove(path, true),
        EventKind::Rename { from, to } => files.rename(from, to),
        EventKind::Mkdir { path } => files.mkdir(&key_of(path)?).map(drop),
        EventKind::Close { path } => file_calls::close(engine, files.resolve(path)?),
        _ => Ok(()),
    }
}

struct Files<'a> {
    engine: &'a Engine,
    names: &'a mut Namespace,
    caller: Caller,
}

impl Files<'_> {
    fn resolve(&mut self, path: &[u8]) -> FsResult<Ino> {
        self.names.resolve(self.engine, self.caller, &key_of(path)?)
    }

    /// Creates and opens a file, or opens the one already there (`O_CREAT` without `O_EXCL`).
    fn create(&mut self, path: &[u8]) -> FsResult<()> {
        let key = key_of(path)?;
        let (parent, name) = split_last(&key).ok_or(Errno::EEXIST)?;
        let parent = self.directory(parent)?;
        let attr = self.engine.create(self.caller, parent, name, FILE_PERM, false)?;
        self.names.insert(self.engine, key.into_owned(), attr.ino);
        Ok(())
    }

    /// The directory at `key`, made (with its missing parents) if it does not exist.
    fn directory(&mut self, key: &[u8]) -> FsResult<Ino> {
        match self.names.resolve(self.engine, self.caller, key) {
            Err(e) if e == Errno::ENOENT => self.mkdir(key),
            found => found,
        }
    }

    fn mkdir(&mut self, key: &[u8]) -> FsResult<Ino> {
        let (parent, name) = split_last(key).ok_or(Errno::EEXIST)?;
        let parent = self.directory(parent)?;
        let ino = self.engine.mkdir(self.caller, parent, name, DIR_PERM)?.ino;
        self.names.insert(self.engine, key.to_vec(), ino);
        Ok(ino)
    }

    fn remove(&mut self, path: &[u8], dir: bool) -> FsResult<()> {
        let key = key_of(path)?;
        let (parent, name) = split_last(&key).ok_or(Errno::EINVAL)?;
        let parent = self.names.resolve(self.engine, self.caller, parent)?;
        if dir {
            self.engine.rmdir(self.caller, parent, name)?;
        } else {
            self.engine.unlink(self.caller, parent, name)?;
        }
        self.names.drop_tree(self.engine, &key);
        Ok(())
    }

    fn rename(&mut self, from: &[u8], to: &[u8]) -> FsResult<()> {
        let (from, to) = (key_of(from)?, key_of(to)?);
        let (from_parent, from_name) = split_last(&from).ok_or(Errno::EINVAL)?;
        let from_parent = self.names.resolve(self.engine, self.caller, from_parent)?;
        let (to_parent, to_name) = split_last(&to).ok_or(Errno::EINVAL)?;
        let to_parent = self.directory(to_parent)?;
        self.engine.rename(self.caller, from_parent, from_name, to_parent, to_name, RenameMode::Replace)?;
        // Both names are looked up again when next used.
        self.names.drop_tree(self.engine, &from);
        self.names.drop_tree(self.engine, &to);
        Ok(())
    }
}
