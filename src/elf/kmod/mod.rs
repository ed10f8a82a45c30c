//! Kernel modules for `ksym-pack --modules DIR` (docs/FORMAT.md §16): find
//! every `.ko[.xz|.zst|.gz]` under a directory, read each one's name,
//! build-id, executable sections and text symbols ([`file`](mod@file)), relocate its
//! DWARF with each executable section at its own base ([`reloc`]) and
//! sweep it as `ksym::elf::dwarf` sweeps a vmlinux, then place the modules one
//! after another in module space and merge their tables ([`merge`]), so
//! the strings, directories and token tables that repeat across modules
//! are stored once.
//!
//! Modules are read on every core (rayon). A module that cannot be read is
//! an error naming its file; with `skip_bad` it is left out and listed.

use std::fmt;
use std::path::{Path, PathBuf};

#[cfg(feature = "parallel")]
use rayon::prelude::*;

use crate::blob::list::SymbolList;
use crate::blob::v2::layout::{MODSPACE_ALIGN, MODSPACE_START};
use crate::blob::v2::module_space::write::ModuleEntry;
use crate::blob::v2::source_lines::write::SourceTable;

pub mod file;
pub mod merge;
pub mod reloc;

/// A module that could not be read, or a problem with the module tree.
#[derive(Debug, Clone)]
pub struct ModuleError {
    /// The file (or directory) at fault.
    pub path: PathBuf,
    /// What is wrong with it.
    pub what: String,
}

impl ModuleError {
    /// An error about `path`.
    pub fn new(path: &Path, what: impl fmt::Display) -> Self {
        ModuleError {
            path: path.to_owned(),
            what: what.to_string(),
        }
    }
}

impl fmt::Display for ModuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.what)
    }
}

impl std::error::Error for ModuleError {}

/// Every module file under `dir`, sorted by path; files named `*.ko.*`
/// with another compression are errors (kept in the list as `Err`).
///
/// Errors: `dir` cannot be read.
pub fn find_modules(dir: &Path) -> Result<Vec<Result<PathBuf, ModuleError>>, ModuleError> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).map_err(|e| ModuleError::new(&d, e))?;
        for e in entries {
            let e = e.map_err(|e| ModuleError::new(&d, e))?;
            let path = e.path();
            let ft = e.file_type().map_err(|e| ModuleError::new(&path, e))?;
            if ft.is_dir() {
                stack.push(path);
                continue;
            }
            let name = e.file_name();
            let name = name.to_string_lossy();
            if file::Compression::of(&name).is_some() {
                out.push(Ok(path));
            } else if let Some(i) = name.find(".ko.") {
                let ext = name[i + 3..].to_owned();
                out.push(Err(ModuleError::new(
                    &path,
                    format!("unknown compression .{ext} (expected .ko, .ko.xz, .ko.zst or .ko.gz)"),
                )));
            }
        }
    }
    out.sort_by(|a, b| {
        let p = |r: &Result<PathBuf, ModuleError>| match r {
            Ok(p) => p.clone(),
            Err(e) => e.path.clone(),
        };
        p(a).cmp(&p(b))
    });
    Ok(out)
}

/// One module, read, with its sections placed from 0 and its source
/// table over that local layout; [`place`] puts it in module space.
#[derive(Debug)]
pub struct LocalModule {
    /// The file it came from.
    pub path: PathBuf,
    /// Name, build-id, sections, symbols.
    pub info: file::ModuleInfo,
    /// Section bases from 0, by position in `info.sections`.
    pub bases: Vec<u64>,
    /// Bytes from 0 to the end of the last section.
    pub span: u64,
    /// Source lines over the local layout, when asked for and present.
    pub lines: Option<SourceTable>,
    /// Set when lines were asked for and the module has no DWARF.
    pub no_dwarf: bool,
}

/// Local layout: each section at the next multiple of its alignment (at
/// most [`MODSPACE_ALIGN`]); `None` when the sizes overflow (a forged
/// header), or when a module would span 4 GiB (no real one comes close).
fn local_bases(sections: &[file::ExecSection]) -> Option<(Vec<u64>, u64)> {
    let mut cursor = 0u64;
    let mut bases = Vec::with_capacity(sections.len());
    for s in sections {
        let b = cursor.checked_next_multiple_of(s.align.min(MODSPACE_ALIGN))?;
        bases.push(b);
        cursor = b.checked_add(s.size)?;
    }
    (cursor < 1 << 32).then_some((bases, cursor))
}

/// Reads the module file at `path` (decompressed as its name says).
///
/// Errors: as [`module_from_bytes`], and an unreadable or corrupt file.
pub fn read_module(path: &Path, lines: bool) -> Result<LocalModule, ModuleError> {
    module_from_bytes(&file::read_bytes(path)?, path, lines)
}

/// Reads a module from its ELF bytes; `path` names it in errors and gives
/// its name when `.modinfo` has none.
///
/// Errors: not a relocatable ELF file, sections that do not fit 4 GiB, a
/// symbol past its section's end, an unknown relocation type or malformed
/// DWARF, each naming `path`.
pub fn module_from_bytes(
    bytes: &[u8],
    path: &Path,
    lines: bool,
) -> Result<LocalModule, ModuleError> {
    let obj = object::File::parse(bytes)
        .map_err(|e| ModuleError::new(path, format!("not an ELF file: {e}")))?;
    let mut info = file::module_info(&obj, path)?;
    let (bases, span) = local_bases(&info.sections)
        .ok_or_else(|| ModuleError::new(path, "executable sections span 4 GiB or more"))?;
    if let Some(s) = info
        .symbols
        .iter()
        .find(|s| s.value > info.sections[s.section].size)
    {
        return Err(ModuleError::new(
            path,
            format!(
                "symbol {} at offset {:#x}, past the end of its section {}",
                String::from_utf8_lossy(&s.name),
                s.value,
                String::from_utf8_lossy(&info.sections[s.section].name)
            ),
        ));
    }
    // A symbol at its section's very end (an end label) covers no byte of
    // it; in module space it would name the next section's first byte.
    let file::ModuleInfo {
        symbols, sections, ..
    } = &mut info;
    symbols.retain(|s| s.value < sections[s.section].size);
    let want = lines && info.has_dwarf && !info.sections.is_empty();
    let table = if want {
        Some(merge::module_lines(&obj, &info, &bases, path)?)
    } else {
        None
    };
    Ok(LocalModule {
        path: path.to_owned(),
        no_dwarf: lines && !info.has_dwarf,
        info,
        bases,
        span,
        lines: table,
    })
}

/// The modules of a tree, placed in module space and ready to pack.
#[derive(Debug, Default)]
pub struct ModuleSet {
    /// The module and section tables (FORMAT.md §16.1), in name order.
    pub entries: Vec<ModuleEntry>,
    /// Every module's text symbols at module-space addresses.
    pub symbols: SymbolList,
    /// The merged source table over module space, when lines were asked for.
    pub lines: Option<SourceTable>,
    /// Modules left out (`skip_bad`), with why.
    pub skipped: Vec<ModuleError>,
    /// One note per module without DWARF when lines were asked for.
    pub notes: Vec<String>,
    /// Bytes of executable code over all modules.
    pub code_bytes: u64,
}

/// Reads every module under `dir` (with source lines when `lines`) and
/// lays them out in module space (FORMAT.md §16.2).
///
/// Errors: `dir` unreadable, no module found, or, unless `skip_bad`, the
/// first module that cannot be read (a truncated or corrupt file, an
/// unknown compression, an unknown relocation type), or two modules of
/// one name; the message names the file and says how many more failed.
pub fn read_modules(dir: &Path, lines: bool, skip_bad: bool) -> Result<ModuleSet, ModuleError> {
    let found = find_modules(dir)?;
    if found.is_empty() {
        return Err(ModuleError::new(
            dir,
            "no module (*.ko, *.ko.xz, *.ko.zst, *.ko.gz) under it",
        ));
    }
    // Largest first: the long ones start early and both cores stay busy.
    let mut work: Vec<(u64, usize, &PathBuf)> = found
        .iter()
        .enumerate()
        .filter_map(|(i, r)| r.as_ref().ok().map(|p| (p, i)))
        .map(|(p, i)| (std::fs::metadata(p).map_or(0, |m| m.len()), i, p))
        .collect();
    work.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    #[cfg(feature = "parallel")]
    let mut read: Vec<(usize, Result<LocalModule, ModuleError>)> = work
        .par_iter()
        // One job per module: rayon otherwise splits the list into a few
        // ranges and runs one of them, the largest modules, on one thread
        // while the other thread, once its vmlinux sweep is done, runs
        // out of ranges to steal.
        .with_max_len(1)
        .map(|&(_, i, p)| (i, read_module(p, lines)))
        .collect();
    #[cfg(not(feature = "parallel"))]
    let mut read: Vec<(usize, Result<LocalModule, ModuleError>)> = work
        .iter()
        .map(|&(_, i, p)| (i, read_module(p, lines)))
        .collect();
    read.sort_by_key(|r| r.0);
    let mut bad: Vec<ModuleError> = found
        .iter()
        .filter_map(|r| r.as_ref().err().cloned())
        .collect();
    let mut good = Vec::new();
    for (_, r) in read {
        match r {
            Ok(m) => good.push(m),
            Err(e) => bad.push(e),
        }
    }
    good.sort_by(|a, b| a.info.name.cmp(&b.info.name).then(a.path.cmp(&b.path)));
    let mut unique: Vec<LocalModule> = Vec::with_capacity(good.len());
    for m in good {
        match unique.last() {
            Some(l) if l.info.name == m.info.name => bad.push(ModuleError::new(
                &m.path,
                format!(
                    "a second module named {} (the first is {})",
                    String::from_utf8_lossy(&m.info.name),
                    l.path.display()
                ),
            )),
            _ => unique.push(m),
        }
    }
    if !bad.is_empty() && !skip_bad {
        let mut e = bad.swap_remove(0);
        if !bad.is_empty() {
            e.what.push_str(&format!(
                " (and {} more bad modules; --skip-bad-modules packs the rest)",
                bad.len()
            ));
        } else {
            e.what.push_str(" (--skip-bad-modules packs the rest)");
        }
        return Err(e);
    }
    place(unique, bad)
}

/// Module space (FORMAT.md §16.2): `mods` (in name order, names unique)
/// each at the first multiple of [`MODSPACE_ALIGN`] past the previous
/// one's end, from [`MODSPACE_START`]; `skipped` is carried along.
///
/// Errors: module space past 2^64 (each module spans under 4 GiB, so only
/// billions of modules reach it), or a symbol the symbol list refuses.
pub fn place(mods: Vec<LocalModule>, skipped: Vec<ModuleError>) -> Result<ModuleSet, ModuleError> {
    let mut set = ModuleSet {
        skipped,
        ..ModuleSet::default()
    };
    let mut start = MODSPACE_START;
    let mut tables = Vec::new();
    for m in mods {
        let fail = |e: crate::blob::list::PackError| ModuleError::new(&m.path, e);
        for s in &m.info.symbols {
            let a = start + m.bases[s.section] + s.value;
            set.symbols.push(a, s.symbol_type, &s.name).map_err(fail)?;
        }
        if m.no_dwarf {
            set.notes.push(format!(
                "{}: no DWARF (.debug_info): symbols only",
                m.path.display()
            ));
        }
        set.code_bytes += m.info.sections.iter().map(|s| s.size).sum::<u64>();
        set.entries.push(ModuleEntry {
            name: m.info.name.clone(),
            build_id: m.info.build_id.clone(),
            sections: m
                .info
                .sections
                .iter()
                .zip(&m.bases)
                .map(|(s, b)| (s.name.clone(), start + b, s.size))
                .collect(),
        });
        if let Some(t) = m.lines {
            tables.push((start, t));
        }
        start = start
            .checked_add(m.span + 1)
            .and_then(|e| e.checked_next_multiple_of(MODSPACE_ALIGN))
            .filter(|e| e.checked_add(1 << 32).is_some())
            .ok_or_else(|| ModuleError::new(&m.path, "module space past 2^64"))?;
    }
    if !tables.is_empty() {
        set.lines = Some(merge::merge_tables(tables));
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A DIE whose `DW_AT_low_pc` plus `DW_AT_high_pc` size passes 2^64
    /// (found by the kmod_elf fuzz target): gimli (0.32 to 0.34) adds the two
    /// unchecked, which panics with overflow checks on unless we skip the
    /// DIE. A release build wraps instead, so CI also runs the unit tests
    /// in a debug build (`cargo test --lib` in .ci/run).
    #[test]
    fn high_pc_past_2_64_is_not_a_panic() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fuzz/corpus/kmod_elf/regression-high-pc-overflow");
        let data = std::fs::read(&path).unwrap();
        // The input is the test module with one DIE damaged: the module
        // still reads, lines included, without that DIE's range.
        let m = module_from_bytes(&data, Path::new("bad.ko"), true).unwrap();
        assert_eq!(m.info.name, b"ksym_test");
        assert!(m.lines.is_some() && !m.no_dwarf);
    }
}
