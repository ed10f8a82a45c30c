//! Pair-merged token codes for v2 names and line-table strings (docs/FORMAT.md
//! §11.3), grown from the way the kernel's `scripts/kallsyms` compresses its
//! names: every byte value the strings use is a symbol; the most frequent
//! adjacent pair of symbols becomes a new symbol, again and again, while a
//! pair repeats enough to pay for its table bytes. The symbols left in use
//! are then numbered by frequency: the most used get one-byte codes, the
//! rest two-byte codes behind a prefix byte.

use super::layout::{MAX_CODES, NAME_END, one_byte_codes};
use foldhash::{HashMap, HashMapExt};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Longest expansion a code may have, in bytes.
pub const MAX_EXPANSION: usize = 128;

/// Most expansion bytes a table holds: its offsets are u16, and up to 256
/// single bytes may join the learnt expansions.
const MAX_TABLE_BYTES: usize = u16::MAX as usize - 256;

/// A learnt code table and the strings encoded with it.
#[derive(Debug, Clone)]
pub struct PairCodes {
    /// Expansion of each code (index = code, at most [`MAX_CODES`]); code 0
    /// ends a name and has none.
    pub expansions: Vec<Vec<u8>>,
    /// Every input string encoded (one- and two-byte codes, FORMAT.md
    /// §11.3), each followed by [`NAME_END`], which no code's bytes hold.
    pub encoded: Vec<u8>,
    /// Number of pair codes (codes whose expansion is longer than one byte).
    pub pair_codes: usize,
}

#[inline]
fn key(a: u32, b: u32) -> u64 {
    u64::from(a) << 32 | u64::from(b)
}

/// A pair's count and the strings it may occur in (listed again on each
/// new occurrence; a merge rewrites each string once).
#[derive(Default)]
struct Pair {
    count: u32,
    words: Vec<u32>,
}

/// Every pair seen, and the pairs whose count rose since the heap last
/// heard of them.
struct Pairs {
    map: HashMap<u64, Pair>,
    rose: Vec<u64>,
}

impl Pairs {
    /// The pairs of `words`, none of them new to the heap.
    fn of(words: &[Vec<u32>]) -> Self {
        let mut pairs = Pairs {
            map: HashMap::new(),
            rose: Vec::new(),
        };
        for (i, w) in words.iter().enumerate() {
            for p in w.windows(2) {
                pairs.inc(key(p[0], p[1]), i as u32);
            }
        }
        pairs.rose.clear();
        pairs
    }
    #[inline]
    fn inc(&mut self, p: u64, word: u32) {
        let e = self.map.entry(p).or_default();
        e.count += 1;
        if e.words.last() != Some(&word) {
            e.words.push(word);
        }
        self.rose.push(p);
    }
    #[inline]
    fn dec(&mut self, p: u64) {
        if let Some(e) = self.map.get_mut(&p) {
            e.count = e.count.saturating_sub(1);
        }
    }
    fn count(&self, p: u64) -> u32 {
        self.map.get(&p).map_or(0, |e| e.count)
    }
}

/// Learns codes over `strings` and encodes them. No string may hold byte 0.
/// Deterministic: ties between pairs go to the lower `(first, second)`
/// symbol, ties in frequency to the older symbol.
///
/// A table past 256 codes pays on large inputs (long tokens over many
/// names), but a two-byte code for a pair of one-byte ones saves nothing
/// per use: on a few thousand names it can cost more than it saves. So the
/// strings are also kept as they stood when one more merge would have
/// passed one-byte codes, and the smaller of the two encodings is returned.
pub fn learn<'s>(strings: impl Iterator<Item = &'s [u8]>) -> PairCodes {
    let mut words: Vec<Vec<u32>> = strings
        .map(|s| {
            debug_assert!(!s.contains(&NAME_END));
            s.iter().map(|&b| u32::from(b)).collect()
        })
        .collect();
    let mut seen = [false; 256];
    for &s in words.iter().flatten() {
        seen[s as usize] = true;
    }
    // Merges that leave every code one byte: code 0 and the literals
    // take the rest of the 256.
    let narrow_merges = 255 - seen.iter().filter(|&&u| u).count();
    let mut narrow: Option<Vec<Vec<u32>>> = None;
    let mut exp: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    let mut pairs = Pairs::of(&words);
    let mut heap: BinaryHeap<(u32, Reverse<u64>)> = pairs
        .map
        .iter()
        .map(|(&p, e)| (e.count, Reverse(p)))
        .collect();
    // The merge that last rewrote each string, so a string listed twice
    // under a pair is rewritten once.
    let mut stamp = vec![u32::MAX; words.len()];
    let mut table_bytes = 0usize;
    while let Some((c, Reverse(p))) = heap.pop() {
        let now = pairs.count(p);
        if now != c {
            // A count only falls after it was pushed (a rise is pushed anew).
            if now > 0 && now < c {
                heap.push((now, Reverse(p)));
            }
            continue;
        }
        // A use saves a code of one or two bytes; the table pays the
        // expansion and a u16 offset. No pair under 5 can pay.
        if c < 5 {
            break;
        }
        let (a, b) = ((p >> 32) as u32, p as u32);
        let len = exp[a as usize].len() + exp[b as usize].len();
        if len > MAX_EXPANSION || c as usize <= len + 2 {
            continue;
        }
        if exp.len() + 1 >= MAX_CODES || table_bytes + len > MAX_TABLE_BYTES {
            break;
        }
        if exp.len() - 256 == narrow_merges {
            narrow = Some(words.clone());
        }
        let code = exp.len() as u32;
        let e = [exp[a as usize].as_slice(), &exp[b as usize]].concat();
        exp.push(e);
        table_bytes += len;
        let listed = pairs.map.get_mut(&p).map(|e| std::mem::take(&mut e.words));
        for wi in listed.unwrap_or_default() {
            if stamp[wi as usize] != code {
                stamp[wi as usize] = code;
                replace(&mut words[wi as usize], wi, a, b, code, &mut pairs);
            }
        }
        pairs.rose.sort_unstable();
        pairs.rose.dedup();
        for &q in &pairs.rose {
            heap.push((pairs.count(q), Reverse(q)));
        }
        pairs.rose.clear();
    }
    let wide = number_by_frequency(&words, &exp);
    let Some(narrow) = narrow else {
        return wide;
    };
    let narrow = number_by_frequency(&narrow, &exp[..256 + narrow_merges]);
    let size =
        |c: &PairCodes| c.encoded.len() + c.expansions.iter().map(|e| e.len() + 2).sum::<usize>();
    if size(&narrow) <= size(&wide) {
        narrow
    } else {
        wide
    }
}

/// Replaces every `a b` in `w` (string number `wi`) by `code`, left to
/// right, keeping the pair counts equal to those of the new strings.
fn replace(w: &mut Vec<u32>, wi: u32, a: u32, b: u32, code: u32, pairs: &mut Pairs) {
    let n = w.len();
    // Nothing before the first occurrence moves or changes a count.
    let Some(first) = w.windows(2).position(|p| p[0] == a && p[1] == b) else {
        return;
    };
    let (mut r, mut o) = (first, first);
    while r < n {
        if r + 1 < n && w[r] == a && w[r + 1] == b {
            pairs.dec(key(a, b));
            if o > 0 {
                let prev = w[o - 1];
                pairs.dec(key(prev, a));
                pairs.inc(key(prev, code), wi);
            }
            if r + 2 < n {
                let next = w[r + 2];
                pairs.dec(key(b, next));
                pairs.inc(key(code, next), wi);
            }
            w[o] = code;
            r += 2;
        } else {
            w[o] = w[r];
            r += 1;
        }
        o += 1;
    }
    w.truncate(o);
}

/// Numbers the symbols still in use by falling frequency (code 0 stays the
/// end of a name) and encodes the strings with one- and two-byte codes
/// (FORMAT.md §11.3).
fn number_by_frequency(words: &[Vec<u32>], exp: &[Vec<u8>]) -> PairCodes {
    let mut freq = vec![0u64; exp.len()];
    for w in words {
        for &s in w {
            freq[s as usize] += 1;
        }
    }
    let mut used: Vec<u32> = (0..exp.len() as u32)
        .filter(|&s| freq[s as usize] > 0)
        .collect();
    used.sort_by_key(|&s| (Reverse(freq[s as usize]), s));
    let count = used.len() + 1;
    let one = one_byte_codes(count);
    let mut code_of = vec![0usize; exp.len()];
    let mut expansions = Vec::with_capacity(count);
    expansions.push(Vec::new());
    for (i, &s) in used.iter().enumerate() {
        code_of[s as usize] = i + 1;
        expansions.push(exp[s as usize].clone());
    }
    let mut encoded = Vec::with_capacity(words.iter().map(|w| w.len() + 1).sum());
    for w in words {
        for &s in w {
            push_code(&mut encoded, code_of[s as usize], one);
        }
        encoded.push(NAME_END);
    }
    let pair_codes = expansions.iter().filter(|e| e.len() > 1).count();
    PairCodes {
        expansions,
        encoded,
        pair_codes,
    }
}

/// Appends code `c` as one byte (below `one`) or as a prefix byte and a
/// nonzero second byte (FORMAT.md §11.3).
fn push_code(out: &mut Vec<u8>, c: usize, one: usize) {
    if c < one {
        out.push(c as u8);
    } else {
        let t = c - one;
        out.push((one + t / 254) as u8);
        out.push((t % 254 + 1) as u8);
    }
}

#[cfg(test)]
mod tests {
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
    fn round_trips_and_counts_stay_exact() {
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
        // Counts kept incrementally equal a fresh count after a merge,
        // overlapping runs of one symbol included.
        let mut words: Vec<Vec<u32>> = [&b"aaaaab"[..], b"aab", b"abab", b"xaaay"]
            .iter()
            .map(|w| w.iter().map(|&b| u32::from(b)).collect())
            .collect();
        let mut pairs = Pairs::of(&words);
        for (a, b) in [(b'a', b'a'), (b'a', b'b')] {
            for (i, w) in words.iter_mut().enumerate() {
                replace(
                    w,
                    i as u32,
                    a.into(),
                    b.into(),
                    300 + u32::from(b),
                    &mut pairs,
                );
            }
        }
        let mut fresh: HashMap<u64, u32> = HashMap::new();
        for w in &words {
            for p in w.windows(2) {
                *fresh.entry(key(p[0], p[1])).or_insert(0) += 1;
            }
        }
        assert_eq!(words[0], vec![397, 397, 398]);
        for (p, e) in &pairs.map {
            assert_eq!(e.count, fresh.get(p).copied().unwrap_or(0), "pair {p:#x}");
        }
        assert_eq!(
            fresh.len(),
            pairs.map.values().filter(|e| e.count > 0).count()
        );
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
    fn no_strings_give_a_table_of_code_zero() {
        let codes = learn(std::iter::empty());
        assert_eq!(codes.expansions, vec![Vec::<u8>::new()]);
        assert!(codes.encoded.is_empty());
    }
}
