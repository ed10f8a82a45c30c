//! v2 names as the blob stores them (docs/FORMAT.md §11): the pair-code
//! token table ([`Tokens`]), the front-coded entries of a bucket, and
//! [`CodedName`], a name decoded as it is read and compared with a key
//! without being expanded. The reader (`v2::read`) hands out coded names;
//! the shared `blob::Name` wraps them. Builds
//! without std.

use crate::blob::problem::Problem;
use core::cmp::Ordering;

use super::layout::*;

/// The token table (FORMAT.md §11.3): code `c` (below `count`) expands to
/// `bytes[off[c]..off[c + 1]]`; a coded byte below [`one_byte_codes`] is a
/// code by itself, any other a prefix that a nonzero second byte completes.
#[derive(Clone, Copy, Debug)]
pub struct Tokens<'a> {
    // The whole table: the count, the offsets, the expansions. Read with
    // `u16_at` and `get`, which give 0 and nothing past its end, so an
    // unchecked table costs no test of its own.
    tok: &'a [u8],
    count: u32,
    one: u32,
}

impl<'a> Tokens<'a> {
    /// Checks a token table's shape ([`check`](Self::check)) and returns a
    /// view of it.
    ///
    /// Errors: the byte offset inside `tok` and what is wrong.
    pub fn parse(tok: &'a [u8]) -> Result<Self, (usize, Problem)> {
        Self::check(tok)?;
        Self::new(tok).ok_or((0, Problem::OffsetsBounds))
    }

    /// A view of a token table whose offsets are not checked: `None` when
    /// its count is 0. A code whose offsets do not ascend inside the
    /// expansions, or lie past the table, expands to nothing.
    #[inline]
    pub fn new(tok: &'a [u8]) -> Option<Self> {
        let count = u32::from(u16_at(tok, 0));
        (count > 0).then(|| Tokens {
            tok,
            count,
            one: one_byte_codes(count as usize) as u32,
        })
    }

    /// The token table's shape (FORMAT.md §11.3): a count of 1 to
    /// [`MAX_CODES`], then `count + 1` ascending u16 offsets from 0 to the
    /// end of the expansions.
    ///
    /// Errors: the byte offset inside `tok` and what is wrong.
    pub fn check(tok: &[u8]) -> Result<(), (usize, Problem)> {
        let n = usize::from(u16_at(tok, 0));
        let base = TOKENS_COUNT + 2 * (n + 1);
        if n == 0
            || n > MAX_CODES
            || tok.len() < base
            || u16_at(tok, TOKENS_COUNT) != 0
            || usize::from(u16_at(tok, TOKENS_COUNT + 2 * n)) != tok.len() - base
        {
            return Err((0, Problem::OffsetsBounds));
        }
        for c in 0..n {
            let at = TOKENS_COUNT + 2 * c;
            if u16_at(tok, at) > u16_at(tok, at + 2) {
                return Err((at, Problem::OffsetsNotAscending));
            }
        }
        Ok(())
    }

    /// Number of codes, code 0 included.
    pub fn count(&self) -> usize {
        self.count as usize
    }

    /// The expansion of code `c`; empty past the table or for a damaged one.
    #[cfg_attr(feature = "std", inline)]
    pub fn expand(&self, c: usize) -> &'a [u8] {
        let at = TOKENS_COUNT + 2 * c;
        let base = TOKENS_COUNT + 2 * (self.count as usize + 1);
        let s = base + usize::from(u16_at(self.tok, at));
        let e = base + usize::from(u16_at(self.tok, at + 2));
        self.tok.get(s..e).unwrap_or(&[])
    }

    /// The expansions of the codes of `coded`, in order, up to its first
    /// [`NAME_END`] or its end; a prefix byte without a nonzero byte after
    /// it (only in a damaged blob) ends them.
    #[cfg_attr(feature = "std", inline)]
    pub fn runs(&self, coded: &'a [u8]) -> Runs<'a> {
        Runs {
            tokens: *self,
            coded,
        }
    }

    /// True when `coded` is whole codes of this table: every prefix byte
    /// followed by a nonzero byte, every code below the count. `coded`
    /// holds no [`NAME_END`] (FORMAT.md §11.3).
    pub fn codes_are_whole(&self, coded: &[u8]) -> bool {
        let mut i = 0;
        while let Some(&b) = coded.get(i) {
            let c = match u32::from(b) {
                0 => return false,
                b if b < self.one => b,
                b => match coded.get(i + 1) {
                    Some(&s) if s != NAME_END => {
                        i += 1;
                        two_byte_code(self.one, b, u32::from(s))
                    }
                    _ => return false,
                },
            };
            if c >= self.count {
                return false;
            }
            i += 1;
        }
        true
    }
}

/// The expansions of a run of codes ([`Tokens::runs`]).
#[derive(Clone, Debug)]
pub struct Runs<'a> {
    tokens: Tokens<'a>,
    coded: &'a [u8],
}

impl<'a> Iterator for Runs<'a> {
    type Item = &'a [u8];

    #[cfg_attr(feature = "std", inline)]
    fn next(&mut self) -> Option<&'a [u8]> {
        let (&b, rest) = self.coded.split_first()?;
        if b == NAME_END {
            return None;
        }
        let one = self.tokens.one;
        let mut c = u32::from(b);
        self.coded = rest;
        if c >= one {
            let (&s, rest) = rest.split_first()?;
            if s == NAME_END {
                return None;
            }
            self.coded = rest;
            c = two_byte_code(one, c, u32::from(s));
        }
        Some(self.tokens.expand(c as usize))
    }
}

/// Where the entries of one bucket lie, parsed up to entry `k` (FORMAT.md §11.2).
#[cfg_attr(not(any(feature = "fast-lookup", feature = "std")), allow(dead_code))]
pub(crate) struct Entries {
    pub(crate) lcp: [u16; BUCKET],
    pub(crate) code: [(u32, u32); BUCKET],
    pub(crate) n: usize,
}

/// Parses entries `0..=k` of a bucket; stops early on a damaged bucket.
#[cfg_attr(not(any(feature = "fast-lookup", feature = "std")), allow(dead_code))]
#[cfg_attr(feature = "std", inline)]
pub(crate) fn parse_entries(bucket: &[u8], k: usize) -> Entries {
    let mut e = Entries {
        lcp: [0; BUCKET],
        code: [(0, 0); BUCKET],
        n: 0,
    };
    let mut at = 0usize;
    for i in 0..=k.min(BUCKET - 1) {
        let mut lcp = 0u32;
        if i > 0 {
            let Some((v, used)) = read_varint(bucket, at) else {
                break;
            };
            lcp = v;
            at += used;
        }
        let rest = bucket.get(at..).unwrap_or(&[]);
        let len = match rest.iter().position(|&b| b == NAME_END) {
            Some(p) => p,
            None => break,
        };
        if let (Some(l), Some(c)) = (e.lcp.get_mut(i), e.code.get_mut(i)) {
            *l = lcp.min(u32::from(u16::MAX)) as u16;
            *c = (at as u32, (at + len) as u32);
            e.n = i + 1;
        }
        at += len + 1;
    }
    e
}

/// Decodes every name of a bucket in rank order (FORMAT.md §11.2) into
/// `scratch` (cleared first), passing each to `f` with its entry number in
/// the bucket: each name costs its own bytes, where decoding them one by
/// one reparses the bucket up to each. Stops at a damaged entry; an `lcp`
/// longer than the name before it (only in a damaged bucket) keeps all of
/// that name.
#[cfg(feature = "std")]
pub(crate) fn decode_bucket(
    bucket: &[u8],
    tokens: &Tokens<'_>,
    out: &mut std::vec::Vec<u8>,
    mut f: impl FnMut(usize, &[u8]),
) {
    out.clear();
    let e = parse_entries(bucket, BUCKET - 1);
    let mut prev = 0..0;
    for k in 0..e.n {
        let start = out.len();
        let keep = (e.lcp[k] as usize).min(prev.len());
        out.extend_from_within(prev.start..prev.start + keep);
        let (from, to) = (e.code[k].0 as usize, e.code[k].1 as usize);
        for run in tokens.runs(bucket.get(from..to).unwrap_or(&[])) {
            out.extend_from_slice(run);
        }
        prev = start..out.len();
        f(k, &out[prev.clone()]);
    }
}

/// A name stored front-coded and pair-coded in a v2 blob, decoded as it is
/// read; `pfx` puts `__pfx_` before it (a folded symbol, FORMAT.md §10.1).
#[derive(Clone, Copy)]
pub struct CodedName<'a> {
    pub(crate) names: &'a [u8],
    pub(crate) name_index: &'a [u8],
    pub(crate) rank: u32,
    pub(crate) pfx: bool,
    pub(crate) tokens: Tokens<'a>,
}

impl core::fmt::Debug for CodedName<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("CodedName")
            .field("rank", &self.rank)
            .field("pfx", &self.pfx)
            .finish_non_exhaustive()
    }
}

/// Bucket `b` of the names section (FORMAT.md §11.2); empty when damaged.
#[cfg_attr(feature = "std", inline)]
pub(crate) fn bucket_of<'a>(names: &'a [u8], name_index: &[u8], b: usize) -> &'a [u8] {
    let s = u32_at(name_index, 4 * b) as usize;
    let e = if 4 * (b + 1) < name_index.len() {
        u32_at(name_index, 4 * (b + 1)) as usize
    } else {
        names.len()
    };
    names.get(s..e).unwrap_or(&[])
}

/// A slice of coded bytes and how many expanded bytes of it belong to a name.
#[cfg_attr(not(any(feature = "fast-lookup", feature = "std")), allow(dead_code))]
#[derive(Clone, Copy, Default)]
struct Piece {
    from: u32,
    to: u32,
    take: u16,
}

/// The pieces of a coded name, in order: what each contributing entry adds.
#[cfg_attr(not(any(feature = "fast-lookup", feature = "std")), allow(dead_code))]
#[derive(Clone, Copy)]
struct Pieces {
    piece: [Piece; BUCKET],
    n: u8,
}

impl<'a> CodedName<'a> {
    pub(crate) fn bucket(&self) -> &'a [u8] {
        bucket_of(self.names, self.name_index, self.rank as usize / BUCKET)
    }

    #[cfg(feature = "fast-lookup")]
    fn pieces(&self, bucket: &[u8]) -> Pieces {
        let k = self.rank as usize % BUCKET;
        let e = parse_entries(bucket, k);
        let mut p = Pieces {
            piece: [Piece::default(); BUCKET],
            n: 0,
        };
        if e.n != k + 1 {
            return p; // damaged: an empty name
        }
        // Entry i contributes the bytes between its own LCP and the least LCP
        // of the entries after it up to k (entry k contributes all of its own).
        let mut limit = u16::MAX;
        let mut rev = [Piece::default(); BUCKET];
        let mut n = 0;
        // Bounded by the arrays, so a kernel's reader links no panic path.
        let last = e.n.min(BUCKET);
        for i in (0..last).rev() {
            if (e.lcp[i] < limit || i == last - 1)
                && let Some(slot) = rev.get_mut(n)
            {
                *slot = Piece {
                    from: e.code[i].0,
                    to: e.code[i].1,
                    take: limit.saturating_sub(e.lcp[i]),
                };
                n += 1;
            }
            limit = limit.min(e.lcp[i]);
            if limit == 0 {
                break;
            }
        }
        for (slot, piece) in p.piece.iter_mut().zip(rev.iter().take(n).rev()) {
            *slot = *piece;
        }
        p.n = n as u8;
        p
    }

    /// The stored name's rank in name order, and whether `__pfx_` goes
    /// before it: a key under which a caller may cache the decoded bytes.
    pub fn key(&self) -> (usize, bool) {
        (self.rank as usize, self.pfx)
    }

    /// Calls `f` with the stored name's bytes (without the `__pfx_` of a
    /// folded symbol), in runs, in order.
    ///
    /// With feature `fast-lookup`, one parse of the bucket up to the name;
    /// without it, one per entry that contributes bytes (less code, no
    /// tables on the stack).
    #[cfg(not(feature = "fast-lookup"))]
    pub fn for_each_stored_run(&self, mut f: impl FnMut(&'a [u8])) {
        let k = self.rank as usize % BUCKET;
        emit_prefix(self.bucket(), &self.tokens, k, usize::MAX, &mut f);
    }

    /// Calls `f` with the stored name's bytes (without the `__pfx_` of a
    /// folded symbol), in runs, in order.
    #[cfg(feature = "fast-lookup")]
    #[cfg_attr(feature = "std", inline)]
    pub fn for_each_stored_run(&self, mut f: impl FnMut(&'a [u8])) {
        let bucket = self.bucket();
        let p = self.pieces(bucket);
        for piece in p.piece.iter().take(p.n as usize) {
            let mut left = piece.take as usize;
            let codes = bucket
                .get(piece.from as usize..piece.to as usize)
                .unwrap_or(&[]);
            for x in self.tokens.runs(codes) {
                if left == 0 {
                    break;
                }
                let x = &x[..x.len().min(left)];
                left -= x.len();
                f(x);
            }
        }
    }

    /// Calls `f` with the name's bytes, in runs, in order.
    #[cfg_attr(feature = "std", inline)]
    pub fn for_each_run(&self, mut f: impl FnMut(&'a [u8])) {
        if self.pfx {
            f(PFX);
        }
        self.for_each_stored_run(f);
    }

    /// Byte-order comparison with `key`, and the bytes they share at the start.
    pub fn cmp_key(&self, key: &[u8]) -> (Ordering, usize) {
        let mut at = 0usize;
        let mut ord = Ordering::Equal;
        self.for_each_run(|run| {
            if ord != Ordering::Equal {
                return;
            }
            let k = key.get(at..).unwrap_or(&[]);
            let n = run.len().min(k.len());
            match run[..n].iter().zip(&k[..n]).position(|(a, b)| a != b) {
                Some(p) => {
                    at += p;
                    ord = run[p].cmp(&k[p]);
                }
                None if run.len() > k.len() => {
                    at += n;
                    ord = Ordering::Greater;
                }
                None => at += n,
            }
        });
        if ord == Ordering::Equal && at < key.len() {
            ord = Ordering::Less;
        }
        (ord, at)
    }
}

/// Passes the first `limit` bytes of entry `k`'s name in `bucket` to `f`
/// (FORMAT.md §11.2): the bytes it shares with entry `k - 1` (its LCP),
/// taken from that entry's name the same way, then its own codes expanded.
/// Recurses at most `k` < 16 deep, parsing the bucket from its start at each
/// level. A damaged entry `k` gives nothing; an LCP longer than the name
/// before it gives all of that name.
#[cfg(any(test, not(feature = "fast-lookup")))]
pub(crate) fn emit_prefix<'a>(
    bucket: &'a [u8],
    tokens: &Tokens<'a>,
    k: usize,
    limit: usize,
    f: &mut dyn FnMut(&'a [u8]),
) {
    let Some((lcp, codes)) = entry(bucket, k) else {
        return;
    };
    let lcp = lcp.min(limit);
    if k > 0 && lcp > 0 {
        emit_prefix(bucket, tokens, k - 1, lcp, f);
    }
    let mut left = limit - lcp;
    for x in tokens.runs(codes) {
        if left == 0 {
            break;
        }
        let x = x.get(..x.len().min(left)).unwrap_or_default();
        left -= x.len();
        f(x);
    }
}

/// Entry `k` of a bucket (FORMAT.md §11.2): its LCP (0 for the first) and
/// its codes before [`NAME_END`]; `None` when the bucket ends first or an
/// LCP is malformed.
#[cfg(any(test, not(feature = "fast-lookup")))]
fn entry(bucket: &[u8], k: usize) -> Option<(usize, &[u8])> {
    let mut at = 0usize;
    for i in 0..=k {
        let mut lcp = 0;
        if i > 0 {
            let (v, used) = read_varint(bucket, at)?;
            lcp = v as usize;
            at += used;
        }
        let rest = bucket.get(at..)?;
        let len = rest.iter().position(|&b| b == NAME_END)?;
        if i == k {
            return rest.get(..len).map(|codes| (lcp, codes));
        }
        at += len + 1;
    }
    None
}

/// Compares the expansion of the codes of `bytes` before its first
/// [`NAME_END`] (all of it when there is none) with `key`; returns the order
/// and the bytes they share. One pass, so that a bucket head that differs
/// from the key early is not scanned to its end.
pub(crate) fn cmp_until_end(tokens: &Tokens<'_>, bytes: &[u8], key: &[u8]) -> (Ordering, usize) {
    // The key's bytes not yet matched; what precedes them is shared.
    let mut k = key;
    for run in tokens.runs(bytes) {
        let n = run.len().min(k.len());
        if let Some(p) = run[..n].iter().zip(&k[..n]).position(|(a, b)| a != b) {
            return (run[p].cmp(&k[p]), key.len() - k.len() + p);
        }
        if run.len() > k.len() {
            return (Ordering::Greater, key.len());
        }
        k = &k[n..];
    }
    let ord = if k.is_empty() {
        Ordering::Equal
    } else {
        Ordering::Less
    };
    (ord, key.len() - k.len())
}

#[cfg(all(test, feature = "std"))]
mod tests {
    use super::*;

    /// Every code expands to its own byte.
    fn identity_table() -> std::vec::Vec<u8> {
        let mut t = 256u16.to_le_bytes().to_vec();
        t.extend((0..=256u16).flat_map(u16::to_le_bytes));
        t.extend(0..=255u8);
        t
    }

    #[test]
    fn a_bucket_decodes_in_one_pass_and_a_damaged_one_does_not_panic() {
        let table = identity_table();
        let tokens = Tokens::parse(&table).unwrap();
        // "do_fork", "do_exit" (lcp 3), "schedule" (lcp 0).
        let bucket = b"do_fork\0\x03exit\0\x00schedule\0";
        let mut got = std::vec::Vec::new();
        let mut scratch = std::vec::Vec::new();
        decode_bucket(bucket, &tokens, &mut scratch, |k, n| {
            got.push((k, n.to_vec()))
        });
        let want: std::vec::Vec<(usize, std::vec::Vec<u8>)> =
            [&b"do_fork"[..], b"do_exit", b"schedule"]
                .iter()
                .enumerate()
                .map(|(k, n)| (k, n.to_vec()))
                .collect();
        assert_eq!(got, want);
        // An lcp longer than the name before it keeps that name whole; a
        // truncated entry ends the bucket.
        got.clear();
        decode_bucket(b"ab\0\x7fc\0\x01", &tokens, &mut scratch, |k, n| {
            got.push((k, n.to_vec()))
        });
        assert_eq!(got, [(0, b"ab".to_vec()), (1, b"abc".to_vec())]);
        for junk in [
            &b""[..],
            b"\xff\xff\xff\xff",
            b"\0\0\0",
            b"\x80\x80\x80\x80\x01x\0",
        ] {
            decode_bucket(junk, &tokens, &mut scratch, |_, _| {});
        }
    }
}
