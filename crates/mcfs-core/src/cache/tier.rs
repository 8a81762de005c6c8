//! A tier: a store of page slots the cache places pages in (DRAM today; an
//! NVM tier and a compressed second-level store are meant to plug in here).
//! A slot holds one page. Closing a VCT freezes a slot's current content as
//! a `PageVersion`; a later write to that slot must leave the version as it
//! was (DRAM copies the page on write).
//!
//! Over a store that recreates content from file offsets alone (the
//! simulator's data-less one, `Backend::known_content`), a page wholly of
//! that content is held as `Page::Known`, without its bytes: it is made from
//! the bytes when they are needed (a read, or a write of other bytes), and
//! its versions hand on the extent alone (`PageVersion::content`). So is an
//! append's page, as the known content up to where the appends reached
//! and zeros after it.
//! A tier counts such a page as it counts one with bytes, so the engine
//! decides the same either way.
//!
//! Invariant: `used_bytes` is `PAGE_SIZE` times the slots in use plus the
//! versions only closed VCTs still hold.

use crate::backend::KnownContent;
use crate::types::PAGE_SIZE;
use std::ops::Range;
use std::sync::Arc;

pub type PageBuf = [u8; PAGE_SIZE as usize];

/// Zeros: what a reader that only counts bytes is handed (`Cache::note_read`),
/// and what holds a place in a write run for a part without bytes (`WriteRun`).
pub static ZERO_PAGE: PageBuf = [0; PAGE_SIZE as usize];

/// What a slot or a version holds, shared between them until either
/// changes (copy-on-write): a page's bytes, or the fact that the page is
/// the store's known content up to `len` and zeros after it (a whole page
/// of it, an append's page as far as it has come, or zeros).
#[derive(Clone, Debug)]
pub enum Page {
    Bytes(Arc<PageBuf>),
    Known { len: u16, token: Arc<()> },
}

impl Page {
    /// A page of the store's known content up to `len`, zeros after it.
    pub(super) fn known(len: usize) -> Page {
        Page::Known { len: len as u16, token: Arc::new(()) }
    }

    /// The page for `bytes` at file offset `offset`: `Known` if they are
    /// `known` content up to some length and zeros after it.
    pub fn of(bytes: &PageBuf, offset: u64, known: Option<KnownContent>) -> Page {
        match known_len(known, offset, bytes) {
            Some(len) => Page::known(len),
            None => Page::Bytes(Arc::new(*bytes)),
        }
    }

    /// A new page of zeros: `Known` (up to nothing) over a store with known
    /// content, so that what an append writes next keeps it without bytes.
    pub fn zeros(known: Option<KnownContent>) -> Page {
        match known {
            Some(_) => Page::known(0),
            None => Page::Bytes(Arc::new([0; PAGE_SIZE as usize])),
        }
    }

    /// Whether another holder shares it.
    pub fn shared(&self) -> bool {
        match self {
            Page::Bytes(bytes) => Arc::strong_count(bytes) > 1,
            Page::Known { token, .. } => Arc::strong_count(token) > 1,
        }
    }

    /// The bytes at file offset `offset`, made in `scratch` if `Known`.
    pub fn bytes<'a>(&'a self, offset: u64, known: Option<KnownContent>, scratch: &'a mut PageBuf) -> &'a PageBuf {
        match self {
            Page::Bytes(bytes) => bytes,
            Page::Known { len, .. } => {
                fill_known(known, offset, *len, scratch);
                scratch
            }
        }
    }

    /// Writes `bytes` at `within` of the page at file offset `offset`,
    /// unsharing it first (even for no bytes). A `Known` page stays so if
    /// they are that content and start within its known part (or right
    /// after it), else gets its bytes; a page wholly rewritten with it
    /// becomes `Known`.
    pub fn write(&mut self, offset: u64, within: usize, bytes: &[u8], known: Option<KnownContent>) {
        if bytes.is_empty() {
            return self.unshare();
        }
        let end = within + bytes.len();
        let is_known = known.is_some_and(|k| (k.matches)(offset + within as u64, bytes));
        match self {
            Page::Known { len, token } if is_known && within <= usize::from(*len) => {
                unshare_token(token);
                *len = (*len).max(end as u16);
            }
            _ if is_known && bytes.len() == PAGE_SIZE as usize => *self = Page::known(PAGE_SIZE as usize),
            _ => self.bytes_mut(offset, known)[within..end].copy_from_slice(bytes),
        }
    }

    /// Zeros bytes `range` of the page at file offset `offset`, unsharing
    /// it first. A `Known` page whose known part ends within the range is
    /// cut short there.
    pub fn zero(&mut self, offset: u64, range: Range<usize>, known: Option<KnownContent>) {
        match self {
            Page::Known { len, token } if range.end >= usize::from(*len) => {
                unshare_token(token);
                *len = (*len).min(range.start as u16);
            }
            _ => self.bytes_mut(offset, known)[range].fill(0),
        }
    }

    /// Leaves the page its holder's alone: shared bytes are copied, a
    /// shared `Known` page gets a token of its own.
    fn unshare(&mut self) {
        match self {
            Page::Bytes(bytes) => {
                Arc::make_mut(bytes);
            }
            Page::Known { token, .. } => unshare_token(token),
        }
    }

    /// The bytes to change, unshared; a `Known` page gets them.
    fn bytes_mut(&mut self, offset: u64, known: Option<KnownContent>) -> &mut PageBuf {
        if let Page::Known { len, .. } = self {
            let mut bytes = [0; PAGE_SIZE as usize];
            fill_known(known, offset, *len, &mut bytes);
            *self = Page::Bytes(Arc::new(bytes));
        }
        match self {
            Page::Bytes(bytes) => Arc::make_mut(bytes),
            Page::Known { .. } => unreachable!("given its bytes above"),
        }
    }
}

/// How much of `bytes`, a page at file offset `offset`, is the store's
/// `known` content with only zeros after it: the whole page, or up to its
/// last non-zero byte (a page read from a hole, or past where a file's
/// writes reached, is zeros after its known part). Looked for only over a
/// store with known content, where a page kept as `Known` costs no bytes.
pub(super) fn known_len(known: Option<KnownContent>, offset: u64, bytes: &PageBuf) -> Option<usize> {
    let known = known?;
    if (known.matches)(offset, bytes) {
        return Some(PAGE_SIZE as usize);
    }
    // A page with no zero tail was just compared whole.
    let end = end_of_non_zero(bytes);
    (end < bytes.len() && (known.matches)(offset, &bytes[..end])).then_some(end)
}

/// Where the zeros that end `bytes` begin. Looks at 64 bytes at a time,
/// or'd together (a byte-wise search took a quarter of a read-heavy replay).
fn end_of_non_zero(bytes: &[u8]) -> usize {
    const CHUNK: usize = 64;
    let non_zero = |chunk: &[u8]| chunk.iter().fold(0, |any, &b| any | b) != 0;
    let whole = bytes.len() / CHUNK * CHUNK;
    if let Some(last) = bytes[whole..].iter().rposition(|&b| b != 0) {
        return whole + last + 1;
    }
    let Some(chunk) = bytes[..whole].chunks_exact(CHUNK).rposition(non_zero) else { return 0 };
    let start = chunk * CHUNK;
    start + bytes[start..start + CHUNK].iter().rposition(|&b| b != 0).map_or(0, |last| last + 1)
}

/// A `Known` page's token of its own.
fn unshare_token(token: &mut Arc<()>) {
    if Arc::strong_count(token) > 1 {
        *token = Arc::new(());
    }
}

/// The bytes of a `Known` page up to `len` at file offset `offset`, zeros
/// after; a `Known` page exists only where there is known content (or is
/// all zeros).
fn fill_known(known: Option<KnownContent>, offset: u64, len: u16, buf: &mut PageBuf) {
    let (content, zeros) = buf.split_at_mut(usize::from(len));
    if !content.is_empty() {
        (known.expect("a known page over a store with known content").fill)(offset, content);
    }
    zeros.fill(0);
}

/// The content a new slot starts with (`Tier::store`).
pub enum NewPage<'a> {
    /// Bytes in a page of their own (read from the backing store).
    Owned(Arc<PageBuf>),
    /// Bytes to copy (a whole page a write brings in; a page changing tiers).
    Copy(&'a PageBuf),
    /// Zeros (an append's new page).
    Zeros,
}

/// Index of a tier in the cache's tier list.
pub type TierId = u8;

/// A page slot within one tier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot(pub(super) u64);

/// What survives a power loss in a tier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// Gone at power loss (DRAM): only the journal and the backing store keep data.
    Volatile,
    /// Kept across power loss (NVM): a frozen version may serve as its own journal record.
    Persistent,
}

pub trait Tier: Send {
    fn name(&self) -> &'static str;
    fn durability(&self) -> Durability;
    /// Bytes the tier may hold before reclaim must make room.
    fn capacity(&self) -> u64;
    /// Bytes held: slots in use and versions kept for closed VCTs.
    fn used_bytes(&self) -> u64;
    /// Slots in use (for `Cache::check_invariants`).
    fn slots_used(&self) -> u64;
    /// Puts a page at file offset `offset` in a new slot.
    fn store(&mut self, page: NewPage, offset: u64) -> Slot;
    /// The slot's bytes; `offset` is its page's file offset.
    fn read(&mut self, slot: Slot, offset: u64) -> &PageBuf;
    /// Writes `bytes` at `within` of the slot (`Page::write`); a version
    /// frozen from it keeps its content.
    fn write(&mut self, slot: Slot, offset: u64, within: usize, bytes: &[u8]);
    /// Zeros bytes `range` of the slot, as `write` does.
    fn zero(&mut self, slot: Slot, offset: u64, range: Range<usize>);
    /// The slot is no longer in the cache (versions frozen from it stay).
    fn free(&mut self, slot: Slot);
    /// The slot's current bytes, frozen for a closed VCT.
    fn freeze(&mut self, slot: Slot) -> PageVersion;
    /// A closed VCT no longer needs `version`.
    fn release(&mut self, version: PageVersion);
}

/// The version of a page a closed VCT holds: what it commits, whatever
/// happens to the page in the cache meanwhile. Only the tier it came from
/// makes or releases it (`Cache::freeze`, `Cache::release_version`); its
/// bytes are readable without the cache (the checkpointer compiles them
/// without the state lock). A tier that can keep versions in place (NVM)
/// adds a variant naming its slot. A clone is one more holder of the same
/// version (a borrowed view of a batch's entry); the tier counts the
/// version's bytes until its last holder is released.
#[derive(Clone, Debug)]
pub struct PageVersion {
    tier: TierId,
    held: Held,
}

/// What a version holds (`PageVersion::content`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VersionContent<'a> {
    Bytes(&'a PageBuf),
    /// This many bytes of the store's known content, zeros after them.
    Known(usize),
}

#[derive(Clone, Debug)]
enum Held {
    /// Shared with the live slot until either changes (copy-on-write).
    Shared(Page),
}

impl PageVersion {
    pub(super) fn shared(tier: TierId, page: Page) -> PageVersion {
        PageVersion { tier, held: Held::Shared(page) }
    }

    pub fn tier(&self) -> TierId {
        self.tier
    }

    /// The version's content: its bytes, or for a `Page::Known` how many
    /// of its bytes are the store's known content (zeros after them).
    pub fn content(&self) -> VersionContent<'_> {
        match &self.held {
            Held::Shared(Page::Bytes(bytes)) => VersionContent::Bytes(bytes),
            Held::Shared(Page::Known { len, .. }) => VersionContent::Known(usize::from(*len)),
        }
    }

    /// The shared page, for the tier that made the version.
    pub(super) fn into_shared(self) -> Page {
        match self.held {
            Held::Shared(page) => page,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::end_of_non_zero;

    #[test]
    fn the_end_of_the_non_zero_bytes_is_found_at_any_position() {
        for len in [0, 1, 63, 64, 65, 100, 4096] {
            assert_eq!(end_of_non_zero(&vec![0; len]), 0, "zeros, {len} bytes");
            for at in [0, 1, 62, 63, 64, 65, 99, 127, 128, 4000, 4095].into_iter().filter(|&at| at < len) {
                let mut bytes = vec![0; len];
                bytes[at] = 7;
                assert_eq!(end_of_non_zero(&bytes), at + 1, "{len} bytes, the last non-zero at {at}");
                bytes[0] = 1;
                assert_eq!(end_of_non_zero(&bytes), at + 1, "{len} bytes, non-zero at 0 and {at}");
            }
        }
    }
}
