//! A section's bytes as the readers of `super` take them: decompressed
//! when `SHF_COMPRESSED` (ELF gABI, "Section Compression"; zlib or zstd),
//! with a bound on what a forged header can make us allocate.

use std::borrow::Cow;

use object::{Object, ObjectSection};

/// A section's bytes, decompressed when it is SHF_COMPRESSED. A header
/// claiming more than 256 times the compressed bytes (real debug sections
/// compress 3 to 10 times) is refused before anything is allocated: a
/// forged size must not make the allocator abort the process.
///
/// Errors: a forged size, or data that does not decompress.
pub(crate) fn section_data<'d, R: object::ReadRef<'d>>(
    s: &object::read::Section<'d, '_, R>,
) -> Result<Cow<'d, [u8]>, String> {
    compressed(s)?.decompress().map_err(|e| e.to_string())
}

/// A section's bytes as stored, with its compression, once the size it
/// claims has passed [`section_data`]'s bound.
fn compressed<'d, R: object::ReadRef<'d>>(
    s: &object::read::Section<'d, '_, R>,
) -> Result<object::CompressedData<'d>, String> {
    let c = s.compressed_data().map_err(|e| e.to_string())?;
    let limit = (c.data.len() as u64)
        .saturating_mul(256)
        .saturating_add(1 << 20);
    if c.format != object::CompressionFormat::None && c.uncompressed_size > limit {
        return Err(format!(
            "claims {} bytes once decompressed from {}: not a real section",
            c.uncompressed_size,
            c.data.len()
        ));
    }
    Ok(c)
}

/// Whether a reader of lines and inline frames needs DWARF section `id`.
/// Location lists and macros describe variables and the preprocessor,
/// never an address's lines or frames: left out, they are neither read
/// nor decompressed (libc's `.debug_loclists` is a fifth of its DWARF).
fn needed(id: gimli::SectionId) -> bool {
    use gimli::SectionId::*;
    !matches!(id, DebugLoc | DebugLocLists | DebugMacinfo | DebugMacro)
}

/// The DWARF sections of `obj` that lines and inline frames need (the others
/// empty), each as [`section_data`] gives it: read in turn, then
/// decompressed on every core (feature `parallel`): a distribution's debug
/// file is zlib- or zstd-compressed, and inflating it was a sixth of
/// `ksym-pack --elf --lines` on libc.
///
/// Errors: the section's name and what [`section_data`] says.
pub(crate) fn dwarf_sections<'d, R: object::ReadRef<'d>>(
    obj: &object::File<'d, R>,
) -> Result<gimli::DwarfSections<Cow<'d, [u8]>>, String> {
    let mut stored = Vec::new();
    gimli::DwarfSections::load(|id| -> Result<(), String> {
        if needed(id)
            && let Some(s) = obj.section_by_name(id.name())
        {
            let c = compressed(&s).map_err(|e| format!("section {}: {e}", id.name()))?;
            stored.push((id, c));
        }
        Ok(())
    })?;
    let inflate = |(id, c): (gimli::SectionId, object::CompressedData<'d>)| {
        c.decompress()
            .map(|d| (id, d))
            .map_err(|e| format!("section {}: {e}", id.name()))
    };
    #[cfg(feature = "parallel")]
    let mut data: Vec<_> = {
        use rayon::prelude::*;
        stored
            .into_par_iter()
            .map(inflate)
            .collect::<Result<_, _>>()?
    };
    #[cfg(not(feature = "parallel"))]
    let mut data: Vec<_> = stored.into_iter().map(inflate).collect::<Result<_, _>>()?;
    gimli::DwarfSections::load(|id| -> Result<_, String> {
        Ok(match data.iter().position(|d| d.0 == id) {
            Some(i) => data.swap_remove(i).1,
            None => Cow::Borrowed(&[][..]),
        })
    })
}
