//! What the replayer (`replay`) and the FastTrack scenarios (`fasttrack`) do alike when a trace's file
//! operation reaches the engine: trace paths as keys, and the engine calls that open, close, read and
//! write a file already resolved to its inode. How a path becomes an inode, and how creating, removing and
//! renaming keep track of paths, is each one's own: the replayer acts only on paths its trace made (an
//! unknown one is skipped), a scenario also looks up the files its setup made.
//!
//! Invariant: no trace value makes these panic or hand the engine an oversized buffer: lengths and
//! offsets are checked first, and data moves in pieces of at most `CHUNK_BYTES`. Written bytes follow
//! `crate::pattern`, so any two runs leave byte-identical files.

use crate::pattern;
use crate::replay::MAX_REQUEST_BYTES;
use mcfs_core::{Caller, Engine, Errno, FileKind, FsResult, Ino};
use std::borrow::Cow;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

pub const FILE_PERM: u32 = 0o644;
pub const DIR_PERM: u32 = 0o755;
/// Largest piece of a read or write handed to the engine at once, so a long request never becomes one
/// huge buffer (and a write's piece is a slice of the pattern, `pattern::slice`).
const CHUNK_BYTES: u64 = pattern::MAX_SLICE as u64;

/// A trace path as a key: its names joined by `/`, without `.`, empty names or a leading slash, `..`
/// taken lexically (stopping at the root, as in the kernel); relative paths are taken from the root, which
/// is the empty key. A NUL byte cannot reach a kernel (the path would end there): such a path is refused.
/// A path already in that form (nearly every one a trace holds) is its own key, borrowed, not copied.
pub fn key_of(path: &[u8]) -> FsResult<Cow<'_, [u8]>> {
    let rest = path.strip_prefix(b"/").unwrap_or(path);
    // One pass over the bytes (every event with a path asks): a NUL refuses the path; each name is
    // judged at the slash that ends it (the last one at the end).
    let plain = |name: &[u8]| !name.is_empty() && name != b"." && name != b"..";
    let (mut all_plain, mut name_start) = (true, 0);
    for (at, byte) in rest.iter().enumerate() {
        match byte {
            0 => return Err(Errno::EINVAL),
            b'/' => {
                all_plain &= plain(&rest[name_start..at]);
                name_start = at + 1;
            }
            _ => {}
        }
    }
    if rest.is_empty() || all_plain && plain(&rest[name_start..]) {
        return Ok(Cow::Borrowed(rest));
    }
    let mut names: Vec<&[u8]> = Vec::new();
    for name in path.split(|b| *b == b'/').filter(|n| !n.is_empty() && *n != b".") {
        if name == b".." {
            names.pop();
        } else {
            names.push(name);
        }
    }
    Ok(Cow::Owned(names.join(&b'/')))
}

/// The parent key and the last name of a key; `None` for the root.
pub fn split_last(key: &[u8]) -> Option<(&[u8], &OsStr)> {
    let (parent, name) = match key.iter().rposition(|b| *b == b'/') {
        Some(slash) => (&key[..slash], &key[slash + 1..]),
        None if key.is_empty() => return None,
        None => (&[][..], key),
    };
    Some((parent, OsStr::from_bytes(name)))
}

/// Opens a file. Directories are not counted, as on the mount (its `opendir` opens nothing).
pub fn open(engine: &Engine, ino: Ino) -> FsResult<()> {
    if !is_dir(engine, ino)? {
        engine.open_file(ino)?;
    }
    Ok(())
}

/// Closes what `open` opened.
pub fn close(engine: &Engine, ino: Ino) -> FsResult<()> {
    if !is_dir(engine, ino)? {
        engine.release(ino);
    }
    Ok(())
}

/// Reads `len` bytes at `offset`, stopping at the end of the file.
pub fn read(engine: &Engine, ino: Ino, offset: u64, len: u64) -> FsResult<()> {
    if len > MAX_REQUEST_BYTES {
        return Err(Errno::EINVAL);
    }
    let mut done = 0;
    while done < len {
        let want = (len - done).min(CHUNK_BYTES);
        let at = offset.checked_add(done).ok_or(Errno::EINVAL)?;
        if u64::from(engine.read_len(ino, at, want as u32)?) < want {
            break;
        }
        done += want;
    }
    Ok(())
}

/// Writes `len` bytes of the pattern at `offset`.
pub fn write(engine: &Engine, caller: Caller, ino: Ino, offset: u64, len: u64) -> FsResult<()> {
    if len > MAX_REQUEST_BYTES || offset.checked_add(len).is_none() {
        return Err(Errno::EFBIG);
    }
    let mut done = 0;
    while done < len {
        let piece = pattern::slice(offset + done, (len - done).min(CHUNK_BYTES) as usize);
        engine.write(Some(caller), ino, offset + done, piece)?;
        done += piece.len() as u64;
    }
    Ok(())
}

fn is_dir(engine: &Engine, ino: Ino) -> FsResult<bool> {
    Ok(engine.getattr(ino)?.kind == FileKind::Dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_drop_dots_and_extra_slashes_and_refuse_nul() {
        assert_eq!(*key_of(b"/a//b/./c/").unwrap(), *b"a/b/c");
        assert_eq!(*key_of(b"a/b/../c").unwrap(), *b"a/c");
        assert_eq!(*key_of(b"/../..").unwrap(), *b"");
        assert_eq!(*key_of(b"/").unwrap(), *b"");
        assert_eq!(*key_of(b"/a/.b/c..").unwrap(), *b"a/.b/c..");
        assert!(matches!(key_of(b"/a/b").unwrap(), Cow::Borrowed(b"a/b")), "a plain path is not copied");
        assert_eq!(key_of(b"/a\0b"), Err(Errno::EINVAL));
        assert_eq!(split_last(b"a/b/c"), Some((&b"a/b"[..], OsStr::new("c"))));
        assert_eq!(split_last(b"a"), Some((&b""[..], OsStr::new("a"))));
        assert_eq!(split_last(b""), None);
    }
}
