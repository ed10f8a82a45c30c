//! Line-table row blocks kept decoded (docs/FORMAT.md §15.1): a lookup in a
//! block decodes, on average, half of its 32 rows, and a stream of lookups
//! comes back to the same blocks (a profile's hot functions; 100k random
//! addresses of libc visit each of its 5,000 blocks 20 times). Decoding a
//! block once and searching the decoded rows after costs a binary search
//! over 128 bytes of address offsets and one read of the row found.
//!
//! Memory grows with the blocks a stream visits, up to the whole table
//! decoded (772 bytes per block): nothing for a crash report's few frames,
//! 46 MiB peak for 1M random addresses over Debian's 6.1 vmlinux (17 MiB
//! kept coded), in 0.83x the time; a table past [`BUDGET`] stays coded.

use crate::blob::v2::layout::LINE_BLOCK;
use crate::blob::v2::source_lines::read::{LineTable, SourceRow};

/// The largest table kept decoded, in bytes of decoded rows: libc's
/// (4 MiB), libstdc++'s (2 MiB), a Rust release binary's (6.5 MiB for
/// ksym-resolve's 280k rows) and Debian's 6.1 vmlinux's (31 MiB) fit.
const BUDGET: usize = 64 << 20;

/// u32 fields of a decoded row besides its address: file, line, column,
/// node, discriminator ([`SourceRow`]'s).
const FIELDS: usize = 5;

/// The decoded blocks of one line table, by block index, one after another
/// in one arena. A block of `n` rows is `n`, its `n` address offsets from
/// its first address, then each row's [`FIELDS`]: the search reads the
/// offsets (128 bytes for a full block, two cache lines), and only the row
/// found is read past them.
#[derive(Debug, Default)]
pub(in crate::resolve) struct BlockRows {
    /// A slot per block (none for a table past the budget): 0 while not
    /// decoded, [`UNKEPT`] for a block kept coded, else 1 + where the block
    /// starts in `arena`.
    slots: Vec<u32>,
    arena: Vec<u32>,
}

/// A block that does not decode (a forged blob), spans 4 GiB or would
/// take the arena past 4 Gi words: find_in_block answers for it.
const UNKEPT: u32 = u32::MAX;

impl BlockRows {
    /// An empty cache with a slot per block of `lines`, or none when its
    /// decoded rows would take more than [`BUDGET`] bytes.
    pub(in crate::resolve) fn new(lines: Option<&LineTable<'_>>) -> Self {
        Self::with_budget(lines, BUDGET)
    }

    fn with_budget(lines: Option<&LineTable<'_>>, budget: usize) -> Self {
        let blocks = lines.map_or(0, LineTable::blocks);
        let bytes = blocks.saturating_mul((1 + LINE_BLOCK * (1 + FIELDS)) * 4);
        BlockRows {
            slots: vec![0; if bytes <= budget { blocks } else { 0 }],
            arena: Vec::new(),
        }
    }

    /// Block `b`'s decoded words, when it is decoded and kept.
    #[inline]
    fn decoded(&self, b: usize) -> Option<&[u32]> {
        let at = match self.slots.get(b)? {
            0 | &UNKEPT => return None,
            &s => s as usize - 1,
        };
        let n = *self.arena.get(at)? as usize;
        self.arena.get(at + 1..at + 1 + n * (1 + FIELDS))
    }

    /// Reads both cache lines of block `b`'s decoded offsets, or else a
    /// byte of its coded rows: to bring them into cache while a batch's
    /// other lookups wait (as [`LineTable::touch_block`]).
    #[inline]
    pub(in crate::resolve) fn touch(&self, lines: &LineTable<'_>, b: usize) -> u8 {
        match self.decoded(b) {
            Some(d) => {
                let mid = d.get(d.len() / (1 + FIELDS) / 2);
                (d.first().copied().unwrap_or(0) ^ mid.copied().unwrap_or(0)) as u8
            }
            None => lines.touch_block(b),
        }
    }

    /// [`LineTable::find_in_block`]'s answer for `addr` in block `b`, from
    /// the decoded rows (decoding the block first).
    pub(in crate::resolve) fn find(
        &mut self,
        lines: &LineTable<'_>,
        b: usize,
        addr: u64,
    ) -> Option<SourceRow> {
        if b >= lines.blocks() {
            return None;
        }
        let base = lines.block_address(b);
        if self.slots.get(b) == Some(&0) {
            self.slots[b] = self.decode(lines, b, base);
        }
        let Some(d) = self.decoded(b) else {
            return lines.find_in_block(b, addr);
        };
        let (offsets, fields) = d.split_at(d.len() / (1 + FIELDS));
        // Rows' addresses never decrease: the row is the last at or below.
        let at = addr.checked_sub(base)?;
        let i = offsets
            .partition_point(|&o| u64::from(o) <= at)
            .checked_sub(1)?;
        let [file, line, column, node, discriminator] =
            fields[i * FIELDS..][..FIELDS].try_into().ok()?;
        // The end row (last of all) has file 0 and node 0 too.
        (file != 0 || node != 0).then_some(SourceRow {
            address: base + u64::from(offsets[i]),
            file,
            line,
            column,
            node,
            discriminator,
        })
    }

    /// Appends block `b` to the arena; its slot value.
    fn decode(&mut self, lines: &LineTable<'_>, b: usize, base: u64) -> u32 {
        let start = self.arena.len();
        let Ok(slot) = u32::try_from(start + 1) else {
            return UNKEPT;
        };
        let mut fields = [0u32; LINE_BLOCK * FIELDS];
        let (mut n, mut fits) = (0, true);
        self.arena.push(0);
        // A forged blob's addresses may wrap below the block's first.
        let offset = |a: u64| a.checked_sub(base).and_then(|o| u32::try_from(o).ok());
        let decoded = lines.block_rows(b, |r| match offset(r.address) {
            Some(o) if n < LINE_BLOCK => {
                self.arena.push(o);
                fields[n * FIELDS..][..FIELDS].copy_from_slice(&[
                    r.file,
                    r.line,
                    r.column,
                    r.node,
                    r.discriminator,
                ]);
                n += 1;
            }
            _ => fits = false,
        });
        if decoded.is_none() || !fits || slot == UNKEPT {
            self.arena.truncate(start);
            return UNKEPT;
        }
        self.arena[start] = n as u32;
        self.arena.extend_from_slice(&fields[..n * FIELDS]);
        slot
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blob::v2::source_lines::write::{InlineNode, LineRow, SourceTable, encode_lines};
    use proptest::prelude::*;

    /// Rows from (address step, file, line, node) steps (rows ascend
    /// strictly, as the writer requires); file 0 and node 0 make gaps.
    fn table(steps: &[(u64, u32, u32, u32)]) -> SourceTable {
        let mut a = 0x1000;
        let mut rows: Vec<LineRow> = steps
            .iter()
            .map(|&(d, file, line, node)| {
                a += d;
                LineRow {
                    address: a,
                    file,
                    line,
                    node,
                    ..LineRow::default()
                }
            })
            .collect();
        rows.push(LineRow {
            address: a + 1,
            ..LineRow::default()
        });
        SourceTable {
            rows,
            nodes: vec![InlineNode::default(); 4],
            files: vec![(0, 0); 4],
            strings: vec![b"f".to_vec()],
        }
    }

    proptest! {
        #[test]
        fn decoded_blocks_answer_as_the_table_does(
            steps in prop::collection::vec((1u64..40, 0u32..4, 0u32..5000, 0u32..4), 1..400),
            budget in prop_oneof![Just(0usize), Just(BUDGET)],
            columns in any::<bool>(),
        ) {
            let sec = encode_lines(&table(&steps), columns).unwrap();
            let l = LineTable::parse(&sec, 0).unwrap();
            let mut cache = BlockRows::with_budget(Some(&l), budget);
            let (lo, hi) = l.span();
            // Twice: the first pass decodes, the second reads kept blocks.
            for _ in 0..2 {
                for a in lo.saturating_sub(2)..hi + 2 {
                    let Some(b) = l.block_of(a, 0..usize::MAX) else { continue };
                    prop_assert_eq!(cache.find(&l, b, a), l.find_in_block(b, a), "{:#x}", a);
                    prop_assert_eq!(cache.find(&l, b, a), l.find(a), "{:#x}", a);
                }
                prop_assert_eq!(cache.find(&l, l.blocks(), hi), None);
                // The resolver's mark for an address below the table.
                prop_assert_eq!(cache.find(&l, usize::MAX - 1, hi), None);
            }
            // Kept: every block, or none past the budget.
            let kept = cache.slots.iter().filter(|&&s| s != 0 && s != UNKEPT).count();
            prop_assert_eq!(kept, if budget == 0 { 0 } else { l.blocks() });
        }
    }
}
