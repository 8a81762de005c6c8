//! Importer inputs as recorded: gzip (`.gz`) and zstd (`.zst`) streams are decompressed on the fly, told
//! apart by their magic bytes rather than their names (so stdin works too); anything else is read as is.

use std::io::{self, BufRead, BufReader};

const GZIP_MAGIC: &[u8] = &[0x1f, 0x8b];
const ZSTD_MAGIC: &[u8] = &[0x28, 0xb5, 0x2f, 0xfd];

/// How an input is compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Zstd,
}

/// The decompressed stream of `input` and how it was compressed.
pub fn decompressed<'a>(mut input: impl BufRead + 'a) -> io::Result<(Box<dyn BufRead + 'a>, Compression)> {
    let head = input.fill_buf()?;
    Ok(if head.starts_with(GZIP_MAGIC) {
        // Multi-member: `cat a.gz b.gz` and split recordings joined are one stream.
        (Box::new(BufReader::new(flate2::bufread::MultiGzDecoder::new(input))), Compression::Gzip)
    } else if head.starts_with(ZSTD_MAGIC) {
        (Box::new(BufReader::new(zstd::stream::read::Decoder::with_buffer(input)?)), Compression::Zstd)
    } else {
        (Box::new(input), Compression::None)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    const TEXT: &[u8] = b"0.5,a-1,W,8,8\n1,b-2,R,0,8\n";

    fn read_all(bytes: &[u8]) -> (Vec<u8>, Compression) {
        let (mut reader, compression) = decompressed(bytes).unwrap();
        let mut out = Vec::new();
        reader.read_to_end(&mut out).unwrap();
        (out, compression)
    }

    #[test]
    fn gzip_and_zstd_are_recognized_by_their_magic() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(TEXT).unwrap();
        let gz = gz.finish().unwrap();
        assert_eq!(read_all(&gz), (TEXT.to_vec(), Compression::Gzip));
        assert_eq!(read_all(&[gz.clone(), gz].concat()).0, [TEXT, TEXT].concat(), "members joined");
        let zst = zstd::stream::encode_all(TEXT, 3).unwrap();
        assert_eq!(read_all(&zst), (TEXT.to_vec(), Compression::Zstd));
        assert_eq!(read_all(TEXT), (TEXT.to_vec(), Compression::None));
        assert_eq!(read_all(b""), (Vec::new(), Compression::None));
    }

    #[test]
    fn a_corrupt_stream_is_an_error_not_a_panic() {
        let mut reader = decompressed(&[0x1f, 0x8b, 0, 0, 0][..]).unwrap().0;
        assert!(reader.read_to_end(&mut Vec::new()).is_err());
    }
}
