//! Symbol sizes from the `sizes` section (docs/FORMAT.md §10.7): form 0's
//! sizes, form 1's padding gaps and their exceptions.

use super::*;

/// The `sizes` section's header (FORMAT.md §10.7), read once at open: a
/// lookup of a blob with sizes reads one size, and parsing the header
/// again for it was 0.5 % of `ksym-resolve`'s instructions on 100k
/// addresses of libstdc++.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Sizes<'a> {
    /// Bits per packed value, 1 to 64; 0 when the blob has no usable
    /// section (absent, or a header out of range: no sizes then).
    width: u32,
    /// Form 1: padding gaps, then exceptions (else form 0: sizes).
    form1: bool,
    /// The packed values.
    bits: &'a [u8],
    /// The whole section, for form 1's exceptions.
    section: &'a [u8],
}

impl<'a> Sizes<'a> {
    /// The header of section `s` (empty when absent).
    pub(super) fn new(s: &'a [u8]) -> Self {
        let width = u32_at(s, 0);
        if s.len() < 8 || width == 0 || width > 64 {
            return Sizes::default();
        }
        let form1 = u32_at(s, 4) == 1;
        Sizes {
            width,
            form1,
            bits: s.get(if form1 { 16 } else { 8 }..).unwrap_or_default(),
            section: s,
        }
    }
}

impl KallsymsV2<'_> {
    /// Stored row `j`'s size in bytes from the `sizes` section (FORMAT.md
    /// §10.7), `None` where the blob has none or it is 0 (unknown). Form 1
    /// stores the padding after the symbol instead: the size is then the
    /// distance to the next stored row at a higher address, less it.
    pub fn row_size(&self, j: usize) -> Option<u64> {
        self.size_of(j, || {
            let at = self.stored_address(j);
            let mut k = j + 1;
            while k < self.stored && self.stored_address(k) == at {
                k += 1;
            }
            Some((at, (k < self.stored).then(|| self.stored_address(k))?))
        })
    }

    /// [`KallsymsV2::row_size`] of row `j` at `at`, given `next`, the
    /// address of the first stored row above `at`: what a lookup has
    /// already read.
    #[cfg_attr(feature = "std", inline)]
    pub(super) fn row_size_near(&self, j: usize, at: u64, next: Option<u64>) -> Option<u64> {
        self.size_of(j, || Some((at, next?)))
    }

    /// Row `j`'s size; form 1 asks `bounds` for the row's address and the
    /// next stored row's above it.
    #[cfg_attr(feature = "std", inline)]
    fn size_of(&self, j: usize, bounds: impl FnOnce() -> Option<(u64, u64)>) -> Option<u64> {
        let Sizes {
            width,
            form1,
            bits,
            section,
        } = self.sizes;
        if width == 0 {
            return None;
        }
        let v = get_bits(bits, (j as u64).wrapping_mul(u64::from(width)), width);
        if !form1 || v == 0 {
            return (v != 0).then_some(v);
        }
        if v == (1u64 << width) - 1 {
            return self.size_exception(section, j);
        }
        let (at, next) = bounds()?;
        next.checked_sub(at)?.checked_sub(v - 1)
    }

    /// Row `j`'s size among the exceptions of a form-1 `sizes` section
    /// `s`: `{row: u32, size: u32}` entries after the packed gaps, rows
    /// ascending (FORMAT.md §10.7).
    fn size_exception(&self, s: &[u8], j: usize) -> Option<u64> {
        let width = u32_at(s, 0) as usize;
        let n = u32_at(s, 8) as usize;
        let at = 16 + 8 * (self.stored.checked_mul(width)?).div_ceil(64);
        let e = s.get(at..at.checked_add(n.checked_mul(8)?)?)?;
        let k = partition_point(n, |i| (u32_at(e, 8 * i) as usize) < j);
        (k < n && u32_at(e, 8 * k) as usize == j).then(|| u64::from(u32_at(e, 8 * k + 4)))
    }
}
