//! Escaping of byte strings (paths, app names) into single whitespace-free tokens of the text form.
//!
//! Invariant: `unescape(&escape(b)) == Ok(b)` for every byte string `b`. A token holds only printable ASCII
//! other than space; `\`, `#` and `"` and every other byte are written `\xHH`; the empty string is `""`.

/// Whether `b` may appear in a token unescaped.
fn is_plain(b: u8) -> bool {
    (0x21..=0x7e).contains(&b) && !matches!(b, b'\\' | b'#' | b'"')
}

/// Appends the token for `bytes` to `out`.
pub fn escape_into(bytes: &[u8], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    if bytes.is_empty() {
        out.extend_from_slice(b"\"\"");
        return;
    }
    for &b in bytes {
        if is_plain(b) {
            out.push(b);
        } else {
            out.extend_from_slice(&[b'\\', b'x', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
        }
    }
}

/// The token for `bytes`.
pub fn escape(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    escape_into(bytes, &mut out);
    out
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Decodes a token back into its bytes; the error says what is wrong with it.
pub fn unescape(token: &[u8]) -> Result<Vec<u8>, String> {
    if token == b"\"\"" {
        return Ok(Vec::new());
    }
    let mut out = Vec::with_capacity(token.len());
    let mut i = 0;
    while i < token.len() {
        let b = token[i];
        if b == b'\\' {
            let escaped = match token.get(i + 1..i + 4) {
                Some([b'x', hi, lo]) => hex_value(*hi).zip(hex_value(*lo)).map(|(h, l)| h << 4 | l),
                _ => None,
            };
            let Some(value) = escaped else {
                return Err(format!("bad escape at byte {} of token (expected \\xHH)", i + 1));
            };
            out.push(value);
            i += 4;
        } else if is_plain(b) {
            out.push(b);
            i += 1;
        } else {
            return Err(format!("byte 0x{b:02x} must be escaped as \\x{b:02x}"));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_paths_stay_readable() {
        assert_eq!(escape(b"/data/data/com.app/db.sqlite-wal"), b"/data/data/com.app/db.sqlite-wal");
    }

    #[test]
    fn special_bytes_are_hex_escaped_and_round_trip() {
        let raw = b"a b#c\\d\"e\n\xff";
        let token = escape(raw);
        assert_eq!(token, b"a\\x20b\\x23c\\x5cd\\x22e\\x0a\\xff");
        assert_eq!(unescape(&token).unwrap(), raw);
        assert_eq!(unescape(&escape(b"")).unwrap(), b"");
    }

    #[test]
    fn malformed_tokens_are_rejected() {
        assert!(unescape(b"ab\\x4").is_err());
        assert!(unescape(b"ab\\n").is_err());
        assert!(unescape(b"a\"b").is_err());
        assert!(unescape(b"\\xZZ").is_err());
    }
}
