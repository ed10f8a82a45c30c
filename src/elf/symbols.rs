//! A kernel's symbol list read straight from its ELF symbol table: what
//! `nm -n ELF | ksym-filter` prints (`ksym-pack --debuginfod`, which has
//! the ELF file but no `nm` output). Text symbols are those `nm` marks
//! `T` or `t` (defined, not weak, in an executable section), plus the four
//! text bounds whatever their type (FORMAT.md §10.6); Rust names are
//! demangled as `ksym-filter` does. Also the end of an image's text
//! ([`text_end`]), for a kernel linked without a linker script and so
//! without `_etext`.

use std::path::Path;

use object::{Object, ObjectSection, ObjectSymbol, SymbolSection};

use super::file::ElfFile;
use crate::blob::list::{PackError, SymbolList};
use crate::kernel::BOUND_NAMES;

/// The text symbols of the ELF file at `path`, in address order (ties by
/// name, then table order).
///
/// Errors: the file cannot be read or is not ELF (the message names it),
/// or a symbol the list refuses.
pub fn text_symbols(path: &Path) -> Result<SymbolList, String> {
    let cache = ElfFile::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let obj = cache
        .parse()
        .map_err(|e| format!("{}: not an ELF file: {e}", path.display()))?;
    let mut syms: Vec<(u64, u8, Vec<u8>)> = Vec::new();
    for s in obj.symbols() {
        let Ok(name) = s.name_bytes() else { continue };
        if name.is_empty() {
            continue;
        }
        let bound = BOUND_NAMES.contains(&name);
        let code = match s.section() {
            SymbolSection::Section(i) => {
                obj.section_by_index(i).is_ok_and(|sec| match sec.flags() {
                    object::SectionFlags::Elf { sh_flags } => {
                        sh_flags & u64::from(object::elf::SHF_EXECINSTR) != 0
                    }
                    _ => false,
                })
            }
            _ => false,
        };
        let kind_ok = !matches!(
            s.kind(),
            object::SymbolKind::Section | object::SymbolKind::File
        );
        let text = code && kind_ok && !s.is_weak() && s.is_definition();
        if !text && !bound {
            continue;
        }
        let ty = if text {
            if s.is_global() { b'T' } else { b't' }
        } else if s.is_global() {
            b'D'
        } else {
            b'd'
        };
        let name = crate::text::demangle::rust_demangled_or_raw(name);
        syms.push((s.address(), ty, name));
    }
    syms.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.2.cmp(&b.2)));
    let mut list = SymbolList::new();
    for (a, t, n) in syms {
        list.push(a, t, &n)
            .map_err(|e: PackError| format!("{}: {e}", path.display()))?;
    }
    Ok(list)
}

/// The end of text of the ELF file at `path`: the highest end address
/// (`sh_addr + sh_size`) of its allocated, executable sections
/// (`SHF_ALLOC | SHF_EXECINSTR`, ELF spec "Sections"), or `None` when it
/// has none. What `ksym-pack` records as `_etext` when the symbol list has
/// no such symbol (rust-lld's default layout defines none), so that an
/// address above the kernel's code has no symbol (FORMAT.md §5.2).
///
/// Errors: the file cannot be read or is not ELF (the caller names it).
pub fn text_end(path: &Path) -> Result<Option<u64>, String> {
    let cache = ElfFile::open(path).map_err(|e| e.to_string())?;
    let obj = cache
        .parse()
        .map_err(|e| format!("not an ELF image this tool reads: {e}"))?;
    let exec = u64::from(object::elf::SHF_ALLOC | object::elf::SHF_EXECINSTR);
    Ok(obj
        .sections()
        .filter(|s| {
            matches!(s.flags(), object::SectionFlags::Elf { sh_flags } if sh_flags & exec == exec)
        })
        .map(|s| s.address().saturating_add(s.size()))
        .max())
}
