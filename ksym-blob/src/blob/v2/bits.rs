//! The v2 writer's byte-level builders, shared by the symbol sections
//! (`v2::write`) and the `lines` section (`v2::source_lines::write`): a
//! little-endian bit
//! packer (docs/FORMAT.md §10.2), unsigned LEB128 (§11.2, §15.2) and the
//! token-table encoding (§11.3).

use super::layout::{MAX_CODES, TOKENS_COUNT};

/// Little-endian bit packer over u64 words.
#[derive(Default)]
pub(crate) struct Bits {
    words: Vec<u64>,
    len: u64,
}

impl Bits {
    pub(crate) fn push(&mut self, v: u64, width: u32) {
        if width == 0 {
            return;
        }
        let sh = (self.len % 64) as u32;
        if sh == 0 {
            self.words.push(0);
        }
        let last = self.words.len() - 1;
        self.words[last] |= v << sh;
        if sh + width > 64 {
            self.words.push(v >> (64 - sh));
        }
        self.len += u64::from(width);
    }
    /// Bits pushed so far.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }
    pub(crate) fn bytes(&self) -> Vec<u8> {
        self.words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }
}

/// Appends `v` as unsigned LEB128 (the varints of FORMAT.md §11.2 and §15.2).
pub(crate) fn push_uleb(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let b = (v & 0x7F) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

/// A token table's bytes (FORMAT.md §11.3): the code count (u16), `count +
/// 1` u16 offsets, then the expansions of codes `0..count`. `expansions`
/// comes from [`pairs::learn`](super::pairs::learn), which keeps within
/// [`MAX_CODES`] codes and u16 offsets.
pub(crate) fn token_table(expansions: &[Vec<u8>]) -> Vec<u8> {
    debug_assert!((1..=MAX_CODES).contains(&expansions.len()));
    let bytes: usize = expansions.iter().map(Vec::len).sum();
    debug_assert!(bytes <= usize::from(u16::MAX));
    let mut tokens = Vec::with_capacity(TOKENS_COUNT + 2 * (expansions.len() + 1) + bytes);
    tokens.extend_from_slice(&(expansions.len() as u16).to_le_bytes());
    let mut off = 0u16;
    tokens.extend_from_slice(&off.to_le_bytes());
    for e in expansions {
        off += e.len() as u16;
        tokens.extend_from_slice(&off.to_le_bytes());
    }
    for e in expansions {
        tokens.extend_from_slice(e);
    }
    tokens
}
