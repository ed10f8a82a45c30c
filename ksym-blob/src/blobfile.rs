//! Getting blob bytes to the reader at an 8-byte aligned address: read from
//! a file or a stream into an aligned buffer. The tools never map a blob: a
//! mapped file that another process truncates or rewrites kills the reader
//! with SIGBUS, while a read copy stays whole (a torn read fails the
//! reader's checks instead). A few MB read in a millisecond or two.

use std::fs::File;
use std::io;
use std::path::Path;

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
    /// (docs/packing.md "Reading blobs").
    ///
    /// Errors: the file cannot be opened or read.
    pub fn read_file(path: &Path) -> io::Result<Self> {
        let f = File::open(path)?;
        // The size is a hint only; a file that shrinks or grows meanwhile
        // still reads whole.
        let hint = f.metadata().map_or(0, |m| m.len()) as usize;
        Self::read_sized(f, hint)
    }

    /// Reads the whole of `r`, which is about `hint` bytes long, straight
    /// into aligned memory: one copy and no regrowth when the hint is
    /// right (a file's length, a gzip member's ISIZE). A wrong hint costs
    /// only speed.
    ///
    /// Errors: the stream's read errors.
    pub fn read_sized(mut r: impl io::Read, hint: usize) -> io::Result<Self> {
        let mut words = vec![0u64; hint.div_ceil(8)];
        let mut len = 0;
        {
            let buf = bytemuck::cast_slice_mut::<u64, u8>(&mut words);
            while len < hint {
                match r.read(&mut buf[len..hint]) {
                    Ok(0) => break,
                    Ok(n) => len += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
        }
        let mut rest = Vec::new();
        r.read_to_end(&mut rest)?;
        if rest.is_empty() {
            return Ok(AlignedBlob { words, len });
        }
        let mut all = bytemuck::cast_slice::<u64, u8>(&words)[..len].to_vec();
        all.extend_from_slice(&rest);
        Ok(Self::copy_from(&all))
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
