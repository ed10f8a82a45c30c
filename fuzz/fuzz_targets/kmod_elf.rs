//! Arbitrary bytes as a kernel module (`.ko`): reading its name, sections
//! and symbols, relocating its DWARF with the module-space layout and
//! sweeping it (FORMAT.md §16.4) must return a module or an error naming
//! it, never panic; an accepted module packs into a module_space section
//! that opens and passes the deep check.
#![no_main]

use std::path::Path;

use ksym::blob::v2::module_space::read::ModuleSpace;
use ksym::blob::v2::module_space::write::encode_module_space;
use ksym::blob::v2::write::{V2Options, pack_v2};
use ksym::elf::kmod::{module_from_bytes, place};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let path = Path::new("fuzz.ko");
    let m = match module_from_bytes(data, path, true) {
        Ok(m) => m,
        Err(e) => {
            assert!(e.to_string().starts_with("fuzz.ko: "), "{e}");
            return;
        }
    };
    let Ok(set) = place(vec![m], Vec::new()) else { return };
    let opts = V2Options {
        lines: set.lines.map(|t| (t, false)),
        ..V2Options::default()
    };
    // The writer refuses what it cannot store (a NUL in a name, say).
    let Ok(inner) = pack_v2(&set.symbols, &opts) else { return };
    let Ok(sec) = encode_module_space(&set.entries, &inner.blob) else { return };
    let ms = ModuleSpace::parse(&sec, 0).expect("a packed module space opens");
    ms.verify().expect("a packed module space passes the deep check");
});
