//! Decode-once caches of the resolver: strings of a v2 blob (names, source
//! paths, inline function names) are pair-coded and front-coded, so decoding
//! one costs more than copying it, and a trace repeats the same few thousand.
//! Also the cache of line-table rows by address.

use crate::blob::Name;
use crate::blob::v2::source_lines::read::SourceRow;

/// Decoded strings, one after another, each behind a header (its length
/// as a little-endian u16, or 0xFFFF and a u32 for a longer one) and found
/// by a 4-byte entry: the header's offset + 1, or 0 while the string is not
/// decoded yet. Entries live where their owner looks them up (a table by
/// id, or beside an address, the row table of `rows.rs`); 4 bytes keep that
/// table small enough to stay in cache.
#[derive(Debug, Default)]
pub(in crate::resolve) struct Arena {
    bytes: Vec<u8>,
    /// A string decoded past 4 GiB of arena, which no entry can reach:
    /// decoded again on every use (only a damaged blob gets there).
    spill: Vec<u8>,
}

impl Arena {
    /// The bytes of entry `e`, decoded by `fill` (which appends them) when
    /// `*e` is 0.
    #[inline]
    pub(in crate::resolve) fn get(
        &mut self,
        e: &mut u32,
        fill: impl FnOnce(&mut Vec<u8>),
    ) -> &[u8] {
        if *e == 0 {
            let at = self.bytes.len();
            let Ok(entry) = u32::try_from(at + 1) else {
                self.spill.clear();
                fill(&mut self.spill);
                return &self.spill;
            };
            self.bytes.extend_from_slice(&[0, 0]);
            fill(&mut self.bytes);
            self.seal(at);
            *e = entry;
        }
        self.bytes(*e)
    }

    /// Adds `bytes` and returns their entry (0 when the arena is past
    /// 4 GiB: the caller decodes again next time).
    pub(in crate::resolve) fn insert(&mut self, bytes: &[u8]) -> u32 {
        let at = self.bytes.len();
        let Ok(entry) = u32::try_from(at + 1) else {
            return 0;
        };
        self.bytes.extend_from_slice(&[0, 0]);
        self.bytes.extend_from_slice(bytes);
        self.seal(at);
        entry
    }

    /// Writes the header of the string appended after the 2 bytes at `at`.
    fn seal(&mut self, at: usize) {
        let len = self.bytes.len() - at - 2;
        match u16::try_from(len) {
            Ok(l) if l < u16::MAX => self.bytes[at..at + 2].copy_from_slice(&l.to_le_bytes()),
            _ => {
                self.bytes[at..at + 2].copy_from_slice(&[0xFF, 0xFF]);
                let l = u32::try_from(len).unwrap_or(u32::MAX).to_le_bytes();
                self.bytes.splice(at + 2..at + 2, l);
            }
        }
    }

    /// The bytes of entry `e`, which is not 0.
    #[inline]
    pub(in crate::resolve) fn bytes(&self, e: u32) -> &[u8] {
        let at = e as usize - 1;
        let (len, start) = match u16::from_le_bytes([self.bytes[at], self.bytes[at + 1]]) {
            u16::MAX => {
                let l = self.bytes[at + 2..at + 6].try_into().expect("4 bytes");
                (u32::from_le_bytes(l) as usize, at + 6)
            }
            l => (l as usize, at + 2),
        };
        &self.bytes[start..start + len]
    }

    /// Reads the header of entry `e` (nothing when not decoded), so that a
    /// batch of lookups overlaps the cache misses of its strings.
    #[inline]
    pub(in crate::resolve) fn touch(&self, e: u32) -> u8 {
        (e as usize)
            .checked_sub(1)
            .and_then(|at| self.bytes.get(at))
            .copied()
            .unwrap_or(0)
    }

    /// Appends `name` to `out`, through entry `e` when it is a v2 name (its
    /// stored bytes: a folded symbol's `__pfx_` is not part of them).
    #[inline]
    pub(in crate::resolve) fn push_name(
        &mut self,
        e: &mut u32,
        out: &mut Vec<u8>,
        name: &Name<'_>,
    ) {
        let Some(c) = name.coded() else {
            return name.extend_into(out);
        };
        if c.key().1 {
            out.extend_from_slice(crate::blob::v2::layout::PFX);
        }
        out.extend_from_slice(self.get(e, |a| c.for_each_stored_run(|r| a.extend_from_slice(r))));
    }
}

/// Strings of the `lines` section decoded once, by id.
#[derive(Debug, Default)]
pub(in crate::resolve) struct DecodedCache {
    at: Vec<u32>,
    arena: Arena,
}

impl DecodedCache {
    /// The bytes of `id`, decoded by `fill` on first use.
    #[inline]
    pub(in crate::resolve) fn get(&mut self, id: u32, fill: impl FnOnce(&mut Vec<u8>)) -> &[u8] {
        let id = id as usize;
        if id >= self.at.len() {
            self.at.resize(id + 1, 0);
        }
        self.arena.get(&mut self.at[id], fill)
    }

    /// Slots (one per id up to the largest asked for).
    #[cfg(test)]
    pub(in crate::resolve) fn len(&self) -> usize {
        self.at.len()
    }
}

/// v2 names decoded once, by name-order rank: for the module space, whose
/// lookups are few (the kernel's go through the row table of `rows.rs`).
/// Grows to at most the raw names' size.
#[derive(Debug, Default)]
pub(in crate::resolve) struct NameCache {
    at: Vec<u32>,
    arena: Arena,
}

impl NameCache {
    /// An empty cache with a slot per stored row (`stored`), so lookups
    /// never grow it slot by slot.
    pub(in crate::resolve) fn with_slots(stored: usize) -> Self {
        NameCache {
            at: vec![0; stored],
            arena: Arena::default(),
        }
    }

    /// Appends `name` to `out`, from the cache when it holds it.
    #[inline]
    pub(in crate::resolve) fn push(&mut self, out: &mut Vec<u8>, name: &Name<'_>) {
        let Some(rank) = name.coded().map(|c| c.key().0) else {
            return name.extend_into(out);
        };
        if rank >= self.at.len() {
            self.at.resize(rank + 1, 0);
        }
        self.arena.push_name(&mut self.at[rank], out, name);
    }
}

/// A direct-mapped cache of line-table rows by (unslid) address: traces
/// repeat a few thousand return addresses, and decoding a row block costs
/// more than a probe.
#[derive(Debug)]
pub(in crate::resolve) struct RowCache {
    /// `(address + 1, row)`; address 0 + 1 never collides with an empty slot.
    slots: Vec<(u64, Option<SourceRow>)>,
}

impl Default for RowCache {
    fn default() -> Self {
        RowCache {
            slots: vec![(0, None); Self::SLOTS],
        }
    }
}

impl RowCache {
    const SLOTS: usize = 4096;

    #[inline]
    fn slot(addr: u64) -> usize {
        (addr ^ addr >> 12) as usize % Self::SLOTS
    }

    #[inline]
    pub(in crate::resolve) fn get(&self, addr: u64) -> Option<Option<SourceRow>> {
        let (k, r) = self.slots[Self::slot(addr)];
        (k == addr.wrapping_add(1)).then_some(r)
    }

    #[inline]
    pub(in crate::resolve) fn put(&mut self, addr: u64, row: Option<SourceRow>) {
        self.slots[Self::slot(addr)] = (addr.wrapping_add(1), row);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arena_keeps_short_long_and_empty_strings_apart() {
        let mut a = Arena::default();
        let long = vec![b'x'; 70_000];
        let (e1, e2, e3) = (a.insert(b"schedule"), a.insert(&long), a.insert(b""));
        let mut e4 = 0u32;
        assert_eq!(
            a.get(&mut e4, |v| v.extend_from_slice(&long[..65_535]))
                .len(),
            65_535
        );
        assert!(e1 != 0 && e2 != 0 && e3 != 0 && e4 != 0);
        assert_eq!(a.bytes(e1), b"schedule");
        assert_eq!(a.bytes(e2), &long[..]);
        assert_eq!(a.bytes(e3), b"");
        assert_eq!(a.bytes(e4), &long[..65_535]);
        // A filled entry is not filled again.
        assert_eq!(a.get(&mut e4, |_| unreachable!()).len(), 65_535);
        assert_eq!(a.touch(e1), 8);
        assert_eq!(a.touch(0), 0);
    }
}
