//! The output form of a `Code:` line: the line itself, then its
//! disassembly in `scripts/decodecode`'s layout:
//!
//! ```text
//! All code
//! ========
//!    0:    48 89 e5                 mov    %rsp,%rbp
//!    3:*    0f 0b                    ud2        <-- trapping instruction
//!
//! Code starting with the faulting instruction
//! ===========================================
//!    0:    0f 0b                    ud2
//! ```
//!
//! When the report gave the faulting address, each `All code` row ends in
//! `\t# ADDR func+0xOFF/0xSIZE`, and, with a lines blob, ` FILE:LINE` of
//! the innermost frame where it changes. `--json` prints one object per
//! `Code:` line instead.

use super::Prefix;
use crate::resolve::code::disasm;
use crate::resolve::code::{self, Insn, Mode};
use crate::resolve::*;

/// What the blob says of one instruction's address.
struct Place<'a> {
    hit: Option<crate::resolve::print::Hit<'a>>,
    row: Option<SourceRow>,
}

impl<'a> Resolver<'_, 'a> {
    /// Writes a [`Plan::Code`] line and, when its bytes read, its
    /// disassembly (or, with `--json`, its JSON object).
    pub(in crate::resolve) fn emit_code(
        &mut self,
        line: &[u8],
        prefix: usize,
        arch: Option<code::Arch>,
        fault: Option<crate::resolve::batch::plan::Fault>,
        out: &mut Vec<u8>,
    ) {
        let module = fault.is_some_and(|f| f.module);
        self.in_space(module, |me| {
            me.code_block(line, prefix, arch, fault.map(|f| f.addr), module, out)
        });
    }

    /// [`Self::emit_code`] with the fault's space in place.
    fn code_block(
        &mut self,
        line: &[u8],
        prefix: usize,
        arch: Option<code::Arch>,
        fault: Option<u64>,
        module: bool,
        out: &mut Vec<u8>,
    ) {
        let (body, _) = trim_end_nl(line);
        let parsed =
            code::parse(&body[prefix..]).and_then(|c| Some((code::mode(arch, c.width)?, c)));
        let Some((mode, c)) = parsed else {
            if !self.opts.json {
                out.extend_from_slice(line);
            }
            return;
        };
        // The address of the line's first byte, when the fault's is known.
        let base = match (fault, c.trap) {
            (Some(f), Some(t)) => Some(f.wrapping_sub(t as u64)),
            _ => None,
        };
        let all = disasm::disassemble(mode, &c.bytes, base.unwrap_or(0));
        if self.opts.json {
            return self.code_json(mode, &c, &all, base, module, out);
        }
        out.extend_from_slice(line);
        if !line.ends_with(b"\n") {
            out.push(b'\n');
        }
        out.extend_from_slice(b"All code\n========\n");
        let mut last_line: Option<(u32, u32)> = None;
        // The symbol of the row before, with where it starts and ends: a
        // `Code:` line's rows mostly lie in one function.
        let mut last_sym: Option<(u64, u64, crate::resolve::print::Hit<'a>)> = None;
        for (off, insn) in &all {
            let trapping = c.trap == Some(*off);
            self.code_row(out, mode, &c.bytes, *off, insn, trapping);
            if insn.text == disasm::ZEROES {
                out.push(b'\n');
                continue;
            }
            if let Some(b) = base {
                let addr = b.wrapping_add(*off as u64);
                let place = match last_sym {
                    Some((start, end, h)) if (start..end).contains(&addr) => Place {
                        hit: Some(crate::resolve::print::Hit {
                            offset: addr - start,
                            ..h
                        }),
                        row: self.row_at(addr, module),
                    },
                    _ => self.place(addr, module),
                };
                last_sym = place.hit.and_then(|h| {
                    let start = addr.checked_sub(h.offset)?;
                    Some((start, start.checked_add(h.size?)?, h))
                });
                out.extend_from_slice(b"\t# ");
                // A module-space address means nothing at runtime.
                if !module {
                    hex::push_u64_padded(out, addr);
                    out.push(b' ');
                }
                self.push_sym(out, place.hit.as_ref(), self.opts.size, true);
                if let (Some(lines), Some(row)) = (&self.lines, place.row.filter(|r| r.file != 0))
                    && let Some(f) = lines.frames(&row).next()
                    && last_line != Some((f.file, f.line))
                {
                    last_line = Some((f.file, f.line));
                    out.push(b' ');
                    self.push_file(out, &f, Prefix::User, true);
                    out.push(b':');
                    crate::resolve::print::push_u32(out, f.line);
                }
            }
            if trapping {
                out.extend_from_slice(b"\t\t<-- trapping instruction");
            }
            out.push(b'\n');
        }
        if let Some(t) = c.trap {
            out.extend_from_slice(
                b"\nCode starting with the faulting instruction\n===========================================\n",
            );
            // Where `All code` has a row at the trapping byte, the decode
            // from there is its tail (each row depends only on the bytes
            // from its offset, and its address); not so in Thumb, whose IT
            // block state comes from the rows before, nor without the
            // fault's address, where each view counts addresses from its
            // own first byte, as objdump does for decodecode (a branch's
            // target differs).
            let from_trap = all.iter().position(|(o, _)| *o == t);
            let own;
            let rows: &[(usize, Insn)] = match from_trap {
                Some(k) if mode != Mode::Thumb && base.is_some() => &all[k..],
                _ => {
                    let ip = base.map_or(0, |b| b.wrapping_add(t as u64));
                    own = disasm::disassemble(mode, &c.bytes[t..], ip)
                        .into_iter()
                        .map(|(o, i)| (o + t, i))
                        .collect::<Vec<_>>();
                    &own
                }
            };
            for (off, insn) in rows {
                self.code_row(out, mode, &c.bytes[t..], off - t, insn, false);
                out.push(b'\n');
            }
        }
    }

    /// `%4x:\tBYTES\tTEXT` (`*` after the colon when trapping).
    fn code_row(
        &self,
        out: &mut Vec<u8>,
        mode: Mode,
        bytes: &[u8],
        off: usize,
        insn: &Insn,
        trapping: bool,
    ) {
        if insn.text == disasm::ZEROES {
            out.extend_from_slice(b"\t...");
            return;
        }
        push_offset(out, off);
        if trapping {
            out.push(b'*');
        }
        out.push(b'\t');
        let end = (off + insn.len).min(bytes.len());
        code::push_hex(out, mode, &bytes[off..end]);
        out.push(b'\t');
        out.extend_from_slice(insn.text.as_bytes());
    }

    /// The symbol and source row at runtime address `addr` (slide
    /// removed), or at module-space address `addr` (with the module
    /// space's tables in place); one lookup: `Code:` lines are rare.
    fn place(&mut self, addr: u64, module: bool) -> Place<'a> {
        let hit = if module {
            self.modules
                .and_then(|ms| ms.lookup_address(addr))
                .map(|h| h.hit)
        } else {
            self.map.lookup_address(addr.wrapping_sub(self.opts.slide))
        };
        Place {
            hit: hit.as_ref().map(crate::resolve::print::Hit::from),
            row: self.row_at(addr, module),
        }
    }

    /// The source row at `addr`, as [`Self::place`] finds it.
    fn row_at(&self, addr: u64, module: bool) -> Option<SourceRow> {
        let a = if module {
            addr
        } else {
            addr.wrapping_sub(self.opts.slide)
        };
        self.lines.as_ref().and_then(|l| l.find(a))
    }

    /// `{"line":N,"arch":…,"instructions":[{"offset":N,"bytes":"…",
    /// "text":"…","trapping":bool[,"addr","name","frames"]},…]
    /// [,"faulting":[…]]}`: `offset` counts bytes from the line's first,
    /// `bytes` is hex in memory order. `instructions` is `All code`;
    /// `faulting`, when the line marks the trapping byte, is the decode
    /// from that byte (decodecode's second view), its first instruction
    /// the trapping one: `All code` may straddle it.
    fn code_json(
        &mut self,
        mode: Mode,
        c: &code::CodeBytes,
        all: &[(usize, Insn)],
        base: Option<u64>,
        module: bool,
        out: &mut Vec<u8>,
    ) {
        let _ = write!(
            out,
            "{{\"line\":{},\"arch\":\"{}\",\"instructions\":[",
            self.emitting,
            mode.arch().name()
        );
        for (k, (off, insn)) in all.iter().enumerate() {
            if k > 0 {
                out.push(b',');
            }
            self.json_insn(
                out,
                &c.bytes,
                *off,
                insn,
                c.trap == Some(*off),
                base,
                module,
            );
        }
        out.push(b']');
        if let Some(t) = c.trap {
            out.extend_from_slice(b",\"faulting\":[");
            let ip = base.map_or(0, |b| b.wrapping_add(t as u64));
            for (k, (off, insn)) in disasm::disassemble(mode, &c.bytes[t..], ip)
                .iter()
                .enumerate()
            {
                if k > 0 {
                    out.push(b',');
                }
                self.json_insn(out, &c.bytes, t + off, insn, k == 0, base, module);
            }
            out.push(b']');
        }
        out.extend_from_slice(b"}\n");
    }

    /// One instruction object of [`Self::code_json`], at `off` in `bytes`.
    #[allow(clippy::too_many_arguments)]
    fn json_insn(
        &mut self,
        out: &mut Vec<u8>,
        bytes: &[u8],
        off: usize,
        insn: &Insn,
        trapping: bool,
        base: Option<u64>,
        module: bool,
    ) {
        let _ = write!(out, "{{\"offset\":{off},\"bytes\":\"");
        for b in &bytes[off..(off + insn.len).min(bytes.len())] {
            let _ = write!(out, "{b:02x}");
        }
        out.extend_from_slice(b"\",\"text\":");
        let _ = serde_json::to_writer(&mut *out, &insn.text.replace('\t', " "));
        let _ = write!(out, ",\"trapping\":{trapping}");
        if let Some(b) = base {
            let addr = b.wrapping_add(off as u64);
            let place = self.place(addr, module);
            if !module {
                out.extend_from_slice(b",\"addr\":\"0x");
                hex::push_u64_padded(out, addr);
                out.push(b'"');
            }
            out.extend_from_slice(b",\"name\":");
            let mut name = Vec::new();
            if let Some(h) = &place.hit {
                self.push_sym(&mut name, Some(h), true, true);
                let _ = serde_json::to_writer(&mut *out, &String::from_utf8_lossy(&name));
            } else {
                out.extend_from_slice(b"null");
            }
            if self.lines.is_some() {
                self.push_json_frames(out, place.row.filter(|r| r.file != 0).as_ref());
            }
        }
        out.push(b'}');
    }
}
/// Appends `off` as `{off:4x}:` (hex, right-aligned in 4 columns) prints
/// it, without the formatting machinery: a `Code:` line has a row each.
fn push_offset(out: &mut Vec<u8>, off: usize) {
    let mut digits = [b' '; 16];
    let (mut v, mut at) = (off, digits.len());
    loop {
        at -= 1;
        digits[at] = b"0123456789abcdef"[v & 0xF];
        v >>= 4;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at.min(digits.len() - 4)..]);
    out.push(b':');
}

#[cfg(test)]
mod tests {
    #[test]
    fn offsets_print_as_the_format_string_does() {
        for off in [
            0,
            1,
            0xf,
            0x10,
            0xfff,
            0x1000,
            0xffff,
            0x10000,
            0x1234_5678,
            usize::MAX,
        ] {
            let mut out = Vec::new();
            super::push_offset(&mut out, off);
            assert_eq!(out, format!("{off:4x}:").into_bytes(), "{off:#x}");
        }
    }
}
