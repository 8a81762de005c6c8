//! POSIX.1e access control lists as Linux keeps them in extended attributes
//! (`system.posix_acl_access`, `system.posix_acl_default`): reading and
//! writing that binary format, and the rules that keep an ACL and the file
//! mode in step. Linux file systems get these rules from the kernel's
//! `posix_acl_*` helpers; a FUSE daemon that asks for `FUSE_POSIX_ACL` has
//! to keep them itself (the kernel only enforces the ACLs it reads back):
//!
//! * the mode's rwx bits show the ACL: owner = the owner entry, group = the
//!   mask entry (the owning-group entry when there is no mask), other = the
//!   other entry. An ACL of those three entries alone says no more than the
//!   mode and is kept as the mode alone (`is_minimal`);
//! * chmod sets those three entries from the new mode (`chmod`);
//! * a new object in a directory with a default ACL gets that ACL as its
//!   access ACL, cut down to the mode the creator asked for, and no umask
//!   (`inherit`); a new directory also gets it as its own default ACL.
//!
//! Format (little-endian): a 4-byte version (2), then one 8-byte entry per
//! line: tag (u16), rwx bits (u16), id (u32: the uid or gid of a named
//! entry, -1 otherwise). A valid ACL lists, in this order, one owner entry,
//! named users, one owning-group entry, named groups, a mask (required when
//! there are named entries) and one other entry.

use crate::types::{Errno, FsResult};

/// The access ACL: what the kernel checks permissions against.
pub const ACCESS: &str = "system.posix_acl_access";
/// A directory's default ACL: what new objects in it inherit.
pub const DEFAULT: &str = "system.posix_acl_default";

const VERSION: u32 = 2;
const HEADER_BYTES: usize = 4;
const ENTRY_BYTES: usize = 8;
/// The id of entries that name nobody (owner, owning group, mask, other).
const NO_ID: u32 = u32::MAX;
const RWX: u32 = 0o7;

/// The kind of an entry, with its tag value in the format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tag {
    Owner = 0x01,
    User = 0x02,
    OwningGroup = 0x04,
    Group = 0x08,
    Mask = 0x10,
    Other = 0x20,
}

impl Tag {
    fn from_bits(bits: u16) -> FsResult<Tag> {
        Ok(match bits {
            0x01 => Tag::Owner,
            0x02 => Tag::User,
            0x04 => Tag::OwningGroup,
            0x08 => Tag::Group,
            0x10 => Tag::Mask,
            0x20 => Tag::Other,
            _ => return Err(Errno::EINVAL),
        })
    }

    fn is_named(self) -> bool {
        matches!(self, Tag::User | Tag::Group)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    tag: Tag,
    /// rwx bits.
    perm: u32,
    /// Meaningful for named entries only.
    id: u32,
}

/// A valid ACL (see the module comment).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Acl {
    entries: Vec<Entry>,
}

impl Acl {
    /// Parses an attribute value. `Ok(None)` for an ACL without entries
    /// (setting one removes the ACL, as on Linux); `EOPNOTSUPP` for another
    /// version; `EINVAL` for anything malformed or not valid.
    pub fn parse(value: &[u8]) -> FsResult<Option<Acl>> {
        if value.is_empty() {
            return Ok(None);
        }
        if value.len() < HEADER_BYTES || !(value.len() - HEADER_BYTES).is_multiple_of(ENTRY_BYTES) {
            return Err(Errno::EINVAL);
        }
        let u16_at = |at: usize| u16::from_le_bytes([value[at], value[at + 1]]);
        let u32_at = |at: usize| u32::from_le_bytes([value[at], value[at + 1], value[at + 2], value[at + 3]]);
        if u32_at(0) != VERSION {
            return Err(Errno::ENOTSUP);
        }
        let mut entries = Vec::new();
        for at in (HEADER_BYTES..value.len()).step_by(ENTRY_BYTES) {
            let tag = Tag::from_bits(u16_at(at))?;
            let perm = u32::from(u16_at(at + 2));
            if perm & !RWX != 0 {
                return Err(Errno::EINVAL);
            }
            let id = if tag.is_named() { u32_at(at + 4) } else { NO_ID };
            entries.push(Entry { tag, perm, id });
        }
        if entries.is_empty() {
            return Ok(None);
        }
        let acl = Acl { entries };
        acl.check_order()?;
        Ok(Some(acl))
    }

    /// The order rule of the module comment, as Linux checks it.
    fn check_order(&self) -> FsResult<()> {
        // Which tags may come next, as a walk through the required order.
        #[derive(PartialEq)]
        enum Expect {
            Owner,
            Users,
            Groups,
            Other,
            Done,
        }
        let mut expect = Expect::Owner;
        let mut named = false;
        for e in &self.entries {
            expect = match (e.tag, expect) {
                (Tag::Owner, Expect::Owner) => Expect::Users,
                (Tag::User, Expect::Users) => Expect::Users,
                (Tag::OwningGroup, Expect::Users) => Expect::Groups,
                (Tag::Group, Expect::Groups) => Expect::Groups,
                (Tag::Mask, Expect::Groups) => Expect::Other,
                (Tag::Other, Expect::Other) => Expect::Done,
                (Tag::Other, Expect::Groups) if !named => Expect::Done,
                _ => return Err(Errno::EINVAL),
            };
            named |= e.tag.is_named();
        }
        if expect != Expect::Done {
            return Err(Errno::EINVAL);
        }
        Ok(())
    }

    /// The attribute value.
    pub fn to_value(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_BYTES + ENTRY_BYTES * self.entries.len());
        out.extend_from_slice(&VERSION.to_le_bytes());
        for e in &self.entries {
            out.extend_from_slice(&(e.tag as u16).to_le_bytes());
            out.extend_from_slice(&(e.perm as u16).to_le_bytes());
            out.extend_from_slice(&e.id.to_le_bytes());
        }
        out
    }

    fn entry_mut(&mut self, tag: Tag) -> Option<&mut Entry> {
        self.entries.iter_mut().find(|e| e.tag == tag)
    }

    fn perm_of(&self, tag: Tag) -> Option<u32> {
        self.entries.iter().find(|e| e.tag == tag).map(|e| e.perm)
    }

    /// The entry the mode's group bits show: the mask, else the owning group.
    fn group_class(&self) -> Tag {
        if self.perm_of(Tag::Mask).is_some() {
            Tag::Mask
        } else {
            Tag::OwningGroup
        }
    }

    /// The mode's rwx bits (`0o777` at most) this ACL shows.
    pub fn mode_bits(&self) -> u32 {
        let bits = |tag| self.perm_of(tag).unwrap_or(0);
        bits(Tag::Owner) << 6 | bits(self.group_class()) << 3 | bits(Tag::Other)
    }

    /// `perm` with its rwx bits replaced by this ACL's (special bits kept).
    pub fn apply_to_mode(&self, perm: u32) -> u32 {
        (perm & !0o777) | self.mode_bits()
    }

    /// Whether the mode alone says it all: no named entry and no mask.
    pub fn is_minimal(&self) -> bool {
        self.entries.len() == 3
    }

    /// chmod: the owner, group-class and other entries take `perm`'s bits;
    /// named entries keep theirs.
    pub fn chmod(&mut self, perm: u32) {
        let group_class = self.group_class();
        for (tag, shift) in [(Tag::Owner, 6), (group_class, 3), (Tag::Other, 0)] {
            if let Some(e) = self.entry_mut(tag) {
                e.perm = (perm >> shift) & RWX;
            }
        }
    }

    /// What a new object created with permission bits `perm` in a directory
    /// with this default ACL gets: its access ACL (`None` when the mode says
    /// it all) and its permission bits — the requested ones cut down to
    /// what the ACL grants, in both directions.
    pub fn inherit(&self, perm: u32) -> (Option<Acl>, u32) {
        let mut acl = self.clone();
        let group_class = acl.group_class();
        for (tag, shift) in [(Tag::Owner, 6), (group_class, 3), (Tag::Other, 0)] {
            if let Some(e) = acl.entry_mut(tag) {
                e.perm &= (perm >> shift) & RWX;
            }
        }
        let perm = acl.apply_to_mode(perm);
        ((!acl.is_minimal()).then_some(acl), perm)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An ACL value from (tag, perm, id) triples.
    fn value(entries: &[(u16, u16, u32)]) -> Vec<u8> {
        let mut out = VERSION.to_le_bytes().to_vec();
        for (tag, perm, id) in entries {
            out.extend_from_slice(&tag.to_le_bytes());
            out.extend_from_slice(&perm.to_le_bytes());
            out.extend_from_slice(&id.to_le_bytes());
        }
        out
    }

    const U: u32 = NO_ID;

    fn parse(entries: &[(u16, u16, u32)]) -> FsResult<Option<Acl>> {
        Acl::parse(&value(entries))
    }

    /// `setfacl -m u:10001:---` on a mode 666 file, as the kernel encodes it.
    fn named_user_denied() -> Acl {
        parse(&[(0x01, 6, U), (0x02, 0, 10001), (0x04, 6, U), (0x10, 6, U), (0x20, 6, U)]).unwrap().unwrap()
    }

    #[test]
    fn a_valid_acl_round_trips_through_the_format() {
        let acl = named_user_denied();
        let bytes = acl.to_value();
        assert_eq!(bytes.len(), 4 + 5 * 8);
        assert_eq!(&bytes[..4], &[2, 0, 0, 0]);
        assert_eq!(&bytes[12..20], &[0x02, 0, 0, 0, 0x11, 0x27, 0, 0], "user 10001, no permission");
        assert_eq!(Acl::parse(&bytes).unwrap(), Some(acl));
    }

    #[test]
    fn ids_of_unnamed_entries_are_ignored_and_written_as_minus_one() {
        let acl = parse(&[(0x01, 7, 5), (0x04, 5, 6), (0x20, 4, 7)]).unwrap().unwrap();
        assert_eq!(acl.to_value(), value(&[(0x01, 7, U), (0x04, 5, U), (0x20, 4, U)]));
    }

    #[test]
    fn empty_acls_remove_and_malformed_ones_are_refused() {
        assert_eq!(Acl::parse(b""), Ok(None));
        assert_eq!(parse(&[]), Ok(None), "a header without entries");
        assert_eq!(Acl::parse(&[2, 0, 0]), Err(Errno::EINVAL), "short header");
        let mut torn = value(&[(0x01, 7, U), (0x04, 5, U), (0x20, 4, U)]);
        torn.pop();
        assert_eq!(Acl::parse(&torn), Err(Errno::EINVAL), "not a whole number of entries");
        let mut old = value(&[(0x01, 7, U), (0x04, 5, U), (0x20, 4, U)]);
        old[0] = 1;
        assert_eq!(Acl::parse(&old), Err(Errno::ENOTSUP), "another version");
        assert_eq!(parse(&[(0x01, 8, U), (0x04, 5, U), (0x20, 4, U)]), Err(Errno::EINVAL), "perm beyond rwx");
        assert_eq!(parse(&[(0x01, 7, U), (0x40, 5, U), (0x20, 4, U)]), Err(Errno::EINVAL), "unknown tag");
    }

    #[test]
    fn entries_must_come_in_the_required_order_and_number() {
        let bad: &[&[(u16, u16, u32)]] = &[
            &[(0x04, 5, U), (0x01, 7, U), (0x20, 4, U)], // group before owner
            &[(0x01, 7, U), (0x20, 4, U)],               // no owning group
            &[(0x01, 7, U), (0x04, 5, U)],               // no other
            &[(0x01, 7, U), (0x01, 7, U), (0x04, 5, U), (0x20, 4, U)], // two owners
            &[(0x01, 7, U), (0x02, 5, 9), (0x04, 5, U), (0x20, 4, U)], // named user, no mask
            &[(0x01, 7, U), (0x04, 5, U), (0x08, 5, 9), (0x20, 4, U)], // named group, no mask
            &[(0x01, 7, U), (0x04, 5, U), (0x02, 5, 9), (0x10, 5, U), (0x20, 4, U)], // user after group
            &[(0x01, 7, U), (0x04, 5, U), (0x20, 4, U), (0x10, 5, U)], // mask after other
            &[(0x01, 7, U), (0x04, 5, U), (0x20, 4, U), (0x20, 4, U)], // two others
        ];
        for entries in bad {
            assert_eq!(parse(entries), Err(Errno::EINVAL), "{entries:?}");
        }
        let with_mask_only = parse(&[(0x01, 7, U), (0x04, 5, U), (0x10, 1, U), (0x20, 4, U)]).unwrap().unwrap();
        assert!(!with_mask_only.is_minimal(), "a mask is more than the mode says");
    }

    #[test]
    fn the_mode_shows_owner_mask_and_other() {
        let acl = named_user_denied();
        assert_eq!(acl.mode_bits(), 0o666);
        let narrow_mask = parse(&[(0x01, 7, U), (0x02, 7, 1), (0x04, 7, U), (0x10, 4, U), (0x20, 1, U)]);
        assert_eq!(narrow_mask.unwrap().unwrap().apply_to_mode(0o2000), 0o2741, "special bits kept");
        let minimal = parse(&[(0x01, 6, U), (0x04, 4, U), (0x20, 0, U)]).unwrap().unwrap();
        assert!(minimal.is_minimal());
        assert_eq!(minimal.mode_bits(), 0o640, "no mask: the owning group");
    }

    #[test]
    fn chmod_sets_owner_mask_and_other_and_keeps_named_entries() {
        let mut acl = named_user_denied();
        acl.chmod(0o4750);
        let want = parse(&[(0x01, 7, U), (0x02, 0, 10001), (0x04, 6, U), (0x10, 5, U), (0x20, 0, U)]);
        assert_eq!(Some(acl.clone()), want.unwrap());
        assert_eq!(acl.mode_bits(), 0o750);
        let mut minimal = parse(&[(0x01, 6, U), (0x04, 4, U), (0x20, 4, U)]).unwrap().unwrap();
        minimal.chmod(0o701);
        assert_eq!(minimal.to_value(), value(&[(0x01, 7, U), (0x04, 0, U), (0x20, 1, U)]));
    }

    #[test]
    fn a_new_object_inherits_the_default_acl_cut_down_to_its_mode() {
        // setfacl -d -m u:10001:rwx,g::rx,o::- dir
        let default =
            parse(&[(0x01, 7, U), (0x02, 7, 10001), (0x04, 5, U), (0x10, 7, U), (0x20, 0, U)]).unwrap().unwrap();
        // open(O_CREAT, 0666): no umask, execute bits cut by the mode
        let (acl, perm) = default.inherit(0o666);
        assert_eq!(perm, 0o660);
        let want = parse(&[(0x01, 6, U), (0x02, 7, 10001), (0x04, 5, U), (0x10, 6, U), (0x20, 0, U)]);
        assert_eq!(acl, want.unwrap());
        // mkdir(0750) with the set-gid bit kept
        let (acl, perm) = default.inherit(0o2750);
        assert_eq!(perm, 0o2750);
        assert_eq!(acl.unwrap().mode_bits(), 0o750);
        // a minimal default ACL gives just a mode, cut down both ways
        let minimal = parse(&[(0x01, 7, U), (0x04, 0, U), (0x20, 5, U)]).unwrap().unwrap();
        assert_eq!(minimal.inherit(0o664), (None, 0o604));
    }
}
