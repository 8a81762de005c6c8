//! Turns a closed VCT into journal operations on backing paths.
//!
//! Entries name inodes; the journal names paths, because recovery must work
//! with nothing but the backing store. Paths come from the committed tree,
//! which this step advances entry by entry, so each operation's paths are the
//! ones the backing store will have when that operation is applied.

use crate::cache::VersionContent;
use crate::committed::{orphan_path, CommittedTree};
use crate::journal::JournalOp;
use crate::types::*;
use crate::vct::{ClosedEntry, LogEntry};
use crate::write_run::PagePart;
use crate::STATE_DIR;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// The inode an entry is about, for entries that concern one inode only (a
/// link, a rename over another name and an exchange concern two).
fn entry_inode(entry: &ClosedEntry) -> Option<Ino> {
    match entry {
        ClosedEntry::Other(
            LogEntry::Link { .. } | LogEntry::Rename { replaced: Some(_), .. } | LogEntry::Exchange { .. },
        ) => None,
        entry => Some(entry.ino()),
    }
}

/// Non-directory inodes created and removed within one batch, never linked,
/// renamed only to free names (never over another name, nor replaced), and
/// no longer open: a batch commits atomically, so they need no operation at
/// all (SQLite's rollback journal and temporary files are the common case,
/// and stress-ng's create, rename, rename, unlink loop). An `O_TMPFILE`
/// file is born without a name: unless a link names it, it is gone once
/// closed.
pub fn born_and_gone<'e>(entries: impl Iterator<Item = &'e ClosedEntry>, live: &dyn Fn(Ino) -> bool) -> InoSet {
    #[derive(Default)]
    struct Life {
        created: bool,
        removed: bool,
        moved: bool,
    }
    let mut lives: InoMap<Life> = InoMap::default();
    for entry in entries {
        let ClosedEntry::Other(e) = entry else { continue };
        match e {
            // Directories never qualify: entries of other inodes name them.
            LogEntry::Create { ino, kind, .. } if *kind != FileKind::Dir => {
                lives.entry(*ino).or_default().created = true
            }
            LogEntry::Symlink { ino, .. } => lives.entry(*ino).or_default().created = true,
            LogEntry::Tmpfile { ino, .. } => {
                let life = lives.entry(*ino).or_default();
                (life.created, life.removed) = (true, true);
            }
            LogEntry::Unlink { ino, .. } => lives.entry(*ino).or_default().removed = true,
            LogEntry::Link { ino, .. } | LogEntry::Rename { ino, replaced: Some(_), .. } => {
                lives.entry(*ino).or_default().moved = true
            }
            // Swapping a name with itself changes nothing.
            LogEntry::Exchange { parent, name, new_parent, new_name } if (parent, name) == (new_parent, new_name) => {}
            LogEntry::Exchange { .. } => return InoSet::default(), // rare: keep everything
            _ => {}
        }
        if let LogEntry::Rename { replaced: Some(r), .. } = e {
            lives.entry(*r).or_default().moved = true;
        }
    }
    lives.into_iter().filter(|(ino, l)| l.created && l.removed && !l.moved && !live(*ino)).map(|(ino, _)| ino).collect()
}

/// The bytes a write entry puts at `offset` of the backing file at `path`.
pub struct PageWrite<'c, 'e> {
    pub path: &'c Path,
    pub offset: u64,
    pub piece: PagePart<'e>,
}

pub struct Compiler<'a> {
    pub tree: &'a mut CommittedTree,
    /// Whether an inode is still known to the live file system (open, or
    /// named, or referenced by later log entries): such an inode that loses
    /// its last backing name is kept as an orphan instead of being deleted.
    pub still_live: &'a dyn Fn(Ino) -> bool,
    /// Set owners in the backing store (needs root).
    pub preserve_owner: bool,
    /// Inodes born and gone within the batch: none of their entries matter.
    pub skip: &'a InoSet,
    pub ops: Vec<JournalOp>,
    /// The backing path of the inode the last entry wrote: a batch writes
    /// files page by page, and only a metadata entry can change a path.
    last_written: Option<(Ino, PathBuf)>,
}

impl<'a> Compiler<'a> {
    pub fn new(
        tree: &'a mut CommittedTree,
        still_live: &'a dyn Fn(Ino) -> bool,
        preserve_owner: bool,
        skip: &'a InoSet,
    ) -> Compiler<'a> {
        Compiler { tree, still_live, preserve_owner, skip, ops: Vec::new(), last_written: None }
    }

    /// Compiles one entry: a metadata entry into `ops`; a write is given
    /// back as its page, borrowed from the batch (the caller joins pages
    /// into runs, `write_run`).
    pub fn entry<'c, 'e>(&'c mut self, entry: &'e ClosedEntry) -> Option<PageWrite<'c, 'e>> {
        if entry_inode(entry).is_some_and(|ino| self.skip.contains(&ino)) {
            return None;
        }
        match entry {
            ClosedEntry::Write { ino, page, data, len, .. } => {
                let path = self.written_path(*ino)?;
                let piece = match data.content() {
                    VersionContent::Bytes(bytes) => PagePart::Bytes(&bytes[..*len]),
                    VersionContent::Known(known) => PagePart::Known { known: known.min(*len), len: *len },
                };
                Some(PageWrite { path, offset: page * PAGE_SIZE, piece })
            }
            ClosedEntry::Other(e) => {
                self.last_written = None;
                self.metadata(e);
                None
            }
        }
    }

    /// The backing path of an inode being written, if it has one.
    fn written_path(&mut self, ino: Ino) -> Option<&Path> {
        if self.last_written.as_ref().is_none_or(|(last, _)| *last != ino) {
            self.last_written = Some((ino, self.tree.path(ino)?));
        }
        self.last_written.as_ref().map(|(_, path)| path.as_path())
    }

    fn metadata(&mut self, e: &LogEntry) {
        match e {
            LogEntry::Write { .. } => unreachable!("writes are closed with their data"),
            LogEntry::SetLen { ino, size } => self.on_path(*ino, |path| JournalOp::SetLen { path, size: *size }),
            LogEntry::Create { ino, parent, name, kind, perm, rdev, uid, gid } => {
                let Some(path) = self.tree.child_path(*parent, name) else { return };
                self.ops.push(JournalOp::Create { path: path.clone(), kind: *kind, perm: *perm, rdev: *rdev });
                self.owner(path, *uid, *gid, Some(*perm));
                self.tree.add_link(*ino, *parent, name);
            }
            LogEntry::Symlink { ino, parent, name, target, uid, gid } => {
                let Some(path) = self.tree.child_path(*parent, name) else { return };
                self.ops.push(JournalOp::Symlink { path: path.clone(), target: target.clone() });
                self.owner(path, *uid, *gid, None);
                self.tree.add_link(*ino, *parent, name);
            }
            LogEntry::Link { ino, parent, name } => {
                let (Some(existing), Some(new)) = (self.tree.path(*ino), self.tree.child_path(*parent, name)) else {
                    return;
                };
                // An orphan (an O_TMPFILE file) moves to its first name rather
                // than keep a second one under `.mcfs/orphans/`.
                if self.tree.is_orphan(*ino) {
                    self.ops.push(JournalOp::Rename { from: existing, to: new });
                } else {
                    self.ops.push(JournalOp::Link { existing, new });
                }
                self.tree.add_link(*ino, *parent, name);
            }
            LogEntry::Unlink { ino, parent, name } => self.remove_name(*ino, *parent, name),
            LogEntry::Rmdir { ino, parent, name } => {
                let Some(path) = self.tree.child_path(*parent, name) else { return };
                self.ops.push(JournalOp::RemoveDir { path });
                self.tree.forget(*ino);
            }
            LogEntry::Rename { ino, parent, name, new_parent, new_name, replaced } => {
                let (Some(from), Some(to)) =
                    (self.tree.child_path(*parent, name), self.tree.child_path(*new_parent, new_name))
                else {
                    return;
                };
                if let Some(r) = replaced {
                    self.detach_replaced(*r, *new_parent, new_name, &to);
                }
                self.ops.push(JournalOp::Rename { from, to });
                self.tree.remove_link(*ino, *parent, name);
                self.tree.add_link(*ino, *new_parent, new_name);
            }
            LogEntry::Exchange { parent, name, new_parent, new_name } => {
                self.exchange(*parent, name, *new_parent, new_name);
            }
            LogEntry::SetPerm { ino, perm } => self.on_path(*ino, |path| JournalOp::SetPerm { path, perm: *perm }),
            LogEntry::SetOwner { ino, uid, gid } => {
                if self.preserve_owner {
                    self.on_path(*ino, |path| JournalOp::SetOwner { path, uid: *uid, gid: *gid })
                }
            }
            LogEntry::SetTimes { ino, atime, mtime } => {
                self.on_path(*ino, |path| JournalOp::SetTimes { path, atime: *atime, mtime: *mtime })
            }
            LogEntry::SetXattr { ino, name, value } => {
                self.on_path(*ino, |path| JournalOp::SetXattr { path, name: name.clone(), value: value.clone() })
            }
            LogEntry::RemoveXattr { ino, name } => {
                self.on_path(*ino, |path| JournalOp::RemoveXattr { path, name: name.clone() })
            }
            LogEntry::Fallocate { ino, mode, offset, len } => {
                self.on_path(*ino, |path| JournalOp::Fallocate { path, mode: *mode, offset: *offset, len: *len })
            }
            LogEntry::Tmpfile { ino, perm, uid, gid } => {
                let path = orphan_path(*ino);
                self.ops.push(JournalOp::Create { path: path.clone(), kind: FileKind::File, perm: *perm, rdev: 0 });
                self.owner(path, *uid, *gid, Some(*perm));
                self.tree.make_orphan(*ino);
            }
        }
    }

    /// Emits an operation on the inode's current backing path; an inode with
    /// none (already deleted from the backing store) needs nothing.
    fn on_path(&mut self, ino: Ino, op: impl FnOnce(PathBuf) -> JournalOp) {
        if let Some(path) = self.tree.path(ino) {
            self.ops.push(op(path));
        }
    }

    /// chown clears set-id bits, so the mode is set again after it.
    fn owner(&mut self, path: PathBuf, uid: u32, gid: u32, perm: Option<u32>) {
        if !self.preserve_owner {
            return;
        }
        self.ops.push(JournalOp::SetOwner { path: path.clone(), uid, gid });
        if let Some(perm) = perm.filter(|p| p & 0o6000 != 0) {
            self.ops.push(JournalOp::SetPerm { path, perm });
        }
    }

    fn remove_name(&mut self, ino: Ino, parent: Ino, name: &OsStr) {
        let Some(path) = self.tree.child_path(parent, name) else { return };
        if self.tree.remove_link(ino, parent, name) && (self.still_live)(ino) {
            self.ops.push(JournalOp::Rename { from: path, to: orphan_path(ino) });
            self.tree.make_orphan(ino);
        } else {
            self.ops.push(JournalOp::RemoveFile { path });
            if self.tree.path(ino).is_none() {
                self.tree.forget(ino);
            }
        }
    }

    /// The inode a rename replaces loses a name; if that was its last one and
    /// it is still open, it moves to the orphans before the rename.
    fn detach_replaced(&mut self, replaced: Ino, parent: Ino, name: &OsStr, path: &std::path::Path) {
        if self.tree.remove_link(replaced, parent, name) {
            if (self.still_live)(replaced) {
                self.ops.push(JournalOp::Rename { from: path.to_owned(), to: orphan_path(replaced) });
                self.tree.make_orphan(replaced);
            } else {
                self.tree.forget(replaced);
            }
        }
    }

    /// RENAME_EXCHANGE as three renames through a scratch name, each of which
    /// replay can tell done from not done.
    fn exchange(&mut self, parent: Ino, name: &OsStr, new_parent: Ino, new_name: &OsStr) {
        let (Some(a), Some(b)) = (self.tree.child_path(parent, name), self.tree.child_path(new_parent, new_name))
        else {
            return;
        };
        let scratch = PathBuf::from(STATE_DIR).join("exchange");
        self.ops.push(JournalOp::Rename { from: a.clone(), to: scratch.clone() });
        self.ops.push(JournalOp::Rename { from: b.clone(), to: a });
        self.ops.push(JournalOp::Rename { from: scratch, to: b });
        self.tree.swap_entries(parent, name, new_parent, new_name);
    }
}
