//! The bytes a replay writes. Traces carry offsets and lengths, not data, so every replay (in the simulator
//! or onto a real directory) writes the same function of the file offset: byte `o` of any file is
//! `o mod 251`. A prime period keeps pages distinct from each other, and any two replays of one trace —
//! however they cut requests into pieces — leave byte-identical files.

/// The period of the pattern (a prime, so 4 KiB pages do not repeat).
const PERIOD: u64 = 251;

/// Fills `buf` with the pattern bytes of file offsets `offset..offset + buf.len()`. The first period is
/// written byte by byte, the rest copied from it in doubling blocks (replays write gigabytes).
pub fn fill(offset: u64, buf: &mut [u8]) {
    let mut value = (offset % PERIOD) as u8;
    let first = buf.len().min(PERIOD as usize);
    for byte in &mut buf[..first] {
        *byte = value;
        value = if u64::from(value) + 1 == PERIOD { 0 } else { value + 1 };
    }
    // Whole periods repeat, so any multiple of the period is a valid source length.
    let mut done = first;
    while done < buf.len() {
        let block = done - done % PERIOD as usize;
        let n = block.min(buf.len() - done);
        buf.copy_within(..n, done);
        done += n;
    }
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
    }
}
