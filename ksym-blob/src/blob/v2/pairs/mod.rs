//! Pair-merged token codes for v2 names and line-table strings (docs/FORMAT.md
//! §11.3), in two phases: [`narrow`] learns one-byte codes the way the
//! kernel's `scripts/kallsyms` does, [`wide`] goes on merging past one byte.
//! The symbols left in use are then numbered by frequency: the most used
//! get one-byte codes, the rest two-byte codes behind a prefix byte.

mod helper;
mod narrow;
mod wide;

pub use helper::Helper;

use super::layout::{NAME_END, one_byte_codes};
use std::cmp::Reverse;

/// Longest expansion a code may have, in bytes.
pub const MAX_EXPANSION: usize = 128;

/// Most expansion bytes a table holds: its offsets are u16.
const MAX_TABLE_BYTES: usize = u16::MAX as usize;

/// A learnt code table and the strings encoded with it.
#[derive(Debug, Clone)]
pub struct PairCodes {
    /// Expansion of each code (index = code, at most
    /// [`MAX_CODES`](super::layout::MAX_CODES)); code 0 ends a name and
    /// has none.
    pub expansions: Vec<Vec<u8>>,
    /// Every input string encoded (one- and two-byte codes, FORMAT.md
    /// §11.3), each followed by [`NAME_END`], which no code's bytes hold.
    pub encoded: Vec<u8>,
    /// Number of pair codes (codes whose expansion is longer than one byte).
    pub pair_codes: usize,
}

/// Learns codes over `strings` and encodes them. No string may hold byte 0.
/// Deterministic.
///
/// A table past 256 codes pays on large inputs (long tokens over many
/// names), but a two-byte code for a pair of one-byte ones saves nothing
/// per use: on a few thousand names it can cost more than it saves. So both
/// the one-byte table of the first phase and the wider one of the second
/// are numbered, and the smaller encoding, strings and table together, is
/// returned.
pub fn learn<'s>(strings: impl Iterator<Item = &'s [u8]>) -> PairCodes {
    learn_helped(strings, None)
}

/// [`learn`], with the first phase's merges shared with the thread that
/// calls [`Helper::serve`] on `helper`, if there is one (see
/// [`Helper::for_strings`]: about half of a Rust binary's line strings'
/// learning). The same codes as [`learn`]. The helper is let go when the
/// first phase ends, and on every way out, a panic's included.
pub fn learn_helped<'s>(
    strings: impl Iterator<Item = &'s [u8]>,
    helper: Option<&Helper>,
) -> PairCodes {
    let _release = helper.map(helper::Release);
    let (mut exp, encoded) = narrow::learn(strings, helper);
    let narrow_symbols = || encoded.iter().map(|&c| u16::from(c));
    // Past 4 GiB of one-byte codes (no symbol list comes near), the
    // one-byte table.
    let Some(mut seq) = wide::Seq::of_bytes(&encoded) else {
        return number_by_frequency(narrow_symbols(), &exp);
    };
    wide::grow(&mut seq, &mut exp);
    let narrow = Numbering::of(narrow_symbols(), &exp[..256]);
    if exp.len() == 256 {
        return narrow.encode(narrow_symbols(), &exp[..256]);
    }
    // Sized first: only the smaller is encoded.
    let wide = Numbering::of(seq.symbols(), &exp);
    if narrow.size(&exp[..256]) <= wide.size(&exp) {
        narrow.encode(narrow_symbols(), &exp[..256])
    } else {
        wide.encode(seq.symbols(), &exp)
    }
}

/// [`Numbering::of`] then [`Numbering::encode`].
fn number_by_frequency(symbols: impl Iterator<Item = u16> + Clone, exp: &[Vec<u8>]) -> PairCodes {
    Numbering::of(symbols.clone(), exp).encode(symbols, exp)
}

/// The symbols still in use numbered by falling frequency (ties: the older
/// symbol), from code 1; code 0 stays the end of a name.
struct Numbering {
    /// How often each symbol is used.
    freq: Vec<u64>,
    /// The symbols in use, in code order (code `i + 1`).
    used: Vec<u32>,
    /// The number of symbols, string ends included.
    n: usize,
}

impl Numbering {
    fn of(symbols: impl Iterator<Item = u16>, exp: &[Vec<u8>]) -> Self {
        let mut freq = vec![0u64; exp.len()];
        let mut n = 0;
        for s in symbols {
            freq[s as usize] += 1;
            n += 1;
        }
        let mut used: Vec<u32> = (1..exp.len() as u32)
            .filter(|&s| freq[s as usize] > 0)
            .collect();
        used.sort_by_key(|&s| (Reverse(freq[s as usize]), s));
        Numbering { freq, used, n }
    }

    /// Bytes of the strings encoded and of the table: what
    /// [`Numbering::encode`] gives, without encoding.
    fn size(&self, exp: &[Vec<u8>]) -> usize {
        let one = one_byte_codes(self.used.len() + 1);
        let ends = self.n as u64
            - self
                .used
                .iter()
                .map(|&s| self.freq[s as usize])
                .sum::<u64>();
        let codes: u64 = (self.used.iter().enumerate())
            .map(|(i, &s)| self.freq[s as usize] * if i + 1 < one { 1 } else { 2 })
            .sum();
        let table: usize = self.used.iter().map(|&s| exp[s as usize].len() + 2).sum();
        (ends + codes) as usize + table + 2
    }

    /// The table and `symbols` (each string's followed by 0) encoded with
    /// one- and two-byte codes (FORMAT.md §11.3).
    fn encode(&self, symbols: impl Iterator<Item = u16>, exp: &[Vec<u8>]) -> PairCodes {
        let count = self.used.len() + 1;
        let one = one_byte_codes(count);
        let mut code_of = vec![0usize; exp.len()];
        let mut expansions = Vec::with_capacity(count);
        expansions.push(Vec::new());
        for (i, &s) in self.used.iter().enumerate() {
            code_of[s as usize] = i + 1;
            expansions.push(exp[s as usize].clone());
        }
        let mut encoded = Vec::with_capacity(self.n);
        for s in symbols {
            match s {
                0 => encoded.push(NAME_END),
                s => push_code(&mut encoded, code_of[s as usize], one),
            }
        }
        let pair_codes = expansions.iter().filter(|e| e.len() > 1).count();
        PairCodes {
            expansions,
            encoded,
            pair_codes,
        }
    }
}

/// Test words: each a run of `pieces` chosen by `picks`, so that they
/// share a small vocabulary and repeat enough to merge.
#[cfg(test)]
fn words_of(pieces: &[Vec<u8>], picks: &[Vec<proptest::sample::Index>]) -> Vec<Vec<u8>> {
    (picks.iter())
        .map(|p| {
            p.iter()
                .flat_map(|i| pieces[i.index(pieces.len())].iter().copied())
                .collect()
        })
        .collect()
}

/// Appends code `c` as one byte (below `one`) or as a prefix byte and a
/// nonzero second byte (FORMAT.md §11.3).
fn push_code(out: &mut Vec<u8>, c: usize, one: usize) {
    if c < one {
        out.push(c as u8);
    } else {
        let t = c - one;
        debug_assert!(one + t / 255 <= 255, "code {c} past the table's prefixes");
        out.push((one + t / 255) as u8);
        out.push((t % 255 + 1) as u8);
    }
}

#[cfg(test)]
mod tests {
    use super::super::layout::MAX_CODES;
    use super::super::names::Tokens;
    use super::*;

    fn decode(codes: &PairCodes) -> Vec<Vec<u8>> {
        let table = super::super::bits::token_table(&codes.expansions);
        let tokens = Tokens::parse(&table).unwrap();
        codes
            .encoded
            .split(|&b| b == NAME_END)
            .map(|s| tokens.runs(s).flatten().copied().collect())
            .collect()
    }

    #[test]
    fn names_round_trip() {
        let names: Vec<&[u8]> = vec![
            b"aaaa",
            b"aaab",
            b"do_sys_open",
            b"do_sys_openat2",
            b"x",
            b"sys_open",
            b"sys_openat",
        ];
        let codes = learn(names.iter().copied());
        let back = decode(&codes);
        assert_eq!(
            &back[..names.len()],
            &names.iter().map(|n| n.to_vec()).collect::<Vec<_>>()[..]
        );
        assert!(codes.pair_codes > 0);
        assert!(codes.encoded.len() < names.iter().map(|n| n.len() + 1).sum::<usize>());
    }

    #[test]
    fn many_codes_take_two_bytes_and_round_trip() {
        // 2,000 distinct long words, each 10 times: more codes than one
        // byte holds, and worth it (a two-byte code for 16 bytes).
        let words: Vec<Vec<u8>> = (0..2000u32)
            .flat_map(|i| {
                let w = format!("{:08x}{:08x}", i.wrapping_mul(2_654_435_761), i * 7919);
                std::iter::repeat_n(w.into_bytes(), 10)
            })
            .collect();
        let codes = learn(words.iter().map(|w| &w[..]));
        assert!(codes.expansions.len() > 256, "{}", codes.expansions.len());
        assert!(codes.expansions.len() <= MAX_CODES);
        let one = one_byte_codes(codes.expansions.len());
        assert!(one < 256);
        assert!(codes.encoded.iter().any(|&b| usize::from(b) >= one));
        assert_eq!(decode(&codes)[..words.len()], words[..]);
        // Short words used 6 times each: two-byte codes would cost more
        // than they save, so the one-byte table is kept.
        let short: Vec<Vec<u8>> = (0..2000u32)
            .flat_map(|i| {
                std::iter::repeat_n(format!("w{:x}{}_", i * 7919, i % 13).into_bytes(), 6)
            })
            .collect();
        let narrow = learn(short.iter().map(|w| &w[..]));
        assert!(
            narrow.expansions.len() <= 256,
            "{}",
            narrow.expansions.len()
        );
        assert_eq!(decode(&narrow)[..short.len()], short[..]);
        // Learning is deterministic.
        let again = learn(words.iter().map(|w| &w[..]));
        assert_eq!(again.encoded, codes.encoded);
        assert_eq!(again.expansions, codes.expansions);
    }

    #[test]
    fn every_code_of_a_full_table_decodes_to_itself() {
        // Counts at the edges of the prefix arithmetic (one more code
        // takes one more prefix), 5,841 (a corpus table that once met a
        // wrong multiplier) and 12,000; each code expands to its decimal
        // digits, so a code read as another shows.
        for count in [1, 2, 256, 257, 510, 511, 764, 765, 5_841, 12_000] {
            let exp: Vec<Vec<u8>> = (0..count)
                .map(|c| {
                    if c == 0 {
                        Vec::new()
                    } else {
                        format!("{c},").into_bytes()
                    }
                })
                .collect();
            let table = super::super::bits::token_table(&exp);
            let tokens = Tokens::parse(&table).unwrap();
            let one = one_byte_codes(count);
            let mut coded = Vec::new();
            for c in 1..count {
                push_code(&mut coded, c, one);
            }
            assert!(!coded.contains(&NAME_END), "{count}");
            assert!(tokens.codes_are_whole(&coded), "{count}");
            let got: Vec<u8> = tokens.runs(&coded).flatten().copied().collect();
            let want: Vec<u8> = exp.concat();
            assert!(got == want, "{count} codes");
        }
        // The largest table: every code's bytes are a prefix and a
        // nonzero byte that name it again, the last prefix byte 255.
        let one = one_byte_codes(MAX_CODES);
        assert_eq!(one, 1);
        let mut last = Vec::new();
        push_code(&mut last, MAX_CODES - 1, one);
        assert_eq!(last, [255, 255]);
    }

    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// Strings built from a small vocabulary of random pieces repeat
        /// enough for both phases to merge, often past 256 codes: every
        /// string decodes to itself, the table stays within its limits,
        /// and learning twice gives the same bytes.
        #[test]
        fn learnt_codes_decode_to_their_strings(
            pieces in prop::collection::vec(prop::collection::vec(1u8..=255, 1..12), 2..400),
            picks in prop::collection::vec(prop::collection::vec(any::<prop::sample::Index>(), 1..10), 1..3000),
        ) {
            let words = words_of(&pieces, &picks);
            let codes = learn(words.iter().map(|w| &w[..]));
            prop_assert!(codes.expansions.len() <= MAX_CODES);
            prop_assert!(codes.expansions.iter().skip(1).all(|e| !e.is_empty() && e.len() <= MAX_EXPANSION));
            prop_assert_eq!(codes.encoded.iter().filter(|&&b| b == NAME_END).count(), words.len());
            prop_assert_eq!(&decode(&codes)[..words.len()], &words[..]);
            let again = learn(words.iter().map(|w| &w[..]));
            prop_assert_eq!(again.encoded, codes.encoded);
        }
    }

    /// A numbering's size is that of its encoding, strings and table,
    /// with one-byte codes only and with two-byte codes.
    #[test]
    fn a_numbering_is_sized_as_it_encodes() {
        let size = |c: &PairCodes| {
            c.encoded.len() + c.expansions.iter().map(|e| e.len() + 2).sum::<usize>()
        };
        for count in [3usize, 255, 256, 257, 600, 5_000] {
            let exp: Vec<Vec<u8>> = (0..count).map(|c| format!("{c}").into_bytes()).collect();
            // Symbol s used (s * 7) % 13 times (some not at all), strings
            // of 5 symbols.
            let mut symbols = Vec::new();
            for s in 1..count as u16 {
                for _ in 0..(s * 7) % 13 {
                    symbols.push(s);
                    if symbols.len() % 6 == 5 {
                        symbols.push(0);
                    }
                }
            }
            symbols.push(0);
            let numbering = Numbering::of(symbols.iter().copied(), &exp);
            let codes = numbering.encode(symbols.iter().copied(), &exp);
            assert_eq!(numbering.size(&exp), size(&codes), "{count} symbols");
        }
    }

    #[test]
    fn no_strings_give_a_table_of_code_zero() {
        let codes = learn(std::iter::empty());
        assert_eq!(codes.expansions, vec![Vec::<u8>::new()]);
        assert!(codes.encoded.is_empty());
    }
}
