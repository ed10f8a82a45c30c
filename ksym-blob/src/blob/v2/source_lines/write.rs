//! The writer of the v2 `lines` section (docs/FORMAT.md §15): a
//! [`SourceTable`] in, the section's bytes out.

use crate::blob::list::{PackError, PackErrorKind};
use crate::blob::v2::bits::{Bits, push_uleb as uleb, token_table};
use crate::blob::v2::layout::*;
use crate::blob::v2::pairs::{Helper, learn_helped};
use core::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// One row of the address → source step function, the same type the
/// reader returns (FORMAT.md §15.2): ids index [`SourceTable::files`] and
/// [`SourceTable::nodes`]; the writer renumbers nodes in depth-first order.
pub use super::read::SourceRow as LineRow;

/// A function in the inline tree: the subprogram (`parent` 0) or an
/// inlined subroutine called from `call_file:call_line:call_column` in its
/// parent (FORMAT.md §15.3).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct InlineNode {
    /// The node this one was inlined into; 0 for a subprogram.
    pub parent: u32,
    /// Function name (index into [`SourceTable::strings`]).
    pub name: u32,
    /// File id of the call site; 0 for a subprogram or when unknown.
    pub call_file: u32,
    /// Line of the call site; 0 when unknown.
    pub call_line: u32,
    /// Column of the call site; 0 when unknown.
    pub call_column: u32,
}

/// Source lines and inline frames of an executable, ready to encode.
/// Index 0 of `nodes` and of `files` is the "none" entry.
#[derive(Debug, Clone, Default)]
pub struct SourceTable {
    /// Rows in ascending address order; the last one ends the table (file 0,
    /// node 0).
    pub rows: Vec<LineRow>,
    /// Inline tree; every node's parent has a smaller index.
    pub nodes: Vec<InlineNode>,
    /// Files as (directory, base name) string ids.
    pub files: Vec<(u32, u32)>,
    /// Function names, directories and base names.
    pub strings: Vec<Vec<u8>>,
}

impl SourceTable {
    /// Sets every row's discriminator to 0 and drops the rows that then
    /// repeat the row before them (same file, line, column and node): the
    /// table answers every address as before, less the discriminator.
    /// Only decode_stacktrace.sh-style oops lines print discriminators
    /// (binutils' addr2line does); llvm-symbolizer, perf and GSYM do not.
    /// libc 2.36: 145,663 rows → 140,988, 4.5 % of the blob; libstdc++ 12:
    /// 68,438 → 60,269, 3.4 %.
    pub fn drop_discriminators(&mut self) {
        for r in &mut self.rows {
            r.discriminator = 0;
        }
        // The end row stays whatever comes before it: it ends the table.
        let end = self.rows.pop();
        self.rows
            .dedup_by_key(|r| (r.file, r.line, r.column, r.node));
        self.rows.extend(end);
    }
}

/// Stores columns (FORMAT.md §15.1 flag bit 0).
pub const WITH_COLUMNS: u32 = 1;

/// Node names from `nstrings` on name symbols, by rank in name order
/// (FORMAT.md §15.1 flag bit 1).
pub const SYMBOL_NAMES: u32 = 2;

/// Rows may use the two-byte far advance opcode `11011aaa` (FORMAT.md
/// §15.1 flag bit 2, §15.2): set only when some row does, so a reader that
/// predates the opcode refuses such a section at open, not mid-lookup.
pub const FAR_ADVANCE: u32 = 4;
/// Flag bit 3: the rows are Huffman-coded (FORMAT.md §15.6).
pub const CODED_ROWS: u32 = 8;
/// Flag bit 4: call sites apart from the nodes, for inlined nodes only
/// (FORMAT.md §15.1).
pub const CALLS_APART: u32 = 16;

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn width_of(max: u64) -> u32 {
    64 - max.leading_zeros()
}

fn pad8(v: &mut Vec<u8>) {
    v.resize(v.len().div_ceil(8) * 8, 0);
}

/// The nodes in depth-first preorder, node 0 first, children in table
/// order: (old id of each new position, new id of each old id).
fn dfs_order(nodes: &[InlineNode]) -> (Vec<u32>, Vec<u32>) {
    let n = nodes.len();
    let mut first_child = vec![u32::MAX; n];
    let mut next_sibling = vec![u32::MAX; n];
    // Link children in table order: walk backwards, pushing to the front.
    for i in (1..n).rev() {
        let p = nodes[i].parent as usize;
        next_sibling[i] = first_child[p];
        first_child[p] = i as u32;
    }
    let mut order = Vec::with_capacity(n);
    order.push(0u32);
    let mut stack: Vec<u32> = Vec::new();
    let mut c = first_child[0];
    loop {
        while c != u32::MAX {
            order.push(c);
            stack.push(next_sibling[c as usize]);
            c = first_child[c as usize];
        }
        match stack.pop() {
            Some(s) => c = s,
            None => break,
        }
    }
    let mut new_id = vec![0u32; n];
    for (i, &o) in order.iter().enumerate() {
        new_id[o as usize] = i as u32;
    }
    (order, new_id)
}

/// Encodes `t` as a `lines` section, with columns when `columns`.
///
/// Errors: [`PackErrorKind::LinesTooLarge`] when the rows span 4 GiB or
/// more, or a count or length does not fit its u32 field; rows out of
/// address order, a parent not before its child or an id past its table
/// are caller bugs and reported as `LinesInvalid`.
pub fn encode_lines(t: &SourceTable, columns: bool) -> Result<Vec<u8>, PackError> {
    encode_lines_in_blocks(t, columns, LINE_BLOCK_SHIFT, RowForm::Bytes)
}

/// [`encode_lines`] with `LINE_BLOCK_MIN << shift` rows a block (FORMAT.md
/// §15.1): fewer rows a block decode faster one lookup at a time, more
/// make a smaller section. Rows in `rows` form: a coded section (FORMAT.md
/// §15.6, flag bit 3) is read only by readers with feature `coded-lines`,
/// not a kernel's.
///
/// Errors: as [`encode_lines`]; a `shift` above [`LINE_BLOCK_SHIFT_MAX`] is
/// a caller bug (`LinesInvalid`).
pub fn encode_lines_in_blocks(
    t: &SourceTable,
    columns: bool,
    shift: u8,
    rows: RowForm,
) -> Result<Vec<u8>, PackError> {
    let form = Form {
        columns,
        nnames: 0,
        shift,
        rows,
    };
    encode(&t.rows, &t.nodes, &t.files, &t.strings, form)
}

/// Walks a block's rows after its first, calling `each` with the row
/// before, the row, the recent states and *top* as they stand before the
/// row (FORMAT.md §15.2): what both row writers spell a row from, as
/// [`super::read::walk_block`] is what both decoders read one with.
pub(super) fn walk_rows(
    chunk: &[LineRow],
    mut each: impl FnMut(&LineRow, &LineRow, &RecentStates, u32),
) {
    let r0 = chunk[0];
    let mut recent = RecentStates::default();
    recent.touch(r0.node, r0.file, r0.line);
    // New nodes mostly follow the largest seen so far in the block.
    let mut top = r0.node;
    let mut prev = r0;
    for &r in &chunk[1..] {
        each(&prev, &r, &recent, top);
        recent.touch(r.node, r.file, r.line);
        top = top.max(r.node);
        prev = r;
    }
}

/// How [`encode`] lays the section out.
#[derive(Clone, Copy)]
struct Form {
    columns: bool,
    /// Node names from `strings.len()` on are symbol-name references
    /// (flag bit 1) when nonzero.
    nnames: usize,
    shift: u8,
    rows: RowForm,
}

/// The form of a `lines` section's rows (FORMAT.md §15.2, §15.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowForm {
    /// Byte opcodes, what every reader reads (a kernel's too).
    Bytes,
    /// Huffman-coded when that is smaller than bytes (small tables are
    /// not: the codes cost 96 bytes and up).
    Smaller,
    /// Huffman-coded whatever the size, unless a value is too large for
    /// the code (FORMAT.md §15.6): tests and fuzzing reach the decoder
    /// with it on small tables.
    Coded,
}

impl RowForm {
    /// [`RowForm::Smaller`] when `coded`, else [`RowForm::Bytes`].
    pub fn when(coded: bool) -> Self {
        if coded {
            RowForm::Smaller
        } else {
            RowForm::Bytes
        }
    }
}

/// [`encode_lines`] for a blob whose names section holds `nnames` stored
/// names: each function name that `rank_of` finds among them (its rank in
/// name order, FORMAT.md §11.1) is stored as a reference to it, and the
/// strings nothing else uses are left out (FORMAT.md §15.1, flag bit 1).
/// A C++ library's function names are nearly all its symbols' names.
///
/// `LINE_BLOCK_MIN << shift` rows a block in `rows` form, as
/// [`encode_lines_in_blocks`].
///
/// Errors: as [`encode_lines_in_blocks`]; a rank of `nnames` or more is a
/// caller bug (`LinesInvalid`).
pub fn encode_lines_naming(
    t: &SourceTable,
    columns: bool,
    shift: u8,
    rows: RowForm,
    nnames: usize,
    rank_of: impl Fn(&[u8]) -> Option<u32>,
) -> Result<Vec<u8>, PackError> {
    let ns = t.strings.len();
    if t.nodes.iter().any(|n| n.name as usize >= ns)
        || t.files
            .iter()
            .any(|&(d, b)| d as usize >= ns || b as usize >= ns)
    {
        return encode_lines_in_blocks(t, columns, shift, rows); // refused there, with the reason
    }
    // Which strings stay (the files' and the names no symbol has), and
    // their ids after the others are dropped.
    // Each name is looked up once, not once per node (a Rust binary's
    // nodes are ten times its strings).
    let mut sym = vec![None; t.nodes.len()];
    let mut used = vec![false; ns];
    let mut rank_of_string: Vec<Option<Option<u32>>> = vec![None; ns];
    for (i, n) in t.nodes.iter().enumerate().skip(1) {
        let name = n.name as usize;
        match *rank_of_string[name].get_or_insert_with(|| rank_of(&t.strings[name])) {
            Some(r) => sym[i] = Some(r),
            None => used[name] = true,
        }
    }
    for &(d, b) in &t.files {
        used[d as usize] = true;
        used[b as usize] = true;
    }
    let mut new_id = vec![0u32; ns];
    let mut strings = Vec::new();
    for (i, s) in t.strings.iter().enumerate().filter(|(i, _)| used[*i]) {
        new_id[i] = strings.len() as u32;
        strings.push(s.clone());
    }
    let kept = strings.len() as u32;
    let nodes: Vec<InlineNode> = t
        .nodes
        .iter()
        .zip(&sym)
        .map(|(n, s)| InlineNode {
            name: match s {
                Some(r) => kept.saturating_add(*r),
                None => new_id[n.name as usize],
            },
            ..*n
        })
        .collect();
    let files: Vec<(u32, u32)> = t
        .files
        .iter()
        .map(|&(d, b)| (new_id[d as usize], new_id[b as usize]))
        .collect();
    let form = Form {
        columns,
        nnames,
        shift,
        rows,
    };
    encode(&t.rows, &nodes, &files, &strings, form)
}

/// The encoder, in `form`'s layout.
fn encode(
    rows_in: &[LineRow],
    nodes_in: &[InlineNode],
    files_in: &[(u32, u32)],
    strings: &[Vec<u8>],
    form: Form,
) -> Result<Vec<u8>, PackError> {
    let Form {
        columns,
        nnames,
        shift,
        rows: row_form,
    } = form;
    let fail = |what: &'static str| PackError {
        line: None,
        kind: PackErrorKind::LinesInvalid(what),
    };
    let too_large = || PackError {
        line: None,
        kind: PackErrorKind::LinesTooLarge,
    };
    let Some(first) = rows_in.first() else {
        return Err(fail("no rows"));
    };
    if shift > LINE_BLOCK_SHIFT_MAX {
        return Err(fail("more than 256 rows a block"));
    }
    let base = first.address;
    if rows_in.windows(2).any(|w| w[1].address <= w[0].address) {
        return Err(fail("rows not in ascending address order"));
    }
    if rows_in.last().is_some_and(|r| r.file != 0 || r.node != 0) {
        return Err(fail("last row is not an end row"));
    }
    if rows_in.last().map_or(0, |r| r.address - base) > u64::from(u32::MAX) {
        return Err(too_large());
    }
    let (nn, nf, ns) = (nodes_in.len(), files_in.len(), strings.len());
    if rows_in
        .iter()
        .any(|r| r.node as usize >= nn.max(1) || r.file as usize >= nf.max(1))
        || nodes_in.iter().enumerate().skip(1).any(|(i, n)| {
            n.parent as usize >= i || n.name as usize >= ns + nnames || n.call_file as usize >= nf
        })
        || files_in
            .iter()
            .any(|&(d, b)| d as usize >= ns || b as usize >= ns)
    {
        return Err(fail("an id past its table, or a parent after its child"));
    }
    if strings.iter().any(|s| s.contains(&NAME_END)) {
        return Err(fail("a string holds byte 0"));
    }
    let col = |c: u32| if columns { c } else { 0 };

    // Strings: pair-coded as the names are (FORMAT.md §11.3), one table
    // of their own, learnt on a second thread while the rows, nodes and
    // files are encoded: on a Rust binary, 70 ms of learning against 45
    // of rows, so this thread first takes half of the learner's first
    // phase (`Helper`, for 256 KiB of strings and more). The coded rows
    // (below) are a job for whichever thread is free first once the rows
    // are out (`ready`): this one after the byte rows, or the strings'
    // after their table. A Rust binary's strings, helped, take about as
    // long as both row forms together; a C++ library's take a fraction of
    // either.
    let wants_coded = row_form != RowForm::Bytes;
    let ready: OnceLock<Vec<LineRow>> = OnceLock::new();
    let claimed = AtomicBool::new(!wants_coded);
    let claim = || !claimed.swap(true, Ordering::AcqRel);
    let encode_coded =
        |rows: &[LineRow]| super::coded_write::encode_rows(rows, LINE_BLOCK_MIN << shift, columns);
    let helper = Helper::for_strings(strings.iter().map(|s| s.len() + 1).sum());
    std::thread::scope(|scope| {
        let learnt = scope.spawn(|| {
            let codes = learn_helped(strings.iter().map(|s| &s[..]), helper.as_ref());
            let theirs = ready.get().filter(|_| claim()).map(|r| encode_coded(r));
            (codes, theirs)
        });
        let joined = |h: std::thread::ScopedJoinHandle<'_, _>| {
            h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
        };
        // This thread merges half of the strings' first phase (a Rust
        // binary's line strings: 1.3 MB, 170 merges) before its rows.
        if let Some(h) = &helper {
            h.serve();
        }

        // Nodes in depth-first preorder (children in table order), so that a
        // parent lies a few nodes before its child: the parent is stored as
        // that distance (10 bits for a vmlinux instead of 19 for an index),
        // and a function's nodes stay together for the rows' node deltas.
        let (order, new_id) = dfs_order(nodes_in);
        let mut rows: Vec<LineRow> = rows_in
            .iter()
            .map(|r| LineRow {
                node: new_id[r.node as usize],
                column: col(r.column),
                ..*r
            })
            .collect();
        // Without columns, rows that differ from the row before only in their
        // column answer alike: 30 % of libstdc++'s rows, 8 % of a vmlinux's.
        // The end row stays whatever comes before it.
        if !columns {
            let end = rows.pop();
            rows.dedup_by_key(|r| (r.file, r.line, r.node, r.discriminator));
            rows.extend(end);
        }
        let rows = ready.get_or_init(|| rows);

        // Rows, in blocks of 32 << shift.
        let mut blocks = Vec::new();
        let mut stream = Vec::new();
        let mut far_advance = false;
        for chunk in rows.chunks(LINE_BLOCK_MIN << shift) {
            let r0 = chunk[0];
            blocks.extend_from_slice(&((r0.address - base) as u32).to_le_bytes());
            let at = u32::try_from(stream.len()).map_err(|_| too_large())?;
            blocks.extend_from_slice(&at.to_le_bytes());
            for v in r0.first_fields(columns) {
                uleb(&mut stream, v);
            }
            walk_rows(chunk, |prev, r, recent, top| {
                let da = r.address - prev.address;
                let dl = i64::from(r.line) - i64::from(prev.line);
                let small = |d: i64| (-2..=5).contains(&d);
                let disc = r.discriminator;
                // Same function and file, no discriminator: an advance.
                let stays = disc == 0 && r.file == prev.file && r.node == prev.node;
                if stays && (1..=16).contains(&da) && small(dl) {
                    // advance: 0aaaalll
                    stream.push((((da - 1) << 3) as i64 | (dl + 2)) as u8);
                } else if stays && (1..=32).contains(&da) && (-32..=31).contains(&dl) {
                    // far advance: 11011aaa aall_llll, 11 bits: address
                    // delta − 1 above line delta + 32. A line jump within
                    // one function took 3 bytes as a recall; a quarter of
                    // libc's rows after each block's first are such jumps.
                    let x = (da - 1) << 6 | (dl + 32) as u64;
                    stream.push(0xD8 | (x >> 8) as u8);
                    stream.push(x as u8);
                    far_advance = true;
                } else if let Some(j) = recent.find(r.node, r.file) {
                    let (.., line) = recent.get(j).unwrap_or_default();
                    let d = i64::from(r.line) - i64::from(line);
                    if disc != 0 && (-1..=2).contains(&d) {
                        // recall, discriminator: 111jjjll
                        stream.push(0xE0 | (j as u8) << 2 | (d + 1) as u8);
                        uleb(&mut stream, da);
                        uleb(&mut stream, u64::from(disc));
                    } else if disc != 0 {
                        // recall, far line, discriminator: 11010jjj
                        stream.push(0xD0 | j as u8);
                        uleb(&mut stream, da);
                        uleb(&mut stream, zigzag(d));
                        uleb(&mut stream, u64::from(disc));
                    } else if small(d) {
                        // recall: 10jjjlll
                        stream.push(0x80 | (j as u8) << 3 | (d + 2) as u8);
                        uleb(&mut stream, da);
                    } else {
                        // recall, far line: 11001jjj
                        stream.push(0xC8 | j as u8);
                        uleb(&mut stream, da);
                        uleb(&mut stream, zigzag(d));
                    }
                } else {
                    // general: 11000dnf
                    let f = u8::from(r.file != prev.file);
                    let n = u8::from(r.node != prev.node);
                    let d = u8::from(disc != 0);
                    stream.push(0xC0 | f | n << 1 | d << 2);
                    uleb(&mut stream, da);
                    uleb(&mut stream, zigzag(dl));
                    if f == 1 {
                        uleb(&mut stream, u64::from(r.file));
                    }
                    if n == 1 {
                        uleb(&mut stream, zigzag(i64::from(r.node) - i64::from(top)));
                    }
                    if d == 1 {
                        uleb(&mut stream, u64::from(disc));
                    }
                }
                if columns {
                    uleb(&mut stream, u64::from(r.column));
                }
            });
        }

        // The strings' thread, or its table once it was waited for here.
        enum Strings<H> {
            Learning(H),
            Learnt(crate::blob::v2::pairs::PairCodes),
        }
        let (strings_codes, coded) = if claim() {
            (Strings::Learning(learnt), encode_coded(rows))
        } else if wants_coded {
            let (c, theirs) = joined(learnt);
            (Strings::Learnt(c), theirs.flatten())
        } else {
            (Strings::Learning(learnt), None)
        };
        // The coded form where it is smaller (FORMAT.md §15.6): rows are
        // decoded a block at a time, so the blocks keep their rows and
        // point at bits instead of bytes.
        let mut coded_rows = false;
        if let Some((part, bits)) = coded
            && (part.len() < stream.len() || row_form != RowForm::Smaller)
        {
            for (b, at) in bits.iter().enumerate() {
                blocks[8 * b + 4..8 * b + 8].copy_from_slice(&at.to_le_bytes());
            }
            (stream, coded_rows, far_advance) = (part, true, false);
        }

        // Inline tree and files, bit-packed.
        let parent_delta = |i: usize| {
            let n = &nodes_in[order[i] as usize];
            if i == 0 || n.parent == 0 {
                0
            } else {
                u64::from(i as u32 - new_id[n.parent as usize])
            }
        };
        let wp = width_of((0..nn).map(parent_delta).max().unwrap_or(0));
        let wn = width_of((ns + nnames) as u64);
        let wf = width_of(nf as u64);
        let wl = width_of(
            nodes_in
                .iter()
                .map(|n| u64::from(n.call_line))
                .max()
                .unwrap_or(0),
        );
        let wc = width_of(
            nodes_in
                .iter()
                .map(|n| u64::from(col(n.call_column)))
                .max()
                .unwrap_or(0),
        );
        // A subprogram (half of libc's nodes) has no call site: apart,
        // call sites take bits only for inlined nodes, found by rank.
        let ninl = (1..nn).filter(|&i| parent_delta(i) != 0).count();
        let packed_len = |n: usize, w: u32| 8 * (n * w as usize).div_ceil(64);
        let apart_len =
            packed_len(nn, wp + wn) + bitvector_len(nn) + packed_len(ninl, wf + wl + wc);
        let calls_apart = match row_form {
            RowForm::Bytes => false,
            RowForm::Smaller => apart_len < packed_len(nn, wp + wn + wf + wl + wc),
            RowForm::Coded => true,
        };
        let mut nodes = Bits::default();
        let mut calls = Bits::default();
        let mut inlined = vec![0u64; nn.div_ceil(64)];
        for (i, &old) in order.iter().enumerate() {
            let n = &nodes_in[old as usize];
            nodes.push(parent_delta(i), wp);
            nodes.push(u64::from(n.name), wn);
            let site = if calls_apart && parent_delta(i) == 0 {
                None
            } else if calls_apart {
                inlined[i / 64] |= 1 << (i % 64);
                Some(&mut calls)
            } else {
                Some(&mut nodes)
            };
            if let Some(b) = site {
                b.push(u64::from(n.call_file), wf);
                b.push(u64::from(n.call_line), wl);
                b.push(u64::from(col(n.call_column)), wc);
            }
        }
        let mut nodes = nodes.bytes();
        if calls_apart {
            pad8(&mut nodes);
            let mut ones = 0u32;
            let samples: Vec<u32> = inlined
                .iter()
                .map(|w| {
                    let r = ones;
                    ones += w.count_ones();
                    r
                })
                .collect();
            nodes.extend(inlined.iter().flat_map(|w| w.to_le_bytes()));
            nodes.extend(samples.iter().flat_map(|r| r.to_le_bytes()));
            pad8(&mut nodes);
            nodes.extend_from_slice(&calls.bytes());
        }
        let mut files = Bits::default();
        for &(d, b) in files_in {
            files.push(u64::from(d), wn);
            files.push(u64::from(b), wn);
        }
        let codes = match strings_codes {
            Strings::Learnt(c) => c,
            Strings::Learning(h) => joined(h).0,
        };
        let mut coded = Vec::with_capacity(codes.encoded.len());
        let mut starts = Vec::with_capacity(ns + 1);
        for piece in codes.encoded.split(|&b| b == NAME_END).take(ns) {
            starts.push(coded.len() as u64);
            coded.extend_from_slice(piece);
        }
        starts.push(coded.len() as u64);
        let wo = width_of(coded.len() as u64);
        let mut offs = Bits::default();
        for &o in &starts {
            offs.push(o, wo);
        }

        let parts = [
            blocks,
            stream,
            nodes,
            files.bytes(),
            offs.bytes(),
            coded,
            token_table(&codes.expansions),
        ];
        let mut sec = vec![0u8; LINES_HEADER];
        let put32 = |sec: &mut Vec<u8>, at: usize, v: usize| -> Result<(), PackError> {
            let v = u32::try_from(v).map_err(|_| too_large())?;
            sec[at..at + 4].copy_from_slice(&v.to_le_bytes());
            Ok(())
        };
        let flags = if columns { WITH_COLUMNS } else { 0 }
            | if nnames > 0 { SYMBOL_NAMES } else { 0 }
            | if far_advance { FAR_ADVANCE } else { 0 }
            | if coded_rows { CODED_ROWS } else { 0 }
            | if calls_apart { CALLS_APART } else { 0 };
        put32(&mut sec, 0, flags as usize)?;
        put32(&mut sec, 4, rows.len())?;
        put32(&mut sec, 8, nn)?;
        put32(&mut sec, 12, nf)?;
        put32(&mut sec, 16, ns)?;
        sec[24..32].copy_from_slice(&base.to_le_bytes());
        for (i, w) in [wp, wn, wf, wl, wc, wo].into_iter().enumerate() {
            sec[32 + i] = w as u8;
        }
        sec[38] = shift;
        for (i, p) in parts.iter().enumerate() {
            put32(&mut sec, 40 + 4 * i, p.len())?;
        }
        for p in &parts {
            sec.extend_from_slice(p);
            pad8(&mut sec);
        }
        u32::try_from(sec.len()).map_err(|_| too_large())?;
        Ok(sec)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blob::v2::source_lines::read::LineTable;
    use proptest::prelude::*;

    /// A table from generated steps: (address delta, file, line, column,
    /// node), with a tree of `nodes` nodes whose parents come first.
    fn table(steps: &[(u64, u32, u32, u32, u32, u32)], nodes: usize) -> SourceTable {
        let strings: Vec<Vec<u8>> = (0..20).map(|i| format!("fn_{i}").into_bytes()).collect();
        let files = vec![(0, 0), (1, 2), (3, 4), (5, 6)];
        let mut ns = vec![InlineNode::default()];
        for i in 1..nodes {
            ns.push(InlineNode {
                parent: if i % 3 == 1 { 0 } else { (i / 2) as u32 },
                name: (i % 20) as u32,
                call_file: (i % 4) as u32,
                call_line: (i * 7) as u32,
                call_column: (i % 5) as u32,
            });
        }
        let mut rows = Vec::new();
        let mut a = 0xffff_ffff_8100_0000u64;
        for &(d, f, l, c, n, x) in steps {
            rows.push(LineRow {
                address: a,
                file: f % 4,
                line: l,
                column: c,
                node: n % nodes as u32,
                discriminator: x,
            });
            a += d;
        }
        rows.push(LineRow {
            address: a,
            ..LineRow::default()
        });
        SourceTable {
            rows,
            nodes: ns,
            files,
            strings,
        }
    }

    fn step() -> impl Strategy<Value = (u64, u32, u32, u32, u32, u32)> {
        (
            prop_oneof![1u64..17, 1u64..300, 1u64..100_000],
            0u32..4,
            prop_oneof![0u32..40, 0u32..100_000],
            0u32..200,
            prop_oneof![0u32..4, 0u32..1000],
            prop_oneof![Just(0u32), 0u32..4, 0u32..300],
        )
    }

    proptest! {
        #[test]
        fn every_address_finds_its_row(
            steps in prop::collection::vec(step(), 1..600),
            nodes in 1usize..1000,
            columns in any::<bool>(),
            shift in 0u8..=LINE_BLOCK_SHIFT_MAX,
            coded in any::<bool>(),
        ) {
            let t = table(&steps, nodes);
            let form = if coded { RowForm::Coded } else { RowForm::Bytes };
            let sec = encode_lines_in_blocks(&t, columns, shift, form).unwrap();
            prop_assert_eq!(u32_at(&sec, 0) & CODED_ROWS != 0, coded);
            let l = LineTable::parse(&sec, 0).unwrap();
            l.verify().unwrap();
            prop_assert_eq!(l.rows_per_block(), LINE_BLOCK_MIN << shift);
            prop_assert_eq!(l.span(), (t.rows[0].address, t.rows.last().unwrap().address));
            for (i, r) in t.rows.iter().enumerate() {
                let end = t.rows.get(i + 1).map_or(r.address + 1, |n| n.address);
                for a in [r.address, r.address + (end - r.address) / 2, end - 1] {
                    let got = l.find(a);
                    let empty = r.file == 0 && r.node == 0;
                    prop_assert_eq!(got.is_none(), empty, "{:#x}", a);
                    if let Some(g) = got {
                        // Without columns a row that differs from the one
                        // before only in its column is that row.
                        let key = |r: &LineRow| (r.file, r.line, r.node, r.discriminator);
                        let mut first = i;
                        while !columns && first > 0 && i + 1 < t.rows.len()
                            && key(&t.rows[first - 1]) == key(r)
                        {
                            first -= 1;
                        }
                        // Node ids are renumbered (depth-first); the frames
                        // below compare what they name.
                        prop_assert_eq!(
                            (g.address, g.file, g.line, g.node == 0, g.discriminator),
                            (t.rows[first].address, r.file, r.line, r.node == 0, r.discriminator)
                        );
                        prop_assert_eq!(g.column, if columns { r.column } else { 0 });
                        // The chain walks the parents, call sites as stored.
                        let frames: Vec<_> = l.frames(&g).collect();
                        let mut n = r.node as usize;
                        let name = |n: usize| if n == 0 { u32::MAX } else { t.nodes[n].name };
                        let mut want = vec![(r.file, r.line, name(n))];
                        while n != 0 && t.nodes[n].parent != 0 {
                            let p = t.nodes[n].parent as usize;
                            want.push((t.nodes[n].call_file, t.nodes[n].call_line, name(p)));
                            n = p;
                        }
                        let got: Vec<_> =
                            frames.iter().map(|f| (f.file, f.line, f.function)).collect();
                        prop_assert_eq!(got, want);
                        prop_assert!(!frames.last().unwrap().inlined);
                    }
                }
            }
            prop_assert_eq!(l.find(t.rows[0].address - 1), None);
            let s = l.string(3).unwrap();
            prop_assert!(s.eq_bytes(b"fn_3"));
        }
    }

    proptest! {
        #[test]
        fn without_discriminators_every_address_keeps_its_answer(
            steps in prop::collection::vec(step(), 1..200),
            nodes in 1usize..50,
        ) {
            let t = table(&steps, nodes);
            let mut d = t.clone();
            d.drop_discriminators();
            prop_assert!(d.rows.len() <= t.rows.len());
            prop_assert_eq!(d.rows.last(), t.rows.last());
            let at = |rows: &[LineRow], a: u64| {
                rows[rows.partition_point(|r| r.address <= a) - 1]
            };
            for (i, r) in t.rows.iter().enumerate() {
                let end = t.rows.get(i + 1).map_or(r.address + 1, |n| n.address);
                for a in [r.address, end - 1] {
                    let g = at(&d.rows, a);
                    prop_assert_eq!((g.file, g.line, g.column, g.node, g.discriminator), (r.file, r.line, r.column, r.node, 0));
                }
            }
            // No two neighbours left that a reader cannot tell apart.
            let key = |r: &LineRow| (r.file, r.line, r.column, r.node);
            let n = d.rows.len();
            let distinct = d.rows[..n - 1].windows(2).all(|w| key(&w[0]) != key(&w[1]));
            prop_assert!(distinct);
            encode_lines(&d, false).unwrap();
        }
    }

    /// Line jumps within one function take the two-byte far advance up to
    /// its limits (address deltas 1..=32, line deltas -32..=31) and a
    /// recall past them; flag bit 2 says the section uses it, and without
    /// the flag the opcode is refused as before it existed.
    #[test]
    fn far_advances_take_two_bytes_up_to_their_limits() {
        // (address delta to the next row, line): one node, one file; each
        // comment says how the row is reached from the row before.
        let steps = [
            (32, 100), // the first row
            (1, 131),  // +31 in 32 bytes: far advance
            (33, 99),  // −32 in 1: far advance
            (32, 98),  // −1 in 33: recall, 2 bytes
            (5, 130),  // +32 in 32: recall far, 3 bytes
            (7, 97),   // −33 in 5: recall far, 3 bytes
            (4, 100),  // +3 in 7: advance, 1 byte
        ];
        let rows: Vec<_> = steps.iter().map(|&(d, l)| (d, 1, l, 0, 1, 0)).collect();
        let t = table(&rows, 2);
        let sec = encode_lines(&t, false).unwrap();
        assert_eq!(
            u32::from_le_bytes(sec[..4].try_into().unwrap()) & FAR_ADVANCE,
            FAR_ADVANCE
        );
        // The rows part: the first row's four ULEB128 fields (no column;
        // its line 100 takes one byte), the rows above, and the end row: a
        // general row of 6 bytes (line −100 in two, file and node to 0).
        let rows_len = u32::from_le_bytes(sec[44..48].try_into().unwrap());
        assert_eq!(rows_len, 4 + 2 + 2 + 2 + 3 + 3 + 1 + 6);
        let l = LineTable::parse(&sec, 0).unwrap();
        l.verify().unwrap();
        for r in &t.rows[..t.rows.len() - 1] {
            let g = l.find(r.address).unwrap();
            assert_eq!((g.address, g.line), (r.address, r.line));
        }
        // Flag bit 2 cleared: the far advance is an invalid opcode, and a
        // lookup that reaches it finds nothing.
        let mut old = sec.clone();
        old[0] &= !(FAR_ADVANCE as u8);
        let l = LineTable::parse(&old, 0).unwrap();
        assert!(l.verify().is_err());
        assert_eq!(l.find(t.rows[1].address), None);
        // A table without such a jump leaves the flag clear: readers that
        // predate the opcode still read it.
        let plain = table(&[(7, 1, 98, 0, 1, 0), (4, 1, 101, 0, 1, 0)], 2);
        let sec = encode_lines(&plain, false).unwrap();
        assert_eq!(sec[0] as u32 & FAR_ADVANCE, 0);
    }

    /// Header byte 38 holds the block shift: each of 32..=256 rows a block
    /// reads back with that many rows a block, and a shift past 3 is
    /// refused by the writer and, in a section, at open.
    #[test]
    fn the_block_shift_sets_the_rows_a_block() {
        let rows: Vec<_> = (0..600).map(|i| (3, 1, 10 + i % 7, 0, 1, 0)).collect();
        let t = table(&rows, 2);
        let mut last = Vec::new();
        for shift in 0..=LINE_BLOCK_SHIFT_MAX {
            let sec = encode_lines_in_blocks(&t, false, shift, RowForm::Bytes).unwrap();
            assert_eq!(sec[38], shift);
            let l = LineTable::parse(&sec, 0).unwrap();
            l.verify().unwrap();
            assert_eq!(l.rows_per_block(), 32 << shift);
            assert_eq!(l.blocks(), l.rows().div_ceil(32 << shift));
            for r in &t.rows[..t.rows.len() - 1] {
                assert_eq!(l.find(r.address).map(|g| g.line), Some(r.line));
            }
            last = sec;
        }
        assert_eq!(
            last,
            encode_lines(&t, false).unwrap(),
            "256 rows by default"
        );
        last[38] = LINE_BLOCK_SHIFT_MAX + 1;
        let e = LineTable::parse(&last, 0).unwrap_err();
        assert!(e.to_string().contains("block shift above 3"), "{e}");
        assert!(
            encode_lines_in_blocks(&t, false, LINE_BLOCK_SHIFT_MAX + 1, RowForm::Bytes).is_err()
        );
    }

    #[test]
    fn tables_that_break_the_rules_are_refused() {
        let t = table(&[(4, 1, 1, 0, 1, 0), (4, 1, 2, 0, 1, 0)], 3);
        let mut bad = t.clone();
        bad.rows.swap(0, 1);
        assert!(encode_lines(&bad, false).is_err());
        let mut bad = t.clone();
        bad.nodes[2].parent = 2;
        assert!(encode_lines(&bad, false).is_err());
        let mut bad = t.clone();
        bad.rows.last_mut().unwrap().file = 1;
        assert!(encode_lines(&bad, false).is_err());
        let mut bad = t.clone();
        // Rows ascending but 2^33 bytes apart (the base is near the top of
        // the address space, so the gap goes below it).
        bad.rows[0].address -= 1 << 33;
        let e = encode_lines(&bad, false).unwrap_err();
        assert!(e.to_string().contains("span 4 GiB"), "{e}");
        let mut bad = t;
        bad.strings[0].push(0);
        assert!(encode_lines(&bad, false).is_err());
    }
}
