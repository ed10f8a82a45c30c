//! Pair-merged token codes for v2 names (docs/FORMAT.md §11.3), the way the
//! kernel's `scripts/kallsyms` compresses its names: every byte value the
//! names use is a code for itself; each unused value in turn becomes a code
//! for the most frequent adjacent pair of codes, until none is left or no
//! pair repeats enough to pay for its table bytes.

use super::layout::NAME_END;

/// Longest expansion a code may have, in bytes (the table's u16 offsets
/// stay far from overflow: 255 × 128 < 65,536).
pub const MAX_EXPANSION: usize = 128;

/// A learnt code table and the strings encoded with it.
#[derive(Debug, Clone)]
pub struct PairCodes {
    /// Expansion of each code (index = code); code 0 ends a name and has none.
    pub expansions: Vec<Vec<u8>>,
    /// Every input string encoded, each followed by [`NAME_END`].
    pub encoded: Vec<u8>,
    /// Number of pair codes (codes whose expansion is longer than one byte).
    pub pair_codes: usize,
}

#[inline]
fn pair(a: u8, b: u8) -> usize {
    (a as usize) << 8 | b as usize
}

/// Learns codes over `strings` and encodes them. No string may hold byte 0.
/// Deterministic: ties between pairs go to the lower `(first, second)` code.
pub fn learn<'s>(strings: impl Iterator<Item = &'s [u8]>) -> PairCodes {
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
    let mut counts = PairCounts::new();
    for w in seq.windows(2) {
        if w[0] != NAME_END && w[1] != NAME_END {
            counts.inc(pair(w[0], w[1]));
        }
    }
    let mut pair_codes = 0;
    for code in 1..=255u8 {
        if used[code as usize] {
            continue;
        }
        // The most frequent pair whose expansion is not too long.
        // Over the pairs ever seen, not all 65,536: the same answer (the
        // lower pair wins a tie) in a fraction of the time.
        let mut best: Option<usize> = None;
        let mut best_count = 0u32;
        for &p in &counts.seen {
            let (p, c) = (p as usize, counts.count[p as usize]);
            if c == 0 || c < best_count || (c == best_count && best.is_some_and(|b| b < p)) {
                continue;
            }
            let len = expansions[p >> 8].len() + expansions[p & 0xFF].len();
            if len <= MAX_EXPANSION {
                best = Some(p);
                best_count = c;
            }
        }
        let Some(p) = best else { break };
        let (a, b) = ((p >> 8) as u8, (p & 0xFF) as u8);
        let exp = [expansions[a as usize].as_slice(), &expansions[b as usize]].concat();
        // A use saves one byte; the expansion costs its bytes in the table.
        if (best_count as usize) <= exp.len() {
            break;
        }
        expansions[code as usize] = exp;
        pair_codes += 1;
        replace(&mut seq, &mut counts, a, b, code);
    }
    PairCodes {
        expansions,
        encoded: seq,
        pair_codes,
    }
}

/// Occurrences of every byte pair, and the pairs that ever occurred.
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

    fn decode(codes: &PairCodes) -> Vec<Vec<u8>> {
        codes
            .encoded
            .split(|&b| b == NAME_END)
            .map(|s| {
                s.iter()
                    .flat_map(|&c| codes.expansions[c as usize].clone())
                    .collect()
            })
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
        ];
        let codes = learn(names.iter().copied());
        let back = decode(&codes);
        assert_eq!(
            &back[..names.len()],
            &names.iter().map(|n| n.to_vec()).collect::<Vec<_>>()[..]
        );
        assert!(codes.pair_codes > 0);
        assert!(codes.encoded.len() < names.iter().map(|n| n.len() + 1).sum::<usize>());
        // Counts kept incrementally equal a fresh count after the merges.
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
        // Every pair that occurs now is listed as seen.
        for (p, &c) in fresh.iter().enumerate() {
            assert!(c == 0 || counts.seen.contains(&(p as u32)), "pair {p:#x}");
        }
    }
}
