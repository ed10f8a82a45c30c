//! The deep check of a v2 blob (`ksym-pack --check`): every structural
//! rule of docs/FORMAT.md §13 that opening does not check, in linear time.
//! Needs std (it keeps three name buffers).

use std::vec::Vec;

use super::*;

impl KallsymsV2<'_> {
    /// The address-bucket table is the one FORMAT.md §10.2 defines for
    /// these blocks and text bounds (the blocks' bases are checked apart).
    fn verify_buckets(&self) -> Result<(), Problem> {
        let nblocks = self.stored.div_ceil(ADDR_BLOCK);
        let base = |b: usize| u64_at(self.sec(SectionId::AddrBlocks), b * ADDR_BLOCK_HEADER);
        let t = &self.buckets;
        let first = base(0);
        let last = self
            .stored
            .checked_sub(1)
            .map_or(0, |j| self.stored_address(j));
        let end = bucket_end(first, self.meta().bound(1), self.meta().bound(3), last);
        let shape = bucket_shape(first, end, nblocks);
        if (t.shift, t.nbuckets) != shape || t.first != first {
            return Err(Problem::BucketRule);
        }
        for (k, b) in bucket_entries(first, shape, nblocks, base).enumerate() {
            if u32_at(t.entries, 4 * k) as usize != b {
                return Err(Problem::BucketStart);
            }
        }
        Ok(())
    }

    /// A form-1 `sizes` section (FORMAT.md §10.7): exception rows ascend
    /// below the row count, each escape has its exception and each gap
    /// leaves a size of at least one byte.
    #[cfg(feature = "sizes")]
    fn verify_size_gaps(&self) -> Result<(), Problem> {
        let s = self.sec(SectionId::Sizes);
        if u32_at(s, 4) != 1 {
            return Ok(());
        }
        let width = u32_at(s, 0);
        let n = u32_at(s, 8) as usize;
        let at = 16 + 8 * (self.stored * width as usize).div_ceil(64);
        let e = s.get(at..).unwrap_or_default();
        let rows = (0..n).map(|i| u32_at(e, 8 * i) as usize);
        if rows.clone().zip(rows.clone().skip(1)).any(|(a, b)| a >= b)
            || rows.clone().any(|r| r >= self.stored)
        {
            return Err(Problem::SizeGaps);
        }
        let packed = s.get(16..).unwrap_or_default();
        for j in 0..self.stored {
            let v = get_bits(packed, (j * width as usize) as u64, width);
            if v != 0 && self.row_size(j).is_none_or(|size| size == 0) {
                return Err(Problem::SizeGaps);
            }
        }
        Ok(())
    }

    /// Deep check for `ksym-pack --check`: addresses ascending, folding as
    /// FORMAT.md §10.1 requires, every name decodable with exact LCPs, names
    /// strictly in name order, `addr_to_name` and `name_to_addr` inverse,
    /// types, modules and size gaps in range. Linear time; allocates three name buffers.
    ///
    /// Errors: the first violation, with the offset of its section.
    pub fn verify(&self) -> Result<(), BlobError> {
        let sec_at = |id: SectionId| self.at(id);
        let fail = |id: SectionId, what| bad(sec_at(id), id, what);
        if let Some(l) = &self.lines {
            l.verify().map_err(|mut e| {
                e.offset += sec_at(SectionId::Lines);
                e
            })?;
        }
        let m = self.stored;
        self.verify_buckets()
            .map_err(|what| fail(SectionId::AddrBlocks, what))?;
        for j in 0..m {
            let a = self.stored_address(j);
            if j > 0 && a < self.stored_address(j - 1) {
                return Err(fail(SectionId::AddrBits, Problem::AddressesNotAscending));
            }
            if j % ADDR_BLOCK == 0
                && a != u64_at(
                    self.sec(SectionId::AddrBlocks),
                    j / ADDR_BLOCK * ADDR_BLOCK_HEADER,
                )
            {
                return Err(fail(SectionId::AddrBlocks, Problem::BlockBase));
            }
            if self.folded(j) {
                let v = a.checked_sub(PFX_DISTANCE);
                let prev_ok = j == 0 || v.is_some_and(|v| self.stored_address(j - 1) < v);
                if v.is_none() || !prev_ok || (j > 0 && self.stored_address(j - 1) == a) {
                    return Err(fail(SectionId::Pfx, Problem::FoldedPlacement));
                }
            }
            let t = self.symbol_type_of(j);
            if !(0x21..=0x7E).contains(&t) {
                return Err(fail(SectionId::TypeExceptions, Problem::SymbolType));
            }
            let r = self.a2n(j);
            if r >= m || self.row_at_rank(r) != Some(j) {
                return Err(fail(SectionId::AddrToName, Problem::PermutationsNotInverse));
            }
        }
        let (exc, e) = (
            self.sec(SectionId::TypeExceptions),
            self.type_exception_len(),
        );
        let mask = if e == 4 { 0xFF_FFFF } else { u32::MAX };
        for i in 1..exc.len() / e {
            if u32_at(exc, e * i) & mask <= u32_at(exc, e * (i - 1)) & mask {
                return Err(fail(SectionId::TypeExceptions, Problem::RowsNotAscending));
            }
        }
        let words_per = RANK_BLOCK_BITS / 64;
        let mut ones = 0usize;
        for k in 0..self.pfx_ranks().len() / 4 {
            if u32_at(self.pfx_ranks(), 4 * k) as usize != ones {
                return Err(fail(SectionId::Pfx, Problem::RankSamples));
            }
            for w in k * words_per..(k + 1) * words_per {
                ones += word(self.pfx_words(), w).count_ones() as usize;
            }
        }
        let md = self.modules();
        for i in 0..md.nruns {
            let row = u32_at(md.runs, 8 * i) as usize;
            let id = u32_at(md.runs, 8 * i + 4) as usize;
            if row >= m.max(1)
                || id > md.nmods
                || (i > 0 && row <= u32_at(md.runs, 8 * (i - 1)) as usize)
            {
                return Err(fail(SectionId::Modules, Problem::ModuleRuns));
            }
        }
        for i in 0..md.nmods {
            if u32_at(md.offsets, 4 * i) > u32_at(md.offsets, 4 * i + 4)
                || (i == 0 && u32_at(md.offsets, 0) != 0)
            {
                return Err(fail(SectionId::Modules, Problem::NameOffsetsNotAscending));
            }
        }
        for c in 1..self.tokens.count() {
            if self.tokens.expand(c).contains(&NAME_END) {
                return Err(fail(SectionId::Tokens, Problem::ExpansionHoldsZero));
            }
        }
        if !self.tokens.expand(usize::from(NAME_END)).is_empty() {
            return Err(fail(SectionId::Tokens, Problem::CodeZeroExpands));
        }
        // Names: each bucket parses whole, LCPs are exact, order is strict.
        let (mut prev, mut cur, mut again) = (Vec::new(), Vec::new(), Vec::new());
        let mut prev_row = 0usize;
        let nb = m.div_ceil(BUCKET);
        let mut expect_at = 0usize;
        for b in 0..nb {
            if u32_at(self.sec(SectionId::NameIndex), 4 * b) as usize != expect_at {
                return Err(fail(SectionId::NameIndex, Problem::BucketOffsets));
            }
            let bucket = self.bucket(b);
            let count = (m - b * BUCKET).min(BUCKET);
            let mut at = 0usize;
            for k in 0..count {
                let r = b * BUCKET + k;
                let mut lcp = 0usize;
                if k > 0 {
                    let Some((v, used)) = read_varint(bucket, at) else {
                        return Err(fail(SectionId::Names, Problem::BadLcpVarint));
                    };
                    lcp = v as usize;
                    at += used;
                }
                let rest = bucket.get(at..).unwrap_or(&[]);
                let Some(len) = rest.iter().position(|&c| c == NAME_END) else {
                    return Err(fail(SectionId::Names, Problem::NameUnterminated));
                };
                if k > 0 && lcp > prev.len() {
                    return Err(fail(SectionId::Names, Problem::LcpTooLong));
                }
                cur.clear();
                cur.extend_from_slice(&prev[..lcp]);
                if !self.tokens.codes_are_whole(&rest[..len]) {
                    return Err(fail(SectionId::Names, Problem::CodeNotWhole));
                }
                for run in self.tokens.runs(&rest[..len]) {
                    cur.extend_from_slice(run);
                }
                at += len + 1;
                let exact = prev.iter().zip(&cur).take_while(|(a, b)| a == b).count();
                let row = self.row_at_rank(r).unwrap_or(usize::MAX);
                if r > 0 && (k > 0 && lcp != exact || cur.is_empty()) {
                    return Err(fail(SectionId::Names, Problem::LcpNotExact));
                }
                if cur.is_empty() || cur.len() > usize::from(u16::MAX) {
                    return Err(fail(SectionId::Names, Problem::NameLength));
                }
                if r > 0 && (cur.as_slice(), row) <= (prev.as_slice(), prev_row) {
                    return Err(fail(SectionId::NameToAddr, Problem::NameOrder));
                }
                // The reader's own decoding must agree with this one.
                again.clear();
                self.name_at_rank(r, false).extend_into(&mut again);
                if again != cur {
                    return Err(fail(SectionId::Names, Problem::NameAmbiguous));
                }
                core::mem::swap(&mut prev, &mut cur);
                prev_row = row;
            }
            if at != bucket.len() {
                return Err(fail(SectionId::Names, Problem::BytesAfterBucket));
            }
            expect_at += bucket.len();
        }
        if expect_at != self.sec(SectionId::Names).len() {
            return Err(fail(SectionId::Names, Problem::BytesAfterLastBucket));
        }
        #[cfg(feature = "sizes")]
        self.verify_size_gaps()
            .map_err(|what| fail(SectionId::Sizes, what))?;
        Ok(())
    }
}
