//! The `Code:` decoder: the instructions of a `Code:` line's bytes, as GNU
//! objdump (binutils 2.40) prints them, by well-kept pure-Rust crates:
//! iced-x86 (x86, GNU `as` syntax), yaxpeax-arm (AArch64, ARM and
//! Thumb-2), disc-v (RISC-V, whose text follows objdump's). Where a crate
//! spells a mnemonic differently, `objdump_spelling` maps it, and
//! `thumb.rs` adds what Thumb-2 needs (IT blocks, `.n`/`.w`). Behind the
//! cargo feature `disasm`: without it `Code:` lines pass through as they
//! are.

use std::fmt::Write as _;

use yaxpeax_arch::{Decoder as _, LengthedInstruction as _, U8Reader};

use super::{Insn, Mode};

/// x86 prefixes that objdump prints on their own when no instruction
/// follows them.
fn x86_prefix(b: u8) -> Option<&'static str> {
    const REX: [&str; 16] = [
        "rex", "rex.B", "rex.X", "rex.XB", "rex.R", "rex.RB", "rex.RX", "rex.RXB", "rex.W",
        "rex.WB", "rex.WX", "rex.WXB", "rex.WR", "rex.WRB", "rex.WRX", "rex.WRXB",
    ];
    Some(match b {
        0x40..=0x4f => REX[usize::from(b - 0x40)],
        0x26 => "es",
        0x2e => "cs",
        0x36 => "ss",
        0x3e => "ds",
        0x64 => "fs",
        0x65 => "gs",
        0x66 => "data16",
        0x67 => "addr32",
        0xf0 => "lock",
        0xf2 => "repnz",
        0xf3 => "repz",
        _ => return None,
    })
}

/// Mnemonics the crates spell otherwise than GNU objdump (binutils 2.40).
fn objdump_spelling(mode: Mode, m: &str) -> Option<&'static str> {
    Some(match (mode, m) {
        (Mode::X86_64, "pushq") => "push",
        (Mode::X86_64, "jmpq") => "jmp",
        (Mode::X86_64, "callq") => "call",
        (Mode::X86_64, "retq") => "ret",
        (Mode::X86_64, "iretl") => "iret",
        (Mode::X86_64, "lretl") => "lret",
        // `d0 /6` and kin: objdump names the unofficial encoding `shl`.
        (Mode::X86_64, "sal") => "shl",
        (Mode::X86_64, "salb") => "shlb",
        (Mode::X86_64, "salw") => "shlw",
        (Mode::X86_64, "sall") => "shll",
        (Mode::X86_64, "salq") => "shlq",
        (Mode::Arm64, "b.hs") => "b.cs",
        (Mode::Arm64, "b.lo") => "b.cc",
        _ => return None,
    })
}

/// Replaces the mnemonic (the text up to the first blank) by objdump's
/// spelling, and separates it from the operands with a tab (RISC).
fn finish(mode: Mode, text: &str) -> String {
    let (m, ops) = match text.find(' ') {
        Some(i) => (&text[..i], text[i..].trim_start()),
        None => (text, ""),
    };
    let m = objdump_spelling(mode, m).unwrap_or(m);
    match (mode, ops.is_empty()) {
        (_, true) => m.to_string(),
        (Mode::X86_64, false) => format!("{m:<6} {ops}"),
        _ => format!("{m}\t{ops}"),
    }
}

/// Decodes the instruction at the start of `bytes`, located at `ip`.
/// Bytes that decode to nothing become objdump's placeholders (`(bad)`,
/// `.byte 0xNN`, `.inst 0x…`, `.2byte`), so the rest stays in step.
pub(in crate::resolve) fn decode(mode: Mode, bytes: &[u8], ip: u64) -> Insn {
    match mode {
        Mode::X86_64 => {
            use iced_x86::Formatter as _;
            let mut d = iced_x86::Decoder::with_ip(64, bytes, ip, iced_x86::DecoderOptions::NONE);
            let ins = d.decode();
            if ins.is_invalid() {
                let text = match (x86_prefix(bytes[0]), d.last_error()) {
                    (Some(p), _) => p.to_string(),
                    (None, iced_x86::DecoderError::NoMoreBytes) => {
                        format!(".byte 0x{:x}", bytes[0])
                    }
                    (None, _) => "(bad)".to_string(),
                };
                return Insn { len: 1, text };
            }
            let mut f = iced_x86::GasFormatter::new();
            let o = f.options_mut();
            o.set_uppercase_hex(false);
            o.set_branch_leading_zeros(false);
            o.set_leading_zeros(false);
            o.set_rip_relative_addresses(true);
            let mut text = String::new();
            f.format(&ins, &mut text);
            Insn {
                len: ins.len(),
                text: finish(mode, &text),
            }
        }
        Mode::Arm64 => {
            let d = yaxpeax_arm::armv8::a64::InstDecoder::default();
            if bytes.len() < 4 {
                return short(bytes);
            }
            let text = match d.decode(&mut U8Reader::new(&bytes[..4])) {
                Ok(i) => finish(mode, &i.to_string()),
                Err(_) => {
                    let w = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
                    format!(".inst\t0x{w:08x} ; undefined")
                }
            };
            Insn { len: 4, text }
        }
        Mode::Arm | Mode::Thumb => {
            let d = if mode == Mode::Arm {
                yaxpeax_arm::armv7::InstDecoder::default()
            } else {
                yaxpeax_arm::armv7::InstDecoder::default_thumb()
            };
            // yaxpeax-arm 0.5 has no ARM-state `udf`, the instruction ARM's
            // BUG() traps with (`0xe7f001f2`, arch/arm/include/asm/bug.h).
            if mode == Mode::Arm && bytes.len() >= 4 {
                let w = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
                if w & 0xfff0_00f0 == 0xe7f0_00f0 {
                    let imm = ((w >> 4) & 0xfff0) | (w & 0xf);
                    return Insn {
                        len: 4,
                        text: format!("udf\t#{imm}"),
                    };
                }
                // It panics on the register pair of an UNPREDICTABLE
                // doubleword load or store whose first register is r15
                // (LDRD, STRD, LDREXD, STREXD: "register number out of
                // range"; found by fuzz/fuzz_targets/reports.rs).
                if unpredictable_pair(w) {
                    return Insn {
                        len: 4,
                        text: format!(".word\t0x{w:08x}"),
                    };
                }
            }
            match d.decode(&mut U8Reader::new(bytes)) {
                Ok(i) => Insn {
                    len: i.len().to_const() as usize,
                    text: finish(mode, &i.to_string()),
                },
                Err(_) if mode == Mode::Thumb && bytes.len() >= 2 => Insn {
                    len: 2,
                    text: format!(".short\t0x{:04x}", u16::from_le_bytes([bytes[0], bytes[1]])),
                },
                Err(_) if bytes.len() >= 4 => Insn {
                    len: 4,
                    text: format!(
                        ".word\t0x{:08x}",
                        u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
                    ),
                },
                Err(_) => short(bytes),
            }
        }
        Mode::Riscv64 => match disc_v::decode_bytes(disc_v::Isa::Rv64, ip, bytes) {
            Some(i) => Insn {
                len: i.length(),
                text: finish(mode, &i.to_string()),
            },
            None => short(bytes),
        },
    }
}

/// True for an ARM-state doubleword load or store (the extra load/store
/// and synchronization spaces: bits 27..25 = 000, bits 7..4 = 1001, 1101 or
/// 1111) naming r15 as the first of its register pair, which needs r16.
fn unpredictable_pair(w: u32) -> bool {
    let op2 = (w >> 4) & 0xf;
    w >> 28 != 0xf
        && (w >> 25) & 7 == 0
        && matches!(op2, 0b1001 | 0b1101 | 0b1111)
        && ((w >> 12) & 0xf == 0xf || w & 0xf == 0xf)
}

/// The bytes of a truncated last instruction, one row.
fn short(bytes: &[u8]) -> Insn {
    let mut text = String::from(".byte\t");
    for (k, b) in bytes.iter().enumerate() {
        let _ = write!(text, "{}0x{b:02x}", if k > 0 { "," } else { "" });
    }
    Insn {
        len: bytes.len(),
        text,
    }
}

/// The text of a run of zero bytes that objdump skips.
pub(in crate::resolve) const ZEROES: &str = "...";

/// The instructions of `bytes` from offset 0, as (offset, instruction).
/// Runs of zero bytes are skipped as objdump skips them (binutils'
/// `disassemble_bytes`, without `--disassemble-zeroes`): 3 or more at the
/// end, 8 or more (in multiples of 4) elsewhere, each as one [`ZEROES`]
/// entry.
pub(in crate::resolve) fn disassemble(mode: Mode, bytes: &[u8], ip: u64) -> Vec<(usize, Insn)> {
    let mut out = Vec::new();
    let mut at = 0;
    let mut it = super::thumb::ItBlock::default();
    while at < bytes.len() {
        let z = bytes[at..].iter().take_while(|&&b| b == 0).count();
        let skip = if at + z == bytes.len() { z } else { z & !3 };
        if (at + z == bytes.len() && z >= 3) || z >= 8 {
            out.push((
                at,
                Insn {
                    len: skip,
                    text: ZEROES.to_string(),
                },
            ));
            at += skip;
            continue;
        }
        let mut i = decode(mode, &bytes[at..], ip.wrapping_add(at as u64));
        let len = i.len.max(1);
        if mode == Mode::Thumb && !i.text.starts_with('.') {
            let (m, ops) = i.text.split_once('\t').unwrap_or((&i.text, ""));
            let m = super::thumb::spelling(m, &bytes[at..], i.len, &mut it);
            i.text = if ops.is_empty() {
                m
            } else {
                format!("{m}\t{ops}")
            };
        }
        out.push((at, i));
        at += len;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resolve::code::{Arch, mode};

    #[test]
    fn each_instruction_set_decodes_as_objdump_spells_it() {
        let x = disassemble(Mode::X86_64, &[0x48, 0x89, 0xe5, 0x0f, 0x0b, 0x48], 0);
        let t: Vec<_> = x.iter().map(|(o, i)| (*o, i.text.as_str())).collect();
        assert_eq!(t, vec![(0, "mov    %rsp,%rbp"), (3, "ud2"), (5, "rex.W")]);
        let a = disassemble(Mode::Arm64, &[0x00, 0x00, 0x21, 0xd4], 0);
        assert_eq!(a[0].1.text, "brk\t#0x800");
        let r = disassemble(Mode::Riscv64, &[0x02, 0x90, 0x82, 0x80], 0);
        let t: Vec<_> = r.iter().map(|(_, i)| i.text.as_str()).collect();
        assert_eq!(t, vec!["ebreak", "ret"]);
        // An STRD of r15 and "r16": yaxpeax-arm would panic.
        let w = disassemble(Mode::Arm, &0x1101_fef0u32.to_le_bytes(), 0);
        assert_eq!(w[0].1.text, ".word\t0x1101fef0");
        let th = disassemble(Mode::Thumb, &[0x02, 0xde], 0);
        assert_eq!(th[0].1.len, 2);
        assert_eq!(mode(None, 4), None);
        assert_eq!(mode(Some(Arch::Arm), 4), Some(Mode::Thumb));
    }
}
