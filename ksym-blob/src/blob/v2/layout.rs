//! Constants of the v2 layout and the bit-level helpers the writer and the
//! reader share. Source of truth: docs/FORMAT.md part II (§9–§14).

use crc::{CRC_32_ISCSI, Crc, Table};

/// The first 8 bytes of every v2 blob (FORMAT.md §9.1). Read as a v1
/// `num_syms` (u64 little-endian) it is above `u32::MAX`, which no valid v1
/// blob holds, so the two formats can never be mistaken for each other.
pub const MAGIC: [u8; 8] = [0x89, b'K', b'S', b'Y', b'M', b'\r', b'\n', 0x1A];

/// The version this reader and writer implement (FORMAT.md §9.1; 3 added
/// the address buckets of §10.2 and one rank sample per word, §10.4; 4 the
/// counted token table with two-byte codes, §11.3).
pub const VERSION: u16 = 4;

/// Header flag bit 0: `type_exceptions` holds 4-byte entries, the row in
/// the low 24 bits and the type byte above them (FORMAT.md §10.3); without
/// it, 8-byte `{row: u32, type: u32}` entries. The writer sets it whenever
/// the blob has fewer than 2^24 stored rows.
pub const FLAG_SHORT_TYPE_EXCEPTIONS: u32 = 1;

/// Bytes of the fixed header, before the section directory (FORMAT.md §9.1).
pub const HEADER_LEN: usize = 32;

/// Bytes of one section directory entry: CRC32C and length (u32 each); the
/// header's `sections` bits give the ids, the layout rule the offsets
/// (FORMAT.md §9.2).
pub const DIR_ENTRY_LEN: usize = 8;

/// Stored rows per address block (FORMAT.md §10.2).
pub const ADDR_BLOCK: usize = 64;

/// Bytes of one address block header: base u64, bit position u32, width u8,
/// shift u8, two zero bytes.
pub const ADDR_BLOCK_HEADER: usize = 16;

/// Bytes of the address-bucket table's header at the end of `addr_blocks`
/// (`shift: u32, nbuckets: u32`, FORMAT.md §10.2), before its
/// `nbuckets + 1` u32 entries.
pub const ADDR_BUCKETS_HEADER: usize = 8;

/// Where the address buckets end (FORMAT.md §10.2): the later of
/// `_etext` and `_einittext` when present and at least `first` (the first
/// block's base), else `last`, the last stored address.
pub fn bucket_end(first: u64, etext: Option<u64>, einittext: Option<u64>, last: u64) -> u64 {
    [etext, einittext]
        .into_iter()
        .flatten()
        .max()
        .filter(|&e| e >= first)
        .unwrap_or(last)
}

/// The address-bucket shift and count for `nblocks` blocks from `first`
/// to `end` (FORMAT.md §10.2): the smallest shift `s` with
/// `((end - first) >> s) + 1 <= max(nblocks, 1)`, so at most one bucket per
/// block, else 63 (one block spanning 2^63 bytes or more: 2 buckets); no
/// buckets (and shift 0) without blocks.
pub fn bucket_shape(first: u64, end: u64, nblocks: usize) -> (u32, usize) {
    if nblocks == 0 {
        return (0, 0);
    }
    let span = end.saturating_sub(first);
    let mut s = 0;
    while s < 63 && (span >> s) >= nblocks as u64 {
        s += 1;
    }
    (s, (span >> s) as usize + 1)
}

/// The `nbuckets + 1` entries of the address-bucket table (FORMAT.md
/// §10.2): entry `k` is the number of blocks whose base (`base(b)`, of
/// `nblocks`) is below `first + (k << shift)`, in exact integers.
pub fn bucket_entries(
    first: u64,
    (shift, nbuckets): (u32, usize),
    nblocks: usize,
    base: impl Fn(usize) -> u64,
) -> impl Iterator<Item = usize> {
    let mut b = 0usize;
    (0..=nbuckets as u64).map(move |k| {
        let lo = u128::from(first) + (u128::from(k) << shift);
        while b < nblocks && u128::from(base(b)) < lo {
            b += 1;
        }
        b
    })
}

/// Names per front-coding bucket (FORMAT.md §11.2).
pub const BUCKET: usize = 16;

/// Bits of a bitvector covered by one rank sample (FORMAT.md §10.4): one
/// u32 per 64-bit word, so a rank is one sample and one popcount.
pub const RANK_BLOCK_BITS: usize = 64;

/// Steps between shortcuts on the cycles of `addr_to_name` (FORMAT.md
/// §10.4): finding a row from its name-order rank follows at most
/// `2 * SHORTCUT_STEP + 1` entries.
pub const SHORTCUT_STEP: usize = 8;

/// The name prefix of folded symbols (FORMAT.md §10.1): the compiler's
/// function padding before `X` is named `__pfx_X` (Linux 6.2+, x86).
pub const PFX: &[u8] = b"__pfx_";

/// Distance in bytes from a folded `__pfx_X` symbol to `X`.
pub const PFX_DISTANCE: u64 = 16;

/// Byte ending a coded name in the names section (token code 0).
pub const NAME_END: u8 = 0;

/// Section ids, in the order they appear in a blob (FORMAT.md §9.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u32)]
#[allow(missing_docs)]
pub enum SectionId {
    Meta = 1,
    AddrBlocks = 2,
    AddrBits = 3,
    Types = 4,
    TypeExceptions = 5,
    Pfx = 6,
    AddrToName = 7,
    NameToAddr = 8,
    NameIndex = 9,
    Names = 10,
    Tokens = 11,
    Modules = 12,
    Lines = 13,
    ModuleSpace = 14,
    Sizes = 15,
    Segments = 16,
}

/// Every section id, in blob order.
pub const SECTIONS: [SectionId; 16] = [
    SectionId::Meta,
    SectionId::AddrBlocks,
    SectionId::AddrBits,
    SectionId::Types,
    SectionId::TypeExceptions,
    SectionId::Pfx,
    SectionId::AddrToName,
    SectionId::NameToAddr,
    SectionId::NameIndex,
    SectionId::Names,
    SectionId::Tokens,
    SectionId::Modules,
    SectionId::Lines,
    SectionId::ModuleSpace,
    SectionId::Sizes,
    SectionId::Segments,
];

impl SectionId {
    /// The section's name as FORMAT.md §9.2 and error messages spell it.
    pub const fn name(self) -> &'static str {
        match self {
            SectionId::Meta => "meta",
            SectionId::AddrBlocks => "addr_blocks",
            SectionId::AddrBits => "addr_bits",
            SectionId::Types => "types",
            SectionId::TypeExceptions => "type_exceptions",
            SectionId::Pfx => "pfx",
            SectionId::AddrToName => "addr_to_name",
            SectionId::NameToAddr => "name_to_addr",
            SectionId::NameIndex => "name_index",
            SectionId::Names => "names",
            SectionId::Tokens => "tokens",
            SectionId::Modules => "modules",
            SectionId::Lines => "lines",
            SectionId::ModuleSpace => "module_space",
            SectionId::Sizes => "sizes",
            SectionId::Segments => "segments",
        }
    }
}

/// One loadable segment of the binary a blob describes (an ELF `PT_LOAD`
/// program header; FORMAT.md §10.8): its bytes at file offset `offset + k`
/// (`k < filesz`) are loaded at link-time address `vaddr + k`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadSegment {
    /// `p_vaddr`: the link-time address of the segment's first byte.
    pub vaddr: u64,
    /// `p_offset`: the file offset of its first byte.
    pub offset: u64,
    /// `p_filesz`, in bytes.
    pub filesz: u64,
    /// `p_memsz`, in bytes.
    pub memsz: u64,
    /// `p_flags` (`PF_X` 1, `PF_W` 2, `PF_R` 4).
    pub flags: u32,
}

/// Bytes of one `segments` entry of form 0, every field (FORMAT.md §10.8).
pub const SEGMENT_LEN: usize = 40;

/// Bytes of one `segments` entry of form 1 (FORMAT.md §10.8): `vaddr`,
/// `offset` and one size, for segments whose `filesz` equals their `memsz`
/// and whose flags are [`SEGMENT_SHORT_FLAGS`].
pub const SEGMENT_SHORT_LEN: usize = 24;

/// The `p_flags` of every segment a form-1 `segments` section holds:
/// `PF_R | PF_X`, what linkers give code.
pub const SEGMENT_SHORT_FLAGS: u32 = 5;

/// Bits of the `meta` section's `bounds` field: which text bounds the input had.
pub mod bound {
    /// `_stext`.
    pub const STEXT: u32 = 1;
    /// `_etext`.
    pub const ETEXT: u32 = 2;
    /// `_sinittext`.
    pub const SINITTEXT: u32 = 4;
    /// `_einittext`.
    pub const EINITTEXT: u32 = 8;
}

pub use crate::kernel::BOUND_NAMES;

/// Bytes of `meta` before its text bounds, release and build-id (FORMAT.md
/// §10.6): `bounds: u32, release_len: u16, build_id_len: u16`.
pub const META_FIXED: usize = 8;

/// Rows per block of a `lines` section's row stream (FORMAT.md §15.1):
/// `LINE_BLOCK_MIN << shift`, header byte 38 holding `shift`
/// (0..=[`LINE_BLOCK_SHIFT_MAX`]). A lookup decodes at most one block's
/// rows; sections written before the field have 0 there (32 rows).
pub const LINE_BLOCK_MIN: usize = 32;

/// The largest block shift a `lines` header may hold: 256 rows a block.
pub const LINE_BLOCK_SHIFT_MAX: u8 = 3;

/// The block shift `ksym-pack` writes: 256 rows a block. Each block costs
/// its index entry and a first row stored whole, 15 bytes on libc, and
/// `ksym-resolve` decodes a block once for all the lookups in it
/// (FORMAT.md §15.4 has the measurements).
pub const LINE_BLOCK_SHIFT: u8 = 3;

/// The most rows a `lines` block holds: `LINE_BLOCK_MIN << LINE_BLOCK_SHIFT_MAX`.
pub const LINE_BLOCK_MAX: usize = LINE_BLOCK_MIN << LINE_BLOCK_SHIFT_MAX;

/// Recent states a `lines` row can recall by index (FORMAT.md §15.2).
pub const LINE_RECENT: usize = 8;

/// The `(node, file, line)` states of the rows decoded so far in a `lines`
/// block, one per `(node, file)`, most recent first, at most
/// [`LINE_RECENT`]: inlined code alternates between a few functions, and a
/// row that returns to one of them is coded by its index here (FORMAT.md
/// §15.2). The writer and the reader keep it the same way.
#[derive(Debug, Clone, Copy, Default)]
pub struct RecentStates {
    e: [(u32, u32, u32); LINE_RECENT],
    n: usize,
}

impl RecentStates {
    /// State `j` (0: the most recent).
    #[cfg_attr(feature = "std", inline)]
    pub fn get(&self, j: usize) -> Option<(u32, u32, u32)> {
        self.e.get(..self.n)?.get(j).copied()
    }

    /// The index of the state of `(node, file)`.
    #[cfg_attr(feature = "std", inline)]
    pub fn find(&self, node: u32, file: u32) -> Option<usize> {
        self.e
            .get(..self.n)?
            .iter()
            .position(|e| e.0 == node && e.1 == file)
    }

    /// Records a row: its state moves (or enters) at the front; the least
    /// recent falls off when full.
    #[cfg_attr(feature = "std", inline(always))]
    pub fn touch(&mut self, node: u32, file: u32, line: u32) {
        // Most rows stay in the most recent state: that test inlined into
        // the row decoder, the move to the front not.
        if self.n > 0 && self.e[0].0 == node && self.e[0].1 == file {
            self.e[0].2 = line;
            return;
        }
        self.move_to_front(node, file, line);
    }

    /// One pass: each state moves one back until `(node, file)`'s old
    /// place, which the carried state fills; without one, the least recent
    /// falls off a full list.
    #[cfg_attr(feature = "std", inline(never))]
    fn move_to_front(&mut self, node: u32, file: u32, line: u32) {
        let mut carry = (node, file, line);
        for i in 0..LINE_RECENT {
            if i == self.n {
                self.e[i] = carry;
                self.n += 1;
                return;
            }
            let cur = self.e[i];
            self.e[i] = carry;
            if cur.0 == node && cur.1 == file {
                return;
            }
            carry = cur;
        }
    }
}

/// Bytes of the `lines` section's header (FORMAT.md §15.1).
pub const LINES_HEADER: usize = 72;

/// Bytes of the `module_space` header (FORMAT.md §16.1).
pub const MODSPACE_HEADER: usize = 16;

/// Bytes of a `module_space` module record (FORMAT.md §16.1).
pub const MODSPACE_MODULE: usize = 16;

/// Bytes of a `module_space` section record (FORMAT.md §16.1).
pub const MODSPACE_SECTION: usize = 24;

/// Module space addresses start here: address 0 is never a symbol's
/// (FORMAT.md §16.2).
pub const MODSPACE_START: u64 = 0x1000;

/// Modules start at multiples of this in module space, one unit apart at
/// least, so no two modules share a line-table row (FORMAT.md §16.2).
pub const MODSPACE_ALIGN: u64 = 0x1000;

/// Bytes of the `tokens` section's code count (FORMAT.md §11.3), before
/// its `count + 1` u16 offsets.
pub const TOKENS_COUNT: usize = 2;

/// Most codes a token table holds, code 0 included (FORMAT.md §11.3): one
/// byte value for the end of a name and 255 prefix bytes of 255 codes each
/// (each prefix gives up its own one-byte code: 254 more codes a prefix).
pub const MAX_CODES: usize = 256 + 254 * 255;

/// The byte values below which a coded byte is a code by itself, for a
/// table of `count` codes (FORMAT.md §11.3): 256 minus the prefix bytes,
/// `ceil((count - 256) / 254)` of them when `count > 256`.
pub const fn one_byte_codes(count: usize) -> usize {
    // A loop, not a division: fewer bytes in a kernel's reader. A count
    // past MAX_CODES (a damaged table) leaves no one-byte code.
    let (mut one, mut codes) = (256, 256);
    while codes < count && one > 0 {
        codes += 254;
        one -= 1;
    }
    one
}

/// The code a prefix byte `b` (at or above `one`, [`one_byte_codes`]) and
/// a nonzero second byte `s` name (FORMAT.md §11.3): each prefix names 255
/// codes, after the one-byte ones.
#[inline(always)]
pub const fn two_byte_code(one: u32, b: u32, s: u32) -> u32 {
    one + (b - one) * 255 + s - 1
}

/// The number of bits set in `x`, one at a time: a few instructions where
/// `count_ones` expands to a bit-twiddling sequence (kernel targets without
/// a population-count instruction). For the header's `sections` and
/// `meta`'s `bounds`, a handful of bits.
#[cfg_attr(feature = "std", inline)]
pub fn bits_set(mut x: u32) -> usize {
    let mut n = 0;
    while x != 0 {
        x &= x - 1;
        n += 1;
    }
    n
}

/// How [`CRC32C`] is computed: the largest table a feature asks for.
/// Tables are built at compile time and live in `.rodata`.
#[cfg(feature = "crc-slice16")]
pub type CrcTable = Table<16>;
/// How [`CRC32C`] is computed: a 256-entry table (1 KiB).
#[cfg(all(feature = "crc-table", not(feature = "crc-slice16")))]
pub type CrcTable = Table<1>;
/// How [`CRC32C`] is computed: bit by bit, no table (no `.rodata`).
#[cfg(not(any(feature = "crc-table", feature = "crc-slice16")))]
pub type CrcTable = Table<0>;

/// CRC32C (Castagnoli, as iSCSI, ext4 and Lidia use; FORMAT.md §9.2). The
/// value is the same whichever [`CrcTable`] the features chose: 16 KiB of
/// slice-by-16 tables (`crc-slice16`, what std turns on), 1 KiB
/// (`crc-table`), or none.
pub static CRC32C: Crc<u32, CrcTable> = Crc::<u32, CrcTable>::new(&CRC_32_ISCSI);

/// The CRC32C (FORMAT.md §9.2) of `parts` one after another: a section's
/// bytes, or the header and directory around their own CRC field. The
/// same value as [`CRC32C`]'s; with `std`, computed by the `crc32c` crate
/// (the CPU's CRC32C instruction where it has one: about 0.1 instruction
/// a byte, against 3.9 for slice-by-16).
#[inline]
pub fn crc32c(parts: &[&[u8]]) -> u32 {
    #[cfg(feature = "std")]
    {
        parts
            .iter()
            .fold(0, |crc, p| ::crc32c::crc32c_append(crc, p))
    }
    #[cfg(not(feature = "std"))]
    {
        let mut d = CRC32C.digest();
        for p in parts {
            d.update(p);
        }
        d.finalize()
    }
}

/// Bits needed to write every value `< n`: 0 for `n <= 1`, whose only
/// value is 0 (a one-row blob's `addr_to_name` is then empty, FORMAT.md
/// §10.4).
pub const fn index_bits(n: usize) -> u32 {
    // A loop, not leading_zeros: a core without a count-leading-zeros
    // instruction (riscv64gc) links 100 bytes of it into a kernel.
    let max = n.saturating_sub(1);
    let mut bits = 0;
    while bits < usize::BITS && max >> bits != 0 {
        bits += 1;
    }
    bits
}

/// Reads `width` bits (0..=64; 0 reads 0) at bit position `pos` of little-endian u64
/// words; bits past the end read as zero.
#[cfg_attr(feature = "std", inline(always))]
pub fn get_bits(words: &[u8], pos: u64, width: u32) -> u64 {
    #[cfg(not(feature = "fast-lookup"))]
    return get_bits_by_bit(words, pos, width);
    #[cfg(feature = "fast-lookup")]
    get_bits_fast(words, pos, width)
}

/// [`get_bits`] a bit at a time: what a kernel's reader (no feature
/// `fast-lookup`) links, a tenth of the code.
#[cfg(any(test, not(feature = "fast-lookup")))]
fn get_bits_by_bit(bytes: &[u8], pos: u64, width: u32) -> u64 {
    let mut v = 0u64;
    for i in (0..u64::from(width.min(64))).rev() {
        let p = pos.wrapping_add(i);
        let byte = usize::try_from(p / 8).ok().and_then(|at| bytes.get(at));
        v = v << 1 | u64::from(byte.map_or(0, |b| b >> (p % 8) & 1));
    }
    v
}

/// [`get_bits`] with one unaligned 8-byte load for widths up to 56.
#[cfg(feature = "fast-lookup")]
#[cfg_attr(feature = "std", inline(always))]
fn get_bits_fast(words: &[u8], pos: u64, width: u32) -> u64 {
    if width == 0 {
        return 0;
    }
    // Up to 56 bits lie in the 8 bytes from the one holding bit `pos`
    // (words are little-endian): one load, no straddle test.
    if width <= 56
        && let Ok(at) = usize::try_from(pos / 8)
        && let Some(b) = words.get(at..at.wrapping_add(8))
        && let Ok(b) = <[u8; 8]>::try_from(b)
    {
        return (u64::from_le_bytes(b) >> (pos % 8)) & ((1u64 << width) - 1);
    }
    // A damaged block header can say more than 64; no shift may overflow.
    let width = width.min(64);
    // A position past what a 32-bit usize indexes is past the end.
    let Ok(w) = usize::try_from(pos / 64) else {
        return 0;
    };
    let sh = (pos % 64) as u32;
    let lo = word(words, w) >> sh;
    let v = if sh + width > 64 {
        lo | (w.checked_add(1).map_or(0, |n| word(words, n)) << (64 - sh))
    } else {
        lo
    };
    if width == 64 {
        v
    } else {
        v & ((1u64 << width) - 1)
    }
}

/// An address block's packed values (FORMAT.md §10.2) when their width is
/// 1 to 56 bits and the 8 bytes from the one holding each value's first bit
/// lie inside `addr_bits`: each value is then one 8-byte load, with none of
/// `get_bits`' width tests.
#[cfg_attr(not(feature = "fast-lookup"), allow(dead_code))]
pub(crate) struct PackedBlock<'a> {
    bytes: &'a [u8],
    bit0: usize,
    width: usize,
    mask: u64,
}

#[cfg_attr(not(feature = "fast-lookup"), allow(dead_code))]
impl<'a> PackedBlock<'a> {
    /// The block of `count` (1 to 64) values from bit `pos`, or `None` when
    /// it is not in the shape above.
    #[cfg_attr(feature = "std", inline(always))]
    pub(crate) fn new(bits: &'a [u8], pos: u64, width: u32, count: usize) -> Option<Self> {
        if width == 0 || width > 56 || count == 0 {
            return None;
        }
        let at = usize::try_from(pos / 8).ok()?;
        let (bit0, width) = ((pos % 8) as usize, width as usize);
        let last = (bit0 + (count - 1) * width) / 8;
        Some(PackedBlock {
            bytes: bits.get(at..at.checked_add(last + 8)?)?,
            bit0,
            width,
            mask: (1u64 << width) - 1,
        })
    }

    /// Value `i` (below the block's count; 0 past it).
    #[cfg_attr(feature = "std", inline(always))]
    pub(crate) fn value(&self, i: usize) -> u64 {
        let b = self.bit0 + i * self.width;
        let x = self
            .bytes
            .get(b / 8..b / 8 + 8)
            .and_then(|x| <[u8; 8]>::try_from(x).ok())
            .map_or(0, u64::from_le_bytes);
        (x >> (b % 8)) & self.mask
    }
}

/// Word `i` of a little-endian u64 array held as bytes; zero past the end.
#[cfg_attr(feature = "std", inline(always))]
#[cfg_attr(not(feature = "std"), inline(never))]
pub fn word(words: &[u8], i: usize) -> u64 {
    match i
        .checked_mul(8)
        .and_then(|at| words.get(at..at.checked_add(8)?))
        .map(<[u8; 8]>::try_from)
    {
        Some(Ok(b)) => u64::from_le_bytes(b),
        _ => 0,
    }
}

/// Bit `i` of a bitvector of little-endian u64 words; false past the end.
#[cfg_attr(feature = "std", inline)]
pub fn get_bit(words: &[u8], i: usize) -> bool {
    // The host's lookups read the whole word (fewer instructions once
    // inlined); a kernel's reads the byte (words are little-endian: bit i
    // is bit i % 8 of byte i / 8), so that it links no word reader.
    #[cfg(feature = "fast-lookup")]
    return word(words, i / 64) >> (i % 64) & 1 == 1;
    #[cfg(not(feature = "fast-lookup"))]
    words.get(i / 8).is_some_and(|b| b >> (i % 8) & 1 == 1)
}

/// The little-endian u32 at byte `at`; zero past the end.
#[cfg_attr(feature = "std", inline(always))]
#[cfg_attr(not(feature = "std"), inline(never))]
pub fn u32_at(b: &[u8], at: usize) -> u32 {
    // Through an array, so that it compiles to one load.
    match b.get(at..at.saturating_add(4)).map(<[u8; 4]>::try_from) {
        Some(Ok(a)) => u32::from_le_bytes(a),
        _ => 0,
    }
}

/// The little-endian u16 at byte `at`; zero past the end.
#[cfg_attr(feature = "std", inline(always))]
#[cfg_attr(not(feature = "std"), inline(never))]
pub fn u16_at(b: &[u8], at: usize) -> u16 {
    match b.get(at..at.saturating_add(2)).map(<[u8; 2]>::try_from) {
        Some(Ok(a)) => u16::from_le_bytes(a),
        _ => 0,
    }
}

/// The little-endian u64 at byte `at`; zero past the end.
#[cfg_attr(feature = "std", inline(always))]
#[cfg_attr(not(feature = "std"), inline(never))]
pub fn u64_at(b: &[u8], at: usize) -> u64 {
    match b.get(at..at.saturating_add(8)).map(<[u8; 8]>::try_from) {
        Some(Ok(a)) => u64::from_le_bytes(a),
        _ => 0,
    }
}

/// Set bits of `words` below bit `j`, with `ranks[k]` the count below bit
/// `k * RANK_BLOCK_BITS` (FORMAT.md §10.4).
#[cfg_attr(feature = "std", inline)]
pub fn rank1(words: &[u8], ranks: &[u8], j: usize) -> usize {
    let words_per = RANK_BLOCK_BITS / 64;
    let blk = j / RANK_BLOCK_BITS;
    let mut r = u32_at(ranks, 4 * blk) as usize;
    for w in blk * words_per..j / 64 {
        r += word(words, w).count_ones() as usize;
    }
    let rem = j % 64;
    if rem > 0 {
        r += (word(words, j / 64) & ((1u64 << rem) - 1)).count_ones() as usize;
    }
    r
}

/// Set bits in a bitvector's words.
pub fn count_ones(words: &[u8]) -> usize {
    (0..words.len() / 8)
        .map(|i| word(words, i).count_ones() as usize)
        .sum()
}

/// Bytes of a bitvector of `n` bits with its rank samples: `ceil(n/64)` u64
/// words, then one u32 per [`RANK_BLOCK_BITS`] bits, padded to 8.
pub const fn bitvector_len(n: usize) -> usize {
    let words = n.div_ceil(64);
    (8 * words + 4 * words.div_ceil(RANK_BLOCK_BITS / 64)).div_ceil(8) * 8
}

/// The number of leading indices `0..n` for which `pred` holds (`pred`
/// true then false, like `slice::partition_point`), by a binary search of
/// fixed halving steps that select instead of branching, as the standard
/// library's does: the comparisons of a lookup are random, so mispredicted
/// branches would cost more than the loads.
#[cfg_attr(feature = "std", inline(always))]
pub fn partition_point(n: usize, mut pred: impl FnMut(usize) -> bool) -> usize {
    if n == 0 {
        return 0;
    }
    let (mut base, mut size) = (0usize, n);
    while size > 1 {
        let half = size / 2;
        let mid = base + half;
        // A select, not a branch (LLVM emits cmov for this shape).
        base = if pred(mid) { mid } else { base };
        size -= half;
    }
    base + usize::from(pred(base))
}

/// Reads an unsigned LEB128 value of at most 3 bytes (values below 2^21) at
/// `at`; returns it and the bytes read, or `None` when it is longer or cut off.
#[cfg_attr(feature = "std", inline)]
pub fn read_varint(b: &[u8], at: usize) -> Option<(u32, usize)> {
    let mut v = 0u32;
    for i in 0..3 {
        let byte = *b.get(at + i)?;
        v |= u32::from(byte & 0x7F) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one-pass move to the front keeps the list FORMAT.md §15.2
    /// describes: a model list (find, remove, insert at the front, cut to
    /// LINE_RECENT) agrees after every touch of a long pseudo-random run.
    #[test]
    fn recent_states_follow_the_model() {
        let (mut r, mut model) = (RecentStates::default(), std::vec::Vec::new());
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for line in 0..20_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Few states, so that hits, misses and a full list all occur.
            let (node, file) = ((x % 11) as u32, (x >> 8) as u32 % 3);
            r.touch(node, file, line);
            if let Some(i) = model
                .iter()
                .position(|e: &(u32, u32, u32)| (e.0, e.1) == (node, file))
            {
                model.remove(i);
            }
            model.insert(0, (node, file, line));
            model.truncate(LINE_RECENT);
            for (j, e) in model.iter().enumerate() {
                assert_eq!(r.get(j), Some(*e), "touch {line}, state {j}");
            }
            assert_eq!(r.get(model.len()), None);
            assert_eq!(r.find(node, file), Some(0));
        }
    }

    /// Both paths of get_bits (one 8-byte load, two words) give the bits
    /// one by one, at every position and width, up to and past the end.
    #[test]
    fn get_bits_reads_bit_by_bit() {
        // Widths past 64 (a damaged block header) read as 64.
        assert_eq!(get_bits(&[0xFF; 16], 3, 200), u64::MAX);
        assert_eq!(get_bits_by_bit(&[0xFF; 16], 3, 200), u64::MAX);
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let words: Vec<u8> = (0..40)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let bit = |p: u64| {
            let byte = words.get((p / 8) as usize).copied().unwrap_or(0);
            u64::from(byte >> (p % 8) & 1)
        };
        for width in 0..=64u32 {
            for pos in 0..(8 * words.len() as u64 + 8) {
                let want = (0..u64::from(width)).fold(0, |v, i| v | bit(pos + i) << i);
                assert_eq!(
                    get_bits(&words, pos, width),
                    want,
                    "pos {pos} width {width}"
                );
                // The kernel's variant (no feature fast-lookup) agrees.
                assert_eq!(get_bits_by_bit(&words, pos, width), want);
                assert_eq!(get_bit(&words, pos as usize), bit(pos) == 1);
            }
        }
    }

    #[test]
    fn magic_is_no_v1_count() {
        assert!(u64::from_le_bytes(MAGIC) > u64::from(u32::MAX));
        // The published check value of CRC-32C.
        assert_eq!(CRC32C.checksum(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c(&[b"123456789"]), 0xE306_9283);
    }

    #[test]
    fn crc32c_of_parts_is_the_tables_crc_of_their_bytes() {
        // Lengths around the hardware path's 8-byte steps and its tail.
        let data: Vec<u8> = (0..4099u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for len in [0, 1, 7, 8, 9, 63, 64, 65, 1000, 4099] {
            let d = &data[..len];
            assert_eq!(crc32c(&[d]), CRC32C.checksum(d), "{len}");
            for cut in [0, len / 3, len] {
                assert_eq!(
                    crc32c(&[&d[..cut], &d[cut..]]),
                    CRC32C.checksum(d),
                    "{len} at {cut}"
                );
            }
        }
        assert_eq!(crc32c(&[]), CRC32C.checksum(b""));
    }

    #[test]
    fn partition_point_agrees_with_the_slice_method() {
        for n in 0..40usize {
            let v: Vec<usize> = (0..n).map(|i| i / 3).collect();
            for key in 0..16 {
                assert_eq!(
                    partition_point(n, |i| v[i] <= key),
                    v.partition_point(|&x| x <= key)
                );
            }
        }
    }

    #[test]
    fn bits_read_across_words() {
        let words: Vec<u8> = [0xFFFF_0000_0000_0001u64, 0x5]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        assert_eq!(get_bits(&words, 0, 1), 1);
        assert_eq!(get_bits(&words, 48, 16), 0xFFFF);
        assert_eq!(get_bits(&words, 60, 8), 0x5F);
        assert_eq!(get_bits(&words, 64, 64), 5);
        assert_eq!(get_bits(&words, 128, 64), 0);
        assert_eq!(get_bits(&words, u64::MAX - 3, 64), 0);
        assert!(get_bit(&words, 0) && !get_bit(&words, 1) && !get_bit(&words, 9999));
        assert_eq!(index_bits(0), 0);
        assert_eq!(index_bits(1), 0);
        assert_eq!(index_bits(2), 1);
        assert_eq!(index_bits(3), 2);
        assert_eq!(index_bits(65536), 16);
        assert_eq!(index_bits(65537), 17);
        assert_eq!(read_varint(&[0x85, 0x01], 0), Some((133, 2)));
        assert_eq!(read_varint(&[0x85], 0), None);
        assert_eq!(read_varint(&[0x80, 0x80, 0x80, 0x01], 0), None);
    }

    #[test]
    fn packed_block_reads_what_get_bits_reads() {
        // Bytes that give every value a different pattern.
        let bits: [u8; 600] = core::array::from_fn(|i| (i as u8).wrapping_mul(151) ^ 0x5A);
        for width in 1..=56u32 {
            for pos in [0u64, 1, 7, 8, 13, 63, 64, 100] {
                for count in [1usize, 2, 31, 64] {
                    let need = (pos % 8) as usize + (count - 1) * width as usize;
                    let fits = (pos / 8) as usize + need / 8 + 8 <= bits.len();
                    let Some(block) = PackedBlock::new(&bits, pos, width, count) else {
                        assert!(!fits, "width {width} pos {pos} count {count}");
                        continue;
                    };
                    for i in 0..count {
                        let want = get_bits(&bits, pos + (i as u64) * u64::from(width), width);
                        assert_eq!(block.value(i), want, "width {width} pos {pos} i {i}");
                    }
                }
            }
        }
        // Outside the fast shape: no block.
        assert!(PackedBlock::new(&bits, 0, 0, 64).is_none());
        assert!(PackedBlock::new(&bits, 0, 57, 64).is_none());
        assert!(PackedBlock::new(&bits, 0, 8, 0).is_none());
        assert!(PackedBlock::new(&bits[..70], 0, 8, 64).is_none());
        assert!(PackedBlock::new(&bits[..71], 0, 8, 64).is_some());
    }
}
