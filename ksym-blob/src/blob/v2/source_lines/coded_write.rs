//! The writer of Huffman-coded rows (docs/FORMAT.md §15.6): rows become
//! row-kind symbols and class-coded values, three canonical codes are
//! built from their counts, and the blocks are written as one bit stream.

use super::coded::{CODES, GENERAL, MAX_CLASS, MAX_CODE_LEN, RECALL};
use super::write::{LineRow, walk_rows};

/// One coded item of a row: a row-kind symbol, an address gap, a line
/// delta (zigzag) or another value.
#[derive(Clone, Copy)]
enum Item {
    Op(u16),
    Gap(u64),
    Line(u64),
    Val(u64),
}

impl Item {
    /// Its code (the index in [`CODES`]), symbol and raw value.
    fn coded(self) -> (usize, u16, Option<u64>) {
        match self {
            Item::Op(s) => (0, s, None),
            Item::Gap(v) => (1, class(v), Some(v)),
            Item::Line(v) => (2, class(v), Some(v)),
            Item::Val(v) => (3, class(v), Some(v)),
        }
    }
}

fn class(v: u64) -> u16 {
    (64 - v.leading_zeros()) as u16
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// The items of one block's rows (FORMAT.md §15.6's grammar; the writer
/// prefers a step, then a recall, then a general row).
fn block_items(chunk: &[LineRow], columns: bool, mut out: impl FnMut(Item)) {
    let r0 = chunk[0];
    r0.first_fields(columns).for_each(|v| out(Item::Val(v)));
    walk_rows(chunk, |prev, r, recent, top| {
        let da = r.address - prev.address;
        let dl = i64::from(r.line) - i64::from(prev.line);
        let disc = r.discriminator;
        if disc == 0
            && (r.file, r.node) == (prev.file, prev.node)
            && (1..=64).contains(&da)
            && (-32..=31).contains(&dl)
        {
            out(Item::Op(((da - 1) << 6) as u16 | (dl + 32) as u16));
        } else if let Some(j) = recent.find(r.node, r.file) {
            let (.., line) = recent.get(j).unwrap_or_default();
            let d = i64::from(r.line) - i64::from(line);
            let k = match d {
                _ if disc != 0 => 10,
                -4..=4 => (d + 4) as u16,
                _ => 9,
            };
            out(Item::Op(RECALL | (j as u16) << 4 | k));
            out(Item::Gap(da));
            if k >= 9 {
                out(Item::Line(zigzag(d)));
            }
            if k == 10 {
                out(Item::Val(u64::from(disc)));
            }
        } else {
            let f = u16::from(r.file != prev.file);
            let n = u16::from(r.node != prev.node);
            let d = u16::from(disc != 0);
            out(Item::Op(GENERAL | f | n << 1 | d << 2));
            out(Item::Gap(da));
            out(Item::Line(zigzag(dl)));
            if f == 1 {
                out(Item::Val(u64::from(r.file)));
            }
            if n == 1 {
                out(Item::Val(zigzag(i64::from(r.node) - i64::from(top))));
            }
            if d == 1 {
                out(Item::Val(u64::from(disc)));
            }
        }
        if columns {
            out(Item::Val(u64::from(r.column)));
        }
    });
}

/// Huffman code lengths of `counts` (symbol → count, nonzero), at most
/// [`MAX_CODE_LEN`] bits: while the optimal code is too deep, the counts
/// are halved (kept ≥ 1) and the code rebuilt, which flattens the rare
/// tail at a cost of a fraction of a percent.
fn code_lengths(counts: &[(u16, u64)]) -> Vec<u8> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    if counts.len() == 1 {
        return vec![1];
    }
    let mut w: Vec<u64> = counts.iter().map(|&(_, c)| c).collect();
    loop {
        // Nodes: leaves 0..n, then merged ones; parent links give depths.
        let n = w.len();
        let mut parent = vec![0usize; 2 * n - 1];
        let mut heap: BinaryHeap<Reverse<(u64, usize)>> = w
            .iter()
            .enumerate()
            .map(|(i, &c)| Reverse((c, i)))
            .collect();
        let mut next = n;
        while heap.len() > 1 {
            let (Some(Reverse((a, i))), Some(Reverse((b, j)))) = (heap.pop(), heap.pop()) else {
                break;
            };
            parent[i] = next;
            parent[j] = next;
            heap.push(Reverse((a + b, next)));
            next += 1;
        }
        let mut depth = vec![0u8; 2 * n - 1];
        for v in (0..2 * n - 2).rev() {
            depth[v] = depth[parent[v]] + 1;
        }
        if depth[..n].iter().all(|&d| usize::from(d) <= MAX_CODE_LEN) {
            return depth[..n].to_vec();
        }
        for c in &mut w {
            *c = (*c >> 1).max(1);
        }
    }
}

/// A canonical code: its table bytes (counts, then symbols in code order)
/// and each symbol's `(code, length)`, by symbol (length 0: unused).
struct Canonical {
    table: Vec<u8>,
    code: Vec<(u32, u8)>,
}

/// The canonical code of `counts` (count by symbol; 0: unused).
fn canonical(counts: &[u64]) -> Canonical {
    let syms: Vec<(u16, u64)> = (0..counts.len())
        .filter(|&s| counts[s] > 0)
        .map(|s| (s as u16, counts[s]))
        .collect();
    let lens = if syms.is_empty() {
        Vec::new()
    } else {
        code_lengths(&syms)
    };
    let mut order: Vec<(u8, u16)> = lens.iter().zip(&syms).map(|(&l, &(s, _))| (l, s)).collect();
    order.sort_unstable();
    let mut per_len = [0u16; MAX_CODE_LEN];
    for &(l, _) in &order {
        per_len[usize::from(l) - 1] += 1;
    }
    let mut table = Vec::with_capacity(2 * (MAX_CODE_LEN + order.len()));
    for c in per_len {
        table.extend_from_slice(&c.to_le_bytes());
    }
    let mut code = vec![(0, 0); counts.len()];
    let (mut next, mut len) = (0u32, 1u8);
    for &(l, s) in &order {
        next <<= l - len;
        len = l;
        code[usize::from(s)] = (next, l);
        next += 1;
        table.extend_from_slice(&s.to_le_bytes());
    }
    Canonical { table, code }
}

/// Bits, most significant first.
#[derive(Default)]
struct BitWriter {
    bytes: Vec<u8>,
    acc: u64,
    n: u32,
}

impl BitWriter {
    fn put(&mut self, v: u64, bits: u32) {
        debug_assert!(bits <= 56);
        self.acc = self.acc << bits | (v & ((1u64 << bits) - 1));
        self.n += bits;
        while self.n >= 8 {
            self.n -= 8;
            self.bytes.push((self.acc >> self.n) as u8);
        }
    }

    fn pos(&self) -> usize {
        8 * self.bytes.len() + self.n as usize
    }

    fn finish(mut self) -> Vec<u8> {
        if self.n > 0 {
            self.bytes.push((self.acc << (8 - self.n)) as u8);
        }
        self.bytes
    }
}

/// The coded rows part of `rows` in blocks of `per_block` rows: the
/// codes, then the stream; and each block's first bit in the stream.
/// `None` when a value needs a class above [`MAX_CLASS`] or the stream
/// reaches 2^32 bits: the byte form then stays.
pub fn encode_rows(
    rows: &[LineRow],
    per_block: usize,
    columns: bool,
) -> Option<(Vec<u8>, Vec<u32>)> {
    // Two passes over the rows, counting then writing, rather than a
    // vector of items: libc's would be 4.5 MB to fault in.
    // Counts by symbol: row kinds below GENERAL + 8, classes up to 64.
    let mut counts: [Vec<u64>; CODES] =
        core::array::from_fn(|t| vec![0; if t == 0 { usize::from(GENERAL) + 8 } else { 65 }]);
    let mut too_wide = false;
    for chunk in rows.chunks(per_block) {
        block_items(chunk, columns, |it| {
            let (t, s, _) = it.coded();
            too_wide |= t > 0 && s > MAX_CLASS;
            counts[t][usize::from(s)] += 1;
        });
    }
    if too_wide {
        return None;
    }
    let codes = counts.each_ref().map(|c| canonical(c));
    let mut w = BitWriter::default();
    let mut block_bits = Vec::with_capacity(rows.len().div_ceil(per_block));
    for chunk in rows.chunks(per_block) {
        block_bits.push(u32::try_from(w.pos()).ok()?);
        block_items(chunk, columns, |it| {
            let (t, s, raw) = it.coded();
            let (code, len) = codes[t].code[usize::from(s)];
            debug_assert!(len > 0, "symbol {s} of code {t} has no code");
            w.put(u64::from(code), u32::from(len));
            if let Some(v) = raw.filter(|_| s > 1) {
                w.put(v, u32::from(s) - 1);
            }
        });
    }
    u32::try_from(w.pos()).ok()?;
    let mut part = Vec::new();
    for c in &codes {
        part.extend_from_slice(&c.table);
    }
    part.extend_from_slice(&w.finish());
    Some((part, block_bits))
}
