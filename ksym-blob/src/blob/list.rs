//! The symbol list every writer packs ([`SymbolList`]: addresses, symbol
//! types, names in one arena, the optional `[module]` column) and the error
//! both writers return ([`PackError`]). Reads `ADDR TYPE NAME` lines with the
//! text parser ([`crate::text::nm`]); the limits it enforces are those of
//! docs/FORMAT.md §3 (u16 name length, no 0xFF byte), which bind v2 as well.

use std::fmt;
use std::io::BufRead;

use super::v1::layout::{MAX_PAYLOAD_LEN, TOKEN_MARKER};
use crate::text::lines::{Line, for_each_line};
use crate::text::nm::{LineError, NmLine, parse_canonical, parse_line};

/// Why a symbol list cannot be packed. `line` is the 1-based input line when
/// the symbol came from text.
#[derive(Debug)]
pub struct PackError {
    /// 1-based input line, if known.
    pub line: Option<u64>,
    /// What is wrong.
    pub kind: PackErrorKind,
}

/// The kinds of [`PackError`].
#[derive(Debug)]
pub enum PackErrorKind {
    /// The line is not `ADDR TYPE NAME`.
    Line(LineError),
    /// An nm line without address (`U foo`) where a symbol was expected.
    NoAddress,
    /// A line longer than the longest name a record holds.
    LineTooLong,
    /// The name is longer than 65,535 bytes (the u16 record length).
    NameTooLong {
        /// Name length in bytes.
        len: usize,
    },
    /// The name holds the byte 0xFF, which marks token references.
    MarkerInName {
        /// Byte offset of the 0xFF inside the name.
        at: usize,
    },
    /// The symbol type is not printable ASCII.
    BadSymbolType,
    /// The name is empty.
    EmptyName,
    /// More than `u32::MAX` symbols: `seqs` could not index them.
    TooManySymbols,
    /// The name records would exceed 4 GiB, past what u32 `offsets` address.
    NamesTooLarge {
        /// Bytes the names section would need.
        bytes: u64,
    },
    /// v2: the name of symbol `index` (input order) holds byte 0x00 at `at`,
    /// which ends coded names (FORMAT.md §11.2).
    NulInName {
        /// Symbol index in input order.
        index: usize,
        /// Byte offset of the 0x00 inside the name.
        at: usize,
    },
    /// v2: the release or build-id is longer than 65,535 bytes.
    MetaTooLong,
    /// v2 `lines`: the rows span 4 GiB of addresses or more, or a part is
    /// larger than a u32 length field holds (FORMAT.md §15.1).
    LinesTooLarge,
    /// v2 `lines`: the source table breaks a rule of FORMAT.md §15 (rows
    /// out of address order, an id past its table...): a bug of its builder.
    LinesInvalid(&'static str),
    /// v2 `module_space`: the module table does not fit its fields
    /// (FORMAT.md §16.1).
    ModuleTable(&'static str),
    /// The packed blob does not read back as the list it was packed from:
    /// symbol `index` (address order) comes back with another address,
    /// type, name or module, or the blob does not open. A bug of the
    /// writer or the reader, caught before the blob is written anywhere
    /// ([`crate::blob::readback`]).
    ReadBack {
        /// Symbol index in address order, or the symbol count when the
        /// blob holds another number of symbols.
        index: usize,
        /// What came back wrong.
        what: &'static str,
    },
    /// Reading the input failed.
    Io(std::io::Error),
}

impl fmt::Display for PackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(l) = self.line {
            write!(f, "line {l}: ")?;
        }
        match &self.kind {
            PackErrorKind::Line(e) => write!(f, "{e}"),
            PackErrorKind::NoAddress => write!(
                f,
                "expected an address (nm prints none for undefined symbols)"
            ),
            PackErrorKind::LineTooLong => {
                write!(
                    f,
                    "line longer than {} bytes: no name record can hold it",
                    MAX_PAYLOAD_LEN + 64
                )
            }
            PackErrorKind::NameTooLong { len } => write!(
                f,
                "name is {len} bytes; a name record holds at most {MAX_PAYLOAD_LEN} (u16 length, FORMAT.md §3.2)"
            ),
            PackErrorKind::MarkerInName { at } => {
                write!(
                    f,
                    "name holds byte 0xFF at offset {at}; 0xFF marks token references (FORMAT.md §3.3)"
                )
            }
            PackErrorKind::BadSymbolType => write!(f, "symbol type is not printable ASCII"),
            PackErrorKind::EmptyName => write!(f, "empty name"),
            PackErrorKind::TooManySymbols => write!(f, "more than {} symbols", u32::MAX),
            PackErrorKind::NamesTooLarge { bytes } => write!(
                f,
                "name records need {bytes} bytes; u32 offsets address at most 4 GiB (FORMAT.md §2)"
            ),
            PackErrorKind::NulInName { index, at } => write!(
                f,
                "symbol {index}: name holds byte 0x00 at offset {at}; 0x00 ends v2 coded names (FORMAT.md §11.2)"
            ),
            PackErrorKind::MetaTooLong => {
                write!(
                    f,
                    "release or build-id longer than 65,535 bytes (FORMAT.md §10.6)"
                )
            }
            PackErrorKind::LinesTooLarge => write!(
                f,
                "source lines span 4 GiB of addresses or more, or a part exceeds 4 GiB (FORMAT.md §15.1)"
            ),
            PackErrorKind::ReadBack { index, what } => write!(
                f,
                "the packed blob does not read back as packed: symbol {index} (address order): {what}; \
                 a bug of ksym's writer or reader, nothing was written (please report it)"
            ),
            PackErrorKind::LinesInvalid(what) => {
                write!(f, "source lines table invalid: {what} (FORMAT.md §15)")
            }
            PackErrorKind::ModuleTable(what) => {
                write!(f, "module table: {what} (FORMAT.md §16.1)")
            }
            PackErrorKind::Io(e) => write!(f, "read error: {e}"),
        }
    }
}

impl std::error::Error for PackError {}

/// Symbols to pack, names in one arena (no allocation per symbol).
#[derive(Debug, Default, Clone)]
pub struct SymbolList {
    addresses: Vec<u64>,
    types: Vec<u8>,
    name_ends: Vec<usize>,
    arena: Vec<u8>,
    /// `(symbol index, module id)` for symbols with a `[module]` column,
    /// ascending; ids index `module_names`.
    modules: Vec<(u32, u32)>,
    module_names: Vec<Box<[u8]>>,
    /// `(symbol index, size in bytes)` for symbols whose size is known
    /// (an ELF symbol's `st_size`), ascending by index.
    sizes: Vec<(u32, u64)>,
}

impl SymbolList {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of symbols.
    pub fn len(&self) -> usize {
        self.addresses.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.addresses.is_empty()
    }

    /// Name of symbol `i` (input order).
    pub fn name(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.name_ends[i - 1] };
        &self.arena[start..self.name_ends[i]]
    }

    /// Address of symbol `i` (input order).
    pub fn address(&self, i: usize) -> u64 {
        self.addresses[i]
    }

    /// Sum of the name lengths, in bytes.
    pub fn name_bytes(&self) -> usize {
        self.arena.len()
    }

    /// True when every name is ASCII (name order may then compare fewer
    /// bytes per step; [`crate::blob::nameorder::NameList::all_ascii`]).
    pub(crate) fn names_are_ascii(&self) -> bool {
        self.arena.is_ascii()
    }

    /// Symbol type of symbol `i` (input order).
    pub fn symbol_type(&self, i: usize) -> u8 {
        self.types[i]
    }

    /// Module of symbol `i` (input order): the `[module]` column it had.
    pub fn module(&self, i: usize) -> Option<&[u8]> {
        let k = self
            .modules
            .binary_search_by_key(&(i as u32), |m| m.0)
            .ok()?;
        Some(&self.module_names[self.modules[k].1 as usize])
    }

    /// True when some symbol has a module.
    pub fn has_modules(&self) -> bool {
        !self.modules.is_empty()
    }

    /// Sets the module of the symbol pushed last (v1 blobs drop it, FORMAT.md
    /// §6; v2 blobs keep it, §10.5). Does nothing on an empty list.
    pub fn set_last_module(&mut self, module: &[u8]) {
        let Some(i) = self.len().checked_sub(1) else {
            return;
        };
        // Module symbols come in runs: the last name used is the likely one.
        let id = match self.modules.last() {
            Some(&(_, id)) if &*self.module_names[id as usize] == module => id,
            _ => match self.module_names.iter().position(|m| &**m == module) {
                Some(p) => p as u32,
                None => {
                    self.module_names.push(module.into());
                    (self.module_names.len() - 1) as u32
                }
            },
        };
        self.modules.push((i as u32, id));
    }

    /// Gives the symbol pushed last its size in bytes (an ELF symbol's
    /// `st_size`, FORMAT.md §10.7); 0 leaves it unknown. Without a size a
    /// symbol ends at the next one (§5.2).
    pub fn set_last_size(&mut self, size: u64) {
        let Some(i) = self.len().checked_sub(1) else {
            return;
        };
        if size == 0 {
            return;
        }
        match self.sizes.last_mut() {
            Some(last) if last.0 == i as u32 => last.1 = size,
            _ => self.sizes.push((i as u32, size)),
        }
    }

    /// Symbol `i`'s size in bytes, when known ([`set_last_size`](Self::set_last_size)).
    pub fn size(&self, i: usize) -> Option<u64> {
        self.sizes
            .binary_search_by_key(&(i as u32), |s| s.0)
            .ok()
            .map(|k| self.sizes[k].1)
    }

    /// True when some symbol has a size: a v2 blob then holds the `sizes`
    /// section.
    pub fn has_sizes(&self) -> bool {
        !self.sizes.is_empty()
    }

    /// Input positions in address order: stable, so aliases keep input order
    /// (FORMAT.md §4).
    pub fn address_order(&self) -> Vec<u32> {
        let mut by_addr: Vec<u32> = (0..self.len() as u32).collect();
        by_addr.sort_by_key(|&i| self.addresses[i as usize]);
        by_addr
    }

    /// Adds a symbol after checking it fits a name record.
    ///
    /// Errors (with `line: None`): empty name, a name over 65,535 bytes, a
    /// 0xFF byte in the name, a non-printable type, more than `u32::MAX` symbols.
    pub fn push(&mut self, address: u64, symbol_type: u8, name: &[u8]) -> Result<(), PackError> {
        if let Some(at) = bstr::ByteSlice::find_byte(name, TOKEN_MARKER) {
            return Err(PackError {
                line: None,
                kind: PackErrorKind::MarkerInName { at },
            });
        }
        self.push_marker_free(address, symbol_type, name)
    }

    /// [`SymbolList::push`] for a name already known to hold no 0xFF.
    fn push_marker_free(
        &mut self,
        address: u64,
        symbol_type: u8,
        name: &[u8],
    ) -> Result<(), PackError> {
        let err = |kind| Err(PackError { line: None, kind });
        if name.is_empty() {
            return err(PackErrorKind::EmptyName);
        }
        if name.len() > MAX_PAYLOAD_LEN {
            return err(PackErrorKind::NameTooLong { len: name.len() });
        }
        if !symbol_type.is_ascii_graphic() {
            return err(PackErrorKind::BadSymbolType);
        }
        if self.len() >= u32::MAX as usize {
            return err(PackErrorKind::TooManySymbols);
        }
        self.addresses.push(address);
        self.types.push(symbol_type);
        self.arena.extend_from_slice(name);
        self.name_ends.push(self.arena.len());
        Ok(())
    }

    /// Reads `ADDR TYPE NAME` lines (what `ksym-filter` writes; any nm-style
    /// line parses) into a list. Blank lines are skipped; the `[module]`
    /// column, if any, is kept for v2 (v1 drops it, FORMAT.md §6).
    ///
    /// Errors: the first bad line, with its number and what was expected.
    pub fn read_lines<R: BufRead>(input: R) -> Result<Self, PackError> {
        let mut list = SymbolList::new();
        // A name at the record limit plus address, type and separators fits.
        let max_line = MAX_PAYLOAD_LEN + 64;
        let res = for_each_line(input, max_line, |lineno, line| {
            let fail = |kind| {
                std::io::Error::other(PackError {
                    line: Some(lineno),
                    kind,
                })
            };
            let Line::Full(line) = line else {
                return Err(fail(PackErrorKind::LineTooLong));
            };
            if let Some(s) = parse_canonical(line) {
                return list
                    .push_marker_free(s.address, s.symbol_type, s.name)
                    .map_err(|e| fail(e.kind));
            }
            match parse_line(line) {
                Ok(NmLine::Symbol(s)) => {
                    list.push(s.address, s.symbol_type, s.name)
                        .map_err(|e| fail(e.kind))?;
                    if let Some(m) = s.module {
                        list.set_last_module(m);
                    }
                    Ok(())
                }
                Ok(NmLine::Blank) => Ok(()),
                Ok(NmLine::NoAddress { .. }) => Err(fail(PackErrorKind::NoAddress)),
                Err(e) => Err(fail(PackErrorKind::Line(e))),
            }
        });
        // Parse errors travel through io::Error; read errors stay io errors.
        res.map_err(|e| match e.downcast::<PackError>() {
            Ok(p) => p,
            Err(e) => PackError {
                line: None,
                kind: PackErrorKind::Io(e),
            },
        })?;
        Ok(list)
    }
}
