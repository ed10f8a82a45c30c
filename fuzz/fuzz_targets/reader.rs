//! Arbitrary bytes as a blob: from_blob must refuse or accept without panic,
//! and every lookup on an accepted blob must stay in bounds and agree with a
//! linear scan.
#![no_main]

use ksym::blobfile::AlignedBlob;
use ksym::Kallsyms;
use ksym::blob::KallsymsMapped;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let blob = AlignedBlob::copy_from(data);
    // The same bytes as a reserved region: when it opens, its blob is a
    // prefix that opens alone and only zeros follow.
    if let Ok((k, pad)) = Kallsyms::from_region(blob.as_bytes(), None, None) {
        let len = data.len() - pad;
        assert!(data[len..].iter().all(|&b| b == 0));
        let alone = Kallsyms::from_blob(&blob.as_bytes()[..len], None, None);
        assert_eq!(alone.expect("the region's blob opens alone").len(), k.len());
    }
    let Ok(m) = KallsymsMapped::from_blob(blob.as_bytes(), None, None) else { return };
    let mut name = Vec::new();
    for (i, s) in m.symbols().enumerate() {
        name.clear();
        s.name.extend_into(&mut name);
        let by_name = m.lookup_name(&name).expect("every stored name is found");
        assert!(by_name.index <= i && by_name.name.eq_bytes(&name));
        for probe in [s.address, s.address.wrapping_add(1), s.address.wrapping_sub(1)] {
            if let Some(hit) = m.lookup_address(probe) {
                assert_eq!(hit.symbol.address + hit.offset, probe);
                assert!(hit.size.is_none_or(|sz| hit.offset < sz));
                // The first alias: nothing before it shares its address.
                assert!(hit.symbol.index == 0 || m.address(hit.symbol.index - 1) < hit.symbol.address);
            }
        }
    }
    let _ = m.lookup_name(b"");
    let _ = m.lookup_name(&[0xFF; 600]);
    let _ = m.lookup_address(u64::MAX);
    let _ = m.lookup_address(0);
    let _ = m.section_sizes();
});
