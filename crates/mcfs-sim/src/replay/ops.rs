//! The file operations of a replay: each trace operation becomes the engine calls a kernel would make
//! for it, on the inodes the path table names (missing parent directories are made on demand, as the app
//! would have). Written bytes follow `crate::pattern`, so any two replays leave byte-identical files.

use super::paths::{normalize, split_last};
use super::{Replayer, Skip, CHUNK_BYTES, DIR_PERM, FILE_PERM, MAX_FILE_SIZE, MAX_REQUEST_BYTES};
use crate::pattern;
use crate::trace::{EventKind, TraceEvent};
use mcfs_core::{Caller, Errno, FileKind, Ino, RenameMode, SetAttr};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

impl Replayer {
    /// Replays one event's operation on the engine.
    pub(super) fn apply(&mut self, event: &TraceEvent) -> Result<(), Skip> {
        let caller = self.caller_of(event);
        let engine = &self.engine;
        match &event.kind {
            EventKind::Open { path } => self.open(self.resolve(path)?)?,
            EventKind::Create { path } => self.create(caller, key_of(path)?)?,
            EventKind::Read { path, offset, len } => self.read(self.resolve(path)?, *offset, *len)?,
            EventKind::Write { path, offset, len } => self.write(caller, self.resolve(path)?, *offset, *len)?,
            EventKind::Fsync { path } | EventKind::Fdatasync { path } => {
                engine.fsync(Some(caller), self.resolve(path)?)?
            }
            EventKind::Truncate { path, size } => {
                let ino = self.resolve(path)?;
                if *size > MAX_FILE_SIZE {
                    return Err(Skip::Refused(Errno::EFBIG));
                }
                let set = SetAttr { size: Some(*size), ..SetAttr::default() };
                engine.setattr(caller, ino, &set)?;
            }
            EventKind::Unlink { path } => self.remove(caller, path, false)?,
            EventKind::Rmdir { path } => self.remove(caller, path, true)?,
            EventKind::Rename { from, to } => self.rename(caller, from, to)?,
            EventKind::Mkdir { path } => {
                self.mkdir(caller, key_of(path)?)?;
            }
            EventKind::Close { path } => {
                let ino = self.resolve(path)?;
                if !self.is_dir(ino)? {
                    engine.release(ino);
                }
            }
            EventKind::Battery { percent } => engine.set_battery(*percent),
            EventKind::Input { .. } => engine.user_input(),
            // Counted only, until the scheduler takes them.
            EventKind::Launch
            | EventKind::Foreground
            | EventKind::Background
            | EventKind::Exit
            | EventKind::Screen { .. } => {}
        }
        Ok(())
    }

    /// Opens a file. Directories are not counted, as on the mount (its `opendir` opens nothing).
    fn open(&self, ino: Ino) -> Result<(), Errno> {
        if !self.is_dir(ino)? {
            self.engine.open_file(ino)?;
        }
        Ok(())
    }

    fn is_dir(&self, ino: Ino) -> Result<bool, Errno> {
        Ok(self.engine.getattr(ino)?.kind == FileKind::Dir)
    }

    /// Creates and opens a file, or opens the file already there (`O_CREAT` without `O_EXCL`).
    fn create(&mut self, caller: Caller, key: Vec<u8>) -> Result<(), Skip> {
        let (parent, name) = self.parent_of(&key, caller)?;
        let attr = self.engine.create(caller, parent, os(name), FILE_PERM, false)?;
        // The table holds one kernel reference per path; the engine took another.
        if self.paths.get(&key).is_some() {
            self.engine.forget(attr.ino, 1);
        } else {
            self.paths.insert(key, attr.ino);
        }
        Ok(())
    }

    fn resolve(&self, path: &[u8]) -> Result<Ino, Skip> {
        self.paths.get(&key_of(path)?).ok_or(Skip::UnknownPath)
    }

    /// The directory holding `key` (made on demand, as the app would have) and the last name of `key`.
    fn parent_of<'k>(&mut self, key: &'k [u8], caller: Caller) -> Result<(Ino, &'k [u8]), Skip> {
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
        let attr = self.engine.mkdir(caller, parent, os(name), DIR_PERM)?;
        self.paths.insert(key, attr.ino);
        Ok(attr.ino)
    }

    fn remove(&mut self, caller: Caller, path: &[u8], dir: bool) -> Result<(), Skip> {
        let key = key_of(path)?;
        let ino = self.paths.get(&key).ok_or(Skip::UnknownPath)?;
        let (parent, name) = split_last(&key).ok_or(Skip::Refused(Errno::EINVAL))?;
        let parent = self.paths.get(parent).ok_or(Skip::UnknownPath)?;
        if dir {
            self.engine.rmdir(caller, parent, os(name))?;
        } else {
            self.engine.unlink(caller, parent, os(name))?;
        }
        self.paths.remove(&key);
        self.engine.forget(ino, 1);
        Ok(())
    }

    fn rename(&mut self, caller: Caller, from: &[u8], to: &[u8]) -> Result<(), Skip> {
        let (from, to) = (key_of(from)?, key_of(to)?);
        self.paths.get(&from).ok_or(Skip::UnknownPath)?;
        let (from_parent, from_name) = split_last(&from).ok_or(Skip::Refused(Errno::EINVAL))?;
        let from_parent = self.paths.get(from_parent).ok_or(Skip::UnknownPath)?;
        let (to_parent, to_name) = self.parent_of(&to, caller)?;
        self.engine.rename(caller, from_parent, os(from_name), to_parent, os(to_name), RenameMode::Replace)?;
        if let Some(replaced) = self.paths.rename(&from, &to) {
            self.engine.forget(replaced, 1);
        }
        Ok(())
    }

    fn read(&self, ino: Ino, offset: u64, len: u64) -> Result<(), Errno> {
        if len > MAX_REQUEST_BYTES {
            return Err(Errno::EINVAL);
        }
        let mut done = 0;
        while done < len {
            let want = (len - done).min(CHUNK_BYTES as u64);
            let got = self.engine.read(ino, offset.checked_add(done).ok_or(Errno::EINVAL)?, want as u32)?;
            if (got.len() as u64) < want {
                break;
            }
            done += want;
        }
        Ok(())
    }

    fn write(&mut self, caller: Caller, ino: Ino, offset: u64, len: u64) -> Result<(), Errno> {
        if len > MAX_REQUEST_BYTES || offset.checked_add(len).is_none_or(|end| end > MAX_FILE_SIZE) {
            return Err(Errno::EFBIG);
        }
        let mut done = 0;
        while done < len {
            let n = (len - done).min(CHUNK_BYTES as u64) as usize;
            let data = &mut self.scratch[..n];
            pattern::fill(offset + done, data);
            self.engine.write(Some(caller), ino, offset + done, data)?;
            done += n as u64;
        }
        Ok(())
    }
}

/// The table key of a trace path. A path with a NUL byte cannot reach a kernel (it would end there), so
/// it is refused rather than cut.
fn key_of(path: &[u8]) -> Result<Vec<u8>, Skip> {
    if path.contains(&0) {
        return Err(Skip::Refused(Errno::EINVAL));
    }
    Ok(normalize(path))
}

fn os(name: &[u8]) -> &OsStr {
    OsStr::from_bytes(name)
}
