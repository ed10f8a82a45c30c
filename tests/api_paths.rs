//! The crate's public paths from before the blob formats got their folders
//! (`ksym::reader`, `ksym::writer`, `ksym::v2::lines`, ...) still name the
//! same items as the new ones (`ksym::blob::v1::read`, ...): each pair below
//! must be the same type or function, or this file does not build, and the
//! test packs and reads one blob through the old paths only.

use std::any::TypeId;

#[test]
fn old_paths_name_the_same_items() {
    use ksym::blob;
    let same = [
        (
            TypeId::of::<ksym::reader::KallsymsMapped<'static>>(),
            TypeId::of::<blob::v1::read::KallsymsMapped<'static>>(),
        ),
        (
            TypeId::of::<ksym::reader::BlobError>(),
            TypeId::of::<blob::symbol::BlobError>(),
        ),
        (
            TypeId::of::<ksym::reader::Symbol<'static>>(),
            TypeId::of::<blob::symbol::Symbol<'static>>(),
        ),
        (
            TypeId::of::<ksym::writer::SymbolList>(),
            TypeId::of::<blob::list::SymbolList>(),
        ),
        (
            TypeId::of::<ksym::writer::Layout<'static>>(),
            TypeId::of::<blob::v1::write::Layout<'static>>(),
        ),
        (
            TypeId::of::<ksym::tokens::TokenStrategy>(),
            TypeId::of::<blob::v1::tokens::TokenStrategy>(),
        ),
        (
            TypeId::of::<ksym::v2::KallsymsV2<'static>>(),
            TypeId::of::<blob::v2::read::KallsymsV2<'static>>(),
        ),
        (
            TypeId::of::<ksym::v2::read::CodedName<'static>>(),
            TypeId::of::<blob::v2::names::CodedName<'static>>(),
        ),
        (
            TypeId::of::<ksym::v2::lines::LineTable<'static>>(),
            TypeId::of::<blob::v2::source_lines::read::LineTable<'static>>(),
        ),
        (
            TypeId::of::<ksym::v2::lines_write::SourceTable>(),
            TypeId::of::<blob::v2::source_lines::write::SourceTable>(),
        ),
        (
            TypeId::of::<ksym::v2::write::V2Options>(),
            TypeId::of::<blob::v2::write::V2Options>(),
        ),
        (
            TypeId::of::<ksym::nm::NmLine<'static>>(),
            TypeId::of::<ksym::text::nm::NmLine<'static>>(),
        ),
        (
            TypeId::of::<ksym::nameorder::NameOrder>(),
            TypeId::of::<blob::nameorder::NameOrder>(),
        ),
    ];
    for (i, (old, new)) in same.iter().enumerate() {
        assert_eq!(old, new, "pair {i}");
    }
    assert_eq!(ksym::format::MAX_TOKENS, blob::v1::layout::MAX_TOKENS);
    assert_eq!(ksym::v2::layout::BOUND_NAMES, ksym::kernel::BOUND_NAMES);
    assert_eq!(
        ksym::format::LAST_SYMBOL_MAX_SPAN,
        ksym::kernel::LAST_SYMBOL_MAX_SPAN
    );

    // One blob through the old paths alone.
    let mut list = ksym::writer::SymbolList::new();
    list.push(0xffff_ffff_8100_0000, b'T', b"_stext").unwrap();
    list.push(0xffff_ffff_8100_0040, b't', b"read_zero")
        .unwrap();
    let packed = ksym::writer::pack(&list, ksym::tokens::TokenStrategy::Optimal).unwrap();
    let blob = ksym::blobfile::AlignedBlob::copy_from(&packed.blob);
    let k = ksym::reader::KallsymsMapped::from_blob(blob.as_bytes(), None, None).unwrap();
    let hit = k.lookup_address(0xffff_ffff_8100_0041).unwrap();
    assert_eq!(hit.symbol.name.to_string(), "read_zero");
    assert_eq!(hit.offset, 1);
    let mut hex = Vec::new();
    ksym::hex::push_u64_padded(&mut hex, hit.symbol.address);
    assert_eq!(hex, b"ffffffff81000040");
}
