//! The sweep: a source table built by asking for the frames (addr2line's,
//! or the same from `super::frames`' model) at each boundary (where the
//! frames may change, found by `dwarf.rs`), each frame's names, files and
//! inline nodes interned as they come, the outermost frame named from the
//! symbol table ([`super::symtab`]) as llvm-symbolizer names it
//! (docs/FORMAT.md §15).
//!
//! Most boundaries are line rows inside one function (nine in ten on libc
//! and libstdc++, four in ten on a Rust binary): there only the innermost
//! frame's location can change, so the sweep asks for that location alone and keeps the inline chain it had, unless an edge (a
//! function's, a symbol's, a line sequence's, a unit's start or end) lies
//! between (docs/lines-and-modules.md).

use std::borrow::Cow;

use super::frames::FrameSource;
use super::intern::{Interner, Map, Swept};
use super::symtab::SymbolTable;
use crate::blob::v2::source_lines::write::{InlineNode, LineRow, SourceTable};

/// The split DWARF of a skeleton unit (DWO id, the skeleton's file), with
/// [`gimli::Dwarf::make_dwo`] done; `None` where it was not found (see
/// [`super::split`]).
pub(super) type SplitOf<'f, R> =
    &'f (dyn Fn(gimli::DwoId, &gimli::Dwarf<R>) -> Option<gimli::Dwarf<R>> + Sync);

/// Whether `a` lies in one of the sorted ranges `exec`.
pub(super) fn in_exec(exec: &[(u64, u64)], a: u64) -> bool {
    let i = exec.partition_point(|&(s, _)| s <= a);
    i > 0 && a < exec[i - 1].1
}

/// Where the outermost frame's name comes from (docs/FORMAT.md §15, §16.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OuterName {
    /// The ELF symbol table first, as llvm-symbolizer names it (vmlinux).
    SymbolTable,
    /// DWARF first, the symbol table where DWARF has no function, as
    /// elfutils' `eu-addr2line` names it (modules, whose `init_module` and
    /// `cleanup_module` aliases would otherwise name every init function).
    Dwarf,
}

/// A frame's DWARF function name as a string id: demangled and interned
/// once per `.debug_str` place (`name_at`); "" for a function DIE without
/// a name, `u32::MAX` for a location without a function DIE.
fn dwarf_name<R: gimli::Reader>(
    function: Option<R>,
    has_die: bool,
    strings: &mut Interner,
    name_at: &mut Map<(usize, usize), u32>,
    scratch: &mut Vec<u8>,
) -> Result<u32, gimli::Error> {
    let Some(n) = function else {
        return Ok(if has_die { strings.id(b"") } else { u32::MAX });
    };
    // The bytes, not addr2line's `raw_name` (which checks UTF-8 on every
    // frame): names are bytes in the blob.
    let raw = n.to_slice()?;
    // A name borrowed from .debug_str is the same bytes at the same place
    // for every frame of its function.
    let at = match &raw {
        Cow::Borrowed(s) => Some((s.as_ptr() as usize, s.len())),
        Cow::Owned(_) => None,
    };
    if let Some(&id) = at.and_then(|k| name_at.get(&k)) {
        return Ok(id);
    }
    let id = strings.id_demangled(&raw, scratch);
    if let Some(k) = at {
        name_at.insert(k, id);
    }
    Ok(id)
}

/// What a [`sweep`] reads beside `addr2line`'s answers.
pub(super) struct Sweep<'a> {
    /// The executable ranges, sorted `(start, end)`.
    pub exec: &'a [(u64, u64)],
    /// The sorted addresses where more than the innermost frame's location
    /// may change (`dwarf::Boundaries::edges`).
    pub edges: &'a [u64],
    /// The symbols that name outermost frames.
    pub symtab: &'a SymbolTable,
    /// The discriminator steps, sorted (address, discriminator).
    pub discriminators: &'a [(u64, u32)],
    /// Where the outermost frame's name comes from.
    pub outer_name: OuterName,
}

/// Builds the table: asks `src` for the frames at each boundary of
/// `bounds` (ascending), or between two of `at.edges` for the innermost
/// location alone.
pub(super) fn sweep<R: gimli::Reader, S: FrameSource<R>>(
    src: &S,
    bounds: &mut dyn Iterator<Item = u64>,
    at: &Sweep<'_>,
) -> Result<Swept, gimli::Error> {
    let Sweep {
        exec,
        edges,
        symtab,
        discriminators,
        outer_name,
    } = *at;
    let mut strings = Interner::default();
    // File paths by the `&str` addr2line returns, split into directory and
    // base name (ids into `strings`); file id 0 means "no file".
    let mut files: Map<String, u32> = Map::default();
    let mut file_list: Vec<(u32, u32)> = vec![(0, 0)];
    let mut nodes: Map<InlineNode, u32> = Map::default();
    let mut node_list: Vec<InlineNode> = vec![InlineNode::default()];
    let mut rows: Vec<LineRow> = Vec::new();
    let mut demangled = Vec::new();
    let mut name_at: Map<(usize, usize), u32> = Map::default();
    // Frames of one address, outermost first: (function, call site).
    let mut chain: Vec<(u32, u32, u32, u32)> = Vec::new();
    let mut frames = Vec::new();

    // addr2line hands out each path from its unit's file table, the same
    // bytes at the same place on every frame: known by that place, a path
    // is not hashed again (on a Rust binary, millions of frames).
    let mut file_at: Map<(usize, usize), u32> = Map::default();
    let mut file_id = |path: Option<&str>, strings: &mut Interner| -> u32 {
        let Some(p) = path else { return 0 };
        let at = (p.as_ptr() as usize, p.len());
        if let Some(&id) = file_at.get(&at) {
            return id;
        }
        let id = match files.get(p) {
            Some(&id) => id,
            None => {
                let (dir, base) = match p.rfind('/') {
                    Some(i) => (&p[..i], &p[i + 1..]),
                    None => ("", p),
                };
                let e = (strings.id(dir.as_bytes()), strings.id(base.as_bytes()));
                let id = file_list.len() as u32;
                file_list.push(e);
                files.insert(p.to_owned(), id);
                id
            }
        };
        file_at.insert(at, id);
        id
    };
    // The previous address's nodes, outermost first: neighbouring
    // addresses share their outer frames, found here without a hash.
    let mut prev_nodes: Vec<(InlineNode, u32)> = Vec::new();
    // Cursors into the sorted discriminator steps and symbols: the
    // boundaries come in ascending order.
    let (mut disc_at, mut sym_at) = (0usize, 0usize);
    // The last symbol named (index, string id): a function's boundaries
    // come together, its name demangled and hashed once for them all.
    let mut last_sym: Option<(usize, u32)> = None;
    // The first edge past the last boundary, and that boundary's row with
    // whether its innermost frame had a location (`None` before the first).
    let mut edge_at = 0usize;
    let mut last: Option<(LineRow, bool)> = None;
    let key = |r: &LineRow| (r.file, r.line, r.column, r.node, r.discriminator);

    'bounds: for addr in bounds {
        let crossed = edge_at < edges.len() && edges[edge_at] <= addr;
        while edge_at < edges.len() && edges[edge_at] <= addr {
            edge_at += 1;
        }
        let (mut row, located) = 'row: {
            if !crossed && let Some((prev, located)) = last {
                // Without a location, the frames are the last boundary's: a
                // row that would only repeat it.
                if !located {
                    continue 'bounds;
                }
                // The unit addr2line answered from is still the first with
                // an answer (no unit's lines start or stop here), so the
                // first unit with a location is it.
                if let Some(l) = src.location(addr)? {
                    let row = LineRow {
                        address: addr,
                        file: file_id(l.file, &mut strings),
                        line: l.line.unwrap_or(0),
                        column: l.column.unwrap_or(0),
                        node: prev.node,
                        discriminator: 0,
                    };
                    break 'row (row, true);
                }
            }
            let mut row = LineRow {
                address: addr,
                ..LineRow::default()
            };
            let mut located = false;
            if !in_exec(exec, addr) {
                break 'row (row, located);
            }
            chain.clear();
            frames.clear();
            src.frames(addr, &mut frames)?;
            let mut innermost: Option<(u32, u32, u32)> = None;
            let mut first = true;
            let mut outer_fn = None;
            for f in frames.drain(..) {
                let (file, line, col) = match &f.location {
                    Some(l) => (
                        file_id(l.file, &mut strings),
                        l.line.unwrap_or(0),
                        l.column.unwrap_or(0),
                    ),
                    None => (0, 0, 0),
                };
                if first {
                    located = f.location.is_some();
                    innermost = Some((file, line, col));
                    first = false;
                } else {
                    // This frame's location is where the previous (inner)
                    // frame was called from.
                    if let Some(last) = chain.last_mut() {
                        (last.1, last.2, last.3) = (file, line, col);
                    }
                }
                // A frame that has an outer one is inlined: its DWARF name
                // is the frame's. The outermost frame's is needed only
                // where the symbol table does not name it (below).
                if let Some((function, has_die)) = outer_fn.take()
                    && let Some(last) = chain.last_mut()
                {
                    last.0 = dwarf_name(
                        function,
                        has_die,
                        &mut strings,
                        &mut name_at,
                        &mut demangled,
                    )?;
                }
                chain.push((u32::MAX, 0, 0, 0));
                outer_fn = Some((f.name, f.has_die));
            }
            if let Some((file, line, col)) = innermost {
                row.file = file;
                row.line = line;
                row.column = col;
            }
            // The outermost frame is named from the symbol table when a
            // symbol covers the address, as llvm-symbolizer does (`foo.cold`,
            // assembly entry points); otherwise by DWARF, or "" (padding
            // between functions). A location without any function is such
            // a frame too.
            let sym_index = symtab.symbol_at(&mut sym_at, addr);
            // A C++ demangling costs microseconds: the outermost frame's
            // DWARF name is not demangled when a symbol names the frame.
            let dwarf_outer = match outer_fn {
                Some((function, has_die))
                    if outer_name == OuterName::Dwarf || sym_index.is_none() =>
                {
                    dwarf_name(
                        function,
                        has_die,
                        &mut strings,
                        &mut name_at,
                        &mut demangled,
                    )?
                }
                _ => u32::MAX,
            };
            let sym = sym_index.map(|i| match last_sym {
                Some((j, id)) if j == i => id,
                _ => {
                    let id = symtab.name_id(i, &mut strings, &mut demangled);
                    last_sym = Some((i, id));
                    id
                }
            });
            if chain.is_empty() && innermost.is_some() {
                chain.push((u32::MAX, 0, 0, 0));
            }
            if let Some(outer) = chain.last_mut() {
                outer.0 = match (sym, dwarf_outer) {
                    (_, d) if outer_name == OuterName::Dwarf && d != u32::MAX => d,
                    (Some(s), _) => s,
                    (None, u32::MAX) => strings.id(b""),
                    (None, d) => d,
                };
            }
            let mut parent = 0u32;
            // chain[i]'s call site (fields 1..3) is in chain[i + 1]: walk
            // outermost first.
            for i in (0..chain.len()).rev() {
                let (name, cf, cl, cc) = chain[i];
                let (cf, cl, cc) = if i + 1 < chain.len() {
                    (cf, cl, cc)
                } else {
                    (0, 0, 0)
                };
                let key = InlineNode {
                    parent,
                    name,
                    call_file: cf,
                    call_line: cl,
                    call_column: cc,
                };
                let depth = chain.len() - 1 - i;
                parent = match prev_nodes.get(depth) {
                    Some(&(k, id)) if k == key => id,
                    _ => {
                        let next = node_list.len() as u32;
                        let id = *nodes.entry(key).or_insert_with(|| {
                            node_list.push(key);
                            next
                        });
                        prev_nodes.truncate(depth);
                        prev_nodes.push((key, id));
                        id
                    }
                };
            }
            row.node = parent;
            (row, located)
        };
        // A row without a file has no discriminator.
        if row.file != 0 {
            while disc_at < discriminators.len() && discriminators[disc_at].0 <= addr {
                disc_at += 1;
            }
            if disc_at > 0 {
                row.discriminator = discriminators[disc_at - 1].1;
            }
        }
        last = Some((row, located));
        if rows.last().is_some_and(|r| key(r) == key(&row)) {
            continue;
        }
        rows.push(row);
    }
    Ok(Swept {
        table: SourceTable {
            rows,
            nodes: node_list,
            files: file_list,
            strings: strings.strings,
        },
        string_ids: strings.ids,
        node_ids: nodes,
    })
}
