//! Arbitrary text through the resolver, on a v1 or (when the second byte is
//! odd) a v2 blob with a folded `__pfx_` symbol and a module: no panic, and
//! every input line gives one output line.
#![no_main]

use ksym::Kallsyms;
use ksym::blobfile::AlignedBlob;
use ksym::resolve::{ResolveOptions, Resolver};
use ksym::tokens::TokenStrategy;
use ksym::v2::write::{V2Options, pack_v2};
use ksym::writer::{SymbolList, pack};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut list = SymbolList::new();
    for (i, n) in [&b"_stext"[..], b"do_fork", b"schedule", b"_etext", b"init_x", b"_einittext"].iter().enumerate() {
        list.push(0xffff_ffff_8100_0000 + 0x100 * i as u64, b'T', n).unwrap();
    }
    list.push(0xffff_ffff_c000_0000, b't', b"__pfx_ext4_read").unwrap();
    list.set_last_module(b"ext4");
    list.push(0xffff_ffff_c000_0010, b't', b"ext4_read").unwrap();
    list.set_last_module(b"ext4");
    let bytes = if data.get(1).is_some_and(|b| b & 1 == 1) {
        pack_v2(&list, &V2Options::default()).unwrap().blob
    } else {
        pack(&list, TokenStrategy::Optimal).unwrap().blob
    };
    let blob = AlignedBlob::copy_from(&bytes);
    let m = Kallsyms::from_blob(blob.as_bytes(), None, None).unwrap();
    let opts = ResolveOptions {
        size: true,
        kaslr_from_sym: data.first() == Some(&b'K'),
        json: data.first() == Some(&b'J'),
        ..Default::default()
    };
    let mut r = Resolver::new(&m, opts);
    let mut out = Vec::new();
    r.run(data, &mut out).unwrap();
    let lines_in = data.split(|&b| b == b'\n').count();
    let lines_out = out.split(|&b| b == b'\n').count();
    assert!(opts.json || lines_out == lines_in || lines_out == lines_in + 1);
});
