//! A section's bytes as the readers of `super` take them: decompressed
//! when `SHF_COMPRESSED` (ELF gABI, "Section Compression"; zlib or zstd),
//! with a bound on what a forged header can make us allocate.

use std::borrow::Cow;

use object::ObjectSection;

/// A section's bytes, decompressed when it is SHF_COMPRESSED. A header
/// claiming more than 256 times the compressed bytes (real debug sections
/// compress 3 to 10 times) is refused before anything is allocated: a
/// forged size must not make the allocator abort the process.
///
/// Errors: a forged size, or data that does not decompress.
pub(crate) fn section_data<'d, R: object::ReadRef<'d>>(
    s: &object::read::Section<'d, '_, R>,
) -> Result<Cow<'d, [u8]>, String> {
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
    c.decompress().map_err(|e| e.to_string())
}
