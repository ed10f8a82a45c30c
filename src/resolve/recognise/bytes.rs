//! Byte-level pieces the line readers share: line ends, blanks, hex
//! prefixes and `name+0xOFF/0xSIZE` references.

use crate::text::hex;

#[inline]
pub(in crate::resolve) fn trim_end_nl(line: &[u8]) -> (&[u8], &[u8]) {
    let mut end = line.len();
    if end > 0 && line[end - 1] == b'\n' {
        end -= 1;
        if end > 0 && line[end - 1] == b'\r' {
            end -= 1;
        }
    }
    (&line[..end], &line[end..])
}

#[inline]
pub(in crate::resolve) fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

pub(in crate::resolve) fn skip_blanks(s: &[u8], at: usize) -> usize {
    at + s[at..].iter().take_while(|&&b| is_blank(b)).count()
}

pub(in crate::resolve) fn strip_0x(s: &[u8]) -> Option<&[u8]> {
    s.strip_prefix(b"0x").or_else(|| s.strip_prefix(b"0X"))
}

pub(in crate::resolve) fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    // Log lines are short and needles a few bytes: a memchr for the first
    // byte beats building a substring searcher per call.
    let (&first, rest) = needle.split_first()?;
    let mut at = 0;
    while let Some(p) = bstr::ByteSlice::find_byte(&hay[at..], first) {
        let i = at + p;
        if hay[i + 1..].starts_with(rest) {
            return Some(i);
        }
        at = i + 1;
    }
    None
}

/// End of the token starting at `at` (up to a blank or the end).
pub(in crate::resolve) fn token_end(s: &[u8], at: usize) -> usize {
    at + s[at..]
        .iter()
        .position(|&b| is_blank(b))
        .unwrap_or(s.len() - at)
}

/// `name+0xOFF[/0xSIZE]` → (name, offset, size).
pub(in crate::resolve) fn parse_sym_off(tok: &[u8]) -> Option<(&[u8], u64, Option<u64>)> {
    let plus = tok.iter().rposition(|&b| b == b'+')?;
    let (name, rest) = (&tok[..plus], &tok[plus + 1..]);
    if name.is_empty() {
        return None;
    }
    let (off, size) = match rest.iter().position(|&b| b == b'/') {
        Some(sl) => (
            &rest[..sl],
            Some(hex::parse_u64(strip_0x(&rest[sl + 1..])?)?),
        ),
        None => (rest, None),
    };
    Some((name, hex::parse_u64(strip_0x(off)?)?, size))
}
