//! `rename(2)` and `renameat2(2)` (RENAME_NOREPLACE, RENAME_EXCHANGE,
//! RENAME_WHITEOUT) on the live namespace, logged as one entry in the
//! caller's app's write log (a whiteout adds the creation of its device
//! node at the old name, in the same VCT).

use crate::engine::{check_name, Engine, NewNode};
use crate::state::State;
use crate::types::*;
use crate::vct::{AppId, LogEntry};
use std::ffi::OsStr;

impl Engine {
    pub fn rename(
        &self,
        caller: Caller,
        parent: Ino,
        name: &OsStr,
        new_parent: Ino,
        new_name: &OsStr,
        mode: RenameMode,
    ) -> FsResult<()> {
        check_name(new_parent, new_name)?;
        check_name(parent, name)?;
        self.limits.check_name(new_name)?;
        let whiteout = matches!(mode, RenameMode::Whiteout | RenameMode::WhiteoutNoReplace);
        // A whiteout is a character device: only root can make one in the backing store.
        if whiteout && !self.preserve_owner {
            return Err(Errno::EPERM);
        }
        let mode = match mode {
            RenameMode::Whiteout => RenameMode::Replace,
            RenameMode::WhiteoutNoReplace => RenameMode::NoReplace,
            other => other,
        };
        let now = self.clock.file_time();
        let mut st = self.state.lock();
        let src = st.find(&self.store(), parent, name)?.ok_or(Errno::ENOENT)?;
        let dst = st.find(&self.store(), new_parent, new_name)?;
        let app = st.app_of_uid(caller.uid);
        self.sync_point(&mut st, app, now);
        let src_dir = st.inode(src)?.is_dir();
        if src_dir && (new_parent == src || self.is_ancestor(&st, src, new_parent)) {
            return Err(Errno::EINVAL);
        }
        match (mode, dst) {
            (RenameMode::NoReplace, Some(_)) => return Err(Errno::EEXIST),
            (RenameMode::Exchange, None) => return Err(Errno::ENOENT),
            (RenameMode::Exchange, Some(dst)) => {
                if st.inode(dst)?.is_dir() && (parent == dst || self.is_ancestor(&st, dst, parent)) {
                    return Err(Errno::EINVAL);
                }
                return self.exchange(&mut st, app, (parent, name, src), (new_parent, new_name, dst));
            }
            (_, Some(dst)) if dst == src => return Ok(()),
            (_, Some(dst)) => {
                let dst_dir = st.inode(dst)?.is_dir();
                if src_dir && !dst_dir {
                    return Err(Errno::ENOTDIR);
                }
                if !src_dir && dst_dir {
                    return Err(Errno::EISDIR);
                }
                if dst_dir {
                    st.load_dir(&self.store(), dst)?;
                    if st.inode(dst)?.children.as_ref().is_some_and(|c| !c.is_empty()) {
                        return Err(Errno::ENOTEMPTY);
                    }
                }
            }
            (_, None) => {}
        }
        st.inode_mut(parent)?.children.as_mut().expect("loaded").remove(name);
        st.inode_mut(new_parent)?.children.as_mut().expect("loaded").insert(new_name, src);
        if let Some(dst) = dst {
            let d = st.inode_mut(dst)?;
            d.attr.nlink = if d.is_dir() { 0 } else { d.attr.nlink - 1 };
            d.attr.ctime = now;
            if d.is_dir() {
                st.inode_mut(new_parent)?.attr.nlink -= 1;
            }
        }
        if src_dir && parent != new_parent {
            st.inode_mut(parent)?.attr.nlink -= 1;
            st.inode_mut(new_parent)?.attr.nlink += 1;
        }
        for dir in [parent, new_parent] {
            st.inode_mut(dir)?.touch_mtime(now);
            st.apps.list[app].open.touch(dir);
        }
        let s = st.inode_mut(src)?;
        s.parent = new_parent;
        s.attr.ctime = now;
        let mut touched = vec![parent, new_parent, src];
        touched.extend(dst);
        let entry = LogEntry::Rename {
            ino: src,
            parent,
            name: name.to_owned(),
            new_parent,
            new_name: new_name.to_owned(),
            replaced: dst,
        };
        st.log(app, entry, &touched, now);
        if let Some(dst) = dst {
            st.drop_if_unreferenced(dst, &self.tree);
        }
        if whiteout {
            let node = NewNode { kind: FileKind::CharDev, perm: 0.into(), rdev: 0, target: None };
            self.new_node(&mut st, caller, parent, name, node)?;
        }
        Ok(())
    }

    /// Whether `ancestor` is a proper ancestor of directory `ino`.
    fn is_ancestor(&self, st: &State, ancestor: Ino, mut ino: Ino) -> bool {
        while ino != ROOT_INO {
            let Some(i) = st.inodes.get(&ino) else { return false };
            ino = i.parent;
            if ino == ancestor {
                return true;
            }
        }
        false
    }

    fn exchange(
        &self,
        st: &mut State,
        app: AppId,
        (p1, n1, a): (Ino, &OsStr, Ino),
        (p2, n2, b): (Ino, &OsStr, Ino),
    ) -> FsResult<()> {
        let now = self.clock.file_time();
        st.inode_mut(p1)?.children.as_mut().expect("loaded").insert(n1, b);
        st.inode_mut(p2)?.children.as_mut().expect("loaded").insert(n2, a);
        if p1 != p2 {
            let (a_dir, b_dir) = (st.inode(a)?.is_dir(), st.inode(b)?.is_dir());
            let delta = a_dir as i64 - b_dir as i64;
            st.inode_mut(p1)?.attr.nlink = (st.inode(p1)?.attr.nlink as i64 - delta) as u32;
            st.inode_mut(p2)?.attr.nlink = (st.inode(p2)?.attr.nlink as i64 + delta) as u32;
        }
        st.inode_mut(a)?.parent = p2;
        st.inode_mut(b)?.parent = p1;
        for ino in [a, b] {
            st.inode_mut(ino)?.attr.ctime = now;
        }
        for dir in [p1, p2] {
            st.inode_mut(dir)?.touch_mtime(now);
            st.apps.list[app].open.touch(dir);
        }
        let entry = LogEntry::Exchange { parent: p1, name: n1.to_owned(), new_parent: p2, new_name: n2.to_owned() };
        // Noted in the VCT that logs the exchange: in sync-point mode `log`
        // may close it right after (`sync_points::after_changing_other_apps`).
        st.note_move(app, a);
        st.note_move(app, b);
        st.log(app, entry, &[p1, p2, a, b], now);
        Ok(())
    }
}
