//! `Code:` lines of kernel reports: their bytes read in the form each
//! architecture prints them, and disassembled in `scripts/decodecode`'s
//! layout (an `All code` block with the trapping instruction starred,
//! then the code from the faulting instruction on).
//!
//! Forms (the kernel's `show_opcodes`, `dump_kernel_instr`,
//! `dump_instr`):
//! - x86: bytes, the trapping one in angle brackets: `48 89 e5 <0f> 0b`;
//! - arm64: 32-bit words, the trapping one in parentheses:
//!   `d503233f 910003fd (d4210000)`;
//! - arm: words (ARM) or half-words (Thumb-2): `e3a00000 (e7f001f2)`,
//!   `4620 f7ff (de02)`;
//! - riscv64: 16-bit parcels: `85a2 8082 (9002)`.
//!
//! Words and parcels are little-endian in memory. A line whose bytes
//! cannot be read (`Code: Bad RIP value.`, `Unable to access opcode bytes
//! at …`, mixed widths, a truncated last token) is not a code line here
//! and passes through unchanged.
//!
//! The decoding itself is `disasm.rs` (cargo feature `disasm`); this file
//! reads the line and prints objdump's byte column.

// Without the decoder (feature `disasm`) only `Arch` is used: `--arch`.
#![cfg_attr(not(feature = "disasm"), allow(dead_code))]

#[cfg(feature = "disasm")]
pub(super) mod disasm;
#[cfg(feature = "disasm")]
mod thumb;

/// An instruction set a `Code:` line is disassembled as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    /// x86-64 (bytes).
    X86_64,
    /// AArch64 (32-bit words).
    Arm64,
    /// 32-bit ARM: ARM state with words, Thumb-2 with half-words.
    Arm,
    /// RISC-V RV64GC (16-bit parcels).
    Riscv64,
}

impl Arch {
    /// The name `--arch` takes and JSON prints: `x86_64`, `arm64`, `arm`,
    /// `riscv64`.
    pub fn name(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::Arm64 => "arm64",
            Arch::Arm => "arm",
            Arch::Riscv64 => "riscv64",
        }
    }

    /// Parses an `--arch` value (also `aarch64`, `x86-64`, `riscv`).
    pub fn parse(s: &str) -> Option<Arch> {
        Some(match s {
            "x86_64" | "x86-64" | "x86" | "amd64" => Arch::X86_64,
            "arm64" | "aarch64" => Arch::Arm64,
            "arm" | "armv7" | "thumb" => Arch::Arm,
            "riscv64" | "riscv" => Arch::Riscv64,
            _ => return None,
        })
    }
}

/// True for a message that starts with `Code: ` (after blanks).
pub(in crate::resolve) fn is_code_line(msg: &[u8]) -> bool {
    let m = &msg[msg.iter().take_while(|&&b| b == b' ' || b == b'\t').count()..];
    m.starts_with(b"Code: ")
}

/// The bytes of a `Code:` line, in memory order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::resolve) struct CodeBytes {
    pub bytes: Vec<u8>,
    /// Digits per token: 2 (bytes), 4 (half-words) or 8 (words).
    pub width: usize,
    /// Offset of the trapping instruction's first byte, when marked.
    pub trap: Option<usize>,
}

/// Reads the tokens after `Code: ` in `msg`; `None` when they are not
/// all hex of one width (2, 4 or 8 digits), at most one marked.
pub(in crate::resolve) fn parse(msg: &[u8]) -> Option<CodeBytes> {
    static CODE: std::sync::LazyLock<bstr::Finder<'static>> =
        std::sync::LazyLock::new(|| bstr::Finder::new(b"Code: "));
    let at = CODE.find(msg)? + 6;
    let mut out = CodeBytes {
        bytes: Vec::with_capacity(64),
        width: 0,
        trap: None,
    };
    for tok in msg[at..]
        .split(|&b| b == b' ' || b == b'\t')
        .filter(|t| !t.is_empty())
    {
        let (inner, marked) = match tok {
            [b'<', r @ .., b'>'] | [b'(', r @ .., b')'] => (r, true),
            _ => (tok, false),
        };
        if !matches!(inner.len(), 2 | 4 | 8) || !inner.iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        if out.width == 0 {
            out.width = inner.len();
        } else if out.width != inner.len() {
            return None;
        }
        if marked {
            if out.trap.is_some() {
                return None;
            }
            out.trap = Some(out.bytes.len());
        }
        let v = u32::from_str_radix(std::str::from_utf8(inner).ok()?, 16).ok()?;
        match inner.len() {
            2 => out.bytes.push(v as u8),
            4 => out.bytes.extend_from_slice(&(v as u16).to_le_bytes()),
            _ => out.bytes.extend_from_slice(&v.to_le_bytes()),
        }
    }
    (!out.bytes.is_empty()).then_some(out)
}

/// The instruction set to disassemble `code` as, given the report's
/// architecture (or `--arch`): the token width decides where the report
/// does not, and a width the architecture never prints refuses.
pub(in crate::resolve) fn mode(arch: Option<Arch>, width: usize) -> Option<Mode> {
    Some(match (arch, width) {
        (Some(Arch::X86_64) | None, 2) => Mode::X86_64,
        (Some(Arch::Arm64) | None, 8) => Mode::Arm64,
        (Some(Arch::Arm), 8) => Mode::Arm,
        (Some(Arch::Arm), 4) => Mode::Thumb,
        (Some(Arch::Riscv64), 4) => Mode::Riscv64,
        _ => return None,
    })
}

/// A disassembler state: an [`Arch`] with ARM's two instruction sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::resolve) enum Mode {
    X86_64,
    Arm64,
    Arm,
    Thumb,
    Riscv64,
}

impl Mode {
    pub(in crate::resolve) fn arch(self) -> Arch {
        match self {
            Mode::X86_64 => Arch::X86_64,
            Mode::Arm64 => Arch::Arm64,
            Mode::Arm | Mode::Thumb => Arch::Arm,
            Mode::Riscv64 => Arch::Riscv64,
        }
    }
}

/// One decoded instruction: its length in bytes and objdump-style text
/// (`mnemonic\toperands` on RISC machines, `mnemonic  operands` on x86).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::resolve) struct Insn {
    pub len: usize,
    pub text: String,
}

/// `objdump`'s byte column for one instruction's `bytes` in `mode`:
/// bytes (x86), one word (arm64, ARM, a 4-byte RISC-V instruction) or
/// half-words (Thumb), each word or half-word as a little-endian value.
pub(in crate::resolve) fn push_hex(out: &mut Vec<u8>, mode: Mode, bytes: &[u8]) {
    let unit = match mode {
        Mode::X86_64 => 1,
        Mode::Arm64 | Mode::Arm => 4,
        Mode::Riscv64 if bytes.len() == 4 => 4,
        Mode::Thumb | Mode::Riscv64 => 2,
    };
    let start = out.len();
    // A `Code:` line prints every byte twice, once a view: no formatting
    // machinery.
    fn push(out: &mut Vec<u8>, b: u8) {
        let hex = b"0123456789abcdef";
        out.extend_from_slice(&[hex[usize::from(b >> 4)], hex[usize::from(b & 0xF)]]);
    }
    for (k, c) in bytes.chunks(unit).enumerate() {
        if k > 0 {
            out.push(b' ');
        }
        // A truncated last unit prints its bytes as they come.
        if c.len() == unit {
            c.iter().rev().for_each(|&b| push(out, b));
        } else {
            c.iter().for_each(|&b| push(out, b));
        }
    }
    let pad = match mode {
        Mode::X86_64 => 21,
        _ => 9,
    };
    let w = out.len() - start;
    out.resize(start + w.max(pad), b' ');
}

#[cfg(all(test, feature = "disasm"))]
mod tests {
    use super::*;

    #[test]
    fn forms_of_each_architecture_parse() {
        let x = parse(b"Code: 48 89 e5 <0f> 0b").unwrap();
        assert_eq!(
            (x.bytes, x.width, x.trap),
            (vec![0x48, 0x89, 0xe5, 0x0f, 0x0b], 2, Some(3))
        );
        let a = parse(b"Code: d503233f (d4210000)").unwrap();
        assert_eq!(
            a.bytes,
            vec![0x3f, 0x23, 0x03, 0xd5, 0x00, 0x00, 0x21, 0xd4]
        );
        assert_eq!(a.trap, Some(4));
        let t = parse(b"Code: 4620 f7ff (de02)").unwrap();
        assert_eq!(t.bytes, vec![0x20, 0x46, 0xff, 0xf7, 0x02, 0xde]);
        assert_eq!((t.width, t.trap), (4, Some(4)));
        for bad in [
            &b"Code: Bad RIP value."[..],
            b"Code: Unable to access opcode bytes at 0xffffffff81000000.",
            b"Code: 48 8 e5",
            b"Code: 48 89e5",
            b"Code: <48> <89>",
            b"Code: ",
        ] {
            assert_eq!(parse(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }
}
