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
        (Mode::X86_64, false) => {
            // After prefix words (`rep stos`, `cs nopw`) the mnemonic is
            // the operands' first word. One string, written once: a
            // `Code:` line has a row each.
            let mut out = String::with_capacity(text.len() + 8);
            out.push_str(m);
            let (last, ops) = match ops.split_once(' ') {
                Some((inner, rest)) if x86_prefix_word(m) => {
                    out.push(' ');
                    out.push_str(inner);
                    (inner, rest)
                }
                // A prefix word before a mnemonic without operands is
                // not padded: `repz ret`.
                None if x86_prefix_word(m) => {
                    out.push(' ');
                    out.push_str(ops);
                    return out;
                }
                _ => (m, ops),
            };
            while out.len() < 6 {
                out.push(' ');
            }
            out.push(' ');
            match x86_operands(last, ops) {
                Some(o) => unit_scale(&mut out, &o),
                None => unit_scale(&mut out, ops),
            }
            out
        }
        _ => format!("{m}\t{ops}"),
    }
}

/// objdump's words for the `prefixes` (the instruction's legacy and REX
/// prefix bytes) that 64-bit mode ignores, before iced's
/// text: a `cs`, `ds`, `es` or `ss` override is a word (`cs nopw
/// 0x0(%rax,%rax,1)`, `ds mov (%rax),%rax`), not iced's `%cs:` on the
/// operand, and each `66` after the first is `data16` (`data16 cs nopw`,
/// the padding compilers emit).
fn x86_prefix_words(prefixes: &[u8], text: String) -> String {
    // Most instructions have no prefix: the text as it is.
    if prefixes.is_empty() {
        return text;
    }
    let mut words = String::new();
    let extra_66 = prefixes
        .iter()
        .filter(|&&b| b == 0x66)
        .count()
        .saturating_sub(1);
    for _ in 0..extra_66 {
        words.push_str("data16 ");
    }
    let mut text = text;
    for (b, seg) in [(0x2e, "cs"), (0x3e, "ds"), (0x26, "es"), (0x36, "ss")] {
        if prefixes.contains(&b) {
            text = text.replacen(&format!("%{seg}:"), "", 1);
            words.push_str(seg);
            words.push(' ');
        }
    }
    words + &text
}

/// A prefix word iced writes before the mnemonic.
fn x86_prefix_word(w: &str) -> bool {
    matches!(
        w,
        "rep"
            | "repe"
            | "repz"
            | "repne"
            | "repnz"
            | "lock"
            | "cs"
            | "ds"
            | "es"
            | "ss"
            | "fs"
            | "gs"
            | "data16"
            | "addr32"
            | "xacquire"
            | "xrelease"
            | "notrack"
            | "bnd"
    ) || w.starts_with("rex")
}

/// True when no bytes after `bytes` could make its first instruction
/// valid: objdump's `(bad)`, not the `.byte` of a cut-off one. Decoded
/// again with each of a few 15-byte tails (the longest x86 instruction):
/// zeros, `e1` and `90` bytes, which complete a VEX prefix, and the
/// rest of an EVEX or a VEX `vmovups`.
fn x86_bad(bytes: &[u8]) -> bool {
    const TAILS: [[u8; 15]; 5] = [
        [0x00; 15],
        [0xe1; 15],
        [0x90; 15],
        [0xf1, 0x7c, 0x48, 0x10, 0xc0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        [0x10, 0xc0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    ];
    let n = bytes.len().min(15);
    TAILS.iter().all(|tail| {
        let mut padded = [0u8; 30];
        padded[..n].copy_from_slice(&bytes[..n]);
        padded[n..n + 15].copy_from_slice(tail);
        iced_x86::Decoder::new(64, &padded[..n + 15], iced_x86::DecoderOptions::NONE)
            .decode()
            .is_invalid()
    })
}

/// objdump's operands of string and port instructions: the segment of
/// `(%rdi)` (`%es:`) and `(%rsi)` (`%ds:`), and `(%dx)` for the port;
/// `None` for other instructions (their operands as iced wrote them).
fn x86_operands(mnemonic: &str, ops: &str) -> Option<String> {
    let base = mnemonic.trim_end_matches(['b', 'w', 'l', 'q']);
    let string = matches!(
        base,
        "lods" | "stos" | "scas" | "movs" | "cmps" | "ins" | "outs"
    ) && mnemonic.len() <= base.len() + 1;
    let port = string && matches!(base, "ins" | "outs") || matches!(mnemonic, "in" | "out");
    if !string && !port {
        return None;
    }
    let mut out = String::with_capacity(ops.len() + 8);
    for (k, op) in ops.split(',').enumerate() {
        if k > 0 {
            out.push(',');
        }
        match op {
            "%dx" if port => out.push_str("(%dx)"),
            "(%rdi)" | "(%edi)" if string => {
                out.push_str("%es:");
                out.push_str(op);
            }
            "(%rsi)" | "(%esi)" if string => {
                out.push_str("%ds:");
                out.push_str(op);
            }
            _ => out.push_str(op),
        }
    }
    Some(out)
}

/// AT&T memory operands with an index and no scale get objdump's `,1`:
/// `(%rcx,%rsi)` becomes `(%rcx,%rsi,1)` (iced's `always_show_scale`
/// would also write `(%rsi,)` where there is no index), appended to `out`.
fn unit_scale(out: &mut String, ops: &str) {
    let mut rest = ops;
    while let Some(open) = rest.find('(') {
        let Some(len) = rest[open..].find(')') else {
            break;
        };
        let inner = &rest[open + 1..open + len];
        out.push_str(&rest[..open + len]);
        let mut parts = inner.split(',');
        let (_, index, scale) = (parts.next(), parts.next(), parts.next());
        if scale.is_none() && index.is_some_and(|i| i.starts_with('%')) {
            out.push_str(",1");
        }
        out.push(')');
        rest = &rest[open + len + 1..];
    }
    out.push_str(rest);
}

thread_local! {
    /// The x86 formatter, set up once (a new one per instruction was most
    /// of a `Code:` line's cost).
    static GAS: std::cell::RefCell<iced_x86::GasFormatter> = std::cell::RefCell::new(gas());
}

/// iced's GNU formatter with objdump's (binutils 2.40) spellings.
fn gas() -> iced_x86::GasFormatter {
    use iced_x86::Formatter as _;
    let mut f = iced_x86::GasFormatter::new();
    let o = f.options_mut();
    o.set_uppercase_hex(false);
    o.set_branch_leading_zeros(false);
    o.set_leading_zeros(false);
    o.set_rip_relative_addresses(true);
    // binutils 2.40 spells: `$0x4`, not `$4`; `(%rcx,%rsi,1)`;
    // `0x0(%rax,%rax,1)` where a zero displacement is encoded.
    o.set_small_hex_numbers_in_decimal(false);
    o.set_show_zero_displacements(true);
    // An unused REX (`rex.R and $0x4,%al`), as objdump shows it.
    o.set_show_useless_prefixes(true);
    f
}

/// The row of the valid x86 instruction `ins` decoded from `bytes` at `ip`.
fn x86_text(
    f: &mut iced_x86::GasFormatter,
    ins: &iced_x86::Instruction,
    bytes: &[u8],
    ip: u64,
) -> Insn {
    use iced_x86::Formatter as _;
    let mut text = String::new();
    f.format(ins, &mut text);
    let own = &bytes[..ins.len()];
    let opcode_at = own.iter().take_while(|&&b| x86_prefix(b).is_some()).count();
    match own.get(opcode_at) {
        // Shifts and rotates by one: objdump leaves the count out.
        Some(0xd0 | 0xd1) => text = text.replacen("$0x1,", "", 1),
        // imul's three operands even when two are one register.
        Some(0x69 | 0x6b) if text.matches(',').count() == 1 => {
            let last = text.rsplit(',').next().unwrap_or_default().to_string();
            text = format!("{text},{last}");
        }
        _ => {}
    }
    // A REX before another prefix is ignored: its own row.
    if opcode_at > 1 && (0x40..=0x4f).contains(&own[0]) {
        return Insn {
            len: 1,
            text: x86_prefix(own[0]).unwrap_or("rex").to_string(),
        };
    }
    // A REX prefix with a bit the instruction does not use is a
    // word (`rex.R push %rax`, `rex.RX sbb %r8b,(%rax)`): the text
    // is the same without that bit (or, for a bare `rex`, without
    // the byte).
    if opcode_at > 0 && (0x40..=0x4f).contains(&own[opcode_at - 1]) {
        let rex = own[opcode_at - 1];
        let mut same = |bytes: &[u8]| {
            let mut d = iced_x86::Decoder::with_ip(64, bytes, ip, iced_x86::DecoderOptions::NONE);
            let other = d.decode();
            let mut t = String::new();
            f.format(&other, &mut t);
            !other.is_invalid() && other.len() == bytes.len() && t == text
        };
        let mut probe = own.to_vec();
        let unused_bit = [8u8, 4, 2, 1].iter().filter(|&&b| rex & b != 0).any(|&b| {
            probe[opcode_at - 1] = rex & !b;
            same(&probe)
        });
        probe.remove(opcode_at - 1);
        if unused_bit || (rex == 0x40 && same(&probe)) {
            text = format!("{} {text}", x86_prefix(rex).unwrap_or("rex"));
        }
    }
    let text = objdump_rep(x86_prefix_words(&own[..opcode_at], text));
    Insn {
        len: ins.len(),
        text: finish(Mode::X86_64, &text),
    }
}

/// objdump's names of the `f2`/`f3` prefix words, where iced writes
/// `repne`, `repe` and `rep`: `repnz` and `repz`, but `rep` before the
/// string instructions that only repeat (`rep movsq`, `rep stos`), as
/// binutils' i386-dis.c names them (`f3 c3` is `repz ret`).
fn objdump_rep(text: String) -> String {
    let words: Vec<&str> = text.split(' ').collect();
    let Some(m) = words.iter().position(|w| !x86_prefix_word(w)) else {
        return text;
    };
    // The string mnemonic with at most its size letter (not `movss`,
    // `movsbl` or `insertps`).
    let base = words[m]
        .strip_suffix(['b', 'w', 'l', 'q'])
        .unwrap_or(words[m]);
    let repeats_only = ["movs", "stos", "lods", "ins", "outs"]
        .iter()
        .any(|s| words[m] == *s || base == *s);
    let mut changed = false;
    let out: Vec<&str> = words
        .iter()
        .enumerate()
        .map(|(i, &w)| {
            let new = match w {
                _ if i >= m => w,
                "repne" => "repnz",
                "repe" => "repz",
                "rep" if !repeats_only => "repz",
                _ => w,
            };
            changed |= new != w;
            new
        })
        .collect();
    if changed { out.join(" ") } else { text }
}

/// Decodes the instruction at the start of `bytes`, located at `ip`.
/// Bytes that decode to nothing become objdump's placeholders (`(bad)`,
/// `.byte 0xNN`, `.inst 0x…`, `.2byte`), so the rest stays in step.
pub(in crate::resolve) fn decode(mode: Mode, bytes: &[u8], ip: u64) -> Insn {
    match mode {
        Mode::X86_64 => {
            let mut d = iced_x86::Decoder::with_ip(64, bytes, ip, iced_x86::DecoderOptions::NONE);
            let ins = d.decode();
            if ins.is_invalid() {
                // objdump prints prefixes before an opcode that is no
                // instruction as one row: `48 37  rex.W (bad)`, `66 48 37
                // data16 rex.W (bad)`; before a cut-off one, a row each.
                let k = bytes
                    .iter()
                    .take_while(|&&b| x86_prefix(b).is_some())
                    .count();
                if k > 0 && k < bytes.len() {
                    let mut rest =
                        iced_x86::Decoder::new(64, &bytes[k..], iced_x86::DecoderOptions::NONE);
                    if rest.decode().is_invalid() && x86_bad(&bytes[k..]) {
                        let mut text = String::new();
                        for p in bytes[..k].iter().filter_map(|&b| x86_prefix(b)) {
                            text.push_str(p);
                            text.push(' ');
                        }
                        text.push_str("(bad)");
                        return Insn { len: k + 1, text };
                    }
                }
                // A last byte whose opcode wants more (a ModRM, say) is
                // `.byte` to objdump, even where no more would do (`82`);
                // the opcodes 64-bit mode dropped are `(bad)` alone.
                const GONE: [u8; 19] = [
                    0x06, 0x07, 0x0e, 0x16, 0x17, 0x1e, 0x1f, 0x27, 0x2f, 0x37, 0x3f, 0x60, 0x61,
                    0xce, 0xd4, 0xd5, 0xd6, 0x9a, 0xea,
                ];
                // A VEX, EVEX or AMD XOP prefix the line ends before its
                // opcode: objdump runs out of bytes before it tells the
                // map is none (`c4 ea ff` at the end: `.byte 0xc4`).
                let xop = bytes.get(1).is_none_or(|b| matches!(b & 0x1f, 8..=10));
                let short_vex = match (bytes[0], bytes.len()) {
                    (0xc4, ..=3) | (0xc5, ..=2) | (0x62, ..=4) => true,
                    (0x8f, ..=3) => xop,
                    _ => false,
                };
                let cut = bytes.len() == 1 && !GONE.contains(&bytes[0]) || short_vex;
                let text = match x86_prefix(bytes[0]) {
                    Some(p) => p.to_string(),
                    None if !cut && x86_bad(bytes) => "(bad)".to_string(),
                    None => format!(".byte 0x{:x}", bytes[0]),
                };
                return Insn { len: 1, text };
            }
            GAS.with_borrow_mut(|f| x86_text(f, &ins, bytes, ip))
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
/// `disassemble_bytes`, without `--disassemble-zeroes`: its
/// `skip_zeroes` 8 and `skip_zeroes_at_end` 3): 8 or more anywhere (in
/// multiples of 4 unless they reach the end), and 1 or 2 that end the
/// bytes, each as one [`ZEROES`] entry; a last run of 3 to 7 is
/// disassembled.
pub(in crate::resolve) fn disassemble(mode: Mode, bytes: &[u8], ip: u64) -> Vec<(usize, Insn)> {
    let mut out = Vec::new();
    let mut at = 0;
    let mut it = super::thumb::ItBlock::default();
    while at < bytes.len() {
        let z = bytes[at..].iter().take_while(|&&b| b == 0).count();
        let at_end = at + z == bytes.len();
        let skip = if at_end { z } else { z & !3 };
        if z >= 8 || (at_end && (1..3).contains(&z)) {
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

    /// Rows as (offset, text), for comparison with objdump's.
    fn rows(bytes: &[u8]) -> Vec<(usize, String)> {
        disassemble(Mode::X86_64, bytes, 0)
            .into_iter()
            .map(|(o, i)| (o, i.text))
            .collect()
    }

    /// What binutils 2.40's `objdump -D -b binary -m i386:x86-64` printed
    /// for the same bytes (issue 33).
    #[test]
    fn zero_runs_and_bad_opcodes_as_objdump_prints_them() {
        let nop = (0, "nop".to_string());
        let dots = |o| (o, ZEROES.to_string());
        let add = |o| (o, "add    %al,(%rax)".to_string());
        // A last run of 1 or 2 zeros is skipped; 3 to 7 are decoded; 8 or
        // more are skipped.
        assert_eq!(rows(&[0x90, 0]), vec![nop.clone(), dots(1)]);
        assert_eq!(rows(&[0x90, 0, 0]), vec![nop.clone(), dots(1)]);
        assert_eq!(rows(&[0x90, 0, 0, 0]), vec![nop.clone(), add(1), dots(3)]);
        assert_eq!(
            rows(&[0x90, 0, 0, 0, 0, 0, 0, 0]),
            vec![nop.clone(), add(1), add(3), add(5), dots(7)]
        );
        assert_eq!(
            rows(&[0x90, 0, 0, 0, 0, 0, 0, 0, 0]),
            vec![nop.clone(), dots(1)]
        );
        assert_eq!(
            rows(&[0x48, 0x8b, 0x94, 0x24, 0x98, 0, 0]),
            [
                (0, "rex.W"),
                (1, ".byte 0x8b"),
                (2, "xchg   %eax,%esp"),
                (3, "and    $0x98,%al")
            ]
            .iter()
            .map(|&(o, t)| (o, t.to_string()))
            .chain([dots(5)])
            .collect::<Vec<_>>()
        );
        // Prefixes before an opcode that is none: one row.
        let t = |r: &[(usize, &str)]| {
            r.iter()
                .map(|&(o, t)| (o, t.to_string()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            rows(&[0x90, 0x48, 0x37, 0x90]),
            t(&[(0, "nop"), (1, "rex.W (bad)"), (3, "nop")])
        );
        assert_eq!(
            rows(&[0x66, 0x48, 0x37, 0x90]),
            t(&[(0, "data16 rex.W (bad)"), (3, "nop")])
        );
        assert_eq!(
            rows(&[0x48, 0x06, 0x90]),
            t(&[(0, "rex.W (bad)"), (2, "nop")])
        );
        // Before a cut-off instruction, a row each.
        assert_eq!(
            rows(&[0x66, 0x48, 0x8b]),
            t(&[(0, "data16"), (1, "rex.W"), (2, ".byte 0x8b")])
        );
        // A VEX prefix cut before its opcode is `.byte`; with the opcode
        // and a map that is none, `(bad)`.
        assert_eq!(
            rows(&[0x90, 0xc4, 0xea, 0xff]),
            t(&[
                (0, "nop"),
                (1, ".byte 0xc4"),
                (2, "(bad)"),
                (3, ".byte 0xff")
            ])
        );
        // AMD's XOP maps are 8 to 10; past them `8f` is `(bad)`.
        assert_eq!(
            rows(&[0x90, 0x8f, 0x88]),
            t(&[(0, "nop"), (1, ".byte 0x8f"), (2, ".byte 0x88")])
        );
        assert_eq!(
            rows(&[0x90, 0x8f, 0xfe]),
            t(&[(0, "nop"), (1, "(bad)"), (2, ".byte 0xfe")])
        );
        assert_eq!(
            rows(&[0x90, 0xc4, 0xea, 0xff, 0x10]),
            t(&[
                (0, "nop"),
                (1, "(bad)"),
                (2, "(bad)"),
                (3, "call   *(%rax)")
            ])
        );
        // f2/f3 as objdump (binutils 2.40) names them.
        assert_eq!(
            rows(&[0xf2, 0xfa, 0xf3, 0xfa, 0xf3, 0xc3, 0xf2, 0x90, 0xf3, 0x90]),
            t(&[
                (0, "repnz cli"),
                (2, "repz cli"),
                (4, "repz ret"),
                (6, "repnz nop"),
                (8, "pause")
            ])
        );
        assert_eq!(
            rows(&[0xf3, 0x48, 0xa5, 0xf2, 0xae, 0xf3, 0xa6, 0xf3, 0xaa]),
            t(&[
                (0, "rep movsq %ds:(%rsi),%es:(%rdi)"),
                (3, "repnz scas %es:(%rdi),%al"),
                (5, "repz cmpsb %es:(%rdi),%ds:(%rsi)"),
                (7, "rep stos %al,%es:(%rdi)")
            ])
        );
        // movsx is no string instruction: `repz`.
        assert_eq!(
            rows(&[0xf3, 0x0f, 0xbe, 0xc0]),
            t(&[(0, "repz movsbl %al,%eax")])
        );
    }
}
