//! Arbitrary bytes as a `module_space` section (FORMAT.md §16), its inner
//! blob given the v2 magic, version and matching CRC32Cs (so the fuzzer
//! reaches the tables and the inner structure): parse must refuse or
//! accept without panic; on an accepted section every module, section,
//! name and address lookup stays in bounds, and when verify() passes,
//! each symbol is found by name in its module and by address.
#![no_main]

use ksym::blob::v2::layout::{MAGIC, MODSPACE_HEADER, MODSPACE_MODULE, MODSPACE_SECTION, VERSION};
use ksym::blob::v2::module_space::read::ModuleSpace;
use ksym::blob::v2::write::reseal;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut sec = data.to_vec();
    if sec.len() < MODSPACE_HEADER {
        return;
    }
    let u32_at = |b: &[u8], i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap()) as usize;
    let tables = MODSPACE_HEADER
        + u32_at(&sec, 0).saturating_mul(MODSPACE_MODULE)
        + u32_at(&sec, 4).saturating_mul(MODSPACE_SECTION)
        + u32_at(&sec, 8);
    let inner_at = tables.div_ceil(8).saturating_mul(8);
    if inner_at + 32 <= sec.len() {
        let inner = &mut sec[inner_at..];
        inner[..8].copy_from_slice(&MAGIC);
        inner[8..10].copy_from_slice(&VERSION.to_le_bytes());
        reseal(inner);
        let len = (sec.len() - inner_at) as u32;
        sec[12..16].copy_from_slice(&len.to_le_bytes());
    }
    let Ok(ms) = ModuleSpace::parse(&sec, 0) else { return };
    let sound = ms.verify().is_ok();
    let mut name = Vec::new();
    for m in ms.modules().take(64) {
        let found = ms.find_module(m.name).expect("every module is found by name");
        assert_eq!(found.index, m.index);
        for s in m.sections.clone().take(16) {
            let sec = ms.section(s).expect("a module's sections exist");
            for a in [sec.base, sec.base + sec.size / 2, sec.base + sec.size - 1] {
                assert_eq!(ms.section_at(a), Some(s));
                if let Some(h) = ms.lookup_address(a) {
                    assert_eq!(h.module.index, m.index);
                    assert!(h.hit.symbol.address >= sec.base && h.hit.symbol.address <= a);
                }
            }
        }
    }
    for s in ms.symbols().symbols().take(512) {
        name.clear();
        s.name.extend_into(&mut name);
        let Some(sec) = ms.section_at(s.address) else {
            assert!(!sound, "verify passed with a symbol outside every section");
            continue;
        };
        let m = ms.module_of_section(sec).expect("every section has a module");
        let found = ms.lookup_name_in(&m, &name);
        if sound {
            let f = found.expect("every symbol is found in its module");
            assert!(f.address <= s.address);
            let h = ms.lookup_address(s.address).expect("a symbol's address resolves");
            assert_eq!(h.hit.symbol.address, s.address);
        }
    }
    let _ = ms.lookup_address(0);
    let _ = ms.lookup_address(u64::MAX);
    let _ = ms.find_module(b"");
});
