//! The zero-copy reader: interprets a blob in place, validates all of it once,
//! then answers address and name lookups without allocating.
//!
//! Layout and rules: `docs/FORMAT.md` §2 (layout), §3 (name records and tokens),
//! §4 (orders) and §5 (lookups). Builds without std.

use core::cmp::Ordering;
use core::fmt;

use crate::blob::symbol::{AddressHit, BlobError, BlobErrorKind, Name, Symbol, cmp_parts};
use crate::blob::v1::layout::{
    END_MARKERS, LAST_SYMBOL_MAX_SPAN, MAX_TOKENS, RECORD_PREFIX_LEN, TOKEN_MARKER, TokenRefError,
    align_up, parse_token_ref,
};

/// Byte offsets of a v1 blob's arrays, for error messages.
struct SectionOffsets {
    names: usize,
    seqs: usize,
    token_table: usize,
    token_index: usize,
}

/// A validated, zero-copy view of a blob (FORMAT.md §2).
///
/// [`from_blob`](Self::from_blob) checks every count, offset, length, token id
/// and both orders once; lookups after that cannot fail and never allocate.
#[derive(Clone, Copy)]
pub struct KallsymsMapped<'a> {
    addresses: &'a [u64],
    offsets: &'a [u32],
    seqs: &'a [u32],
    names: &'a [u8],
    token_table: &'a [u8],
    token_index: &'a [u32],
    stext: Option<u64>,
    etext: Option<u64>,
    einittext: Option<u64>,
}

impl fmt::Debug for KallsymsMapped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KallsymsMapped")
            .field("num_syms", &self.len())
            .field("names_len", &self.names.len())
            .field("tokens", &self.token_index.len())
            .field("stext", &self.stext)
            .field("etext", &self.etext)
            .finish()
    }
}

/// Sections of a blob as byte ranges; what [`KallsymsMapped::section_sizes`] returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SectionSizes {
    /// `num_syms` symbols.
    pub num_syms: usize,
    /// Bytes of `addresses` (8 per symbol).
    pub addresses: usize,
    /// Bytes of `offsets` (4 per symbol).
    pub offsets: usize,
    /// Bytes of `seqs` (4 per symbol).
    pub seqs: usize,
    /// Bytes of name records (`names_len`).
    pub names: usize,
    /// Bytes of `token_table`.
    pub token_table: usize,
    /// Number of tokens (`token_index_len`).
    pub tokens: usize,
    /// Bytes of the whole blob, headers and padding included.
    pub total: usize,
}

/// Cursor over the blob that checks every bound.
struct Cursor<'a> {
    blob: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn err(&self, kind: BlobErrorKind) -> BlobError {
        BlobError {
            offset: self.pos,
            kind,
        }
    }
    fn pad_to(&mut self, align: usize, section: &'static str) -> Result<(), BlobError> {
        let end =
            align_up(self.pos, align).ok_or(self.err(BlobErrorKind::CountOverflow(section)))?;
        let pad = self
            .blob
            .get(self.pos..end)
            .ok_or(self.err(BlobErrorKind::Truncated(section)))?;
        if let Some(i) = pad.iter().position(|&b| b != 0) {
            return Err(BlobError {
                offset: self.pos + i,
                kind: BlobErrorKind::NonZeroPadding,
            });
        }
        self.pos = end;
        Ok(())
    }
    fn bytes(&mut self, len: usize, section: &'static str) -> Result<&'a [u8], BlobError> {
        let end = self
            .pos
            .checked_add(len)
            .ok_or(self.err(BlobErrorKind::CountOverflow(section)))?;
        let s = self
            .blob
            .get(self.pos..end)
            .ok_or(self.err(BlobErrorKind::Truncated(section)))?;
        self.pos = end;
        Ok(s)
    }
    fn count(&mut self, section: &'static str) -> Result<usize, BlobError> {
        let at = self.pos;
        let b = self.bytes(8, section)?;
        let v = <[u8; 8]>::try_from(b).map_or(u64::MAX, u64::from_le_bytes);
        usize::try_from(v).map_err(|_| BlobError {
            offset: at,
            kind: BlobErrorKind::CountOverflow(section),
        })
    }
    fn array<T: bytemuck::AnyBitPattern>(
        &mut self,
        n: usize,
        section: &'static str,
    ) -> Result<&'a [T], BlobError> {
        let len = n
            .checked_mul(core::mem::size_of::<T>())
            .ok_or(self.err(BlobErrorKind::CountOverflow(section)))?;
        let at = self.pos;
        let b = self.bytes(len, section)?;
        // Alignment holds because the blob start is 8-aligned (checked first)
        // and every section offset is padded to its element's alignment, so
        // this cast cannot fail; map the error anyway rather than trust that.
        bytemuck::try_cast_slice(b).map_err(|_| BlobError {
            offset: at,
            kind: BlobErrorKind::Misaligned,
        })
    }
}

/// The length in bytes of the v1 blob at the start of `region`, from its
/// counts alone (FORMAT.md §2 and §2.3): what [`KallsymsMapped::from_blob`]
/// must then be given. Reads at most the four count fields; checks nothing
/// else. No allocation.
///
/// Errors: [`BlobErrorKind::Truncated`] (with the offset) when `region`
/// ends before a count or before the array a count describes, and
/// [`BlobErrorKind::CountOverflow`] when the counts overflow `usize`.
pub fn blob_len(region: &[u8]) -> Result<usize, BlobError> {
    let mut c = Cursor {
        blob: region,
        pos: 0,
    };
    let n = c.count("num_syms")?;
    let arrays = n
        .checked_mul(16)
        .ok_or(c.err(BlobErrorKind::CountOverflow("num_syms")))?;
    c.bytes(arrays, "addresses, offsets and seqs")?;
    c.pad_to(8, "padding before names")?;
    let names = c.count("names_len")?;
    c.bytes(names, "names")?;
    c.pad_to(8, "padding before token_table")?;
    let table = c.count("token_table_len")?;
    c.bytes(table, "token_table")?;
    c.pad_to(8, "padding before token_index")?;
    let ntok = c.count("token_index_len")?;
    let index = ntok
        .checked_mul(4)
        .ok_or(c.err(BlobErrorKind::CountOverflow("token_index_len")))?;
    c.bytes(index, "token_index")?;
    Ok(c.pos)
}

impl<'a> KallsymsMapped<'a> {
    /// Validates `blob` and returns a view of it.
    ///
    /// `blob` must start at an 8-byte aligned address (a page-aligned mapping
    /// is); it is never copied. `stext`/`etext` override the blob's own
    /// `_stext`/`_etext` symbols; with `None` those are looked up in the blob,
    /// and a blob without `_etext` has no etext bound (FORMAT.md §5.2).
    ///
    /// Errors: [`BlobError`] with the byte offset of the first problem: misaligned
    /// buffer, truncation, overflowing counts, nonzero padding, trailing bytes,
    /// addresses not ascending, records not contiguous or malformed, token ids
    /// past the table, a bad token index, `seqs` not the name-order permutation.
    /// Time is linear in the blob size.
    pub fn from_blob(
        blob: &'a [u8],
        stext: Option<u64>,
        etext: Option<u64>,
    ) -> Result<Self, BlobError> {
        let (view, at, _) = Self::split_sections(blob, true)?;
        view.validate(at, stext, etext)
    }

    /// Opens the v1 blob at the start of a reserved region (FORMAT.md
    /// §2.3): the blob as its counts describe it, then zero bytes to the
    /// region's end. Returns the view and the number of padding bytes; the
    /// blob is checked as [`from_blob`](Self::from_blob) checks it. What
    /// `Kallsyms::from_region` runs for v1: one pass over the counts, so a
    /// kernel links no second parser of them ([`blob_len`]).
    ///
    /// Errors: those of `from_blob`, [`BlobErrorKind::NotFilled`] for a
    /// region of zeros only, and [`BlobErrorKind::NonZeroAfterBlob`] with
    /// the offset of the first nonzero byte after the blob.
    pub fn from_region(
        region: &'a [u8],
        stext: Option<u64>,
        etext: Option<u64>,
    ) -> Result<(Self, usize), BlobError> {
        crate::blob::symbol::check_filled(region)?;
        let (view, at, end) = Self::split_sections(region, false)?;
        let padding = region.get(end..).unwrap_or_default();
        if let Some(i) = padding.iter().position(|&b| b != 0) {
            return Err(BlobError {
                offset: end + i,
                kind: BlobErrorKind::NonZeroAfterBlob,
            });
        }
        Ok((view.validate(at, stext, etext)?, padding.len()))
    }

    /// Every check after the split, then the text bounds.
    fn validate(
        mut self,
        at: SectionOffsets,
        stext: Option<u64>,
        etext: Option<u64>,
    ) -> Result<Self, BlobError> {
        self.check_token_index(at.token_table, at.token_index)?;
        let [s, e, ei] = self.check_records(at.names)?;
        self.check_name_order(at.seqs)?;
        self.stext = stext.or(s);
        self.etext = etext.or(e);
        self.einittext = ei;
        Ok(self)
    }

    /// Cuts `blob` into its sections (FORMAT.md §2): alignment, counts that
    /// fit, zero padding, and with `whole` nothing after `token_index`.
    /// Returns the unchecked view, where its arrays start and where it ends.
    fn split_sections(
        blob: &'a [u8],
        whole: bool,
    ) -> Result<(Self, SectionOffsets, usize), BlobError> {
        // An empty slice's pointer is dangling: say what is really wrong.
        if blob.is_empty() {
            return Err(BlobError {
                offset: 0,
                kind: BlobErrorKind::Truncated("num_syms"),
            });
        }
        if blob.as_ptr().align_offset(8) != 0 {
            return Err(BlobError {
                offset: 0,
                kind: BlobErrorKind::Misaligned,
            });
        }
        let mut c = Cursor { blob, pos: 0 };
        let n = c.count("num_syms")?;
        // u32 seqs and offsets index the symbols and names.
        if u32::try_from(n).is_err() {
            return Err(BlobError {
                offset: 0,
                kind: BlobErrorKind::CountOverflow("num_syms"),
            });
        }
        let addresses: &[u64] = c.array(n, "addresses")?;
        let offsets: &[u32] = c.array(n, "offsets")?;
        let seqs: &[u32] = c.array(n, "seqs")?;
        c.pad_to(8, "padding before names")?;
        let names_len = c.count("names_len")?;
        let names_at = c.pos;
        let names = c.bytes(names_len, "names")?;
        c.pad_to(8, "padding before token_table")?;
        let table_len = c.count("token_table_len")?;
        let table_at = c.pos;
        let token_table = c.bytes(table_len, "token_table")?;
        c.pad_to(8, "padding before token_index")?;
        let ntok = c.count("token_index_len")?;
        if ntok > MAX_TOKENS {
            return Err(c.err(BlobErrorKind::TooManyTokens));
        }
        let index_at = c.pos;
        let token_index: &[u32] = c.array(ntok, "token_index")?;
        if whole && c.pos != blob.len() {
            return Err(c.err(BlobErrorKind::TrailingBytes("token_index")));
        }
        let view = KallsymsMapped {
            addresses,
            offsets,
            seqs,
            names,
            token_table,
            token_index,
            stext: None,
            etext: None,
            einittext: None,
        };
        let at = SectionOffsets {
            names: names_at,
            seqs: 8 + 12 * n,
            token_table: table_at,
            token_index: index_at,
        };
        Ok((view, at, c.pos))
    }

    /// Token index: starts at 0, strictly ascending (no empty token), inside
    /// the table; no token holds the marker byte (FORMAT.md §3.3).
    fn check_token_index(&self, table_at: usize, index_at: usize) -> Result<(), BlobError> {
        let table_len = self.token_table.len();
        let ntok = self.token_index.len();
        let mut prev_end = 0usize;
        for id in 0..ntok {
            let start = u32::from_le(self.token_index[id]) as usize;
            let end = match self.token_index.get(id + 1) {
                Some(&e) => u32::from_le(e) as usize,
                None => table_len,
            };
            if start != prev_end || end <= start || end > table_len {
                return Err(BlobError {
                    offset: index_at + 4 * id,
                    kind: BlobErrorKind::BadTokenIndex { id },
                });
            }
            if let Some(i) = self.token_table[start..end]
                .iter()
                .position(|&b| b == TOKEN_MARKER)
            {
                return Err(BlobError {
                    offset: table_at + start + i,
                    kind: BlobErrorKind::MarkerInToken { id },
                });
            }
            prev_end = end;
        }
        if ntok == 0 && table_len != 0 {
            return Err(BlobError {
                offset: table_at,
                kind: BlobErrorKind::BadTokenIndex { id: 0 },
            });
        }
        Ok(())
    }

    /// Addresses ascending; records contiguous, filling `names`, and well
    /// formed (FORMAT.md §3.2). Returns the addresses of the first
    /// `_stext`, `_etext` and `_einittext` in address order (what
    /// `lookup_name` would find): found on the way, a kernel reading its
    /// blob links no name search for them.
    fn check_records(&self, names_at: usize) -> Result<[Option<u64>; 3], BlobError> {
        const BOUNDS: [&[u8]; 3] = [b"_stext", END_MARKERS[0], END_MARKERS[1]];
        let mut bounds = [None; 3];
        let n = self.len();
        let addr_at = 8;
        let off_at = addr_at + 8 * n;
        let mut expect = 0usize;
        for (i, &off) in self.offsets.iter().enumerate() {
            if i > 0 && self.address(i) < self.address(i - 1) {
                return Err(BlobError {
                    offset: addr_at + 8 * i,
                    kind: BlobErrorKind::AddressesNotAscending { index: i },
                });
            }
            if u32::from_le(off) as usize != expect {
                return Err(BlobError {
                    offset: off_at + 4 * i,
                    kind: BlobErrorKind::RecordsNotContiguous { index: i },
                });
            }
            expect = self
                .check_record(i, expect)
                .map_err(|(at, kind)| BlobError {
                    offset: names_at + at,
                    kind,
                })?;
            let (_, token, rest) = self.record_parts(i);
            for (b, name) in bounds.iter_mut().zip(BOUNDS) {
                if b.is_none()
                    && token.len() + rest.len() == name.len()
                    && name.get(..token.len()) == Some(token)
                    && name.get(token.len()..) == Some(rest)
                {
                    *b = Some(self.address(i));
                }
            }
        }
        if expect != self.names.len() {
            return Err(BlobError {
                offset: names_at + expect,
                kind: BlobErrorKind::RecordsNotContiguous { index: n },
            });
        }
        Ok(bounds)
    }

    /// `seqs` sorted by (name, address index), strictly: with each entry < n
    /// that makes it a permutation of 0..n without any scratch memory
    /// (FORMAT.md §4).
    fn check_name_order(&self, seqs_at: usize) -> Result<(), BlobError> {
        let n = self.len();
        let mut prev = 0;
        for (rank, &s) in self.seqs.iter().enumerate() {
            let s = u32::from_le(s) as usize;
            let bad = BlobError {
                offset: seqs_at + 4 * rank,
                kind: BlobErrorKind::NameOrder { rank },
            };
            if s >= n {
                return Err(bad);
            }
            let p = core::mem::replace(&mut prev, s);
            if rank > 0 {
                match self.name(p).cmp_plain(&self.name(s)) {
                    Ordering::Less => {}
                    Ordering::Equal if p < s => {}
                    _ => return Err(bad),
                }
            }
        }
        Ok(())
    }

    /// Checks record `i` starting at `at` in names; returns where it ends.
    fn check_record(&self, i: usize, at: usize) -> Result<usize, (usize, BlobErrorKind)> {
        let Some(&[ty, l0, l1]) = self.names.get(at..at.saturating_add(RECORD_PREFIX_LEN)) else {
            return Err((at, BlobErrorKind::RecordPastEnd { index: i }));
        };
        if !(0x21..=0x7E).contains(&ty) {
            return Err((at, BlobErrorKind::BadSymbolType { index: i }));
        }
        let len = usize::from(u16::from_le_bytes([l0, l1]));
        let start = at + RECORD_PREFIX_LEN;
        let payload = self
            .names
            .get(start..start + len)
            .ok_or((at, BlobErrorKind::RecordPastEnd { index: i }))?;
        let raw_from = match parse_token_ref(payload) {
            Ok(None) => 0,
            Ok(Some((id, rl))) => {
                if id as usize >= self.token_index.len() {
                    return Err((start, BlobErrorKind::TokenIdOutOfRange { index: i, id }));
                }
                rl
            }
            Err(TokenRefError::Unclosed | TokenRefError::NonCanonical) => {
                return Err((start, BlobErrorKind::BadTokenRef { index: i }));
            }
        };
        if len == 0 {
            return Err((at, BlobErrorKind::EmptyName { index: i }));
        }
        let raw = payload.get(raw_from..).unwrap_or(&[]);
        if let Some(p) = raw.iter().position(|&b| b == TOKEN_MARKER) {
            return Err((
                start + raw_from + p,
                BlobErrorKind::MarkerInName { index: i },
            ));
        }
        Ok(start + len)
    }

    /// Number of symbols (`num_syms`).
    pub fn len(&self) -> usize {
        self.addresses.len()
    }

    /// True when the blob holds no symbol.
    pub fn is_empty(&self) -> bool {
        self.addresses.is_empty()
    }

    /// The `_stext` bound in use (the override, else the blob's `_stext`), if any.
    pub fn stext(&self) -> Option<u64> {
        self.stext
    }

    /// The `_etext` bound in use (the override, else the blob's `_etext`), if any.
    pub fn etext(&self) -> Option<u64> {
        self.etext
    }

    /// Number of tokens in the token table.
    pub fn num_tokens(&self) -> usize {
        self.token_index.len()
    }

    /// Token `id`'s bytes; empty when `id >= num_tokens()`.
    pub fn token(&self, id: usize) -> &'a [u8] {
        // Checked at open; `get` keeps a kernel's reader free of panics.
        let at = |i: usize| self.token_index.get(i).map(|&x| u32::from_le(x) as usize);
        let end = at(id + 1).unwrap_or(self.token_table.len());
        at(id)
            .and_then(|start| self.token_table.get(start..end))
            .unwrap_or(&[])
    }

    /// Byte sizes of the sections (FORMAT.md §2).
    pub fn section_sizes(&self) -> SectionSizes {
        let n = self.len();
        let names_end = align_up(8 + 16 * n, 8).unwrap_or(0) + 8 + self.names.len();
        let table_end = align_up(names_end, 8).unwrap_or(0) + 8 + self.token_table.len();
        SectionSizes {
            num_syms: n,
            addresses: 8 * n,
            offsets: 4 * n,
            seqs: 4 * n,
            names: self.names.len(),
            token_table: self.token_table.len(),
            tokens: self.token_index.len(),
            total: align_up(table_end, 8).unwrap_or(0) + 8 + 4 * self.token_index.len(),
        }
    }

    /// Address of symbol `i` (address order); 0 when `i >= len()`.
    #[cfg_attr(feature = "std", inline)]
    pub fn address(&self, i: usize) -> u64 {
        self.addresses.get(i).map_or(0, |&a| u64::from_le(a))
    }

    /// Name of symbol `i` (address order). An empty name when `i >= len()`.
    #[cfg_attr(feature = "std", inline)]
    pub fn name(&self, i: usize) -> Name<'a> {
        self.record(i).1
    }

    #[cfg_attr(feature = "std", inline)]
    fn record(&self, i: usize) -> (u8, Name<'a>) {
        let (ty, token, rest) = self.record_parts(i);
        (ty, Name::plain(token, rest))
    }

    /// Type, token and raw rest of record `i`: what name searches compare,
    /// without building a format-neutral [`Name`].
    #[cfg_attr(feature = "std", inline)]
    fn record_parts(&self, i: usize) -> (u8, &'a [u8], &'a [u8]) {
        // Validated in from_blob: in bounds, well formed. `get` all the
        // same: no panic path for a kernel's reader to link.
        let at = self
            .offsets
            .get(i)
            .map_or(usize::MAX, |&o| u32::from_le(o) as usize);
        let Some(&[ty, l0, l1]) = self.names.get(at..at.wrapping_add(RECORD_PREFIX_LEN)) else {
            return (0, &[], &[]);
        };
        let start = at + RECORD_PREFIX_LEN;
        let len = usize::from(u16::from_le_bytes([l0, l1]));
        let payload = self.names.get(start..start + len).unwrap_or(&[]);
        match parse_token_ref(payload) {
            Ok(Some((id, rl))) => (
                ty,
                self.token(id as usize),
                payload.get(rl..).unwrap_or(&[]),
            ),
            _ => (ty, &[], payload),
        }
    }

    /// Symbol `i` in address order. Empty (type 0, address 0) when `i >= len()`.
    #[cfg_attr(feature = "std", inline)]
    pub fn symbol(&self, i: usize) -> Symbol<'a> {
        let (symbol_type, name) = self.record(i);
        Symbol {
            index: i,
            address: self.address(i),
            symbol_type,
            name,
            module: None,
        }
    }

    /// All symbols in address order (aliases in input order), as `dump` prints them.
    pub fn symbols(&self) -> impl ExactSizeIterator<Item = Symbol<'a>> + '_ {
        (0..self.len()).map(move |i| self.symbol(i))
    }

    /// All symbols in name order (FORMAT.md §4).
    pub fn symbols_by_name(&self) -> impl ExactSizeIterator<Item = Symbol<'a>> + '_ {
        self.seqs
            .iter()
            .map(move |&s| self.symbol(u32::from_le(s) as usize))
    }

    /// The symbol covering `addr` under the kernel's rule (FORMAT.md §5.2):
    /// the first alias of the last address `<= addr`; it covers up to the next
    /// distinct address, and a symbol below etext at most up to etext; the last
    /// symbol above etext covers at most 1 MiB. `None` below the first symbol,
    /// in a gap past a symbol's end, and inside the alias group at etext or at
    /// `_einittext` (end markers cover nothing).
    #[cfg_attr(feature = "std", inline)]
    pub fn lookup_address(&self, addr: u64) -> Option<AddressHit<'a>> {
        let hi = self.addresses.partition_point(|&x| u64::from_le(x) <= addr);
        self.hit_before(addr, hi)
    }

    /// [`lookup_address`](Self::lookup_address) with the binary search
    /// narrowed to `window`, which must contain the number of addresses
    /// `<= addr` (as `addrindex::AddressIndex` computes with the std feature). A window
    /// that does not gives a wrong answer, never undefined behaviour; one
    /// past `len()` is clamped.
    #[cfg_attr(feature = "std", inline)]
    pub fn lookup_address_in(
        &self,
        addr: u64,
        window: core::ops::Range<usize>,
    ) -> Option<AddressHit<'a>> {
        self.lookup_ranked(addr, self.rank_in(addr, window))
    }

    /// The number of symbol addresses `<= addr`, searched inside `window`
    /// (see [`lookup_address_in`](Self::lookup_address_in)). The first step of
    /// a lookup, split out so callers can overlap many lookups' cache misses.
    #[cfg_attr(feature = "std", inline)]
    pub fn rank_in(&self, addr: u64, window: core::ops::Range<usize>) -> usize {
        let end = window.end.min(self.len());
        let start = window.start.min(end);
        start + self.addresses[start..end].partition_point(|&x| u64::from_le(x) <= addr)
    }

    /// The second step of a lookup: the answer for `addr` given `rank`, the
    /// number of addresses `<= addr` (from [`rank_in`](Self::rank_in)).
    #[cfg_attr(feature = "std", inline)]
    pub fn lookup_ranked(&self, addr: u64, rank: usize) -> Option<AddressHit<'a>> {
        self.hit_before(addr, rank.min(self.len()))
    }

    /// Symbol type of symbol `i` (address order); 0 when `i >= len()`.
    #[cfg_attr(feature = "std", inline)]
    pub fn symbol_type(&self, i: usize) -> u8 {
        self.record_parts(i).0
    }

    /// The kernel rule of FORMAT.md §5.2, given `hi` = number of addresses `<= addr`.
    #[cfg_attr(feature = "std", inline)]
    fn hit_before(&self, addr: u64, hi: usize) -> Option<AddressHit<'a>> {
        let a = self.addresses;
        if hi == 0 {
            return None;
        }
        let sym_addr = self.address(hi - 1);
        if Some(sym_addr) == self.etext || Some(sym_addr) == self.einittext {
            return None;
        }
        let mut first = hi - 1;
        if first > 0 && self.address(first - 1) == sym_addr {
            first = a
                .get(..first)
                .map_or(0, |a| a.partition_point(|&x| u64::from_le(x) < sym_addr));
        }
        let mut end = a.get(hi).map(|&x| u64::from_le(x));
        if let Some(e) = self.etext
            && sym_addr < e
        {
            end = Some(end.map_or(e, |n| n.min(e)));
        }
        match end {
            Some(e) if addr >= e => return None,
            None if addr - sym_addr >= LAST_SYMBOL_MAX_SPAN => return None,
            _ => {}
        }
        Some(AddressHit {
            symbol: self.symbol(first),
            offset: addr - sym_addr,
            size: end.map(|e| e - sym_addr),
        })
    }

    /// Ranks (positions in name order) whose names equal `name`.
    fn name_ranks(&self, name: &[u8]) -> core::ops::Range<usize> {
        let parts = |s: u32| {
            let (_, t, r) = self.record_parts(u32::from_le(s) as usize);
            (t, r)
        };
        let lo = self.seqs.partition_point(|&s| {
            let (t, r) = parts(s);
            cmp_parts(t, r, name) == Ordering::Less
        });
        let hi = lo
            + self.seqs[lo..].partition_point(|&s| {
                let (t, r) = parts(s);
                t.len() + r.len() == name.len() && name.starts_with(t) && &name[t.len()..] == r
            });
        lo..hi
    }

    /// The first symbol in address order named `name`, by binary search through
    /// `seqs` (FORMAT.md §5.1); `None` when no symbol has that name. No allocation.
    pub fn lookup_name(&self, name: &[u8]) -> Option<Symbol<'a>> {
        let r = self.name_ranks(name);
        (!r.is_empty()).then(|| self.symbol(u32::from_le(self.seqs[r.start]) as usize))
    }

    /// Every symbol named `name`, in address order.
    pub fn lookup_name_all(&self, name: &[u8]) -> impl Iterator<Item = Symbol<'a>> + '_ {
        self.seqs[self.name_ranks(name)]
            .iter()
            .map(move |&s| self.symbol(u32::from_le(s) as usize))
    }
}
