//! The file operations of a replay: each trace operation becomes the engine calls a kernel would make
//! for it, on the inodes the path table names (missing parent directories are made on demand, as the app
//! would have). Opening, closing, reading and writing are `crate::file_calls`, as in the FastTrack
//! scenarios; this module resolves paths, keeps the table and refuses sizes past the kernel's limit, as
//! the kernel does before a file system sees them.

use super::{Replayer, Skip, MAX_FILE_SIZE};
use crate::file_calls::{self, key_of, split_last, DIR_PERM, FILE_PERM};
use crate::trace::{EventKind, TraceEvent};
use mcfs_core::{Caller, Errno, Ino, IoClass, RenameMode, SetAttr};
use std::ffi::OsStr;
use std::sync::Arc;

impl Replayer {
    /// Replays one event's operation on the engine.
    pub(super) fn apply(&mut self, event: &TraceEvent, caller: Caller) -> Result<(), Skip> {
        let shared = Arc::clone(&self.engine);
        // As the mount admits each request: the engine learns whose work runs (FastTrack's classes).
        let _admission = event.kind.is_file_op().then(|| shared.admit(caller));
        let engine = &*shared;
        match &event.kind {
            EventKind::Open { path } => file_calls::open(engine, self.resolve(path)?)?,
            EventKind::Create { path } => self.create(caller, key_of(path)?.into_owned())?,
            EventKind::Read { path, offset, len } => file_calls::read(engine, self.resolve(path)?, *offset, *len)?,
            EventKind::Write { path, offset, len } => {
                let ino = self.resolve(path)?;
                within_file_size_limit(offset.saturating_add(*len))?;
                file_calls::write(engine, caller, ino, *offset, *len)?
            }
            EventKind::Fsync { path } | EventKind::Fdatasync { path } => {
                engine.fsync(Some(caller), self.resolve(path)?)?
            }
            EventKind::Truncate { path, size } => {
                let ino = self.resolve(path)?;
                within_file_size_limit(*size)?;
                let set = SetAttr { size: Some(*size), ..SetAttr::default() };
                engine.setattr(caller, ino, &set)?;
            }
            EventKind::Unlink { path } => self.remove(caller, path, false)?,
            EventKind::Rmdir { path } => self.remove(caller, path, true)?,
            EventKind::Rename { from, to } => self.rename(caller, from, to)?,
            EventKind::Link { from, to } => self.link(caller, from, to)?,
            EventKind::Mkdir { path } => {
                self.mkdir(caller, key_of(path)?.into_owned())?;
            }
            EventKind::Close { path } => file_calls::close(engine, self.resolve(path)?)?,
            EventKind::Battery { percent } => engine.set_battery(*percent),
            EventKind::Input { .. } => engine.user_input(),
            // The app status detector follows the trace's lifecycle events (FastTrack §4.1).
            EventKind::Launch | EventKind::Foreground => engine.set_foreground_uid(Some(caller.uid)),
            EventKind::Background | EventKind::Exit => {
                if engine.io_class(caller.uid) == IoClass::Foreground {
                    engine.set_foreground_uid(None);
                }
            }
            EventKind::Screen { .. } => {}
        }
        Ok(())
    }

    /// Creates and opens a file, or opens the file already there (`O_CREAT` without `O_EXCL`).
    fn create(&mut self, caller: Caller, key: Vec<u8>) -> Result<(), Skip> {
        let (parent, name) = self.parent_of(&key, caller)?;
        let attr = self.engine.create(caller, parent, name, FILE_PERM, false)?;
        // The table holds one kernel reference per path; the engine took another.
        if self.paths.get(&key).is_some() {
            self.engine.forget(attr.ino, 1);
        } else {
            self.paths.insert(key, attr.ino);
        }
        Ok(())
    }

    fn resolve(&mut self, path: &[u8]) -> Result<Ino, Skip> {
        self.paths.resolve(path)?.ok_or(Skip::UnknownPath)
    }

    /// The directory holding `key` (made on demand, as the app would have) and the last name of `key`.
    fn parent_of<'k>(&mut self, key: &'k [u8], caller: Caller) -> Result<(Ino, &'k OsStr), Skip> {
        let (parent, name) = split_last(key).ok_or(Skip::Refused(Errno::EEXIST))?;
        let parent_ino = match self.paths.get(parent) {
            Some(ino) => ino,
            None => self.mkdir(caller, parent.to_vec())?,
        };
        Ok((parent_ino, name))
    }

    /// Makes directory `key`, and its missing parents first.
    fn mkdir(&mut self, caller: Caller, key: Vec<u8>) -> Result<Ino, Skip> {
        let (parent, name) = self.parent_of(&key, caller)?;
        let attr = self.engine.mkdir(caller, parent, name, DIR_PERM)?;
        self.paths.insert_dir(key, attr.ino);
        Ok(attr.ino)
    }

    fn remove(&mut self, caller: Caller, path: &[u8], dir: bool) -> Result<(), Skip> {
        let key = key_of(path)?;
        let ino = self.paths.get(&key).ok_or(Skip::UnknownPath)?;
        let (parent, name) = split_last(&key).ok_or(Skip::Refused(Errno::EINVAL))?;
        let parent = self.paths.get(parent).ok_or(Skip::UnknownPath)?;
        if dir {
            self.engine.rmdir(caller, parent, name)?;
        } else {
            self.engine.unlink(caller, parent, name)?;
        }
        self.paths.remove(&key);
        self.engine.forget(ino, 1);
        Ok(())
    }

    /// A second name for a file; the engine's link takes the reference the new table entry holds.
    fn link(&mut self, caller: Caller, from: &[u8], to: &[u8]) -> Result<(), Skip> {
        let ino = self.resolve(from)?;
        let to = key_of(to)?;
        let (parent, name) = self.parent_of(&to, caller)?;
        self.engine.link(caller, ino, parent, name)?;
        self.paths.insert(to.into_owned(), ino);
        Ok(())
    }

    fn rename(&mut self, caller: Caller, from: &[u8], to: &[u8]) -> Result<(), Skip> {
        let (from, to) = (key_of(from)?, key_of(to)?);
        self.paths.get(&from).ok_or(Skip::UnknownPath)?;
        let (from_parent, from_name) = split_last(&from).ok_or(Skip::Refused(Errno::EINVAL))?;
        let from_parent = self.paths.get(from_parent).ok_or(Skip::UnknownPath)?;
        let (to_parent, to_name) = self.parent_of(&to, caller)?;
        self.engine.rename(caller, from_parent, from_name, to_parent, to_name, RenameMode::Replace)?;
        if let Some(replaced) = self.paths.rename(&from, &to) {
            self.engine.forget(replaced, 1);
        }
        Ok(())
    }
}

/// The kernel refuses to make a file end past `MAX_FILE_SIZE` before a file system sees the call.
fn within_file_size_limit(end: u64) -> Result<(), Errno> {
    if end > MAX_FILE_SIZE {
        return Err(Errno::EFBIG);
    }
    Ok(())
}
