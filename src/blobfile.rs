//! Getting blob bytes to the reader at an 8-byte aligned address: mapped from
//! a file (the resolver's way: nothing is read up front) or copied into an
//! aligned buffer (tests, `--check` of a pipe).

use std::fs::File;
use std::io;
use std::path::Path;

/// A blob file mapped read-only into memory (page-aligned, so 8-aligned).
#[derive(Debug)]
pub struct MappedBlob {
    // An empty file cannot be mapped on every platform; keep an empty slice then.
    map: Option<memmap2::Mmap>,
}

impl MappedBlob {
    /// Maps the file at `path`.
    ///
    /// Errors: the file cannot be opened or mapped.
    pub fn open(path: &Path) -> io::Result<Self> {
        let file = File::open(path)?;
        if file.metadata()?.len() == 0 {
            return Ok(MappedBlob { map: None });
        }
        // SAFETY: `Mmap::map` is unsafe because another process may truncate
        // or rewrite the file while it is mapped, which would change or
        // unmap bytes under our `&[u8]`. Blobs are build artifacts written
        // once (ksym-pack replaces files by rename, never in place), the same
        // assumption ripgrep and other mmap readers make. This is the crate's
        // only `unsafe`.
        #[allow(unsafe_code)]
        let map = unsafe { memmap2::Mmap::map(&file)? };
        Ok(MappedBlob { map: Some(map) })
    }

    /// The mapped bytes.
    pub fn as_bytes(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }
}

/// Blob bytes copied into 8-byte aligned memory.
#[derive(Debug, Clone, Default)]
pub struct AlignedBlob {
    words: Vec<u64>,
    len: usize,
}

impl AlignedBlob {
    /// Copies `bytes` (any alignment) into an aligned buffer.
    pub fn copy_from(bytes: &[u8]) -> Self {
        let mut words = vec![0u64; bytes.len().div_ceil(8)];
        bytemuck::cast_slice_mut::<u64, u8>(&mut words)[..bytes.len()].copy_from_slice(bytes);
        AlignedBlob {
            words,
            len: bytes.len(),
        }
    }

    /// Reads the file at `path` into an aligned buffer. Reading, not
    /// mapping: a blob that another process truncates or rewrites while we
    /// use it cannot kill us with SIGBUS, and a torn read fails validation
    /// (README "Reading blobs").
    ///
    /// Errors: the file cannot be opened or read.
    pub fn read_file(path: &Path) -> io::Result<Self> {
        Self::read_from(File::open(path)?)
    }

    /// Reads a whole stream into an aligned buffer.
    ///
    /// Errors: the stream's read errors.
    pub fn read_from(mut r: impl io::Read) -> io::Result<Self> {
        let mut v = Vec::new();
        r.read_to_end(&mut v)?;
        Ok(Self::copy_from(&v))
    }

    /// The bytes, starting at an 8-byte aligned address.
    pub fn as_bytes(&self) -> &[u8] {
        &bytemuck::cast_slice::<u64, u8>(&self.words)[..self.len]
    }
}
