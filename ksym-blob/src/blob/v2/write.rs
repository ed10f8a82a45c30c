//! The v2 writer: a symbol list in, the bytes of docs/FORMAT.md part II out.
//!
//! Steps: address order (stable), `__pfx_` folding (§10.1), name order of
//! the stored names with their LCPs (reusing [`crate::blob::nameorder`]), front
//! coding in buckets of 16 (§11.2), pair-merged codes learnt on what the
//! front coding leaves (§11.3, [`super::pairs`]), then the sections with
//! their CRC32Cs. The same input always gives the same bytes.

use super::bits::{Bits, push_uleb, token_table};
use super::layout::*;
use super::pairs;
use crate::blob::list::{PackError, PackErrorKind, SymbolList};
use crate::blob::nameorder::{NameList, name_order};

/// What goes into `meta` besides the text bounds (FORMAT.md §10.6).
#[derive(Debug, Clone, Default)]
pub struct V2Options {
    /// The kernel release (`uname -r`); at most 65,535 bytes.
    pub release: Vec<u8>,
    /// The kernel's build-id (the GNU build-id note's bytes); at most 65,535 bytes.
    pub build_id: Vec<u8>,
    /// Source lines and inline frames for the `lines` section (FORMAT.md
    /// §15), and whether to store their columns.
    pub lines: Option<(super::source_lines::write::SourceTable, bool)>,
    /// The `module_space` section's bytes (FORMAT.md §16), as
    /// [`super::module_space::write::encode_module_space`] lays them out.
    pub module_space: Option<Vec<u8>>,
    /// The binary's load segments for the `segments` section (FORMAT.md
    /// §10.8); none, no section.
    pub segments: Vec<super::layout::LoadSegment>,
    /// Store the `lines` section's function names that are symbol names
    /// as references to them (FORMAT.md §15.1, flag bit 1): a smaller
    /// blob for readers with feature `symbol-names-in-lines` (the host
    /// tools); leave it off for a blob a kernel embeds, whose lean reader
    /// would read those names as none.
    pub shared_names: bool,
    /// Huffman-code the `lines` section's rows where that makes them
    /// smaller (FORMAT.md §15.6, flag bit 3): for readers with feature
    /// `coded-lines` (the host tools); leave it off for a blob a kernel
    /// embeds, whose lean reader refuses such a section.
    pub coded_rows: bool,
    /// The `lines` section's rows a block as a shift of 32 (FORMAT.md
    /// §15.1, 0..=3); `None` for [`super::layout::LINE_BLOCK_SHIFT`]
    /// (256 rows).
    pub line_block_shift: Option<u8>,
}

/// A packed v2 blob and what went into it.
#[derive(Debug, Clone)]
pub struct PackedV2 {
    /// The blob.
    pub blob: Vec<u8>,
    /// Every section with its byte length, in blob order.
    pub sections: Vec<(SectionId, usize)>,
    /// All symbols.
    pub num_syms: usize,
    /// Stored rows (symbols less folded `__pfx_` ones).
    pub stored: usize,
    /// Pair codes learnt for the names.
    pub pair_codes: usize,
    /// Sum of the stored names' raw lengths, in bytes.
    pub raw_name_bytes: usize,
}

impl PackedV2 {
    /// One line for `ksym-pack -v`: counts and every section's size.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "v2: {} symbols ({} stored, {} folded __pfx_), {} pair codes; blob {} bytes ({:.2} B/symbol):",
            self.num_syms,
            self.stored,
            self.num_syms - self.stored,
            self.pair_codes,
            self.blob.len(),
            self.blob.len() as f64 / self.num_syms.max(1) as f64
        );
        for (id, len) in &self.sections {
            s.push_str(&format!(" {} {len}", id.name()));
        }
        s
    }
}

struct Stored<'a> {
    list: &'a SymbolList,
    rows: &'a [u32],
}

impl NameList for Stored<'_> {
    fn len(&self) -> usize {
        self.rows.len()
    }
    fn name(&self, i: usize) -> &[u8] {
        self.list.name(self.rows[i] as usize)
    }
}

/// Which symbols of `by_addr` fold into the next one (FORMAT.md §10.1):
/// `__pfx_X` alone at its address, followed directly by `X` 16 bytes higher,
/// of the same type and module, `X` itself not folded.
fn fold_flags(list: &SymbolList, by_addr: &[u32]) -> Vec<bool> {
    let n = by_addr.len();
    let mut fold = vec![false; n];
    for i in (0..n.saturating_sub(1)).rev() {
        let (p, x) = (by_addr[i] as usize, by_addr[i + 1] as usize);
        let alone = i == 0 || list.address(by_addr[i - 1] as usize) != list.address(p);
        fold[i] = alone
            && !fold[i + 1]
            && list.address(p).checked_add(PFX_DISTANCE) == Some(list.address(x))
            && list.symbol_type(p) == list.symbol_type(x)
            && list.module(p) == list.module(x)
            && list.name(p).strip_prefix(PFX) == Some(list.name(x));
    }
    fold
}

/// The address-bucket table that ends `addr_blocks` (FORMAT.md §10.2) for
/// blocks with these `bases`, over the first base up to `end`: entry `k`
/// is the number of blocks whose base is below the bucket's first address.
pub(crate) fn address_buckets(bases: &[u64], end: u64) -> Vec<u8> {
    let first = bases.first().copied().unwrap_or(0);
    let (shift, nbuckets) = bucket_shape(first, end, bases.len());
    let mut out = Vec::with_capacity(ADDR_BUCKETS_HEADER + 4 * (nbuckets + 1));
    out.extend_from_slice(&shift.to_le_bytes());
    out.extend_from_slice(&(nbuckets as u32).to_le_bytes());
    for b in bucket_entries(first, (shift, nbuckets), bases.len(), |b| bases[b]) {
        out.extend_from_slice(&(b as u32).to_le_bytes());
    }
    out
}

/// A bitvector with its rank samples, padded to 8 (FORMAT.md §10.4);
/// nothing when no bit is set: `pfx` and `name_to_addr` are then left out
/// (§10.1, §10.4), 0.19 bytes per row of a kernel without `__pfx_`.
fn bitvector(bits: &[bool]) -> Vec<u8> {
    if !bits.contains(&true) {
        return Vec::new();
    }
    let mut words = vec![0u64; bits.len().div_ceil(64)];
    for (j, _) in bits.iter().enumerate().filter(|(_, b)| **b) {
        words[j / 64] |= 1 << (j % 64);
    }
    let mut out: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let mut ones = 0u32;
    for chunk in words.chunks(RANK_BLOCK_BITS / 64) {
        out.extend_from_slice(&ones.to_le_bytes());
        ones += chunk.iter().map(|w| w.count_ones()).sum::<u32>();
    }
    out.resize(bitvector_len(bits.len()), 0);
    out
}

/// Shortcuts for inverting the permutation `p` (FORMAT.md §10.4): on every
/// cycle longer than [`SHORTCUT_STEP`], every `SHORTCUT_STEP`-th element
/// from the cycle's least element is marked and points `SHORTCUT_STEP`
/// steps back. Returns the marks and the back pointers in element order.
fn shortcuts(p: &[u32]) -> (Vec<bool>, Vec<u32>) {
    let n = p.len();
    let mut marks = vec![false; n];
    let mut back = vec![0u32; n];
    let mut seen = vec![false; n];
    let mut cycle = Vec::new();
    for start in 0..n {
        if seen[start] {
            continue;
        }
        cycle.clear();
        let mut x = start;
        while !seen[x] {
            seen[x] = true;
            cycle.push(x);
            x = p[x] as usize;
        }
        let len = cycle.len();
        if len <= SHORTCUT_STEP {
            continue;
        }
        for k in (0..len).step_by(SHORTCUT_STEP) {
            marks[cycle[k]] = true;
            back[cycle[k]] = cycle[(k + len - SHORTCUT_STEP) % len] as u32;
        }
    }
    let back = (0..n).filter(|&j| marks[j]).map(|j| back[j]).collect();
    (marks, back)
}

/// Which symbols a v2 blob stores, in which orders (FORMAT.md §10.1,
/// §11.1): what the sections are laid out from.
struct Plan {
    by_addr: Vec<u32>,
    /// Stored rows (indices into the list) in address order.
    rows: Vec<u32>,
    /// Which stored rows carry a folded `__pfx_` symbol before them.
    folded_of: Vec<bool>,
    order: crate::blob::nameorder::NameOrder,
}

impl Plan {
    /// Errors: a name holding byte 0x00 (it ends coded names).
    fn new(list: &SymbolList) -> Result<Self, PackError> {
        for i in 0..list.len() {
            if let Some(at) = list.name(i).iter().position(|&b| b == 0) {
                return Err(PackError {
                    line: None,
                    kind: PackErrorKind::NulInName { index: i, at },
                });
            }
        }
        let by_addr = list.address_order();
        let fold = fold_flags(list, &by_addr);
        let (mut rows, mut folded_of) = (Vec::new(), Vec::new());
        for (i, (&r, &f)) in by_addr.iter().zip(&fold).enumerate() {
            if !f {
                rows.push(r);
                folded_of.push(i > 0 && fold[i - 1]);
            }
        }
        let order = name_order(&Stored { list, rows: &rows });
        Ok(Plan {
            by_addr,
            rows,
            folded_of,
            order,
        })
    }

    /// The token codes of the stored names, front coded in name order
    /// (FORMAT.md §11.2, §11.3): the costly step of packing.
    fn learn(&self, list: &SymbolList) -> pairs::PairCodes {
        let stored = Stored {
            list,
            rows: &self.rows,
        };
        let suffix = |r: usize| {
            let lcp = if r.is_multiple_of(BUCKET) {
                0
            } else {
                self.order.lcp[r] as usize
            };
            &stored.name(self.order.by_name[r] as usize)[lcp..]
        };
        pairs::learn((0..self.rows.len()).map(suffix))
    }

    /// The `lines` section of `opts.lines` (FORMAT.md §15), if any.
    fn lines(&self, list: &SymbolList, opts: &V2Options) -> Option<Result<Vec<u8>, PackError>> {
        use super::source_lines::write::{RowForm, encode_lines_in_blocks, encode_lines_naming};
        let (table, columns) = opts.lines.as_ref()?;
        let shift = opts
            .line_block_shift
            .unwrap_or(super::layout::LINE_BLOCK_SHIFT);
        let form = RowForm::when(opts.coded_rows);
        let stored = Stored {
            list,
            rows: &self.rows,
        };
        Some(if opts.shared_names {
            // A function name that is a symbol's is stored once, in `names`.
            let m = self.rows.len();
            let mut rank: foldhash::HashMap<&[u8], u32> = foldhash::HashMapExt::with_capacity(m);
            for (r, &j) in self.order.by_name.iter().enumerate() {
                rank.entry(stored.name(j as usize)).or_insert(r as u32);
            }
            encode_lines_naming(table, *columns, shift, form, m, |s| rank.get(s).copied())
        } else {
            encode_lines_in_blocks(table, *columns, shift, form)
        })
    }
}

/// A symbol list with its names' token codes learnt: the costly part of
/// packing it (FORMAT.md §11.3), done before the rest of the blob is known,
/// so that `ksym-pack` learns it while it reads the DWARF.
/// [`V2Names::pack`] gives the bytes [`pack_v2`] gives.
pub struct V2Names {
    list: SymbolList,
    plan: Plan,
    codes: pairs::PairCodes,
}

impl V2Names {
    /// Learns the names of `list`.
    ///
    /// Errors: a name holding byte 0x00 (it ends coded names).
    pub fn learn(list: SymbolList) -> Result<Self, PackError> {
        let plan = Plan::new(&list)?;
        let codes = plan.learn(&list);
        Ok(V2Names { list, plan, codes })
    }

    /// The list the names were learnt from.
    pub fn list(&self) -> &SymbolList {
        &self.list
    }

    /// The v2 blob of the list, with `opts`.
    ///
    /// Errors: those of [`pack_v2`].
    pub fn pack(&self, opts: &V2Options) -> Result<PackedV2, PackError> {
        let lines = self.plan.lines(&self.list, opts).transpose()?;
        assemble(&self.list, &self.plan, &self.codes, lines, opts)
    }
}

/// Packs `list` into a v2 blob, read back against `list` before it is
/// returned ([`crate::blob::readback`]).
///
/// Errors: a name holding byte 0x00 (it ends coded names), more symbols than
/// u32 counts, a release or build-id over 65,535 bytes, sections past
/// 4 GiB (u32 offsets), or [`PackErrorKind::ReadBack`].
pub fn pack_v2(list: &SymbolList, opts: &V2Options) -> Result<PackedV2, PackError> {
    let plan = Plan::new(list)?;
    // The lines section is encoded on a second thread while the names'
    // codes are learnt: neither needs the other, and both learn a table.
    let (codes, lines) = std::thread::scope(|scope| {
        let lines = scope.spawn(|| plan.lines(list, opts));
        let codes = plan.learn(list);
        let lines = lines
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        (codes, lines)
    });
    assemble(list, &plan, &codes, lines.transpose()?, opts)
}

/// The blob of `list` as `plan` stores it, its names coded by `codes` and
/// its `lines` section already encoded.
fn assemble(
    list: &SymbolList,
    plan: &Plan,
    codes: &pairs::PairCodes,
    lines: Option<Vec<u8>>,
    opts: &V2Options,
) -> Result<PackedV2, PackError> {
    let fail = |kind| PackError { line: None, kind };
    if opts.release.len() > u16::MAX as usize || opts.build_id.len() > u16::MAX as usize {
        return Err(fail(PackErrorKind::MetaTooLong));
    }
    let Plan {
        by_addr,
        rows,
        folded_of,
        order,
    } = plan;
    let m = rows.len();
    let stored = Stored { list, rows };

    let mut sections: Vec<(SectionId, Vec<u8>)> = Vec::new();

    // meta: the text bounds as the input has them (first in address order),
    // only those present.
    let mut meta = vec![0u8; META_FIXED];
    let mut bounds = 0u32;
    let mut bound_addr = [None; 4];
    for (k, want) in BOUND_NAMES.iter().enumerate() {
        if let Some(&i) = by_addr.iter().find(|&&i| list.name(i as usize) == *want) {
            bounds |= 1 << k;
            bound_addr[k] = Some(list.address(i as usize));
            meta.extend_from_slice(&list.address(i as usize).to_le_bytes());
        }
    }
    meta[0..4].copy_from_slice(&bounds.to_le_bytes());
    meta[4..6].copy_from_slice(&(opts.release.len() as u16).to_le_bytes());
    meta[6..8].copy_from_slice(&(opts.build_id.len() as u16).to_le_bytes());
    meta.extend_from_slice(&opts.release);
    meta.extend_from_slice(&opts.build_id);
    sections.push((SectionId::Meta, meta));

    // Addresses: blocks of 64, each a base and packed (a - base) >> shift.
    let addr = |j: usize| list.address(rows[j] as usize);
    let mut blocks = Vec::with_capacity(m.div_ceil(ADDR_BLOCK) * ADDR_BLOCK_HEADER);
    let mut bits = Bits::default();
    let mut bases = Vec::with_capacity(m.div_ceil(ADDR_BLOCK));
    for b in (0..m).step_by(ADDR_BLOCK) {
        let end = (b + ADDR_BLOCK).min(m);
        let base = addr(b);
        bases.push(base);
        let deltas: Vec<u64> = (b..end).map(|j| addr(j) - base).collect();
        let shift = deltas
            .iter()
            .filter(|&&d| d != 0)
            .map(|d| d.trailing_zeros())
            .min()
            .unwrap_or(0);
        let max = deltas.iter().map(|d| d >> shift).max().unwrap_or(0);
        let width = 64 - max.leading_zeros();
        let pos = u32::try_from(bits.len()).map_err(|_| fail(PackErrorKind::TooManySymbols))?;
        blocks.extend_from_slice(&base.to_le_bytes());
        blocks.extend_from_slice(&pos.to_le_bytes());
        blocks.extend_from_slice(&[width as u8, shift as u8, 0, 0]);
        for d in deltas {
            bits.push(d >> shift, width);
        }
    }
    // The text's end (etext or einittext, the higher) bounds the buckets,
    // so the gap up to module space does not stretch them.
    let last = if m == 0 { 0 } else { addr(m - 1) };
    let first = bases.first().copied().unwrap_or(0);
    let end = bucket_end(first, bound_addr[1], bound_addr[3], last);
    blocks.extend_from_slice(&address_buckets(&bases, end));
    sections.push((SectionId::AddrBlocks, blocks));
    sections.push((SectionId::AddrBits, bits.bytes()));

    // Types: a bit for T (1) or t (0), other types as exceptions.
    let mut types = vec![0u64; m.div_ceil(64)];
    let mut exceptions = Vec::new();
    // A weak or IFUNC symbol is an exception (734 in libc): 4 bytes each
    // where the row fits 24 bits.
    let short = m < 1 << 24;
    for j in 0..m {
        match list.symbol_type(rows[j] as usize) {
            b'T' => types[j / 64] |= 1 << (j % 64),
            b't' => {}
            other if short => {
                exceptions.extend_from_slice(&(j as u32 | u32::from(other) << 24).to_le_bytes())
            }
            other => {
                exceptions.extend_from_slice(&(j as u32).to_le_bytes());
                exceptions.extend_from_slice(&u32::from(other).to_le_bytes());
            }
        }
    }
    sections.push((
        SectionId::Types,
        types.iter().flat_map(|w| w.to_le_bytes()).collect(),
    ));
    sections.push((SectionId::TypeExceptions, exceptions));

    // pfx: which stored rows carry a folded `__pfx_` companion, with rank samples.
    sections.push((SectionId::Pfx, bitvector(folded_of)));

    // addr_to_name, and its inverse as shortcuts along its cycles.
    let w = index_bits(m);
    let mut a2n_vals = vec![0u32; m];
    for (r, &j) in order.by_name.iter().enumerate() {
        a2n_vals[j as usize] = r as u32;
    }
    let mut a2n = Bits::default();
    for &v in &a2n_vals {
        a2n.push(u64::from(v), w);
    }
    let pad = |mut b: Vec<u8>, bits: usize| {
        b.resize(8 * bits.div_ceil(64), 0);
        b
    };
    sections.push((SectionId::AddrToName, pad(a2n.bytes(), m * w as usize)));
    let (marks, back_vals) = shortcuts(&a2n_vals);
    let mut n2a = bitvector(&marks);
    let mut back = Bits::default();
    for v in &back_vals {
        back.push(u64::from(*v), w);
    }
    n2a.extend_from_slice(&pad(back.bytes(), back_vals.len() * w as usize));
    sections.push((SectionId::NameToAddr, n2a));

    let mut index = Vec::with_capacity(4 * m.div_ceil(BUCKET));
    let mut names = Vec::with_capacity(codes.encoded.len() + m);
    let mut enc = codes.encoded.split(|&b| b == NAME_END);
    for r in 0..m {
        if r % BUCKET == 0 {
            let at = u32::try_from(names.len()).map_err(|_| {
                fail(PackErrorKind::NamesTooLarge {
                    bytes: names.len() as u64,
                })
            })?;
            index.extend_from_slice(&at.to_le_bytes());
        } else {
            push_uleb(&mut names, u64::from(order.lcp[r]));
        }
        names.extend_from_slice(enc.next().unwrap_or(&[]));
        names.push(NAME_END);
    }
    sections.push((SectionId::NameIndex, index));
    if names.len() > u32::MAX as usize {
        return Err(fail(PackErrorKind::NamesTooLarge {
            bytes: names.len() as u64,
        }));
    }
    sections.push((SectionId::Names, names));
    let tokens = token_table(&codes.expansions);
    sections.push((SectionId::Tokens, tokens));

    // Modules: names, then runs of stored rows sharing one (id 0: none).
    if list.has_modules() {
        let mut mod_names: Vec<&[u8]> = Vec::new();
        let mut runs: Vec<(u32, u32)> = Vec::new();
        for (j, &row) in rows.iter().enumerate() {
            let id = match list.module(row as usize) {
                None => 0,
                Some(name) => match mod_names.iter().position(|n| *n == name) {
                    Some(p) => p as u32 + 1,
                    None => {
                        mod_names.push(name);
                        mod_names.len() as u32
                    }
                },
            };
            if runs.last().map_or(id != 0, |r| r.1 != id) {
                runs.push((j as u32, id));
            }
        }
        let mut sec = Vec::new();
        sec.extend_from_slice(&(mod_names.len() as u32).to_le_bytes());
        sec.extend_from_slice(&(runs.len() as u32).to_le_bytes());
        for (row, id) in &runs {
            sec.extend_from_slice(&row.to_le_bytes());
            sec.extend_from_slice(&id.to_le_bytes());
        }
        let mut at = 0u32;
        for n in &mod_names {
            sec.extend_from_slice(&at.to_le_bytes());
            at += n.len() as u32;
        }
        sec.extend_from_slice(&at.to_le_bytes());
        for n in &mod_names {
            sec.extend_from_slice(n);
        }
        sections.push((SectionId::Modules, sec));
    }

    if let Some(lines) = lines {
        sections.push((SectionId::Lines, lines));
    }

    if let Some(ms) = &opts.module_space {
        sections.push((SectionId::ModuleSpace, ms.clone()));
    }

    // Sizes (FORMAT.md §10.7): form 0 holds each stored row's size; form 1
    // the padding from its end to the next stored row, mostly under 32
    // bytes where a size takes 16 bits, with the rest as exceptions.
    if list.has_sizes() {
        let size = |j: usize| list.size(rows[j] as usize).unwrap_or(0);
        let addr = |j: usize| list.address(rows[j] as usize);
        sections.push((SectionId::Sizes, sizes_section(m, size, addr)));
    }

    // Segments: count, form, then each PT_LOAD's fields; form 1 (24-byte
    // entries) when every segment is code loaded as stored, as linkers
    // lay it out, else form 0 (40 bytes, every field).
    if !opts.segments.is_empty() {
        use super::layout::{SEGMENT_LEN, SEGMENT_SHORT_FLAGS};
        let short = opts
            .segments
            .iter()
            .all(|g| g.filesz == g.memsz && g.flags == SEGMENT_SHORT_FLAGS);
        let mut sec = Vec::with_capacity(8 + SEGMENT_LEN * opts.segments.len());
        sec.extend_from_slice(&(opts.segments.len() as u32).to_le_bytes());
        sec.extend_from_slice(&u32::from(short).to_le_bytes());
        for g in &opts.segments {
            if short {
                for v in [g.vaddr, g.offset, g.filesz] {
                    sec.extend_from_slice(&v.to_le_bytes());
                }
                continue;
            }
            for v in [g.vaddr, g.offset, g.filesz, g.memsz] {
                sec.extend_from_slice(&v.to_le_bytes());
            }
            sec.extend_from_slice(&g.flags.to_le_bytes());
            sec.extend_from_slice(&0u32.to_le_bytes());
        }
        sections.push((SectionId::Segments, sec));
    }

    // Header, directory, sections at 8-aligned offsets; an empty section
    // is left out (a reader reads it as empty).
    sections.retain(|(_, bytes)| !bytes.is_empty());
    let nsect = sections.len();
    let header_len = HEADER_LEN + DIR_ENTRY_LEN * nsect;
    let mut blob = vec![0u8; header_len];
    blob[..8].copy_from_slice(&MAGIC);
    blob[8..10].copy_from_slice(&VERSION.to_le_bytes());
    blob[10..12].copy_from_slice(&(header_len as u16).to_le_bytes());
    if short {
        blob[12..16].copy_from_slice(&FLAG_SHORT_TYPE_EXCEPTIONS.to_le_bytes());
    }
    let num_syms = u32::try_from(list.len()).map_err(|_| fail(PackErrorKind::TooManySymbols))?;
    blob[16..20].copy_from_slice(&num_syms.to_le_bytes());
    blob[20..24].copy_from_slice(&(m as u32).to_le_bytes());
    let present = sections
        .iter()
        .fold(0u32, |p, (id, _)| p | 1 << (*id as u32 - 1));
    blob[24..28].copy_from_slice(&present.to_le_bytes());
    for (s, (_, bytes)) in sections.iter().enumerate() {
        blob.resize(blob.len().div_ceil(8) * 8, 0);
        let d = HEADER_LEN + DIR_ENTRY_LEN * s;
        blob[d..d + 4].copy_from_slice(&crc32c(&[bytes]).to_le_bytes());
        blob[d + 4..d + 8].copy_from_slice(&(bytes.len() as u32).to_le_bytes());
        blob.extend_from_slice(bytes);
    }
    if blob.len() > u32::MAX as usize {
        return Err(fail(PackErrorKind::NamesTooLarge {
            bytes: blob.len() as u64,
        }));
    }
    let crc = crc32c(&[&blob[..28], &blob[32..header_len]]);
    blob[28..32].copy_from_slice(&crc.to_le_bytes());
    crate::blob::readback::read_back_in(list, by_addr, &blob)?;
    Ok(PackedV2 {
        blob,
        sections: sections.iter().map(|(id, b)| (*id, b.len())).collect(),
        num_syms: list.len(),
        stored: m,
        pair_codes: codes.pair_codes,
        raw_name_bytes: (0..m).map(|j| stored.name(j).len()).sum(),
    })
}

/// Recomputes every CRC32C of a v2 blob in place (the directory's section
/// CRCs, then the header's), for the sections the directory places inside
/// `blob`. For tests and fuzzing that need to reach past the checksums to
/// the structure behind them; a blob that was damaged stays damaged.
pub fn reseal(blob: &mut [u8]) {
    if blob.len() < HEADER_LEN {
        return;
    }
    let nsect = bits_set(u32_at(blob, 24)).min(SECTIONS.len());
    let header_len = (HEADER_LEN + DIR_ENTRY_LEN * nsect).min(blob.len());
    let mut end = header_len;
    for s in 0..nsect {
        let d = HEADER_LEN + DIR_ENTRY_LEN * s;
        if d + DIR_ENTRY_LEN > blob.len() {
            break;
        }
        let off = end.next_multiple_of(8);
        let len = u32_at(blob, d + 4) as usize;
        end = off.saturating_add(len);
        if let Some(bytes) = blob.get(off..end) {
            let crc = crc32c(&[bytes]);
            blob[d..d + 4].copy_from_slice(&crc.to_le_bytes());
        }
    }
    let crc = crc32c(&[&blob[..28], &blob[32..header_len]]);
    blob[28..32].copy_from_slice(&crc.to_le_bytes());
}

/// The `sizes` section (FORMAT.md §10.7) of `m` stored rows, row `j` at
/// `addr(j)` (ascending) with size `size(j)` (0: unknown): form 1 when it
/// is smaller than form 0.
fn sizes_section(m: usize, size: impl Fn(usize) -> u64, addr: impl Fn(usize) -> u64) -> Vec<u8> {
    let packed_len = |width: u32| 8 * (m * width as usize).div_ceil(64);
    let pad = |mut b: Vec<u8>, width: u32| {
        b.resize(packed_len(width), 0);
        b
    };
    // Each row's size and gap read once: the widths below are each tried
    // over every row, and a size is a binary search of the list's (on
    // libstdc++'s 10,569 rows, 52 M of the 129 M instructions of packing's
    // last, one-core step).
    let sizes: Vec<u64> = (0..m).map(&size).collect();
    let max = sizes.iter().copied().max().unwrap_or(0);
    let width0 = (64 - max.leading_zeros()).max(1);
    // Form 1's value of row j: 0 unknown, gap + 1, or all ones (an
    // exception) where the gap does not fit or there is no next row.
    let mut next = vec![None; m];
    for j in (0..m.saturating_sub(1)).rev() {
        next[j] = if addr(j + 1) > addr(j) {
            Some(addr(j + 1))
        } else {
            next[j + 1]
        };
    }
    let gaps: Vec<Option<u64>> = (0..m)
        .map(|j| {
            let s = sizes[j];
            next[j]
                .and_then(|n| n.checked_sub(addr(j))?.checked_sub(s))
                .filter(|_| s != 0)
        })
        .collect();
    // Exceptions hold sizes as u32.
    let widths = if max <= u64::from(u32::MAX) {
        1..width0.min(17)
    } else {
        0..0
    };
    let form1 = widths
        .map(|w| {
            let esc = (1u64 << w) - 1;
            let exceptions = sizes
                .iter()
                .zip(&gaps)
                .filter(|&(&s, g)| s != 0 && g.is_none_or(|g| g + 1 >= esc))
                .count();
            (16 + packed_len(w) + 8 * exceptions, w)
        })
        .min();
    let mut sec = Vec::new();
    match form1 {
        Some((len, w)) if len < 8 + packed_len(width0) => {
            let esc = (1u64 << w) - 1;
            let mut packed = Bits::default();
            let mut exceptions = Vec::new();
            for (j, (&s, &g)) in sizes.iter().zip(&gaps).enumerate() {
                let v = match (s, g) {
                    (0, _) => 0,
                    (_, Some(g)) if g + 1 < esc => g + 1,
                    (s, _) => {
                        exceptions.extend_from_slice(&(j as u32).to_le_bytes());
                        exceptions.extend_from_slice(&(s as u32).to_le_bytes());
                        esc
                    }
                };
                packed.push(v, w);
            }
            for v in [w, 1, (exceptions.len() / 8) as u32, 0] {
                sec.extend_from_slice(&v.to_le_bytes());
            }
            sec.extend_from_slice(&pad(packed.bytes(), w));
            sec.extend_from_slice(&exceptions);
        }
        _ => {
            let mut packed = Bits::default();
            for &s in &sizes {
                packed.push(s, width0);
            }
            sec.extend_from_slice(&width0.to_le_bytes());
            sec.extend_from_slice(&0u32.to_le_bytes());
            sec.extend_from_slice(&pad(packed.bytes(), width0));
        }
    }
    sec
}
