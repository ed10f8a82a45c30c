//! One kernel module file: its bytes (decompressed from `.ko.xz`,
//! `.ko.zst` or `.ko.gz`), its name as the kernel prints it, its build-id,
//! its executable sections and its text symbols (docs/FORMAT.md §16.2).

#[cfg(feature = "compressed-modules")]
use std::io::Read;
use std::path::Path;

use object::{Object, ObjectSection, ObjectSymbol, SectionIndex, SymbolSection};

use super::ModuleError;

/// How a module file is compressed, from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// `.ko`
    None,
    /// `.ko.xz` (what `CONFIG_MODULE_COMPRESS_XZ` writes)
    Xz,
    /// `.ko.zst`
    Zstd,
    /// `.ko.gz`
    Gzip,
}

impl Compression {
    /// The compression of a file named `name`, `None` (the outer Option)
    /// when the name is not a module's.
    pub fn of(name: &str) -> Option<Compression> {
        [
            (".ko", Compression::None),
            (".ko.xz", Compression::Xz),
            (".ko.zst", Compression::Zstd),
            (".ko.gz", Compression::Gzip),
        ]
        .into_iter()
        .find(|(ext, _)| name.ends_with(ext) && name.len() > ext.len())
        .map(|(_, c)| c)
    }
}

/// The file's ELF bytes, decompressed as its name says.
///
/// Errors: the file cannot be read, or its data is not what its extension
/// says (truncated or corrupt), naming the file.
pub fn read_bytes(path: &Path) -> Result<Vec<u8>, ModuleError> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let comp = Compression::of(name).unwrap_or(Compression::None);
    let raw = std::fs::read(path).map_err(|e| ModuleError::new(path, e))?;
    let bad = |e: &dyn std::fmt::Display| ModuleError::new(path, format!("{comp:?} data: {e}"));
    Ok(match comp {
        Compression::None => raw,
        #[cfg(feature = "compressed-modules")]
        Compression::Xz => {
            let mut out = Vec::with_capacity(raw.len() * 4);
            lzma_rs::xz_decompress(&mut &raw[..], &mut out).map_err(|e| bad(&e))?;
            out
        }
        #[cfg(feature = "compressed-modules")]
        Compression::Zstd => {
            let mut out = Vec::with_capacity(raw.len() * 4);
            ruzstd::decoding::StreamingDecoder::new(&raw[..])
                .map_err(|e| bad(&e))?
                .read_to_end(&mut out)
                .map_err(|e| bad(&e))?;
            out
        }
        #[cfg(feature = "compressed-modules")]
        Compression::Gzip => {
            let mut out = Vec::with_capacity(raw.len() * 4);
            flate2::read::GzDecoder::new(&raw[..])
                .read_to_end(&mut out)
                .map_err(|e| bad(&e))?;
            out
        }
        #[cfg(not(feature = "compressed-modules"))]
        _ => {
            let _ = (bad, raw);
            return Err(ModuleError::new(
                path,
                format!(
                    "{comp:?} data: this build leaves out compressed modules (cargo feature \
                     `compressed-modules`)"
                ),
            ));
        }
    })
}

/// An executable section of a module (SHF_ALLOC and SHF_EXECINSTR, not
/// empty), before it is placed.
#[derive(Debug, Clone)]
pub struct ExecSection {
    /// ELF section index.
    pub index: SectionIndex,
    /// `.text`, `.text.unlikely`, `.init.text`...
    pub name: Vec<u8>,
    /// Bytes.
    pub size: u64,
    /// `sh_addralign` (at least 1).
    pub align: u64,
}

/// A text symbol of a module: a function, untyped (assembly) or data
/// symbol in an executable section, at `value` bytes from its start;
/// section and file symbols, mapping symbols and local labels are left out.
#[derive(Debug, Clone)]
pub struct TextSymbol {
    /// Position of its section in [`ModuleInfo::sections`].
    pub section: usize,
    /// Offset in the section, in bytes (`st_value` of a relocatable file).
    pub value: u64,
    /// `st_size`, in bytes.
    pub size: u64,
    /// `T` (global), `t` (local), `W` (weak), as `nm` prints them.
    pub symbol_type: u8,
    /// The name, Rust names demangled as `ksym-filter` does.
    pub name: Vec<u8>,
}

/// What a module file says about itself.
#[derive(Debug, Clone)]
pub struct ModuleInfo {
    /// `.modinfo`'s `name=`, else the file name less its extension with
    /// `-` turned into `_`, as the kernel prints it in `[name]`.
    pub name: Vec<u8>,
    /// The GNU build-id note's bytes, empty without one.
    pub build_id: Vec<u8>,
    /// Executable sections in section-header order.
    pub sections: Vec<ExecSection>,
    /// Text symbols in symbol-table order.
    pub symbols: Vec<TextSymbol>,
    /// True when the file has `.debug_info`.
    pub has_dwarf: bool,
}

/// The kernel's name for a module file without `.modinfo` `name=`.
pub fn name_from_path(path: &Path) -> Vec<u8> {
    let f = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let stem = f.find(".ko").map_or(f, |i| &f[..i]);
    stem.replace('-', "_").into_bytes()
}

/// Reads a module's identity, sections and symbols from its parsed ELF.
///
/// Errors: the file is not a relocatable ELF object (a `.ko` always is).
pub fn module_info(obj: &object::File<'_>, path: &Path) -> Result<ModuleInfo, ModuleError> {
    use object::elf;
    if obj.kind() != object::ObjectKind::Relocatable {
        return Err(ModuleError::new(
            path,
            "not a relocatable ELF object (a .ko is ET_REL)",
        ));
    }
    let name = obj
        .section_by_name(".modinfo")
        .and_then(|s| s.data().ok())
        .and_then(|d| {
            d.split(|&b| b == 0)
                .find_map(|kv| kv.strip_prefix(b"name="))
                .filter(|n| !n.is_empty())
                .map(<[u8]>::to_vec)
        })
        .unwrap_or_else(|| name_from_path(path));
    let build_id = obj.build_id().ok().flatten().unwrap_or_default().to_vec();
    let mut sections = Vec::new();
    for s in obj.sections() {
        let object::SectionFlags::Elf { sh_flags } = s.flags() else {
            continue;
        };
        let want = u64::from(elf::SHF_ALLOC | elf::SHF_EXECINSTR);
        if sh_flags & want == want && s.size() > 0 {
            sections.push(ExecSection {
                index: s.index(),
                name: s.name_bytes().unwrap_or_default().to_vec(),
                size: s.size(),
                align: s.align().max(1),
            });
        }
    }
    let mut symbols = Vec::new();
    for sym in obj.symbols() {
        let SymbolSection::Section(si) = sym.section() else {
            continue;
        };
        let Some(section) = sections.iter().position(|s| s.index == si) else {
            continue;
        };
        let object::SymbolFlags::Elf { st_info, .. } = sym.flags() else {
            continue;
        };
        let kind = st_info & 0xF;
        if !matches!(
            kind,
            elf::STT_NOTYPE | elf::STT_FUNC | elf::STT_OBJECT | elf::STT_GNU_IFUNC
        ) {
            continue;
        }
        let Ok(raw) = sym.name_bytes() else { continue };
        // Mapping symbols and local labels: the kernel's kallsyms leaves
        // them out, so do we.
        if raw.is_empty() || crate::text::nm::is_mapping_or_local_label(raw) {
            continue;
        }
        let name = crate::text::demangle::rust_demangled_or_raw(raw);
        let symbol_type = match st_info >> 4 {
            elf::STB_GLOBAL => b'T',
            elf::STB_WEAK => b'W',
            _ => b't',
        };
        symbols.push(TextSymbol {
            section,
            value: sym.address(),
            size: sym.size(),
            symbol_type,
            name,
        });
    }
    Ok(ModuleInfo {
        name,
        build_id,
        sections,
        symbols,
        has_dwarf: obj.section_by_name(".debug_info").is_some(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_compressions_from_paths() {
        assert_eq!(name_from_path(Path::new("/x/nf-nat.ko.zst")), b"nf_nat");
        assert_eq!(name_from_path(Path::new("xfs.ko")), b"xfs");
        assert_eq!(Compression::of("a.ko.xz"), Some(Compression::Xz));
        assert_eq!(Compression::of("a.ko.gz"), Some(Compression::Gzip));
        assert_eq!(Compression::of("a.ko"), Some(Compression::None));
        assert_eq!(Compression::of(".ko"), None);
        assert_eq!(Compression::of("a.ko.bz2"), None);
    }
}
