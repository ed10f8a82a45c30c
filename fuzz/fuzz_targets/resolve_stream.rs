//! Arbitrary text through the resolver: no panic, and lines it does not
//! rewrite come out byte for byte.
#![no_main]

use ksym::blobfile::AlignedBlob;
use ksym::reader::KallsymsMapped;
use ksym::resolve::{ResolveOptions, Resolver};
use ksym::tokens::TokenStrategy;
use ksym::writer::{SymbolList, pack};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut list = SymbolList::new();
    for (i, n) in [&b"_stext"[..], b"do_fork", b"schedule", b"_etext", b"init_x", b"_einittext"].iter().enumerate() {
        list.push(0xffff_ffff_8100_0000 + 0x100 * i as u64, b'T', n).unwrap();
    }
    let packed = pack(&list, TokenStrategy::Optimal).unwrap();
    let blob = AlignedBlob::copy_from(&packed.blob);
    let m = KallsymsMapped::from_blob(blob.as_bytes(), None, None).unwrap();
    let mut r = Resolver::new(&m, ResolveOptions { size: true, kaslr_from_sym: data.first() == Some(&b'K'), ..Default::default() }, None);
    let mut out = Vec::new();
    r.run(data, &mut out).unwrap();
    let lines_in = data.split(|&b| b == b'\n').count();
    let lines_out = out.split(|&b| b == b'\n').count();
    assert!(lines_out == lines_in || lines_out == lines_in + 1);
});
