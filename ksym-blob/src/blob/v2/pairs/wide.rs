//! The second phase of the token learner (FORMAT.md §11.3): pair merging
//! past one byte, over one sequence of u16 symbols, every string followed
//! by symbol 0. A heap keeps the most frequent pair on top, each pair lists
//! the positions it was made at, and a merge visits only those: the cost
//! follows the occurrences merged, not the strings' length times the
//! merges. Each position holds the id of the pair it starts, so a merge
//! finds every pair it changes without a hash.

use super::{MAX_EXPANSION, MAX_TABLE_BYTES};
use crate::blob::v2::layout::{MAX_CODES, NAME_END};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

// Every code of a table is a u16 symbol, and u16::MAX is none of them.
const _: () = assert!(MAX_CODES < u16::MAX as usize);

/// The symbol of a position merged into the one before it.
const GONE: u16 = u16::MAX;

/// Symbol 0 ends a string, as [`NAME_END`] does in the first phase.
const END: u16 = NAME_END as u16;

/// A position of [`Seq`]: its symbol, the distances to its neighbours (0
/// for none) and the id of the pair it starts ([`NO_PAIR`] for none). A
/// symbol spans at most [`MAX_EXPANSION`] positions (each of the first
/// phase's codes is a byte or more), so a distance fits a byte and a cell
/// eight: the sequence stays in cache.
#[derive(Clone, Copy)]
struct Cell {
    sym: u16,
    back: u8,
    fwd: u8,
    pair: u32,
}

/// No pair starts here: the symbol ends a string, is followed by the end
/// of one, or was merged away.
const NO_PAIR: u32 = u32::MAX;

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
                pair: NO_PAIR,
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

/// Every pair seen, by a dense id: its symbols, its count and the
/// positions of its first symbol where it was made (some since merged away
/// or changed: checked when read), in ascending order; and the pairs whose
/// count rose since the heap last heard of them.
struct Pairs {
    keys: Vec<u32>,
    count: Vec<u32>,
    at: Vec<Vec<u32>>,
    /// The fewest occurrences for which a pair's positions are listed.
    listed: u32,
    /// (id, position) of each pair the current merge made, listed when
    /// the merge is over and the pair's count known.
    made_at: Vec<(u32, u32)>,
    rose: Vec<u32>,
    /// The merge in which each id last joined `rose` (0: never).
    rose_in: Vec<u32>,
    /// The merges so far: the current one's number.
    merge: u32,
    /// By `x`: (merge, id) of the pair `x code` that merge made. A merge
    /// makes only pairs of its new code, none seen before, so these find
    /// them without a hash.
    before_code: Vec<(u32, u32)>,
    /// By `y`: (merge, id) of the pair `code y`.
    after_code: Vec<(u32, u32)>,
}

impl Pairs {
    /// The pairs of `seq` (symbols under 256, the first phase's), none of
    /// them new to the heap, each position given the id of the pair it
    /// starts; with their positions listed when they occur `listed` times
    /// or more: a pair of the first phase's symbols only ever loses
    /// occurrences, so one seen fewer than [`MIN_USES`] times is never
    /// merged and its positions never read. Listing only the others, each
    /// in a list of its final length, spares the allocator most of its
    /// work (the rare pairs are most pairs).
    fn of(seq: &mut Seq, listed: u32) -> Self {
        let mut pairs = Pairs {
            keys: Vec::new(),
            count: Vec::new(),
            at: Vec::new(),
            listed,
            made_at: Vec::new(),
            rose: Vec::new(),
            rose_in: Vec::new(),
            merge: 0,
            // Zeroed: pages the merges never reach cost nothing.
            before_code: vec![(0, 0); MAX_CODES],
            after_code: vec![(0, 0); MAX_CODES],
        };
        let mut byte_id = vec![NO_PAIR; 1 << 16];
        for i in 1..seq.0.len() {
            let (x, y) = (seq.0[i - 1].sym, seq.0[i].sym);
            if x == END || y == END {
                continue;
            }
            debug_assert!(x < 256 && y < 256);
            let slot = &mut byte_id[usize::from(x) << 8 | usize::from(y)];
            if *slot == NO_PAIR {
                *slot = pairs.add(key(x, y));
            }
            pairs.count[*slot as usize] += 1;
            seq.0[i - 1].pair = *slot;
        }
        pairs.at = (pairs.count.iter())
            .map(|&c| {
                if c >= listed {
                    Vec::with_capacity(c as usize)
                } else {
                    Vec::new()
                }
            })
            .collect();
        for (i, c) in seq.0.iter().enumerate() {
            if c.pair != NO_PAIR && pairs.count[c.pair as usize] >= listed {
                pairs.at[c.pair as usize].push(i as u32);
            }
        }
        pairs
    }
    /// A new pair's id: count 0, no positions.
    fn add(&mut self, p: u32) -> u32 {
        let id = self.keys.len() as u32;
        self.keys.push(p);
        self.count.push(0);
        self.at.push(Vec::new());
        self.rose_in.push(0);
        id
    }
    /// One more `x code` (`before`) or `code y` at position `at`: the
    /// pair's id.
    #[inline]
    fn made(&mut self, before: bool, other: u16, code: u16, at: u32) -> u32 {
        let merge = self.merge;
        let slot = if before {
            self.before_code[usize::from(other)]
        } else {
            self.after_code[usize::from(other)]
        };
        let id = if slot.0 == merge {
            slot.1
        } else {
            let p = if before {
                key(other, code)
            } else {
                key(code, other)
            };
            let id = self.add(p);
            let table = if before {
                &mut self.before_code
            } else {
                &mut self.after_code
            };
            table[usize::from(other)] = (merge, id);
            id
        };
        let i = id as usize;
        self.count[i] += 1;
        self.made_at.push((id, at));
        if self.rose_in[i] != merge {
            self.rose_in[i] = merge;
            self.rose.push(id);
        }
        id
    }
    /// Ends a merge: lists the positions of the pairs it made that occur
    /// often enough, and hands the pairs that can still be merged to
    /// `rose`. A pair rises only in the merge that made it, so one under
    /// [`MIN_USES`] now never will be merged.
    fn end_merge(&mut self, mut rose: impl FnMut(u32, u32, u32)) {
        for &(id, at) in &self.made_at {
            let (i, c) = (id as usize, self.count[id as usize]);
            if c >= self.listed {
                if self.at[i].is_empty() {
                    self.at[i].reserve_exact(c as usize);
                }
                self.at[i].push(at);
            }
        }
        self.made_at.clear();
        for &id in &self.rose {
            let (c, p) = (self.count[id as usize], self.keys[id as usize]);
            if c >= MIN_USES {
                rose(c, p, id);
            }
        }
        self.rose.clear();
    }
    #[inline]
    fn dec(&mut self, id: u32) {
        let c = &mut self.count[id as usize];
        *c = c.saturating_sub(1);
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
    // never will be merged. Ties go to the lower pair: its key, then its
    // id (one per key).
    let mut heap: BinaryHeap<(u32, Reverse<u32>, u32)> = (0..pairs.keys.len() as u32)
        .filter(|&id| pairs.count[id as usize] >= MIN_USES)
        .map(|id| {
            (
                pairs.count[id as usize],
                Reverse(pairs.keys[id as usize]),
                id,
            )
        })
        .collect();
    while let Some((c, Reverse(p), id)) = heap.pop() {
        let now = pairs.count[id as usize];
        if now != c {
            // A count only falls after it was pushed (a rise is pushed anew).
            if now >= MIN_USES && now < c {
                heap.push((now, Reverse(p), id));
            }
            continue;
        }
        // A use saves a code of one or two bytes; the table pays the
        // expansion and a u16 offset. No pair under MIN_USES can pay: none
        // is pushed.
        debug_assert!(c >= MIN_USES);
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
        pairs.merge += 1;
        merge_pair(seq, id, code, &mut pairs);
        pairs.end_merge(|c, p, id| heap.push((c, Reverse(p), id)));
    }
}

/// Merges every occurrence of pair `id` in `seq` into `code`, at the
/// positions the pair was listed at.
fn merge_pair(seq: &mut Seq, id: u32, code: u16, pairs: &mut Pairs) {
    // In position order (as listed): left to right, so that of
    // overlapping occurrences (`a a a` for `a a`) the first is merged.
    let at = std::mem::take(&mut pairs.at[id as usize]);
    debug_assert!(at.is_sorted());
    for i in at {
        merge_at(seq, i, id, code, pairs);
    }
}

/// Merges pair `id` at position `i` into `code`, if the pair still starts
/// there, keeping the pair counts equal to those of the new sequence.
#[inline]
fn merge_at(seq: &mut Seq, i: u32, id: u32, code: u16, pairs: &mut Pairs) {
    let cells = &mut seq.0;
    let iu = i as usize;
    let Cell {
        back, fwd, pair, ..
    } = cells[iu];
    if pair != id {
        return;
    }
    let j = iu + usize::from(fwd);
    let next = cells[j];
    pairs.dec(id);
    if back != 0 {
        let h = iu - usize::from(back);
        let x = cells[h];
        if x.sym != END {
            pairs.dec(x.pair);
            cells[h].pair = pairs.made(true, x.sym, code, h as u32);
        }
    }
    // A merge spans at most MAX_EXPANSION positions: checked by `grow`.
    let fwd = if next.fwd == 0 { 0 } else { fwd + next.fwd };
    let mut pair = NO_PAIR;
    if next.fwd != 0 {
        let k = j + usize::from(next.fwd);
        let y = cells[k].sym;
        if y != END {
            pairs.dec(next.pair);
            pair = pairs.made(false, y, code, i);
        }
        cells[k].back = fwd;
    }
    cells[iu] = Cell {
        sym: code,
        back,
        fwd,
        pair,
    };
    cells[j].sym = GONE;
    cells[j].pair = NO_PAIR;
}

#[cfg(test)]
mod tests {
    use super::*;
    use foldhash::{HashMap, HashMapExt};

    impl Pairs {
        /// Pair `p`'s id (a scan: tests only).
        fn find(&self, p: u32) -> Option<u32> {
            self.keys.iter().position(|&k| k == p).map(|i| i as u32)
        }
        fn count_of(&self, p: u32) -> u32 {
            self.find(p).map_or(0, |id| self.count[id as usize])
        }
        fn all(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
            self.keys.iter().copied().zip(self.count.iter().copied())
        }
        /// Merges pair `a b` into `code`, as `grow` does.
        fn merge(&mut self, seq: &mut Seq, (a, b): (u16, u16), code: u16) {
            self.merge += 1;
            if let Some(id) = self.find(key(a, b)) {
                merge_pair(seq, id, code, self);
            }
            self.end_merge(|_, _, _| {});
        }
    }

    #[test]
    fn counts_stay_exact_through_overlapping_merges() {
        // Counts kept incrementally equal a fresh count after a merge,
        // overlapping runs of one symbol included.
        let mut seq = Seq::of_bytes(b"aaaaab\0aab\0abab\0xaaay\0").unwrap();
        let mut pairs = Pairs::of(&mut seq, 1);
        let (a, b) = (u16::from(b'a'), u16::from(b'b'));
        pairs.merge(&mut seq, (a, a), 300 + a);
        pairs.merge(&mut seq, (a, b), 300 + b);
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
                assert_eq!(c.pair, NO_PAIR);
                break;
            }
            let j = i + usize::from(c.fwd);
            assert_eq!(usize::from(seq.0[j].back), j - i);
            let y = seq.0[j].sym;
            if c.sym != END && y != END {
                // The position knows its pair's id.
                let id = pairs.find(key(c.sym, y)).unwrap();
                assert_eq!(c.pair, id, "{} {y} at {i}", c.sym);
                let at = &pairs.at[id as usize];
                assert!(at.contains(&(i as u32)), "{} {y} at {i}", c.sym);
            } else {
                assert_eq!(c.pair, NO_PAIR, "at {i}");
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
        let mut pairs = Pairs::of(&mut seq, 1);
        let (a, b) = (u16::from(b'a'), u16::from(b'b'));
        assert_eq!(pairs.count_of(key(a, b)), 1);
        pairs.merge(&mut seq, (a, b), 300);
        let syms: Vec<u16> = seq.symbols().collect();
        let x = u16::from(b'x');
        assert_eq!(syms, [x, a, 0, b, x, 0, 300, 0]);
        assert_eq!(pairs.count_of(key(a, b)), 0);
    }
}
