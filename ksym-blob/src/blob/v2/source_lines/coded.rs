//! Huffman-coded rows of the `lines` section (docs/FORMAT.md §15.6, flag
//! bit 3): the three canonical codes at the head of the `rows` part, a bit
//! reader, and the row decoder. `no_std`, no allocation: a code is read in
//! place and its 16 length limits are computed on the stack per block.
//!
//! Why Huffman and not the byte opcodes: a user-space binary's rows are
//! mostly small steps within one function whose address and line deltas
//! carry about 8.3 bits of information (libc 2.36), against the 11.8 bits
//! the byte opcodes spend on them.

use super::read::{SourceRow, walk_block};
use crate::blob::v2::layout::u16_at;

/// Longest code, in bits (FORMAT.md §15.6).
pub const MAX_CODE_LEN: usize = 16;
/// Codes at the head of the rows part: row kinds, and the classes of
/// address gaps, of line deltas and of the other values. A code per kind
/// of value, as their spreads differ: 2 % smaller rows on libc than one
/// code for all values.
pub const CODES: usize = 4;
/// Largest value class: a value of class `c > 0` is `2^(c−1)` plus `c − 1`
/// raw bits, so a class reads at most 39 raw bits, within one window.
pub const MAX_CLASS: u16 = 40;
/// Row-kind symbols: below [`RECALL`], a step in the same state.
pub const RECALL: u16 = 0x1000;
/// Row-kind symbols from here to `+ 8` are general rows with flags `f`.
pub const GENERAL: u16 = 0x1080;

/// One canonical code: `counts[l − 1]` codes of `l` bits, symbols as u16
/// in code order (FORMAT.md §15.6).
#[derive(Debug, Clone, Copy)]
pub struct Code<'a> {
    counts: &'a [u8],
    symbols: &'a [u8],
}

/// The code's length limits, left-justified in 16 bits: a 16-bit window
/// below `limit[l − 1]` (and not below `limit[l − 2]`) starts with a code
/// of `l` bits, whose symbol index is `base[l − 1] + (window >> (16 −
/// l))`. (Counting the limits at or below the window without a branch,
/// sixteen compares the compiler does four at a time, took 1.09x the time
/// of this scan from length 1 in `ksym-pack --check` of a Rust binary's
/// 328,360 rows.)
struct Limits {
    limit: [u32; MAX_CODE_LEN],
    base: [u32; MAX_CODE_LEN],
}

impl Code<'_> {
    fn limits(&self) -> Limits {
        let mut l = Limits {
            limit: [0; MAX_CODE_LEN],
            base: [0; MAX_CODE_LEN],
        };
        let (mut first, mut index) = (0u32, 0u32);
        for len in 1..=MAX_CODE_LEN {
            let count = u32::from(u16_at(self.counts, 2 * (len - 1)));
            // Parsing refused over-subscribed codes: no shift overflows.
            l.limit[len - 1] = (first + count) << (MAX_CODE_LEN - len);
            l.base[len - 1] = index.wrapping_sub(first);
            index += count;
            first = (first + count) << 1;
        }
        l
    }
}

/// The codes and the bit stream of a coded rows part.
#[derive(Debug, Clone, Copy)]
pub struct RowCode<'a> {
    codes: [Code<'a>; CODES],
    stream: &'a [u8],
}

impl<'a> RowCode<'a> {
    /// Splits a rows part into its codes and bit stream. `Err` with the
    /// byte offset in the part when a count runs past the part or a code is
    /// over-subscribed (its lengths break Kraft's inequality).
    pub fn parse(part: &'a [u8]) -> Result<Self, usize> {
        let mut codes = [Code {
            counts: &[],
            symbols: &[],
        }; CODES];
        let mut at = 0usize;
        for c in &mut codes {
            let counts = part.get(at..at + 2 * MAX_CODE_LEN).ok_or(at)?;
            let (mut first, mut n) = (0u32, 0usize);
            for len in 1..=MAX_CODE_LEN {
                let count = u32::from(u16_at(counts, 2 * (len - 1)));
                if first + count > 1 << len {
                    return Err(at + 2 * (len - 1));
                }
                first = (first + count) << 1;
                n += count as usize;
            }
            at += 2 * MAX_CODE_LEN;
            let symbols = part.get(at..at + 2 * n).ok_or(at)?;
            at += 2 * n;
            *c = Code { counts, symbols };
        }
        Ok(RowCode {
            codes,
            stream: &part[at..],
        })
    }

    /// The bit stream, after the codes.
    pub fn stream(&self) -> &'a [u8] {
        self.stream
    }

    /// Decodes a block's `count` rows from bit `at` of the stream, the
    /// first at address `start`, calling `f` on each row whose address is at
    /// most `addr` and stopping at the first past it (as the byte decoder,
    /// FORMAT.md §15.3). `None` when the bits do not decode: an invalid
    /// code or symbol, a value out of range, or reading past the stream.
    #[cfg_attr(feature = "std", inline)]
    pub fn decode_block(
        &self,
        at: usize,
        count: usize,
        start: u64,
        columns: bool,
        addr: u64,
        f: impl FnMut(&SourceRow),
    ) -> Option<()> {
        let [ops, gaps, lines, vals] = self.codes.map(|c| (c, c.limits()));
        let mut bits = BitReader {
            s: self.stream,
            pos: at,
        };
        let val = |bits: &mut BitReader| bits.value(&vals.0, &vals.1);
        let dline = |bits: &mut BitReader| bits.value(&lines.0, &lines.1).map(unzig);
        let u32v = |v: u64| u32::try_from(v).ok();
        let first = SourceRow::first_of_block(start, columns, || val(&mut bits))?;
        bits.in_stream()?;
        walk_block(first, count, addr, f, |r, recent, top| {
            let s = bits.symbol(&ops.0, &ops.1)?;
            if s < RECALL {
                r.address = r.address.wrapping_add(u64::from(s >> 6) + 1);
                r.line = r.line.wrapping_add_signed(i32::from(s & 63) - 32);
            } else {
                r.address = r.address.checked_add(bits.value(&gaps.0, &gaps.1)?)?;
                if s < GENERAL {
                    let (j, k) = (usize::from(s >> 4 & 7), s & 15);
                    let (node, file, line) = recent.get(j)?;
                    let d = match k {
                        0..=8 => i64::from(k) - 4,
                        9 | 10 => dline(&mut bits)?,
                        _ => return None,
                    };
                    (r.node, r.file) = (node, file);
                    r.line = (i64::from(line) + d).try_into().ok()?;
                    if k == 10 {
                        r.discriminator = u32v(val(&mut bits)?)?;
                    }
                } else if s < GENERAL + 8 {
                    r.line = (i64::from(r.line) + dline(&mut bits)?).try_into().ok()?;
                    if s & 1 != 0 {
                        r.file = u32v(val(&mut bits)?)?;
                    }
                    if s & 2 != 0 {
                        r.node = (i64::from(top) + unzig(val(&mut bits)?)).try_into().ok()?;
                    }
                    if s & 4 != 0 {
                        r.discriminator = u32v(val(&mut bits)?)?;
                    }
                } else {
                    return None;
                }
            }
            if columns {
                r.column = u32v(val(&mut bits)?)?;
            }
            bits.in_stream()
        })
    }
}

fn unzig(v: u64) -> i64 {
    (v >> 1) as i64 ^ -((v & 1) as i64)
}

/// Bits, most significant first, from bit `pos` of `s`.
struct BitReader<'a> {
    s: &'a [u8],
    pos: usize,
}

impl BitReader<'_> {
    /// The next 64 bits, left-aligned; zeros past the stream's end (which
    /// [`BitReader::in_stream`] then refuses). At least 57 of them are the
    /// stream's when it has them.
    #[cfg_attr(feature = "std", inline(always))]
    fn window(&self) -> u64 {
        let i = self.pos >> 3;
        let mut w = [0u8; 8];
        match self.s.get(i..i.saturating_add(8)) {
            Some(b) => w.copy_from_slice(b),
            None => {
                let rest = self.s.get(i..).unwrap_or(&[]);
                w[..rest.len()].copy_from_slice(rest);
            }
        }
        u64::from_be_bytes(w) << (self.pos & 7)
    }

    fn in_stream(&self) -> Option<()> {
        (self.pos <= self.s.len().saturating_mul(8)).then_some(())
    }

    #[cfg_attr(feature = "std", inline(always))]
    fn symbol(&mut self, code: &Code, l: &Limits) -> Option<u16> {
        let w = (self.window() >> 48) as u32;
        let mut len = 1;
        while w >= l.limit[len - 1] {
            len += 1;
            if len > MAX_CODE_LEN {
                return None;
            }
        }
        let index = l.base[len - 1].wrapping_add(w >> (MAX_CODE_LEN - len)) as usize;
        self.pos += len;
        let s = code.symbols.get(2 * index..2 * index + 2)?;
        Some(u16::from_le_bytes([s[0], s[1]]))
    }

    /// A class-coded value: class `c` by `code`, then `c − 1` raw bits
    /// below the leading one.
    #[cfg_attr(feature = "std", inline(always))]
    fn value(&mut self, code: &Code, l: &Limits) -> Option<u64> {
        let c = self.symbol(code, l)?;
        if c <= 1 {
            return Some(u64::from(c));
        }
        if c > MAX_CLASS {
            return None;
        }
        let n = u32::from(c) - 1;
        let raw = self.window() >> (64 - n);
        self.pos += n as usize;
        Some(1 << n | raw)
    }
}
