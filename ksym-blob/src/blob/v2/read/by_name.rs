//! Name → symbol lookups of the v2 reader (FORMAT.md §12.2): a binary
//! search over the name buckets' heads, then the bucket by LCPs, and the
//! walk from a name-order rank back to its stored row (§10.4).

use core::cmp::Ordering;

use super::KallsymsV2;
use crate::blob::symbol::Symbol;
use crate::blob::v2::layout::*;
use crate::blob::v2::names::cmp_until_end;

/// Head searches narrower than this many buckets load their next two
/// levels' heads ahead (`seek`); wider ones, the first levels, do not.
const WARM_SPAN: usize = 512;

impl<'a> KallsymsV2<'a> {
    /// The first rank whose name is `>= key`, whether it equals `key`, and
    /// (when it does and the next rank is in the same bucket) where the next
    /// entry starts in that bucket (FORMAT.md §12.2: heads by binary search,
    /// then the bucket by LCPs).
    fn seek(&self, key: &[u8]) -> (usize, bool, Option<usize>) {
        let m = self.stored;
        let nb = m.div_ceil(BUCKET);
        let head_cmp = |b: usize| self.cmp_head(b, key);
        let (mut lo, mut hi) = (0usize, nb);
        // Loads of the next step's two possible heads, issued before this
        // step's comparison so that their cache misses overlap it.
        let mut warm = 0u8;
        // Bytes the key shares with head `lo - 1`, the last head below it.
        let mut lo_matched = 0;
        while lo < hi {
            let mid = (lo + hi) / 2;
            let (l, r) = ((lo + mid) / 2, (mid + 1 + hi) / 2);
            // The first levels' heads are the same for every key, so they
            // stay cached: only the deeper levels are worth the loads.
            if hi - lo <= WARM_SPAN {
                warm ^= self.head_byte(l) ^ self.head_byte(r);
                warm ^= self.head_byte((lo + l) / 2) ^ self.head_byte((l + 1 + mid) / 2);
                warm ^= self.head_byte((mid + 1 + r) / 2) ^ self.head_byte((r + 1 + hi) / 2);
            }
            let (o, c) = head_cmp(mid);
            if o == Ordering::Less {
                lo = mid + 1;
                lo_matched = c;
            } else {
                hi = mid;
            }
        }
        core::hint::black_box(warm);
        // The entry after a bucket's head, when the bucket has one.
        let after_head = |b: usize| {
            let count = m.saturating_sub(b * BUCKET).min(BUCKET);
            (count > 1).then(|| self.after_head(b)).flatten()
        };
        if lo == 0 {
            let eq = nb > 0 && head_cmp(0).0 == Ordering::Equal;
            return (0, eq, if eq { after_head(0) } else { None });
        }
        let b = lo - 1;
        let bucket = self.bucket(b);
        let count = (m - b * BUCKET).min(BUCKET);
        let mut matched = lo_matched;
        // Walk entries 1.. by their LCP with the previous name, which is < key.
        let mut at = match bucket.iter().position(|&c| c == NAME_END) {
            Some(p) => p + 1,
            None => return (lo * BUCKET, false, None),
        };
        for k in 1..count {
            let Some((lcp, used)) = read_varint(bucket, at) else {
                break;
            };
            at += used;
            let rest = bucket.get(at..).unwrap_or(&[]);
            let Some(len) = rest.iter().position(|&c| c == NAME_END) else {
                break;
            };
            let codes = &rest[..len];
            at += len + 1;
            let lcp = lcp as usize;
            match lcp.cmp(&matched) {
                Ordering::Greater => continue,
                Ordering::Less => return (b * BUCKET + k, false, None),
                Ordering::Equal => {
                    let (o, c) = cmp_until_end(&self.tokens, codes, key.get(lcp..).unwrap_or(&[]));
                    match o {
                        Ordering::Less => matched = lcp + c,
                        o => {
                            let eq = o == Ordering::Equal;
                            let next = (eq && k + 1 < count).then_some(at);
                            return (b * BUCKET + k, eq, next);
                        }
                    }
                }
            }
        }
        let r = lo * BUCKET;
        let eq = r < m && head_cmp(lo).0 == Ordering::Equal;
        (r, eq, if eq { after_head(lo) } else { None })
    }

    /// The first byte of bucket `b` (0 past the end): a load whose only
    /// use is to bring the bucket's head into the cache.
    #[cfg_attr(feature = "std", inline)]
    fn head_byte(&self, b: usize) -> u8 {
        let at = u32_at(self.sec(SectionId::NameIndex), 4 * b) as usize;
        self.sec(SectionId::Names).get(at).copied().unwrap_or(0)
    }

    /// Where entry 1 of bucket `b` starts: after the head's codes and their
    /// end byte (FORMAT.md §11.2); `None` for a damaged bucket.
    fn after_head(&self, b: usize) -> Option<usize> {
        self.bucket(b)
            .iter()
            .position(|&c| c == NAME_END)
            .map(|p| p + 1)
    }

    /// Ranks whose stored name equals `key`. The rank after an equal one
    /// is equal exactly when its entry keeps all of the key (LCP = the
    /// key's length) and adds no codes; a bucket's head is compared whole.
    fn equal_ranks(&self, key: &[u8]) -> core::ops::Range<usize> {
        let (r0, eq, mut next) = self.seek(key);
        if !eq {
            return r0..r0;
        }
        let mut r = r0 + 1;
        while r < self.stored {
            let equal = if r % BUCKET == 0 {
                self.cmp_head(r / BUCKET, key).0 == Ordering::Equal
            } else {
                let bucket = self.bucket(r / BUCKET);
                let at = match next {
                    Some(at) => at,
                    // Not known (a damaged bucket): decode the name whole.
                    None => {
                        if self.coded_at_rank(r, false).cmp_key(key).0 != Ordering::Equal {
                            break;
                        }
                        r += 1;
                        continue;
                    }
                };
                let Some((lcp, used)) = read_varint(bucket, at) else {
                    break;
                };
                next = Some(at + used + 1);
                lcp as usize == key.len() && bucket.get(at + used) == Some(&NAME_END)
            };
            if !equal {
                break;
            }
            if r % BUCKET == 0 {
                next = self.after_head(r / BUCKET);
            }
            r += 1;
        }
        r0..r
    }

    /// A bucket's head compared with `key` (`CodedName::cmp_key` of rank
    /// `b * BUCKET`): the head is entry 0, stored whole, so its codes compare
    /// without parsing the bucket's entries (FORMAT.md §11.2).
    #[cfg_attr(feature = "std", inline)]
    fn cmp_head(&self, b: usize, key: &[u8]) -> (Ordering, usize) {
        cmp_until_end(&self.tokens, self.bucket(b), key)
    }

    /// The stored row at name-order rank `r`: the inverse of `addr_to_name`,
    /// walked along its cycle with one shortcut jump (FORMAT.md §10.4).
    /// A damaged blob gives `None` instead of looping.
    pub(super) fn row_at_rank(&self, r: usize) -> Option<usize> {
        let (marks, mark_ranks, back) = self.name_to_addr();
        let mut x = r;
        let mut jumped = false;
        for _ in 0..2 * SHORTCUT_STEP + 2 {
            let y = self.a2n(x);
            if y == r {
                return (x < self.stored).then_some(x);
            }
            if !jumped && get_bit(marks, x) {
                jumped = true;
                let k = rank1(marks, mark_ranks, x);
                x = get_bits(
                    back,
                    (k as u64).wrapping_mul(u64::from(self.idx_bits)),
                    self.idx_bits,
                ) as usize;
            } else {
                x = y;
            }
        }
        None
    }

    /// Every symbol named `name`, in address order (FORMAT.md §12.2):
    /// stored rows of that name, and for `__pfx_X` the folded companions of
    /// rows named `X`.
    pub fn lookup_name_all(&self, name: &[u8]) -> impl Iterator<Item = Symbol<'a>> + '_ {
        let direct = self.equal_ranks(name);
        let folded = match name.strip_prefix(PFX) {
            Some(x) => self.equal_ranks(x),
            None => 0..0,
        };
        NameHits {
            v: self,
            direct,
            folded,
        }
    }

    /// The first stored symbol named `name` at or above address `lo`:
    /// rows of one name ascend with their name-order rank (FORMAT.md
    /// §11.1), so this is a binary search over the name's ranks, for names
    /// that thousands of symbols share (a module space's `init_module`).
    /// Folded `__pfx_` companions are not searched.
    pub fn lookup_name_from(&self, name: &[u8], lo: u64) -> Option<Symbol<'a>> {
        let ranks = self.equal_ranks(name);
        let below = |i: usize| {
            self.row_at_rank(ranks.start + i)
                .is_some_and(|j| self.stored_address(j) < lo)
        };
        let k = partition_point(ranks.len(), below);
        let j = self
            .row_at_rank(ranks.start + k)
            .filter(|_| k < ranks.len())?;
        Some(self.make_symbol(j, false))
    }

    /// The first symbol in address order named `name`.
    pub fn lookup_name(&self, name: &[u8]) -> Option<Symbol<'a>> {
        self.lookup_name_all(name).next()
    }
}

/// Iterator of [`KallsymsV2::lookup_name_all`]: merges stored rows named
/// `key` with folded companions of rows named `key` less `__pfx_`, by row.
struct NameHits<'v, 'a> {
    // A reference: the view is about 1 KiB, too much to copy per lookup.
    v: &'v KallsymsV2<'a>,
    direct: core::ops::Range<usize>,
    folded: core::ops::Range<usize>,
}

impl<'a> Iterator for NameHits<'_, 'a> {
    type Item = Symbol<'a>;
    fn next(&mut self) -> Option<Symbol<'a>> {
        // Folded candidates count only where the row is folded; a damaged
        // blob's unreachable ranks are skipped.
        let mut f = None;
        while !self.folded.is_empty() {
            f = self
                .v
                .row_at_rank(self.folded.start)
                .filter(|&j| self.v.folded(j));
            if f.is_some() {
                break;
            }
            self.folded.start += 1;
        }
        let mut d = None;
        while !self.direct.is_empty() {
            d = self.v.row_at_rank(self.direct.start);
            if d.is_some() {
                break;
            }
            self.direct.start += 1;
        }
        match (d, f) {
            // A folded symbol comes just before its partner: row f < d wins ties of order.
            (Some(dj), Some(fj)) if fj <= dj => {
                self.folded.start += 1;
                Some(self.v.make_symbol(fj, true))
            }
            (Some(dj), _) => {
                self.direct.start += 1;
                Some(self.v.make_symbol(dj, false))
            }
            (None, Some(fj)) => {
                self.folded.start += 1;
                Some(self.v.make_symbol(fj, true))
            }
            (None, None) => None,
        }
    }
}
