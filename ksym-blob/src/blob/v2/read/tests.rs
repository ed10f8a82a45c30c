//! The small lookup paths a kernel links (no feature `fast-lookup`) against
//! the host's, and views opened without the shape checks.

use super::*;
use crate::blob::list::SymbolList;
use crate::blob::v2::write::{V2Options, pack_v2, reseal};
use crate::blobfile::AlignedBlob;

/// A blob of `n` symbols with aliases, `__pfx_` companions, gaps and
/// names sharing long prefixes, across several address blocks and name
/// buckets.
fn packed(n: usize) -> Vec<u8> {
    let mut list = SymbolList::new();
    let mut addr = 0xffff_ffff_8100_0000u64;
    for i in 0..n {
        let name = format!("subsys_{}_func_{i:05}", i % 7);
        if i % 5 == 0 {
            list.push(addr, b't', format!("__pfx_{name}").as_bytes())
                .unwrap();
            addr += 16;
        }
        list.push(addr, b'T', name.as_bytes()).unwrap();
        if i % 11 == 0 {
            list.push(addr, b't', format!("alias_{i}").as_bytes())
                .unwrap();
        }
        addr += 16 + (i as u64 * 37) % 300;
    }
    list.push(addr, b'T', b"_etext").unwrap();
    pack_v2(&list, &V2Options::default()).unwrap().blob
}

#[test]
fn the_kernels_rank_and_alias_search_agree_with_the_hosts() {
    let blob = AlignedBlob::copy_from(&packed(700));
    let v = KallsymsV2::from_blob(blob.as_bytes(), None, None).unwrap();
    let m = v.stored();
    let mut probes = vec![0, u64::MAX, v.stored_address(0) - 1];
    for j in 0..m {
        let a = v.stored_address(j);
        probes.extend([a, a + 1, a - 1, a + 15, a + 16]);
    }
    for &addr in &probes {
        let rank = v.rank_by_rows(addr);
        assert_eq!(rank, v.locate(addr).rank, "{addr:#x}");
        // Row rank - 1 is the last at or below addr; the first of its
        // aliases is where the rows below its address end.
        if let Some(hi) = rank.checked_sub(1) {
            let a = v.stored_address(hi);
            assert_eq!(v.rows_below(hi, a), v.first_alias(hi, a), "{addr:#x}");
        }
    }
}

#[test]
fn the_kernels_name_decoder_agrees_with_the_hosts() {
    let blob = AlignedBlob::copy_from(&packed(300));
    let v = KallsymsV2::from_blob(blob.as_bytes(), None, None).unwrap();
    let mut n = 0;
    for j in 0..v.stored() {
        let c = v.coded_at_rank(v.a2n(j), false);
        let mut want = Vec::new();
        c.for_each_stored_run(|r| want.extend_from_slice(r));
        let mut got = Vec::new();
        let k = c.rank as usize % BUCKET;
        crate::blob::v2::names::emit_prefix(c.bucket(), &c.tokens, k, usize::MAX, &mut |r| {
            got.extend_from_slice(r)
        });
        assert_eq!(got, want);
        n += 1;
    }
    assert!(n >= 300);
}

/// Puts `v` at byte `at` of a copy of `blob` and reseals its CRCs.
fn damaged(blob: &[u8], at: usize, v: &[u8]) -> Vec<u8> {
    let mut b = blob.to_vec();
    b[at..at + v.len()].copy_from_slice(v);
    reseal(&mut b);
    b
}

/// What a kernel does with a view: every lookup, which must end without
/// a panic whatever the view holds.
fn use_view(v: &KallsymsV2<'_>) {
    let mut name = Vec::new();
    for s in v.symbols().take(2000) {
        name.clear();
        s.name.extend_into(&mut name);
        let _ = v.lookup_name(&name);
        for p in [
            s.address,
            s.address.wrapping_sub(1),
            s.address.wrapping_add(7),
        ] {
            let _ = v.lookup_address(p);
            let _ = v.locate_row(p, v.locate(p));
        }
    }
    for j in 0..v.stored().min(2000) {
        let c = v.coded_at_rank(v.a2n(j), false);
        let k = c.rank as usize % BUCKET;
        crate::blob::v2::names::emit_prefix(c.bucket(), &c.tokens, k, usize::MAX, &mut |_| {});
    }
    for p in [0, 1, u64::MAX, 0xffff_ffff_8100_0000] {
        let _ = v.lookup_address(p);
        let _ = v.rank_by_rows(p);
    }
}

#[test]
fn counts_that_disagree_with_the_sections_fail_the_shape_checks_alone() {
    let good = packed(200);
    let v = KallsymsV2::from_blob(&good, None, None).unwrap();
    let at = |id| v.at(id);
    let blocks = at(SectionId::AddrBlocks);
    let table = blocks + v.stored().div_ceil(ADDR_BLOCK) * ADDR_BLOCK_HEADER;
    let cases: Vec<(&str, usize, Vec<u8>)> = vec![
        ("stored rows", 20, 5000u32.to_le_bytes().to_vec()),
        ("stored rows", 20, 3u32.to_le_bytes().to_vec()),
        ("stored rows", 20, u32::MAX.to_le_bytes().to_vec()),
        ("symbols", 16, 1u32.to_le_bytes().to_vec()),
        ("block width", blocks + 12, vec![200]),
        ("block shift", blocks + 13, vec![99]),
        (
            "block bit position",
            blocks + 8,
            u32::MAX.to_le_bytes().to_vec(),
        ),
        ("bucket shift", table, 70u32.to_le_bytes().to_vec()),
        ("bucket count", table + 4, u32::MAX.to_le_bytes().to_vec()),
        (
            "meta lengths",
            at(SectionId::Meta) + 4,
            vec![0xFF, 0xFF, 0xFF, 0xFF],
        ),
        (
            "token offsets",
            at(SectionId::Tokens) + 40,
            vec![0xFF, 0xFF],
        ),
    ];
    for (what, off, bytes) in cases {
        let b = AlignedBlob::copy_from(&damaged(&good, off, &bytes));
        let e = KallsymsV2::from_blob(b.as_bytes(), None, None)
            .expect_err(what)
            .kind;
        assert!(
            matches!(e, BlobErrorKind::BadSection { .. }),
            "{what}: {e:?}"
        );
        let v = KallsymsV2::from_blob_intact(b.as_bytes(), None, None).expect(what);
        assert!(v.check_shapes().is_err(), "{what}");
        use_view(&v);
    }
}

/// FORMAT.md §10.7: a symbol with a size ends there, the padding after it
/// is a gap (no symbol, not the function before it), a symbol without one
/// ends at the next as before, and the size printed is the ELF size.
#[test]
fn sizes_end_symbols_and_leave_gaps_unknown() {
    let mut list = SymbolList::new();
    list.push(0x1000, b'T', b"main").unwrap();
    list.set_last_size(0x40);
    list.push(0x1000, b'W', b"main_alias").unwrap();
    list.set_last_size(0x10);
    list.push(0x1080, b't', b"helper").unwrap();
    list.set_last_size(0x30);
    list.push(0x10c0, b'T', b"no_size").unwrap();
    list.push(0x1100, b'T', b"last").unwrap();
    list.set_last_size(0x8);
    let blob = pack_v2(&list, &V2Options::default()).unwrap().blob;
    let blob = AlignedBlob::copy_from(&blob);
    let v = KallsymsV2::from_blob(blob.as_bytes(), None, None).unwrap();
    assert!(v.has_sizes());
    let at = |a: u64| {
        v.lookup_address(a)
            .map(|h| (h.symbol.name.to_string(), h.offset, h.size))
    };
    // The first alias (input order) names the address and gives its size.
    assert_eq!(at(0x1000), Some(("main".into(), 0, Some(0x40))));
    assert_eq!(at(0x103f), Some(("main".into(), 0x3f, Some(0x40))));
    assert_eq!(at(0x1040), None, "padding after main");
    assert_eq!(at(0x107f), None);
    assert_eq!(at(0x10af), Some(("helper".into(), 0x2f, Some(0x30))));
    assert_eq!(at(0x10b0), None);
    assert_eq!(at(0x10ff), Some(("no_size".into(), 0x3f, Some(0x40))));
    assert_eq!(at(0x1107), Some(("last".into(), 7, Some(8))));
    assert_eq!(at(0x1108), None, "the last symbol ends at its size too");
    // Without sizes the same list covers the padding, as kallsyms does.
    let mut plain = SymbolList::new();
    for i in 0..list.len() {
        plain
            .push(list.address(i), list.symbol_type(i), list.name(i))
            .unwrap();
    }
    let blob = AlignedBlob::copy_from(&pack_v2(&plain, &V2Options::default()).unwrap().blob);
    let v = KallsymsV2::from_blob(blob.as_bytes(), None, None).unwrap();
    assert!(!v.has_sizes());
    let h = v.lookup_address(0x1040).unwrap();
    assert_eq!((h.offset, h.size), (0x40, Some(0x80)));
}

/// FORMAT.md §10.7 form 1: sizes stored as the padding before the next
/// symbol, with exceptions for a size past the next symbol, one too far
/// from it, the last symbol and an alias of another size; every row's
/// size reads back as given, and `--check` passes.
#[test]
fn size_gaps_read_back_every_size() {
    let mut list = SymbolList::new();
    let mut want = Vec::new();
    let mut a = 0x1000u64;
    for i in 0..300u64 {
        let size = match i {
            7 => 0,               // unknown
            50 => 0x100,          // past the next symbol
            90 => 1,              // a gap of 63 bytes: an exception
            _ => 0x40 - (i % 16), // gaps of 0 to 15
        };
        list.push(a, b't', format!("f{i}").as_bytes()).unwrap();
        if size != 0 {
            list.set_last_size(size);
        }
        want.push((a, size));
        if i == 120 {
            list.push(a, b'W', b"alias_of_f120").unwrap();
            list.set_last_size(0x8);
            want.push((a, 0x8));
        }
        a += 0x40;
    }
    let blob = AlignedBlob::copy_from(&pack_v2(&list, &V2Options::default()).unwrap().blob);
    let v = KallsymsV2::from_blob(blob.as_bytes(), None, None).unwrap();
    let s = v.sec(SectionId::Sizes);
    assert_eq!(
        (u32_at(s, 0), u32_at(s, 4), u32_at(s, 8)),
        (5, 1, 4),
        "width 5, form 1, 4 exceptions"
    );
    v.verify().unwrap();
    assert_eq!(v.stored(), want.len());
    for (j, &(addr, size)) in want.iter().enumerate() {
        assert_eq!(v.stored_address(j), addr);
        assert_eq!(v.row_size(j), (size != 0).then_some(size), "row {j}");
    }
    // A gap that leaves no size is refused by the deep check.
    let mut bad = blob.as_bytes().to_vec();
    let at = v.at(SectionId::Sizes) + 16;
    bad[at] |= 0x1F; // row 0: all ones, with no exception for it
    reseal(&mut bad);
    let bad = AlignedBlob::copy_from(&bad);
    let w = KallsymsV2::from_blob(bad.as_bytes(), None, None).unwrap();
    assert!(w.verify().is_err());
}

/// A last symbol whose size is known covers all of it, past the 1 MiB the
/// kernel's rule gives a last symbol of unknown extent (FORMAT.md §12.1
/// step 4): a JIT's or a program's large last function.
#[test]
fn a_sized_last_symbol_covers_more_than_a_mebibyte() {
    let mut list = SymbolList::new();
    list.push(0x1000, b't', b"small").unwrap();
    list.set_last_size(0x10);
    list.push(0x2000, b't', b"wasm_module").unwrap();
    list.set_last_size(0x30_0000);
    let blob = AlignedBlob::copy_from(&pack_v2(&list, &V2Options::default()).unwrap().blob);
    let v = KallsymsV2::from_blob(blob.as_bytes(), None, None).unwrap();
    let h = v.lookup_address(0x2000 + 0x2f_ffff).unwrap();
    assert_eq!((h.offset, h.size), (0x2f_ffff, Some(0x30_0000)));
    assert!(v.lookup_address(0x2000 + 0x30_0000).is_none());
}

/// Function names of the `lines` section that are symbol names are stored
/// as references to them (FORMAT.md §15.1, flag bit 1) and read back as
/// the same bytes; the others, paths and the `__pfx_` companion's name
/// (not a stored name) stay strings of their own.
#[test]
fn function_names_shared_with_the_symbols_read_back_alike() {
    use crate::blob::v2::source_lines::write::{InlineNode, LineRow, SourceTable};
    let mut list = SymbolList::new();
    let names = ["outer_fn", "inlined_fn", "other", "__pfx_outer_fn"];
    list.push(0x1000, b'T', b"__pfx_outer_fn").unwrap();
    list.push(0x1010, b'T', b"outer_fn").unwrap();
    list.push(0x1100, b'T', b"inlined_fn").unwrap();
    list.push(0x1200, b't', b"other").unwrap();
    let mut strings: Vec<Vec<u8>> = vec![b"".to_vec(), b"src".to_vec(), b"a.c".to_vec()];
    strings.extend(names.iter().map(|n| n.as_bytes().to_vec()));
    strings.push(b"only_in_dwarf".to_vec());
    let node = |parent, name| InlineNode {
        parent,
        name,
        call_file: 1,
        call_line: 7,
        call_column: 0,
    };
    // Node 1 outer_fn, 2 inlined_fn in it, 3 only_in_dwarf in 2, 4 the
    // __pfx_ name.
    let nodes = vec![
        InlineNode::default(),
        node(0, 3),
        node(1, 4),
        node(2, 7),
        node(0, 6),
    ];
    let row = |address, node| LineRow {
        address,
        file: 1,
        line: 10 + node,
        node,
        ..LineRow::default()
    };
    let table = SourceTable {
        rows: vec![
            row(0x1000, 4),
            row(0x1010, 1),
            row(0x1020, 3),
            row(0x1300, 0),
        ]
        .into_iter()
        .map(|mut r| {
            if r.node == 0 {
                r.file = 0;
            }
            r
        })
        .collect(),
        nodes,
        files: vec![(0, 0), (1, 2)],
        strings,
    };
    // Not shared (a blob a kernel embeds): every string stays.
    let opts = V2Options {
        lines: Some((table, false)),
        ..V2Options::default()
    };
    let plain = AlignedBlob::copy_from(&pack_v2(&list, &opts).unwrap().blob);
    let p = KallsymsV2::from_blob(plain.as_bytes(), None, None).unwrap();
    assert!(p.lines().unwrap().string(7).is_some() && p.lines().unwrap().string(8).is_none());
    let opts = V2Options {
        shared_names: true,
        ..opts
    };
    let blob = AlignedBlob::copy_from(&pack_v2(&list, &opts).unwrap().blob);
    let v = KallsymsV2::from_blob(blob.as_bytes(), None, None).unwrap();
    v.verify().unwrap();
    let lines = v.lines().unwrap();
    let chain = |a: u64| -> std::vec::Vec<std::string::String> {
        let row = lines.find(a).unwrap();
        lines
            .frames(&row)
            .map(|f| {
                let mut s = std::vec::Vec::new();
                lines.function(f.function).unwrap().extend_into(&mut s);
                std::string::String::from_utf8(s).unwrap()
            })
            .collect()
    };
    assert_eq!(chain(0x1000), ["__pfx_outer_fn"]);
    assert_eq!(chain(0x1010), ["outer_fn"]);
    assert_eq!(chain(0x1020), ["only_in_dwarf", "inlined_fn", "outer_fn"]);
    // Kept: "", "src", "a.c", the __pfx_ name and only_in_dwarf.
    let mut kept = 0;
    while lines.string(kept).is_some() {
        kept += 1;
    }
    assert_eq!(kept, 5);
    // The section alone (no names attached) gives no name for a
    // reference, and no id past its strings.
    let raw =
        crate::blob::v2::source_lines::read::LineTable::parse(v.sec(SectionId::Lines), 0).unwrap();
    let row = raw.find(0x1010).unwrap();
    assert_eq!(raw.frames(&row).next().unwrap().function, u32::MAX);
    assert!(raw.function(kept).is_none() && lines.function(kept).is_some());
}

/// `blob` with section `drop` left out of the directory (FORMAT.md §9.2),
/// laid out and sealed again.
fn without(blob: &[u8], drop: SectionId) -> Vec<u8> {
    let v = KallsymsV2::from_blob(blob, None, None).unwrap();
    let keep: Vec<(SectionId, &[u8])> = v
        .sections()
        .filter(|s| s.id != drop)
        .map(|s| (s.id, &blob[s.offset..s.offset + s.len]))
        .collect();
    let present = keep
        .iter()
        .fold(0u32, |p, (id, _)| p | 1 << (*id as u32 - 1));
    let mut out = blob[..HEADER_LEN].to_vec();
    out[10..12].copy_from_slice(&((HEADER_LEN + DIR_ENTRY_LEN * keep.len()) as u16).to_le_bytes());
    out[24..28].copy_from_slice(&present.to_le_bytes());
    out.resize(HEADER_LEN + DIR_ENTRY_LEN * keep.len(), 0);
    for (i, (_, bytes)) in keep.iter().enumerate() {
        out.resize(out.len().next_multiple_of(8), 0);
        let d = HEADER_LEN + DIR_ENTRY_LEN * i;
        out[d + 4..d + 8].copy_from_slice(&(bytes.len() as u32).to_le_bytes());
        out.extend_from_slice(bytes);
    }
    crate::blob::v2::write::reseal(&mut out);
    out
}

#[test]
fn a_section_left_out_reads_as_empty_and_a_required_one_is_refused() {
    let good = packed(200);
    // Sealed again unchanged, the blob opens: the rebuild is faithful.
    let same = AlignedBlob::copy_from(&without(&good, SectionId::Lines));
    assert_eq!(same.as_bytes(), &good[..]);
    let present: Vec<SectionId> = KallsymsV2::from_blob(&good, None, None)
        .unwrap()
        .sections()
        .map(|s| s.id)
        .collect();
    // This blob folds nothing: `pfx` is left out (FORMAT.md §10.1).
    assert!(!present.contains(&SectionId::Pfx));
    // `name_to_addr` may be left out (no marks, §10.4): without the marks
    // this blob has, the shapes hold and the deep check finds the inverse
    // missing.
    assert!(present.contains(&SectionId::NameToAddr));
    let b = AlignedBlob::copy_from(&without(&good, SectionId::NameToAddr));
    let v = KallsymsV2::from_blob(b.as_bytes(), None, None).unwrap();
    assert!(v.verify().is_err());
    use_view(&v);
    // With a folded companion `pfx` is there, and leaving it out is
    // refused (the symbol count no longer adds up).
    let mut folds = SymbolList::new();
    folds.push(0x1000, b'T', b"__pfx_a").unwrap();
    folds.push(0x1010, b'T', b"a").unwrap();
    folds.push(0x1040, b'T', b"b").unwrap();
    let f = pack_v2(&folds, &V2Options::default()).unwrap().blob;
    let b = AlignedBlob::copy_from(&without(&f, SectionId::Pfx));
    assert!(KallsymsV2::from_blob(&f, None, None).is_ok());
    assert!(KallsymsV2::from_blob(b.as_bytes(), None, None).is_err());
    // Ids 1 to 11 that this blob has, but `name_to_addr`.
    for id in SECTIONS[..11]
        .iter()
        .copied()
        .filter(|id| present.contains(id) && *id != SectionId::NameToAddr)
    {
        let b = AlignedBlob::copy_from(&without(&good, id));
        assert!(
            KallsymsV2::from_blob(b.as_bytes(), None, None).is_err(),
            "{} left out",
            id.name()
        );
        // Without the shape checks (a kernel's reader) it still reads in
        // bounds.
        if let Ok(v) = KallsymsV2::from_blob_intact(b.as_bytes(), None, None) {
            use_view(&v);
        }
    }
    // A `sections` bit past id 16 names no section.
    let mut b = good.clone();
    b[26] |= 0x01;
    crate::blob::v2::write::reseal(&mut b);
    let e = KallsymsV2::from_blob(&b, None, None).unwrap_err();
    assert_eq!(e.offset, 24, "{e}");
}

/// Code segments loaded as stored take 24 bytes (form 1), any other set
/// the full 40 (form 0); both read back as packed, and an unknown form is
/// refused by the shape checks (FORMAT.md §10.8).
#[test]
fn segments_are_short_when_code_loads_as_stored() {
    let mut list = SymbolList::new();
    list.push(0x1000, b'T', b"main").unwrap();
    list.set_last_size(0x40);
    let seg = |vaddr, offset, filesz, memsz, flags| LoadSegment {
        vaddr,
        offset,
        filesz,
        memsz,
        flags,
    };
    let code = vec![
        seg(0x1000, 0x1000, 0x200, 0x200, 5),
        seg(0x9000, 0x3000, 0x10, 0x10, 5),
    ];
    let mixed = vec![
        code[0],
        seg(0x9000, 0x3000, 0x10, 0x18, 5),
        seg(0xa000, 0x4000, 8, 8, 7),
    ];
    for (segments, entry) in [(code, SEGMENT_SHORT_LEN), (mixed, SEGMENT_LEN)] {
        let opts = V2Options {
            segments: segments.clone(),
            ..V2Options::default()
        };
        let blob = AlignedBlob::copy_from(&pack_v2(&list, &opts).unwrap().blob);
        let v = KallsymsV2::from_blob(blob.as_bytes(), None, None).unwrap();
        let s = v.sections().find(|s| s.id == SectionId::Segments).unwrap();
        assert_eq!(s.len, 8 + entry * segments.len());
        assert_eq!(v.load_segments().collect::<Vec<_>>(), segments);
        // Form 2 is no form: refused with the shape checks, read in bounds
        // without them.
        let b = AlignedBlob::copy_from(&damaged(blob.as_bytes(), s.offset + 4, &[2]));
        assert!(KallsymsV2::from_blob(b.as_bytes(), None, None).is_err());
        let v = KallsymsV2::from_blob_intact(b.as_bytes(), None, None).unwrap();
        assert!(v.load_segments().count() <= segments.len());
    }
}

/// One stored row has rank 0 in name order: `addr_to_name` has 0-bit
/// values and is left out (FORMAT.md §10.4), and both lookups still find it.
#[test]
fn a_single_row_needs_no_addr_to_name() {
    let mut list = SymbolList::new();
    list.push(0x1000, b'T', b"only").unwrap();
    let blob = AlignedBlob::copy_from(&pack_v2(&list, &V2Options::default()).unwrap().blob);
    let v = KallsymsV2::from_blob(blob.as_bytes(), None, None).unwrap();
    assert!(v.sections().all(|s| s.id != SectionId::AddrToName));
    assert_eq!(v.lookup_name(b"only").map(|s| s.address), Some(0x1000));
    assert_eq!(v.lookup_name(b"other").map(|s| s.address), None);
    let h = v.lookup_address(0x1004).unwrap();
    assert_eq!((h.symbol.name.to_string(), h.offset), ("only".into(), 4));
    assert!(v.verify().is_ok());
    use_view(&v);
}
