//! Extended attributes: loaded from the backing store on first use, changed in
//! memory and logged like any other metadata operation.
//!
//! Invariants: an inode's attributes are a set the backing store holds
//! (`Backend::check_xattrs` is asked before any change, so a set it would
//! refuse is refused at the call, with its errno, and never reaches a
//! checkpoint); and its POSIX ACLs agree with its mode (`acl`): setting the
//! access ACL sets the mode's rwx bits, chmod updates the ACL, and a new
//! object inherits its directory's default ACL.

use crate::acl::{self, Acl};
use crate::engine::Engine;
use crate::inode::Inode;
use crate::state::State;
use crate::types::*;
use crate::vct::LogEntry;
use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};

/// An inode's extended attributes: name → value.
pub(crate) type Xattrs = BTreeMap<OsString, Vec<u8>>;

impl Engine {
    pub(crate) fn load_xattrs(&self, st: &mut State, ino: Ino) -> FsResult<()> {
        if st.inode(ino)?.xattrs.is_some() {
            return Ok(());
        }
        let mut map = std::collections::BTreeMap::new();
        let path = self.store().stable_path(ino)?;
        if let Some(path) = path {
            for name in self.backend.list_xattr(&path)? {
                if let Some(v) = self.backend.get_xattr(&path, &name)? {
                    map.insert(name, v);
                }
            }
        }
        st.inode_mut(ino)?.xattrs = Some(map);
        Ok(())
    }

    pub fn getxattr(&self, ino: Ino, name: &OsStr) -> FsResult<Vec<u8>> {
        let mut st = self.state.lock();
        self.load_xattrs(&mut st, ino)?;
        st.inode(ino)?.xattrs.as_ref().and_then(|x| x.get(name)).cloned().ok_or(Errno::ENODATA)
    }

    pub fn listxattr(&self, ino: Ino) -> FsResult<Vec<OsString>> {
        let mut st = self.state.lock();
        self.load_xattrs(&mut st, ino)?;
        Ok(st.inode(ino)?.xattrs.as_ref().map(|x| x.keys().cloned().collect()).unwrap_or_default())
    }

    pub fn setxattr(&self, caller: Caller, ino: Ino, name: &OsStr, value: &[u8], mode: XattrMode) -> FsResult<()> {
        let now = self.clock.file_time();
        let mut st = self.state.lock();
        self.load_xattrs(&mut st, ino)?;
        let app = st.app_of_uid(caller.uid);
        let inode = st.inode_mut(ino)?;
        let xattrs = inode.xattrs.as_ref().expect("loaded");
        match (mode, xattrs.contains_key(name)) {
            (XattrMode::CreateOnly, true) => return Err(Errno::EEXIST),
            (XattrMode::ReplaceOnly, false) => return Err(Errno::ENODATA),
            _ => {}
        }
        let (stored, perm) = stored_form(inode.attr.kind, inode.attr.perm, name, value)?;
        let mut after = xattrs.clone();
        let entry = match stored {
            Some(value) => {
                after.insert(name.to_owned(), value.clone());
                Some(LogEntry::SetXattr { ino, name: name.to_owned(), value })
            }
            None => after.remove(name).map(|_| LogEntry::RemoveXattr { ino, name: name.to_owned() }),
        };
        self.check_xattrs(inode.attr.kind, &after)?;
        inode.xattrs = Some(after);
        inode.attr.ctime = now;
        let perm_changed = perm != inode.attr.perm;
        inode.attr.perm = perm;
        for entry in entry.into_iter().chain(perm_changed.then_some(LogEntry::SetPerm { ino, perm })) {
            st.log(app, entry, &[ino], now);
        }
        Ok(())
    }

    pub fn removexattr(&self, caller: Caller, ino: Ino, name: &OsStr) -> FsResult<()> {
        let now = self.clock.file_time();
        let mut st = self.state.lock();
        self.load_xattrs(&mut st, ino)?;
        let app = st.app_of_uid(caller.uid);
        let inode = st.inode_mut(ino)?;
        if inode.xattrs.as_mut().expect("loaded").remove(name).is_none() {
            return Err(Errno::ENODATA);
        }
        inode.attr.ctime = now;
        st.log(app, LogEntry::RemoveXattr { ino, name: name.to_owned() }, &[ino], now);
        Ok(())
    }

    /// `Backend::check_xattrs` for the attributes `xattrs` on a `kind` object.
    fn check_xattrs(&self, kind: FileKind, xattrs: &Xattrs) -> FsResult<()> {
        let set: Vec<(&OsStr, &[u8])> = xattrs.iter().map(|(n, v)| (n.as_os_str(), v.as_slice())).collect();
        Ok(self.backend.check_xattrs(kind, &set)?)
    }

    /// The permission bits and extended attributes a new `kind` object in
    /// `parent` starts with: with a default ACL there, the ACLs it inherits
    /// and the bits they allow of `perm`; without, `perm` less the umask.
    pub(crate) fn new_object_perm(
        &self,
        st: &mut State,
        parent: Ino,
        kind: FileKind,
        perm: NewPerm,
    ) -> FsResult<(u32, Xattrs)> {
        let requested = perm.perm & 0o7777;
        if kind == FileKind::Symlink {
            return Ok((requested, Xattrs::new()));
        }
        self.load_xattrs(st, parent)?;
        let default = st.inode(parent)?.xattrs.as_ref().and_then(|x| x.get(OsStr::new(acl::DEFAULT)));
        let Some(default) = default.map(|value| Acl::parse(value)).transpose()?.flatten() else {
            return Ok((requested & !(perm.umask & 0o777), Xattrs::new()));
        };
        let (access, perm) = default.inherit(requested);
        let mut xattrs = Xattrs::new();
        if let Some(access) = access {
            xattrs.insert(acl::ACCESS.into(), access.to_value());
        }
        if kind == FileKind::Dir {
            xattrs.insert(acl::DEFAULT.into(), default.to_value());
        }
        self.check_xattrs(kind, &xattrs)?;
        Ok((perm, xattrs))
    }
}

/// After a chmod of `inode` (its attributes loaded by `load_xattrs`): its
/// access ACL, if any, takes the new mode's bits; the entry to log for it.
pub(crate) fn acl_after_chmod(inode: &mut Inode, ino: Ino) -> FsResult<Option<LogEntry>> {
    let perm = inode.attr.perm;
    let Some(value) = inode.xattrs.as_mut().and_then(|x| x.get_mut(OsStr::new(acl::ACCESS))) else {
        return Ok(None);
    };
    let Some(mut access) = Acl::parse(value)? else { return Ok(None) };
    access.chmod(perm);
    *value = access.to_value();
    Ok(Some(LogEntry::SetXattr { ino, name: acl::ACCESS.into(), value: value.clone() }))
}

/// What setting attribute `name` to `value` on a `kind` object with
/// permission bits `perm` stores (`None`: removes it) and the permission
/// bits after. The value itself, but for the ACLs (see `acl`): checked as
/// Linux checks them, an empty one removes, and the access ACL sets the
/// mode's rwx bits and is kept only when it says more than the mode.
fn stored_form(kind: FileKind, perm: u32, name: &OsStr, value: &[u8]) -> FsResult<(Option<Vec<u8>>, u32)> {
    let is_access = name == acl::ACCESS;
    if !is_access && name != acl::DEFAULT {
        return Ok((Some(value.to_vec()), perm));
    }
    if kind == FileKind::Symlink {
        return Err(Errno::ENOTSUP);
    }
    let Some(parsed) = Acl::parse(value)? else { return Ok((None, perm)) };
    if !is_access {
        if kind != FileKind::Dir {
            return Err(Errno::EACCES);
        }
        return Ok((Some(parsed.to_value()), perm));
    }
    let perm = parsed.apply_to_mode(perm);
    Ok(((!parsed.is_minimal()).then(|| parsed.to_value()), perm))
}
