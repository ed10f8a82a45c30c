//! Writing a blob into a reserved section of an ELF image in place
//! (`ksym-pack --patch-elf`): the second pass of a kernel build that links
//! with an empty, zero-filled `.ksym` section, then fills it from its own
//! symbols (docs/FORMAT.md §2.3). Any ELF class, byte order and machine that
//! the `object` crate reads. Only the section's bytes change: every other
//! byte, and so every address, section and segment, stays as the linker
//! left it, and the result is parsed again to prove it.

use std::fmt;

use object::{Object, ObjectSection, ObjectSegment, SectionKind};

/// What was written, for the tool's report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patched {
    /// The image with the blob in place (same length as the input).
    pub image: Vec<u8>,
    /// The section's file offset, in bytes.
    pub offset: u64,
    /// The section's size in bytes (the region the blob was written to).
    pub size: u64,
    /// The section's load address.
    pub address: u64,
    /// Sections and segments compared before and after (all equal).
    pub compared: (usize, usize),
}

impl Patched {
    /// One line saying where a `blob_len`-byte blob went into `section` and
    /// that no address moved (what `ksym-pack --patch-elf` prints).
    pub fn report(&self, section: &str, blob_len: usize) -> String {
        format!(
            "wrote the {blob_len}-byte blob into {section} ({} bytes at file offset {:#x}, \
             address {:#x}; {} zero bytes follow); no address moved ({} sections, {} segments \
             compared)",
            self.size,
            self.offset,
            self.address,
            self.size - blob_len as u64,
            self.compared.0,
            self.compared.1
        )
    }
}

/// Why a blob cannot be written into the image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatchError {
    /// The file is not an ELF image the `object` crate reads (its message).
    NotElf(String),
    /// No section of that name.
    NoSection(String),
    /// The section has no bytes in the file (`SHT_NOBITS`, like `.bss`).
    NoFileBytes(String),
    /// The blob is larger than the section.
    TooSmall {
        /// Section name.
        section: String,
        /// Section size, bytes.
        size: u64,
        /// Blob size, bytes.
        blob: usize,
    },
    /// The patched image no longer has the same layout (the section
    /// overlapped the ELF's own headers); never written.
    LayoutChanged(String),
}

impl fmt::Display for PatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PatchError::NotElf(e) => write!(f, "not an ELF image this tool reads: {e}"),
            PatchError::NoSection(s) => {
                write!(f, "no section `{s}` (reserve it in the linker script)")
            }
            PatchError::NoFileBytes(s) => write!(
                f,
                "section `{s}` has no bytes in the file (NOBITS): reserve it with contents, e.g. zero-filled"
            ),
            PatchError::TooSmall {
                section,
                size,
                blob,
            } => write!(
                f,
                "the blob ({blob} bytes) does not fit section `{section}` ({size} bytes): reserve at least {blob} bytes"
            ),
            PatchError::LayoutChanged(what) => {
                write!(
                    f,
                    "writing the section would change the image's layout ({what})"
                )
            }
        }
    }
}

impl std::error::Error for PatchError {}

/// Every section's (name, address, size, file range) and every segment's
/// (address, size, file range): what must not move.
type Layout = (
    Vec<(Vec<u8>, u64, u64, Option<(u64, u64)>)>,
    Vec<(u64, u64, (u64, u64))>,
);

fn layout(file: &object::File<'_>) -> Layout {
    let sections = file
        .sections()
        .map(|s| {
            let name = s.name_bytes().unwrap_or(b"?").to_vec();
            (name, s.address(), s.size(), s.file_range())
        })
        .collect();
    let segments = file
        .segments()
        .map(|s| (s.address(), s.size(), s.file_range()))
        .collect();
    (sections, segments)
}

/// Writes `blob` at the start of section `section` of `image` and zeros
/// after it to the section's end; returns the new image and where it went.
///
/// Errors: [`PatchError`]: not an ELF image, no such section, a section
/// without file bytes, a blob larger than the section (naming both sizes),
/// or a layout that would change. `image` is never modified.
pub fn patch_elf(image: &[u8], section: &str, blob: &[u8]) -> Result<Patched, PatchError> {
    let file = object::File::parse(image).map_err(|e| PatchError::NotElf(e.to_string()))?;
    if !matches!(file, object::File::Elf32(_) | object::File::Elf64(_)) {
        return Err(PatchError::NotElf(format!("{:?} file", file.format())));
    }
    let sec = file
        .section_by_name(section)
        .ok_or_else(|| PatchError::NoSection(section.into()))?;
    let (offset, size) = match (sec.kind(), sec.file_range()) {
        (SectionKind::UninitializedData | SectionKind::UninitializedTls, _) | (_, None) => {
            return Err(PatchError::NoFileBytes(section.into()));
        }
        (_, Some(r)) => r,
    };
    if blob.len() as u64 > size {
        return Err(PatchError::TooSmall {
            section: section.into(),
            size,
            blob: blob.len(),
        });
    }
    let address = sec.address();
    let before = layout(&file);
    let mut out = image.to_vec();
    // Checked: a forged header's offset and size may not fit.
    let range = usize::try_from(offset).ok().zip(
        offset
            .checked_add(size)
            .and_then(|e| usize::try_from(e).ok()),
    );
    let region = range.and_then(|(s, e)| out.get_mut(s..e)).ok_or_else(|| {
        PatchError::NotElf(format!("section `{section}` lies past the file's end"))
    })?;
    region[..blob.len()].copy_from_slice(blob);
    region[blob.len()..].fill(0);
    let after = object::File::parse(&out[..])
        .map(|f| layout(&f))
        .map_err(|e| PatchError::LayoutChanged(e.to_string()))?;
    if after != before {
        return Err(PatchError::LayoutChanged(
            "section or segment table differs".into(),
        ));
    }
    Ok(Patched {
        compared: (before.0.len(), before.1.len()),
        image: out,
        offset,
        size,
        address,
    })
}
