//! The first phase of the token learner (FORMAT.md §11.3), as the
//! kernel's `scripts/kallsyms` learns its table: every byte value the
//! strings use is a code for itself, and each unused value in turn becomes
//! a code for the most frequent adjacent pair of codes, until none is left
//! or no pair repeats enough to pay for its bytes. Over one flat byte
//! string, with a SIMD search per merge: these first merges touch most of
//! the input, and bytes are where they are cheapest.

use super::MAX_EXPANSION;
use super::helper::Helper;
use crate::blob::v2::layout::NAME_END;

#[inline]
fn pair(a: u8, b: u8) -> usize {
    (a as usize) << 8 | b as usize
}

/// Learns one-byte codes over `strings`: each string's codes followed by
/// [`NAME_END`], and the expansion of each byte code (empty for a value no
/// code uses). No string may hold byte 0. Deterministic: ties between
/// pairs go to the lower `(first, second)` code. With a `helper`, the
/// input is split in two and each half merged on its own thread, to the
/// same result.
pub(super) fn learn<'s>(
    strings: impl Iterator<Item = &'s [u8]>,
    helper: Option<&Helper>,
) -> (Vec<Vec<u8>>, Vec<u8>) {
    let mut seq: Vec<u8> = Vec::new();
    let mut used = [false; 256];
    for s in strings {
        debug_assert!(!s.contains(&NAME_END));
        for &b in s {
            used[b as usize] = true;
        }
        seq.extend_from_slice(s);
        seq.push(NAME_END);
    }
    let mut expansions: Vec<Vec<u8>> = (0..=255u8)
        .map(|c| {
            if used[c as usize] && c != NAME_END {
                vec![c]
            } else {
                Vec::new()
            }
        })
        .collect();
    // Split after the first string end past the middle.
    let helper = helper.filter(|_| !seq.is_empty());
    let mut mine = Part::default();
    if let Some(h) = helper {
        let half = seq.len() / 2;
        let at = half + string_end(&seq[half..]) + 1;
        h.part().seq = seq.split_off(at);
        mine.seq = seq;
        h.count_with(&mut mine);
    } else {
        mine.seq = seq;
        mine.count();
    }
    for code in 1..=255u8 {
        if used[code as usize] {
            continue;
        }
        // The most frequent pair whose expansion is not too long.
        // Over the pairs ever seen, not all 65,536: the same answer (the
        // lower pair wins a tie) in a fraction of the time.
        let theirs = helper.map(Helper::part);
        let (best, best_count) = {
            let other = theirs.as_deref().map(|p| &p.counts);
            let fits =
                |p: usize| expansions[p >> 8].len() + expansions[p & 0xFF].len() <= MAX_EXPANSION;
            most_frequent(&mine.counts, other, fits)
        };
        drop(theirs);
        let Some(p) = best else { break };
        let (a, b) = ((p >> 8) as u8, (p & 0xFF) as u8);
        let exp = [expansions[a as usize].as_slice(), &expansions[b as usize]].concat();
        // A use saves one byte; the table pays the expansion and a u16
        // offset (FORMAT.md §11.3: a table holds only the codes it uses).
        if (best_count as usize) <= exp.len() + 2 {
            break;
        }
        expansions[code as usize] = exp;
        match helper {
            Some(h) => h.merge_with(&mut mine, a, b, code),
            None => mine.merge(a, b, code),
        }
    }
    let mut seq = mine.seq;
    if let Some(h) = helper {
        h.finish();
        seq.append(&mut h.part().seq);
    }
    (expansions, seq)
}

/// The offset of the first [`NAME_END`] in `s` (every input ends with one).
fn string_end(s: &[u8]) -> usize {
    s.iter().position(|&b| b == NAME_END).unwrap_or(s.len() - 1)
}

/// The pair with the most occurrences in `mine` and `other` together that
/// `fits`, and its count; ties go to the lower pair.
fn most_frequent(
    mine: &PairCounts,
    other: Option<&PairCounts>,
    fits: impl Fn(usize) -> bool,
) -> (Option<usize>, u32) {
    let total = |p: usize| mine.count[p] + other.map_or(0, |o| o.count[p]);
    let seen = mine.seen.iter().chain(other.map_or(&[][..], |o| &o.seen));
    let mut best: Option<usize> = None;
    let mut best_count = 0u32;
    for &p in seen {
        let (p, c) = (p as usize, total(p as usize));
        if c == 0 || c < best_count || (c == best_count && best.is_some_and(|b| b <= p)) {
            continue;
        }
        if fits(p) {
            best = Some(p);
            best_count = c;
        }
    }
    (best, best_count)
}

/// A run of whole strings, each ended by [`NAME_END`], and its pair counts:
/// all of the input, or a thread's half of it.
#[derive(Default)]
pub(super) struct Part {
    pub seq: Vec<u8>,
    counts: PairCounts,
}

impl Part {
    /// Counts the pairs of `seq` afresh.
    pub fn count(&mut self) {
        self.counts = PairCounts::new();
        for w in self.seq.windows(2) {
            if w[0] != NAME_END && w[1] != NAME_END {
                self.counts.inc(pair(w[0], w[1]));
            }
        }
    }
    /// Replaces every `a b` by `c` (see [`replace`]).
    pub fn merge(&mut self, a: u8, b: u8, c: u8) {
        replace(&mut self.seq, &mut self.counts, a, b, c);
    }
}

/// Occurrences of every byte pair, and the pairs that ever occurred.
#[derive(Default)]
struct PairCounts {
    count: Vec<u32>,
    seen: Vec<u32>,
}

impl PairCounts {
    fn new() -> Self {
        PairCounts {
            count: vec![0; 1 << 16],
            seen: Vec::new(),
        }
    }
    /// One more occurrence of pair `p`; a pair seen for the first time (or
    /// again after dropping to 0) joins `seen`, at most once per rise from 0.
    #[inline]
    fn inc(&mut self, p: usize) {
        if self.count[p] == 0 {
            self.seen.push(p as u32);
        }
        self.count[p] += 1;
    }
}

/// Replaces every `a b` in `seq` by `c`, left to right, keeping `counts`
/// equal to the pair counts of the new sequence. The pair is searched with
/// a SIMD substring finder and the bytes between occurrences move as blocks.
fn replace(seq: &mut Vec<u8>, counts: &mut PairCounts, a: u8, b: u8, c: u8) {
    let needle = [a, b];
    let finder = bstr::Finder::new(&needle);
    let n = seq.len();
    let (mut r, mut w) = (0usize, 0usize);
    while let Some(p) = finder.find(&seq[r..]) {
        let pos = r + p;
        seq.copy_within(r..pos, w);
        w += pos - r;
        let prev = (w > 0 && seq[w - 1] != NAME_END).then(|| seq[w - 1]);
        let next = seq.get(pos + 2).copied().filter(|&x| x != NAME_END);
        counts.count[pair(a, b)] -= 1;
        if let Some(p) = prev {
            counts.count[pair(p, a)] -= 1;
            counts.inc(pair(p, c));
        }
        if let Some(x) = next {
            counts.count[pair(b, x)] -= 1;
            counts.inc(pair(c, x));
        }
        seq[w] = c;
        w += 1;
        r = pos + 2;
    }
    seq.copy_within(r..n, w);
    seq.truncate(w + n - r);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Reverse;

    #[test]
    fn counts_stay_exact_and_seen_pairs_are_listed() {
        let mut seq = b"aaaaab\0aab\0".to_vec();
        let mut counts = PairCounts::new();
        for w in seq.windows(2) {
            if w[0] != 0 && w[1] != 0 {
                counts.inc(pair(w[0], w[1]));
            }
        }
        replace(&mut seq, &mut counts, b'a', b'a', 200);
        let mut fresh = vec![0u32; 1 << 16];
        for w in seq.windows(2) {
            if w[0] != 0 && w[1] != 0 {
                fresh[pair(w[0], w[1])] += 1;
            }
        }
        assert_eq!(seq, vec![200, 200, b'a', b'b', 0, 200, b'b', 0]);
        assert!(counts.count == fresh);
        for (p, &c) in fresh.iter().enumerate() {
            assert!(c == 0 || counts.seen.contains(&(p as u32)), "pair {p:#x}");
        }
    }

    /// The kallsyms way, spelt out: each round counts every pair afresh
    /// and scans all 65,536 for the most frequent (ties: the lower pair),
    /// then replaces it left to right.
    fn learn_by_rescanning(strings: &[Vec<u8>]) -> (Vec<Vec<u8>>, Vec<u8>) {
        let mut seq: Vec<u8> = strings
            .iter()
            .flat_map(|s| s.iter().copied().chain([0]))
            .collect();
        let mut exp: Vec<Vec<u8>> = (0..=255u8)
            .map(|c| {
                if c != 0 && seq.contains(&c) {
                    vec![c]
                } else {
                    Vec::new()
                }
            })
            .collect();
        for code in 1..=255u8 {
            if !exp[code as usize].is_empty() {
                continue;
            }
            let mut count = vec![0u32; 1 << 16];
            for w in seq.windows(2) {
                if w[0] != 0 && w[1] != 0 {
                    count[pair(w[0], w[1])] += 1;
                }
            }
            let fits = |p: usize| exp[p >> 8].len() + exp[p & 0xFF].len() <= MAX_EXPANSION;
            let Some(p) = (0..1 << 16)
                .filter(|&p| count[p] > 0 && fits(p))
                .max_by_key(|&p| (count[p], Reverse(p)))
            else {
                break;
            };
            let (a, b) = ((p >> 8) as u8, p as u8);
            let e = [exp[a as usize].as_slice(), &exp[b as usize]].concat();
            if count[p] as usize <= e.len() + 2 {
                break;
            }
            exp[code as usize] = e;
            let mut out = Vec::with_capacity(seq.len());
            let mut i = 0;
            while i < seq.len() {
                if i + 1 < seq.len() && seq[i] == a && seq[i + 1] == b {
                    out.push(code);
                    i += 2;
                } else {
                    out.push(seq[i]);
                    i += 1;
                }
            }
            seq = out;
        }
        (exp, seq)
    }

    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]
        /// Counts kept up to date pick what counting afresh picks, round
        /// after round: the same codes and sequence.
        #[test]
        fn learns_what_rescanning_learns(
            pieces in prop::collection::vec(prop::collection::vec(1u8..=40, 1..6), 2..60),
            picks in prop::collection::vec(prop::collection::vec(any::<prop::sample::Index>(), 1..8), 1..400),
        ) {
            let words = super::super::words_of(&pieces, &picks);
            let got = learn(words.iter().map(|w| &w[..]), None);
            prop_assert_eq!(got, learn_by_rescanning(&words));
        }

        /// Split between two threads (at the string end after the middle,
        /// wherever that falls), the merges give what one thread's give.
        #[test]
        fn two_threads_learn_what_one_learns(
            pieces in prop::collection::vec(prop::collection::vec(1u8..=40, 1..6), 2..60),
            picks in prop::collection::vec(prop::collection::vec(any::<prop::sample::Index>(), 1..8), 1..400),
        ) {
            let words = super::super::words_of(&pieces, &picks);
            let alone = learn(words.iter().map(|w| &w[..]), None);
            let helper = Helper::default();
            let helped = std::thread::scope(|s| {
                let learner = s.spawn(|| {
                    let _release = super::super::helper::Release(&helper);
                    learn(words.iter().map(|w| &w[..]), Some(&helper))
                });
                helper.serve();
                learner.join().unwrap()
            });
            prop_assert_eq!(helped, alone);
        }
    }
}
