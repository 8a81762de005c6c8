//! The answers `McfsFs` gives, as traits both transports implement: fuser's
//! reply types (the `/dev/fuse` session) and the ring's (`uring::Reply`,
//! `DirReply`, `DirPlusReply`). Method names and arguments are fuser's, so
//! each op of `McfsFs` is written once and answers either transport.

use crate::uring::{DirPlusReply, DirReply, Reply};
use fuser::{
    Errno, FileAttr, FileHandle, FileType, FopenFlags, Generation, INodeNo, ReplyAttr, ReplyCreate, ReplyData,
    ReplyDirectory, ReplyDirectoryPlus, ReplyEmpty, ReplyEntry, ReplyLseek, ReplyOpen, ReplyStatfs, ReplyWrite,
    ReplyXattr,
};
use std::ffi::OsStr;
use std::time::Duration;

/// Any answer: an error instead of the op's result.
pub(crate) trait Answer: Send + 'static {
    fn error(self, err: Errno);
}

/// Declares an answer trait with its methods and implements it for the
/// fuser reply type given and for the ring's `Reply`, both by forwarding.
macro_rules! answers {
    ($($trait:ident for $fuser:ty { $(fn $name:ident($($arg:ident: $ty:ty),*);)* })*) => {$(
        // statfs takes fuser's eight values.
        #[allow(clippy::too_many_arguments)]
        pub(crate) trait $trait: Answer {
            $(fn $name(self, $($arg: $ty),*);)*
        }
        impl Answer for $fuser {
            fn error(self, err: Errno) {
                <$fuser>::error(self, err)
            }
        }
        impl $trait for $fuser {
            $(fn $name(self, $($arg: $ty),*) {
                <$fuser>::$name(self, $($arg),*)
            })*
        }
        impl $trait for Reply {
            $(fn $name(self, $($arg: $ty),*) {
                Reply::$name(self, $($arg),*)
            })*
        }
    )*};
}

answers! {
    EntryAnswer for ReplyEntry {
        fn entry(ttl: &Duration, attr: &FileAttr, generation: Generation);
        fn entry_with_ttls(attr_ttl: &Duration, entry_ttl: &Duration, attr: &FileAttr, generation: Generation);
    }
    AttrAnswer for ReplyAttr {
        fn attr(ttl: &Duration, attr: &FileAttr);
    }
    DataAnswer for ReplyData {
        fn data(data: &[u8]);
    }
    EmptyAnswer for ReplyEmpty {
        fn ok();
    }
    OpenAnswer for ReplyOpen {
        fn opened(fh: FileHandle, flags: FopenFlags);
    }
    WriteAnswer for ReplyWrite {
        fn written(size: u32);
    }
    CreateAnswer for ReplyCreate {
        fn created(ttl: &Duration, attr: &FileAttr, generation: Generation, fh: FileHandle, flags: FopenFlags);
    }
    StatfsAnswer for ReplyStatfs {
        fn statfs(blocks: u64, bfree: u64, bavail: u64, files: u64, ffree: u64, bsize: u32, namelen: u32, frsize: u32);
    }
    XattrAnswer for ReplyXattr {
        fn size(size: u32);
        fn data(data: &[u8]);
    }
    LseekAnswer for ReplyLseek {
        fn offset(offset: i64);
    }
}

impl Answer for fuser::ReplyIoctl {
    fn error(self, err: Errno) {
        fuser::ReplyIoctl::error(self, err)
    }
}

impl Answer for Reply {
    fn error(self, err: Errno) {
        Reply::error(self, err)
    }
}

/// A readdir answer, filled entry by entry.
pub(crate) trait DirAnswer: Answer {
    /// Adds an entry; true if the answer is full (the entry was not added).
    fn add(&mut self, ino: INodeNo, offset: u64, kind: FileType, name: &OsStr) -> bool;
    fn ok(self);
}

/// A readdirplus answer, filled entry by entry.
pub(crate) trait DirPlusAnswer: Answer {
    /// Adds an entry; true if the answer is full (the entry was not added).
    fn add(
        &mut self,
        ino: INodeNo,
        offset: u64,
        name: &OsStr,
        ttl: &Duration,
        attr: &FileAttr,
        gen: Generation,
    ) -> bool;
    fn ok(self);
}

/// Implements `Answer` and the directory trait `$trait` for `$type` by forwarding.
macro_rules! dir_answer {
    ($trait:ident for $type:ty { fn add($($arg:ident: $ty:ty),*) }) => {
        impl Answer for $type {
            fn error(self, err: Errno) {
                <$type>::error(self, err)
            }
        }
        impl $trait for $type {
            fn add(&mut self, $($arg: $ty),*) -> bool {
                <$type>::add(self, $($arg),*)
            }
            fn ok(self) {
                <$type>::ok(self)
            }
        }
    };
}

dir_answer!(DirAnswer for ReplyDirectory { fn add(ino: INodeNo, offset: u64, kind: FileType, name: &OsStr) });
dir_answer!(DirAnswer for DirReply { fn add(ino: INodeNo, offset: u64, kind: FileType, name: &OsStr) });
dir_answer!(DirPlusAnswer for ReplyDirectoryPlus {
    fn add(ino: INodeNo, offset: u64, name: &OsStr, ttl: &Duration, attr: &FileAttr, gen: Generation)
});
dir_answer!(DirPlusAnswer for DirPlusReply {
    fn add(ino: INodeNo, offset: u64, name: &OsStr, ttl: &Duration, attr: &FileAttr, gen: Generation)
});
