//! Relocating a module's DWARF with the module-space layout: gimli reads
//! each debug section through a [`RelocateReader`](gimli::RelocateReader)
//! that asks [`Relocations`] for the value to use at each relocated
//! offset. addr2line's own loader either applies none (0.25) or places
//! every section at 0 (0.26), so functions of `.text` and `.text.unlikely`
//! would collide; here each executable section has its own base
//! (docs/FORMAT.md §16.2).

use std::path::Path;

use object::{Object, ObjectSection, ObjectSymbol, RelocationTarget, SectionIndex};

use super::ModuleError;

/// The relocated values of one debug section, by offset in the section.
#[derive(Debug, Default)]
pub struct Relocations {
    /// (offset, value = S + A), ascending offsets.
    at: Vec<(usize, u64)>,
}

impl Relocations {
    fn get(&self, offset: usize) -> Option<u64> {
        self.at
            .binary_search_by_key(&offset, |e| e.0)
            .ok()
            .map(|i| self.at[i].1)
    }

    /// Number of relocations.
    pub fn len(&self) -> usize {
        self.at.len()
    }

    /// True when the section has none.
    pub fn is_empty(&self) -> bool {
        self.at.is_empty()
    }
}

impl gimli::Relocate<usize> for &Relocations {
    fn relocate_address(&self, offset: usize, value: u64) -> gimli::Result<u64> {
        Ok(self.get(offset).unwrap_or(value))
    }

    fn relocate_offset(&self, offset: usize, value: usize) -> gimli::Result<usize> {
        match self.get(offset) {
            Some(v) => usize::try_from(v).map_err(|_| gimli::Error::UnsupportedOffset),
            None => Ok(value),
        }
    }
}

/// How a relocation type computes its value, for the types modules use in
/// debug sections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// S + A, written as 64 bits.
    Abs64,
    /// S + A, written as 32 bits (offsets into other debug sections).
    Abs32,
}

/// The relocation types of x86-64 and arm64 modules' debug sections.
fn kind(machine: u16, r_type: u32) -> Option<Kind> {
    use object::elf;
    match (machine, r_type) {
        (elf::EM_X86_64, elf::R_X86_64_64) => Some(Kind::Abs64),
        (elf::EM_X86_64, elf::R_X86_64_32 | elf::R_X86_64_32S) => Some(Kind::Abs32),
        (elf::EM_AARCH64, elf::R_AARCH64_ABS64) => Some(Kind::Abs64),
        (elf::EM_AARCH64, elf::R_AARCH64_ABS32) => Some(Kind::Abs32),
        _ => None,
    }
}

/// The relocations of `section` (a debug section of `obj`), with symbols in
/// executable sections at `base(section index)` plus their value and every
/// other symbol at its value (offsets into other debug sections).
///
/// Errors: a relocation type outside those modules use in debug sections
/// (the message names the module and the type), or a target the ELF file
/// does not hold.
pub fn relocations(
    obj: &object::File<'_>,
    section: &object::Section<'_, '_>,
    base: &dyn Fn(SectionIndex) -> Option<u64>,
    path: &Path,
) -> Result<Relocations, ModuleError> {
    let machine = match obj {
        object::File::Elf64(f) => f.elf_header().e_machine.get(f.endian()),
        object::File::Elf32(f) => f.elf_header().e_machine.get(f.endian()),
        _ => 0,
    };
    let sname = section.name().unwrap_or("?");
    let mut at = Vec::new();
    for (offset, r) in section.relocations() {
        let object::RelocationFlags::Elf { r_type } = r.flags() else {
            continue;
        };
        let Some(k) = kind(machine, r_type) else {
            return Err(ModuleError::new(
                path,
                format!(
                    "relocation type {r_type} (ELF machine {machine}) in {sname} at offset {offset:#x}: not one that modules use in debug sections"
                ),
            ));
        };
        let s = match r.target() {
            RelocationTarget::Symbol(si) => {
                let sym = obj
                    .symbol_by_index(si)
                    .map_err(|e| ModuleError::new(path, format!("{sname} at {offset:#x}: {e}")))?;
                let sec_base = match sym.section_index() {
                    Some(i) => base(i).unwrap_or(0),
                    None => 0,
                };
                sec_base.wrapping_add(sym.address())
            }
            RelocationTarget::Section(i) => base(i).unwrap_or(0),
            RelocationTarget::Absolute => 0,
            _ => {
                return Err(ModuleError::new(
                    path,
                    format!("{sname} at {offset:#x}: relocation target of an unknown kind"),
                ));
            }
        };
        let mut v = s.wrapping_add(r.addend() as u64);
        if k == Kind::Abs32 {
            v &= 0xFFFF_FFFF;
        }
        // Past what usize indexes (a 32-bit host) is past the section's end,
        // where no read ever looks: dropped, as a 64-bit host never uses it.
        if let Ok(offset) = usize::try_from(offset) {
            at.push((offset, v));
        }
    }
    at.sort_unstable_by_key(|e| e.0);
    Ok(Relocations { at })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relocation_kinds_of_debug_sections() {
        use object::elf;
        assert_eq!(kind(elf::EM_X86_64, elf::R_X86_64_64), Some(Kind::Abs64));
        assert_eq!(kind(elf::EM_X86_64, elf::R_X86_64_32), Some(Kind::Abs32));
        assert_eq!(
            kind(elf::EM_AARCH64, elf::R_AARCH64_ABS64),
            Some(Kind::Abs64)
        );
        assert_eq!(kind(elf::EM_X86_64, elf::R_X86_64_PC32), None);
        assert_eq!(kind(elf::EM_RISCV, 1), None);
    }
}
