//! The live inode: what the mount shows now (committed state plus every
//! pending operation). Directory children are loaded from the backing store
//! on first use; once loaded, the in-memory listing is authoritative.

use crate::children::Children;
use crate::file_space::SpaceMap;
use crate::types::*;
use crate::vct::AppId;
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{OsStr, OsString};
use std::ops::Range;
use std::time::SystemTime;

pub struct Inode {
    pub attr: Attr,
    /// The app whose write log receives this file's data operations.
    pub app: AppId,
    /// Children by name, once loaded (directories only).
    pub children: Option<Children>,
    /// Parent directory (for `..` and for directory renames).
    pub parent: Ino,
    pub symlink_target: Option<OsString>,
    /// Extended attributes, once loaded.
    pub xattrs: Option<BTreeMap<OsString, Vec<u8>>>,
    /// Backing data at or beyond this offset must not be read: a pending
    /// truncate cut it off (zeros until a newer write says otherwise).
    pub backing_valid_len: u64,
    /// Sizes of truncates still pending in the write log, oldest first, with
    /// the sequence number of the log entry that made them.
    pub pending_truncates: Vec<(u64, u64)>,
    /// Byte ranges pending punch-holes and zero-ranges cleared, with the id
    /// of the VCT that logged each: backing data there must not be read
    /// until that VCT commits (zeros until a newer write says otherwise).
    pub pending_zeroed: Vec<(u64, Range<u64>)>,
    /// Which pages hold data or reserved space, once an operation changed
    /// that (`file_space`); `None`: as the backing file has it.
    pub space: Option<SpaceMap>,
    /// Bumped by every write and truncate: a read that fetched pages without
    /// the state lock caches them only if this did not change meanwhile.
    pub data_gen: u64,
    /// Kernel references (lookup count) and open handles.
    pub lookups: u64,
    pub opens: u64,
    /// The last pending change to this inode or its entries: (app, vct id).
    pub last_change: Option<(AppId, u64)>,
    /// The last pending rename or exchange of this inode: (app, vct id).
    /// A name made or removed below it builds on that move (`State::log`).
    pub last_move: Option<(AppId, u64)>,
    /// The file's size in the backing store once what is committed is applied.
    pub backing_size: u64,
    /// Written pages beyond `backing_size`, not committed yet: each needs a
    /// new backing block (`space`).
    pub new_blocks: BTreeSet<u64>,
}

impl Inode {
    pub fn new(attr: Attr, app: AppId, parent: Ino) -> Inode {
        let children = (attr.kind == FileKind::Dir).then(Children::default);
        let backing_size = attr.size;
        Inode {
            backing_valid_len: u64::MAX,
            attr,
            app,
            children,
            parent,
            symlink_target: None,
            xattrs: None,
            pending_truncates: Vec::new(),
            pending_zeroed: Vec::new(),
            space: None,
            data_gen: 0,
            lookups: 0,
            opens: 0,
            last_change: None,
            last_move: None,
            backing_size,
            new_blocks: BTreeSet::new(),
        }
    }

    pub fn is_dir(&self) -> bool {
        self.attr.kind == FileKind::Dir
    }

    pub fn child(&self, name: &OsStr) -> Option<Ino> {
        self.children.as_ref().and_then(|c| c.get(name))
    }

    pub fn touch_mtime(&mut self, now: SystemTime) {
        self.attr.mtime = now;
        self.attr.ctime = now;
    }

    /// Whether the engine may forget this inode: nothing refers to it.
    pub fn unreferenced(&self) -> bool {
        self.attr.nlink == 0 && self.lookups == 0 && self.opens == 0
    }
}
