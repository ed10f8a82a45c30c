//! Property tests: for random symbol lists, pack -> read gives back every
//! symbol, every lookup agrees with a naive sorted-vector oracle, and two
//! builds are byte-identical.

use ksym::blobfile::AlignedBlob;
use ksym::reader::KallsymsMapped;
use ksym::tokens::TokenStrategy;
use ksym::writer::{SymbolList, pack};
use proptest::prelude::*;

type Sym = (u64, u8, Vec<u8>);

/// Names drawn from a small alphabet with shared prefixes, so tokens and
/// duplicates are common; some non-ASCII bytes (never 0xFF).
fn name() -> impl Strategy<Value = Vec<u8>> {
    let prefixes = prop::sample::select(vec![
        &b""[..],
        b"do_",
        b"__x64_sys_",
        b"__pfx_",
        b"_etext",
        b"caf\xc3\xa9_",
        b"\x80\xfe",
    ]);
    (
        prefixes,
        prop::collection::vec(prop::sample::select(b"abc_xyz09".to_vec()), 0..12),
    )
        .prop_map(|(p, s)| [p, &s].concat())
        .prop_filter("non-empty", |n| !n.is_empty())
}

fn symbols() -> impl Strategy<Value = Vec<Sym>> {
    prop::collection::vec((0u64..64, prop::bool::ANY, name()), 0..300).prop_map(|v| {
        v.into_iter()
            .map(|(a, t, n)| {
                (
                    0xffff_ffff_8100_0000 + a * 16,
                    if t { b'T' } else { b't' },
                    n,
                )
            })
            .collect()
    })
}

/// The kernel rule of FORMAT.md §5.2, written the slow obvious way.
fn oracle(
    sorted: &[Sym],
    etext: Option<u64>,
    einittext: Option<u64>,
    addr: u64,
) -> Option<(usize, u64, Option<u64>)> {
    let i = sorted.iter().rposition(|s| s.0 <= addr)?;
    let a = sorted[i].0;
    if Some(a) == etext || Some(a) == einittext {
        return None;
    }
    let first = sorted.iter().position(|s| s.0 == a).unwrap();
    let mut end = sorted.iter().find(|s| s.0 > a).map(|s| s.0);
    if let Some(e) = etext {
        if a < e {
            end = Some(end.map_or(e, |n| n.min(e)));
        }
    }
    if end.is_some_and(|e| addr >= e) || end.is_none() && addr - a >= 1 << 20 {
        return None;
    }
    Some((first, addr - a, end.map(|e| e - a)))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn pack_read_and_lookups_agree_with_oracle(syms in symbols(), seed_tokens in any::<bool>(), probes in prop::collection::vec(0u64..(64 * 16 + 32), 0..64)) {
        let strategy = if seed_tokens { TokenStrategy::Seed } else { TokenStrategy::Optimal };
        let mut list = SymbolList::new();
        for (a, t, n) in &syms {
            list.push(*a, *t, n).unwrap();
        }
        let packed = pack(&list, strategy).unwrap();
        prop_assert_eq!(&packed.blob, &pack(&list, strategy).unwrap().blob, "deterministic");
        let blob = AlignedBlob::copy_from(&packed.blob);
        let m = KallsymsMapped::from_blob(blob.as_bytes(), None, None).unwrap();

        let mut sorted = syms.clone();
        sorted.sort_by_key(|s| s.0);
        let got: Vec<Sym> = m.symbols().map(|s| {
            let mut n = Vec::new();
            s.name.extend_into(&mut n);
            (s.address, s.symbol_type, n)
        }).collect();
        prop_assert_eq!(&got, &sorted);

        let etext = sorted.iter().find(|s| s.2 == b"_etext").map(|s| s.0);
        prop_assert_eq!(m.etext(), etext);
        let base = 0xffff_ffff_8100_0000u64;
        let far = sorted.last().map(|s| [s.0 + (1 << 20) - 1, s.0 + (1 << 20)]).unwrap_or_default();
        for p in probes.iter().map(|p| base.wrapping_add(*p).wrapping_sub(16)).chain(sorted.iter().map(|s| s.0)).chain(far) {
            let want = oracle(&sorted, etext, None, p);
            let hit = m.lookup_address(p).map(|h| (h.symbol.index, h.offset, h.size));
            prop_assert_eq!(hit, want, "address {:#x}", p);
        }
        for (a, _, n) in &sorted {
            let first = sorted.iter().find(|s| &s.2 == n).unwrap().0;
            prop_assert_eq!(m.lookup_name(n).map(|s| s.address), Some(first));
            let all: Vec<u64> = m.lookup_name_all(n).map(|s| s.address).collect();
            let want: Vec<u64> = sorted.iter().filter(|s| &s.2 == n).map(|s| s.0).collect();
            prop_assert_eq!(all, want);
            let _ = a;
        }
        prop_assert!(m.lookup_name(b"zzz_not_there").is_none());
    }
}
