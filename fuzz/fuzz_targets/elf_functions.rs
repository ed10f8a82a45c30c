//! Arbitrary bytes as a user-space binary (`ksym-pack --elf`): reading its
//! function symbols and load segments must return them or an error naming
//! the file, never panic. Accepted symbols pack into a v2 blob with sizes
//! and segments that opens; perf's file offsets and a process's mappings
//! (from the same bytes) map through it without panicking, and every
//! address found inside the binary's text is named by a row whose size
//! covers it or by nothing.
#![no_main]

use std::path::Path;

use ksym::blob::Kallsyms;
use ksym::blob::v2::write::{V2Options, pack_v2};
use ksym::elf::functions::functions_from_bytes;
use ksym::normalize::maps::{Mapping, load_bias};
use ksym::normalize::perf::file_offset_space;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let f = match functions_from_bytes(data, Path::new("fuzz.elf")) {
        Ok(f) => f,
        Err(e) => {
            assert!(e.starts_with("fuzz.elf: "), "{e}");
            return;
        }
    };
    // Mappings as /proc/PID/maps would show the executable segments.
    let maps: Vec<Mapping> = f
        .segments
        .iter()
        .filter(|s| s.flags & 1 != 0)
        .map(|s| {
            let base = 0x5555_0000_0000u64;
            let start = base.wrapping_add(s.vaddr & !0xfff);
            Mapping {
                range: start..start.saturating_add(s.memsz),
                exec: true,
                offset: s.offset & !0xfff,
                path: b"/fuzz.elf".to_vec(),
            }
        })
        .collect();
    let refs: Vec<&Mapping> = maps.iter().collect();
    let _ = load_bias(&refs, &f.segments);
    let space = file_offset_space(&f.segments, b"/fuzz.elf");
    let opts = V2Options {
        segments: f.segments.clone(),
        ..V2Options::default()
    };
    // The writer refuses what it cannot store (a NUL in a name, say).
    let Ok(packed) = pack_v2(&f.list, &opts) else {
        return;
    };
    let map = Kallsyms::from_blob(&packed.blob, None, None).expect("a packed blob opens");
    let Kallsyms::V2(v) = &map else {
        panic!("--elf packs v2")
    };
    assert_eq!(v.load_segments().count(), f.segments.len());
    let Some(space) = space else { return };
    for r in space.ranges.iter().take(4) {
        for off in [
            r.start,
            r.start.wrapping_add(r.end.wrapping_sub(r.start) / 2),
            r.end.wrapping_sub(1),
        ] {
            let addr = off.wrapping_sub(space.bias);
            if let Some(h) = map.lookup_address(addr) {
                assert_eq!(h.symbol.address.wrapping_add(h.offset), addr);
                assert!(
                    h.size.is_none_or(|s| h.offset < s),
                    "{addr:#x} past its row"
                );
            }
        }
    }
});
