//! Opening a v2 blob: [`KallsymsV2::from_blob`] as its named steps, in the
//! order docs/FORMAT.md §13 lists the checks (header, directory and CRCs,
//! section shapes, then the few fields that lookups index by). The order is
//! part of the behaviour: a blob with several faults reports the first.

use super::*;
use crate::blob::problem::Problem;

/// The fixed header fields (FORMAT.md §9.1), checked.
struct Header {
    num_syms: usize,
    stored: usize,
    nsect: usize,
    len: usize,
}

/// The sections the directory places, checked against their CRC32C
/// (FORMAT.md §9.2), indexed by `id - 1`.
struct Directory<'a> {
    info: [Option<SectionInfo>; SECTIONS.len()],
    bytes: [&'a [u8]; SECTIONS.len()],
}

impl<'a> Directory<'a> {
    fn sec(&self, id: SectionId) -> &'a [u8] {
        self.bytes[id as usize - 1]
    }
    fn at(&self, id: SectionId) -> usize {
        self.info[id as usize - 1].map_or(0, |s| s.offset)
    }
    /// Fails unless section `id` is `want` bytes long.
    fn shape(&self, id: SectionId, want: Option<usize>) -> Result<(), BlobError> {
        if want != Some(self.sec(id).len()) {
            return Err(bad(self.at(id), id, Problem::LengthNotSymbolCount));
        }
        Ok(())
    }
}

/// The bit vectors and index arrays whose lengths follow from the stored
/// symbol count (FORMAT.md §10.2 to §10.4, §11.2).
struct Shapes<'a> {
    nblocks: usize,
    block_headers: &'a [u8],
    buckets: AddrBuckets<'a>,
    idx_bits: u32,
    pfx: &'a [u8],
    pfx_ranks: &'a [u8],
    marks: &'a [u8],
    mark_ranks: &'a [u8],
    back: &'a [u8],
}

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
    if u32_at(blob, 12) != 0 {
        return Err(err(12, BlobErrorKind::BadHeader(Problem::UnknownFlags)));
    }
    let h = Header {
        num_syms: u32_at(blob, 16) as usize,
        stored: u32_at(blob, 20) as usize,
        nsect: u32_at(blob, 24) as usize,
        len,
    };
    if h.nsect > SECTIONS.len() || len != HEADER_LEN + DIR_ENTRY_LEN * h.nsect {
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
    let mut d = CRC32C.digest();
    d.update(&header[..28]);
    d.update(&header[32..]);
    if d.finalize() != u32_at(blob, 28) {
        return Err(err(
            28,
            BlobErrorKind::SectionChecksum {
                section: "header and directory",
            },
        ));
    }
    Ok(h)
}

/// Walks the directory: known ids in ascending order, each section where
/// the previous one ends (padded with zeros to 8), whole, with its CRC32C;
/// nothing after the last; every required section present.
fn parse_directory<'a>(blob: &'a [u8], h: &Header) -> Result<Directory<'a>, BlobError> {
    let mut dir = Directory {
        info: [None; SECTIONS.len()],
        bytes: [&[]; SECTIONS.len()],
    };
    let mut end = h.len;
    let mut prev_id = 0u32;
    for s in 0..h.nsect {
        let at = HEADER_LEN + DIR_ENTRY_LEN * s;
        let raw_id = u32_at(blob, at);
        let Some(&id) = SECTIONS.iter().find(|i| **i as u32 == raw_id) else {
            return Err(err(at, BlobErrorKind::BadHeader(Problem::UnknownSectionId)));
        };
        if raw_id <= prev_id {
            return Err(err(
                at,
                BlobErrorKind::BadHeader(Problem::SectionIdsNotAscending),
            ));
        }
        prev_id = raw_id;
        let crc = u32_at(blob, at + 4);
        let off = u32_at(blob, at + 8) as usize;
        let len = u32_at(blob, at + 12) as usize;
        let start = end.div_ceil(8) * 8;
        if off != start {
            return Err(err(
                at + 8,
                BlobErrorKind::BadHeader(Problem::SectionMisplaced),
            ));
        }
        let pad = blob
            .get(end..start)
            .ok_or(err(end, BlobErrorKind::Truncated(id.name())))?;
        if let Some(p) = pad.iter().position(|&b| b != 0) {
            return Err(err(end + p, BlobErrorKind::NonZeroPadding));
        }
        let bytes = blob
            .get(off..off.saturating_add(len))
            .ok_or(err(off, BlobErrorKind::Truncated(id.name())))?;
        if CRC32C.checksum(bytes) != crc {
            return Err(err(
                off,
                BlobErrorKind::SectionChecksum { section: id.name() },
            ));
        }
        let k = raw_id as usize - 1;
        dir.info[k] = Some(SectionInfo {
            id,
            offset: off,
            len,
        });
        dir.bytes[k] = bytes;
        end = off + len;
    }
    if end != blob.len() {
        return Err(err(end, BlobErrorKind::TrailingBytes));
    }
    for id in SECTIONS {
        if !matches!(
            id,
            SectionId::Modules | SectionId::Lines | SectionId::ModuleSpace
        ) && dir.info[id as usize - 1].is_none()
        {
            return Err(err(0, BlobErrorKind::MissingSection { section: id.name() }));
        }
    }
    Ok(dir)
}

/// Checks that every count the lookups rely on agrees with the section
/// lengths, for `m` stored symbols, and splits the bit vectors from their
/// rank directories.
fn check_shapes<'a>(dir: &Directory<'a>, m: usize) -> Result<Shapes<'a>, BlobError> {
    let nblocks = m.div_ceil(ADDR_BLOCK);
    let (block_headers, buckets) = split_addr_blocks(dir, nblocks)?;
    let nwords = words_for(m);
    dir.shape(SectionId::Types, Some(8 * nwords))?;
    let nranks = nwords.div_ceil(RANK_BLOCK_BITS / 64);
    dir.shape(SectionId::Pfx, Some(bitvector_len(m)))?;
    let idx_bits = index_bits(m);
    let perm = m.checked_mul(idx_bits as usize).map(|b| 8 * words_for(b));
    dir.shape(SectionId::AddrToName, perm)?;
    let n2a = dir.sec(SectionId::NameToAddr);
    let marks_len = bitvector_len(m);
    let n2a_bad = |what| bad(dir.at(SectionId::NameToAddr), SectionId::NameToAddr, what);
    let Some(marks_all) = n2a.get(..marks_len) else {
        return Err(n2a_bad(Problem::ShorterThanMarks));
    };
    // Lengths were checked above; `get` keeps a kernel's reader panic-free.
    let (marks, mark_ranks) = marks_all.split_at_checked(8 * nwords).unwrap_or_default();
    let mark_ranks = mark_ranks.get(..4 * nranks).unwrap_or_default();
    let nmarks = count_ones(marks);
    if n2a.len() != marks_len + 8 * words_for(nmarks * idx_bits as usize) {
        return Err(n2a_bad(Problem::LengthNotMarks));
    }
    let back = n2a.get(marks_len..).unwrap_or_default();
    dir.shape(SectionId::NameIndex, Some(4 * m.div_ceil(BUCKET)))?;
    if !dir.sec(SectionId::TypeExceptions).len().is_multiple_of(8) {
        return Err(bad(
            dir.at(SectionId::TypeExceptions),
            SectionId::TypeExceptions,
            Problem::LengthNotMultipleOf8,
        ));
    }
    let (pfx, pfx_ranks) = dir
        .sec(SectionId::Pfx)
        .split_at_checked(8 * nwords)
        .unwrap_or_default();
    Ok(Shapes {
        nblocks,
        block_headers,
        buckets,
        idx_bits,
        pfx,
        pfx_ranks: pfx_ranks.get(..4 * nranks).unwrap_or_default(),
        marks,
        mark_ranks,
        back,
    })
}

/// Splits `addr_blocks` into the block headers and the address-bucket
/// table after them (FORMAT.md §10.2): the table's length must match its
/// count, which is at most one bucket per block (2 for one block spanning
/// 2^63 bytes or more), and its shift below 64.
fn split_addr_blocks<'a>(
    dir: &Directory<'a>,
    nblocks: usize,
) -> Result<(&'a [u8], AddrBuckets<'a>), BlobError> {
    let sec = dir.sec(SectionId::AddrBlocks);
    let fail = |what| bad(dir.at(SectionId::AddrBlocks), SectionId::AddrBlocks, what);
    let Some(headers_len) = nblocks.checked_mul(ADDR_BLOCK_HEADER) else {
        return Err(fail(Problem::LengthNotSymbolCount));
    };
    let Some(table) = sec.get(headers_len..) else {
        return Err(fail(Problem::LengthNotSymbolCount));
    };
    if table.len() < ADDR_BUCKETS_HEADER {
        return Err(fail(Problem::BucketTableMissing));
    }
    let shift = u32_at(table, 0);
    let nbuckets = u32_at(table, 4) as usize;
    if shift > 63 || nbuckets > nblocks.max(2) {
        return Err(fail(Problem::BucketShiftOrCountRange));
    }
    if table.len() != ADDR_BUCKETS_HEADER + 4 * (nbuckets + 1) {
        return Err(fail(Problem::BucketTableLength));
    }
    let headers = sec.get(..headers_len).unwrap_or_default();
    Ok((
        headers,
        AddrBuckets {
            first: u64_at(headers, 0),
            shift,
            nbuckets,
            entries: table.get(ADDR_BUCKETS_HEADER..).unwrap_or_default(),
        },
    ))
}

/// Every address block's width, shift and bit position stay inside
/// `addr_bits` (FORMAT.md §10.2).
fn check_addr_blocks(dir: &Directory<'_>, m: usize, nblocks: usize) -> Result<(), BlobError> {
    let blocks = dir.sec(SectionId::AddrBlocks);
    let bits_len = dir.sec(SectionId::AddrBits).len() as u64 * 8;
    for b in 0..nblocks {
        let h = b * ADDR_BLOCK_HEADER;
        let pos = u64::from(u32_at(blocks, h + 8));
        let (width, shift) = match blocks.get(h + 12..h + 14) {
            Some(&[w, s]) => (w, s),
            _ => (u8::MAX, u8::MAX),
        };
        let count = (m - b * ADDR_BLOCK).min(ADDR_BLOCK) as u64;
        if width > 64 || shift > 63 || pos + count * u64::from(width) > bits_len {
            return Err(bad(
                dir.at(SectionId::AddrBlocks) + h,
                SectionId::AddrBlocks,
                Problem::BlockFieldRange,
            ));
        }
    }
    Ok(())
}

/// `meta` (FORMAT.md §10.6): the four bounds, the release, the build-id.
fn parse_meta<'a>(dir: &Directory<'a>) -> Result<Meta<'a>, BlobError> {
    let meta_b = dir.sec(SectionId::Meta);
    let rel_len = u16_at(meta_b, 36) as usize;
    let id_len = u16_at(meta_b, 38) as usize;
    if meta_b.len() != META_FIXED + rel_len + id_len || u32_at(meta_b, 32) > 0xF {
        return Err(bad(
            dir.at(SectionId::Meta),
            SectionId::Meta,
            Problem::MetaFieldRange,
        ));
    }
    Ok(Meta {
        bounds: u32_at(meta_b, 32),
        bound_addr: [
            u64_at(meta_b, 0),
            u64_at(meta_b, 8),
            u64_at(meta_b, 16),
            u64_at(meta_b, 24),
        ],
        release: &meta_b[META_FIXED..META_FIXED + rel_len],
        build_id: &meta_b[META_FIXED + rel_len..],
    })
}

/// The optional `modules` section (FORMAT.md §10.5): counts that fit its
/// length, split into runs, name offsets and names.
fn parse_modules<'a>(dir: &Directory<'a>) -> Result<Modules<'a>, BlobError> {
    let Some(s) = dir.info[SectionId::Modules as usize - 1] else {
        return Ok(Modules::default());
    };
    let mb = dir.sec(SectionId::Modules);
    let nmods = u32_at(mb, 0) as usize;
    let nruns = u32_at(mb, 4) as usize;
    let runs_end = nruns.checked_mul(8).and_then(|x| x.checked_add(8));
    let offs_end = runs_end.and_then(|r| nmods.checked_add(1)?.checked_mul(4)?.checked_add(r));
    let (Some(runs_end), Some(offs_end)) = (runs_end, offs_end) else {
        return Err(bad(s.offset, SectionId::Modules, Problem::CountsTooLarge));
    };
    if offs_end > mb.len() || u32_at(mb, offs_end - 4) as usize != mb.len() - offs_end {
        return Err(bad(s.offset, SectionId::Modules, Problem::CountsNotLength));
    }
    Ok(Modules {
        runs: &mb[8..runs_end],
        nruns,
        offsets: &mb[runs_end..offs_end],
        nmods,
        names: &mb[offs_end..],
    })
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
    let nsect = u32_at(region, 24) as usize;
    if nsect > SECTIONS.len() || header_len != HEADER_LEN + DIR_ENTRY_LEN * nsect {
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
        let at = HEADER_LEN + DIR_ENTRY_LEN * s;
        let off = u32_at(region, at + 8) as usize;
        let len = u32_at(region, at + 12) as usize;
        end = end.max(off.saturating_add(len));
    }
    if end > region.len() {
        return Err(err(region.len(), BlobErrorKind::Truncated("v2 section")));
    }
    Ok(end)
}

impl<'a> KallsymsV2<'a> {
    /// Checks `blob`'s header, directory, CRCs and section shapes and returns
    /// a view of it. `stext`/`etext` override the bounds stored in `meta`.
    /// `blob` may start at any address; it is never copied.
    ///
    /// Errors: [`BlobError`] with the byte offset and, for a damaged section,
    /// its name (a CRC32C mismatch names the section). Time: one CRC32C pass
    /// over the blob plus a few thousand header reads.
    pub fn from_blob(
        blob: &'a [u8],
        stext: Option<u64>,
        etext: Option<u64>,
    ) -> Result<Self, BlobError> {
        let header = parse_header(blob)?;
        let dir = parse_directory(blob, &header)?;
        let m = header.stored;
        let shapes = check_shapes(&dir, m)?;
        check_addr_blocks(&dir, m, shapes.nblocks)?;
        if count_ones(shapes.pfx).checked_add(m) != Some(header.num_syms) {
            return Err(bad(
                dir.at(SectionId::Pfx),
                SectionId::Pfx,
                Problem::FoldedCount,
            ));
        }
        let tokens = Tokens::parse(dir.sec(SectionId::Tokens))
            .map_err(|(o, what)| bad(dir.at(SectionId::Tokens) + o, SectionId::Tokens, what))?;
        let meta = parse_meta(&dir)?;
        let modules = parse_modules(&dir)?;
        // Without the feature the section is still CRC-checked, then unread.
        #[cfg(feature = "lines")]
        let lines = match dir.info[SectionId::Lines as usize - 1] {
            Some(s) => Some(LineTable::parse(dir.sec(SectionId::Lines), s.offset)?),
            None => None,
        };
        let module_space = match dir.info[SectionId::ModuleSpace as usize - 1] {
            Some(s) => (dir.sec(SectionId::ModuleSpace), s.offset),
            None => (&[][..], 0),
        };
        let blocks = shapes.block_headers;
        Ok(KallsymsV2 {
            num_syms: header.num_syms,
            stored: m,
            meta,
            addr_blocks: blocks,
            addr_words: bytemuck::try_cast_slice(blocks).unwrap_or(&[]),
            buckets: shapes.buckets,
            addr_bits: dir.sec(SectionId::AddrBits),
            types: dir.sec(SectionId::Types),
            type_exc: dir.sec(SectionId::TypeExceptions),
            pfx: shapes.pfx,
            pfx_ranks: shapes.pfx_ranks,
            a2n: dir.sec(SectionId::AddrToName),
            marks: shapes.marks,
            mark_ranks: shapes.mark_ranks,
            back: shapes.back,
            idx_bits: shapes.idx_bits,
            name_index: dir.sec(SectionId::NameIndex),
            names: dir.sec(SectionId::Names),
            tokens,
            modules,
            #[cfg(feature = "lines")]
            lines,
            stext: stext.or(meta.bound(0)),
            etext: etext.or(meta.bound(1)),
            einittext: meta.bound(3),
            sections: dir.info,
            module_space,
        })
    }
}
