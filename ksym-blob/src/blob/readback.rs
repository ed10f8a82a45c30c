//! A packed blob read back against the list it was packed from, by the
//! readers a kernel and the resolver use: every symbol's address, type,
//! name and module. The writers run it before a blob leaves them, so that
//! a writer bug (once, a token code numbered past its prefix byte) ends in
//! an error and not in a blob that names addresses wrongly.

use super::Kallsyms;
use super::list::{PackError, PackErrorKind, SymbolList};
use super::v2::layout::{BUCKET, PFX};

/// Opens `blob` (v1 or v2, by its magic) and compares its symbols, in
/// address order, with `list`'s (address order, stable: the order both
/// writers store). Linear in the blob; a v1 blob is copied once to an
/// 8-byte-aligned buffer, as its reader needs.
///
/// Errors: [`PackErrorKind::ReadBack`] naming the first symbol that differs,
/// or the count, or the blob not opening.
pub fn read_back(list: &SymbolList, blob: &[u8]) -> Result<(), PackError> {
    read_back_in(list, &list.address_order(), blob)
}

/// [`read_back`] for a writer that has `list`'s address order already
/// (`order`, from [`SymbolList::address_order`]).
pub(crate) fn read_back_in(list: &SymbolList, order: &[u32], blob: &[u8]) -> Result<(), PackError> {
    let fail = |index, what| PackError {
        line: None,
        kind: PackErrorKind::ReadBack { index, what },
    };
    let mut aligned: Vec<u64> = Vec::new();
    let bytes = if blob.as_ptr().align_offset(8) == 0 {
        blob
    } else {
        aligned.resize(blob.len().div_ceil(8), 0);
        let b: &mut [u8] = bytemuck::cast_slice_mut(&mut aligned);
        b[..blob.len()].copy_from_slice(blob);
        &b[..blob.len()]
    };
    let k =
        Kallsyms::from_blob(bytes, None, None).map_err(|_| fail(0, "the blob does not open"))?;
    let v2 = match &k {
        Kallsyms::V2(v) => Some(v),
        _ => None,
    };
    // v2: the list index of each stored row, whose names are compared
    // below bucket by bucket (a name alone decodes its bucket up to it).
    let mut row_of: Vec<u32> = Vec::with_capacity(v2.map_or(0, |v| v.stored()));
    let mut n = 0;
    for (s, &i) in k.symbols().zip(order) {
        let i = i as usize;
        if s.address != list.address(i) {
            return Err(fail(n, "another address"));
        }
        if s.symbol_type != list.symbol_type(i) {
            return Err(fail(n, "another type"));
        }
        match v2 {
            // v1 has no field for modules (FORMAT.md §6).
            None if !s.name.eq_bytes(list.name(i)) => return Err(fail(n, "another name")),
            None => {}
            Some(_) if s.module != list.module(i) => return Err(fail(n, "another module")),
            // Not at the next stored row's address: a folded `__pfx_`
            // companion (16 bytes below it, FORMAT.md §10.1), whose name
            // is that row's behind the prefix.
            Some(v)
                if row_of.len() >= v.stored() || v.stored_address(row_of.len()) != s.address =>
            {
                let next = order.get(n + 1).map_or(&[][..], |&r| list.name(r as usize));
                let name = list.name(i);
                if name.len() != PFX.len() + next.len()
                    || !name.starts_with(PFX)
                    || &name[PFX.len()..] != next
                {
                    return Err(fail(n, "another name"));
                }
            }
            Some(_) => row_of.push(i as u32),
        }
        n += 1;
    }
    if n != order.len() || k.len() != order.len() {
        return Err(fail(n, "another number of symbols"));
    }
    if let Some(v) = v2 {
        let m = v.stored();
        if row_of.len() != m {
            return Err(fail(n, "another number of stored rows"));
        }
        let mut at_rank = vec![u32::MAX; m];
        for (j, r) in (0..m).map(|j| (j, v.row_name_rank(j))) {
            if r >= m || at_rank[r] != u32::MAX {
                return Err(fail(j, "name ranks are no permutation"));
            }
            at_rank[r] = j as u32;
        }
        let mut scratch = Vec::new();
        let (mut seen, mut wrong) = (0usize, None);
        for b in 0..m.div_ceil(BUCKET) {
            v.decode_name_bucket(b, &mut scratch, |r, name| {
                seen += 1;
                let j = at_rank[r] as usize;
                if wrong.is_none() && name != list.name(row_of[j] as usize) {
                    wrong = Some(j);
                }
            });
        }
        if let Some(j) = wrong {
            return Err(fail(j, "another name"));
        }
        if seen != m {
            return Err(fail(seen, "names missing"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blob::v1::tokens::TokenStrategy;
    use crate::blob::v2::write::{V2Options, pack_v2};

    fn list(text: &str) -> SymbolList {
        SymbolList::read_lines(text.as_bytes()).unwrap()
    }

    /// The (index, what) of a read-back failure.
    fn failed(r: Result<(), PackError>) -> (usize, &'static str) {
        match r.map_err(|e| e.kind) {
            Err(PackErrorKind::ReadBack { index, what }) => (index, what),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn both_formats_read_back_and_a_changed_name_does_not() {
        let l = list("ffff0010 T b_func\nffff0000 T a_func\nffff0020 t c_func [mod]\n");
        let v2 = pack_v2(&l, &V2Options::default()).unwrap();
        read_back(&l, &v2.blob).unwrap();
        let other = list("ffff0010 T b_func\nffff0000 T a_fund\nffff0020 t c_func [mod]\n");
        assert_eq!(failed(read_back(&other, &v2.blob)), (0, "another name"));
        let plain = list("ffff0010 T b_func\nffff0000 T a_func\n");
        let v1 = crate::blob::v1::write::pack(&plain, TokenStrategy::default()).unwrap();
        // Unaligned on purpose: read_back copies it.
        let mut shifted = vec![0u8];
        shifted.extend_from_slice(&v1.blob);
        read_back(&plain, &shifted[1..]).unwrap();
        let moved = list("ffff0010 T b_func\nffff0008 T a_func\n");
        assert_eq!(failed(read_back(&moved, &v1.blob)), (0, "another address"));
        let fewer = list("ffff0000 T a_func\n");
        assert_eq!(
            failed(read_back(&fewer, &v1.blob)).1,
            "another number of symbols"
        );
        // A folded `__pfx_` companion (FORMAT.md §10.1) reads back too,
        // and its name is checked.
        let pfx = list("ffff0000 T __pfx_a_func\nffff0010 T a_func\nffff0020 T b_func\n");
        let v2 = pack_v2(&pfx, &V2Options::default()).unwrap();
        assert_eq!(v2.stored, 2);
        read_back(&pfx, &v2.blob).unwrap();
        let renamed = list("ffff0000 T __pfx_a_fund\nffff0010 T a_func\nffff0020 T b_func\n");
        assert_eq!(failed(read_back(&renamed, &v2.blob)), (0, "another name"));
    }
}
