//! Arbitrary bytes as a JIT's perf map (`ksym-resolve --perf-map`): the
//! parser returns entries or an error naming a line, never panics; the
//! entries it keeps do not overlap, pack into a v2 blob that opens, and
//! each one's first and last byte are named by it, with its size (but for
//! names with a kernel meaning: `_etext` and the other text bounds,
//! `__pfx_` twins).
#![no_main]

use ksym::blob::Kallsyms;
use ksym::blob::v2::write::pack_v2;
use ksym::normalize::perf_map::parse;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let m = match parse(data) {
        Ok(m) => m,
        Err(e) => {
            assert!(e.starts_with("line ") || e.contains("name"), "{e}");
            return;
        }
    };
    let l = &m.list;
    for i in 1..l.len() {
        let end = l.address(i - 1) + l.size(i - 1).unwrap();
        assert!(end <= l.address(i), "entries {} and {i} overlap", i - 1);
    }
    if l.is_empty() {
        return;
    }
    let packed = pack_v2(l, &Default::default()).expect("kept entries pack");
    let (map, _) = Kallsyms::from_file_bytes(&packed.blob, None, None).expect("the blob opens");
    for i in 0..l.len() {
        // Names the blob format gives a kernel meaning (text bounds, a
        // `__pfx_` twin folded into its function) keep it.
        let name = l.name(i);
        if ksym::kernel::BOUND_NAMES.contains(&name) || name.starts_with(b"__pfx_") {
            continue;
        }
        let (a, size) = (l.address(i), l.size(i).unwrap());
        for probe in [a, a + size - 1] {
            let h = map.lookup_address(probe).expect("an entry's byte is named");
            assert_eq!((h.symbol.address, h.size), (a, Some(size)));
            assert!(h.symbol.name.eq_bytes(l.name(i)));
        }
    }
});
