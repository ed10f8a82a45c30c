//! Arbitrary symbol lists: pack then read must give every symbol back, and the
//! blob must validate. Input: records of (address byte, type bit, name).
#![no_main]

use ksym::blobfile::AlignedBlob;
use ksym::reader::KallsymsMapped;
use ksym::tokens::TokenStrategy;
use ksym::writer::{SymbolList, pack};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut list = SymbolList::new();
    let mut expect = Vec::new();
    // Names are separated by 0x00; the first byte of each is its address.
    for chunk in data.split(|&b| b == 0).take(2000) {
        let Some((&a, name)) = chunk.split_first() else { continue };
        let ty = if a & 1 == 0 { b'T' } else { b't' };
        if list.push(u64::from(a) << 4, ty, name).is_ok() {
            expect.push((u64::from(a) << 4, ty, name.to_vec()));
        }
    }
    expect.sort_by_key(|e| e.0);
    for strategy in [TokenStrategy::Optimal, TokenStrategy::Seed] {
        let packed = pack(&list, strategy).expect("pack");
        let blob = AlignedBlob::copy_from(&packed.blob);
        let m = KallsymsMapped::from_blob(blob.as_bytes(), None, None).expect("own blob is valid");
        let got: Vec<(u64, u8, Vec<u8>)> = m
            .symbols()
            .map(|s| {
                let mut n = Vec::new();
                s.name.extend_into(&mut n);
                (s.address, s.symbol_type, n)
            })
            .collect();
        assert_eq!(got, expect);
    }
});
