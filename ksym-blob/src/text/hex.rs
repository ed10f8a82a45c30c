//! Hexadecimal parsing and formatting for the per-line hot paths, without
//! `format!` or allocation.

/// Parses 1 to 16 hex digits (either case) into a u64; `None` for an empty
/// slice, a non-hex byte or more than 16 digits. Leading zeros count as digits,
/// so a 17-digit zero-padded number is refused too.
#[inline]
pub fn parse_u64(s: &[u8]) -> Option<u64> {
    if let Ok(s16) = <&[u8; 16]>::try_from(s) {
        return parse_u64_16(s16);
    }
    if s.is_empty() || s.len() > 16 {
        return None;
    }
    // One table load per byte and one check at the end: no branch per digit.
    let (mut v, mut bad) = (0u64, 0u8);
    for &b in s {
        let d = VALUES[usize::from(b)];
        bad |= d;
        v = (v << 4) | u64::from(d & 0xF);
    }
    (bad & NOT_HEX == 0).then_some(v)
}

/// Parses exactly 16 hex digits (the kallsyms and `nm` address column), 8 at
/// a time in a u64 (SWAR) instead of a byte at a time; same answers as
/// [`parse_u64`] gives 16 bytes.
#[inline]
pub fn parse_u64_16(s: &[u8; 16]) -> Option<u64> {
    let (hi, lo) = s.split_at(8);
    let hi = hex8(u64::from_be_bytes(hi.try_into().expect("8 bytes")))?;
    let lo = hex8(u64::from_be_bytes(lo.try_into().expect("8 bytes")))?;
    Some(u64::from(hi) << 32 | u64::from(lo))
}

/// The value of 8 hex digits held big-endian in `w` (first digit in the top
/// byte), or `None` if a byte is not a hex digit.
#[inline]
fn hex8(w: u64) -> Option<u32> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    if w & HIGH != 0 {
        return None;
    }
    // With every byte below 0x80, adding 0x80 - k sets a byte's top bit
    // exactly when the byte is >= k, and never carries into the next byte.
    let at_least = |x: u64, k: u8| (x + ONES * u64::from(0x80 - k)) & HIGH;
    let digit = at_least(w, b'0') & !at_least(w, b'9' + 1);
    let folded = w | (ONES * 0x20); // 'A'..'F' to 'a'..'f'
    let letter = at_least(folded, b'a') & !at_least(folded, b'f' + 1);
    if digit | letter != HIGH {
        return None;
    }
    // Low nibble is the value for '0'..'9', value - 9 for the letters.
    let v = (w & (ONES * 0x0F)) + (letter >> 7) * 9;
    // Gather the 8 nibbles, most significant first.
    let v = (v | (v >> 4)) & 0x00FF_00FF_00FF_00FF;
    let v = (v | (v >> 8)) & 0x0000_FFFF_0000_FFFF;
    Some((v | (v >> 16)) as u32)
}

/// Marks a byte that is not a hex digit in [`VALUES`].
const NOT_HEX: u8 = 0x80;

/// Hex digit values by byte, [`NOT_HEX`] for other bytes.
const VALUES: [u8; 256] = {
    let mut t = [NOT_HEX; 256];
    let mut i = 0;
    while i < 16 {
        if i < 10 {
            t[b'0' as usize + i] = i as u8;
        } else {
            t[b'a' as usize + i - 10] = i as u8;
            t[b'A' as usize + i - 10] = i as u8;
        }
        i += 1;
    }
    t
};

/// The 8 lower-case hex digits of `x`, most significant first, all at
/// once in a u64 (SWAR): a digit per byte lane, `'0'` added to every lane
/// and 39 more (`'a' - '0' - 10`) to the lanes of 10 and above. A table
/// load per digit, 16 a line, was 2.6 % of `ksym-resolve`'s instructions
/// on 100k addresses.
#[inline]
fn digits8(x: u32) -> [u8; 8] {
    const ONES: u64 = 0x0101_0101_0101_0101;
    // Nibbles to byte lanes, the top nibble in the top byte.
    let x = u64::from(x);
    let x = (x | (x << 16)) & 0x0000_FFFF_0000_FFFF;
    let x = (x | (x << 8)) & 0x00FF_00FF_00FF_00FF;
    let x = (x | (x << 4)) & 0x0F0F_0F0F_0F0F_0F0F;
    // Lanes hold 0..=15: adding 6 carries into bit 4 exactly for 10..=15,
    // and never past the lane.
    let letters = ((x + 6 * ONES) >> 4) & ONES;
    (x + u64::from(b'0') * ONES + letters * u64::from(b'a' - b'0' - 10)).to_be_bytes()
}

/// Appends `v` as exactly 16 lower-case hex digits (the kallsyms address column).
#[inline]
pub fn push_u64_padded(out: &mut Vec<u8>, v: u64) {
    let mut buf = [0u8; 16];
    buf[..8].copy_from_slice(&digits8((v >> 32) as u32));
    buf[8..].copy_from_slice(&digits8(v as u32));
    out.extend_from_slice(&buf);
}

/// Appends `0x` and `v` in lower-case hex without leading zeros (`0x0` for 0),
/// as the kernel's `%pS` prints offsets and sizes.
#[inline]
pub fn push_u64_0x(out: &mut Vec<u8>, v: u64) {
    // Digits left-aligned in a fixed 18 bytes, appended whole, then the
    // tail cut: a fixed-size copy is a few moves, where a copy of the
    // digits' own length was a call to memcpy per number. Offsets and
    // sizes have a few digits: a table load each costs less than
    // [`digits8`]'s fixed work.
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let n = ((64 - v.leading_zeros()).div_ceil(4)).max(1) as usize;
    let mut buf = [0u8; 18];
    buf[0] = b'0';
    buf[1] = b'x';
    for (i, b) in buf[2..2 + n].iter_mut().enumerate() {
        *b = DIGITS[((v >> (4 * (n - 1 - i))) & 0xF) as usize];
    }
    let len = out.len();
    out.extend_from_slice(&buf);
    out.truncate(len + 2 + n);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_format_round_trip() {
        assert_eq!(parse_u64(b"ffffffff81000000"), Some(0xffff_ffff_8100_0000));
        assert_eq!(parse_u64(b"DEADbeef"), Some(0xdead_beef));
        assert_eq!(parse_u64(b""), None);
        assert_eq!(parse_u64(b"12g"), None);
        assert_eq!(parse_u64(b"00000000000000000"), None);
        let mut out = Vec::new();
        push_u64_padded(&mut out, 0x1234);
        out.push(b' ');
        push_u64_0x(&mut out, 0);
        out.push(b' ');
        push_u64_0x(&mut out, u64::MAX);
        assert_eq!(out, b"0000000000001234 0x0 0xffffffffffffffff");
    }

    /// The byte-at-a-time parser, for checking the 16-digit one.
    fn scalar(s: &[u8]) -> Option<u64> {
        s.iter().try_fold(0u64, |v, &b| {
            let d = match b {
                b'0'..=b'9' => b - b'0',
                b'a'..=b'f' => b - b'a' + 10,
                b'A'..=b'F' => b - b'A' + 10,
                _ => return None,
            };
            Some((v << 4) | u64::from(d))
        })
    }

    #[test]
    fn sixteen_digits_at_once_agree_with_one_at_a_time() {
        // Every byte value at every position of a valid address.
        let base = *b"fFfFffff8100a9c0";
        for at in 0..16 {
            for b in 0..=255u8 {
                let mut s = base;
                s[at] = b;
                assert_eq!(parse_u64_16(&s), scalar(&s), "{s:?}");
            }
        }
        assert_eq!(parse_u64(b"0123456789abcdef"), Some(0x0123_4567_89ab_cdef));
        assert_eq!(parse_u64(b"FEDCBA9876543210"), Some(0xfedc_ba98_7654_3210));
    }

    #[test]
    fn eight_digits_at_once_agree_with_format() {
        let mut out = Vec::new();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut values = vec![0, 1, 9, 10, 15, 16, 0xa0, u64::MAX, 1 << 63];
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            values.push(x >> (x % 64));
        }
        for v in values {
            out.clear();
            push_u64_padded(&mut out, v);
            out.push(b' ');
            push_u64_0x(&mut out, v);
            assert_eq!(out, format!("{v:016x} {v:#x}").as_bytes());
        }
    }
}
