//! An ELF file read in pieces, as the `object` crate's `ReadCache` reads it
//! (only the headers and sections asked for, never mapped: a file rewritten
//! under us cannot raise SIGBUS), except that its string tables (`.strtab`,
//! `.dynstr`, `.shstrtab`; ELF spec, "String Table") are read whole, once,
//! and kept here. `ReadCache` reads each name with its own `lseek` and
//! `read`: 48,000 system calls for libstdc++'s symbols, a fifth of the time
//! its tables took to read; and finding a whole table in its cache again
//! for each name (a SipHash map) cost 9 M instructions for libstdc++'s
//! 25,000 names.

use std::cell::OnceCell;
use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::Path;

use bstr::ByteSlice;
use object::{Object, ObjectSection, ReadCache, ReadRef};

/// An open ELF file: `object::File::parse` it with [`ElfFile::parse`].
pub(crate) struct ElfFile {
    cache: ReadCache<File>,
    /// The same file, for the string tables' reads.
    file: File,
    /// The string tables, found by [`ElfFile::parse`].
    strings: OnceCell<Vec<StringTable>>,
}

/// A string table's file range (bytes) and its bytes, read whole on first
/// use.
type StringTable = (Range<u64>, OnceCell<Box<[u8]>>);

impl ElfFile {
    /// The file at `path`, nothing read yet.
    ///
    /// Errors: the file cannot be opened.
    pub(crate) fn open(path: &Path) -> std::io::Result<Self> {
        let file = File::open(path)?;
        Ok(ElfFile {
            cache: ReadCache::new(file.try_clone()?),
            file,
            strings: OnceCell::new(),
        })
    }

    /// The file parsed by `object`, its string tables then read whole.
    ///
    /// Errors: `object`'s, when the file is not an object file it reads.
    pub(crate) fn parse(&self) -> object::Result<object::File<'_, &Self>> {
        let obj = object::File::parse(self)?;
        // Found by name through the slow path, a few section names each.
        let tables = [".shstrtab", ".strtab", ".dynstr"]
            .iter()
            .filter_map(|name| obj.section_by_name(name)?.file_range())
            .map(|(offset, size)| (offset..offset.saturating_add(size), OnceCell::new()))
            .collect();
        // A second parse finds the same tables.
        let _ = self.strings.set(tables);
        Ok(obj)
    }

    /// The bytes of string table `range`, read whole the first time.
    fn table<'s>(
        &'s self,
        range: &Range<u64>,
        bytes: &'s OnceCell<Box<[u8]>>,
    ) -> Result<&'s [u8], ()> {
        if let Some(b) = bytes.get() {
            return Ok(b);
        }
        // Within the file, as `ReadCache` checks, so that a forged size
        // fails here instead of asking the allocator for it.
        if range.end > (&self.cache).len()? {
            return Err(());
        }
        let len = usize::try_from(range.end - range.start).map_err(|_| ())?;
        let mut buf = Vec::new();
        buf.try_reserve_exact(len).map_err(|_| ())?;
        buf.resize(len, 0);
        self.file
            .read_exact_at(&mut buf, range.start)
            .map_err(|_| ())?;
        Ok(bytes.get_or_init(|| buf.into_boxed_slice()))
    }
}

impl<'a> ReadRef<'a> for &'a ElfFile {
    fn len(self) -> Result<u64, ()> {
        (&self.cache).len()
    }

    fn read_bytes_at(self, offset: u64, size: u64) -> Result<&'a [u8], ()> {
        (&self.cache).read_bytes_at(offset, size)
    }

    fn read_bytes_at_until(self, range: Range<u64>, delimiter: u8) -> Result<&'a [u8], ()> {
        let table = self.strings.get().and_then(|tables| {
            tables
                .iter()
                .find(|(t, _)| t.start <= range.start && range.end <= t.end)
        });
        let Some((t, bytes)) = table else {
            return (&self.cache).read_bytes_at_until(range, delimiter);
        };
        let whole = self.table(t, bytes)?;
        let from = usize::try_from(range.start - t.start).map_err(|_| ())?;
        let to = usize::try_from(range.end - t.start).map_err(|_| ())?;
        let rest = whole.get(from..to).ok_or(())?;
        let len = rest.find_byte(delimiter).ok_or(())?;
        Ok(&rest[..len])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object::ObjectSymbol;

    /// Every symbol name of this test's own executable reads the same as
    /// through `ReadCache` alone, but those it cannot read (past 4,096
    /// bytes).
    #[test]
    fn names_read_as_read_cache_reads_them() {
        let exe = std::env::current_exe().unwrap();
        let file = ElfFile::open(&exe).unwrap();
        let obj = file.parse().unwrap();
        assert!(!file.strings.get().unwrap().is_empty());
        let plain = ReadCache::new(File::open(&exe).unwrap());
        let reference = object::File::parse(&plain).unwrap();
        fn names<'d, R: ReadRef<'d>>(o: &object::File<'d, R>) -> Vec<Vec<u8>> {
            o.symbols()
                .chain(o.dynamic_symbols())
                .map(|s| s.name_bytes().unwrap_or(b"?").to_vec())
                .collect()
        }
        fn sections<'d, R: ReadRef<'d>>(o: &object::File<'d, R>) -> Vec<Vec<u8>> {
            o.sections()
                .map(|s| s.name_bytes().unwrap().to_vec())
                .collect()
        }
        let ours = names(&obj);
        assert!(ours.len() > 100);
        let theirs = names(&reference);
        assert_eq!(ours.len(), theirs.len());
        for (a, b) in ours.iter().zip(&theirs) {
            // `ReadCache` gives up on a name past 4,096 bytes (a debug
            // build's generic instances have them); ours reads it whole.
            if b == b"?" && a.len() >= 4096 {
                continue;
            }
            assert_eq!(a, b);
        }
        assert_eq!(sections(&obj), sections(&reference));
    }
}
