//! Split DWARF (`-gsplit-dwarf`; DWARF 5 §3.1.3, and GCC's DWARF 4
//! extension): a skeleton unit in the binary keeps the line table, and its
//! DIEs (so its inline frames) are in a split unit, found as debuggers find
//! it: in the DWARF package `BINARY.dwp` (`dwp`, `llvm-dwp`) by the unit's
//! DWO id, else in the `.dwo` file its `DW_AT_dwo_name` names (relative to
//! its `DW_AT_comp_dir`), checked by the same id. The files are read whole
//! before the sweep, so that the readers of every piece borrow them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use object::Object;

/// The split units of one binary's skeletons, read into memory.
#[derive(Default)]
pub(crate) struct SplitFiles {
    /// Each `.dwo` file's sections, by the DWO id of its unit.
    dwos: HashMap<u64, gimli::DwarfSections<Vec<u8>>>,
    /// `BINARY.dwp`'s sections, when there is one.
    dwp: Option<gimli::DwarfPackageSections<Vec<u8>>>,
    /// Skeleton units read.
    pub(crate) skeletons: usize,
    /// The `.dwo` paths of the skeletons found nowhere (neither in the
    /// package nor as a file with their DWO id).
    pub(crate) missing: Vec<String>,
}

/// The split DWARF of one reader type, as [`SplitFiles::borrow`] gives it.
pub(crate) struct Splits<'a> {
    files: &'a SplitFiles,
    dwp: Option<gimli::DwarfPackage<Reader<'a>>>,
    endian: gimli::RunTimeEndian,
}

/// The reader every sweep uses over bytes in memory.
pub(crate) type Reader<'a> = gimli::EndianSlice<'a, gimli::RunTimeEndian>;

impl SplitFiles {
    /// Reads the split units of `dwarf`'s skeleton units: `binary` (the
    /// file `dwarf` was read from) gives the package's path. A file that
    /// is missing, unreadable or of another build is counted in `missing`,
    /// not an error: its units keep their lines, without inline frames.
    ///
    /// Errors: `dwarf`'s own units do not parse.
    pub(crate) fn read<R: gimli::Reader>(
        dwarf: &gimli::Dwarf<R>,
        binary: &Path,
        endian: gimli::RunTimeEndian,
    ) -> gimli::Result<SplitFiles> {
        let mut out = SplitFiles::default();
        let mut units = dwarf.units();
        let mut wanted: Vec<(u64, Option<PathBuf>)> = Vec::new();
        while let Some(header) = units.next()? {
            let unit = dwarf.unit(header)?;
            let Some(id) = unit.dwo_id else { continue };
            out.skeletons += 1;
            let name = match unit.dwo_name()? {
                Some(v) => Some(dwarf.attr_string(&unit, v)?.to_string_lossy()?.into_owned()),
                None => None,
            };
            let dir = match &unit.comp_dir {
                Some(d) => Some(d.to_string_lossy()?.into_owned()),
                None => None,
            };
            let path = name.map(|n| match dir {
                Some(d) => Path::new(&d).join(n),
                None => PathBuf::from(n),
            });
            wanted.push((id.0, path));
        }
        if wanted.is_empty() {
            return Ok(out);
        }
        let mut dwp = binary.as_os_str().to_owned();
        dwp.push(".dwp");
        out.dwp = std::fs::read(&dwp).ok().and_then(|bytes| {
            let obj = object::File::parse(&bytes[..]).ok()?;
            gimli::DwarfPackageSections::load(|id| section(&obj, id.dwo_name())).ok()
        });
        // The package's index, parsed once.
        let packaged: Vec<bool> = {
            let pkg = out.package(endian);
            let has = |id| pkg.as_ref().is_some_and(|p| p.cu_index.find(id).is_some());
            wanted.iter().map(|w| has(w.0)).collect()
        };
        for ((id, path), packaged) in wanted.into_iter().zip(packaged) {
            if packaged {
                continue;
            }
            let found = path.as_deref().and_then(|p| {
                let bytes = std::fs::read(p).ok()?;
                let obj = object::File::parse(&bytes[..]).ok()?;
                let sections = gimli::DwarfSections::load(|s| section(&obj, s.dwo_name())).ok()?;
                (dwo_id_of(&sections, endian) == Some(id)).then_some(sections)
            });
            match found {
                Some(s) => {
                    out.dwos.insert(id, s);
                }
                None => out.missing.push(match path {
                    Some(p) => p.display().to_string(),
                    None => format!("DWO id {id:#x} (no DW_AT_dwo_name)"),
                }),
            }
        }
        Ok(out)
    }

    /// The package's readers, in `endian`, when there is a package that
    /// parses.
    fn package(&self, endian: gimli::RunTimeEndian) -> Option<gimli::DwarfPackage<Reader<'_>>> {
        self.dwp.as_ref().and_then(|p| {
            p.borrow(
                |s| gimli::EndianSlice::new(s, endian),
                gimli::EndianSlice::new(&[][..], endian),
            )
            .ok()
        })
    }

    /// Readers over the files, in `endian` (the binary's).
    pub(crate) fn borrow(&self, endian: gimli::RunTimeEndian) -> Splits<'_> {
        Splits {
            files: self,
            dwp: self.package(endian),
            endian,
        }
    }
}

impl<'a> Splits<'a> {
    /// The split DWARF of the skeleton with DWO id `id` whose file is
    /// `parent`, ready for its units ([`gimli::Dwarf::make_dwo`] done);
    /// `None` when it was not found.
    pub(crate) fn dwarf(
        &self,
        id: gimli::DwoId,
        parent: &gimli::Dwarf<Reader<'a>>,
    ) -> Option<gimli::Dwarf<Reader<'a>>> {
        if let Some(cu) = self.dwp.as_ref().and_then(|p| p.find_cu(id, parent).ok()?) {
            return Some(cu);
        }
        let sections = self.files.dwos.get(&id.0)?;
        let mut d = sections.borrow(|s| gimli::EndianSlice::new(s, self.endian));
        d.make_dwo(parent);
        Some(d)
    }
}

/// Section `name`'s bytes (decompressed), empty when absent.
fn section(obj: &object::File<'_>, name: Option<&str>) -> Result<Vec<u8>, gimli::Error> {
    let s = name.and_then(|n| obj.section_by_name(n));
    Ok(match s {
        Some(s) => super::section::section_data(&s)
            .map_err(|_| gimli::Error::Io)?
            .into_owned(),
        None => Vec::new(),
    })
}

/// The DWO id of the unit in a `.dwo` file's sections.
fn dwo_id_of(
    sections: &gimli::DwarfSections<Vec<u8>>,
    endian: gimli::RunTimeEndian,
) -> Option<u64> {
    let mut d = sections.borrow(|s| gimli::EndianSlice::new(s, endian));
    d.file_type = gimli::DwarfFileType::Dwo;
    let header = d.units().next().ok()??;
    d.unit(header).ok()?.dwo_id.map(|i| i.0)
}
