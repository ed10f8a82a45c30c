//! Line-table row blocks kept decoded (docs/FORMAT.md §15.1): a lookup in a
//! block decodes, on average, half of its rows (of 256, as `ksym-pack`
//! writes them; 32 in older blobs), and a stream of lookups comes back to
//! the same blocks (a profile's hot functions; 100k random addresses of
//! libc visit each of its 551 blocks 180 times). Decoding a block once and
//! searching the decoded rows after costs a count over the first offsets
//! of its runs of 32 rows, a binary search over one run's 32 address
//! offsets, and one read of the row found.
//!
//! Memory grows with the blocks a stream visits, up to the whole table
//! decoded (24 bytes a row): nothing for a crash report's few frames,
//! 44 MiB peak for 1M random addresses over Debian's 6.1 vmlinux (15.5 MiB
//! kept coded), in 0.27x the time (0.83x when blocks held 32 rows); a
//! table past [`BUDGET`] stays coded.

use crate::blob::v2::layout::LINE_BLOCK_MAX;
use crate::blob::v2::source_lines::read::{LineTable, SourceRow};

/// The largest table kept decoded, in bytes of decoded rows: libc's
/// (4 MiB), libstdc++'s (2 MiB), a Rust release binary's (6.5 MiB for
/// ksym-resolve's 280k rows) and Debian's 6.1 vmlinux's (31 MiB) fit.
const BUDGET: usize = 64 << 20;

/// u32 fields of a decoded row besides its address: file, line, column,
/// node, discriminator ([`SourceRow`]'s).
const FIELDS: usize = 5;

/// Rows of a decoded run: a coded block of up to 256 rows is kept as runs
/// of 32, each searched over its 128 bytes of offsets (two cache lines),
/// as the whole block was when blocks held 32 rows. A binary search over
/// the whole block's 1 KiB of offsets took 1.05x the time on 1M random
/// addresses of a vmlinux (median of 21 pairs), whose decoded rows (30
/// MiB) miss the cache at each of its steps.
const RUN: usize = 32;

/// Runs a block holds at most: 256 rows / [`RUN`].
const RUNS: usize = LINE_BLOCK_MAX / RUN;

/// The decoded blocks of one line table, by run (see [`RUN`]), one after
/// another in one arena. A run of `n` rows is `n`, its `n` address offsets
/// from its block's first address, then each row's [`FIELDS`]: the search
/// reads the offsets, and only the row found is read past them. Which run
/// of a block holds an address says `first`: 32 bytes a block, which stay
/// in cache (150 KiB for a vmlinux).
#[derive(Debug, Default)]
pub(in crate::resolve) struct BlockRows {
    /// Runs a full block holds: rows a block / [`RUN`].
    per_block: usize,
    /// Words of the whole table decoded: the arena's room, reserved at
    /// the first decode.
    words: usize,
    /// Per block (none for a table past the budget), a slot per run: 0
    /// while the block is not decoded, [`UNKEPT`] for a block kept coded
    /// or a run past its rows, else 1 + where the run starts in `arena`.
    slots: Vec<[u32; RUNS]>,
    /// Per block, each run's first row's offset from the block's first
    /// address (`u32::MAX` past the block's runs): a fixed 8, compared at
    /// once.
    first: Vec<[u32; RUNS]>,
    arena: Vec<u32>,
    /// A block's offsets and fields while it is decoded: fields a row at
    /// a time, a fixed 20-byte store where a slice of them was a call to
    /// memcpy per row.
    offsets: Vec<u32>,
    fields: Vec<[u32; FIELDS]>,
}

/// A block that does not decode (a forged blob), spans 4 GiB or would
/// take the arena past 4 Gi words: find_in_block answers for it.
const UNKEPT: u32 = u32::MAX;

impl BlockRows {
    /// An empty cache with a slot per run of `lines`, or none when its
    /// decoded rows would take more than [`BUDGET`] bytes.
    pub(in crate::resolve) fn new(lines: Option<&LineTable<'_>>) -> Self {
        Self::with_budget(lines, BUDGET)
    }

    fn with_budget(lines: Option<&LineTable<'_>>, budget: usize) -> Self {
        let blocks = lines.map_or(0, LineTable::blocks);
        let per = lines.map_or(RUN, LineTable::rows_per_block);
        let per_block = per.div_ceil(RUN);
        let bytes = blocks.saturating_mul(per_block * (2 + RUN * (1 + FIELDS)) * 4);
        let kept = if bytes <= budget { blocks } else { 0 };
        let words = match kept {
            0 => 0,
            _ => lines.map_or(0, LineTable::rows) * (1 + FIELDS) + blocks * per_block,
        };
        BlockRows {
            per_block,
            words,
            slots: vec![[0; RUNS]; kept],
            first: vec![[u32::MAX; RUNS]; kept],
            arena: Vec::new(),
            offsets: Vec::with_capacity(per),
            fields: Vec::with_capacity(per),
        }
    }

    /// The run of block `b` that holds block-relative offset `at`'s row
    /// (the last whose first row is at or below it): its slot, if `b` is
    /// decoded and kept. Counted, not searched: 8 values, half a cache line.
    #[inline]
    fn run_of(&self, b: usize, at: u64) -> Option<u32> {
        let firsts = self.first.get(b)?;
        let at = u32::try_from(at).unwrap_or(u32::MAX);
        let k = firsts.iter().map(|&o| usize::from(o <= at)).sum::<usize>();
        self.slots.get(b)?.get(k.checked_sub(1)?).copied()
    }

    /// The decoded offsets and fields of the run in `slot`, when its block
    /// is decoded and kept.
    #[inline]
    fn run(&self, slot: u32) -> Option<(&[u32], &[u32])> {
        let at = match slot {
            0 | UNKEPT => return None,
            s => s as usize - 1,
        };
        let n = *self.arena.get(at)? as usize;
        let d = self.arena.get(at + 1..at + 1 + n * (1 + FIELDS))?;
        Some(d.split_at(n))
    }

    /// Reads both cache lines of the decoded offsets a lookup of `addr` in
    /// block `b` searches, or else a byte of the block's coded rows: to
    /// bring them into cache while a batch's other lookups wait (as
    /// [`LineTable::touch_block`]).
    #[inline]
    pub(in crate::resolve) fn touch(&self, lines: &LineTable<'_>, b: usize, addr: u64) -> u8 {
        let at = addr.wrapping_sub(lines.block_address(b));
        match self.run_of(b, at) {
            // Both lines at once, from the run's start: reading its length
            // first would wait for the first miss before the second read.
            Some(s) if s != 0 && s != UNKEPT => {
                let at = s as usize - 1;
                let word = |i: usize| self.arena.get(i).copied().unwrap_or(0);
                (word(at) ^ word(at + RUN / 2 + 1)) as u8
            }
            _ => lines.touch_block(b),
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
        if self.slots.get(b).is_some_and(|s| s[0] == 0) {
            self.decode(lines, b, base);
        }
        // Rows' addresses never decrease: the row is the last at or below.
        let at = addr.checked_sub(base)?;
        let Some((offsets, fields)) = self.run_of(b, at).and_then(|r| self.run(r)) else {
            return lines.find_in_block(b, addr);
        };
        let i = offsets
            .partition_point(|&o| u64::from(o) <= at)
            .checked_sub(1)?;
        let [file, line, column, node, discriminator] =
            fields.get(i * FIELDS..)?.get(..FIELDS)?.try_into().ok()?;
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

    /// Decodes block `b` into the arena, run by run, and sets its runs'
    /// slots (to [`UNKEPT`] when it does not decode or fit). Once per
    /// block, so kept out of [`find`](Self::find): inlined there, it cost
    /// the search 1.1 M more instructions on 100k addresses of libstdc++.
    #[inline(never)]
    fn decode(&mut self, lines: &LineTable<'_>, b: usize, base: u64) {
        // Room for the whole table, reserved once: pages are backed only
        // once written, and growing by doubling copied the arena and held
        // both copies at the peak (0.5 MiB more for the Rust binary's
        // 100k random addresses).
        if self.arena.capacity() == 0 {
            self.arena.reserve_exact(self.words);
        }
        let (mut offsets, mut fields) = (
            std::mem::take(&mut self.offsets),
            std::mem::take(&mut self.fields),
        );
        offsets.clear();
        fields.clear();
        let mut fits = true;
        // A forged blob's addresses may wrap below the block's first.
        let offset = |a: u64| a.checked_sub(base).and_then(|o| u32::try_from(o).ok());
        let decoded = lines.block_rows(b, |r| match offset(r.address) {
            Some(o) if offsets.len() < self.per_block * RUN => {
                offsets.push(o);
                fields.push([r.file, r.line, r.column, r.node, r.discriminator]);
            }
            _ => fits = false,
        });
        let words = offsets.len() * (1 + FIELDS) + self.per_block;
        let room = u32::try_from(self.arena.len() + words + 1).is_ok_and(|end| end < UNKEPT);
        self.slots[b] = [UNKEPT; RUNS];
        if decoded.is_some() && fits && !offsets.is_empty() && room {
            for (k, (o, f)) in offsets.chunks(RUN).zip(fields.chunks(RUN)).enumerate() {
                self.slots[b][k] = self.arena.len() as u32 + 1;
                self.first[b][k] = o[0];
                self.arena.push(o.len() as u32);
                self.arena.extend_from_slice(o);
                self.arena.extend_from_slice(f.as_flattened());
            }
        }
        (self.offsets, self.fields) = (offsets, fields);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blob::v2::source_lines::write::{
        InlineNode, LineRow, RowForm, SourceTable, encode_lines_in_blocks,
    };
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
            shift in 0u8..=3,
            form in prop_oneof![Just(RowForm::Bytes), Just(RowForm::Coded)],
        ) {
            let sec = encode_lines_in_blocks(&table(&steps), columns, shift, form).unwrap();
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
            // Kept: every block, run by run, or none past the budget.
            let kept = cache.slots.iter().flatten().filter(|&&s| s != 0 && s != UNKEPT).count();
            prop_assert_eq!(kept, if budget == 0 { 0 } else { l.rows().div_ceil(RUN) });
            for a in lo..hi {
                let b = l.block_of(a, 0..usize::MAX).unwrap();
                cache.touch(&l, b, a);
            }
        }
    }
}
