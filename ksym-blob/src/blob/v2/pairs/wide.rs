//! The second phase of the token learner (FORMAT.md §11.3): pair merging
//! past one byte, over strings of u32 symbols. A heap keeps the most
//! frequent pair on top, each pair lists the strings it occurs in, and a
//! merge rewrites only those, so the cost follows the occurrences merged,
//! not the input's length times the merges.

use super::{MAX_EXPANSION, MAX_TABLE_BYTES};
use crate::blob::v2::layout::MAX_CODES;
use foldhash::{HashMap, HashMapExt};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

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

/// Merges the most frequent pair of `words` into a new symbol (appended to
/// `exp`, the expansion of each symbol), again and again, while a pair
/// occurs at least 5 times and more than its expansion's length plus 2
/// (its table cost), its expansion stays within [`MAX_EXPANSION`] bytes,
/// and the table within [`MAX_CODES`] codes and [`MAX_TABLE_BYTES`] bytes.
/// Ties go to the lower `(first, second)` symbol.
pub(super) fn grow(words: &mut [Vec<u32>], exp: &mut Vec<Vec<u8>>) {
    let mut table_bytes: usize = exp.iter().map(Vec::len).sum();
    let mut pairs = Pairs::of(words);
    let mut heap: BinaryHeap<(u32, Reverse<u64>)> = pairs
        .map
        .iter()
        .map(|(&p, e)| (e.count, Reverse(p)))
        .collect();
    // The merge that last rewrote each string, so a string listed twice
    // under a pair is rewritten once.
    let mut stamp = vec![u32::MAX; words.len()];
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_stay_exact_through_overlapping_merges() {
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
}
