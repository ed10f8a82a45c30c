//! Opening a v2 blob, in two steps (docs/FORMAT.md §13):
//! [`KallsymsV2::from_blob_intact`] checks that the blob is whole (header,
//! directory ids and bounds, every section's CRC32C; with feature
//! `shape-checks` also the directory's layout rules) and builds the view;
//! [`KallsymsV2::check_shapes`] checks that the sections' lengths agree
//! with the counts. [`KallsymsV2::from_blob`] runs both, the second with
//! feature `shape-checks` (std turns it on). The order is part of the
//! behaviour: a blob with several faults reports the first.

use super::*;
use crate::blob::problem::Problem;

/// The fixed header fields (FORMAT.md §9.1), checked.
struct Header {
    num_syms: usize,
    stored: usize,
    /// Bit `id - 1` for each section the directory lists.
    present: u32,
    len: usize,
}

// Inlined, as parse_directory is.
#[inline(always)]
fn parse_header(blob: &[u8]) -> Result<Header, BlobError> {
    if blob.len() < HEADER_LEN {
        return Err(err(blob.len(), BlobErrorKind::Truncated("v2 header")));
    }
    if !is_v2(blob) {
        return Err(err(0, BlobErrorKind::BadHeader(Problem::NoMagic)));
    }
    let version = u16_at(blob, 8);
    if version != VERSION {
        return Err(err(8, BlobErrorKind::UnsupportedVersion { version }));
    }
    let len = u16_at(blob, 10) as usize;
    if u32_at(blob, 12) & !FLAG_SHORT_TYPE_EXCEPTIONS != 0 {
        return Err(err(12, BlobErrorKind::BadHeader(Problem::UnknownFlags)));
    }
    let h = Header {
        num_syms: u32_at(blob, 16) as usize,
        stored: u32_at(blob, 20) as usize,
        present: u32_at(blob, 24),
        len,
    };
    if h.present >> SECTIONS.len() != 0 {
        return Err(err(24, BlobErrorKind::BadHeader(Problem::UnknownSectionId)));
    }
    if len != HEADER_LEN + DIR_ENTRY_LEN * bits_set(h.present) {
        return Err(err(
            10,
            BlobErrorKind::BadHeader(Problem::HeaderLengthVsCount),
        ));
    }
    let Some(header) = blob.get(..len) else {
        return Err(err(
            blob.len(),
            BlobErrorKind::Truncated("section directory"),
        ));
    };
    let parts = [
        header.get(..28).unwrap_or_default(),
        header.get(32..).unwrap_or_default(),
    ];
    if crc32c(&parts) != u32_at(blob, 28) {
        return Err(err(
            28,
            BlobErrorKind::SectionChecksum {
                section: "header and directory",
            },
        ));
    }
    Ok(h)
}

/// The sections the directory places: each one's bytes by `id - 1` (empty
/// when absent), the bits of those present, and where the last one ends.
struct Directory<'a> {
    sec: [&'a [u8]; SECTIONS.len()],
    present: u16,
    end: usize,
}

/// Walks the directory (FORMAT.md §9.2): one entry per bit of the header's
/// `sections`, in id order, each section whole where the layout rule puts
/// it (the previous one's end rounded up to 8), with its CRC32C. With
/// feature `shape-checks` also the padding zeros, and after the last
/// nothing (`whole`) or zeros only (a reserved region, §2.3). An absent
/// section reads as empty; `check_shapes` refuses one that may not be.
/// Without the feature (a kernel's build) the header's CRC32C stands for
/// the rules: the directory is the one `ksym-pack --check` passed, and a
/// forged one still reads in bounds. Inlined into its one caller: at
/// opt-level 3 without LTO, a separate function cost its arguments' and
/// result's moves.
#[inline(always)]
fn parse_directory<'a>(
    blob: &'a [u8],
    h: &Header,
    whole: bool,
) -> Result<Directory<'a>, BlobError> {
    let mut sec = [&[][..]; SECTIONS.len()];
    let mut end = h.len;
    #[cfg(feature = "shape-checks")]
    let mut last = "header and directory";
    let mut at = HEADER_LEN;
    for (k, slot) in sec.iter_mut().enumerate() {
        if h.present >> k & 1 == 0 {
            continue;
        }
        let name = SECTIONS.get(k).map_or("", |id| id.name());
        let off = end.next_multiple_of(8);
        let len = u32_at(blob, at + 4) as usize;
        #[cfg(feature = "shape-checks")]
        {
            let pad = blob
                .get(end..off)
                .ok_or(err(end, BlobErrorKind::Truncated(name)))?;
            if let Some(p) = pad.iter().position(|&b| b != 0) {
                return Err(err(end + p, BlobErrorKind::NonZeroPadding));
            }
        }
        let bytes = blob
            .get(off..off.saturating_add(len))
            .ok_or(err(off, BlobErrorKind::Truncated(name)))?;
        if crc32c(&[bytes]) != u32_at(blob, at) {
            return Err(err(off, BlobErrorKind::SectionChecksum { section: name }));
        }
        *slot = bytes;
        end = off + len;
        at += DIR_ENTRY_LEN;
        #[cfg(feature = "shape-checks")]
        {
            last = name;
        }
    }
    let present = h.present as u16;
    #[cfg(not(feature = "shape-checks"))]
    let _ = whole;
    #[cfg(feature = "shape-checks")]
    {
        let after = blob.get(end..).unwrap_or_default();
        if whole && !after.is_empty() {
            return Err(err(end, BlobErrorKind::TrailingBytes(last)));
        }
        if let Some(p) = after.iter().position(|&b| b != 0) {
            return Err(err(end + p, BlobErrorKind::NonZeroAfterBlob));
        }
    }
    Ok(Directory { sec, present, end })
}

/// The directory bit of section `id` (the header's `sections`, FORMAT.md §9.1).
pub(super) const fn bit(id: SectionId) -> u16 {
    1 << (id as u32 - 1)
}

/// The length in bytes of the v2 blob at the start of `region` (FORMAT.md
/// §9.2 and §2.3): where the last section of its directory ends, or the
/// header's end when it has none. Reads the header and the directory only;
/// [`KallsymsV2::from_blob`] checks them. No allocation.
///
/// Errors: [`BlobErrorKind::Truncated`] when `region` ends inside the
/// header, the directory or a section; [`BlobErrorKind::BadHeader`] when the
/// header length and section count disagree.
pub fn blob_len(region: &[u8]) -> Result<usize, BlobError> {
    if region.len() < HEADER_LEN {
        return Err(err(region.len(), BlobErrorKind::Truncated("v2 header")));
    }
    let header_len = u16_at(region, 10) as usize;
    let present = u32_at(region, 24);
    let nsect = bits_set(present);
    if present >> SECTIONS.len() != 0 || header_len != HEADER_LEN + DIR_ENTRY_LEN * nsect {
        return Err(err(
            10,
            BlobErrorKind::BadHeader(Problem::HeaderLengthVsCount),
        ));
    }
    if region.len() < header_len {
        return Err(err(
            region.len(),
            BlobErrorKind::Truncated("section directory"),
        ));
    }
    let mut end = header_len;
    for s in 0..nsect {
        let len = u32_at(region, HEADER_LEN + DIR_ENTRY_LEN * s + 4) as usize;
        end = end.next_multiple_of(8).saturating_add(len);
    }
    if end > region.len() {
        return Err(err(region.len(), BlobErrorKind::Truncated("v2 section")));
    }
    Ok(end)
}

/// `bytes[from..from + len]`, empty where that is not inside `bytes`.
pub(super) fn part(bytes: &[u8], from: usize, len: usize) -> &[u8] {
    bytes
        .get(from..from.saturating_add(len))
        .unwrap_or_default()
}

impl<'a> KallsymsV2<'a> {
    /// Checks `blob`'s header, directory, CRCs and (feature `shape-checks`,
    /// which std turns on) section shapes, and returns a view of it.
    /// `stext`/`etext` override the bounds stored in `meta`. `blob` may
    /// start at any address; it is never copied.
    ///
    /// Errors: [`BlobError`] with the byte offset and, for a damaged section,
    /// its name (a CRC32C mismatch names the section). Time: one CRC32C pass
    /// over the blob plus a few thousand header reads.
    pub fn from_blob(
        blob: &'a [u8],
        stext: Option<u64>,
        etext: Option<u64>,
    ) -> Result<Self, BlobError> {
        let v = Self::from_blob_intact(blob, stext, etext)?;
        #[cfg(feature = "shape-checks")]
        v.check_shapes()?;
        Ok(v)
    }

    /// The first step of [`from_blob`](Self::from_blob): the header, the
    /// directory (its layout rules with feature `shape-checks`) and every
    /// section's CRC32C (FORMAT.md §9, §13), the
    /// token offsets' length and, with feature `lines`, the `lines` header
    /// (§15.5). Does not check the sections' lengths against the counts
    /// ([`check_shapes`](Self::check_shapes) does): lookups in a blob that
    /// would fail there stay in bounds and end, with wrong answers. What a
    /// kernel opens when the blob it embeds passed `ksym-pack --check` at
    /// build time, so that its CRCs alone prove it unchanged.
    ///
    /// Errors: as [`from_blob`](Self::from_blob), less the shape checks.
    pub fn from_blob_intact(
        blob: &'a [u8],
        stext: Option<u64>,
        etext: Option<u64>,
    ) -> Result<Self, BlobError> {
        Self::open(blob, true, stext, etext).map(|(v, _)| v)
    }

    /// Opens the v2 blob at the start of a reserved region, which holds the
    /// blob, then zeros (FORMAT.md §2.3): the blob's length is where the
    /// last section of its directory ends. Checks as
    /// [`from_blob`](Self::from_blob) does, and returns the view and the
    /// number of zero bytes after the blob. No allocation, no copy.
    ///
    /// Errors: as [`from_blob`](Self::from_blob), except that bytes after
    /// the last section are [`BlobErrorKind::NonZeroAfterBlob`] where one
    /// is not zero, and a region of zeros only is
    /// [`BlobErrorKind::NotFilled`].
    // Inlined into Kallsyms::from_region, a kernel's one way in: the view
    // (some 200 bytes) is then built once, in place, not moved through
    // three results by memcpy.
    #[inline(always)]
    pub fn from_region(
        region: &'a [u8],
        stext: Option<u64>,
        etext: Option<u64>,
    ) -> Result<(Self, usize), BlobError> {
        crate::blob::symbol::check_filled(region)?;
        let (v, padding) = Self::open(region, false, stext, etext)?;
        #[cfg(feature = "shape-checks")]
        v.check_shapes()?;
        Ok((v, padding))
    }

    /// [`from_blob_intact`](Self::from_blob_intact) of a whole blob or
    /// (`!whole`) of a reserved region; also returns the bytes after the
    /// blob.
    #[inline(always)] // as from_region
    fn open(
        region: &'a [u8],
        whole: bool,
        stext: Option<u64>,
        etext: Option<u64>,
    ) -> Result<(Self, usize), BlobError> {
        let header = parse_header(region)?;
        let Directory { sec, present, end } = parse_directory(region, &header, whole)?;
        let (blob, after) = region.split_at_checked(end).unwrap_or_default();
        let s = |id: SectionId| sec[id as usize - 1];
        let m = header.stored;
        #[cfg(feature = "fast-lookup")]
        let (blocks, headers_len) = (
            s(SectionId::AddrBlocks),
            m.div_ceil(ADDR_BLOCK) * ADDR_BLOCK_HEADER,
        );
        #[cfg(feature = "fast-lookup")]
        let (table, entries) = {
            let table = blocks.get(headers_len..).unwrap_or_default();
            (table, table.get(ADDR_BUCKETS_HEADER..).unwrap_or_default())
        };
        let meta = s(SectionId::Meta);
        let Some(tokens) = Tokens::new(s(SectionId::Tokens)) else {
            return Err(bad(
                offset_in(blob, s(SectionId::Tokens)),
                SectionId::Tokens,
                Problem::OffsetsBounds,
            ));
        };
        // Without the feature the section is still CRC-checked, then unread.
        #[cfg(feature = "lines")]
        let lines = match present & bit(SectionId::Lines) {
            0 => None,
            _ => {
                let l = s(SectionId::Lines);
                let t = LineTable::parse(l, offset_in(blob, l))?;
                #[cfg(feature = "symbol-names-in-lines")]
                let t =
                    t.with_symbol_names(s(SectionId::Names), s(SectionId::NameIndex), tokens, m);
                Some(t)
            }
        };
        let view = KallsymsV2 {
            blob,
            sec,
            present,
            num_syms: header.num_syms,
            stored: m,
            #[cfg(feature = "fast-lookup")]
            addr_words: bytemuck::try_cast_slice(part(blocks, 0, headers_len)).unwrap_or(&[]),
            #[cfg(feature = "fast-lookup")]
            buckets: AddrBuckets {
                first: u64_at(blocks, 0),
                shift: u32_at(table, 0) & 63,
                // At most what the table holds, so a lookup's reads of
                // entries k and k + 1 stay in it.
                nbuckets: (u32_at(table, 4) as usize).min((entries.len() / 4).saturating_sub(1)),
                entries,
            },
            idx_bits: index_bits(m),
            #[cfg(feature = "fast-lookup")]
            pfx_ranks: bitvector_parts(s(SectionId::Pfx), m).1,
            tokens,
            #[cfg(feature = "modules")]
            modules: Modules::new(s(SectionId::Modules)),
            #[cfg(feature = "sizes")]
            sizes: sizes::Sizes::new(s(SectionId::Sizes)),
            #[cfg(feature = "lines")]
            lines,
            stext: stext.or(Meta::bound_in(meta, 0)),
            etext: etext.or(Meta::bound_in(meta, 1)),
            einittext: Meta::bound_in(meta, 3),
        };
        Ok((view, after.len()))
    }

    /// The second step of [`from_blob`](Self::from_blob) (FORMAT.md §13):
    /// every count the lookups rely on agrees with the section lengths,
    /// the address blocks' fields stay inside `addr_bits`, `num_syms` is
    /// the stored rows plus the folded ones, the token offsets ascend,
    /// `meta`'s lengths and bounds bits and the `modules` counts fit.
    /// Proportional to the number of blocks and bitvector words.
    ///
    /// Errors: [`BlobErrorKind::BadSection`] with the section's offset (a
    /// block's, for a block field) and what is wrong.
    pub fn check_shapes(&self) -> Result<(), BlobError> {
        let m = self.stored;
        let nwords = words_for(m);
        let nblocks = m.div_ceil(ADDR_BLOCK);
        let fail = |id: SectionId, what| bad(self.at(id), id, what);
        let blocks = self.sec(SectionId::AddrBlocks);
        let table = match nblocks.checked_mul(ADDR_BLOCK_HEADER) {
            Some(h) => blocks.get(h..),
            None => None,
        };
        let Some(table) = table else {
            return Err(fail(SectionId::AddrBlocks, Problem::LengthNotSymbolCount));
        };
        if table.len() < ADDR_BUCKETS_HEADER {
            return Err(fail(SectionId::AddrBlocks, Problem::BucketTableMissing));
        }
        let nbuckets = u32_at(table, 4) as usize;
        if u32_at(table, 0) > 63 || nbuckets > nblocks.max(2) {
            return Err(fail(
                SectionId::AddrBlocks,
                Problem::BucketShiftOrCountRange,
            ));
        }
        if table.len() != ADDR_BUCKETS_HEADER + 4 * (nbuckets + 1) {
            return Err(fail(SectionId::AddrBlocks, Problem::BucketTableLength));
        }
        let perm = m
            .checked_mul(self.idx_bits as usize)
            .map(|b| 8 * words_for(b));
        // `pfx` and `name_to_addr` are left out when no bit of theirs
        // is set (FORMAT.md §10.1, §10.4).
        let pfx = self.sec(SectionId::Pfx).len();
        for (id, want) in [
            (SectionId::Types, Some(8 * nwords)),
            (
                SectionId::Pfx,
                Some(if pfx == 0 { 0 } else { bitvector_len(m) }),
            ),
            (SectionId::AddrToName, perm),
        ] {
            if want != Some(self.sec(id).len()) {
                return Err(fail(id, Problem::LengthNotSymbolCount));
            }
        }
        let n2a = self.sec(SectionId::NameToAddr);
        if !n2a.is_empty() && n2a.len() < bitvector_len(m) {
            return Err(fail(SectionId::NameToAddr, Problem::ShorterThanMarks));
        }
        let (marks, _, back) = self.name_to_addr();
        let back_bits = count_ones(marks).saturating_mul(self.idx_bits as usize);
        if back.len() != 8 * words_for(back_bits) {
            return Err(fail(SectionId::NameToAddr, Problem::LengthNotMarks));
        }
        if self.sec(SectionId::NameIndex).len() != 4 * m.div_ceil(BUCKET) {
            return Err(fail(SectionId::NameIndex, Problem::LengthNotSymbolCount));
        }
        // Each bucket holds at least one name of a code and its end byte:
        // the last starts at least 2 bytes before the end of `names`.
        let buckets = m.div_ceil(BUCKET);
        if buckets > 0
            && u32_at(self.sec(SectionId::NameIndex), 4 * (buckets - 1)) as usize + 2
                > self.sec(SectionId::Names).len()
        {
            return Err(fail(SectionId::Names, Problem::ShorterThanIndex));
        }
        if !self
            .sec(SectionId::TypeExceptions)
            .len()
            .is_multiple_of(self.type_exception_len())
        {
            return Err(fail(
                SectionId::TypeExceptions,
                Problem::LengthNotMultipleOf8,
            ));
        }
        self.check_addr_blocks(nblocks)?;
        if count_ones(self.pfx_words()).checked_add(m) != Some(self.num_syms) {
            return Err(fail(SectionId::Pfx, Problem::FoldedCount));
        }
        Tokens::check(self.sec(SectionId::Tokens))
            .map_err(|(o, what)| bad(self.at(SectionId::Tokens) + o, SectionId::Tokens, what))?;
        let meta = self.sec(SectionId::Meta);
        let bounds = u32_at(meta, 0);
        let ids_len = u16_at(meta, 4) as usize + u16_at(meta, 6) as usize;
        if bounds > 0xF || meta.len() != META_FIXED + 8 * bits_set(bounds) + ids_len {
            return Err(fail(SectionId::Meta, Problem::MetaFieldRange));
        }
        if self.present & bit(SectionId::Modules) != 0 {
            Modules::new(self.sec(SectionId::Modules))
                .check(self.sec(SectionId::Modules))
                .map_err(|what| fail(SectionId::Modules, what))?;
        }
        if self.present & bit(SectionId::Sizes) != 0 {
            // §10.7: width 1 to 64 and form 0, m packed sizes; or width 1
            // to 16 and form 1, the exceptions' count, 4 zero bytes, m
            // packed gaps and the exceptions.
            let s = self.sec(SectionId::Sizes);
            let width = u32_at(s, 0) as usize;
            let (form, head) = (u32_at(s, 4), if u32_at(s, 4) == 1 { 16 } else { 8 });
            let ok = match form {
                0 => (1..=64).contains(&width),
                1 => (1..=16).contains(&width) && u32_at(s, 12) == 0,
                _ => false,
            };
            if s.len() < head || !ok {
                return Err(fail(SectionId::Sizes, Problem::SizesHeader));
            }
            let exceptions = if form == 1 {
                8 * u32_at(s, 8) as usize
            } else {
                0
            };
            if m.checked_mul(width)
                .map(|b| head + 8 * words_for(b) + exceptions)
                != Some(s.len())
            {
                return Err(fail(SectionId::Sizes, Problem::LengthNotSymbolCount));
            }
        }
        if self.present & bit(SectionId::Segments) != 0 {
            // §10.8: count, form, count entries of 40 bytes (form 0) or
            // 24 (form 1).
            let s = self.sec(SectionId::Segments);
            let n = u32_at(s, 0) as usize;
            let len = match u32_at(s, 4) {
                0 => Some(SEGMENT_LEN),
                1 => Some(SEGMENT_SHORT_LEN),
                _ => None,
            };
            if s.len() < 8 || len.and_then(|l| n.checked_mul(l)?.checked_add(8)) != Some(s.len()) {
                return Err(fail(SectionId::Segments, Problem::CountsNotLength));
            }
        }
        Ok(())
    }

    /// Every address block's width, shift and bit position stay inside
    /// `addr_bits` (FORMAT.md §10.2).
    fn check_addr_blocks(&self, nblocks: usize) -> Result<(), BlobError> {
        let bits_len = self.sec(SectionId::AddrBits).len() as u64 * 8;
        let blocks = self.sec(SectionId::AddrBlocks);
        for b in 0..nblocks {
            let h = b * ADDR_BLOCK_HEADER;
            let pos = u64::from(u32_at(blocks, h + 8));
            let (width, shift) = match blocks.get(h + 12..h + 14) {
                Some(&[w, s]) => (w, s),
                _ => (u8::MAX, u8::MAX),
            };
            let count = (self.stored - b * ADDR_BLOCK).min(ADDR_BLOCK) as u64;
            if width > 64 || shift > 63 || pos + count * u64::from(width) > bits_len {
                return Err(bad(
                    self.at(SectionId::AddrBlocks) + h,
                    SectionId::AddrBlocks,
                    Problem::BlockFieldRange,
                ));
            }
        }
        Ok(())
    }
}

impl<'a> Modules<'a> {
    /// The `modules` section's parts (FORMAT.md §10.5) as its counts place
    /// them; parts past the end are empty ([`check`](Self::check) refuses
    /// that).
    pub(super) fn new(mb: &'a [u8]) -> Self {
        let nmods = u32_at(mb, 0) as usize;
        let nruns = u32_at(mb, 4) as usize;
        let runs_end = nruns.saturating_mul(8).saturating_add(8);
        let offs_end = nmods
            .saturating_add(1)
            .saturating_mul(4)
            .saturating_add(runs_end);
        Modules {
            runs: mb.get(8..runs_end).unwrap_or_default(),
            nruns,
            offsets: mb.get(runs_end..offs_end).unwrap_or_default(),
            nmods,
            names: mb.get(offs_end..).unwrap_or_default(),
        }
    }

    /// The counts fit the section's length and the last name offset is
    /// where the names end.
    fn check(&self, mb: &[u8]) -> Result<(), Problem> {
        let runs_end = self.nruns.checked_mul(8).and_then(|x| x.checked_add(8));
        let offs_end =
            runs_end.and_then(|r| self.nmods.checked_add(1)?.checked_mul(4)?.checked_add(r));
        let Some(offs_end) = offs_end else {
            return Err(Problem::CountsTooLarge);
        };
        if offs_end > mb.len() || u32_at(mb, offs_end - 4) as usize != mb.len() - offs_end {
            return Err(Problem::CountsNotLength);
        }
        Ok(())
    }
}
