//! Arbitrary symbol lists: pack (v1 with both token strategies, and v2) then
//! read must give every symbol back, and the blob must validate (v2: also
//! its deep check). Input: records of (address byte, type bit, name); a
//! type bit of 1 on an even address adds a `__pfx_` twin 16 bytes below, so
//! v2's folding is exercised. The first byte picks the format (its value mod
//! 3: v1 optimal, v1 seed, v2), so a run packs once and the fuzzer's
//! coverage spreads its inputs over the three.
#![no_main]

use ksym::Kallsyms;
use ksym::blobfile::AlignedBlob;
use ksym::blob::v1::tokens::TokenStrategy;
use ksym::blob::v2::write::{V2Options, pack_v2};
use ksym::blob::list::SymbolList;
use ksym::blob::v1::write::pack;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&format, data)) = data.split_first() else {
        return;
    };
    let mut list = SymbolList::new();
    let mut expect = Vec::new();
    // Names are separated by 0x00; the first byte of each is its address.
    for chunk in data.split(|&b| b == 0).take(2000) {
        let Some((&a, name)) = chunk.split_first() else { continue };
        let ty = if a & 1 == 0 { b'T' } else { b't' };
        let addr = (u64::from(a) << 4) + 16;
        if a & 3 == 2 {
            let twin = [&b"__pfx_"[..], name].concat();
            if list.push(addr - 16, ty, &twin).is_ok() {
                expect.push((addr - 16, ty, twin));
            }
        }
        if list.push(addr, ty, name).is_ok() {
            expect.push((addr, ty, name.to_vec()));
        }
    }
    expect.sort_by_key(|e| e.0);
    let strategy = [Some(TokenStrategy::Optimal), Some(TokenStrategy::Seed), None][format as usize % 3];
    {
        let bytes = match strategy {
            Some(s) => pack(&list, s).expect("pack").blob,
            None => pack_v2(&list, &V2Options::default()).expect("pack v2").blob,
        };
        let blob = AlignedBlob::copy_from(&bytes);
        let m = Kallsyms::from_blob(blob.as_bytes(), None, None).expect("own blob is valid");
        m.verify().expect("own blob passes the deep check");
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
