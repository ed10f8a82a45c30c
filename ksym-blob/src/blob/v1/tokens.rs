//! Token selection: which name prefixes go into the token table, and the
//! longest token prefixing each name, which the encoder uses (FORMAT.md §3.4).
//!
//! Two strategies fill the same format:
//! - [`TokenStrategy::Seed`], the seed spec's heuristic: prefixes of a fixed
//!   list of lengths, weight = count × length.
//! - [`TokenStrategy::Optimal`] (the default): every prefix length that is a
//!   branching point of the names' prefix trie, chosen greedily by marginal
//!   bytes saved after the reference and table costs.
//!
//! Both end in the same pass that drops tokens saving nothing and numbers the
//! rest by uses, so frequent tokens get the 3-byte reference form.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};

use crate::blob::nameorder::{NameList, NameOrder};
use crate::blob::v1::layout::{MAX_TOKENS, token_ref_len};

/// The seed spec's candidate prefix lengths, in bytes.
pub const SEED_LENGTHS: [usize; 26] = [
    10, 24, 31, 40, 56, 60, 70, 80, 90, 100, 150, 200, 250, 300, 400, 500, 600, 700, 800, 900,
    1000, 1200, 1400, 1600, 1800, 2000,
];

/// Bytes one token costs in the blob besides its references: its bytes in
/// `token_table` plus this, its `token_index` entry.
pub const TOKEN_INDEX_ENTRY: usize = 4;

/// How to choose tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TokenStrategy {
    /// The seed spec's fixed-length prefix heuristic.
    Seed,
    /// Greedy by marginal bytes saved over all prefix lengths.
    #[default]
    Optimal,
}

impl std::str::FromStr for TokenStrategy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "seed" => Ok(TokenStrategy::Seed),
            "optimal" => Ok(TokenStrategy::Optimal),
            _ => Err(format!(
                "unknown token strategy `{s}` (expected `seed` or `optimal`)"
            )),
        }
    }
}

/// A chosen token and what it does on the names it was chosen for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenStat {
    /// The token's bytes.
    pub bytes: Vec<u8>,
    /// Names whose record references it.
    pub uses: usize,
    /// Bytes it saves overall: `uses × (len − ref_len) − len − 4`.
    pub saved: i64,
}

/// The token table in id order (id = position), with per-token statistics.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TokenTable {
    /// Tokens in id order.
    pub tokens: Vec<TokenStat>,
    /// For each name (in the order given to [`select`]): the id of the
    /// longest token that prefixes it, or [`NO_TOKEN`].
    pub matches: Vec<u16>,
}

/// Marks a name that no token prefixes, in [`TokenTable::matches`].
pub const NO_TOKEN: u16 = u16::MAX;

impl TokenTable {
    /// Total bytes saved by all tokens (see [`TokenStat::saved`]).
    pub fn saved(&self) -> i64 {
        self.tokens.iter().map(|t| t.saved).sum()
    }
}

/// Largest `b <= at` that does not fall inside a UTF-8 character of `s`.
fn char_floor(s: &[u8], at: usize) -> usize {
    let mut b = at.min(s.len());
    while b > 0 && b < s.len() && (s[b] & 0xC0) == 0x80 {
        b -= 1;
    }
    b
}

/// A candidate token: the first `len` bytes of the name at rank `rank` of
/// name order. Names sharing a prefix are one range of name order, so a rank
/// and the LCP array find every name a token prefixes without comparing bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Candidate {
    rank: u32,
    len: u32,
}

/// The names and their name order, as token selection reads them.
struct Names<'a, N: ?Sized> {
    names: &'a N,
    order: &'a NameOrder,
}

impl<'a, N: NameList + ?Sized> Names<'a, N> {
    fn at_rank(&self, r: usize) -> &'a [u8] {
        self.names.name(self.order.by_name[r] as usize)
    }

    fn bytes(&self, c: Candidate) -> &'a [u8] {
        &self.at_rank(c.rank as usize)[..c.len as usize]
    }

    /// Ranks `lo..hi` of the names `c` prefixes: the run around `c.rank`
    /// where neighbours share at least `c.len` bytes.
    fn range(&self, c: Candidate) -> (usize, usize) {
        let lcp = &self.order.lcp;
        let (mut lo, mut hi) = (c.rank as usize, c.rank as usize + 1);
        while lo > 0 && lcp[lo] >= c.len {
            lo -= 1;
        }
        while hi < lcp.len() && lcp[hi] >= c.len {
            hi += 1;
        }
        (lo, hi)
    }
}

/// Chooses the token table for `names` (any order).
///
/// `order` is their name order and LCP array
/// ([`name_order`](crate::blob::nameorder::name_order), which the writer computes
/// anyway for `seqs`). Deterministic: the same names give the same table.
pub fn select<N: NameList + ?Sized>(
    names: &N,
    order: &NameOrder,
    strategy: TokenStrategy,
) -> TokenTable {
    let names = Names { names, order };
    let candidates = match strategy {
        TokenStrategy::Seed => seed_candidates(&names),
        TokenStrategy::Optimal => greedy_candidates(&names),
    };
    finalize(candidates, &names)
}

/// Would a token of `len` bytes used by `uses` names save anything?
fn saves(uses: usize, len: usize, ref_len: usize) -> bool {
    (uses * len.saturating_sub(ref_len)) as i64 - (len + TOKEN_INDEX_ENTRY) as i64 > 0
}

fn seed_candidates<N: NameList + ?Sized>(names: &Names<'_, N>) -> Vec<Candidate> {
    // Prefix → (names it prefixes at a seed length, a rank holding it).
    let mut counts: HashMap<&[u8], (usize, u32)> = HashMap::new();
    // Names in position order (where they lie in memory), each with its rank.
    let mut rank_of = vec![0u32; names.order.by_name.len()];
    for (r, &pos) in names.order.by_name.iter().enumerate() {
        rank_of[pos as usize] = r as u32;
    }
    for (pos, &r) in rank_of.iter().enumerate() {
        let name = names.names.name(pos);
        let mut add = |len: usize| counts.entry(&name[..len]).or_insert((0, r)).0 += 1;
        let mut last = 0;
        for &l in SEED_LENGTHS.iter().take_while(|&&l| l <= name.len()) {
            let b = char_floor(name, l);
            if b > last {
                add(b);
                last = b;
            }
        }
        if name.len() < SEED_LENGTHS[0] && !name.is_empty() {
            add(name.len());
        }
    }
    let mut cands: Vec<(&[u8], usize, u32)> =
        counts.into_iter().map(|(t, (c, r))| (t, c, r)).collect();
    cands.sort_unstable_by(|a, b| {
        (b.1 * b.0.len())
            .cmp(&(a.1 * a.0.len()))
            .then_with(|| a.0.cmp(b.0))
    });
    let mut prefixes_of_chosen: HashSet<&[u8]> = HashSet::new();
    let mut chosen = Vec::new();
    for (tok, count, rank) in cands {
        if chosen.len() == MAX_TOKENS {
            break;
        }
        if !saves(count, tok.len(), 3) || prefixes_of_chosen.contains(tok) {
            continue;
        }
        for l in 1..=tok.len() {
            prefixes_of_chosen.insert(&tok[..l]);
        }
        chosen.push(Candidate {
            rank,
            len: tok.len() as u32,
        });
    }
    chosen
}

/// Internal nodes of the names' compacted prefix trie as `(depth, lo, hi)`:
/// the names at ranks `lo..hi` share their first `depth` bytes and no longer
/// common prefix covers exactly them. Depths are moved down to a UTF-8
/// character boundary; nodes that then coincide with their parent go.
fn trie_nodes<N: NameList + ?Sized>(names: &Names<'_, N>) -> Vec<(u32, u32, u32)> {
    let lcp = &names.order.lcp;
    let n = lcp.len();
    // Only non-ASCII names can put a depth inside a character.
    let ascii = names.names.all_ascii();
    let mut out = Vec::new();
    let mut stack: Vec<(u32, usize)> = vec![(0, 0)]; // (lcp, lo)
    // A final 0 closes every node still open.
    for (k, &l) in (1..=n).zip(lcp.iter().skip(1).chain([&0])) {
        let mut lo = k - 1;
        while l < stack.last().map_or(0, |t| t.0) {
            let (depth, tlo) = stack.pop().expect("non-empty");
            let parent = l.max(stack.last().map_or(0, |t| t.0));
            let d = if ascii {
                depth
            } else {
                char_floor(names.at_rank(tlo), depth as usize) as u32
            };
            if d > parent {
                out.push((d, tlo as u32, k as u32));
            }
            lo = tlo;
        }
        if l > stack.last().map_or(0, |t| t.0) {
            stack.push((l, lo));
        }
    }
    out
}

fn greedy_candidates<N: NameList + ?Sized>(names: &Names<'_, N>) -> Vec<Candidate> {
    let nodes = trie_nodes(names);
    // best[r]: length of the longest chosen token that prefixes the name at rank r.
    let mut best = vec![0u32; names.order.lcp.len()];
    let gain = |best: &[u32], (d, lo, hi): (u32, u32, u32), ref_len: usize| -> i64 {
        let floor = ref_len as u32;
        let mut g = 0i64;
        for &b in &best[lo as usize..hi as usize] {
            g += i64::from(d.saturating_sub(b.max(floor)));
        }
        g - (d as usize + TOKEN_INDEX_ENTRY) as i64
    };
    // (gain, node): ties go to the earlier node, a deterministic order.
    let mut heap: BinaryHeap<(i64, Reverse<u32>)> = nodes
        .iter()
        .enumerate()
        .map(|(i, &nd)| (gain(&best, nd, 3), Reverse(i as u32)))
        .filter(|e| e.0 > 0)
        .collect();
    let mut chosen = Vec::new();
    while chosen.len() < MAX_TOKENS {
        let Some((_, Reverse(i))) = heap.pop() else {
            break;
        };
        let ref_len = token_ref_len(chosen.len() as u16);
        let g = gain(&best, nodes[i as usize], ref_len);
        if g <= 0 {
            continue; // gains only shrink as tokens are added
        }
        if heap.peek().is_some_and(|top| top.0 > g) {
            heap.push((g, Reverse(i)));
            continue;
        }
        let (d, lo, hi) = nodes[i as usize];
        for b in &mut best[lo as usize..hi as usize] {
            *b = (*b).max(d);
        }
        chosen.push(Candidate { rank: lo, len: d });
    }
    chosen
}

/// For each rank of name order, the index in `tokens` of the longest token
/// prefixing that name, or [`NO_TOKEN`]. The names a token prefixes are one
/// range of name order, so painting ranges from the shortest token to the
/// longest leaves each name with its longest match.
fn paint<N: NameList + ?Sized>(tokens: &[Candidate], names: &Names<'_, N>) -> Vec<u16> {
    let mut order: Vec<usize> = (0..tokens.len()).collect();
    order.sort_by_key(|&t| tokens[t].len);
    let mut by_rank = vec![NO_TOKEN; names.order.lcp.len()];
    for t in order {
        let (lo, hi) = names.range(tokens[t]);
        by_rank[lo..hi].fill(t as u16);
    }
    by_rank
}

/// Counts longest-match uses, drops tokens that save nothing, numbers the rest
/// by uses (descending, ties by bytes) and repeats until stable.
fn finalize<N: NameList + ?Sized>(mut tokens: Vec<Candidate>, names: &Names<'_, N>) -> TokenTable {
    loop {
        let by_rank = paint(&tokens, names);
        let mut uses = vec![0usize; tokens.len()];
        for &t in &by_rank {
            if t != NO_TOKEN {
                uses[t as usize] += 1;
            }
        }
        let mut order: Vec<usize> = (0..tokens.len()).collect();
        order.sort_unstable_by(|&a, &b| {
            uses[b]
                .cmp(&uses[a])
                .then_with(|| names.bytes(tokens[a]).cmp(names.bytes(tokens[b])))
        });
        // (token, uses, bytes saved) in id order.
        let mut kept: Vec<(Candidate, usize, i64)> = Vec::with_capacity(tokens.len());
        let mut id_of = vec![NO_TOKEN; tokens.len()];
        for &t in &order {
            let id = kept.len() as u16;
            let (len, ref_len) = (tokens[t].len as usize, token_ref_len(id));
            if saves(uses[t], len, ref_len) {
                id_of[t] = id;
                let saved = (uses[t] * (len - ref_len)) as i64 - (len + TOKEN_INDEX_ENTRY) as i64;
                kept.push((tokens[t], uses[t], saved));
            }
        }
        if kept.len() < tokens.len() {
            tokens = kept.into_iter().map(|k| k.0).collect();
            continue;
        }
        let mut matches = vec![NO_TOKEN; by_rank.len()];
        for (&pos, &t) in names.order.by_name.iter().zip(&by_rank) {
            if t != NO_TOKEN {
                matches[pos as usize] = id_of[t as usize];
            }
        }
        let tokens = kept
            .into_iter()
            .map(|(c, uses, saved)| TokenStat {
                bytes: names.bytes(c).to_vec(),
                uses,
                saved,
            })
            .collect();
        return TokenTable { tokens, matches };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::blob::nameorder::name_order;

    /// The candidate for `tok`, which must prefix one of `names`.
    fn candidate(names: &Names<'_, Vec<&[u8]>>, tok: &[u8]) -> Candidate {
        let rank = (0..names.order.by_name.len())
            .find(|&r| names.at_rank(r).starts_with(tok))
            .expect("some name has the token") as u32;
        Candidate {
            rank,
            len: tok.len() as u32,
        }
    }

    #[test]
    fn matches_are_the_longest_token_prefix() {
        let names: Vec<&[u8]> = vec![b"__x64_sys_read", b"__x64_foo", b"do_", b"d", b"__x64_sys_"];
        let order = name_order(&names);
        let ns = Names {
            names: &names,
            order: &order,
        };
        let tokens: Vec<Candidate> = [&b"__x64_sys_"[..], b"__x64_", b"do_"]
            .iter()
            .map(|t| candidate(&ns, t))
            .collect();
        let by_rank = paint(&tokens, &ns);
        let mut per_name = vec![NO_TOKEN; names.len()];
        for (&p, &t) in order.by_name.iter().zip(&by_rank) {
            per_name[p as usize] = t;
        }
        assert_eq!(per_name, vec![0, 1, 2, NO_TOKEN, 0]);
    }

    #[test]
    fn trie_nodes_cover_shared_prefixes() {
        let names: Vec<&[u8]> = vec![b"abcdX", b"abcdY", b"abQ", b"zz", b"zz"];
        let order = name_order(&names);
        let mut nodes = trie_nodes(&Names {
            names: &names,
            order: &order,
        });
        nodes.sort();
        // Ranks: abQ, abcdX, abcdY, zz, zz. "ab" (3 names), "zz" (duplicates), "abcd" (2).
        assert_eq!(nodes, vec![(2, 0, 3), (2, 3, 5), (4, 1, 3)]);
    }

    #[test]
    fn tokens_never_split_utf8_characters() {
        let names: Vec<&[u8]> = vec![
            "prefix_é_a".as_bytes(),
            "prefix_é_b".as_bytes(),
            "prefix_\u{e8}x".as_bytes(),
        ];
        let order = name_order(&names);
        let ns = Names {
            names: &names,
            order: &order,
        };
        let nodes = trie_nodes(&ns);
        assert!(!nodes.is_empty());
        for (d, lo, _) in nodes {
            assert!(std::str::from_utf8(&ns.at_rank(lo as usize)[..d as usize]).is_ok());
        }
    }

    #[test]
    fn both_strategies_save_bytes_and_keep_savers_only() {
        let owned: Vec<String> = (0..2000)
            .map(|i| format!("__x64_sys_call_number_{i}"))
            .collect();
        let names: Vec<&[u8]> = owned.iter().map(|s| s.as_bytes()).collect();
        let by = name_order(&names);
        for s in [TokenStrategy::Seed, TokenStrategy::Optimal] {
            let t = select(&names, &by, s);
            assert!(!t.tokens.is_empty(), "{s:?}");
            assert!(t.tokens.iter().all(|k| k.saved > 0 && k.uses > 0));
            assert!(t.tokens.windows(2).all(|w| w[0].uses >= w[1].uses));
            // Every name's match is its longest token prefix.
            for (name, &m) in names.iter().zip(&t.matches) {
                let longest = t
                    .tokens
                    .iter()
                    .enumerate()
                    .filter(|(_, k)| name.starts_with(&k.bytes))
                    .max_by_key(|(_, k)| k.bytes.len());
                assert_eq!(longest.map(|(i, _)| i as u16).unwrap_or(NO_TOKEN), m);
            }
            assert!(t.saved() > 0);
        }
        let seed = select(&names, &by, TokenStrategy::Seed).saved();
        let opt = select(&names, &by, TokenStrategy::Optimal).saved();
        assert!(opt >= seed, "optimal {opt} < seed {seed}");
    }

    #[test]
    fn nothing_to_gain_gives_no_tokens() {
        let names: Vec<&[u8]> = vec![b"a", b"b", b"abc", b"xyz"];
        let by = name_order(&names);
        for s in [TokenStrategy::Seed, TokenStrategy::Optimal] {
            assert!(select(&names, &by, s).tokens.is_empty());
        }
    }
}
