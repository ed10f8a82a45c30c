//! The second phase of the token learner (FORMAT.md §11.3): pair merging
//! past one byte, over strings of u16 symbols. A heap keeps the most
//! frequent pair on top, each pair lists the strings it occurs in, and a
//! merge rewrites only those, so the cost follows the strings merged, not
//! the input's length times the merges.

use super::{MAX_EXPANSION, MAX_TABLE_BYTES};
use crate::blob::v2::layout::MAX_CODES;
use foldhash::{HashMap, HashMapExt};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

// Every code of a table is a u16 symbol.
const _: () = assert!(MAX_CODES <= 1 << 16);

/// A string of symbols, each a u16 as two little-endian bytes: a pair is
/// then four bytes that a SIMD substring search finds (a merge's rewrites
/// scan tens of megabytes on a Rust binary's lines).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Word(Vec<u8>);

impl Word {
    /// The string whose symbols are `codes`, one byte each.
    pub(super) fn of_bytes(codes: &[u8]) -> Self {
        Word(codes.iter().flat_map(|&c| [c, 0]).collect())
    }
    /// Its symbols, in order.
    pub(super) fn symbols(&self) -> impl ExactSizeIterator<Item = u16> + '_ {
        self.0
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
    }
    /// The symbol at byte offset `at` (even).
    #[inline]
    fn at(&self, at: usize) -> u16 {
        u16::from_le_bytes([self.0[at], self.0[at + 1]])
    }
}

#[inline]
fn key(a: u16, b: u16) -> u32 {
    u32::from(a) << 16 | u32::from(b)
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
    map: HashMap<u32, Pair>,
    rose: Vec<u32>,
}

impl Pairs {
    /// The pairs of `words`, none of them new to the heap.
    fn of(words: &[Word]) -> Self {
        let mut pairs = Pairs {
            map: HashMap::new(),
            rose: Vec::new(),
        };
        for (i, w) in words.iter().enumerate() {
            let mut s = w.symbols();
            if let Some(mut a) = s.next() {
                for b in s {
                    pairs.inc(key(a, b), i as u32);
                    a = b;
                }
            }
        }
        pairs.rose.clear();
        pairs
    }
    #[inline]
    fn inc(&mut self, p: u32, word: u32) {
        let e = self.map.entry(p).or_default();
        e.count += 1;
        if e.words.last() != Some(&word) {
            e.words.push(word);
        }
        self.rose.push(p);
    }
    #[inline]
    fn dec(&mut self, p: u32) {
        if let Some(e) = self.map.get_mut(&p) {
            e.count = e.count.saturating_sub(1);
        }
    }
    fn count(&self, p: u32) -> u32 {
        self.map.get(&p).map_or(0, |e| e.count)
    }
}

/// Merges the most frequent pair of `words` into a new symbol (appended to
/// `exp`, the expansion of each symbol), again and again, while a pair
/// occurs at least 5 times and more than its expansion's length plus 2
/// (its table cost), its expansion stays within [`MAX_EXPANSION`] bytes,
/// and the table within [`MAX_CODES`] codes and [`MAX_TABLE_BYTES`] bytes.
/// Ties go to the lower `(first, second)` symbol.
pub(super) fn grow(words: &mut [Word], exp: &mut Vec<Vec<u8>>) {
    let mut table_bytes: usize = exp.iter().map(Vec::len).sum();
    let mut pairs = Pairs::of(words);
    // A pair not made of a new symbol never rises: one under 5 now never
    // will be merged.
    let mut heap: BinaryHeap<(u32, Reverse<u32>)> = pairs
        .map
        .iter()
        .filter(|(_, e)| e.count >= 5)
        .map(|(&p, e)| (e.count, Reverse(p)))
        .collect();
    // The merge that last rewrote each string, so a string listed twice
    // under a pair is rewritten once.
    let mut stamp = vec![u16::MAX; words.len()];
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
        let (a, b) = ((p >> 16) as u16, p as u16);
        let len = exp[a as usize].len() + exp[b as usize].len();
        if len > MAX_EXPANSION || c as usize <= len + 2 {
            continue;
        }
        if exp.len() + 1 >= MAX_CODES || table_bytes + len > MAX_TABLE_BYTES {
            break;
        }
        let code = exp.len() as u16;
        let e = [exp[a as usize].as_slice(), &exp[b as usize]].concat();
        exp.push(e);
        table_bytes += len;
        let needle = [a.to_le_bytes(), b.to_le_bytes()].concat();
        let finder = bstr::Finder::new(&needle);
        let listed = pairs.map.get_mut(&p).map(|e| std::mem::take(&mut e.words));
        for wi in listed.unwrap_or_default() {
            if stamp[wi as usize] != code {
                stamp[wi as usize] = code;
                replace(
                    &mut words[wi as usize],
                    wi,
                    (a, b),
                    code,
                    &finder,
                    &mut pairs,
                );
            }
        }
        pairs.rose.sort_unstable();
        pairs.rose.dedup();
        for &q in &pairs.rose {
            heap.push((pairs.count(q), Reverse(q)));
        }
        pairs.rose.clear();
    }
}

/// The byte offset of the first `a b` of `w` at or after byte `from`
/// (even), found by `finder` (its four bytes), at a symbol's start.
#[inline]
fn find(w: &[u8], mut from: usize, finder: &bstr::Finder<'_>) -> Option<usize> {
    while let Some(p) = finder.find(&w[from..]) {
        let at = from + p;
        if at.is_multiple_of(2) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// Replaces every `a b` in `w` (string number `wi`) by `code`, left to
/// right, keeping the pair counts equal to those of the new string. The
/// pair is searched by `finder` and the symbols between occurrences move as
/// blocks.
fn replace(
    w: &mut Word,
    wi: u32,
    (a, b): (u16, u16),
    code: u16,
    finder: &bstr::Finder<'_>,
    pairs: &mut Pairs,
) {
    let n = w.0.len();
    // Nothing before the first occurrence moves or changes a count.
    let Some(first) = find(&w.0, 0, finder) else {
        return;
    };
    let (mut r, mut o) = (first, first);
    let mut hit = Some(first);
    while let Some(at) = hit {
        w.0.copy_within(r..at, o);
        o += at - r;
        pairs.dec(key(a, b));
        if o > 0 {
            let prev = w.at(o - 2);
            pairs.dec(key(prev, a));
            pairs.inc(key(prev, code), wi);
        }
        if at + 4 < n {
            let next = w.at(at + 4);
            pairs.dec(key(b, next));
            pairs.inc(key(code, next), wi);
        }
        w.0[o..o + 2].copy_from_slice(&code.to_le_bytes());
        o += 2;
        r = at + 4;
        hit = find(&w.0, r, finder);
    }
    w.0.copy_within(r..n, o);
    w.0.truncate(o + n - r);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_stay_exact_through_overlapping_merges() {
        // Counts kept incrementally equal a fresh count after a merge,
        // overlapping runs of one symbol included.
        let mut words: Vec<Word> = [&b"aaaaab"[..], b"aab", b"abab", b"xaaay"]
            .iter()
            .map(|w| Word::of_bytes(w))
            .collect();
        let mut pairs = Pairs::of(&words);
        for (a, b) in [(b'a', b'a'), (b'a', b'b')] {
            let (a, b) = (u16::from(a), u16::from(b));
            let needle = [a.to_le_bytes(), b.to_le_bytes()].concat();
            let finder = bstr::Finder::new(&needle);
            for (i, w) in words.iter_mut().enumerate() {
                replace(w, i as u32, (a, b), 300 + b, &finder, &mut pairs);
            }
        }
        let mut fresh: HashMap<u32, u32> = HashMap::new();
        for w in &words {
            let s: Vec<u16> = w.symbols().collect();
            for p in s.windows(2) {
                *fresh.entry(key(p[0], p[1])).or_insert(0) += 1;
            }
        }
        assert_eq!(words[0].symbols().collect::<Vec<_>>(), [397, 397, 398]);
        for (p, e) in &pairs.map {
            assert_eq!(e.count, fresh.get(p).copied().unwrap_or(0), "pair {p:#x}");
        }
        assert_eq!(
            fresh.len(),
            pairs.map.values().filter(|e| e.count > 0).count()
        );
        // Four bytes that straddle symbols are no pair: only whole
        // symbols match (bytes 1..5 here spell `a b` too).
        let mut w = Word(vec![1, b'a', 0, b'b', 0, 1, b'a', 0, b'b', 0]);
        let mut pairs = Pairs::of(std::slice::from_ref(&w));
        let (a, b) = (u16::from(b'a'), u16::from(b'b'));
        let needle = [a.to_le_bytes(), b.to_le_bytes()].concat();
        let finder = bstr::Finder::new(&needle);
        replace(&mut w, 0, (a, b), 300, &finder, &mut pairs);
        assert_eq!(
            w.symbols().collect::<Vec<_>>(),
            [0x6101, 0x6200, 0x0100, 300]
        );
        assert_eq!(pairs.count(key(0x0100, 300)), 1);
        assert_eq!(pairs.count(key(a, b)), 0);
    }
}
