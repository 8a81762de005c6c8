//! Extended attributes: loaded from the backing store on first use, changed in
//! memory and logged like any other metadata operation.

use crate::engine::Engine;
use crate::state::State;
use crate::types::*;
use crate::vct::LogEntry;
use std::ffi::{OsStr, OsString};

impl Engine {
    fn load_xattrs(&self, st: &mut State, ino: Ino) -> FsResult<()> {
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
        let now = self.clock.now();
        let mut st = self.state.lock();
        self.load_xattrs(&mut st, ino)?;
        let app = st.app_of_uid(caller.uid);
        let inode = st.inode_mut(ino)?;
        let xattrs = inode.xattrs.as_mut().expect("loaded");
        match (mode, xattrs.contains_key(name)) {
            (XattrMode::CreateOnly, true) => return Err(Errno::EEXIST),
            (XattrMode::ReplaceOnly, false) => return Err(Errno::ENODATA),
            _ => {}
        }
        xattrs.insert(name.to_owned(), value.to_vec());
        inode.attr.ctime = now;
        st.log(app, LogEntry::SetXattr { ino, name: name.to_owned(), value: value.to_vec() }, &[ino], now);
        Ok(())
    }

    pub fn removexattr(&self, caller: Caller, ino: Ino, name: &OsStr) -> FsResult<()> {
        let now = self.clock.now();
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
}
