//! The zero-copy reader of the v2 `lines` section (docs/FORMAT.md §15):
//! address → source location and inline frames, innermost first, with no
//! allocation (a kernel can print `fs/read_write.c:477` from it).

use crate::blob::problem::Problem;
use crate::blob::symbol::{BlobError, BlobErrorKind};
use crate::blob::v2::layout::*;
#[cfg(feature = "symbol-names-in-lines")]
use crate::blob::v2::names::CodedName;
use crate::blob::v2::names::Tokens;

/// A view of a `lines` section. Build it with [`LineTable::parse`]
/// (through `KallsymsV2::lines`).
#[derive(Debug, Clone, Copy)]
pub struct LineTable<'a> {
    columns: bool,
    /// Flag bit 2: the far advance opcode is valid (FORMAT.md §15.2).
    far_advance: bool,
    /// Flag bit 3: the rows part is codes and a bit stream, and blocks
    /// point at bits (FORMAT.md §15.6). A flag, not the parsed codes:
    /// [`Frames`] copies this view for every address, and with the codes'
    /// 144 bytes in it those copies were 1.3 % of the instructions of
    /// libstdc++'s 100k lookups (callgrind).
    #[cfg(feature = "coded-lines")]
    coded: bool,
    /// log2 of the rows per block: [`LINE_BLOCK_MIN`] shifted by header
    /// byte 38. A shift, not a count: block arithmetic on every lookup
    /// must not divide.
    block_log2: u32,
    nrows: usize,
    nnodes: usize,
    nfiles: usize,
    nstrings: usize,
    base: u64,
    /// Widths: parent, string id, file id, call line, call column, string offset.
    w: [u32; 6],
    /// Bits of one node record.
    node_w: u64,
    /// Flag bit 4: inlined nodes' call sites apart, by the node's rank
    /// among them (FORMAT.md §15.1): the byte offsets in `nodes` of the
    /// bitvector's words, its rank samples and the call sites, found at
    /// parse (a frame walk reads them per node); `None` without the flag.
    #[cfg(feature = "coded-lines")]
    calls_at: Option<[u32; 3]>,
    blocks: &'a [u8],
    rows: &'a [u8],
    nodes: &'a [u8],
    files: &'a [u8],
    offsets: &'a [u8],
    codes: &'a [u8],
    tokens: Tokens<'a>,
    /// Flag bit 1: node names from `nstrings` on are symbol names.
    #[cfg(feature = "symbol-names-in-lines")]
    symbol_names: bool,
    /// The blob's names section, once attached
    /// ([`LineTable::with_symbol_names`]): node name `nstrings + r` is the
    /// name of rank `r`, for `r < nsym`.
    #[cfg(feature = "symbol-names-in-lines")]
    names: Option<CodedName<'a>>,
    #[cfg(feature = "symbol-names-in-lines")]
    nsym: usize,
}

/// The call sites of a `lines` section with flag bit 4: a bitvector with
/// rank samples marking inlined nodes, and their call sites in rank order.
#[cfg(feature = "coded-lines")]
struct Calls<'a> {
    words: &'a [u8],
    ranks: &'a [u8],
    sites: &'a [u8],
}

/// Where the pieces of a nodes part of `len` bytes with flag bit 4
/// (FORMAT.md §15.1) start, for `nnodes` nodes whose records take `rec_w`
/// bits: the bitvector's words, its rank samples, the call sites. `None`
/// when the part is shorter than the records and the bitvector.
#[cfg(feature = "coded-lines")]
fn calls_at(len: usize, nnodes: usize, rec_w: u32) -> Option<[u32; 3]> {
    let words = nnodes.checked_mul(rec_w as usize)?.div_ceil(64) * 8;
    let ranks = words.checked_add(8 * nnodes.div_ceil(64))?;
    let sites = words.checked_add(bitvector_len(nnodes))?;
    (sites <= len && len <= u32::MAX as usize).then_some([words as u32, ranks as u32, sites as u32])
}

/// A function's name in a `lines` section: its own string, or a symbol's
/// name in the blob's names section (FORMAT.md §15.1, flag bit 1). Its
/// variants follow the crate's features: read it through its methods.
#[derive(Clone, Copy)]
#[non_exhaustive]
pub enum FunctionName<'a> {
    /// One of the section's strings.
    Coded(CodedStr<'a>),
    /// A symbol's stored name (FORMAT.md §11.2).
    #[cfg(feature = "symbol-names-in-lines")]
    Symbol(CodedName<'a>),
}

impl<'a> FunctionName<'a> {
    /// Calls `f` with the name's bytes, in runs, in order.
    pub fn for_each_run(&self, f: impl FnMut(&'a [u8])) {
        match self {
            FunctionName::Coded(s) => s.runs().for_each(f),
            #[cfg(feature = "symbol-names-in-lines")]
            FunctionName::Symbol(n) => n.for_each_stored_run(f),
        }
    }

    /// True for the empty name.
    pub fn is_empty(&self) -> bool {
        let mut empty = true;
        self.for_each_run(|r| empty &= r.is_empty());
        empty
    }

    /// Appends the name's bytes to `out`.
    #[cfg(feature = "std")]
    pub fn extend_into(&self, out: &mut std::vec::Vec<u8>) {
        self.for_each_run(|r| out.extend_from_slice(r));
    }
}

/// A string of the `lines` section, pair-coded (FORMAT.md §15.3): iterate
/// its bytes in runs with [`CodedStr::runs`].
#[derive(Debug, Clone, Copy)]
pub struct CodedStr<'a> {
    codes: &'a [u8],
    tokens: Option<Tokens<'a>>,
}

impl<'a> CodedStr<'a> {
    /// The empty string.
    pub const EMPTY: CodedStr<'static> = CodedStr {
        codes: &[],
        tokens: None,
    };

    /// True for the empty string.
    pub fn is_empty(&self) -> bool {
        self.codes.is_empty()
    }

    /// The string's bytes, one token expansion at a time.
    pub fn runs(&self) -> impl Iterator<Item = &'a [u8]> + 'a {
        let codes = self.codes;
        self.tokens.into_iter().flat_map(move |t| t.runs(codes))
    }

    /// Appends the string's bytes to `out`.
    #[cfg(feature = "std")]
    pub fn extend_into(&self, out: &mut std::vec::Vec<u8>) {
        for r in self.runs() {
            out.extend_from_slice(r);
        }
    }

    /// True when the string's bytes equal `s`.
    pub fn eq_bytes(&self, mut s: &[u8]) -> bool {
        for r in self.runs() {
            match s.strip_prefix(r) {
                Some(rest) => s = rest,
                None => return false,
            }
        }
        s.is_empty()
    }
}

/// The source state of one address: the row of the step function it falls
/// in (FORMAT.md §15.2). Ids index the section's tables.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SourceRow {
    /// First address of the row (unslid, as stored).
    pub address: u64,
    /// File id; 0: no line information.
    pub file: u32,
    /// Line; 0: unknown.
    pub line: u32,
    /// Column; 0: unknown, or not stored.
    pub column: u32,
    /// Innermost function node; 0: no function information.
    pub node: u32,
    /// The line-table row's discriminator; 0: none.
    pub discriminator: u32,
}

/// Walks a block's `count` rows from `first`, calling `f` on each whose
/// address is at most `addr` and stopping at the first past it; `step`
/// turns a row into the next (its discriminator reset to 0) given the
/// recent states and *top*, the largest node so far in the block, which
/// general rows' node deltas are relative to (FORMAT.md §15.2). The byte
/// and the coded decoders (§15.6) spell rows apart and walk them alike.
// Always inlined: it is the byte decoder's loop as much as the coded
// one's, and a kernel's reader (opt-level "s") kept it apart: 230 bytes
// more (riscv32, default-release profile: 14,516 against 14,286).
#[inline(always)]
pub(super) fn walk_block(
    mut r: SourceRow,
    count: usize,
    addr: u64,
    mut f: impl FnMut(&SourceRow),
    mut step: impl FnMut(&mut SourceRow, &RecentStates, u32) -> Option<()>,
) -> Option<()> {
    if r.address > addr {
        return Some(());
    }
    f(&r);
    let mut recent = RecentStates::default();
    recent.touch(r.node, r.file, r.line);
    let mut top = r.node;
    for _ in 1..count {
        r.discriminator = 0;
        step(&mut r, &recent, top)?;
        if r.address > addr {
            return Some(());
        }
        recent.touch(r.node, r.file, r.line);
        top = top.max(r.node);
        f(&r);
    }
    Some(())
}

impl SourceRow {
    /// A block's first row at `address`, its fields read in their stored
    /// order by `next` (FORMAT.md §15.2: file, line, [column], node,
    /// discriminator); `None` when one is missing or above u32.
    #[inline(always)]
    pub(super) fn first_of_block(
        address: u64,
        columns: bool,
        mut next: impl FnMut() -> Option<u64>,
    ) -> Option<SourceRow> {
        let mut v = || u32::try_from(next()?).ok();
        let (file, line) = (v()?, v()?);
        let column = if columns { v()? } else { 0 };
        Some(SourceRow {
            address,
            file,
            line,
            column,
            node: v()?,
            discriminator: v()?,
        })
    }

    /// The fields a block's first row stores, in their order: what
    /// [`SourceRow::first_of_block`] reads back.
    #[cfg(feature = "std")]
    pub(super) fn first_fields(&self, columns: bool) -> impl Iterator<Item = u64> {
        let column = columns.then_some(self.column);
        let d = Some(self.discriminator);
        [Some(self.file), Some(self.line), column, Some(self.node), d]
            .into_iter()
            .flatten()
            .map(u64::from)
    }
}

/// One frame of an address's inline chain. Names and paths are ids into
/// the section's tables, decoded on demand with [`LineTable::string`] and
/// [`LineTable::file`] (a stream of lookups decodes each once and caches it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceFrame {
    /// The function name's id, for [`LineTable::function`]: DWARF's name
    /// for inlined frames, the symbol table's for the outermost (FORMAT.md
    /// §15.3); `u32::MAX` when there is none.
    pub function: u32,
    /// The file id (0: none); [`LineTable::file`] gives (directory, base
    /// name), the path being `dir/base`.
    pub file: u32,
    /// Line; 0 when unknown.
    pub line: u32,
    /// Column, when the blob stores columns and it is known (nonzero).
    pub column: Option<u32>,
    /// The innermost frame's line-table discriminator (0 for call sites
    /// and where there is none), as binutils' addr2line prints it.
    pub discriminator: u32,
    /// True for an inlined subroutine; false for the last frame, the
    /// function the code belongs to.
    pub inlined: bool,
}

/// Reads an unsigned LEB128 value of up to 64 bits at `*at` and advances.
#[cfg_attr(feature = "std", inline(always))]
fn uleb(b: &[u8], at: &mut usize) -> Option<u64> {
    // Most values are below 128: one byte.
    let first = *b.get(*at)?;
    if first < 0x80 {
        *at += 1;
        return Some(u64::from(first));
    }
    uleb_long(b, at)
}

#[inline(never)]
fn uleb_long(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let byte = *b.get(*at)?;
        *at += 1;
        if shift == 63 && byte > 1 {
            return None;
        }
        v |= u64::from(byte & 0x7F) << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}

#[cfg_attr(feature = "std", inline)]
fn unzig(v: u64) -> i64 {
    (v >> 1) as i64 ^ -((v & 1) as i64)
}

fn bad(at: usize, what: Problem) -> BlobError {
    BlobError {
        offset: at,
        kind: BlobErrorKind::BadSection {
            section: SectionId::Lines.name(),
            what,
        },
    }
}

impl<'a> LineTable<'a> {
    /// Checks the header and the parts' shapes of a `lines` section that
    /// starts at byte `at` of the blob (for error offsets).
    ///
    /// Errors: [`BlobErrorKind::BadSection`] naming `lines` when a count,
    /// width or length disagrees with the bytes.
    pub fn parse(sec: &'a [u8], at: usize) -> Result<Self, BlobError> {
        if sec.len() < LINES_HEADER {
            return Err(bad(at, Problem::ShorterThanHeader));
        }
        let flags = u32_at(sec, 0);
        // Without feature `symbol-names-in-lines` flag bit 1 still reads:
        // the names it refers to are then no names (blobs a kernel embeds,
        // `ksym-pack --patch-elf`/`--asm`, never set it).
        // Flag bit 3 (coded rows) only with feature `coded-lines`: a
        // kernel's blob never has it.
        let known = if cfg!(feature = "coded-lines") { 31 } else { 7 };
        if flags & !known != 0 || u32_at(sec, 20) != 0 || sec[39] != 0 {
            return Err(bad(at, Problem::UnknownFlagsOrReserved));
        }
        if sec[38] > LINE_BLOCK_SHIFT_MAX {
            return Err(bad(at + 38, Problem::BlockShift));
        }
        let block_log2 = LINE_BLOCK_MIN.trailing_zeros() + u32::from(sec[38]);
        let n = |o| u32_at(sec, o) as usize;
        let (nrows, nnodes, nfiles, nstrings) = (n(4), n(8), n(12), n(16));
        let mut w = [0u32; 6];
        for (i, x) in w.iter_mut().enumerate() {
            *x = u32::from(sec[32 + i]);
            if *x > 32 {
                return Err(bad(at + 32 + i, Problem::FieldTooWide));
            }
        }
        if u32_at(sec, 68) != 0 {
            return Err(bad(at + 68, Problem::NonZeroReserved));
        }
        let mut parts = [&sec[..0]; 7];
        let mut off = LINES_HEADER;
        for (i, p) in parts.iter_mut().enumerate() {
            let len = n(40 + 4 * i);
            *p = sec
                .get(off..off.saturating_add(len))
                .ok_or(bad(at + 40 + 4 * i, Problem::PartTooLong))?;
            let end = off + len;
            off = end.div_ceil(8) * 8;
            if sec
                .get(end..off)
                .is_some_and(|pad| pad.iter().any(|&b| b != 0))
            {
                return Err(bad(at + end, Problem::NonZeroPartPadding));
            }
        }
        if off != sec.len() {
            return Err(bad(at, Problem::PartsNotFilling));
        }
        let bits = |count: usize, width: u32| {
            count
                .checked_mul(width as usize)
                .map(|b| b.div_ceil(64) * 8)
        };
        let node_w = (w[0] + w[1] + w[2] + w[3] + w[4]) as usize;
        // Flag bit 4: records of parent and name, the inlined nodes'
        // bitvector, their call sites (FORMAT.md §15.1).
        #[cfg(feature = "coded-lines")]
        let calls_apart = flags & 16 != 0;
        #[cfg(feature = "coded-lines")]
        let calls_at = calls_at(parts[2].len(), nnodes, w[0] + w[1]).filter(|_| calls_apart);
        #[cfg(feature = "coded-lines")]
        let nodes_ok = match calls_at.map(|[words, ranks, sites]| {
            let ones = count_ones(&parts[2][words as usize..ranks as usize]);
            (ones, parts[2].len() - sites as usize)
        }) {
            Some((ones, sites)) => bits(ones, w[2] + w[3] + w[4]) == Some(sites),
            None => !calls_apart && bits(nnodes, node_w as u32) == Some(parts[2].len()),
        };
        #[cfg(not(feature = "coded-lines"))]
        let nodes_ok = bits(nnodes, node_w as u32) == Some(parts[2].len());
        let ok = nrows > 0
            && nnodes > 0
            && nfiles > 0
            && parts[0].len() == 8 * nrows.div_ceil(1 << block_log2)
            && nodes_ok
            && bits(nfiles, 2 * w[1]) == Some(parts[3].len())
            && nstrings.checked_add(1).and_then(|s| bits(s, w[5])) == Some(parts[4].len())
            && (parts[5].len() as u64) < 1u64 << w[5]
            && (nstrings as u64) <= 1u64 << w[1]
            && (nfiles as u64) <= 1u64 << w[2];
        if !ok {
            return Err(bad(at, Problem::PartShapes));
        }
        #[cfg(feature = "coded-lines")]
        let coded = flags & 8 != 0;
        #[cfg(feature = "coded-lines")]
        if coded {
            super::coded::RowCode::parse(parts[1]).map_err(|o| {
                let rows_at = LINES_HEADER + parts[0].len().div_ceil(8) * 8;
                bad(at + rows_at + o, Problem::RowCode)
            })?;
        }
        Ok(LineTable {
            columns: flags & 1 != 0,
            far_advance: flags & 4 != 0,
            #[cfg(feature = "coded-lines")]
            coded,
            block_log2,
            nrows,
            nnodes,
            nfiles,
            nstrings,
            base: u64_at(sec, 24),
            w,
            node_w: node_w as u64,
            #[cfg(feature = "coded-lines")]
            calls_at,
            blocks: parts[0],
            rows: parts[1],
            nodes: parts[2],
            files: parts[3],
            offsets: parts[4],
            codes: parts[5],
            tokens: Tokens::parse(parts[6]).map_err(|(o, what)| bad(at + o, what))?,
            #[cfg(feature = "symbol-names-in-lines")]
            symbol_names: flags & 2 != 0,
            #[cfg(feature = "symbol-names-in-lines")]
            names: None,
            #[cfg(feature = "symbol-names-in-lines")]
            nsym: 0,
        })
    }

    /// The table with the blob's names section attached: `names` and
    /// `name_index` (FORMAT.md §11.2) hold `m` stored names coded with
    /// `tokens`. Node names past the section's strings then name symbols
    /// (flag bit 1); without the flag nothing changes.
    #[cfg(feature = "symbol-names-in-lines")]
    pub fn with_symbol_names(
        mut self,
        names: &'a [u8],
        name_index: &'a [u8],
        tokens: Tokens<'a>,
        m: usize,
    ) -> Self {
        if self.symbol_names {
            self.names = Some(CodedName {
                names,
                name_index,
                rank: 0,
                pfx: false,
                tokens,
            });
            self.nsym = m;
        }
        self
    }

    /// Function name `id` of a [`SourceFrame`]: a string of the section,
    /// or (flag bit 1) the symbol name of rank `id − nstrings`; `None` past
    /// both.
    pub fn function(&self, id: u32) -> Option<FunctionName<'a>> {
        #[cfg(feature = "symbol-names-in-lines")]
        if let (Some(r), Some(n)) = ((id as usize).checked_sub(self.nstrings), self.names) {
            return (r < self.nsym).then_some(FunctionName::Symbol(CodedName {
                rank: r as u32,
                ..n
            }));
        }
        self.string(id).map(FunctionName::Coded)
    }

    /// Function name ids below this name something.
    fn names_end(&self) -> usize {
        #[cfg(feature = "symbol-names-in-lines")]
        return self.nstrings + self.nsym;
        #[cfg(not(feature = "symbol-names-in-lines"))]
        self.nstrings
    }

    /// Rows of the step function, the end row included.
    pub fn rows(&self) -> usize {
        self.nrows
    }

    /// Nodes of the inline tree, the "none" node 0 included.
    pub fn nodes(&self) -> usize {
        self.nnodes
    }

    /// True when columns are stored.
    pub fn has_columns(&self) -> bool {
        self.columns
    }

    /// The first address with a row and the end row's address: every
    /// address with source information lies in `start..end`.
    pub fn span(&self) -> (u64, u64) {
        let last = self.blocks() - 1;
        let mut end = self.base;
        let _ = self.decode_block(last, u64::MAX, |r| end = r.address);
        (self.base, end)
    }

    fn block_start(&self, b: usize) -> u64 {
        // Wrapping: a forged base near 2^64 gives wrong rows, not a panic.
        self.base
            .wrapping_add(u64::from(u32_at(self.blocks, 8 * b)))
    }

    /// Decodes block `b`'s rows in order, calling `f` on each whose address
    /// is at most `addr`; stops at the first one past it. `None` when the
    /// bytes do not decode (a forged blob). The state lives in locals, one
    /// match per opcode.
    #[cfg_attr(feature = "std", inline(always))]
    fn decode_block(&self, b: usize, addr: u64, f: impl FnMut(&SourceRow)) -> Option<()> {
        let at0 = u32_at(self.blocks, 8 * b + 4) as usize;
        #[cfg(feature = "coded-lines")]
        if let Some(code) = self.row_code() {
            let (count, start) = (self.block_len(b), self.block_start(b));
            return code.decode_block(at0, count, start, self.columns, addr, f);
        }
        let s = self.rows.get(at0..)?;
        let count = self.block_len(b);
        let mut at = 0usize;
        let first =
            SourceRow::first_of_block(self.block_start(b), self.columns, || uleb(s, &mut at))?;
        walk_block(first, count, addr, f, |r, recent, top| {
            let op = *s.get(at)?;
            at += 1;
            if op < 0x80 {
                r.address = r.address.wrapping_add(u64::from(op >> 3) + 1);
                r.line = r.line.wrapping_add_signed(i32::from(op & 7) - 2);
            } else if op & 0xF8 == 0xD8 && self.far_advance {
                // Far advance: 11 bits, the address delta − 1 above the
                // line delta + 32.
                let x = u32::from(op & 7) << 8 | u32::from(*s.get(at)?);
                at += 1;
                r.address = r.address.wrapping_add(u64::from(x >> 6) + 1);
                r.line = r.line.wrapping_add_signed((x & 63) as i32 - 32);
            } else {
                r.address = r.address.checked_add(uleb(s, &mut at)?)?;
                match op {
                    0x80..=0xBF | 0xC8..=0xD7 | 0xE0..=0xFF => {
                        let (j, d) = match op {
                            0x80..=0xBF => (op >> 3 & 7, i64::from(op & 7) - 2),
                            0xE0..=0xFF => (op >> 2 & 7, i64::from(op & 3) - 1),
                            _ => (op & 7, unzig(uleb(s, &mut at)?)),
                        };
                        let (node, file, line) = recent.get(usize::from(j))?;
                        (r.node, r.file) = (node, file);
                        r.line = (i64::from(line) + d).try_into().ok()?;
                        if op >= 0xD0 {
                            r.discriminator = u32::try_from(uleb(s, &mut at)?).ok()?;
                        }
                    }
                    0xC0..=0xC7 => {
                        r.line = (i64::from(r.line) + unzig(uleb(s, &mut at)?))
                            .try_into()
                            .ok()?;
                        if op & 1 != 0 {
                            r.file = u32::try_from(uleb(s, &mut at)?).ok()?;
                        }
                        if op & 2 != 0 {
                            r.node = (i64::from(top) + unzig(uleb(s, &mut at)?))
                                .try_into()
                                .ok()?;
                        }
                        if op & 4 != 0 {
                            r.discriminator = u32::try_from(uleb(s, &mut at)?).ok()?;
                        }
                    }
                    _ => return None,
                }
            }
            if self.columns {
                r.column = u32::try_from(uleb(s, &mut at)?).ok()?;
            }
            Some(())
        })
    }

    /// The codes and stream of coded rows (flag bit 3), checked at parse.
    #[cfg(feature = "coded-lines")]
    #[cfg_attr(feature = "std", inline)]
    fn row_code(&self) -> Option<super::coded::RowCode<'a>> {
        self.coded
            .then(|| super::coded::RowCode::parse(self.rows).ok())
            .flatten()
    }

    /// The call-site pieces of the nodes part (flag bit 4), checked at
    /// parse.
    #[cfg(feature = "coded-lines")]
    #[cfg_attr(feature = "std", inline)]
    fn calls(&self) -> Option<Calls<'a>> {
        let [words, ranks, sites] = self.calls_at?.map(|o| o as usize);
        Some(Calls {
            words: self.nodes.get(words..ranks)?,
            ranks: self.nodes.get(ranks..sites)?,
            sites: self.nodes.get(sites..)?,
        })
    }

    /// The row `addr` falls in, or `None` when it is outside the table or in
    /// a row without file and function (a gap between sections or
    /// sequences). `addr` is unslid. Time: a binary search over blocks and
    /// at most [`LineTable::rows_per_block`] rows decoded.
    pub fn find(&self, addr: u64) -> Option<SourceRow> {
        self.find_in(addr, 0..self.blocks())
    }

    /// Row blocks (FORMAT.md §15.1), the unit of [`LineTable::find_in`]'s window.
    pub fn blocks(&self) -> usize {
        // 8 bytes a block, as `parse` checked: one shift where the count
        // from the rows took four operations on every lookup.
        self.blocks.len() / 8
    }

    /// Rows of block `b`: [`LineTable::rows_per_block`] but for the last;
    /// 0 past the table.
    fn block_len(&self, b: usize) -> usize {
        let first = b.wrapping_shl(self.block_log2);
        self.rows_per_block().min(self.nrows.saturating_sub(first))
    }

    /// Rows per block (FORMAT.md §15.1): 32, 64, 128 or 256; every block
    /// but the last holds this many.
    pub fn rows_per_block(&self) -> usize {
        1 << self.block_log2
    }

    /// The first address of block `b`.
    pub fn block_address(&self, b: usize) -> u64 {
        self.block_start(b)
    }

    /// [`LineTable::find`] when the number of blocks starting at or below
    /// `addr` is known to lie in `window` (an index over
    /// [`LineTable::block_address`] narrows it; a wrong window gives a
    /// wrong row, never a fault).
    pub fn find_in(&self, addr: u64, window: core::ops::Range<usize>) -> Option<SourceRow> {
        self.find_in_block(self.block_of(addr, window)?, addr)
    }

    /// The block holding `addr`'s row (the last block starting at or below
    /// it), searched within `window` as [`LineTable::find_in`] does; `None`
    /// below the table. With [`LineTable::touch_block`] and
    /// [`LineTable::find_in_block`] a caller splits a batch of lookups in
    /// phases whose memory reads overlap.
    #[cfg_attr(feature = "std", inline)]
    pub fn block_of(&self, addr: u64, window: core::ops::Range<usize>) -> Option<usize> {
        if addr < self.base {
            return None;
        }
        let nb = self.blocks();
        let lo = window.start.min(nb);
        let hi = window.end.min(nb).max(lo);
        (lo + partition_point(hi - lo, |k| self.block_start(lo + k) <= addr)).checked_sub(1)
    }

    /// Reads a byte of each 64-byte line of block `b`'s rows, at most four
    /// (to bring into cache the rows a lookup decodes first: 32 rows span
    /// two or three lines, libc's 256-row blocks seven or eight).
    #[cfg_attr(feature = "std", inline)]
    pub fn touch_block(&self, b: usize) -> u8 {
        let at = u32_at(self.blocks, 8 * b + 4) as usize;
        let next = (b + 1 < self.blocks()).then(|| u32_at(self.blocks, 8 * b + 12) as usize);
        // Coded blocks point at bits of the stream after the codes.
        #[cfg(feature = "coded-lines")]
        let (rows, at, next) = match self.row_code() {
            Some(code) => (code.stream(), at >> 3, next.map(|n| n >> 3)),
            None => (self.rows, at, next),
        };
        #[cfg(not(feature = "coded-lines"))]
        let rows = self.rows;
        let end = next.unwrap_or(rows.len());
        let mut t = 0;
        let mut p = at;
        while p < end.min(at.saturating_add(256)) {
            t ^= rows.get(p).copied().unwrap_or(0);
            p += 64;
        }
        t
    }

    /// Reads the first byte of `row`'s innermost inline-tree node (to bring
    /// it into cache before [`LineTable::frames`] walks it).
    #[cfg_attr(feature = "std", inline)]
    pub fn touch_node(&self, row: &SourceRow) -> u8 {
        let at = u64::from(row.node) * self.node_w / 8;
        usize::try_from(at)
            .ok()
            .and_then(|at| self.nodes.get(at))
            .copied()
            .unwrap_or(0)
    }

    /// `addr`'s row, decoded from block `b` ([`LineTable::block_of`]).
    pub fn find_in_block(&self, b: usize, addr: u64) -> Option<SourceRow> {
        if b >= self.blocks() {
            return None;
        }
        let mut hit = None;
        self.decode_block(b, addr, |r| hit = Some(*r))?;
        let r = hit?;
        // The end row (last of all) has file 0 and node 0 too.
        (r.file != 0 || r.node != 0).then_some(r)
    }

    /// Every row of block `b` in address order, to `f`: what a caller that
    /// keeps blocks decoded stores (a block's row at an address is then the
    /// last stored row at or below it, kept if it has a file or a node, as
    /// [`LineTable::find_in_block`] keeps it). `None` when `b` is past the
    /// table or the bytes do not decode (a forged blob): `f` may have seen
    /// some rows by then.
    pub fn block_rows(&self, b: usize, f: impl FnMut(&SourceRow)) -> Option<()> {
        if b >= self.blocks() {
            return None;
        }
        self.decode_block(b, u64::MAX, f)
    }

    /// String `id` (function names, directories, base names).
    pub fn string(&self, id: u32) -> Option<CodedStr<'a>> {
        let id = id as usize;
        if id >= self.nstrings {
            return None;
        }
        let w = u64::from(self.w[5]);
        let a = get_bits(self.offsets, id as u64 * w, self.w[5]) as usize;
        let b = get_bits(self.offsets, (id as u64 + 1) * w, self.w[5]) as usize;
        Some(CodedStr {
            codes: self.codes.get(a..b)?,
            tokens: Some(self.tokens),
        })
    }

    /// File `id` as (directory, base name); `None` for 0 or past the table.
    pub fn file(&self, id: u32) -> Option<(CodedStr<'a>, CodedStr<'a>)> {
        if id == 0 || id as usize >= self.nfiles {
            return None;
        }
        let w = self.w[1];
        let pos = u64::from(id) * 2 * u64::from(w);
        let d = get_bits(self.files, pos, w) as u32;
        let b = get_bits(self.files, pos + u64::from(w), w) as u32;
        Some((self.string(d)?, self.string(b)?))
    }

    /// Node `id`'s fields: (parent, name id, call file, call line, call
    /// column); the parent is stored as its distance back (0: none), and
    /// one reaching node 0 or farther reads as `id` itself (a forged blob;
    /// callers stop at a parent that is not smaller than its child).
    fn node(&self, id: u32) -> [u32; 5] {
        let mut pos = u64::from(id) * self.node_w;
        let mut out = [0u32; 5];
        #[cfg(feature = "coded-lines")]
        if let Some(c) = self.calls() {
            let (wp, wn) = (self.w[0], self.w[1]);
            pos = u64::from(id) * u64::from(wp + wn);
            out[0] = get_bits(self.nodes, pos, wp) as u32;
            out[1] = get_bits(self.nodes, pos + u64::from(wp), wn) as u32;
            if out[0] != 0 && get_bit(c.words, id as usize) {
                let site_w = u64::from(self.w[2] + self.w[3] + self.w[4]);
                pos = rank1(c.words, c.ranks, id as usize) as u64 * site_w;
                for (o, &w) in out[2..].iter_mut().zip(&self.w[2..5]) {
                    *o = get_bits(c.sites, pos, w) as u32;
                    pos += u64::from(w);
                }
            }
            out[0] = match out[0] {
                0 => 0,
                d if d >= id => id,
                d => id - d,
            };
            return out;
        }
        for (o, &w) in out.iter_mut().zip(&self.w[..5]) {
            *o = get_bits(self.nodes, pos, w) as u32;
            pos += u64::from(w);
        }
        out[0] = match out[0] {
            0 => 0,
            d if d >= id => id, // before node 1: forged
            d => id - d,
        };
        out
    }

    /// The frames of `row`, innermost first: the innermost function at the
    /// row's location, then each caller at its call site; the last frame is
    /// the function the code belongs to (`inlined: false`). A row without a
    /// function (assembly) gives one frame whose `function` is empty.
    pub fn frames<'t>(&'t self, row: &SourceRow) -> Frames<'t, 'a> {
        Frames {
            table: self,
            node: row.node,
            file: row.file,
            line: row.line,
            column: row.column,
            discriminator: row.discriminator,
            done: row.node == 0 && row.file == 0,
            steps: 0,
        }
    }

    /// Checks every row, node and file decodes and refers inside its table,
    /// and that rows ascend (FORMAT.md §15.4). Time: one pass over the section.
    pub fn verify(&self) -> Result<(), BlobError> {
        let nb = self.blocks();
        let mut prev_end = None::<u64>;
        for b in 0..nb {
            let mut ok = true;
            let mut count = 0;
            let mut last = prev_end;
            let decoded = self.decode_block(b, u64::MAX, |r| {
                count += 1;
                ok &= last.is_none_or(|p| r.address > p)
                    && (r.file as usize) < self.nfiles
                    && (r.node as usize) < self.nnodes;
                last = Some(r.address);
            });
            if decoded.is_none() || !ok || count != self.block_len(b) {
                return Err(bad(0, Problem::RowBlock));
            }
            prev_end = last;
        }
        #[cfg(feature = "coded-lines")]
        if let Some(c) = self.calls() {
            // Marks exactly the nodes with a parent, samples exact.
            let mut ones = 0usize;
            for i in 0..self.nnodes {
                if i % 64 == 0 && u32_at(c.ranks, 4 * (i / 64)) as usize != ones {
                    return Err(bad(0, Problem::NodeRef));
                }
                let inlined = get_bits(
                    self.nodes,
                    i as u64 * u64::from(self.w[0] + self.w[1]),
                    self.w[0],
                ) != 0;
                if get_bit(c.words, i) != inlined || (i == 0 && inlined) {
                    return Err(bad(0, Problem::NodeRef));
                }
                ones += usize::from(inlined);
            }
        }
        for i in 1..self.nnodes {
            let [p, name, cf, _, _] = self.node(i as u32);
            if p as usize >= i || name as usize >= self.names_end() || cf as usize >= self.nfiles {
                return Err(bad(0, Problem::NodeRef));
            }
        }
        for i in 1..self.nfiles {
            if self.file(i as u32).is_none() {
                return Err(bad(0, Problem::FileRef));
            }
        }
        for i in 0..self.nstrings {
            let Some(s) = self.string(i as u32) else {
                return Err(bad(0, Problem::StringOffsetsNotAscending));
            };
            if !self.tokens.codes_are_whole(s.codes) {
                return Err(bad(0, Problem::CodeNotWhole));
            }
        }
        Ok(())
    }
}

/// Iterator over an address's frames, innermost first
/// ([`LineTable::frames`]). Ends after at most as many frames as the tree
/// has nodes, whatever the bytes say. It borrows the table: a copy of
/// [`LineTable`] (288 bytes on x86_64) per address was a call to memcpy.
#[derive(Debug, Clone)]
pub struct Frames<'t, 'a> {
    table: &'t LineTable<'a>,
    node: u32,
    file: u32,
    line: u32,
    column: u32,
    discriminator: u32,
    done: bool,
    steps: usize,
}

impl Iterator for Frames<'_, '_> {
    type Item = SourceFrame;

    fn next(&mut self) -> Option<SourceFrame> {
        if self.done {
            return None;
        }
        let t = self.table;
        let mut frame = SourceFrame {
            function: u32::MAX,
            file: if (self.file as usize) < t.nfiles {
                self.file
            } else {
                0
            },
            line: self.line,
            column: (t.columns && self.column != 0).then_some(self.column),
            discriminator: if self.steps == 0 {
                self.discriminator
            } else {
                0
            },
            inlined: false,
        };
        self.steps += 1;
        if self.node == 0 || self.node as usize >= t.nnodes || self.steps > t.nnodes {
            self.done = true;
            return Some(frame);
        }
        let [parent, name, cf, cl, cc] = t.node(self.node);
        if (name as usize) < t.names_end() {
            frame.function = name;
        }
        // A parent at or after its child is a forged blob: stop there.
        if parent == 0 || parent >= self.node {
            self.done = true;
        } else {
            frame.inlined = true;
            (self.node, self.file, self.line, self.column) = (parent, cf, cl, cc);
        }
        Some(frame)
    }
}
