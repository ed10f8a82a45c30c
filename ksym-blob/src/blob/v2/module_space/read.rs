//! The `module_space` reader (docs/FORMAT.md §16): the module table, the
//! section table and the inner v2 blob that holds the modules' symbols and
//! lines, all borrowed from the blob. `no_std`, no allocation.

use crate::blob::problem::Problem;
use crate::blob::symbol::{AddressHit, BlobError, BlobErrorKind, Symbol};
use crate::blob::v2::layout::*;
use crate::blob::v2::read::KallsymsV2;
use crate::blob::v2::source_lines::read::LineTable;

/// A checked view of a `module_space` section.
#[derive(Clone, Copy)]
pub struct ModuleSpace<'a> {
    nmods: usize,
    nsects: usize,
    mods: &'a [u8],
    sects: &'a [u8],
    pool: &'a [u8],
    inner: KallsymsV2<'a>,
}

impl core::fmt::Debug for ModuleSpace<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ModuleSpace")
            .field("modules", &self.nmods)
            .field("sections", &self.nsects)
            .finish()
    }
}

/// One module of the table (FORMAT.md §16.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Module<'a> {
    /// Position in the table (modules are in name order).
    pub index: usize,
    /// The name the kernel prints (`[xfs]`).
    pub name: &'a [u8],
    /// The GNU build-id note's bytes; empty when the module had none.
    pub build_id: &'a [u8],
    /// Its sections: indexes into the section table.
    pub sections: core::ops::Range<usize>,
}

/// One executable section of a module, placed in module space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModuleSection<'a> {
    /// The ELF section name (`.text`, `.text.unlikely`, `.init.text`).
    pub name: &'a [u8],
    /// Its first address in module space.
    pub base: u64,
    /// Its size in bytes.
    pub size: u64,
}

/// An address lookup in module space: the module, the section and the
/// symbol (never one of another section).
#[derive(Debug, Clone)]
pub struct ModuleHit<'a> {
    /// The module.
    pub module: Module<'a>,
    /// Index of the section in the section table.
    pub section: usize,
    /// The symbol: `symbol.module` is the module's name, `size` is capped
    /// at the section's end.
    pub hit: AddressHit<'a>,
}

fn bad(offset: usize, what: Problem) -> BlobError {
    BlobError {
        offset,
        kind: BlobErrorKind::BadSection {
            section: "module_space",
            what,
        },
    }
}

impl<'a> ModuleSpace<'a> {
    /// The module space of `blob`: `None` without a `module_space` section.
    ///
    /// Errors: as [`parse`](Self::parse).
    pub fn of(blob: &KallsymsV2<'a>) -> Result<Option<Self>, BlobError> {
        match blob.module_space_section() {
            Some((sec, at)) => Self::parse(sec, at).map(Some),
            None => Ok(None),
        }
    }

    /// Checks `sec` (the section's bytes, at blob offset `at`) and its inner
    /// blob (header, directory, CRCs, shapes) and returns a view.
    ///
    /// Errors: [`BlobErrorKind::BadSection`] naming `module_space` with the
    /// byte offset of the broken field, or the inner blob's error with its
    /// offset counted from the outer blob's start.
    pub fn parse(sec: &'a [u8], at: usize) -> Result<Self, BlobError> {
        if sec.len() < MODSPACE_HEADER {
            return Err(bad(at, Problem::ShorterThanHeader));
        }
        let nmods = u32_at(sec, 0) as usize;
        let nsects = u32_at(sec, 4) as usize;
        let pool_len = u32_at(sec, 8) as usize;
        let inner_len = u32_at(sec, 12) as usize;
        let mods_end = nmods
            .checked_mul(MODSPACE_MODULE)
            .and_then(|n| n.checked_add(MODSPACE_HEADER));
        let sects_end = nsects
            .checked_mul(MODSPACE_SECTION)
            .and_then(|n| mods_end?.checked_add(n));
        let pool_end = sects_end.and_then(|e| e.checked_add(pool_len));
        let inner_at = pool_end.map(|e| e.div_ceil(8) * 8);
        let (Some(mods_end), Some(sects_end), Some(pool_end), Some(inner_at)) =
            (mods_end, sects_end, pool_end, inner_at)
        else {
            return Err(bad(at, Problem::CountsTooLarge));
        };
        if inner_at.checked_add(inner_len) != Some(sec.len()) {
            return Err(bad(at + 12, Problem::LengthsNotSection));
        }
        if sec[pool_end..inner_at].iter().any(|&b| b != 0) {
            return Err(bad(at + pool_end, Problem::NonZeroPadding));
        }
        let inner_bytes = &sec[inner_at..];
        let inner = KallsymsV2::from_blob(inner_bytes, None, None).map_err(|mut e| {
            e.offset += at + inner_at;
            e
        })?;
        if inner
            .sections()
            .any(|s| matches!(s.id, SectionId::ModuleSpace | SectionId::Modules))
        {
            return Err(bad(at + inner_at, Problem::NestedModules));
        }
        let ms = ModuleSpace {
            nmods,
            nsects,
            mods: &sec[MODSPACE_HEADER..mods_end],
            sects: &sec[mods_end..sects_end],
            pool: &sec[sects_end..pool_end],
            inner,
        };
        ms.check_tables(at)?;
        Ok(ms)
    }

    /// Names and build-ids in the pool, modules in strict name order,
    /// section ranges ascending, sections ascending without overlap.
    fn check_tables(&self, at: usize) -> Result<(), BlobError> {
        let mut prev: Option<&[u8]> = None;
        let mut first = 0usize;
        for i in 0..self.nmods {
            let r = MODSPACE_HEADER + i * MODSPACE_MODULE;
            let rec = &self.mods[i * MODSPACE_MODULE..];
            let name = self.pool_str(u32_at(rec, 0), u32::from(u16_at(rec, 4)));
            let bid = self.pool_str(u32_at(rec, 8), u32::from(u16_at(rec, 6)));
            let (Some(name), Some(_)) = (name, bid) else {
                return Err(bad(at + r, Problem::ModuleNamePastPool));
            };
            if name.is_empty() || prev.is_some_and(|p| p >= name) {
                return Err(bad(at + r, Problem::ModuleNamesOrder));
            }
            prev = Some(name);
            let f = u32_at(rec, 12) as usize;
            if f < first || f > self.nsects || (i == 0 && f != 0) {
                return Err(bad(at + r + 12, Problem::ModuleSectionsNotAscending));
            }
            first = f;
        }
        let mut end = 0u64;
        for s in 0..self.nsects {
            let r = s * MODSPACE_SECTION;
            let (base, size) = (u64_at(self.sects, r), u64_at(self.sects, r + 8));
            let off = at + MODSPACE_HEADER + self.nmods * MODSPACE_MODULE + r;
            if self
                .pool_str(u32_at(self.sects, r + 16), u32_at(self.sects, r + 20))
                .is_none()
            {
                return Err(bad(off + 16, Problem::SectionNamePastPool));
            }
            if size == 0 || base < end || base.checked_add(size).is_none() {
                return Err(bad(off, Problem::ModuleSectionsOverlap));
            }
            end = base + size;
        }
        Ok(())
    }

    fn pool_str(&self, off: u32, len: u32) -> Option<&'a [u8]> {
        let (off, len) = (off as usize, len as usize);
        self.pool.get(off..off.checked_add(len)?)
    }

    /// Number of modules.
    pub fn len(&self) -> usize {
        self.nmods
    }

    /// True when the table holds no module.
    pub fn is_empty(&self) -> bool {
        self.nmods == 0
    }

    /// Number of sections of all modules.
    pub fn num_sections(&self) -> usize {
        self.nsects
    }

    /// Module `i` (in name order), if `i < len()`.
    pub fn module(&self, i: usize) -> Option<Module<'a>> {
        if i >= self.nmods {
            return None;
        }
        let rec = &self.mods[i * MODSPACE_MODULE..];
        let first = u32_at(rec, 12) as usize;
        let end = if i + 1 < self.nmods {
            u32_at(self.mods, (i + 1) * MODSPACE_MODULE + 12) as usize
        } else {
            self.nsects
        };
        Some(Module {
            index: i,
            name: self
                .pool_str(u32_at(rec, 0), u32::from(u16_at(rec, 4)))
                .unwrap_or_default(),
            build_id: self
                .pool_str(u32_at(rec, 8), u32::from(u16_at(rec, 6)))
                .unwrap_or_default(),
            sections: first..end.max(first),
        })
    }

    /// Every module, in name order.
    pub fn modules(&self) -> impl Iterator<Item = Module<'a>> + '_ {
        (0..self.nmods).filter_map(|i| self.module(i))
    }

    /// The module named `name` (binary search: the table is in name order).
    pub fn find_module(&self, name: &[u8]) -> Option<Module<'a>> {
        let i = partition_point(self.nmods, |i| {
            self.module(i).is_some_and(|m| m.name < name)
        });
        self.module(i).filter(|m| m.name == name)
    }

    /// Section `s` of the table.
    pub fn section(&self, s: usize) -> Option<ModuleSection<'a>> {
        if s >= self.nsects {
            return None;
        }
        let r = s * MODSPACE_SECTION;
        Some(ModuleSection {
            name: self
                .pool_str(u32_at(self.sects, r + 16), u32_at(self.sects, r + 20))
                .unwrap_or_default(),
            base: u64_at(self.sects, r),
            size: u64_at(self.sects, r + 8),
        })
    }

    /// The section holding module-space address `addr`, if any.
    pub fn section_at(&self, addr: u64) -> Option<usize> {
        let s = partition_point(self.nsects, |s| {
            u64_at(self.sects, s * MODSPACE_SECTION) <= addr
        })
        .checked_sub(1)?;
        let sec = self.section(s)?;
        (addr - sec.base < sec.size).then_some(s)
    }

    /// The module owning section `s` (binary search over first sections).
    pub fn module_of_section(&self, s: usize) -> Option<Module<'a>> {
        let i = partition_point(self.nmods, |i| {
            u32_at(self.mods, i * MODSPACE_MODULE + 12) as usize <= s
        })
        .checked_sub(1)?;
        self.module(i).filter(|m| m.sections.contains(&s))
    }

    /// The modules' symbols: an ordinary v2 symbol table over module space.
    pub fn symbols(&self) -> &KallsymsV2<'a> {
        &self.inner
    }

    /// The modules' source lines and inline frames over module space, when
    /// packed with them.
    pub fn lines(&self) -> Option<&LineTable<'a>> {
        self.inner.lines()
    }

    fn with_module(&self, mut s: Symbol<'a>, m: &Module<'a>) -> Symbol<'a> {
        s.module = Some(m.name);
        s
    }

    /// The first symbol named `name` in module `m`, in address order
    /// (decode_stacktrace.sh takes the first `t`/`T` match of `nm`).
    pub fn lookup_name_in(&self, m: &Module<'a>, name: &[u8]) -> Option<Symbol<'a>> {
        let lo = self.section(m.sections.start)?.base;
        let last = self.section(m.sections.end.checked_sub(1)?)?;
        let hi = last.base + last.size;
        let s = if name.starts_with(PFX) {
            self.inner
                .lookup_name_all(name)
                .find(|s| lo <= s.address && s.address < hi)
        } else {
            self.inner
                .lookup_name_from(name, lo)
                .filter(|s| s.address < hi)
        };
        s.map(|s| self.with_module(s, m))
    }

    /// The symbol covering module-space address `addr` within its section
    /// (FORMAT.md §16.3); `None` outside every section, or before the
    /// section's first symbol.
    pub fn lookup_address(&self, addr: u64) -> Option<ModuleHit<'a>> {
        let s = self.section_at(addr)?;
        let sec = self.section(s)?;
        let module = self.module_of_section(s)?;
        let mut hit = self.inner.lookup_address(addr)?;
        if hit.symbol.address < sec.base {
            return None;
        }
        let end = sec.base + sec.size - hit.symbol.address;
        hit.size = Some(hit.size.map_or(end, |z| z.min(end)));
        hit.symbol = self.with_module(hit.symbol, &module);
        Some(ModuleHit {
            module,
            section: s,
            hit,
        })
    }

    /// Deep check (`ksym-pack --check`): the inner blob's own deep check,
    /// and every symbol inside a section.
    ///
    /// Errors: the first problem, with its offset in the inner blob.
    #[cfg(feature = "std")]
    pub fn verify(&self) -> Result<(), BlobError> {
        self.inner.verify()?;
        for s in self.inner.symbols() {
            if self.section_at(s.address).is_none() {
                return Err(bad(0, Problem::ModuleSymbolOutside));
            }
        }
        Ok(())
    }
}
