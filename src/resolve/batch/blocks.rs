//! Line-table row blocks kept decoded (docs/FORMAT.md §15.1): a lookup in a
//! block decodes, on average, half of its 32 rows, and a stream of lookups
//! comes back to the same blocks (a profile's hot functions; 100k random
//! addresses of libc visit each of its 5,000 blocks 20 times). Decoding a
//! block once and searching the decoded rows after costs a binary search.
//!
//! Only for a table whose decoded rows fit [`BUDGET`]: decoded, a block is
//! 768 bytes against the 100 to 200 bytes of its coded rows, and where the
//! decoded rows no longer fit in the CPU's caches (a kernel's table: 31 MiB
//! for Debian's 6.1 vmlinux) each search misses on lines that decoding the
//! smaller coded block would not touch: 1.15x the time on 1M random
//! addresses there, against 0.78x on libstdc++'s 3 MiB.

use crate::blob::v2::layout::LINE_BLOCK;
use crate::blob::v2::source_lines::read::{LineTable, SourceRow};

/// The largest table kept decoded, in bytes of decoded rows (768 bytes per
/// block): libc's (4 MiB), libstdc++'s (2 MiB) and a Rust release binary's
/// (6.4 MiB for ksym-resolve's 280k rows) fit.
const BUDGET: usize = 16 << 20;

/// A decoded row in 24 bytes rather than [`SourceRow`]'s 32: its address
/// as an offset from its block's first.
#[derive(Debug, Clone, Copy)]
struct Row {
    offset: u32,
    file: u32,
    line: u32,
    column: u32,
    node: u32,
    discriminator: u32,
}

/// The decoded blocks of one line table, by block index.
#[derive(Debug, Default)]
pub(in crate::resolve) struct BlockRows {
    /// A slot per block; none for a table past the budget.
    slots: Vec<Option<Box<[Row]>>>,
}

impl BlockRows {
    /// An empty cache with a slot per block of `lines`, or none when its
    /// decoded rows would take more than [`BUDGET`] bytes.
    pub(in crate::resolve) fn new(lines: Option<&LineTable<'_>>) -> Self {
        Self::with_budget(lines, BUDGET)
    }

    fn with_budget(lines: Option<&LineTable<'_>>, budget: usize) -> Self {
        let blocks = lines.map_or(0, LineTable::blocks);
        let bytes = blocks.saturating_mul(LINE_BLOCK * size_of::<Row>());
        BlockRows {
            slots: std::iter::repeat_with(|| None)
                .take(if bytes <= budget { blocks } else { 0 })
                .collect(),
        }
    }

    /// [`LineTable::find_in_block`]'s answer for `addr` in block `b`, from
    /// the decoded rows (decoding the block first while the budget lasts).
    pub(in crate::resolve) fn find(
        &mut self,
        lines: &LineTable<'_>,
        b: usize,
        addr: u64,
    ) -> Option<SourceRow> {
        let Some(slot) = self.slots.get_mut(b) else {
            return lines.find_in_block(b, addr);
        };
        let base = lines.block_address(b);
        if slot.is_none() {
            let mut rows = Vec::with_capacity(LINE_BLOCK);
            let mut fits = true;
            let decoded = lines.block_rows(b, |r| match u32::try_from(r.address - base) {
                Ok(offset) => rows.push(Row {
                    offset,
                    file: r.file,
                    line: r.line,
                    column: r.column,
                    node: r.node,
                    discriminator: r.discriminator,
                }),
                Err(_) => fits = false,
            });
            // A block that does not decode (a forged blob) or spans 4 GiB
            // is not kept: find_in_block answers for it, lookup by lookup.
            if decoded.is_some() && fits {
                *slot = Some(rows.into_boxed_slice());
            }
        }
        let Some(rows) = slot else {
            return lines.find_in_block(b, addr);
        };
        // Rows' addresses never decrease: the row is the last at or below.
        let at = addr.checked_sub(base)?;
        let r = rows[rows
            .partition_point(|r| u64::from(r.offset) <= at)
            .checked_sub(1)?];
        // The end row (last of all) has file 0 and node 0 too.
        (r.file != 0 || r.node != 0).then_some(SourceRow {
            address: base + u64::from(r.offset),
            file: r.file,
            line: r.line,
            column: r.column,
            node: r.node,
            discriminator: r.discriminator,
        })
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
            }
            // Kept: every block, or none past the budget.
            let kept = cache.slots.iter().filter(|s| s.is_some()).count();
            prop_assert_eq!(kept, if budget == 0 { 0 } else { l.blocks() });
        }
    }
}
