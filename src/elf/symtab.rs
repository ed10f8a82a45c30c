//! The ELF symbol table as llvm-symbolizer reads it, for naming the
//! outermost frame of a source table's rows (docs/FORMAT.md §15, "The
//! outermost function's name"): which symbol covers an address, and its
//! name demangled as frames are.

use std::path::PathBuf;

use super::functions::SharedDemangled;
use super::intern::Interner;

/// A symbol: (address, size, name).
type Symbol = (u64, u64, Vec<u8>);

/// The ELF symbol table as llvm-symbolizer reads it
/// (`SymbolizableObjectFile`, LLVM 14): function, data and untyped symbols
/// (STT_FUNC, STT_GNU_IFUNC, STT_OBJECT, STT_NOTYPE: assembly entry points
/// are untyped) defined in a section, sorted by address then size, one per address (the largest
/// size; among equal sizes the last in table order).
pub(crate) struct SymbolTable {
    /// (address, size, name), ascending addresses.
    pub(super) syms: Vec<Symbol>,
    /// Each symbol's index in the ELF symbol table.
    index: Vec<u32>,
    /// The names are as the symbol table spells them, demangled when a
    /// frame is named by one: most symbols (data, and functions of no
    /// boundary) never are, and a C++ demangling costs microseconds.
    mangled: bool,
    /// The demanglings the symbol list made of this file's `.symtab`
    /// (canonical path), once it has: taken instead of demangling again.
    shared: Option<(PathBuf, SharedDemangled)>,
}

impl SymbolTable {
    /// The table of `syms` (address, size, name) in symbol-table order:
    /// sorted by address then size, one per address (the largest size;
    /// among equal sizes the last in table order).
    pub(crate) fn from_symbols(syms: Vec<Symbol>) -> Self {
        let n = syms.len() as u32;
        Self::indexed(syms.into_iter().zip(0..n).collect())
    }

    /// [`SymbolTable::from_symbols`] of `(symbol, index in the ELF symbol
    /// table)` in table order.
    fn indexed(mut syms: Vec<(Symbol, u32)>) -> Self {
        syms.sort_by_key(|s| (s.0.0, s.0.1)); // stable: table order among equals
        let mut out: Vec<(Symbol, u32)> = Vec::with_capacity(syms.len());
        for s in syms {
            match out.last_mut() {
                Some(l) if l.0.0 == s.0.0 => *l = s,
                _ => out.push(s),
            }
        }
        let (syms, index) = out.into_iter().unzip();
        SymbolTable {
            syms,
            index,
            mangled: false,
            shared: None,
        }
    }
}

/// The symbol table of `obj` as llvm-symbolizer reads it, its names
/// demangled when a frame is named, or taken from `shared` once the symbol
/// list has demangled them, if it read the `.symtab` of `file` (canonical).
pub(super) fn llvm_symtab<'d, R: object::ReadRef<'d>>(
    obj: &object::File<'d, R>,
    shared: Option<(PathBuf, SharedDemangled)>,
) -> SymbolTable {
    use object::{Object, ObjectSymbol, SymbolFlags, SymbolSection, elf};
    let syms: Vec<(Symbol, u32)> = obj
        .symbols()
        .filter(|s| match s.flags() {
            SymbolFlags::Elf { st_info, .. } => matches!(
                st_info & 0xF,
                elf::STT_NOTYPE | elf::STT_OBJECT | elf::STT_FUNC | elf::STT_GNU_IFUNC
            ),
            _ => false,
        })
        .filter(|s| matches!(s.section(), SymbolSection::Section(_)))
        .filter_map(|s| {
            let sym = (s.address(), s.size(), s.name_bytes().ok()?.to_vec());
            Some((sym, u32::try_from(s.index().0).unwrap_or(u32::MAX)))
        })
        .collect();
    SymbolTable {
        mangled: true,
        shared,
        ..SymbolTable::indexed(syms)
    }
}

impl SymbolTable {
    /// llvm-symbolizer's `getNameFromSymbolTable`: the last symbol at or
    /// below `addr`, unless it has a size that ends at or before `addr`.
    /// For ascending addresses: `cursor` (0 at first) counts the symbols
    /// at or below the last address asked for. The symbol's index.
    pub(super) fn symbol_at(&self, cursor: &mut usize, addr: u64) -> Option<usize> {
        while *cursor < self.syms.len() && self.syms[*cursor].0 <= addr {
            *cursor += 1;
        }
        let i = cursor.checked_sub(1)?;
        let (a, size, _) = &self.syms[i];
        // A forged size may reach past the address space: it covers to its end.
        (*size == 0 || a.saturating_add(*size) > addr).then_some(i)
    }

    /// Symbol `i`'s name, demangled as frames are, interned in `strings`
    /// (`scratch` holds the demangling).
    pub(super) fn name_id(&self, i: usize, strings: &mut Interner, scratch: &mut Vec<u8>) -> u32 {
        let raw = &self.syms[i].2;
        if !self.mangled {
            return strings.id(raw);
        }
        let done = (self.shared.as_ref()).and_then(|(file, s)| s.get()?.get(file, self.index[i]));
        match done {
            Some(name) => strings.id(name),
            None => strings.id_demangled(raw, scratch),
        }
    }
}
