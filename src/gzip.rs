//! Blob files compressed at rest (`ksym-pack --gzip`, docs/FORMAT.md §17):
//! the whole file is one gzip member (RFC 1952) around an unchanged blob,
//! inflated into aligned memory before any reader sees it.
//!
//! Why the whole file and gzip: a store's blobs are read by the tools,
//! never in place, and `zcat` gives back the very blob; DEFLATE by the
//! `flate2` the tools already build (`.ko.gz` modules). A kernel's blob is
//! never compressed: its reader has no allocator to inflate into.

use std::io::{self, Read, Write};
use std::path::Path;

use crate::blobfile::AlignedBlob;

/// The first bytes of a gzip member with DEFLATE (RFC 1952 §2.3.1: ID1,
/// ID2, CM = 8). No v2 blob starts so (its magic, FORMAT.md §9.1); a v1
/// blob does when it holds exactly 559,903 symbols (`num_syms` is
/// 0x88B1F, §2.1), so bytes that start so, fail to inflate and open as a
/// blob are read as that blob.
pub const MAGIC: [u8; 3] = [0x1f, 0x8b, 8];

/// The most bytes a compressed blob may inflate to: 1 GiB, far past any
/// kernel's or binary's blob, so a hostile store cannot make us allocate
/// without bound (DEFLATE expands up to 1032 to 1).
pub const MAX_INFLATED: u64 = 1 << 30;

/// True when `bytes` begin as a gzip member does ([`MAGIC`]).
pub fn is_gzip(bytes: &[u8]) -> bool {
    bytes.starts_with(&MAGIC)
}

/// `blob` as one gzip member at DEFLATE's default level (6), with no file
/// name and a zero time stamp, so the same blob always gives the same
/// bytes (reproducible builds). Level 9 is 1.1 to 1.5 % smaller on the
/// bench's blobs and takes 1.7 to 1.9 times as long (60 ms against 32 ms
/// for a Rust binary's 2.8 MB blob), which `ksym-pack` would feel.
///
/// Errors: none in practice (it writes to memory); an I/O error of the
/// encoder is passed on.
pub fn compress(blob: &[u8]) -> io::Result<Vec<u8>> {
    let mut enc = flate2::GzBuilder::new().mtime(0).write(
        Vec::with_capacity(blob.len() / 2),
        flate2::Compression::default(),
    );
    enc.write_all(blob)?;
    enc.finish()
}

/// The blob in `bytes`: inflated when they are a gzip member, else copied
/// as they are, either way into aligned memory for the readers.
///
/// Errors ([`io::ErrorKind::InvalidData`]): a damaged member (its CRC-32
/// or length does not match, or the stream is cut short), more than
/// [`MAX_INFLATED`] bytes, or bytes after the member (with their offset).
pub fn blob_from(bytes: &[u8]) -> io::Result<AlignedBlob> {
    member(bytes).unwrap_or_else(|| Ok(AlignedBlob::copy_from(bytes)))
}

/// Reads the blob file at `path` ([`AlignedBlob::read_file`]: read, never
/// mapped) and inflates it when it is a gzip member.
///
/// Errors: the file cannot be read, or [`blob_from`]'s.
pub fn read_blob(path: &Path) -> io::Result<AlignedBlob> {
    read_blob_sized(path).map(|(blob, _)| blob)
}

/// [`read_blob`], with the file's length when it was compressed (`None`
/// for a plain blob), for the reports that give both sizes.
///
/// Errors: [`read_blob`]'s.
pub fn read_blob_sized(path: &Path) -> io::Result<(AlignedBlob, Option<usize>)> {
    let raw = AlignedBlob::read_file(path)?;
    let len = raw.as_bytes().len();
    match member(raw.as_bytes()) {
        None => Ok((raw, None)),
        Some(inflated) => inflated.map(|blob| (blob, Some(len))),
    }
}

/// What a gzip member in `bytes` inflates to; `None` when the bytes are
/// the blob itself: no member, or the one v1 blob that starts as a member
/// does (see [`MAGIC`]), asked only once inflating has failed.
fn member(bytes: &[u8]) -> Option<io::Result<AlignedBlob>> {
    if !is_gzip(bytes) {
        return None;
    }
    match inflate(bytes) {
        Err(_) if crate::Kallsyms::from_file_bytes(bytes, None, None).is_ok() => None,
        r => Some(r),
    }
}

fn inflate(bytes: &[u8]) -> io::Result<AlignedBlob> {
    let bad = |what: String| io::Error::new(io::ErrorKind::InvalidData, what);
    // The member's ISIZE (its length mod 2^32) sizes the buffer; it is only
    // a hint, as a damaged or hostile file may say anything, so it is held
    // to what DEFLATE can expand these bytes to (1032 to 1).
    let hint = bytes
        .last_chunk::<4>()
        .map_or(0, |s| u32::from_le_bytes(*s) as usize)
        .min(bytes.len().saturating_mul(1032))
        .min(MAX_INFLATED as usize);
    let mut dec = flate2::bufread::GzDecoder::new(bytes);
    let blob = match AlignedBlob::read_sized((&mut dec).take(MAX_INFLATED + 1), hint) {
        Ok(blob) => blob,
        Err(e) => {
            // DEFLATE names no position; how far the decoder read is the
            // nearest one we have.
            let at = bytes.len() - dec.into_inner().len();
            return Err(bad(format!(
                "gzip-compressed blob: {e} (input read up to byte offset {at})"
            )));
        }
    };
    if blob.as_bytes().len() as u64 > MAX_INFLATED {
        return Err(bad(format!(
            "gzip-compressed blob: inflates past {MAX_INFLATED} bytes, more than any blob"
        )));
    }
    let rest = dec.into_inner().len();
    if rest > 0 {
        return Err(bad(format!(
            "gzip-compressed blob: {rest} bytes after its gzip member, at byte offset {}",
            bytes.len() - rest
        )));
    }
    Ok(blob)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        (0..5000u32)
            .flat_map(|i| (i * 7 % 251).to_le_bytes())
            .collect()
    }

    #[test]
    fn a_compressed_blob_inflates_to_the_same_bytes() {
        let blob = sample();
        let gz = compress(&blob).unwrap();
        assert!(is_gzip(&gz) && gz.len() < blob.len() / 4);
        assert_eq!(blob_from(&gz).unwrap().as_bytes(), &blob[..]);
        // Deterministic: no time stamp, no name.
        assert_eq!(compress(&blob).unwrap(), gz);
        assert_eq!(&gz[4..8], &[0, 0, 0, 0]);
    }

    #[test]
    fn plain_bytes_pass_as_they_are() {
        let blob = sample();
        assert_eq!(blob_from(&blob).unwrap().as_bytes(), &blob[..]);
        assert_eq!(blob_from(&[]).unwrap().as_bytes(), &[] as &[u8]);
    }

    #[test]
    fn damage_is_an_error_never_a_partial_blob() {
        let gz = compress(&sample()).unwrap();
        let cut = blob_from(&gz[..gz.len() - 9]).unwrap_err();
        assert_eq!(cut.kind(), io::ErrorKind::InvalidData);
        // A flipped byte in the CRC-32 of the trailer.
        let mut crc = gz.clone();
        let n = crc.len();
        crc[n - 6] ^= 1;
        let e = blob_from(&crc).unwrap_err().to_string();
        assert!(e.starts_with("gzip-compressed blob: "), "{e}");
        let mut trailing = gz.clone();
        trailing.extend_from_slice(b"junk");
        let e = blob_from(&trailing).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "gzip-compressed blob: 4 bytes after its gzip member, at byte offset {}",
                gz.len()
            )
        );
    }
}
