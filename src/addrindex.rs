//! A bucket index over a blob's addresses: narrows each address lookup's
//! binary search to a few entries, so a stream of lookups (ksym-resolve)
//! touches one or two cache lines of `addresses` instead of ~17.
//!
//! Built once in memory beside the blob (about 1 byte per symbol); the blob
//! format is unchanged. (`ksym-resolve` also keeps a v2 blob's stored
//! addresses decoded, in `resolve::rows`, and builds this index over them.)

use std::ops::Range;

use crate::blob::v1::read::KallsymsMapped;
use crate::blob::{AddressHit, Kallsyms};

/// Bucket `k` covers addresses `[base + (k << shift), base + ((k + 1) << shift))`;
/// `starts[k]` is the number of symbol addresses below that range.
#[derive(Debug, Clone)]
pub struct AddressIndex {
    base: u64,
    shift: u32,
    starts: Vec<u32>,
}

impl AddressIndex {
    /// Builds the index for a v1 blob, with about one bucket per 4 symbols.
    pub fn new(map: &KallsymsMapped<'_>) -> Self {
        Self::over(map.len(), |i| map.address(i))
    }

    /// Builds the index for either format: over v1's addresses or v2's
    /// stored rows (what [`Kallsyms::rank_in`] counts).
    pub fn for_blob(map: &Kallsyms<'_>) -> Self {
        match map {
            Kallsyms::V1(m) => Self::new(m),
            Kallsyms::V2(v) => Self::over(v.stored(), |j| v.stored_address(j)),
        }
    }

    /// The rank of `addr` in `map` (what [`Kallsyms::rank_in`] returns),
    /// searching only `addr`'s window. `map` must be the blob this index
    /// was built for.
    #[inline]
    pub fn rank(&self, map: &Kallsyms<'_>, addr: u64) -> usize {
        map.rank_in(addr, self.window(addr))
    }

    /// The answer for `addr` given its [`rank`](Self::rank): what
    /// [`Kallsyms::lookup_ranked`] returns.
    #[inline]
    pub fn lookup_ranked<'a>(
        &self,
        map: &Kallsyms<'a>,
        addr: u64,
        rank: usize,
    ) -> Option<AddressHit<'a>> {
        map.lookup_ranked(addr, rank)
    }

    /// Builds the index over `n` ascending addresses given by `address`
    /// (also the row blocks of a `lines` section, for
    /// [`crate::blob::v2::source_lines::read::LineTable::find_in`]).
    pub fn over(n: usize, address: impl Fn(usize) -> u64) -> Self {
        let map_address = address;
        if n == 0 {
            return AddressIndex {
                base: 0,
                shift: 63,
                starts: vec![0, 0],
            };
        }
        let base = map_address(0);
        let span = map_address(n - 1).wrapping_sub(base);
        let want = (n / 4).max(1) as u64;
        // Smallest shift with span >> shift < want buckets.
        let mut shift = 0;
        while shift < 63 && (span >> shift) >= want {
            shift += 1;
        }
        let buckets = (span >> shift) as usize + 1;
        let mut starts = Vec::with_capacity(buckets + 1);
        let mut i = 0usize;
        for k in 0..=buckets as u64 {
            let lo = base.saturating_add(k << shift);
            while i < n && map_address(i) < lo {
                i += 1;
            }
            starts.push(i as u32);
        }
        // Addresses past the last bucket's end: search to the end.
        *starts.last_mut().expect("buckets + 1 entries") = n as u32;
        AddressIndex {
            base,
            shift,
            starts,
        }
    }

    /// The window of `addresses` holding the number of addresses `<= addr`,
    /// for [`KallsymsMapped::lookup_address_in`].
    #[inline]
    pub fn window(&self, addr: u64) -> Range<usize> {
        let Some(d) = addr.checked_sub(self.base) else {
            return 0..0;
        };
        let k = (d >> self.shift) as usize;
        if k + 1 >= self.starts.len() {
            return self.starts[self.starts.len() - 2] as usize..usize::MAX;
        }
        self.starts[k] as usize..self.starts[k + 1] as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blob::list::SymbolList;
    use crate::blob::v1::tokens::TokenStrategy;
    use crate::blob::v1::write::pack;
    use crate::blobfile::AlignedBlob;

    #[test]
    fn windowed_lookups_equal_full_lookups() {
        let mut l = SymbolList::new();
        let mut a = 0xffff_ffff_8100_0000u64;
        for i in 0..5000u64 {
            l.push(a, b'T', format!("f{i}").as_bytes()).unwrap();
            if i % 7 != 0 {
                a += (i * 7919) % 700 + 1; // gaps of all sizes, and aliases
            }
        }
        let blob = AlignedBlob::copy_from(&pack(&l, TokenStrategy::Optimal).unwrap().blob);
        let m = KallsymsMapped::from_blob(blob.as_bytes(), None, None).unwrap();
        let idx = AddressIndex::new(&m);
        let probe = |x: u64| {
            let full = m
                .lookup_address(x)
                .map(|h| (h.symbol.index, h.offset, h.size));
            let fast = m
                .lookup_address_in(x, idx.window(x))
                .map(|h| (h.symbol.index, h.offset, h.size));
            assert_eq!(full, fast, "{x:#x}");
        };
        for i in 0..m.len() {
            let s = m.address(i);
            for x in [s, s + 1, s.wrapping_sub(1)] {
                probe(x);
            }
        }
        for x in [0, 1, u64::MAX, a + 1_000_000, 0xffff_ffff_80ff_ffff] {
            probe(x);
        }
    }

    #[test]
    fn v2_lookups_through_the_index_equal_full_lookups() {
        use crate::blob::v2::write::{V2Options, pack_v2};
        let mut l = SymbolList::new();
        let mut a = 0xffff_ffff_8100_0000u64;
        for i in 0..3000u64 {
            // __pfx_ twins 16 bytes below their function (folded), aliases,
            // and gaps of all sizes.
            if i % 3 == 0 {
                l.push(a, b't', format!("__pfx_g{i}").as_bytes()).unwrap();
                a += 16;
            }
            l.push(a, b'T', format!("g{i}").as_bytes()).unwrap();
            if i % 11 != 0 {
                a += (i * 7919) % 900 + 1;
            }
        }
        let blob = pack_v2(&l, &V2Options::default()).unwrap().blob;
        let k = Kallsyms::from_blob(&blob, None, None).unwrap();
        let idx = AddressIndex::for_blob(&k);
        let probe = |x: u64| {
            let full = k
                .lookup_address(x)
                .map(|h| (h.symbol.index, h.offset, h.size));
            let fast = idx
                .lookup_ranked(&k, x, idx.rank(&k, x))
                .map(|h| (h.symbol.index, h.offset, h.size));
            assert_eq!(full, fast, "{x:#x}");
        };
        for s in k.symbols() {
            for x in [s.address, s.address + 1, s.address.wrapping_sub(1)] {
                probe(x);
            }
        }
        for x in [0, 1, u64::MAX, a + 1_000_000, 0xffff_ffff_80ff_ffff] {
            probe(x);
        }
    }
}
