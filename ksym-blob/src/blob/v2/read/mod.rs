//! The zero-copy v2 reader: checks the header, the section directory and
//! every section's CRC32C once, then answers address and name lookups in
//! place, without allocation and without trusting any count it reads: every
//! access is bounds-checked, so a blob whose CRCs were forged still cannot
//! make it panic or read out of bounds (only answer wrongly; `verify` finds
//! that). Layout: docs/FORMAT.md part II. Builds without std.

use crate::blob::v2::layout::*;
use crate::blob::v2::names::bucket_of;
// The reader hands these out; they were defined here before `names` existed.
pub use crate::blob::v2::names::{CodedName, Tokens};
#[cfg(feature = "lines")]
use crate::blob::v2::source_lines::read::LineTable;
use crate::kernel::LAST_SYMBOL_MAX_SPAN;

mod by_name;
mod open;
#[cfg(feature = "sizes")]
mod sizes;
pub use crate::blob::v2::layout::LoadSegment;
pub use open::blob_len;
#[cfg(test)]
mod tests;
#[cfg(feature = "std")]
mod verify;
use crate::blob::symbol::{AddressHit, BlobError, BlobErrorKind, Name, Problem, Symbol};

/// The address-bucket table (FORMAT.md §10.2): bucket `k` covers
/// `first + (k << shift)` up to the next bucket; its blocks are
/// `entries[k]..=entries[k + 1]`.
#[cfg(feature = "fast-lookup")]
#[derive(Clone, Copy, Debug, Default)]
struct AddrBuckets<'a> {
    first: u64,
    shift: u32,
    nbuckets: usize,
    entries: &'a [u8],
}

/// Where an address lookup lands (FORMAT.md §12.1 step 1): the rank (the
/// number of stored rows whose address is at or below the address) and,
/// when the caller already has them, the addresses of stored rows
/// `rank - 1`, `rank - 2` and `rank`; [`KallsymsV2::lookup_located`] reads
/// the ones left `None` from their blocks. Wrong addresses give wrong
/// answers, never a panic.
#[derive(Clone, Copy, Debug, Default)]
pub struct Located {
    /// Stored rows at or below the address.
    pub rank: usize,
    /// Address of stored row `rank - 1`.
    pub prev: Option<u64>,
    /// Address of stored row `rank - 2`.
    pub before_prev: Option<u64>,
    /// Address of stored row `rank`.
    pub next: Option<u64>,
}

/// Where an address lookup lands (FORMAT.md §12.1), before its [`Symbol`]
/// is built: what [`KallsymsV2::locate_row`] returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowHit {
    /// The stored row (0-based, in address order) of the symbol covering
    /// the address: the first of its aliases, or for a folded `__pfx_`
    /// symbol (`folded`) its partner's row.
    pub row: usize,
    /// Whether the symbol is the folded `__pfx_` companion of `row`.
    pub folded: bool,
    /// The symbol's address.
    pub address: u64,
    /// As [`AddressHit::offset`]: bytes from `address`.
    pub offset: u64,
    /// As [`AddressHit::size`], in bytes.
    pub size: Option<u64>,
}

/// An address block's header (FORMAT.md §10.2).
#[derive(Clone, Copy)]
struct BlockHeader {
    base: u64,
    pos: u64,
    width: u32,
    shift: u32,
}

impl BlockHeader {
    /// The header from its two little-endian words, read.
    #[cfg_attr(feature = "std", inline(always))]
    fn from_words(base: u64, w1: u64) -> Self {
        BlockHeader {
            base,
            pos: w1 & 0xFFFF_FFFF,
            width: ((w1 >> 32) as u32 & 0xFF).min(64),
            shift: (w1 >> 40) as u32 & 63,
        }
    }
}

/// Module names and which stored rows belong to which (FORMAT.md §10.5).
#[derive(Clone, Copy, Debug, Default)]
struct Modules<'a> {
    runs: &'a [u8],
    nruns: usize,
    offsets: &'a [u8],
    nmods: usize,
    names: &'a [u8],
}

/// The identity and text bounds of `meta` (FORMAT.md §10.6).
#[derive(Clone, Copy, Debug, Default)]
pub struct Meta<'a> {
    /// Which of `_stext`, `_etext`, `_sinittext`, `_einittext` the input had
    /// (bits of [`bound`]), and their addresses in that order.
    pub bounds: u32,
    /// The addresses of the four bounds (meaningful where `bounds` says so).
    pub bound_addr: [u64; 4],
    /// The kernel release (`uname -r`), possibly empty.
    pub release: &'a [u8],
    /// The build-id bytes, possibly empty.
    pub build_id: &'a [u8],
}

impl<'a> Meta<'a> {
    /// The fields of a `meta` section, as its lengths place them (parts
    /// past its end are empty; `check_shapes` refuses that).
    fn new(b: &'a [u8]) -> Self {
        let bounds = u32_at(b, 0) & 0xF;
        let rel_at = META_FIXED + 8 * bits_set(bounds);
        let rel_len = u16_at(b, 4) as usize;
        Meta {
            bounds,
            bound_addr: [0, 1, 2, 3].map(|i| Self::bound_in(b, i).unwrap_or(0)),
            release: open::part(b, rel_at, rel_len),
            build_id: b.get(rel_at + rel_len..).unwrap_or_default(),
        }
    }

    /// The address of bound `i` (0 `_stext`, 1 `_etext`, 2 `_sinittext`,
    /// 3 `_einittext`) when the input had it.
    pub fn bound(&self, i: usize) -> Option<u64> {
        (self.bounds >> i & 1 == 1).then(|| self.bound_addr.get(i).copied())?
    }

    /// [`bound`](Self::bound) read from a `meta` section's bytes: the
    /// bounds present are stored in order, so bound `i` is the one after
    /// as many as are present below it.
    fn bound_in(meta: &[u8], i: usize) -> Option<u64> {
        let bounds = u32_at(meta, 0) & 0xF;
        let below = bits_set(bounds & ((1u32 << i) - 1));
        (bounds >> i & 1 == 1).then(|| u64_at(meta, META_FIXED + 8 * below))
    }
}

/// One section as the directory gives it: id, byte offset, byte length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SectionInfo {
    /// The section.
    pub id: SectionId,
    /// Byte offset in the blob.
    pub offset: usize,
    /// Byte length.
    pub len: usize,
}

/// A checked, zero-copy view of a v2 blob (FORMAT.md part II).
#[derive(Clone, Copy)]
pub struct KallsymsV2<'a> {
    blob: &'a [u8],
    /// Each section's bytes by `id - 1`, empty when absent.
    sec: [&'a [u8]; SECTIONS.len()],
    /// Bit `id - 1` set when the directory places section `id`.
    present: u16,
    num_syms: usize,
    stored: usize,
    /// `addr_blocks`' block headers as `[base, bitpos|width|shift]` pairs
    /// when the blob is 8-byte aligned (a mapped or `AlignedBlob` one is),
    /// so the block search compares words instead of assembling them from
    /// bytes; empty otherwise.
    #[cfg(feature = "fast-lookup")]
    addr_words: &'a [[u64; 2]],
    #[cfg(feature = "fast-lookup")]
    buckets: AddrBuckets<'a>,
    idx_bits: u32,
    /// The `pfx` bitvector's rank samples, a u32 per word (FORMAT.md
    /// §10.4), after its words.
    #[cfg(feature = "fast-lookup")]
    pfx_ranks: &'a [u8],
    tokens: Tokens<'a>,
    /// The `modules` section's parts, read per lookup by the resolver.
    #[cfg(feature = "modules")]
    modules: Modules<'a>,
    #[cfg(feature = "sizes")]
    sizes: sizes::Sizes<'a>,
    stext: Option<u64>,
    etext: Option<u64>,
    einittext: Option<u64>,
    #[cfg(feature = "lines")]
    lines: Option<LineTable<'a>>,
}

impl core::fmt::Debug for KallsymsV2<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("KallsymsV2")
            .field("num_syms", &self.num_syms)
            .field("stored", &self.stored)
            .field("stext", &self.stext)
            .field("etext", &self.etext)
            .finish()
    }
}

fn err(offset: usize, kind: BlobErrorKind) -> BlobError {
    BlobError { offset, kind }
}

fn bad(offset: usize, id: SectionId, what: Problem) -> BlobError {
    err(
        offset,
        BlobErrorKind::BadSection {
            section: id.name(),
            what,
        },
    )
}

/// The byte offset of `part` (a slice of `blob`) in `blob`.
fn offset_in(blob: &[u8], part: &[u8]) -> usize {
    (part.as_ptr() as usize).wrapping_sub(blob.as_ptr() as usize)
}

/// A bitvector of `n` bits as its section lays it out (FORMAT.md §10.4):
/// its words, then its rank samples, a u32 per word; a part the section
/// does not hold is empty.
fn bitvector_parts(sec: &[u8], n: usize) -> (&[u8], &[u8]) {
    let words = words_for(n);
    (
        open::part(sec, 0, 8 * words),
        open::part(sec, 8 * words, 4 * words),
    )
}

const fn words_for(bits: usize) -> usize {
    bits.div_ceil(64)
}

/// True when `blob` starts with the v2 magic.
pub fn is_v2(blob: &[u8]) -> bool {
    blob.starts_with(&MAGIC)
}

impl<'a> KallsymsV2<'a> {
    /// The source lines and inline frames (FORMAT.md §15), when the blob
    /// has a `lines` section (`ksym-pack --lines ELF`). Feature `lines`.
    #[cfg(feature = "lines")]
    pub fn lines(&self) -> Option<&LineTable<'a>> {
        self.lines.as_ref()
    }

    /// The bytes of the `module_space` section (FORMAT.md §16) and their
    /// offset in the blob, when present; its CRC is checked, its contents
    /// are not: `module_space::read::ModuleSpace::of` reads them.
    pub fn module_space_section(&self) -> Option<(&'a [u8], usize)> {
        let sec = self.sec(SectionId::ModuleSpace);
        (!sec.is_empty()).then(|| (sec, self.at(SectionId::ModuleSpace)))
    }

    /// Section `id`'s bytes; empty when absent.
    #[cfg_attr(feature = "std", inline(always))]
    fn sec(&self, id: SectionId) -> &'a [u8] {
        self.sec[id as usize - 1]
    }

    /// Section `id`'s byte offset in the blob; 0 when absent.
    fn at(&self, id: SectionId) -> usize {
        match self.present & open::bit(id) {
            0 => 0,
            _ => offset_in(self.blob, self.sec(id)),
        }
    }

    /// Number of symbols, folded ones included.
    pub fn len(&self) -> usize {
        self.num_syms
    }

    /// True when the blob holds no symbol.
    pub fn is_empty(&self) -> bool {
        self.num_syms == 0
    }

    /// Number of stored rows (symbols less the folded `__pfx_` ones).
    pub fn stored(&self) -> usize {
        self.stored
    }

    /// The `_stext` bound in use (the override, else `meta`'s), if any.
    pub fn stext(&self) -> Option<u64> {
        self.stext
    }

    /// The `_etext` bound in use (the override, else `meta`'s), if any.
    pub fn etext(&self) -> Option<u64> {
        self.etext
    }

    /// Identity and text bounds as stored.
    pub fn meta(&self) -> Meta<'a> {
        Meta::new(self.sec(SectionId::Meta))
    }

    /// The `pfx` bitvector's words (FORMAT.md §10.4), without its rank
    /// samples.
    fn pfx_words(&self) -> &'a [u8] {
        bitvector_parts(self.sec(SectionId::Pfx), self.stored).0
    }

    /// The `pfx` bitvector's rank samples, a u32 per word, after its words
    /// (kept in the view for the host's lookups; a kernel's slices them).
    #[cfg_attr(feature = "std", inline)]
    fn pfx_ranks(&self) -> &'a [u8] {
        #[cfg(feature = "fast-lookup")]
        return self.pfx_ranks;
        #[cfg(not(feature = "fast-lookup"))]
        bitvector_parts(self.sec(SectionId::Pfx), self.stored).1
    }

    /// `name_to_addr` (FORMAT.md §10.4): the marks' words, their rank
    /// samples, and the packed rows after them.
    fn name_to_addr(&self) -> (&'a [u8], &'a [u8], &'a [u8]) {
        let n2a = self.sec(SectionId::NameToAddr);
        let (marks, ranks) = bitvector_parts(n2a, self.stored);
        let back = n2a.get(bitvector_len(self.stored)..).unwrap_or_default();
        (marks, ranks, back)
    }

    /// The `modules` section's parts (FORMAT.md §10.5); empty without one.
    fn modules(&self) -> Modules<'a> {
        #[cfg(feature = "modules")]
        return self.modules;
        #[cfg(not(feature = "modules"))]
        Modules::new(self.sec(SectionId::Modules))
    }

    /// The sections present, in blob order.
    pub fn sections(&self) -> impl Iterator<Item = SectionInfo> + '_ {
        SECTIONS
            .into_iter()
            .filter(|&id| self.present & open::bit(id) != 0)
            .map(|id| SectionInfo {
                id,
                offset: self.at(id),
                len: self.sec(id).len(),
            })
    }

    /// Number of pair tokens (codes whose expansion is longer than one byte).
    pub fn num_tokens(&self) -> usize {
        (0..self.tokens.count())
            .filter(|&c| self.tokens.expand(c).len() > 1)
            .count()
    }

    /// True when the blob names `module` in its module table (always
    /// false without feature `modules`).
    pub fn has_module(&self, module: &[u8]) -> bool {
        (1..=self.modules().nmods).any(|i| self.module_name(i) == Some(module))
    }

    fn module_name(&self, id: usize) -> Option<&'a [u8]> {
        if !cfg!(feature = "modules") {
            return None;
        }
        let md = self.modules();
        if id == 0 || id > md.nmods {
            return None;
        }
        let s = u32_at(md.offsets, 4 * (id - 1)) as usize;
        let e = u32_at(md.offsets, 4 * id) as usize;
        md.names.get(s..e)
    }

    /// The module of stored row `j`, if any. Without feature `modules`
    /// none: a kernel's own blob has no module table, and its reader then
    /// links none of this.
    fn module_of(&self, j: usize) -> Option<&'a [u8]> {
        if !cfg!(feature = "modules") {
            return None;
        }
        let md = self.modules();
        // Rows before the first run (vmlinux's, in a kallsyms blob) have none.
        if md.nruns == 0 || j < u32_at(md.runs, 0) as usize {
            return None;
        }
        // The last run starting at or before j.
        let (mut lo, mut hi) = (0usize, md.nruns);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if u32_at(md.runs, 8 * mid) as usize <= j {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if lo == 0 {
            return None;
        }
        self.module_name(u32_at(md.runs, 8 * (lo - 1) + 4) as usize)
    }

    /// Address of stored row `j` (`j < stored()`; past that, a wrong
    /// address or 0).
    #[cfg_attr(feature = "std", inline)]
    pub fn stored_address(&self, j: usize) -> u64 {
        let h = self.block_header(j / ADDR_BLOCK);
        let v = get_bits(
            self.sec(SectionId::AddrBits),
            h.pos + (j % ADDR_BLOCK) as u64 * u64::from(h.width),
            h.width,
        );
        h.base.wrapping_add(v << h.shift)
    }

    /// Address block `b`'s header (FORMAT.md §10.2), its width at most 64
    /// and its shift below 64 whatever the bytes say; zeros past the end.
    #[cfg_attr(feature = "std", inline)]
    fn block_header(&self, b: usize) -> BlockHeader {
        // The header {base, bitpos u32, width u8, shift u8} as two words.
        #[cfg(feature = "fast-lookup")]
        let (base, w1) = match self.addr_words.get(b) {
            Some(&[base, w1]) => (u64::from_le(base), u64::from_le(w1)),
            None => self.block_header_bytes(b),
        };
        #[cfg(not(feature = "fast-lookup"))]
        let (base, w1) = self.block_header_bytes(b);
        BlockHeader::from_words(base, w1)
    }

    fn block_header_bytes(&self, b: usize) -> (u64, u64) {
        let blocks = self.sec(SectionId::AddrBlocks);
        let h = b.saturating_mul(ADDR_BLOCK_HEADER);
        (u64_at(blocks, h), u64_at(blocks, h.saturating_add(8)))
    }

    fn symbol_type_of(&self, j: usize) -> u8 {
        let exc = self.sec(SectionId::TypeExceptions);
        let e = self.type_exception_len();
        // The host's lookups: one search per entry size, with constant
        // strides. A kernel's reader: one search, its code once.
        #[cfg(feature = "fast-lookup")]
        let found = if e == 4 {
            exception_type(exc, j, 4)
        } else {
            exception_type(exc, j, 8)
        };
        #[cfg(not(feature = "fast-lookup"))]
        let found = exception_type(exc, j, e);
        if let Some(t) = found {
            return t;
        }
        if get_bit(self.sec(SectionId::Types), j) {
            b'T'
        } else {
            b't'
        }
    }

    /// Bytes of a `type_exceptions` entry: 4 with header flag bit 0, else
    /// 8 (FORMAT.md §10.3).
    #[cfg_attr(feature = "std", inline)]
    fn type_exception_len(&self) -> usize {
        if u32_at(self.blob, 12) & FLAG_SHORT_TYPE_EXCEPTIONS != 0 {
            4
        } else {
            8
        }
    }

    #[cfg_attr(feature = "std", inline)]
    fn folded(&self, j: usize) -> bool {
        get_bit(self.sec(SectionId::Pfx), j)
    }

    /// Reads the pfx and type bits that [`locate_row`](Self::locate_row)
    /// at `rank` and [`row_symbol_type`](Self::row_symbol_type) read, so
    /// that a batch of lookups overlaps its cache misses. (A caller that
    /// caches names per row reads `addr_to_name` only to fill its cache.)
    #[cfg_attr(feature = "std", inline)]
    pub fn touch(&self, rank: usize) -> u8 {
        let j = rank.saturating_sub(1);
        (word(self.sec(SectionId::Pfx), j / 64) as u8)
            ^ (word(self.sec(SectionId::Types), j / 64) as u8)
    }

    /// The blocks `lo..hi` whose bases decide `addr`'s block (FORMAT.md
    /// §10.2): every block before `lo` starts at or below `addr`, none from
    /// `hi` on does. A damaged table gives a wrong window, never a panic.
    #[cfg(feature = "fast-lookup")]
    #[inline]
    fn bucket_blocks(&self, addr: u64, nblocks: usize) -> (usize, usize) {
        let t = &self.buckets;
        let Some(d) = addr.checked_sub(t.first) else {
            return (0, 0);
        };
        // Compared as u64: a 32-bit host reading a 64-bit kernel's blob
        // must not truncate the bucket number into range.
        let k = d >> t.shift;
        let (lo, hi) = if k < t.nbuckets as u64 {
            // Entries k and k + 1 in one load.
            let pair = u64_at(t.entries, 4 * k as usize);
            ((pair & 0xFFFF_FFFF) as usize, (pair >> 32) as usize)
        } else {
            (u32_at(t.entries, 4 * t.nbuckets) as usize, nblocks)
        };
        let hi = hi.min(nblocks);
        (lo.min(hi), hi)
    }

    /// [`rank`](Self::rank) searched inside `window`, which must contain
    /// the answer (as `addrindex::AddressIndex` computes); a wider window
    /// only costs time, a wrong one gives a wrong answer, never a panic.
    #[cfg_attr(feature = "std", inline)]
    pub fn rank_in(&self, addr: u64, window: core::ops::Range<usize>) -> usize {
        if window.start == 0 && window.end >= self.stored {
            return self.rank(addr);
        }
        let (lo, hi) = (window.start.min(self.stored), window.end.min(self.stored));
        lo + partition_point(hi - lo, |i| self.stored_address(lo + i) <= addr)
    }

    /// Stored rows with address `<= addr`: a binary search over block bases,
    /// then over the block's packed addresses (feature `fast-lookup`), or
    /// over all stored rows.
    #[cfg_attr(feature = "std", inline)]
    pub fn rank(&self, addr: u64) -> usize {
        self.locate(addr).rank
    }

    /// [`rank`](Self::rank), with (feature `fast-lookup`) the addresses of
    /// the rows around it read from the same block decode (FORMAT.md
    /// §10.2, §12.1 step 1).
    #[cfg_attr(feature = "std", inline)]
    pub(crate) fn locate(&self, addr: u64) -> Located {
        #[cfg(feature = "fast-lookup")]
        return self.locate_fast(addr);
        #[cfg(not(feature = "fast-lookup"))]
        Located {
            rank: self.rank_by_rows(addr),
            ..Located::default()
        }
    }

    /// [`rank`](Self::rank) by a binary search over every stored row's
    /// address, each read from its block: what a kernel's reader does
    /// without feature `fast-lookup` (no address buckets, no block search,
    /// less code; about twice the block reads).
    #[cfg(any(test, not(feature = "fast-lookup")))]
    fn rank_by_rows(&self, addr: u64) -> usize {
        match addr.checked_add(1) {
            Some(x) => self.rows_below(self.stored, x),
            None => self.stored,
        }
    }

    /// Stored rows among the first `n` whose address is below `x`.
    #[cfg(any(test, not(feature = "fast-lookup")))]
    fn rows_below(&self, n: usize, x: u64) -> usize {
        partition_point(n, |j| self.stored_address(j) < x)
    }

    /// [`locate`](Self::locate) through the address buckets and the block
    /// bases, then the block's packed values.
    #[cfg(feature = "fast-lookup")]
    #[inline]
    fn locate_fast(&self, addr: u64) -> Located {
        let nblocks = self.stored.div_ceil(ADDR_BLOCK);
        let (lo, hi) = self.bucket_blocks(addr, nblocks);
        let q = lo + self.blocks_at_or_below(addr, lo, hi);
        if q == 0 {
            return Located::default();
        }
        let b = q - 1;
        let first = b * ADDR_BLOCK;
        let BlockHeader {
            base,
            pos,
            width,
            shift,
        } = self.block_header(b);
        // In the block, compare packed values with the threshold instead of
        // rebuilding each address: base + (v << shift) <= addr exactly when
        // v <= (addr - base) >> shift.
        let t = addr.wrapping_sub(base) >> shift;
        let count = ADDR_BLOCK.min(self.stored - first);
        // partition_point's halving steps, keeping the value at `lo` so
        // that the row before the answer is not read again. The trip count
        // is not a constant, so LLVM keeps the loop and turns its selects
        // into branches: a stream of nearby addresses predicts them, and
        // the next step's load starts before this one's compare ends.
        let search = |value: &dyn Fn(usize) -> u64| {
            let (mut lo, mut size, mut v_lo) = (0usize, count, value(0));
            while size > 1 {
                let half = size / 2;
                let v = value(lo + half);
                let le = v <= t;
                lo = if le { lo + half } else { lo };
                v_lo = if le { v } else { v_lo };
                size -= half;
            }
            // The block's first value is 0 (its base), so k >= 1 in a
            // sound blob.
            let k = lo + usize::from(v_lo <= t);
            let at = |i: usize| base.wrapping_add(value(i) << shift);
            Located {
                rank: first + k,
                prev: (k > 0).then(|| base.wrapping_add(v_lo << shift)),
                before_prev: k.checked_sub(2).map(at),
                next: (k < count).then(|| at(k)),
            }
        };
        let bits = self.sec(SectionId::AddrBits);
        match PackedBlock::new(bits, pos, width, count) {
            Some(block) => search(&|i| block.value(i)),
            None => search(&|i| get_bits(bits, pos + i as u64 * u64::from(width), width)),
        }
    }

    /// How many of blocks `lo..hi` start at or below `addr` (all before
    /// `lo` do, none from `hi` on).
    #[cfg(feature = "fast-lookup")]
    #[inline]
    fn blocks_at_or_below(&self, addr: u64, lo: usize, hi: usize) -> usize {
        // addr_words is every block header or empty (a misaligned blob):
        // a window it lacks reads the bytes.
        if let Some(w) = self.addr_words.get(lo..hi) {
            let le = |h: &[u64; 2]| u64::from_le(h[0]) <= addr;
            // Most windows hold one or two blocks, where a scan beats
            // halving; past the text bounds one window holds them all.
            return if w.len() <= 4 {
                w.iter().take_while(|h| le(h)).count()
            } else {
                w.partition_point(le)
            };
        }
        partition_point(hi - lo, |i| self.block_header_bytes(lo + i).0 <= addr)
    }

    fn name_of_stored(&self, j: usize, pfx: bool) -> Name<'a> {
        self.name_at_rank(self.a2n(j), pfx)
    }

    fn name_at_rank(&self, r: usize, pfx: bool) -> Name<'a> {
        Name::from_coded(self.coded_at_rank(r, pfx))
    }

    fn coded_at_rank(&self, r: usize, pfx: bool) -> CodedName<'a> {
        CodedName {
            names: self.sec(SectionId::Names),
            name_index: self.sec(SectionId::NameIndex),
            rank: r as u32,
            pfx,
            tokens: self.tokens,
        }
    }

    fn bucket(&self, b: usize) -> &'a [u8] {
        bucket_of(
            self.sec(SectionId::Names),
            self.sec(SectionId::NameIndex),
            b,
        )
    }

    /// The name-order rank (FORMAT.md §10.4 `addr_to_name`) of stored row
    /// `j`'s name; `j < stored()`.
    #[cfg_attr(feature = "std", inline)]
    pub fn row_name_rank(&self, j: usize) -> usize {
        self.a2n(j)
    }

    /// Decodes the names of name bucket `b` (ranks `16 b ..`, at most 16,
    /// FORMAT.md §11.2) in one pass into `scratch`, passing each to `f`
    /// with its rank. For callers that cache names
    /// decoded (`ksym-resolve`): a name costs its own bytes, where
    /// [`Name::extend_into`] reparses its bucket up to it. A bucket past
    /// the end, or damaged, gives fewer names or none.
    #[cfg(feature = "std")]
    pub fn decode_name_bucket(
        &self,
        b: usize,
        scratch: &mut std::vec::Vec<u8>,
        mut f: impl FnMut(usize, &[u8]),
    ) {
        if b >= self.stored.div_ceil(BUCKET) {
            return;
        }
        crate::blob::v2::names::decode_bucket(self.bucket(b), &self.tokens, scratch, |k, name| {
            f(b * BUCKET + k, name)
        });
    }

    /// Symbol for stored row `j` (`folded`: its `__pfx_` companion).
    fn make_symbol(&self, j: usize, folded: bool) -> Symbol<'a> {
        self.make_symbol_at(j, folded, self.stored_address(j))
    }

    /// [`make_symbol`](Self::make_symbol) with row `j`'s address already read.
    #[cfg_attr(feature = "std", inline)]
    fn make_symbol_at(&self, j: usize, folded: bool, addr: u64) -> Symbol<'a> {
        // pfx_rank(j) and folded(j) from one read of the word: a rank block
        // is one word.
        const { assert!(RANK_BLOCK_BITS == 64) };
        let w = word(self.sec(SectionId::Pfx), j / 64);
        let below = (w & ((1u64 << (j % 64)) - 1)).count_ones() as usize;
        let pfx_rank = (u32_at(self.pfx_ranks(), 4 * (j / 64)) as usize).wrapping_add(below);
        let index = j
            .wrapping_add(pfx_rank)
            .wrapping_add(usize::from(!folded && (w >> (j % 64)) & 1 == 1));
        Symbol {
            index,
            address: if folded {
                addr.wrapping_sub(PFX_DISTANCE)
            } else {
                addr
            },
            symbol_type: self.symbol_type_of(j),
            name: self.name_of_stored(j, folded),
            module: self.module_of(j),
        }
    }

    /// All symbols in address order (folded ones just before their partner).
    pub fn symbols(&self) -> impl Iterator<Item = Symbol<'a>> + '_ {
        (0..self.stored).flat_map(move |j| {
            let f = self.folded(j).then(|| self.make_symbol(j, true));
            f.into_iter()
                .chain(core::iter::once(self.make_symbol(j, false)))
        })
    }

    /// The symbol covering `addr` under the rule of FORMAT.md §5.2, applied
    /// to every symbol, folded ones included (§12.1).
    #[cfg_attr(feature = "std", inline)]
    pub fn lookup_address(&self, addr: u64) -> Option<AddressHit<'a>> {
        self.lookup_located(addr, self.locate(addr))
    }

    /// [`lookup_address`](Self::lookup_address) given `r = rank(addr)`.
    #[cfg_attr(feature = "std", inline)]
    pub fn lookup_ranked(&self, addr: u64, r: usize) -> Option<AddressHit<'a>> {
        self.lookup_located(
            addr,
            Located {
                rank: r,
                ..Located::default()
            },
        )
    }

    /// [`lookup_address`](Self::lookup_address) given where it lands
    /// (§12.1 steps 2 to 4 at `loc.rank`); row addresses that `loc` lacks
    /// are read from their blocks. For callers that keep the stored
    /// addresses decoded.
    #[cfg_attr(feature = "std", inline)]
    pub fn lookup_located(&self, addr: u64, loc: Located) -> Option<AddressHit<'a>> {
        self.locate_row(addr, loc).map(|h| AddressHit {
            symbol: self.make_symbol_at(
                h.row,
                h.folded,
                if h.folded {
                    h.address.wrapping_add(PFX_DISTANCE)
                } else {
                    h.address
                },
            ),
            offset: h.offset,
            size: h.size,
        })
    }

    /// [`lookup_located`](Self::lookup_located) without building the
    /// [`Symbol`]: the stored row it lands on, for callers that print many
    /// answers and keep per-row data of their own (`ksym-resolve`); read
    /// the rest with [`row_symbol_type`](Self::row_symbol_type),
    /// [`row_module`](Self::row_module) and [`row_name`](Self::row_name).
    #[cfg_attr(feature = "std", inline)]
    pub fn locate_row(&self, addr: u64, loc: Located) -> Option<RowHit> {
        let m = self.stored;
        let r = loc.rank.min(m);
        // The next stored row; a folded `__pfx_` symbol covers the 16 bytes
        // below its partner, so it also bounds the symbol before it.
        let next = (r < m).then(|| {
            let p = loc.next.unwrap_or_else(|| self.stored_address(r));
            (p, self.folded(r))
        });
        if let Some((p, true)) = next {
            let v = p.wrapping_sub(PFX_DISTANCE);
            if v <= addr && addr < p {
                return self.hit(addr, r, true, v, Some(p), Some(p));
            }
        }
        if r == 0 {
            return None;
        }
        let sym_addr = loc.prev.unwrap_or_else(|| self.stored_address(r - 1));
        // First alias: aliases are never folded, so search stored rows only.
        let mut first = r - 1;
        if first > 0
            && loc
                .before_prev
                .unwrap_or_else(|| self.stored_address(first - 1))
                == sym_addr
        {
            first = self.first_alias(first - 1, sym_addr);
        }
        let next_adjusted = next.map(|(a, f)| if f { a.wrapping_sub(PFX_DISTANCE) } else { a });
        self.hit(
            addr,
            first,
            false,
            sym_addr,
            next_adjusted,
            next.map(|(a, _)| a),
        )
    }

    /// The first stored row at `sym_addr`, given that row `hi` is at it.
    /// Runs of aliases are short (2 or 3 rows in a kernel), so this gallops
    /// back from `hi` (1, 2, 4... rows) before its binary search, instead
    /// of searching all rows below `hi` (16 steps, each a block read).
    /// Without feature `fast-lookup`, a binary search of rows `0..hi`.
    #[cfg(not(feature = "fast-lookup"))]
    fn first_alias(&self, hi: usize, sym_addr: u64) -> usize {
        self.rows_below(hi, sym_addr)
    }

    #[cfg(feature = "fast-lookup")]
    #[inline]
    fn first_alias(&self, mut hi: usize, sym_addr: u64) -> usize {
        let mut step = 1;
        let lo = loop {
            let Some(j) = hi.checked_sub(step) else {
                break 0;
            };
            if self.stored_address(j) < sym_addr {
                break j + 1;
            }
            hi = j;
            step *= 2;
        };
        lo + partition_point(hi - lo, |k| self.stored_address(lo + k) < sym_addr)
    }

    /// §12.1 step 4: whether the symbol at `sym_addr` (stored row `j`, or
    /// its folded companion) covers `addr`, given the next symbol's address
    /// and, for its size (§10.7 form 1), the next stored row's.
    #[cfg_attr(feature = "std", inline)]
    fn hit(
        &self,
        addr: u64,
        j: usize,
        folded: bool,
        sym_addr: u64,
        next: Option<u64>,
        next_stored: Option<u64>,
    ) -> Option<RowHit> {
        if Some(sym_addr) == self.etext || Some(sym_addr) == self.einittext {
            return None;
        }
        let mut end = next;
        if let Some(e) = self.etext
            && sym_addr < e
        {
            end = Some(end.map_or(e, |n| n.min(e)));
        }
        #[cfg(feature = "sizes")]
        let known = (!folded)
            .then(|| self.row_size_near(j, sym_addr, next_stored))
            .flatten();
        #[cfg(not(feature = "sizes"))]
        let known: Option<u64> = {
            let _ = (j, next_stored);
            None
        };
        match end {
            Some(e) if addr >= e => return None,
            // The kernel's guess for a last symbol of unknown extent.
            None if known.is_none() && addr.wrapping_sub(sym_addr) >= LAST_SYMBOL_MAX_SPAN => {
                return None;
            }
            _ => {}
        }
        let offset = addr.wrapping_sub(sym_addr);
        // §10.7: a known size ends the symbol there; past it is a gap (a
        // function's padding), which no symbol covers.
        if let Some(size) = known {
            return (offset < size).then_some(RowHit {
                row: j,
                folded,
                address: sym_addr,
                offset,
                size: Some(size),
            });
        }
        Some(RowHit {
            row: j,
            folded,
            address: sym_addr,
            offset,
            size: end.map(|e| e.wrapping_sub(sym_addr)),
        })
    }

    /// The load segments of the binary the blob describes (FORMAT.md
    /// §10.8), in the order stored; none without a `segments` section.
    /// What turns a process's runtime address into the link-time address
    /// the blob holds (`crate` users: `ksym::normalize`).
    pub fn load_segments(&self) -> impl Iterator<Item = LoadSegment> + 'a {
        let s = self.sec(SectionId::Segments);
        // Form 1 (u32 at 4): short entries (`filesz` = `memsz`, `PF_R | PF_X`).
        let short = u32_at(s, 4) == 1;
        let len = if short {
            SEGMENT_SHORT_LEN
        } else {
            SEGMENT_LEN
        };
        let n = (u32_at(s, 0) as usize).min(s.len().saturating_sub(8) / len);
        (0..n).map(move |i| {
            let at = 8 + len * i;
            let filesz = u64_at(s, at + 16);
            LoadSegment {
                vaddr: u64_at(s, at),
                offset: u64_at(s, at + 8),
                filesz,
                memsz: if short { filesz } else { u64_at(s, at + 24) },
                flags: if short {
                    SEGMENT_SHORT_FLAGS
                } else {
                    u32_at(s, at + 32)
                },
            }
        })
    }

    /// True when the blob has a `sizes` section (FORMAT.md §10.7).
    pub fn has_sizes(&self) -> bool {
        self.present & open::bit(SectionId::Sizes) != 0
    }

    /// The symbol type of stored row `j` (and of its folded companion):
    /// what [`Symbol::symbol_type`] holds.
    #[cfg_attr(feature = "std", inline)]
    pub fn row_symbol_type(&self, j: usize) -> u8 {
        self.symbol_type_of(j)
    }

    /// The `type_exceptions` entries (FORMAT.md §10.3): `(stored row,
    /// symbol type)` pairs in stored order, 4 or 8 bytes each as the
    /// header's flag says. In a blob that passes
    /// [`verify`](Self::verify) the rows ascend, and a row listed here has
    /// that type ([`row_symbol_type`](Self::row_symbol_type)'s); any other
    /// has [`row_type_bit`](Self::row_type_bit)'s. For a caller that keeps a
    /// type per row: one pass over the entries instead of a binary search
    /// of them per row (12 steps for libstdc++'s 3,038).
    pub fn type_exceptions(&self) -> impl Iterator<Item = (usize, u8)> + 'a {
        let exc = self.sec(SectionId::TypeExceptions);
        let e = self.type_exception_len();
        (0..exc.len() / e).map(move |k| exception_entry(exc, e, k))
    }

    /// Stored row `j`'s type from the `types` bitvector alone (FORMAT.md
    /// §10.3): `T` or `t`, what [`row_symbol_type`](Self::row_symbol_type)
    /// gives for a row that [`type_exceptions`](Self::type_exceptions)
    /// does not list.
    #[cfg_attr(feature = "std", inline)]
    pub fn row_type_bit(&self, j: usize) -> u8 {
        if get_bit(self.sec(SectionId::Types), j) {
            b'T'
        } else {
            b't'
        }
    }

    /// The module of stored row `j` (FORMAT.md §10.5), `None` for
    /// vmlinux's rows (and for every row without feature `modules`): what
    /// [`Symbol::module`] holds.
    #[cfg_attr(feature = "std", inline)]
    pub fn row_module(&self, j: usize) -> Option<&'a [u8]> {
        self.module_of(j)
    }

    /// The name of stored row `j`, with `__pfx_` before it for its folded
    /// companion (`folded`): what [`Symbol::name`] holds.
    #[cfg_attr(feature = "std", inline)]
    pub fn row_name(&self, j: usize, folded: bool) -> Name<'a> {
        self.name_of_stored(j, folded)
    }

    /// `addr_to_name` at stored row `j`: the row's rank in name order.
    #[cfg_attr(feature = "std", inline)]
    fn a2n(&self, j: usize) -> usize {
        get_bits(
            self.sec(SectionId::AddrToName),
            (j as u64).wrapping_mul(u64::from(self.idx_bits)),
            self.idx_bits,
        ) as usize
    }
}

/// Row `j`'s type among `type_exceptions` entries of `e` bytes (FORMAT.md
/// §10.3): 4, the row in the low 24 bits and the type above; 8, `{row:
/// u32, type: u32}`.
#[cfg_attr(feature = "fast-lookup", inline(always))]
fn exception_type(exc: &[u8], j: usize, e: usize) -> Option<u8> {
    let n = exc.len() / e;
    // Branchless: a stream's rows are random, the compares unpredictable.
    let k = partition_point(n, |m| exception_entry(exc, e, m).0 < j);
    let (row, t) = exception_entry(exc, e, k);
    (k < n && row == j).then_some(t)
}

/// Entry `k` of a `type_exceptions` section of `e`-byte entries
/// (FORMAT.md §10.3) as `(stored row, symbol type)`.
#[cfg_attr(feature = "fast-lookup", inline(always))]
fn exception_entry(exc: &[u8], e: usize, k: usize) -> (usize, u8) {
    let w = u32_at(exc, e * k);
    if e == 4 {
        ((w & 0xFF_FFFF) as usize, (w >> 24) as u8)
    } else {
        (w as usize, u32_at(exc, 8 * k + 4) as u8)
    }
}
