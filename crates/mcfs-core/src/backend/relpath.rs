//! Checks the paths handed to a backend. Every path is relative to the
//! backing root and made of plain names (`.` is ignored, the empty path is the
//! root); absolute paths and `..` are refused with `EINVAL` so no caller can
//! reach outside the root through the path syntax.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// Longest name of one directory entry (Linux `NAME_MAX`).
pub(crate) const NAME_MAX: usize = 255;

/// The names along `path`, root first; empty for the root itself.
pub(crate) fn names(path: &Path) -> Result<Vec<&OsStr>, i32> {
    let mut out = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(name) if name.as_bytes().contains(&0) => return Err(libc::EINVAL),
            Component::Normal(name) if name.len() > NAME_MAX => return Err(libc::ENAMETOOLONG),
            Component::Normal(name) => out.push(name),
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) | Component::ParentDir => return Err(libc::EINVAL),
        }
    }
    Ok(out)
}

/// `path` in one spelling (no `.`, no trailing slash), for use as a key.
pub(crate) fn canonical(path: &Path) -> Result<PathBuf, i32> {
    Ok(names(path)?.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_relative_names_and_refuses_escapes() {
        assert_eq!(names(Path::new("")).unwrap(), Vec::<&OsStr>::new());
        assert_eq!(names(Path::new("./a//b/")).unwrap(), vec![OsStr::new("a"), OsStr::new("b")]);
        assert_eq!(names(Path::new("/etc")), Err(libc::EINVAL));
        assert_eq!(names(Path::new("a/../b")), Err(libc::EINVAL));
        assert_eq!(names(Path::new("..")), Err(libc::EINVAL));
        assert_eq!(names(OsStr::from_bytes(b"a\0b").as_ref()), Err(libc::EINVAL));
        let long = "x".repeat(NAME_MAX + 1);
        assert_eq!(names(Path::new(&long)), Err(libc::ENAMETOOLONG));
        assert_eq!(canonical(Path::new("./a/./b/")).unwrap(), PathBuf::from("a/b"));
    }
}
