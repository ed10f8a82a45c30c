//! GNU objdump beside ksym's `Code:` disassembly: its rows, and the
//! spellings of binutils 2.40 that name the same instruction otherwise
//! (tests/code_lines.rs lists them).

use super::scratch;
use std::process::Command;

/// (offset, bytes as hex, mnemonic) rows of objdump's disassembly.
pub fn objdump(
    tool: &str,
    machine: &str,
    thumb: bool,
    bytes: &[u8],
) -> Option<Vec<(usize, String, String)>> {
    let dir = scratch("code-lines");
    let f = dir.join(format!("{machine}-{}.bin", bytes.len()));
    std::fs::write(&f, bytes).unwrap();
    let mut c = Command::new(tool);
    c.args(["-D", "-b", "binary", "-m", machine]);
    if thumb {
        c.args(["-M", "force-thumb"]);
    }
    let out = c.arg(&f).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut rows: Vec<(usize, String, String)> = Vec::new();
    for line in text.lines() {
        let Some((off, rest)) = line.trim_start().split_once(":\t") else {
            continue;
        };
        let Ok(off) = usize::from_str_radix(off, 16) else {
            continue;
        };
        let (hexcol, insn) = rest.split_once('\t').unwrap_or((rest, ""));
        let hexcol: String = hexcol.split_whitespace().collect();
        if insn.is_empty() || insn.starts_with("Address ") {
            // An x86 instruction's further bytes, or a truncated tail.
            if let Some(last) = rows.last_mut().filter(|_| insn.is_empty()) {
                last.1.push_str(&hexcol);
            }
            continue;
        }
        rows.push((off, hexcol, mnemonic(insn)));
    }
    Some(rows)
}

/// The mnemonic of an instruction's text, less x86 prefix words.
pub fn mnemonic(text: &str) -> String {
    const PREFIXES: [&str; 9] = [
        "cs", "ds", "es", "ss", "fs", "gs", "data16", "addr32", "notrack",
    ];
    let mut words = text.split_whitespace().peekable();
    while let Some(w) = words.peek() {
        if PREFIXES.contains(w) && words.clone().nth(1).is_some() {
            words.next();
        } else {
            break;
        }
    }
    words.next().unwrap_or_default().to_string()
}

/// True when `ours` and objdump's `theirs` are one mnemonic under the
/// documented spellings of this architecture.
pub fn same(arch: &str, len: usize, ours: &str, theirs: &str) -> bool {
    if ours == theirs {
        return true;
    }
    match arch {
        "riscv64" if len == 2 => {
            let imm = |m: &str| -> String {
                match m {
                    "add" => "addi".into(),
                    "addw" => "addiw".into(),
                    "sll" | "srl" | "sra" | "and" => format!("{m}i"),
                    _ => m.into(),
                }
            };
            imm(theirs) == ours
        }
        _ => false,
    }
}
