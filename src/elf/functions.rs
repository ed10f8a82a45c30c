//! A user-space binary's function symbols (a program, a shared library;
//! vmlinux and modules read the same way), straight from its ELF symbol
//! table with their sizes: what `ksym-pack --elf` packs. Unlike the `nm`
//! text path kept for kernels, it keeps what a profiler's frames land in
//! and what symbolizers print:
//! - `.symtab`, else the separate debug file's (build-id, debuglink:
//!   [`super::debugfile`]), else `.dynsym` (exported names only);
//! - defined `STT_FUNC` and `STT_GNU_IFUNC` symbols, weak ones included,
//!   and untyped global labels, in executable sections (ELF spec "Symbol
//!   Table"); untyped local labels only outside every sized function
//!   (ld.so's `_dl_start_user`, which perf names too), so that a label
//!   inside a function never takes its name;
//! - x86-64 PLT stubs as `NAME@plt` ([`super::plt`]), as perf and objdump
//!   name them;
//! - each with its `st_size` (FORMAT.md §10.7): the padding after a
//!   function is a gap, not that function;
//! - names without their symbol version (`memcpy@GLIBC_2.2.5` →
//!   `memcpy`), Rust names demangled as `ksym-filter` does, C++ names as
//!   perf and c++filt print them (feature `cpp-demangle`);
//! - of the aliases at one address, first the one perf and llvm-symbolizer
//!   print: one with a size before one without, global before weak before
//!   local, glibc's hidden `__GI_` aliases last, fewer leading underscores
//!   first (perf's `choose_best_symbol`), then the longer name.

use std::path::{Path, PathBuf};

use object::{Object, ObjectSection, ObjectSymbol, ObjectSymbolTable, SymbolSection};

use super::debugfile::{self, DebugDirs};
use super::file::ElfFile;
use crate::blob::list::SymbolList;
use crate::blob::v2::read::LoadSegment;

/// Which table the symbols came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Table {
    /// The file's own `.symtab`.
    Symtab,
    /// The `.symtab` of its separate debug file.
    DebugSymtab,
    /// `.dynsym`: a stripped file whose debug file was not found.
    Dynsym,
}

impl Table {
    /// How `ksym-pack -v` names it.
    pub fn describe(self) -> &'static str {
        match self {
            Table::Symtab => ".symtab",
            Table::DebugSymtab => "the debug file's .symtab",
            Table::Dynsym => ".dynsym (no debug file found)",
        }
    }
}

/// The function symbols of a binary, and where they came from.
#[derive(Debug)]
pub struct Functions {
    /// In address order, preferred alias first, each with its size.
    pub list: SymbolList,
    /// The table read.
    pub table: Table,
    /// The file the table was read from (the binary or its debug file).
    pub file: PathBuf,
    /// The binary's `PT_LOAD` program headers (FORMAT.md §10.8).
    pub segments: Vec<LoadSegment>,
    /// The symbol names demangled for the list, by symbol index: the
    /// DWARF sweep names frames from the same symbol table.
    pub demangled: DemangledNames,
}

/// The names [`function_symbols`] demangled, by their index in the
/// `.symtab` of `file`, so that the DWARF sweep, which names frames from
/// that table (`symtab.rs`), does not demangle them again (a C++
/// demangling costs about a microsecond). Only names without a symbol
/// version, which demangle alike in both.
#[derive(Debug, Default)]
pub struct DemangledNames {
    /// The file whose `.symtab` was read, canonical; `None` when the names
    /// came from elsewhere (`.dynsym`).
    pub(crate) file: Option<PathBuf>,
    /// (symbol index, demangled name), ascending indices.
    pub(crate) names: Vec<(u32, Vec<u8>)>,
}

impl DemangledNames {
    /// The demangled name of symbol `index` of `file`'s `.symtab` (a
    /// canonical path), if it was demangled.
    pub(crate) fn get(&self, file: &Path, index: u32) -> Option<&[u8]> {
        if self.file.as_deref() != Some(file) {
            return None;
        }
        let i = self.names.binary_search_by_key(&index, |n| n.0).ok()?;
        Some(&self.names[i].1)
    }
}

/// [`DemangledNames`] handed from the thread that reads the symbols to
/// the one that reads the DWARF, once read.
pub type SharedDemangled = std::sync::Arc<std::sync::OnceLock<DemangledNames>>;

/// One symbol before ordering: address, size, type letter, name, and its
/// rank among aliases (smaller first).
struct Candidate {
    addr: u64,
    size: u64,
    /// The end of the symbol's section: a symbol without a size (an
    /// assembly label) ends there at the latest.
    section_end: u64,
    kind: u8,
    name: Vec<u8>,
    rank: (bool, u8, u8, std::cmp::Reverse<usize>),
    index: usize,
    /// `name` is `raw` demangled, and `raw` had no symbol version.
    demangled: bool,
    /// An untyped local label: kept only in a gap between functions.
    local_label: bool,
}

/// The function symbols of the ELF file at `path` (see the module
/// documentation for which, and in which order).
///
/// Errors: the file cannot be read or is not ELF (the message names it),
/// it has no symbol table at all, or a name the list refuses.
pub fn function_symbols(path: &Path, dirs: &DebugDirs) -> Result<Functions, String> {
    let (file, from_debug) = debugfile::with_section(path, ".symtab", dirs);
    // Read what the tables need, not the whole file (a vmlinux's DWARF).
    let cache = ElfFile::open(&file).map_err(|e| format!("{}: {e}", file.display()))?;
    let obj = cache
        .parse()
        .map_err(|e| format!("{}: not an ELF file: {e}", file.display()))?;
    // The load segments and PLT stubs are the binary's own (a debug
    // file's PLT is SHT_NOBITS): read from it when the symbols were not.
    let (segments, plt) = if from_debug {
        let binary = ElfFile::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let bin = binary
            .parse()
            .map_err(|e| format!("{}: not an ELF file: {e}", path.display()))?;
        (segments_of(&bin), super::plt::plt_stubs(&bin))
    } else {
        (segments_of(&obj), super::plt::plt_stubs(&obj))
    };
    let (list, table, mut demangled) = functions_of(&obj, from_debug, path, &file, plt)?;
    drop(obj);
    crate::reclaim::drop_later(cache);
    demangled.file = (table != Table::Dynsym)
        .then(|| std::fs::canonicalize(&file).ok())
        .flatten();
    Ok(Functions {
        list,
        table,
        file,
        segments,
        demangled,
    })
}

/// The function symbols of a parsed ELF file `obj` (`from_debug`: it is
/// `binary`'s separate debug file, named `file`) and the binary's PLT
/// stubs `plt` ([`super::plt`]), with the table the symbols came from and
/// the names demangled, by symbol index ([`DemangledNames`], its file not
/// yet set).
fn functions_of<'d, R: object::ReadRef<'d>>(
    obj: &object::File<'d, R>,
    from_debug: bool,
    binary: &Path,
    file: &Path,
    plt: Vec<(u64, u64, Vec<u8>)>,
) -> Result<(SymbolList, Table, DemangledNames), String> {
    // The executable sections are the binary's; a debug file keeps their
    // headers (as NOBITS) with the same flags.
    let (mut syms, table) = match (obj.symbol_table(), from_debug) {
        (Some(t), false) => (collect(obj, t.symbols()), Table::Symtab),
        (Some(t), true) => (collect(obj, t.symbols()), Table::DebugSymtab),
        (None, _) => match obj.dynamic_symbol_table() {
            Some(t) => (collect(obj, t.symbols()), Table::Dynsym),
            None => {
                return Err(format!(
                    "{}: no .symtab or .dynsym, and no debug file with one (give --debug-dir)",
                    binary.display()
                ));
            }
        },
    };
    // A stub's name comes after any symbol at its address (none, usually).
    syms.extend(plt.into_iter().map(|(addr, size, name)| Candidate {
        addr,
        size,
        section_end: addr.saturating_add(size),
        kind: b't',
        rank: (false, 3, 0, std::cmp::Reverse(0)),
        index: usize::MAX,
        demangled: false,
        local_label: false,
        name,
    }));
    // Every demangling by its symbol's index, before aliases that demangle
    // alike (C1 and C2 constructors) become one: the sweep may name a
    // frame by either (`symtab.rs` takes the last in table order).
    let mut names: Vec<(u32, Vec<u8>)> = syms
        .iter()
        .filter(|s| s.demangled)
        .filter_map(|s| Some((u32::try_from(s.index).ok()?, s.name.clone())))
        .collect();
    names.sort_unstable_by_key(|n| n.0);
    // One entry per (address, name), the best ranked: a name listed twice
    // (a versioned and an unversioned spelling) is one symbol.
    syms.sort_by(|a, b| {
        (a.addr, &a.name, a.rank, a.index).cmp(&(b.addr, &b.name, b.rank, b.index))
    });
    syms.dedup_by(|b, a| a.addr == b.addr && a.name == b.name);
    syms.sort_by_key(|a| (a.addr, a.rank, a.index));
    // Sized symbols come first at an address, so a label at or inside a
    // function sees its end.
    let mut covered = 0u64;
    syms.retain(|s| {
        let keep = !s.local_label || s.addr >= covered;
        covered = covered.max(s.addr.saturating_add(s.size));
        keep
    });
    // A symbol without a size ends at the next function or at its
    // section's end, whichever comes first: never past its section (the
    // kernel rule's 1 MiB is for kernels, whose text is one section).
    for i in 0..syms.len() {
        if syms[i].size == 0 {
            let next = syms[i + 1..]
                .iter()
                .map(|n| n.addr)
                .find(|&a| a > syms[i].addr)
                .unwrap_or(u64::MAX);
            syms[i].size = next.min(syms[i].section_end).saturating_sub(syms[i].addr);
        }
    }
    let mut list = SymbolList::new();
    for s in &syms {
        // A name past what a name record holds (FORMAT.md §3.2; a C++
        // template's demangling can be) names nothing: its addresses, still
        // a bound for the sizes above, stay unknown or go to an alias.
        if s.name.len() > crate::blob::v1::layout::MAX_PAYLOAD_LEN {
            continue;
        }
        list.push(s.addr, s.kind, &s.name)
            .map_err(|e| format!("{}: {e}", file.display()))?;
        list.set_last_size(s.size);
    }
    Ok((list, table, DemangledNames { file: None, names }))
}

/// [`function_symbols`] of an ELF image in memory, named `name` in
/// errors, without looking for a debug file (fuzzing, tests).
///
/// Errors: as [`function_symbols`].
pub fn functions_from_bytes(data: &[u8], name: &Path) -> Result<Functions, String> {
    let obj = object::File::parse(data)
        .map_err(|e| format!("{}: not an ELF file: {e}", name.display()))?;
    let (list, table, _) = functions_of(&obj, false, name, name, super::plt::plt_stubs(&obj))?;
    Ok(Functions {
        list,
        table,
        file: name.to_path_buf(),
        segments: segments_of(&obj),
        demangled: DemangledNames::default(),
    })
}

/// The executable `PT_LOAD` program headers (`PF_X`) of a parsed ELF
/// file (ELF spec, "Program Header"), in file order: the only segments
/// a function, hence a frame, can lie in (FORMAT.md §10.8). The others
/// (read-only data, data) would cost the blob 40 bytes each and map no
/// lookup.
fn segments_of<'d, R: object::ReadRef<'d>>(obj: &object::File<'d, R>) -> Vec<LoadSegment> {
    use object::ObjectSegment;
    // object's ELF segments are the PT_LOAD entries, in file order.
    obj.segments()
        .map(|g| {
            let (offset, filesz) = g.file_range();
            LoadSegment {
                vaddr: g.address(),
                offset,
                filesz,
                memsz: g.size(),
                flags: match g.flags() {
                    object::SegmentFlags::Elf { p_flags } => p_flags,
                    _ => 0,
                },
            }
        })
        .filter(|s| s.flags & object::elf::PF_X != 0)
        .collect()
}

fn collect<'d, 'f, R: object::ReadRef<'d>>(
    obj: &'f object::File<'d, R>,
    symbols: impl Iterator<Item = object::Symbol<'d, 'f, R>>,
) -> Vec<Candidate> {
    let exec = u64::from(object::elf::SHF_EXECINSTR);
    let mut out = Vec::new();
    for s in symbols {
        // Its index in the table: table order among aliases, and the key
        // the DWARF sweep finds its demangling by.
        let index = s.index().0;
        let SymbolSection::Section(sec) = s.section() else {
            continue;
        };
        let Ok(sec) = obj.section_by_index(sec) else {
            continue;
        };
        let in_code =
            matches!(sec.flags(), object::SectionFlags::Elf { sh_flags } if sh_flags & exec != 0);
        let section_end = sec.address().saturating_add(sec.size());
        let object::SymbolFlags::Elf { st_info, .. } = s.flags() else {
            continue;
        };
        let st_type = st_info & 0xf;
        let typed = st_type == object::elf::STT_FUNC || st_type == object::elf::STT_GNU_IFUNC;
        // Untyped labels: assembly entry points, and jump targets inside
        // functions (those locals are dropped later); hidden ones are
        // internal, as perf judges them.
        let object::SymbolFlags::Elf { st_other, .. } = s.flags() else {
            continue;
        };
        let hidden = matches!(
            st_other & 3,
            object::elf::STV_HIDDEN | object::elf::STV_INTERNAL
        );
        let label = st_type == object::elf::STT_NOTYPE && !(s.is_local() && hidden);
        if !in_code || !(typed || label) {
            continue;
        }
        let Ok(full) = s.name_bytes() else { continue };
        // `name@VERSION` and `name@@VERSION` (.symver): the name alone.
        let raw = full.split(|&b| b == b'@').next().unwrap_or(full);
        if raw.is_empty() || crate::text::nm::is_mapping_or_local_label(raw) {
            continue;
        }
        let name = demangled(raw);
        let demangled = raw.len() == full.len() && name != raw;
        let binding = if s.is_weak() {
            1
        } else if s.is_global() {
            0
        } else {
            2
        };
        let kind = match binding {
            0 => b'T',
            1 => b'W',
            _ => b't',
        };
        out.push(Candidate {
            addr: s.address(),
            size: s.size(),
            section_end,
            kind,
            rank: (
                s.size() == 0,
                binding,
                internal_tier(raw),
                std::cmp::Reverse(raw.len()),
            ),
            name,
            index,
            demangled,
            local_label: label && s.is_local(),
        });
    }
    out
}

/// `raw` demangled: a Rust name as `ksym-filter` does it, else an Itanium
/// C++ name (`_Z…`, feature `cpp-demangle`: [`super::cxx`]) as perf and
/// c++filt print it, parameters included; else `raw`.
pub(crate) fn demangled(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    if demangle_into(raw, &mut out) {
        out
    } else {
        raw.to_vec()
    }
}

/// Appends `raw` demangled (as [`demangled`] does) to `out`; false, with
/// `out` as it was, when `raw` is neither a Rust nor a C++ name.
pub(crate) fn demangle_into(raw: &[u8], out: &mut Vec<u8>) -> bool {
    if crate::text::demangle::demangle_rust(raw, out) {
        return true;
    }
    #[cfg(feature = "cpp-demangle")]
    if let Some(text) = super::cxx::demangle(raw) {
        out.extend_from_slice(&text);
        return true;
    }
    false
}

/// How internal a spelling looks, smaller first: glibc's hidden aliases
/// (`__GI_getenv`) last, else the number of leading underscores, as perf
/// counts them (`getenv` 0, `__libc_malloc` 2).
fn internal_tier(name: &[u8]) -> u8 {
    if name.starts_with(b"__GI_") {
        return u8::MAX;
    }
    name.iter().take_while(|&&b| b == b'_').count().min(254) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_spellings_lose_to_public_ones() {
        assert!(internal_tier(b"getenv") < internal_tier(b"_IO_getenv"));
        assert!(internal_tier(b"__printf_fp_l") < internal_tier(b"__GI___printf_fp_l"));
        assert!(
            internal_tier(b"____strtod_l_internal") < internal_tier(b"__GI_____strtod_l_internal")
        );
    }
}
