//! Names for an x86-64 binary's PLT stubs, `NAME@plt`, as objdump and
//! perf make them up (a stub has no symbol of its own, and a profile's
//! sampled instruction is in one now and then). As BFD's
//! `elf_x86_64_get_synthetic_symtab` does, each stub's indirect jump
//! (`jmp *disp32(%rip)`, `ff 25`, with or without an `endbr64` and a `bnd`
//! prefix) gives the GOT slot it jumps through, and the dynamic
//! relocation of that slot (`R_X86_64_JUMP_SLOT`, or `R_X86_64_GLOB_DAT`
//! for `.plt.got`) names its function: no stub layout is assumed, so
//! lazy `.plt`, IBT's `.plt.sec` and `.plt.got` read alike, and a stub
//! whose slot has no named relocation (`.plt`'s first entry) gets none.

use std::collections::HashMap;

use object::{Object, ObjectSection, ObjectSymbol, ObjectSymbolTable, RelocationTarget};

/// The stub sections and their entry sizes, in bytes (without IBT).
const STUBS: [(&str, u64); 3] = [(".plt", 16), (".plt.sec", 16), (".plt.got", 8)];

/// `(address, size, NAME@plt)` of each PLT stub of `obj` whose GOT slot a
/// dynamic relocation names, in address order; empty for other machines,
/// a binary without a PLT, or one whose PLT the file does not hold (a
/// separate debug file's is `SHT_NOBITS`).
pub fn plt_stubs<'d, R: object::ReadRef<'d>>(
    obj: &object::File<'d, R>,
) -> Vec<(u64, u64, Vec<u8>)> {
    if obj.architecture() != object::Architecture::X86_64 {
        return Vec::new();
    }
    let (Some(relocs), Some(dynsym)) = (obj.dynamic_relocations(), obj.dynamic_symbol_table())
    else {
        return Vec::new();
    };
    // GOT slot address → the function it holds.
    let mut slots: HashMap<u64, Vec<u8>> = HashMap::new();
    for (offset, r) in relocs {
        let object::RelocationFlags::Elf { r_type } = r.flags() else {
            continue;
        };
        let RelocationTarget::Symbol(i) = r.target() else {
            continue;
        };
        if !matches!(
            r_type,
            object::elf::R_X86_64_JUMP_SLOT | object::elf::R_X86_64_GLOB_DAT
        ) {
            continue;
        }
        if let Some(name) = dynsym
            .symbol_by_index(i)
            .ok()
            .and_then(|s| s.name_bytes().ok())
        {
            let name = name.split(|&b| b == b'@').next().unwrap_or(name);
            if !name.is_empty() {
                slots.insert(offset, name.to_vec());
            }
        }
    }
    let mut out = Vec::new();
    for (section, entry) in STUBS {
        let Some(sec) = obj.section_by_name(section) else {
            continue;
        };
        let Ok(data) = sec.data() else { continue };
        // With IBT each `.plt.got` stub starts with `endbr64` and takes 16.
        let entry = match data.starts_with(&[0xf3, 0x0f, 0x1e, 0xfa]) {
            true => 16,
            false => entry,
        };
        let stubs = data.chunks_exact(entry as usize);
        for (at, stub) in stub_addresses(sec.address(), stubs.len(), entry).zip(stubs) {
            let Some(p) = stub.windows(2).position(|w| w == [0xff, 0x25]) else {
                continue;
            };
            let Some(disp) = stub.get(p + 2..p + 6) else {
                continue;
            };
            let disp = i32::from_le_bytes([disp[0], disp[1], disp[2], disp[3]]);
            // RIP-relative: from the end of the 6-byte jump.
            let slot = at
                .wrapping_add(p as u64 + 6)
                .wrapping_add(disp as i64 as u64);
            if let Some(name) = slots.get(&slot) {
                let mut n = name.clone();
                n.extend_from_slice(b"@plt");
                out.push((at, entry, n));
            }
        }
    }
    out.sort();
    out
}

/// The address of each of `n` stubs of `entry` bytes from `base`, as far
/// as the address space holds them whole: a forged section address may
/// leave no room for some, and those name nothing.
fn stub_addresses(base: u64, n: usize, entry: u64) -> impl Iterator<Item = u64> {
    (0..n as u64).map_while(move |k| {
        let end = (k + 1)
            .checked_mul(entry)
            .and_then(|e| base.checked_add(e))?;
        Some(end - entry)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stubs are where the section puts them, as far as the address space
    /// holds them whole.
    #[test]
    fn stubs_past_the_address_space_are_none() {
        let got: Vec<u64> = stub_addresses(0x1000, 3, 16).collect();
        assert_eq!(got, [0x1000, 0x1010, 0x1020]);
        let top = u64::MAX - 0x30;
        let got: Vec<u64> = stub_addresses(top, 400, 16).collect();
        assert_eq!(got, [top, top + 16, top + 32]);
        assert_eq!(stub_addresses(u64::MAX, 2, 8).count(), 0);
    }

    /// A `.plt` whose forged address leaves no room for its stubs names
    /// those it has room for, without overflowing (found by fuzz target
    /// `elf_functions` after 2.7 million runs; its input is kept in the
    /// corpus). The old sum panics here in a debug build; in a release
    /// build, which wraps, the test above is the one that fails.
    #[test]
    fn a_forged_plt_address_does_not_overflow() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fuzz/corpus/elf_functions/regression-plt-address-overflow"
        );
        let data = std::fs::read(path).unwrap();
        let obj = object::File::parse(&data[..]).unwrap();
        let stubs = plt_stubs(&obj);
        assert!(stubs.iter().all(|s| s.0.checked_add(s.1).is_some()));
    }
}
