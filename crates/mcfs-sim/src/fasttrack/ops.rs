//! One file operation of a trace as the engine calls a kernel would make for it, on the inodes the
//! namespace names; missing parent directories are made on demand, as the app would have. Written bytes
//! follow `crate::pattern`. The event loop times the call; this module only performs it.

use super::namespace::{key_of, parent_and_name, Namespace};
use crate::pattern;
use crate::replay::MAX_REQUEST_BYTES;
use crate::trace::EventKind;
use mcfs_core::{Caller, Engine, Errno, FileKind, FsResult, Ino, RenameMode, SetAttr};

const FILE_PERM: u32 = 0o644;
const DIR_PERM: u32 = 0o755;
/// Largest piece of a read or write handed to the engine at once.
const CHUNK_BYTES: u64 = 1 << 20;

/// Performs the file operation `kind` for `caller`; operations that are not file operations (lifecycle,
/// input, battery, screen) are the event loop's and do nothing here.
pub fn apply(engine: &Engine, names: &mut Namespace, caller: Caller, kind: &EventKind) -> FsResult<()> {
    let mut files = Files { engine, names, caller };
    match kind {
        EventKind::Open { path } => files.open(path),
        EventKind::Create { path } => files.create(path),
        EventKind::Read { path, offset, len } => files.read(path, *offset, *len),
        EventKind::Write { path, offset, len } => files.write(path, *offset, *len),
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
        EventKind::Close { path } => {
            let ino = files.resolve(path)?;
            if !files.is_dir(ino)? {
                engine.release(ino);
            }
            Ok(())
        }
        EventKind::Input { .. }
        | EventKind::Launch
        | EventKind::Foreground
        | EventKind::Background
        | EventKind::Exit
        | EventKind::Battery { .. }
        | EventKind::Screen { .. } => Ok(()),
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

    fn is_dir(&self, ino: Ino) -> FsResult<bool> {
        Ok(self.engine.getattr(ino)?.kind == FileKind::Dir)
    }

    /// Opens a file (a directory's open counts nothing, as on the mount).
    fn open(&mut self, path: &[u8]) -> FsResult<()> {
        let ino = self.resolve(path)?;
        if !self.is_dir(ino)? {
            self.engine.open_file(ino)?;
        }
        Ok(())
    }

    /// Creates and opens a file, or opens the one already there (`O_CREAT` without `O_EXCL`).
    fn create(&mut self, path: &[u8]) -> FsResult<()> {
        let key = key_of(path)?;
        let (parent, name) = parent_and_name(&key).ok_or(Errno::EEXIST)?;
        let parent = self.directory(parent)?;
        let attr = self.engine.create(self.caller, parent, name, FILE_PERM, false)?;
        self.names.insert(self.engine, key, attr.ino);
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
        let (parent, name) = parent_and_name(key).ok_or(Errno::EEXIST)?;
        let parent = self.directory(parent)?;
        let ino = self.engine.mkdir(self.caller, parent, name, DIR_PERM)?.ino;
        self.names.insert(self.engine, key.to_vec(), ino);
        Ok(ino)
    }

    fn remove(&mut self, path: &[u8], dir: bool) -> FsResult<()> {
        let key = key_of(path)?;
        let (parent, name) = parent_and_name(&key).ok_or(Errno::EINVAL)?;
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
        let (from_parent, from_name) = parent_and_name(&from).ok_or(Errno::EINVAL)?;
        let from_parent = self.names.resolve(self.engine, self.caller, from_parent)?;
        let (to_parent, to_name) = parent_and_name(&to).ok_or(Errno::EINVAL)?;
        let to_parent = self.directory(to_parent)?;
        self.engine.rename(self.caller, from_parent, from_name, to_parent, to_name, RenameMode::Replace)?;
        // Both names are looked up again when next used.
        self.names.drop_tree(self.engine, &from);
        self.names.drop_tree(self.engine, &to);
        Ok(())
    }

    fn read(&mut self, path: &[u8], offset: u64, len: u64) -> FsResult<()> {
        let ino = self.resolve(path)?;
        if len > MAX_REQUEST_BYTES {
            return Err(Errno::EINVAL);
        }
        let mut done = 0;
        while done < len {
            let want = (len - done).min(CHUNK_BYTES);
            let at = offset.checked_add(done).ok_or(Errno::EINVAL)?;
            if (self.engine.read(ino, at, want as u32)?.len() as u64) < want {
                break;
            }
            done += want;
        }
        Ok(())
    }

    fn write(&mut self, path: &[u8], offset: u64, len: u64) -> FsResult<()> {
        let ino = self.resolve(path)?;
        if len > MAX_REQUEST_BYTES || offset.checked_add(len).is_none() {
            return Err(Errno::EFBIG);
        }
        let mut data = vec![0; len.min(CHUNK_BYTES) as usize];
        let mut done = 0;
        while done < len {
            let piece = &mut data[..(len - done).min(CHUNK_BYTES) as usize];
            pattern::fill(offset + done, piece);
            self.engine.write(Some(self.caller), ino, offset + done, piece)?;
            done += piece.len() as u64;
        }
        Ok(())
    }
}
