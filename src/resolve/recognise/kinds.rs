//! Recognising the kinds of input line (bare address, perf frame, kernel
//! log line, `Code:` line) and where in each the addresses are; log lines
//! are read by `logline.rs` behind the prefix `prefix.rs` finds.

use super::bytes::*;
use crate::resolve::batch::plan::{FrameStyle, Lookup, Plan};
use crate::resolve::*;

const KERNEL_DSOS: [&[u8]; 3] = [
    b" ([kernel.kallsyms])",
    b" ([guest.kernel.kallsyms])",
    b" ([kernel.vmlinux])",
];

impl Resolver<'_, '_> {
    /// Decides what to do with a line, and pushes the lookups it needs
    /// onto `lookups` (and a log line's references onto `refs`).
    pub(in crate::resolve) fn plan(
        &mut self,
        line: &[u8],
        lookups: &mut Vec<Lookup>,
        refs: &mut Vec<crate::resolve::LineRef>,
    ) -> Plan {
        self.lineno += 1;
        let (body, _) = trim_end_nl(line);
        let mut one = |p: Plan, addr: u64, lines: bool, r: &mut Self| {
            // A raw address in a module section of the --loaded snapshot.
            let module_addr = r
                .module_addr
                .take()
                .or_else(|| r.loaded.as_ref().and_then(|l| l.to_module_space(addr)));
            lookups.push(Lookup {
                addr: Some(addr),
                module_addr,
                lines,
            });
            p
        };
        self.module_addr = None;
        if let Some(p @ Plan::Bare { addr }) = self.bare_address(body) {
            return one(p, addr, true, self);
        }
        if let Some(p @ Plan::Replace { addr, .. }) = self.perf_frame(body) {
            return one(p, addr, self.opts.inline, self);
        }
        self.log_line(body, lookups, refs)
    }

    fn bare_address(&self, body: &[u8]) -> Option<Plan> {
        let s = &body[skip_blanks(body, 0)..];
        let s = &s[..s.len() - s.iter().rev().take_while(|&&b| is_blank(b)).count()];
        // `0x` and 1 to 16 digits, or 5 to 16 digits: short bare numbers are
        // counts (bcc prints them on lines of their own), not addresses.
        let digits = match strip_0x(s) {
            Some(d) => d,
            None if s.len() >= 5 => s,
            None => return None,
        };
        hex::parse_u64(digits).map(|addr| Plan::Bare { addr })
    }

    /// `<blanks>ADDR SYM[ (DSO)]` (perf, bcc) or `… ADDR SYM (DSO)` (perf's
    /// one-line form): SYM replaced for kernel frames.
    fn perf_frame(&mut self, body: &[u8]) -> Option<Plan> {
        let (frame_len, kernel) = match KERNEL_DSOS.iter().find(|d| body.ends_with(d)) {
            Some(d) => (body.len() - d.len(), true),
            None if body.ends_with(b"])") => match self.module_dso(body) {
                Some(len) => (len, true),
                // bpftrace's unnamed frame, else [vdso], perf's [unknown]
                // (another binary's) or a module the blob lacks.
                None => return self.bpftrace_unknown(body),
            },
            None if body.ends_with(b")") => match self.user_dso(body) {
                Some(len) => (len, false),
                None => return None, // another binary's frame
            },
            None => (body.len(), false),
        };
        if kernel && self.user_binary {
            return None; // the kernel's frame; the blob is a program's or a JIT's
        }
        let user_dso = frame_len < body.len();
        let frame = &body[..frame_len];
        let lead = skip_blanks(frame, 0);
        let (addr_at, addr_end) = if lead > 0 {
            (
                lead,
                frame[lead..]
                    .iter()
                    .position(|&b| b == b' ')
                    .map_or(frame.len(), |p| lead + p),
            )
        } else if kernel {
            let sp = frame.iter().rposition(|&b| b == b' ')?;
            (
                frame[..sp]
                    .iter()
                    .rposition(|&b| is_blank(b))
                    .map_or(0, |p| p + 1),
                sp,
            )
        } else {
            return None;
        };
        let field = &frame[addr_at..addr_end];
        let addr = hex::parse_u64(strip_0x(field).unwrap_or(field))?;
        // `ADDR (DSO)` (perf script -F ip,dso): the name goes in between,
        // as -F ip,sym,dso prints it.
        let insert = addr_end >= frame.len();
        if insert && frame_len == body.len() {
            return None; // a bare address, handled elsewhere
        }
        let sym = frame.get(addr_end + 1..).unwrap_or_default();
        if !kernel && !insert {
            // A user-space frame of -F ip,sym, or not a frame at all.
            // A single symbol token; not a second hex word (old stack dumps).
            if sym.is_empty() || sym.contains(&b' ') && !sym.starts_with(b"[unknown]") {
                return None;
            }
            if hex::parse_u64(strip_0x(sym).unwrap_or(sym)).is_some() {
                return None;
            }
        }
        if !kernel {
            // Below the first symbol is another binary's, unless --maps or
            // perf's path says the address is this binary's.
            if self.opts.ranges.is_none()
                && self
                    .first_address
                    .is_none_or(|f| addr.wrapping_sub(self.opts.slide) < f)
            {
                return None;
            }
            // A program's or library's blob: perf named this frame of some
            // binary; only one inside --maps' ranges is this blob's.
            if self.user_binary
                && self
                    .opts
                    .ranges
                    .as_ref()
                    .is_none_or(|r| !r.iter().any(|x| x.contains(&addr)))
            {
                return None;
            }
        }
        if insert {
            return Some(Plan::Replace {
                addr,
                from: addr_end,
                to: addr_end,
                // No text of perf's to keep: its binary has no symbol
                // there, and perf prints `[unknown]`.
                keep: false,
                style: FrameStyle::Perf,
            });
        }
        if frame_len < body.len() && body[frame_len..].starts_with(b" ([") {
            let m = &body[frame_len + 3..body.len() - 2];
            if let Some((name, off, _)) = parse_sym_off(sym) {
                self.module_addr = self.module_ref(m, None, name, off);
            }
        } else {
            self.learn_slide(addr, sym);
        }
        // bcc's `[unknown] [MOD]` (show_module): the module stays, as bcc
        // prints it after a name.
        let to = if sym.starts_with(b"[unknown] [") {
            addr_end + 1 + b"[unknown]".len()
        } else {
            frame_len
        };
        // bpftrace's `NAME+DEC`: a kernel frame (`kstack(perf)`) gets the
        // blob's name in bpftrace's style; a user frame bpftrace named
        // stays (its symbols are the binary's: a rename would only pick
        // another alias).
        let style = if kernel || !bpftrace_offset(sym) {
            FrameStyle::Perf
        } else if self.user_binary {
            return None;
        } else {
            FrameStyle::Bpftrace { dso: false }
        };
        Some(Plan::Replace {
            addr,
            from: addr_end + 1,
            to,
            // A name the tool gave stays where the blob has none (a
            // module's frame, another build's): `[unknown]` would lose it.
            keep: !kernel && (user_dso || self.user_binary) || !sym.starts_with(b"[unknown]"),
            style,
        })
    }

    /// bpftrace's `ustack(perf)` frame it could not name, `\tADDR 0xADDR
    /// ([unknown])` (a runtime address; the process had exited, or its
    /// binary has no symbols), inside the blob's binary's mappings: named
    /// as bpftrace names one, `NAME+DEC (PATH)`.
    fn bpftrace_unknown(&self, body: &[u8]) -> Option<Plan> {
        let ranges = self.opts.ranges.as_ref()?;
        self.opts.paths.as_ref().filter(|p| !p.is_empty())?;
        let frame = body.strip_suffix(b" ([unknown])")?;
        let lead = skip_blanks(frame, 0);
        if lead == 0 {
            return None;
        }
        let sp = lead + frame[lead..].iter().position(|&b| b == b' ')?;
        let addr = hex::parse_u64(&frame[lead..sp])?;
        let again = hex::parse_u64(strip_0x(&frame[sp + 1..])?)?;
        if again != addr || !ranges.iter().any(|r| r.contains(&addr)) {
            return None;
        }
        Some(Plan::Replace {
            addr,
            from: sp + 1,
            to: body.len(),
            keep: true,
            style: FrameStyle::Bpftrace { dso: true },
        })
    }

    /// For a perf frame ending ` (PATH)` where PATH is one the blob's
    /// binary is mapped from (`--maps`), the length before the DSO.
    fn user_dso(&self, body: &[u8]) -> Option<usize> {
        let paths = self.opts.paths.as_ref()?;
        let open = body.windows(2).rposition(|w| w == b" (")?;
        let dso = &body[open + 2..body.len() - 1];
        paths.iter().any(|p| p.as_slice() == dso).then_some(open)
    }

    /// For a frame ending ` ([MOD])` where the blob holds module MOD (v2
    /// keeps /proc/kallsyms' module column, and `--modules` packs a module
    /// space), the length before the DSO.
    fn module_dso(&self, body: &[u8]) -> Option<usize> {
        let open = body.len() - body.iter().rev().position(|&b| b == b'[')? - 1;
        let start = open.checked_sub(2)?;
        if &body[start..open] != b" (" {
            return None;
        }
        let m = &body[open + 1..body.len() - 2];
        let in_space = self
            .modules
            .as_ref()
            .is_some_and(|ms| ms.find_module(m).is_some());
        (in_space || self.map.has_module(m)).then_some(start)
    }

    /// The module-space address of `name+offset` in module `module`, when
    /// the blob's module space holds both; a `[mod BUILDID]` whose
    /// build-id is not the blob's module's counts as a mismatch and gets
    /// no answer.
    pub(in crate::resolve) fn module_ref(
        &mut self,
        module: &[u8],
        build_id: Option<&[u8]>,
        name: &[u8],
        offset: u64,
    ) -> Option<u64> {
        let ms = self.modules.as_ref()?;
        let m = ms.find_module(module)?;
        if let Some(hex) = build_id {
            let given = crate::store::layout::parse_hex(hex);
            if given.as_deref() != Some(m.build_id) {
                self.stats.build_id_mismatch += 1;
                if self.build_id_note.is_none() {
                    let stored: String = m.build_id.iter().map(|b| format!("{b:02x}")).collect();
                    self.build_id_note = Some(format!(
                        "[{} {}] on input line {} is not the blob's module {} (build-id {}): such references are left as they are",
                        String::from_utf8_lossy(module),
                        String::from_utf8_lossy(hex),
                        self.lineno,
                        String::from_utf8_lossy(module),
                        if stored.is_empty() {
                            "none".into()
                        } else {
                            stored
                        }
                    ));
                }
                return None;
            }
        }
        let s = ms.lookup_name_in(&m, name)?;
        Some(s.address.wrapping_add(offset))
    }

    /// With `kaslr_from_sym`, sets the slide from the first `ADDR` +
    /// `func+0xOFF` pair whose function is in the blob.
    pub(in crate::resolve) fn learn_slide(&mut self, addr: u64, sym: &[u8]) {
        if !self.opts.kaslr_from_sym || self.stats.learnt_slide.is_some() {
            return;
        }
        let Some((name, off, _)) = parse_sym_off(sym) else {
            return;
        };
        if let Some(s) = self.map.lookup_name(name) {
            let slide = addr.wrapping_sub(off).wrapping_sub(s.address);
            self.opts.slide = slide;
            self.stats.learnt_slide = Some((slide, self.lineno));
        }
    }
}

/// Whether a frame's symbol is bpftrace's `NAME+DEC` (perf and bcc write
/// `NAME+0xOFF`).
fn bpftrace_offset(sym: &[u8]) -> bool {
    sym.iter()
        .rposition(|&b| b == b'+')
        .is_some_and(|p| p > 0 && p + 1 < sym.len() && sym[p + 1..].iter().all(u8::is_ascii_digit))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sym_off_references_parse() {
        assert_eq!(
            parse_sym_off(b"do_fork+0x12/0x40"),
            Some((&b"do_fork"[..], 0x12, Some(0x40)))
        );
        assert_eq!(
            parse_sym_off(b"read_zero+0x77"),
            Some((&b"read_zero"[..], 0x77, None))
        );
        assert_eq!(parse_sym_off(b"a+b+0x1"), Some((&b"a+b"[..], 1, None)));
        assert_eq!(parse_sym_off(b"+0x1"), None);
        assert_eq!(parse_sym_off(b"foo+12"), None);
        assert_eq!(parse_sym_off(b"[unknown]"), None);
    }

    #[test]
    fn bpftrace_writes_offsets_in_decimal() {
        assert!(bpftrace_offset(b"__libc_start_call_main+122"));
        assert!(!bpftrace_offset(b"read_zero+0x77"));
        assert!(!bpftrace_offset(b"operator+"));
        assert!(!bpftrace_offset(b"+12"));
        assert!(!bpftrace_offset(b"[unknown]"));
    }
}
