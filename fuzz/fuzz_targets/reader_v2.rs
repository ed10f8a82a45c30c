//! Arbitrary bytes as a v2 blob, with the magic, version and every CRC32C
//! made to match (so the fuzzer reaches the structure behind the checks):
//! from_blob must refuse or accept without panic, and from_blob_intact
//! (no shape checks) accept what from_blob accepts and more, its lookups
//! ending without panic; on a blob from_blob accepts every
//! lookup, the symbol walk and verify() must stay in bounds; when verify()
//! passes, lookups must agree with the symbols they came from.
#![no_main]

use ksym::Kallsyms;
use ksym::blob::v2::KallsymsV2;
use ksym::blob::v2::layout::{MAGIC, VERSION};
use ksym::blob::v2::write::reseal;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut blob = data.to_vec();
    if blob.len() < 32 {
        return;
    }
    blob[..8].copy_from_slice(&MAGIC);
    blob[8..10].copy_from_slice(&VERSION.to_le_bytes());
    reseal(&mut blob);
    // The same bytes as a reserved region: when it opens, its blob is a
    // prefix that opens alone and only zeros follow.
    if let Ok((k, pad)) = Kallsyms::from_region(&blob, None, None) {
        let len = blob.len() - pad;
        assert!(blob[len..].iter().all(|&b| b == 0));
        let alone = Kallsyms::from_blob(&blob[..len], None, None);
        assert_eq!(alone.expect("the region's blob opens alone").len(), k.len());
    }
    // Opened without the shape checks, as a kernel's reader opens it:
    // lookups must still end without a panic, whatever they answer.
    if let Ok(v) = KallsymsV2::from_blob_intact(&blob, None, None) {
        let shaped = v.check_shapes().is_ok();
        assert_eq!(shaped, KallsymsV2::from_blob(&blob, None, None).is_ok());
        for s in v.symbols().take(4096) {
            let _ = v.lookup_address(s.address.wrapping_add(1));
        }
        let _ = v.lookup_address(u64::MAX);
        let _ = v.lookup_name(b"x");
        // Either `segments` form, whatever its count says.
        let _ = v.load_segments().count();
    }
    let Ok(v) = KallsymsV2::from_blob(&blob, None, None) else {
        return;
    };
    let sound = v.verify().is_ok();
    // The shape checks proved `segments` holds exactly its count's entries.
    if let Some(s) = v
        .sections()
        .find(|s| s.id == ksym::blob::v2::layout::SectionId::Segments)
    {
        let count = u32::from_le_bytes(blob[s.offset..s.offset + 4].try_into().unwrap());
        assert_eq!(v.load_segments().count(), count as usize);
    }
    let mut name = Vec::new();
    for s in v.symbols().take(4096) {
        name.clear();
        s.name.extend_into(&mut name);
        let found = v.lookup_name(&name);
        if sound {
            let f = found.expect("every stored name is found");
            assert!(f.index <= s.index && f.name.eq_bytes(&name));
        }
        for probe in [
            s.address,
            s.address.wrapping_add(1),
            s.address.wrapping_sub(1),
        ] {
            if let Some(hit) = v.lookup_address(probe) {
                if sound {
                    assert_eq!(hit.symbol.address.wrapping_add(hit.offset), probe);
                    assert!(hit.size.is_none_or(|sz| hit.offset < sz));
                }
            }
        }
    }
    let _ = v.lookup_name(b"");
    let _ = v.lookup_name(b"__pfx_x");
    let _ = v.lookup_name_all(&[0xFF; 300]).count();
    let _ = v.lookup_address(u64::MAX);
    let _ = v.lookup_address(0);
});
