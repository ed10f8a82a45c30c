//! Compressed blob files (FORMAT.md §17, `ksym::gzip`): arbitrary bytes
//! behind the gzip magic inflate to a blob or give an error, never a
//! panic and never more than the limit; arbitrary data compressed
//! inflates back to itself, and any cut of that member is an error, never
//! a shorter blob.
#![no_main]

use ksym::gzip::{MAGIC, MAX_INFLATED, blob_from, compress};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The magic in front, unless the input has it (the seeds are members).
    let mut forged = Vec::with_capacity(data.len() + 3);
    if !data.starts_with(&MAGIC) {
        forged.extend_from_slice(&MAGIC);
    }
    forged.extend_from_slice(data);
    if let Ok(b) = blob_from(&forged) {
        assert!(b.as_bytes().len() as u64 <= MAX_INFLATED);
    }
    let gz = compress(data).expect("compressing to memory");
    assert_eq!(blob_from(&gz).expect("our own member").as_bytes(), data);
    let cut = data.first().map_or(1, |&b| b as usize % gz.len().max(1) + 1);
    // A cut that leaves the magic whole (shorter bytes are no member, and
    // pass as a plain blob, which the blob readers then refuse).
    if cut + MAGIC.len() <= gz.len() {
        assert!(blob_from(&gz[..gz.len() - cut]).is_err());
    }
});
