//! `Code:` lines against GNU objdump: every `Code:` line of the golden
//! reports (tests/golden/reports*.in) is disassembled by `ksym-resolve
//! --json` and by the objdump of its architecture (`objdump -D -b binary`,
//! as scripts/decodecode runs it), and the two must agree on instruction
//! boundaries, bytes and mnemonics.
//!
//! Spellings the comparison treats as one, each a known difference of
//! binutils 2.40 (Debian 12), not of the instruction:
//! - x86: a segment or operand-size prefix that objdump prints as a word
//!   of its own before the mnemonic (`cs nopw`);
//! - RISC-V: binutils 2.40 names compressed immediate instructions by
//!   their register form (`c.addi4spn` as `add`, `c.slli` as `sll`);
//!   binutils 2.41 and disc-v name them `addi`, `slli`.
//!
//! The cross objdumps come from Debian's binutils-aarch64-linux-gnu,
//! -arm-linux-gnueabihf and -riscv64-linux-gnu (`.ci/run` installs them);
//! where one is missing the test says SKIPPED for that architecture,
//! except under `CI=true`, where it fails.

mod common;
use common::disasm::{mnemonic, objdump, same};
use common::*;
use std::path::Path;

#[test]
fn code_lines_agree_with_objdump() {
    let ci = std::env::var_os("CI").is_some_and(|v| v == "true");
    let dir = scratch("code-lines-blob");
    let blob = dir.join("k.bin");
    let kallsyms = sample("kallsyms-6.18-sample.txt.xz");
    std::fs::write(
        &blob,
        run_ok("ksym-pack", &[], &run_ok("ksym-filter", &[], &kallsyms)),
    )
    .unwrap();
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut compared = 0;
    let mut skipped = std::collections::BTreeSet::new();
    for input in ["reports.in", "reports-arch.in"] {
        let text = std::fs::read(golden.join(input)).unwrap();
        let out = run_ok("ksym-resolve", &["--json", blob.to_str().unwrap()], &text);
        let src: Vec<&str> = std::str::from_utf8(&text).unwrap().lines().collect();
        for line in lines(&out) {
            let v: serde_json::Value = serde_json::from_slice(line).unwrap();
            let Some(insns) = v["instructions"].as_array() else {
                continue;
            };
            let arch = v["arch"].as_str().unwrap();
            let code_line = src[v["line"].as_u64().unwrap() as usize - 1];
            // Half-words on an ARM report are Thumb-2.
            let width = code_line
                .rsplit(' ')
                .next()
                .unwrap()
                .trim_matches(['(', ')', '<', '>'])
                .len();
            let thumb = arch == "arm" && width == 4;
            let (tool, machine) = match arch {
                "x86_64" => ("objdump", "i386:x86-64"),
                "arm64" => ("aarch64-linux-gnu-objdump", "aarch64"),
                "arm" => ("arm-linux-gnueabihf-objdump", "arm"),
                "riscv64" => ("riscv64-linux-gnu-objdump", "riscv:rv64"),
                a => panic!("unexpected arch {a}"),
            };
            let bytes: Vec<u8> = insns
                .iter()
                .flat_map(|i| {
                    let h = i["bytes"].as_str().unwrap();
                    (0..h.len() / 2)
                        .map(|k| u8::from_str_radix(&h[2 * k..2 * k + 2], 16).unwrap())
                        .collect::<Vec<_>>()
                })
                .collect();
            let Some(theirs) = objdump(tool, machine, thumb, &bytes) else {
                assert!(!ci, "{tool} is missing under CI=true");
                skipped.insert(tool);
                continue;
            };
            // objdump stops short of a truncated last instruction.
            let ours: Vec<(usize, String, String)> = insns
                .iter()
                .map(|i| {
                    let t = i["text"].as_str().unwrap();
                    (
                        i["offset"].as_u64().unwrap() as usize,
                        i["bytes"].as_str().unwrap().to_string(),
                        mnemonic(t),
                    )
                })
                .filter(|(o, ..)| {
                    theirs.iter().any(|t| t.0 == *o) || *o < theirs.last().map_or(0, |t| t.0)
                })
                .collect();
            assert_eq!(
                ours.iter().map(|o| o.0).collect::<Vec<_>>(),
                theirs.iter().map(|t| t.0).collect::<Vec<_>>(),
                "{input}: boundaries of `{code_line}`"
            );
            for (o, t) in ours.iter().zip(&theirs) {
                // objdump shows words as values; ours are memory order.
                let mut ob: Vec<String> = (0..o.1.len() / 2)
                    .map(|k| o.1[2 * k..2 * k + 2].to_string())
                    .collect();
                if arch != "x86_64" {
                    let unit = if !thumb && t.1.len() == 8 { 4 } else { 2 };
                    ob = ob
                        .chunks(unit)
                        .flat_map(|c| c.iter().rev().cloned().collect::<Vec<_>>())
                        .collect();
                }
                assert_eq!(
                    ob.concat(),
                    t.1,
                    "{input}: bytes at {:#x} of `{code_line}`",
                    o.0
                );
                assert!(
                    same(arch, o.1.len() / 2, &o.2, &t.2),
                    "{input}: at {:#x} of `{code_line}`: ksym `{}`, objdump `{}`",
                    o.0,
                    o.2,
                    t.2
                );
                compared += 1;
            }
        }
    }
    for tool in &skipped {
        eprintln!("SKIPPED: {tool} is not installed (apt-get install the cross binutils)");
    }
    assert!(compared >= 40, "only {compared} instructions compared");
}

/// A `Code:` line pasted alone (no `RIP:` line, so no fault address): as
/// decodecode runs objdump, each view counts addresses from its own first
/// byte, so a branch after the trapping byte targets another offset in
/// each. The view from the trapping instruction equals objdump's on the
/// bytes from `<..>`, branch target included.
#[test]
fn a_lone_code_line_s_views_count_from_their_own_first_byte() {
    let line = "Code: 48 89 df e8 00 00 00 00 <48> 8b 43 08 83 f8 01 0f 86 52 03 00 00 89 d1 c3\n";
    let dir = scratch("code-lone");
    let blob = dir.join("k.bin");
    std::fs::write(&blob, run_ok("ksym-pack", &[], b"0000000000001000 T f\n")).unwrap();
    let out = run_ok(
        "ksym-resolve",
        &["--arch", "x86_64", blob.to_str().unwrap()],
        line.as_bytes(),
    );
    let out = String::from_utf8(out).unwrap();
    let row = |l: &str| {
        let (off, rest) = l.trim_start().split_once(":\t")?;
        let (hex, text) = rest.split_once('\t')?;
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        Some((
            off.trim_end_matches('*').to_string(),
            hex.split_whitespace().collect::<String>(),
            text,
        ))
    };
    let ours: Vec<_> = out
        .split("Code starting with the faulting instruction")
        .nth(1)
        .expect("the view from the trapping instruction")
        .lines()
        .filter_map(row)
        .collect();
    let bytes: Vec<u8> = line[line.find('<').unwrap()..]
        .split_whitespace()
        .map(|h| u8::from_str_radix(h.trim_matches(['<', '>']), 16).unwrap())
        .collect();
    let f = dir.join("from-trap.bin");
    std::fs::write(&f, &bytes).unwrap();
    let theirs = tool(
        "objdump",
        &[
            "-D",
            "-b",
            "binary",
            "-m",
            "i386:x86-64",
            f.to_str().unwrap(),
        ],
    );
    let theirs: Vec<_> = theirs.lines().filter_map(row).collect();
    assert_eq!(ours, theirs, "{out}");
    assert!(ours.iter().any(|r| r.2 == "jbe 0x35f"), "{ours:?}");
}
