//! An ELF file read in pieces, as the `object` crate's `ReadCache` reads it
//! (only the headers and sections asked for, never mapped: a file rewritten
//! under us cannot raise SIGBUS), except that its string tables (`.strtab`,
//! `.dynstr`, `.shstrtab`; ELF spec, "String Table") are read whole, once.
//! `ReadCache` reads each name with its own `lseek` and `read`: 48,000
//! system calls for libstdc++'s symbols, a fifth of the time its tables
//! took to read.

use std::cell::RefCell;
use std::fs::File;
use std::ops::Range;
use std::path::Path;

use bstr::ByteSlice;
use object::{Object, ObjectSection, ReadCache, ReadRef};

/// An open ELF file: `object::File::parse` it with [`ElfFile::parse`].
pub(crate) struct ElfFile {
    cache: ReadCache<File>,
    /// File ranges (bytes) of the string tables, read whole on first use.
    strings: RefCell<Vec<Range<u64>>>,
}

impl ElfFile {
    /// The file at `path`, nothing read yet.
    ///
    /// Errors: the file cannot be opened.
    pub(crate) fn open(path: &Path) -> std::io::Result<Self> {
        Ok(ElfFile {
            cache: ReadCache::new(File::open(path)?),
            strings: RefCell::new(Vec::new()),
        })
    }

    /// The file parsed by `object`, its string tables then read whole.
    ///
    /// Errors: `object`'s, when the file is not an object file it reads.
    pub(crate) fn parse(&self) -> object::Result<object::File<'_, &Self>> {
        let obj = object::File::parse(self)?;
        // Found by name through the slow path, a few section names each.
        let tables: Vec<Range<u64>> = [".shstrtab", ".strtab", ".dynstr"]
            .iter()
            .filter_map(|name| obj.section_by_name(name)?.file_range())
            .map(|(offset, size)| offset..offset.saturating_add(size))
            .collect();
        self.strings.borrow_mut().extend(tables);
        Ok(obj)
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
        let table = self
            .strings
            .borrow()
            .iter()
            .find(|t| t.start <= range.start && range.end <= t.end)
            .cloned();
        let Some(t) = table else {
            return (&self.cache).read_bytes_at_until(range, delimiter);
        };
        // Cached by `ReadCache` under this exact range: read once.
        let whole = (&self.cache).read_bytes_at(t.start, t.end - t.start)?;
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
    /// through `ReadCache` alone.
    #[test]
    fn names_read_as_read_cache_reads_them() {
        let exe = std::env::current_exe().unwrap();
        let file = ElfFile::open(&exe).unwrap();
        let obj = file.parse().unwrap();
        assert!(!file.strings.borrow().is_empty());
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
        assert_eq!(ours, names(&reference));
        assert_eq!(sections(&obj), sections(&reference));
    }
}
