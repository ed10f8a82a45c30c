//! The second phase of the token learner (FORMAT.md §11.3): pair merging
//! past one byte, over one sequence of u16 symbols, every string followed
//! by symbol 0. A heap keeps the most frequent pair on top, each pair lists
//! the positions it was made at, and a merge visits only those: the cost
//! follows the occurrences merged, not the strings' length times the
//! merges.

use super::{MAX_EXPANSION, MAX_TABLE_BYTES};
use crate::blob::v2::layout::{MAX_CODES, NAME_END};
use foldhash::{HashMap, HashMapExt};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

// Every code of a table is a u16 symbol, and u16::MAX is none of them.
const _: () = assert!(MAX_CODES < u16::MAX as usize);

/// The symbol of a position merged into the one before it.
const GONE: u16 = u16::MAX;

/// Symbol 0 ends a string, as [`NAME_END`] does in the first phase.
const END: u16 = NAME_END as u16;

/// A position of [`Seq`]: its symbol and the distances to its
/// neighbours, 0 for none. A symbol spans at most [`MAX_EXPANSION`]
/// positions (each of the first phase's codes is a byte or more), so a
/// distance fits a byte and a cell four: the sequence stays in cache.
#[derive(Clone, Copy)]
struct Cell {
    sym: u16,
    back: u8,
    fwd: u8,
}

const _: () = assert!(MAX_EXPANSION <= u8::MAX as usize);

/// The strings as a doubly linked sequence of symbols: a merge writes the
/// new symbol over the first of its two and unlinks the second, so no
/// symbol moves and a listed position stays valid.
pub(super) struct Seq(Vec<Cell>);

impl Seq {
    /// The sequence of `coded`: one-byte codes, each string ended by
    /// [`NAME_END`] (the first phase's output). None past 4 GiB: positions
    /// are u32.
    pub(super) fn of_bytes(coded: &[u8]) -> Option<Self> {
        let n = coded.len();
        if u32::try_from(n).is_err() {
            return None;
        }
        Some(Seq(coded
            .iter()
            .enumerate()
            .map(|(i, &c)| Cell {
                sym: u16::from(c),
                back: u8::from(i > 0),
                fwd: u8::from(i + 1 < n),
            })
            .collect()))
    }

    /// The symbols in order, each string's followed by 0.
    pub(super) fn symbols(&self) -> impl Iterator<Item = u16> + Clone + '_ {
        self.0.iter().map(|c| c.sym).filter(|&s| s != GONE)
    }
}

#[inline]
fn key(a: u16, b: u16) -> u32 {
    u32::from(a) << 16 | u32::from(b)
}

/// Every pair seen: its count and the positions of its first symbol
/// where it was made (some since merged away or changed: checked when
/// read), by a dense id; and the pairs whose count rose since the heap
/// last heard of them. The map holds ids alone, so that the counts a merge
/// updates at random stay in cache.
struct Pairs {
    id: HashMap<u32, u32>,
    count: Vec<u32>,
    at: Vec<Vec<u32>>,
    rose: Vec<u32>,
}

impl Pairs {
    /// The pairs of `seq`, none of them new to the heap, with their
    /// positions listed when they occur `listed` times or more: a pair of
    /// the first phase's symbols only ever loses occurrences, so one seen
    /// fewer than [`MIN_USES`] times is never merged and its positions
    /// never read. Listing only the others, each in a list of its final
    /// length, spares the allocator most of its work (the rare pairs are
    /// most pairs).
    fn of(seq: &Seq, listed: u32) -> Self {
        let mut pairs = Pairs {
            id: HashMap::new(),
            count: Vec::new(),
            at: Vec::new(),
            rose: Vec::new(),
        };
        // Each position's pair id (u32::MAX: no pair starts there).
        let ids: Vec<u32> = seq
            .0
            .windows(2)
            .map(|w| {
                if w[0].sym == END || w[1].sym == END {
                    return u32::MAX;
                }
                let next = pairs.count.len() as u32;
                let id = *pairs.id.entry(key(w[0].sym, w[1].sym)).or_insert(next);
                if id == next {
                    pairs.count.push(0);
                }
                pairs.count[id as usize] += 1;
                id
            })
            .collect();
        pairs.at = (pairs.count.iter())
            .map(|&c| {
                if c >= listed {
                    Vec::with_capacity(c as usize)
                } else {
                    Vec::new()
                }
            })
            .collect();
        for (i, &id) in ids.iter().enumerate() {
            if id != u32::MAX && pairs.count[id as usize] >= listed {
                pairs.at[id as usize].push(i as u32);
            }
        }
        pairs
    }
    #[inline]
    fn inc(&mut self, p: u32, at: u32) {
        let next = self.count.len() as u32;
        let id = *self.id.entry(p).or_insert(next) as usize;
        if id == self.count.len() {
            self.count.push(0);
            self.at.push(Vec::new());
        }
        self.count[id] += 1;
        self.at[id].push(at);
        self.rose.push(p);
    }
    #[inline]
    fn dec(&mut self, p: u32) {
        if let Some(&id) = self.id.get(&p) {
            let c = &mut self.count[id as usize];
            *c = c.saturating_sub(1);
        }
    }
    fn count(&self, p: u32) -> u32 {
        self.id.get(&p).map_or(0, |&id| self.count[id as usize])
    }
    /// Pair `p`'s listed positions, taken.
    fn take_at(&mut self, p: u32) -> Vec<u32> {
        match self.id.get(&p) {
            Some(&id) => std::mem::take(&mut self.at[id as usize]),
            None => Vec::new(),
        }
    }
    /// Every pair seen, with its count.
    fn all(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.id.iter().map(|(&p, &id)| (p, self.count[id as usize]))
    }
}

/// The fewest occurrences of a pair worth a code (see [`grow`]).
const MIN_USES: u32 = 5;

/// Merges the most frequent pair of `seq` into a new symbol (appended to
/// `exp`, the expansion of each symbol), again and again, while a pair
/// occurs at least 5 times and more than its expansion's length plus 2
/// (its table cost), its expansion stays within [`MAX_EXPANSION`] bytes,
/// and the table within [`MAX_CODES`] codes and [`MAX_TABLE_BYTES`] bytes.
/// Each merge replaces the pair's occurrences left to right, as a scan of
/// each string would. Ties go to the lower `(first, second)` symbol.
pub(super) fn grow(seq: &mut Seq, exp: &mut Vec<Vec<u8>>) {
    grow_listing(seq, exp, MIN_USES);
}

/// [`grow`], with the positions of pairs seen `listed` times or more
/// listed (any `listed` up to [`MIN_USES`] merges the same).
fn grow_listing(seq: &mut Seq, exp: &mut Vec<Vec<u8>>, listed: u32) {
    let mut table_bytes: usize = exp.iter().map(Vec::len).sum();
    let mut pairs = Pairs::of(seq, listed);
    // A pair not made of a new symbol never rises: one under MIN_USES now
    // never will be merged.
    let mut heap: BinaryHeap<(u32, Reverse<u32>)> = pairs
        .all()
        .filter(|&(_, c)| c >= MIN_USES)
        .map(|(p, c)| (c, Reverse(p)))
        .collect();
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
        // expansion and a u16 offset. No pair under MIN_USES can pay.
        if c < MIN_USES {
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
        merge_pair(seq, (a, b), code, &mut pairs);
        pairs.rose.sort_unstable();
        pairs.rose.dedup();
        for &q in &pairs.rose {
            heap.push((pairs.count(q), Reverse(q)));
        }
        pairs.rose.clear();
    }
}

/// Merges every `a b` of `seq` into `code`, at the positions the pair was
/// listed at.
fn merge_pair(seq: &mut Seq, (a, b): (u16, u16), code: u16, pairs: &mut Pairs) {
    let mut at = pairs.take_at(key(a, b));
    // In position order: left to right, so that of overlapping
    // occurrences (`a a a` for `a a`) the first is merged.
    at.sort_unstable();
    for i in at {
        merge_at(seq, i, (a, b), code, pairs);
    }
}

/// Merges `a b` at position `i` into `code`, if `a b` is still there,
/// keeping the pair counts equal to those of the new sequence.
#[inline]
fn merge_at(seq: &mut Seq, i: u32, (a, b): (u16, u16), code: u16, pairs: &mut Pairs) {
    let cells = &mut seq.0;
    let iu = i as usize;
    let Cell { sym, back, fwd } = cells[iu];
    // `a` at the end of a string is followed by 0, never by `b`.
    if sym != a || fwd == 0 {
        return;
    }
    let j = iu + usize::from(fwd);
    let next = cells[j];
    if next.sym != b {
        return;
    }
    pairs.dec(key(a, b));
    if back != 0 {
        let h = iu - usize::from(back);
        let x = cells[h].sym;
        if x != END {
            pairs.dec(key(x, a));
            pairs.inc(key(x, code), h as u32);
        }
    }
    // A merge spans at most MAX_EXPANSION positions: checked by `grow`.
    let fwd = if next.fwd == 0 { 0 } else { fwd + next.fwd };
    if next.fwd != 0 {
        let k = j + usize::from(next.fwd);
        let y = cells[k].sym;
        if y != END {
            pairs.dec(key(b, y));
            pairs.inc(key(code, y), i);
        }
        cells[k].back = fwd;
    }
    cells[iu] = Cell {
        sym: code,
        back,
        fwd,
    };
    cells[j].sym = GONE;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_stay_exact_through_overlapping_merges() {
        // Counts kept incrementally equal a fresh count after a merge,
        // overlapping runs of one symbol included.
        let mut seq = Seq::of_bytes(b"aaaaab\0aab\0abab\0xaaay\0").unwrap();
        let mut pairs = Pairs::of(&seq, 1);
        let (a, b) = (u16::from(b'a'), u16::from(b'b'));
        merge_pair(&mut seq, (a, a), 300 + a, &mut pairs);
        merge_pair(&mut seq, (a, b), 300 + b, &mut pairs);
        let syms: Vec<u16> = seq.symbols().collect();
        let mut fresh: HashMap<u32, u32> = HashMap::new();
        for p in syms.windows(2) {
            if p[0] != END && p[1] != END {
                *fresh.entry(key(p[0], p[1])).or_insert(0) += 1;
            }
        }
        let words: Vec<&[u16]> = syms.split(|&s| s == END).collect();
        assert_eq!(words[0], [397, 397, 398]);
        assert_eq!(words[1], [397, b]);
        assert_eq!(words[2], [398, 398]);
        assert_eq!(words[3], [u16::from(b'x'), 397, a, u16::from(b'y')]);
        for (p, c) in pairs.all() {
            assert_eq!(c, fresh.get(&p).copied().unwrap_or(0), "pair {p:#x}");
        }
        assert_eq!(fresh.len(), pairs.all().filter(|&(_, c)| c > 0).count());
        // Every pair there is is listed at its position, and the links
        // lead from live symbol to live symbol, both ways.
        let mut i = 0;
        let mut walked = Vec::new();
        loop {
            let c = seq.0[i];
            walked.push(c.sym);
            if c.fwd == 0 {
                break;
            }
            let j = i + usize::from(c.fwd);
            assert_eq!(usize::from(seq.0[j].back), j - i);
            let y = seq.0[j].sym;
            if c.sym != END && y != END {
                let at = &pairs.at[pairs.id[&key(c.sym, y)] as usize];
                assert!(at.contains(&(i as u32)), "{} {y} at {i}", c.sym);
            }
            i = j;
        }
        assert_eq!(walked, syms);
    }

    #[test]
    fn rare_pairs_unlisted_merge_the_same() {
        // Names of common parts, and rarer names (400 two-letter words,
        // each about 8 times): the table and the sequence are the same
        // whether rare pairs' positions are listed.
        let mut text = Vec::new();
        let mut x: u32 = 7;
        let mut next = || {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            x >> 16
        };
        for _ in 0..3000 {
            for _ in 0..(next() % 4 + 1) {
                let parts: [&[u8]; 6] = [b"std::", b"vector", b"<int>", b"alloc", b"::", b"_M_"];
                text.extend_from_slice(parts[next() as usize % 6]);
            }
            text.push(0);
            // A rare word alone: its one pair has no neighbour to lose to.
            let w = next() % 400;
            text.extend([b'a' + (w % 20) as u8, b'A' + (w / 20) as u8, 0]);
        }
        let run = |listed: u32| {
            let mut seq = Seq::of_bytes(&text).unwrap();
            let mut exp: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
            grow_listing(&mut seq, &mut exp, listed);
            (exp, seq.symbols().collect::<Vec<u16>>())
        };
        let all = run(1);
        assert_eq!(run(MIN_USES), all);
        // The input has pairs that a higher bound would leave unmerged.
        assert_ne!(run(2 * MIN_USES), all);
    }

    #[test]
    fn a_pair_across_strings_is_no_pair() {
        // `a` ends one string and `b` starts the next: not `a b`.
        let mut seq = Seq::of_bytes(b"xa\0bx\0ab\0").unwrap();
        let mut pairs = Pairs::of(&seq, 1);
        let (a, b) = (u16::from(b'a'), u16::from(b'b'));
        assert_eq!(pairs.count(key(a, b)), 1);
        merge_pair(&mut seq, (a, b), 300, &mut pairs);
        let syms: Vec<u16> = seq.symbols().collect();
        let x = u16::from(b'x');
        assert_eq!(syms, [x, a, 0, b, x, 0, 300, 0]);
        assert_eq!(pairs.count(key(a, b)), 0);
    }
}
