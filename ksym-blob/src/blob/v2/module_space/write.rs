//! The `module_space` writer (docs/FORMAT.md §16.1): the module table,
//! the section table, the string pool and an inner v2 blob, back to back.

use std::collections::HashMap;

use crate::blob::list::{PackError, PackErrorKind};
use crate::blob::v2::layout::*;

/// One module as `ksym-pack --modules` placed it in module space.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModuleEntry {
    /// The name the kernel prints (`.modinfo` `name=`); at most 65,535 bytes.
    pub name: Vec<u8>,
    /// The GNU build-id note's bytes (empty without one); at most 65,535 bytes.
    pub build_id: Vec<u8>,
    /// Executable sections: (ELF name, base in module space, size in bytes),
    /// ascending bases.
    pub sections: Vec<(Vec<u8>, u64, u64)>,
}

fn too_large() -> PackError {
    PackError {
        line: None,
        kind: PackErrorKind::ModuleTable("past 4 GiB, or a name or build-id over 64 KiB"),
    }
}

/// Offset of `s` in `pool`, appending it the first time (section names
/// repeat in every module).
fn intern<'m>(
    map: &mut HashMap<&'m [u8], u32>,
    pool: &mut Vec<u8>,
    s: &'m [u8],
) -> Result<u32, PackError> {
    if let Some(&o) = map.get(s) {
        return Ok(o);
    }
    let o = u32::try_from(pool.len()).map_err(|_| too_large())?;
    pool.extend_from_slice(s);
    map.insert(s, o);
    Ok(o)
}

/// The section's bytes for `modules` (in strict name order, sections
/// ascending across the table) and `inner`, the v2 blob of their symbols
/// and lines over module space.
///
/// Errors: names or build-ids over 65,535 bytes, or tables past u32 offsets.
pub fn encode_module_space(modules: &[ModuleEntry], inner: &[u8]) -> Result<Vec<u8>, PackError> {
    let mut pool: Vec<u8> = Vec::new();
    let mut interned: HashMap<&[u8], u32> = HashMap::new();
    let nsects: usize = modules.iter().map(|m| m.sections.len()).sum();
    let mut mods = Vec::with_capacity(modules.len() * MODSPACE_MODULE);
    let mut sects = Vec::with_capacity(nsects * MODSPACE_SECTION);
    let mut first = 0usize;
    for m in modules {
        let name_len = u16::try_from(m.name.len()).map_err(|_| too_large())?;
        let bid_len = u16::try_from(m.build_id.len()).map_err(|_| too_large())?;
        let name_off = intern(&mut interned, &mut pool, &m.name)?;
        let bid_off = intern(&mut interned, &mut pool, &m.build_id)?;
        mods.extend_from_slice(&name_off.to_le_bytes());
        mods.extend_from_slice(&name_len.to_le_bytes());
        mods.extend_from_slice(&bid_len.to_le_bytes());
        mods.extend_from_slice(&bid_off.to_le_bytes());
        mods.extend_from_slice(&(first as u32).to_le_bytes());
        for (name, base, size) in &m.sections {
            let off = intern(&mut interned, &mut pool, name)?;
            sects.extend_from_slice(&base.to_le_bytes());
            sects.extend_from_slice(&size.to_le_bytes());
            sects.extend_from_slice(&off.to_le_bytes());
            sects.extend_from_slice(&(name.len() as u32).to_le_bytes());
        }
        first += m.sections.len();
    }
    let mut out = Vec::with_capacity(
        MODSPACE_HEADER + mods.len() + sects.len() + pool.len() + 8 + inner.len(),
    );
    for v in [modules.len(), nsects, pool.len(), inner.len()] {
        out.extend_from_slice(&u32::try_from(v).map_err(|_| too_large())?.to_le_bytes());
    }
    out.extend_from_slice(&mods);
    out.extend_from_slice(&sects);
    out.extend_from_slice(&pool);
    out.resize(out.len().div_ceil(8) * 8, 0);
    out.extend_from_slice(inner);
    u32::try_from(out.len()).map_err(|_| too_large())?;
    Ok(out)
}
