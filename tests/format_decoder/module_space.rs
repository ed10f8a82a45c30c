//! §16 (`module_space`), from the document alone, as the rest of
//! `format_decoder`.

use super::common::*;
use super::{
    decode_lines, decode_v2_names, frames_at, pad8, resolved_frames, u32_at, u64_at, v2_section,
};

/// §16.1: (name, build-id, sections as (name, base, size)) per module, and
/// the inner blob.
type DecodedModules = (Vec<(Vec<u8>, Vec<u8>, Vec<(Vec<u8>, u64, u64)>)>, Vec<u8>);

fn decode_module_space(s: &[u8]) -> DecodedModules {
    let (nmods, nsects) = (u32_at(s, 0) as usize, u32_at(s, 4) as usize);
    let (pool_len, inner_len) = (u32_at(s, 8) as usize, u32_at(s, 12) as usize);
    let sects_at = 16 + 16 * nmods;
    let pool_at = sects_at + 24 * nsects;
    let pool = &s[pool_at..pool_at + pool_len];
    let inner_at = pad8(pool_at + pool_len);
    assert!(s[pool_at + pool_len..inner_at].iter().all(|&b| b == 0));
    assert_eq!(inner_at + inner_len, s.len());
    let str_at = |off: u32, len: usize| pool[off as usize..off as usize + len].to_vec();
    let mut mods = Vec::new();
    for i in 0..nmods {
        let r = 16 + 16 * i;
        let name = str_at(
            u32_at(s, r),
            u16::from_le_bytes([s[r + 4], s[r + 5]]) as usize,
        );
        let bid = str_at(
            u32_at(s, r + 8),
            u16::from_le_bytes([s[r + 6], s[r + 7]]) as usize,
        );
        let first = u32_at(s, r + 12) as usize;
        let end = if i + 1 < nmods {
            u32_at(s, r + 16 + 12) as usize
        } else {
            nsects
        };
        let sections = (first..end)
            .map(|k| {
                let q = sects_at + 24 * k;
                (
                    str_at(u32_at(s, q + 16), u32_at(s, q + 20) as usize),
                    u64_at(s, q),
                    u64_at(s, q + 8),
                )
            })
            .collect();
        mods.push((name, bid, sections));
    }
    (mods, s[inner_at..].to_vec())
}

#[test]
fn module_space_decoder_from_the_document_agrees_with_ksym_resolve() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let dir = scratch("modspace-doc");
    let mods = dir.join("mods");
    std::fs::create_dir_all(&mods).unwrap();
    std::fs::copy(root.join("kmod/ksym_test.ko"), mods.join("ksym_test.ko")).unwrap();
    let inl = root.join("lines/inl.elf");
    let args = [
        "--format",
        "v2",
        "--lines",
        inl.to_str().unwrap(),
        "--modules",
        mods.to_str().unwrap(),
    ];
    let blob = run_ok("ksym-pack", &args, b"");
    let (modules, inner) = decode_module_space(v2_section(&blob, 14));
    assert_eq!(modules.len(), 1);
    let (name, bid, sections) = &modules[0];
    assert_eq!(name, b"ksym_test");
    assert_eq!(bid.len(), 20);
    let names: Vec<&[u8]> = sections.iter().map(|s| &s.0[..]).collect();
    assert_eq!(
        names,
        [
            &b".text"[..],
            b".init.text",
            b".exit.text",
            b".text.unlikely"
        ]
    );
    // §16.2: the first module at 0x1000, sections ascending and disjoint.
    assert_eq!(sections[0].1, 0x1000);
    for w in sections.windows(2) {
        assert!(w[0].1 + w[0].2 <= w[1].1);
    }
    // The inner blob is an ordinary v2 blob (§9 to §15).
    let (syms, by_rank) = decode_v2_names(&inner);
    let l = decode_lines(v2_section(&inner, 13), &by_rank);
    let path = dir.join("b.v2");
    std::fs::write(&path, &blob).unwrap();
    let mut input = String::new();
    let mut want = Vec::new();
    for (addr, _, sym, module) in &syms {
        assert!(module.is_none(), "the inner blob has no module column");
        let sym = String::from_utf8_lossy(sym);
        let sec = sections
            .iter()
            .find(|s| s.1 <= *addr && *addr < s.1 + s.2)
            .expect("in a section");
        for off in [0u64, 1, 7] {
            if addr + off < sec.1 + sec.2 {
                // A size no offset here equals: `off == size` is a `%pB` return
                // address, decoded at ADDR - 1.
                input.push_str(&format!("[ 1.0]  {sym}+{off:#x}/0xffff [ksym_test]\n"));
                want.push(frames_at(&l, addr + off));
            }
        }
    }
    let got = resolved_frames(&path, input.as_bytes());
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        let w: Vec<_> = w
            .iter()
            .map(|f| (f.0.clone(), f.1.clone(), f.2, 0))
            .collect();
        assert_eq!(g, &w);
    }
}
