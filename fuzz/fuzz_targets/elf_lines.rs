//! Arbitrary bytes as an ELF file with DWARF (`ksym-pack --lines ELF`,
//! user-space and vmlinux alike): reading its source table must return it
//! or an error naming the file, never panic. An accepted table encodes
//! into a `lines` section (or is refused by the writer with a reason),
//! and an encoded section parses and passes the deep check, as every
//! table read from DWARF must (FORMAT.md §15.5), in byte opcodes and
//! Huffman-coded (§15.6) alike, the two answering alike at every row.
//! The sweep that asks for the innermost location alone between edges
//! builds the table asking at every boundary builds.
#![no_main]

use std::path::Path;

use ksym::blob::v2::layout::LINE_BLOCK_SHIFT;
use ksym::blob::v2::source_lines::read::LineTable;
use ksym::blob::v2::source_lines::write::{RowForm, encode_lines, encode_lines_in_blocks};
use ksym::elf::dwarf::{source_table_from_bytes, source_table_from_bytes_asking_every_boundary};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let table = match source_table_from_bytes(data, Path::new("fuzz.elf"), true) {
        Ok((t, _)) => t,
        Err(e) => {
            assert!(e.what.starts_with("fuzz.elf: "), "{}", e.what);
            return;
        }
    };
    let (every, _) =
        source_table_from_bytes_asking_every_boundary(data, Path::new("fuzz.elf"), true)
            .expect("the reference sweep reads what the fast one read");
    assert_eq!(table.rows, every.rows);
    assert_eq!(table.nodes, every.nodes);
    assert_eq!(table.files, every.files);
    assert_eq!(table.strings, every.strings);
    let Ok(section) = encode_lines(&table, false) else {
        return;
    };
    let t = LineTable::parse(&section, 0).expect("an encoded table parses");
    t.verify().expect("an encoded table passes the deep check");
    let coded = encode_lines_in_blocks(&table, false, LINE_BLOCK_SHIFT, RowForm::Coded)
        .expect("a table the byte form takes, the coded form takes");
    let c = LineTable::parse(&coded, 0).expect("a coded table parses");
    c.verify().expect("a coded table passes the deep check");
    for r in &table.rows {
        let (a, b) = (t.find(r.address), c.find(r.address));
        assert_eq!(
            a.map(|r| (r.address, r.file, r.line)),
            b.map(|r| (r.address, r.file, r.line))
        );
    }
});
