//! The bytes a replay writes. Traces carry offsets and lengths, not data, so every replay (in the simulator
//! or onto a real directory) writes the same function of the file offset: byte `o` of any file is
//! `o mod 251`. A prime period keeps pages distinct from each other, and any two replays of one trace —
//! however they cut requests into pieces — leave byte-identical files. Because the pattern repeats, the
//! bytes of any piece up to `MAX_SLICE` long are a slice of one ramp built once (`slice`), so a replay hands
//! the engine its write data without allocating or filling a buffer per event.

use std::sync::OnceLock;

/// The period of the pattern (a prime, so 4 KiB pages do not repeat).
const PERIOD: usize = 251;
/// Longest piece filled or compared at once.
const SPAN: usize = 4096;
/// The pattern from offset 0, one piece and one period long: the bytes of any piece are a slice of it.
static RAMP: [u8; SPAN + PERIOD] = ramp();

const fn ramp() -> [u8; SPAN + PERIOD] {
    let mut bytes = [0; SPAN + PERIOD];
    let mut i = 0;
    while i < bytes.len() {
        bytes[i] = (i % PERIOD) as u8;
        i += 1;
    }
    bytes
}

/// The pattern bytes of file offsets `offset..offset + len`, as slices of `RAMP` one after the other.
fn pieces(offset: u64, len: usize) -> impl Iterator<Item = &'static [u8]> {
    (0..len).step_by(SPAN).map(move |done| {
        let phase = ((offset + done as u64) % PERIOD as u64) as usize;
        &RAMP[phase..phase + SPAN.min(len - done)]
    })
}

/// Longest piece `slice` gives.
pub const MAX_SLICE: usize = 1 << 20;

/// The pattern from offset 0, `MAX_SLICE` and one period long, built on first use (`long_ramp`).
static LONG_RAMP: OnceLock<Box<[u8]>> = OnceLock::new();

fn long_ramp() -> &'static [u8] {
    // One period repeated (`repeat` copies by doubling): a division per byte cost about 17 M instructions,
    // once per process but a cost of every replay's first write.
    LONG_RAMP.get_or_init(|| {
        let mut ramp = RAMP[..PERIOD].repeat((MAX_SLICE + PERIOD).div_ceil(PERIOD));
        ramp.truncate(MAX_SLICE + PERIOD);
        ramp.into_boxed_slice()
    })
}

/// The pattern bytes of file offsets `offset..offset + len`, `len` at most `MAX_SLICE` (longer is cut there).
pub fn slice(offset: u64, len: usize) -> &'static [u8] {
    let phase = (offset % PERIOD as u64) as usize;
    &long_ramp()[phase..phase + len.min(MAX_SLICE)]
}

/// Fills `buf` with the pattern bytes of file offsets `offset..offset + buf.len()`.
pub fn fill(offset: u64, buf: &mut [u8]) {
    let len = buf.len();
    for (dst, src) in buf.chunks_mut(SPAN).zip(pieces(offset, len)) {
        dst.copy_from_slice(src);
    }
}

/// Whether `data` holds the pattern bytes of file offsets `offset..offset + data.len()`.
pub fn matches(offset: u64, data: &[u8]) -> bool {
    is_slice_at(offset, data) || data.chunks(SPAN).zip(pieces(offset, data.len())).all(|(got, want)| got == want)
}

/// Whether `data` is a part of the long ramp starting at `offset`'s phase: then it holds the pattern of
/// `offset..` without a look at its bytes (the ramp never changes). A replay's writes are such parts
/// (`slice`), so the cache and the store know them as the pattern without comparing 4 KiB a page.
fn is_slice_at(offset: u64, data: &[u8]) -> bool {
    let Some(ramp) = LONG_RAMP.get() else { return false };
    let start = (data.as_ptr() as usize).wrapping_sub(ramp.as_ptr() as usize);
    data.len() <= ramp.len() && start <= ramp.len() - data.len() && start % PERIOD == (offset % PERIOD as u64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_of_a_write_make_the_same_bytes_as_the_whole() {
        let mut whole = vec![0u8; 10_000];
        fill(1_000_003, &mut whole);
        let mut pieces = vec![0u8; 10_000];
        for (i, chunk) in pieces.chunks_mut(777).enumerate() {
            fill(1_000_003 + i as u64 * 777, chunk);
        }
        assert_eq!(whole, pieces);
        assert_eq!(whole[0], (1_000_003 % 251) as u8);
        assert!(whole.windows(2).all(|w| w[1] == if w[0] == 250 { 0 } else { w[0] + 1 }));
        assert!(matches(1_000_003, &whole) && matches(1_000_003 + 5000, &whole[5000..]));
        whole[9_999] ^= 1;
        assert!(!matches(1_000_003, &whole) && !matches(1_000_004, &whole[..10]));
    }

    #[test]
    fn a_slice_of_the_ramp_matches_only_at_its_own_phase() {
        let piece = slice(1_000_003, 3 * SPAN + 17);
        assert!(is_slice_at(1_000_003, piece) && matches(1_000_003, piece));
        assert!(is_slice_at(1_000_003 + 5000, &piece[5000..]), "a part of a slice, at its offset");
        assert!(is_slice_at(1_000_003 + 251, piece), "a period later, the same bytes");
        for wrong in [1_000_004, 1_000_002, 0] {
            assert!(!is_slice_at(wrong, piece) && !matches(wrong, piece), "offset {wrong}");
        }
        let copy = piece.to_vec();
        assert!(!is_slice_at(1_000_003, &copy) && matches(1_000_003, &copy), "a copy is compared");
        assert!(is_slice_at(7, slice(7, MAX_SLICE)) && matches(7, &[]));
    }

    #[test]
    fn a_slice_holds_the_bytes_fill_makes_and_stops_at_the_longest() {
        for (offset, len) in [(0, 0), (7, 1), (1_000_003, 4096), (u64::MAX - 5000, 5000), (250, MAX_SLICE)] {
            let mut filled = vec![0u8; len];
            fill(offset, &mut filled);
            assert_eq!(slice(offset, len), &filled[..], "offset {offset}, {len} bytes");
        }
        assert_eq!(slice(3, MAX_SLICE + 10).len(), MAX_SLICE);
    }
}
