//! Property tests: for random symbol lists, pack -> read gives back every
//! symbol, every lookup agrees with a naive sorted-vector oracle, and two
//! builds are byte-identical; for both blob formats.

use ksym::Kallsyms;
use ksym::blob::list::SymbolList;
use ksym::blob::v1::tokens::TokenStrategy;
use ksym::blob::v1::write::pack;
use ksym::blob::v2::write::{V2Options, pack_v2};
use ksym::blobfile::AlignedBlob;
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

/// Symbols at 16-byte steps; some get a `__pfx_` twin 16 bytes below them
/// (what v2 folds, FORMAT.md §10.1), which may or may not be alone there.
fn symbols() -> impl Strategy<Value = Vec<Sym>> {
    prop::collection::vec(
        (0u64..64, prop::bool::ANY, name(), prop::bool::weighted(0.3)),
        0..300,
    )
    .prop_map(|v| {
        let mut out = Vec::new();
        for (a, t, n, twin) in v {
            let (a, t) = (
                0xffff_ffff_8100_0000 + (a + 1) * 16,
                if t { b'T' } else { b't' },
            );
            if twin {
                out.push((a - 16, t, [&b"__pfx_"[..], &n].concat()));
            }
            out.push((a, t, n));
        }
        out
    })
}

/// Packs `list` in the given format (v1 with the given token strategy).
fn pack_as(list: &SymbolList, v2: bool, strategy: TokenStrategy) -> Vec<u8> {
    if v2 {
        pack_v2(list, &V2Options::default()).unwrap().blob
    } else {
        pack(list, strategy).unwrap().blob
    }
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
    if let Some(e) = etext
        && a < e
    {
        end = Some(end.map_or(e, |n| n.min(e)));
    }
    if end.is_some_and(|e| addr >= e) || end.is_none() && addr - a >= 1 << 20 {
        return None;
    }
    Some((first, addr - a, end.map(|e| e - a)))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn pack_read_and_lookups_agree_with_oracle(syms in symbols(), seed_tokens in any::<bool>(), v2 in any::<bool>(), probes in prop::collection::vec(0u64..(66 * 16 + 32), 0..64)) {
        let strategy = if seed_tokens { TokenStrategy::Seed } else { TokenStrategy::Optimal };
        let mut list = SymbolList::new();
        for (a, t, n) in &syms {
            list.push(*a, *t, n).unwrap();
        }
        let packed = pack_as(&list, v2, strategy);
        prop_assert_eq!(&packed, &pack_as(&list, v2, strategy), "deterministic");
        let blob = AlignedBlob::copy_from(&packed);
        let m = Kallsyms::from_blob(blob.as_bytes(), None, None).unwrap();
        m.verify().unwrap();

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
            if let Some(h) = m.lookup_address(p) {
                let mut n = Vec::new();
                h.symbol.name.extend_into(&mut n);
                prop_assert_eq!(&n, &sorted[h.symbol.index].2);
                prop_assert_eq!(h.symbol.address, sorted[h.symbol.index].0);
            }
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
        prop_assert!(m.lookup_name(b"__pfx_zzz_not_there").is_none());
        // Every symbol's index is its position in address order.
        for (i, s) in m.symbols().enumerate() {
            prop_assert_eq!(s.index, i);
        }
    }
}

/// `ksym-resolve`'s output for `probes` (one bare address a line) on `blob`.
fn resolve_bare(blob: &[u8], probes: &[u64]) -> Vec<u8> {
    use ksym::resolve::{ResolveOptions, Resolver};
    let blob = AlignedBlob::copy_from(blob);
    let m = Kallsyms::from_blob(blob.as_bytes(), None, None).unwrap();
    let input: String = probes.iter().map(|p| format!("{p:016x}\n")).collect();
    let opts = ResolveOptions {
        size: true,
        ..Default::default()
    };
    let mut out = Vec::new();
    Resolver::new(&m, opts)
        .run(input.as_bytes(), &mut out)
        .unwrap();
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// The resolver reads a v2 blob through its own tables (stored rows
    /// decoded, names decoded a bucket at a time, `resolve::rows`), or,
    /// when the addresses span 4 GiB or more (`far`: 8 GiB, or 2^63 bytes
    /// and more), through the blob; a v1 blob through the blob. All three
    /// print the same lines, twice over (the second pass from the name
    /// caches).
    #[test]
    fn resolver_prints_the_same_on_v1_and_v2(syms in symbols(), far in 0u8..3, probes in prop::collection::vec(0u64..(66 * 16 + 32), 0..64)) {
        let mut list = SymbolList::new();
        let mut sorted = syms.clone();
        match far {
            1 => sorted.push((0xffff_fffd_8100_0000, b'T', b"far_below".to_vec())),
            2 => sorted.push((0x1000, b'T', b"low_far_away".to_vec())),
            _ => {}
        }
        sorted.sort_by_key(|s| s.0);
        for (a, t, n) in &sorted {
            list.push(*a, *t, n).unwrap();
        }
        let base = 0xffff_ffff_8100_0000u64;
        let mut at: Vec<u64> = probes.iter().map(|p| base.wrapping_add(*p).wrapping_sub(16)).collect();
        at.extend(sorted.iter().flat_map(|s| [s.0, s.0 + 1, s.0.wrapping_sub(1)]));
        at.extend(at.clone());
        let v1 = resolve_bare(&pack_as(&list, false, TokenStrategy::Optimal), &at);
        let v2 = resolve_bare(&pack_as(&list, true, TokenStrategy::Optimal), &at);
        prop_assert_eq!(String::from_utf8_lossy(&v2), String::from_utf8_lossy(&v1));
    }
}
