//! Reading lines of any length with bounded memory: the tools read `nm` and
//! `perf script` output that may hold arbitrary bytes and absurdly long lines.

use std::io::{self, BufRead};

/// One line as handed to the callback of [`for_each_line`].
#[derive(Debug, PartialEq, Eq)]
pub enum Line<'a> {
    /// A whole line (up to `max_len` bytes), its `\n` included when it had one.
    Full(&'a [u8]),
    /// A piece of a line longer than `max_len`: the first call carries the
    /// first `max_len` bytes with `first: true`, later calls the rest, the
    /// last of them ending with the `\n` (if the input had one).
    Long {
        /// The bytes of this piece.
        piece: &'a [u8],
        /// True for the first piece of the line.
        first: bool,
    },
}

/// Calls `f` with each line of `input` and its 1-based line number, reusing one
/// buffer of at most `max_len` bytes. Lines longer than `max_len` are handed
/// over in pieces (see [`Line::Long`]) so that memory stays bounded whatever
/// the input holds. Stops at the first error of `input` or `f`.
pub fn for_each_line<R: BufRead, F>(mut input: R, max_len: usize, mut f: F) -> io::Result<()>
where
    F: FnMut(u64, Line<'_>) -> io::Result<()>,
{
    let mut buf = Vec::with_capacity(256);
    let mut lineno = 0u64;
    // None: not inside a long line; Some(first): inside one.
    let mut long: Option<bool> = None;
    loop {
        let chunk = match input.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            if !buf.is_empty() {
                lineno += 1;
                f(lineno, Line::Full(&buf))?;
            }
            return Ok(());
        }
        if let Some(first) = long {
            let (piece, done) = match memchr_nl(chunk) {
                Some(i) => (&chunk[..=i], true),
                None => (chunk, false),
            };
            let n = piece.len();
            f(lineno, Line::Long { piece, first })?;
            long = if done { None } else { Some(false) };
            input.consume(n);
            continue;
        }
        // Fast path: a whole line inside the reader's buffer, nothing buffered.
        if buf.is_empty()
            && let Some(i) = memchr_nl(chunk)
            && i < max_len
        {
            lineno += 1;
            f(lineno, Line::Full(&chunk[..=i]))?;
            input.consume(i + 1);
            continue;
        }
        let room = max_len.saturating_sub(buf.len());
        let (take, done) = match memchr_nl(chunk) {
            Some(i) if i < room => (i + 1, true),
            _ => (chunk.len().min(room), false),
        };
        buf.extend_from_slice(&chunk[..take]);
        input.consume(take);
        if done {
            lineno += 1;
            f(lineno, Line::Full(&buf))?;
            buf.clear();
        } else if buf.len() >= max_len {
            lineno += 1;
            f(
                lineno,
                Line::Long {
                    piece: &buf,
                    first: true,
                },
            )?;
            buf.clear();
            long = Some(false);
        }
    }
}

/// The first `\n` of `s`. Up to 24 bytes are tested 8 at a time in a u64
/// (SWAR) before the SIMD search: a bare address is a line of 8 to 20
/// bytes, and memchr's dispatch and short-input path cost about 68
/// instructions a line (1.8 M more of `ksym-resolve`'s on 100k addresses).
#[inline]
fn memchr_nl(s: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let mut at = 0;
    while let Some(word) = s.get(at..).and_then(<[u8]>::first_chunk::<8>) {
        let x = u64::from_le_bytes(*word) ^ (ONES * u64::from(b'\n'));
        // A lane's top bit is set for the lowest zero lane; lanes above it
        // may be set by the borrow, never one below, so the lowest counts.
        let zero = x.wrapping_sub(ONES) & !x & (ONES << 7);
        if zero != 0 {
            return Some(at + zero.trailing_zeros() as usize / 8);
        }
        at += 8;
        if at == 24 {
            break;
        }
    }
    bstr::ByteSlice::find_byte(&s[at..], b'\n').map(|i| i + at)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(input: &[u8], cap: usize, max: usize) -> Vec<(u64, bool, Vec<u8>)> {
        let mut out = Vec::new();
        let r = io::BufReader::with_capacity(cap, input);
        for_each_line(r, max, |n, l| {
            match l {
                Line::Full(s) => out.push((n, true, s.to_vec())),
                Line::Long { piece, .. } => out.push((n, false, piece.to_vec())),
            }
            Ok(())
        })
        .unwrap();
        out
    }

    #[test]
    fn splits_lines_across_small_buffers() {
        for cap in [1, 2, 3, 7, 64] {
            let got = collect(b"ab\ncd\n\nlast", cap, 100);
            let lines: Vec<_> = got
                .iter()
                .map(|(n, full, s)| (*n, *full, s.as_slice()))
                .collect();
            assert_eq!(
                lines,
                vec![
                    (1, true, &b"ab\n"[..]),
                    (2, true, b"cd\n"),
                    (3, true, b"\n"),
                    (4, true, b"last")
                ]
            );
        }
    }

    #[test]
    fn long_lines_come_in_pieces_and_lose_nothing() {
        for cap in [1, 3, 8, 64] {
            let got = collect(b"0123456789abc\nxy\n", cap, 4);
            let joined: Vec<u8> = got
                .iter()
                .filter(|g| g.0 == 1)
                .flat_map(|g| g.2.clone())
                .collect();
            assert_eq!(joined, b"0123456789abc\n");
            assert!(got.iter().filter(|g| g.0 == 1).all(|g| !g.1));
            assert_eq!(got.last().unwrap(), &(2, true, b"xy\n".to_vec()));
        }
    }

    proptest::proptest! {
        /// The SWAR head finds what a search byte by byte finds, with
        /// bytes next to `\n` in value (`\x0b` borrows across lanes).
        #[test]
        fn first_newline_is_the_first(s in proptest::collection::vec(
            proptest::prop_oneof![proptest::strategy::Just(b'\n'), proptest::strategy::Just(0x0b), proptest::strategy::Just(0x09), 0u8..=255],
            0..40,
        )) {
            proptest::prop_assert_eq!(memchr_nl(&s), s.iter().position(|&b| b == b'\n'));
        }
    }
}
