//! A module's source table over its local layout ([`module_lines`]), and
//! all modules' tables merged into one over module space
//! ([`merge_tables`]): strings and files that repeat across modules (the
//! `include/linux/*.h` paths, directory names, common inline functions)
//! are interned once.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;

use object::Object;

use super::ModuleError;
use super::file::ModuleInfo;
use super::reloc::{Relocations, relocations};
use crate::blob::v2::source_lines::write::{InlineNode, LineRow, SourceTable};
use crate::elf::dwarf::{OuterName, table_from_dwarf};
use crate::elf::intern::Interner;
use crate::elf::symtab::SymbolTable;

/// The source table of a module whose executable sections are at `bases`
/// (by position in `info.sections`): its DWARF read through relocations
/// that place each section there (`super::reloc`), swept at every boundary
/// as `ksym::elf::dwarf` sweeps a vmlinux (docs/FORMAT.md §15).
///
/// Errors: an unknown relocation type, a section that cannot be
/// decompressed, or malformed DWARF, naming the module.
pub fn module_lines(
    obj: &object::File<'_>,
    info: &ModuleInfo,
    bases: &[u64],
    path: &Path,
) -> Result<SourceTable, ModuleError> {
    let base_of = |i: object::SectionIndex| {
        info.sections
            .iter()
            .position(|s| s.index == i)
            .map(|k| bases[k])
    };
    let endian = if obj.is_little_endian() {
        gimli::RunTimeEndian::Little
    } else {
        gimli::RunTimeEndian::Big
    };
    let load = |id: gimli::SectionId| -> Result<(Cow<'_, [u8]>, Relocations), ModuleError> {
        match obj.section_by_name(id.name()) {
            Some(s) => {
                let data = crate::elf::section::section_data(&s)
                    .map_err(|e| ModuleError::new(path, format!("{}: {e}", id.name())))?;
                Ok((data, relocations(obj, &s, &base_of, path)?))
            }
            None => Ok((Cow::Borrowed(&[][..]), Relocations::default())),
        }
    };
    let sections = gimli::DwarfSections::load(load)?;
    let dwarf = sections.borrow(|(data, rel)| {
        gimli::RelocateReader::new(gimli::EndianSlice::new(data, endian), rel)
    });
    let mut exec: Vec<(u64, u64)> = info
        .sections
        .iter()
        .zip(bases)
        .map(|(s, &b)| (b, b + s.size))
        .collect();
    exec.sort_unstable();
    let symtab = SymbolTable::from_symbols(
        info.symbols
            .iter()
            .map(|s| (bases[s.section] + s.value, s.size, s.name.clone()))
            .collect(),
    );
    let (table, _, _) = table_from_dwarf(dwarf, &exec, &symtab, OuterName::Dwarf)
        .map_err(|e| ModuleError::new(path, format!("DWARF: {e}")))?;
    Ok(table)
}

/// One table over module space from each module's table and the start
/// its local addresses are shifted by (ascending, their ranges apart):
/// strings and files interned across modules, nodes appended (node 0,
/// "none", shared), rows shifted. A module's end row (file 0, node 0)
/// covers the gap up to the next module.
pub fn merge_tables(tables: Vec<(u64, SourceTable)>) -> SourceTable {
    let mut strings = Interner::default();
    let mut files: HashMap<(u32, u32), u32> = HashMap::new();
    let mut out = SourceTable {
        rows: Vec::new(),
        nodes: vec![InlineNode::default()],
        files: vec![(0, 0)],
        strings: Vec::new(),
    };
    for (shift, t) in tables {
        let smap: Vec<u32> = t.strings.iter().map(|s| strings.id(s)).collect();
        let fmap: Vec<u32> = t
            .files
            .iter()
            .enumerate()
            .map(|(i, &(d, b))| {
                if i == 0 {
                    return 0;
                }
                let key = (smap[d as usize], smap[b as usize]);
                let next = out.files.len() as u32;
                *files.entry(key).or_insert_with(|| {
                    out.files.push(key);
                    next
                })
            })
            .collect();
        // Node i ≥ 1 of this table becomes node `first + i - 1`.
        let first = out.nodes.len() as u32;
        let node = |n: u32| if n == 0 { 0 } else { first + n - 1 };
        for n in t.nodes.iter().skip(1) {
            out.nodes.push(InlineNode {
                parent: node(n.parent),
                name: smap[n.name as usize],
                call_file: fmap[n.call_file as usize],
                call_line: n.call_line,
                call_column: n.call_column,
            });
        }
        for r in t.rows {
            let row = LineRow {
                address: r.address + shift,
                file: fmap[r.file as usize],
                node: node(r.node),
                ..r
            };
            let same = |p: &LineRow| {
                (p.file, p.line, p.column, p.node, p.discriminator)
                    == (row.file, row.line, row.column, row.node, row.discriminator)
            };
            if out.rows.last().is_some_and(same) {
                continue;
            }
            out.rows.push(row);
        }
    }
    out.strings = strings.strings;
    out
}
