//! Checks the paths handed to a backend. Every path is relative to the
//! backing root and made of plain names (`.` is ignored, the empty path is the
//! root); absolute paths and `..` are refused with `EINVAL` so no caller can
//! reach outside the root through the path syntax.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Longest name of one directory entry (Linux `NAME_MAX`).
pub(crate) const NAME_MAX: usize = 255;

/// The names along `path`, root first; empty for the root itself.
pub(crate) fn names(path: &Path) -> Result<Vec<&OsStr>, i32> {
    let mut out = Vec::with_capacity(USUAL_DEPTH);
    for part in parts(path).ok_or(libc::EINVAL)? {
        match part.as_bytes() {
            b".." => return Err(libc::EINVAL),
            name if name.contains(&0) => return Err(libc::EINVAL),
            name if name.len() > NAME_MAX => return Err(libc::ENAMETOOLONG),
            _ => out.push(part),
        }
    }
    Ok(out)
}

/// Whether `name` is one name as `names` takes it: not empty, `.` or
/// `..`, with no slash or NUL (its length is the caller's to check).
pub(crate) fn is_plain_name(name: &[u8]) -> bool {
    !name.is_empty() && name != b"." && name != b".." && !name.contains(&b'/') && !name.contains(&0)
}

/// Names in most paths (an app's data directory is five deep): room for
/// them at once spares growing the vector on the way.
pub(crate) const USUAL_DEPTH: usize = 8;

/// The parts of `path` that `Path::components` gives as names or `..`
/// (empty parts and `.` dropped), split at the slashes, which costs a
/// fraction of `components`; `None` for an absolute path.
pub(crate) fn parts(path: &Path) -> Option<impl Iterator<Item = &OsStr>> {
    let bytes = path.as_os_str().as_bytes();
    if bytes.first() == Some(&b'/') {
        return None;
    }
    Some(bytes.split(|b| *b == b'/').filter(|part| !part.is_empty() && *part != b".").map(OsStr::from_bytes))
}

/// `path` in one spelling (no `.`, no trailing slash), for use as a key.
pub(crate) fn canonical(path: &Path) -> Result<PathBuf, i32> {
    Ok(names(path)?.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Component;

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

    #[test]
    fn parts_are_what_components_gives() {
        // `Path::components` on Unix, the reference `parts` must match.
        fn by_components(path: &Path) -> Option<Vec<&OsStr>> {
            let mut out = Vec::new();
            for component in path.components() {
                match component {
                    Component::Normal(name) => out.push(name),
                    Component::ParentDir => out.push(OsStr::new("..")),
                    Component::CurDir => {}
                    Component::RootDir | Component::Prefix(_) => return None,
                }
            }
            Some(out)
        }
        let paths = [
            "",
            ".",
            "./",
            "./.",
            "a",
            "a/",
            "a//b",
            "./a/./b/.",
            ".a/..b/...",
            "a/../b",
            "..",
            "../a",
            "/",
            "/a",
            "//a",
            "a/.",
            "a/./",
            ".//a",
            "a\\b/c",
            "a.b/c.",
        ];
        for path in paths.map(Path::new) {
            assert_eq!(parts(path).map(|p| p.collect::<Vec<_>>()), by_components(path), "{path:?}");
        }
    }
}
