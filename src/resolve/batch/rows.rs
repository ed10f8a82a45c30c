//! A v2 blob's stored rows laid out for a stream of lookups: each row's
//! address (as an offset from the first, decoded once) beside the [`Arena`]
//! entry of its decoded name, 8 bytes a row (0.4 MB for System.map 6.1's
//! 50k rows).
//!
//! Why both in one slot: a lookup's rank search ends on the row's cache
//! line, so the name's entry comes with it. Kept by name-order rank
//! instead, the entry was one more cache miss per lookup (names are in name
//! order, a trace's addresses in none); kept in 16-byte slots, the rank
//! search read twice the cache lines. Both cost `ksym-resolve` more than
//! v2's smaller blob saved (issue 14's notes have the profiles).

use std::ops::Range;

use super::cache::Arena;
use crate::blob::v2::layout::{BUCKET, PFX};
use crate::blob::v2::read::{KallsymsV2, Located};

/// One stored row: its address minus the first row's, and its name's
/// [`Arena`] entry.
#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    offset: u32,
    name: u32,
}

/// The stored rows of one v2 blob (FORMAT.md §10.1), in address order.
#[derive(Debug, Default)]
pub(in crate::resolve) struct RowTable {
    base: u64,
    slots: Vec<Slot>,
    arena: Arena,
    /// The [`Arena`] entry of each name-order rank whose bucket has been
    /// decoded: a row's first print decodes its name's whole bucket.
    by_rank: Vec<u32>,
    /// A bucket's names, decoded before they go to `arena`.
    scratch: Vec<u8>,
    /// Each row's symbol type: the blob's type exceptions set at the
    /// start, in one pass, the others read from the `types` bits once
    /// asked for (0: not yet). A binary search of the exceptions per row
    /// (12 unpredictable steps for libstdc++'s 3,038 weak template
    /// instances) was 1.2 % of the instructions of 100k random addresses.
    types: Vec<u8>,
}

impl RowTable {
    /// Decodes every stored address of `v` (about 10 ns a row); `None`
    /// when they span 4 GiB or more (then lookups go through the blob).
    pub(in crate::resolve) fn new(v: &KallsymsV2<'_>) -> Option<Self> {
        let base = if v.stored() > 0 {
            v.stored_address(0)
        } else {
            0
        };
        let slots = (0..v.stored())
            .map(|j| {
                let offset = u32::try_from(v.stored_address(j).checked_sub(base)?).ok()?;
                Some(Slot { offset, name: 0 })
            })
            .collect::<Option<Vec<Slot>>>()?;
        let mut types = vec![0; slots.len()];
        for (j, t) in v.type_exceptions() {
            // A type byte 0 (a forged blob) reads as "not yet": asked
            // for, it is read again through the blob.
            if let Some(slot) = types.get_mut(j) {
                *slot = t;
            }
        }
        Some(RowTable {
            base,
            by_rank: vec![0; slots.len()],
            types,
            slots,
            arena: Arena::default(),
            scratch: Vec::new(),
        })
    }

    /// Number of stored rows.
    pub(in crate::resolve) fn len(&self) -> usize {
        self.slots.len()
    }

    /// Address of stored row `j` (`j < len()`).
    pub(in crate::resolve) fn address(&self, j: usize) -> u64 {
        self.base + u64::from(self.slots[j].offset)
    }

    /// The number of stored rows at or below `addr` (what
    /// [`KallsymsV2::rank_in`] returns), searching only `window`, which must
    /// hold the answer (an `AddressIndex` window).
    #[inline]
    pub(in crate::resolve) fn rank(&self, window: Range<usize>, addr: u64) -> usize {
        let n = self.slots.len();
        let Some(d) = addr.checked_sub(self.base) else {
            return 0;
        };
        let Ok(d) = u32::try_from(d) else {
            return n;
        };
        let (lo, hi) = (window.start.min(n), window.end.min(n));
        lo + self.slots[lo..hi].partition_point(|s| s.offset <= d)
    }

    /// The neighbouring row addresses [`KallsymsV2::lookup_located`] needs
    /// at `rank`, from the decoded ones.
    #[inline]
    pub(in crate::resolve) fn located(&self, rank: usize) -> Located {
        let at = |i: Option<usize>| {
            i.and_then(|i| self.slots.get(i))
                .map(|s| self.base + u64::from(s.offset))
        };
        Located {
            rank,
            prev: at(rank.checked_sub(1)),
            before_prev: at(rank.checked_sub(2)),
            next: at(Some(rank)),
        }
    }

    /// Reads the first byte of row `j`'s decoded name, if decoded (see
    /// [`Arena::touch`]).
    #[inline]
    pub(in crate::resolve) fn touch_name(&self, j: usize) -> u8 {
        self.slots.get(j).map_or(0, |s| self.arena.touch(s.name))
    }

    /// Appends the name of stored row `j` of `v` (with `__pfx_` before it
    /// for its folded companion). The first time, it decodes the 16 names
    /// of the name's bucket: a random stream of addresses prints every
    /// name once, and one pass over a bucket costs less than 16 names
    /// decoded one by one.
    #[inline]
    pub(in crate::resolve) fn push_name(
        &mut self,
        j: usize,
        folded: bool,
        out: &mut Vec<u8>,
        v: &KallsymsV2<'_>,
    ) {
        if folded {
            out.extend_from_slice(PFX);
        }
        let Some(e) = self.slots.get(j).map(|s| s.name) else {
            return v.row_name(j, false).extend_into(out);
        };
        let e = if e != 0 { e } else { self.fill(j, v) };
        match e {
            0 => v.row_name(j, false).extend_into(out),
            e => out.extend_from_slice(self.arena.bytes(e)),
        }
    }

    /// The symbol type of stored row `j` of `v`
    /// ([`KallsymsV2::row_symbol_type`]), read from the blob once.
    #[inline]
    pub(in crate::resolve) fn symbol_type(&mut self, j: usize, v: &KallsymsV2<'_>) -> u8 {
        match self.types.get_mut(j) {
            Some(t) if *t != 0 => *t,
            Some(t) => {
                *t = v.row_type_bit(j);
                *t
            }
            None => v.row_symbol_type(j),
        }
    }

    /// Decodes row `j`'s name with its bucket; its entry, or 0 when the
    /// bucket is damaged (or the arena full).
    #[cold]
    fn fill(&mut self, j: usize, v: &KallsymsV2<'_>) -> u32 {
        let rank = v.row_name_rank(j);
        if self.by_rank.get(rank) == Some(&0) {
            let (arena, by_rank) = (&mut self.arena, &mut self.by_rank);
            v.decode_name_bucket(rank / BUCKET, &mut self.scratch, |r, name| {
                if let Some(e) = by_rank.get_mut(r).filter(|e| **e == 0) {
                    *e = arena.insert(name);
                }
            });
        }
        let e = self.by_rank.get(rank).copied().unwrap_or(0);
        self.slots[j].name = e;
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blob::list::SymbolList;
    use crate::blob::v2::write::{V2Options, pack_v2};
    use crate::blobfile::AlignedBlob;

    fn blob(list: &SymbolList) -> AlignedBlob {
        AlignedBlob::copy_from(&pack_v2(list, &V2Options::default()).unwrap().blob)
    }

    #[test]
    fn rows_rank_and_name_as_the_blob_does() {
        let mut l = SymbolList::new();
        let mut a = 0xffff_ffff_8100_0000u64;
        for i in 0..700u64 {
            if i % 5 == 0 {
                l.push(a, b't', format!("__pfx_fn_{i:04}").as_bytes())
                    .unwrap();
                a += 16;
            }
            // Weak and local ones among them: type exceptions (W, w) and
            // the other bit (t).
            let ty = [b'T', b'W', b't', b'w'][(i % 11 % 4) as usize];
            l.push(a, ty, format!("fn_{i:04}").as_bytes()).unwrap();
            if i % 9 == 0 {
                l.push(a, b'T', format!("alias_{i}").as_bytes()).unwrap();
            }
            a += 32 + i % 7 * 8;
        }
        let b = blob(&l);
        let v = KallsymsV2::from_blob(b.as_bytes(), None, None).unwrap();
        let mut t = RowTable::new(&v).unwrap();
        assert_eq!(t.len(), v.stored());
        for j in 0..v.stored() {
            let x = v.stored_address(j);
            assert_eq!(t.address(j), x);
            for p in [x - 1, x, x + 1] {
                assert_eq!(
                    t.rank(0..usize::MAX, p),
                    v.rank_in(p, 0..usize::MAX),
                    "{p:#x}"
                );
            }
        }
        // Types set from the exceptions at the start, the others read
        // when asked: each as the blob's binary search finds it, twice.
        for j in (0..v.stored()).chain(0..v.stored()) {
            assert_eq!(t.symbol_type(j, &v), v.row_symbol_type(j), "row {j}");
        }
        assert!(v.type_exceptions().count() > 100);
        // Rows in an order that fills buckets from their middle; each name
        // twice (decoded, then from the arena), with and without `__pfx_`.
        for j in (0..v.stored()).rev().step_by(3).chain(0..v.stored()) {
            for folded in [false, true] {
                let (mut got, mut want) = (Vec::new(), Vec::new());
                t.push_name(j, folded, &mut got, &v);
                v.row_name(j, folded).extend_into(&mut want);
                assert_eq!(got, want, "row {j}");
            }
        }
    }

    #[test]
    fn rows_spanning_4_gib_are_left_to_the_blob() {
        let mut l = SymbolList::new();
        l.push(0xffff_fffe_8100_0000, b'T', b"low").unwrap();
        l.push(0xffff_ffff_8100_0000, b'T', b"high").unwrap();
        let b = blob(&l);
        let v = KallsymsV2::from_blob(b.as_bytes(), None, None).unwrap();
        assert!(RowTable::new(&v).is_none());
    }
}
