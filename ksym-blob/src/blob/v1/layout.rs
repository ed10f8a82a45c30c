//! Constants and layout arithmetic of the blob, shared by the writer and the
//! reader. Source of truth: `docs/FORMAT.md` (the project's English rendering of
//! the seed spec `000_522422fb1f6ad45b`).

/// Byte that opens and closes a token reference in a name record (FORMAT.md §3.3).
/// Raw name bytes never contain it.
pub const TOKEN_MARKER: u8 = 0xFF;

/// Most tokens a blob may hold: ids `0..=510` (FORMAT.md §3.3). Id 511 would be
/// written `FF 01 FF FF`, which a reader that tries the 1-byte form first
/// misreads as id 1, so it is never assigned.
pub const MAX_TOKENS: usize = 511;

/// Ids below this are written in the 1-byte form `FF id FF` (3 bytes); the
/// rest in the 2-byte form `FF hi lo FF` (4 bytes) (FORMAT.md §3.3).
pub const ONE_BYTE_IDS: u16 = 256;

/// Bytes before a record's payload: the symbol type (1) and the payload
/// length (u16, little-endian) (FORMAT.md §3.2).
pub const RECORD_PREFIX_LEN: usize = 3;

/// Largest payload a record can describe, in bytes (the u16 length field).
pub const MAX_PAYLOAD_LEN: usize = u16::MAX as usize;

pub use crate::kernel::LAST_SYMBOL_MAX_SPAN;

/// Names of the end-of-section markers: an alias group that holds one of them
/// covers no address (FORMAT.md §5.2).
pub const END_MARKERS: [&[u8]; 2] = [b"_etext", b"_einittext"];

/// Bytes a reference to token `id` takes in a payload: 3 or 4.
pub const fn token_ref_len(id: u16) -> usize {
    if id < ONE_BYTE_IDS { 3 } else { 4 }
}

/// Why a payload's token reference is malformed (see [`parse_token_ref`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenRefError {
    /// Starts with the marker but neither `payload[2]` nor `payload[3]` closes it.
    Unclosed,
    /// A 2-byte form whose id is below 256 or is 511: not what a writer emits,
    /// and readable two ways (FORMAT.md §3.3).
    NonCanonical,
}

/// Reads the token reference at the start of a record payload.
///
/// Returns `Ok(None)` when the payload does not start with [`TOKEN_MARKER`] (it
/// is the raw name), else `Ok(Some((id, ref_len)))` with `ref_len` 3 or 4
/// bytes. The rule (FORMAT.md §3.3): `payload[3] == 0xFF` marks the 2-byte form
/// `FF hi lo FF`; otherwise `payload[2] == 0xFF` marks `FF id FF`. The id is
/// not checked against the token table here.
#[inline]
pub fn parse_token_ref(payload: &[u8]) -> Result<Option<(u16, usize)>, TokenRefError> {
    match payload {
        [TOKEN_MARKER, hi, lo, TOKEN_MARKER, ..] => {
            let id = u16::from_be_bytes([*hi, *lo]);
            if id < ONE_BYTE_IDS || id as usize >= MAX_TOKENS {
                Err(TokenRefError::NonCanonical)
            } else {
                Ok(Some((id, 4)))
            }
        }
        [TOKEN_MARKER, id, TOKEN_MARKER, ..] => Ok(Some((u16::from(*id), 3))),
        [TOKEN_MARKER, ..] => Err(TokenRefError::Unclosed),
        _ => Ok(None),
    }
}

/// Rounds `x` up to a multiple of `align` (a power of two); `None` on overflow.
#[inline]
pub const fn align_up(x: usize, align: usize) -> Option<usize> {
    match x.checked_add(align - 1) {
        Some(v) => Some(v & !(align - 1)),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_refs_decode_one_way_only() {
        assert_eq!(parse_token_ref(b"abc"), Ok(None));
        assert_eq!(parse_token_ref(b""), Ok(None));
        assert_eq!(parse_token_ref(&[0xFF, 7, 0xFF, b'x']), Ok(Some((7, 3))));
        assert_eq!(parse_token_ref(&[0xFF, 0xFF, 0xFF]), Ok(Some((255, 3))));
        assert_eq!(parse_token_ref(&[0xFF, 1, 0, 0xFF]), Ok(Some((256, 4))));
        assert_eq!(
            parse_token_ref(&[0xFF, 1, 0xFE, 0xFF, b'a']),
            Ok(Some((510, 4)))
        );
        // Id 511 and 2-byte forms of small ids are refused, not guessed at.
        assert_eq!(
            parse_token_ref(&[0xFF, 1, 0xFF, 0xFF]),
            Err(TokenRefError::NonCanonical)
        );
        assert_eq!(
            parse_token_ref(&[0xFF, 0, 5, 0xFF]),
            Err(TokenRefError::NonCanonical)
        );
        assert_eq!(parse_token_ref(&[0xFF, 1, 2]), Err(TokenRefError::Unclosed));
        assert_eq!(parse_token_ref(&[0xFF]), Err(TokenRefError::Unclosed));
    }

    #[test]
    fn ref_len_matches_form() {
        assert_eq!(token_ref_len(0), 3);
        assert_eq!(token_ref_len(255), 3);
        assert_eq!(token_ref_len(256), 4);
        assert_eq!(align_up(9, 8), Some(16));
        assert_eq!(align_up(16, 8), Some(16));
        assert_eq!(align_up(usize::MAX, 8), None);
    }
}
