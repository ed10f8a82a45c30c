//! The resolver stream behind `ksym-resolve`: reads lines, rewrites the ones
//! that carry kernel code addresses, passes every other line through byte for
//! byte.
//!
//! Line kinds (README "ksym-resolve" documents each with an example):
//! - a bare hex address (`ffffffff81234567`, `0x…`, leading blanks allowed) →
//!   `ADDR TYPE NAME+0xOFF/0xSIZE` (kernel `%pS` style), `ADDR ? [unknown]`;
//! - a `perf script` frame whose DSO is `[kernel.kallsyms]`
//!   (`\tADDR SYM+0xOFF (DSO)`, also the one-line sample form) → SYM replaced
//!   by ours, the rest kept;
//! - a `perf script -F ip,sym[,symoff]` frame (`\tADDR SYM`, no DSO) at a kernel
//!   address (at or above the first symbol) → SYM replaced likewise.

use std::io::{self, BufRead, Write};

use crate::hex;
use crate::lines::{Line, for_each_line};
use crate::reader::{AddressHit, KallsymsMapped};

/// Lines longer than this are passed through in pieces without being parsed.
pub const MAX_LINE: usize = 64 * 1024;

/// Output is handed to the writer in blocks of about this many bytes.
pub const OUT_BLOCK: usize = 64 * 1024;

/// How to print.
#[derive(Debug, Clone, Copy, Default)]
pub struct ResolveOptions {
    /// Print `/0xSIZE` after the offset of bare-address answers (kernel `%pS`).
    pub size: bool,
    /// KASLR slide subtracted from every address before lookup; the printed
    /// address is the original.
    pub slide: u64,
    /// Hand each output line to the writer (and flush) at once.
    pub line_buffered: bool,
}

/// What a run saw.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResolveStats {
    /// Input lines.
    pub lines: u64,
    /// Addresses looked up (bare lines and kernel frames).
    pub lookups: u64,
    /// Lookups that found a symbol.
    pub resolved: u64,
    /// Kernel addresses that were zero (`kptr_restrict` hides them so).
    pub zero: u64,
}

/// Rewrites lines against one mapped blob.
#[derive(Debug)]
pub struct Resolver<'m, 'a> {
    map: &'m KallsymsMapped<'a>,
    opts: ResolveOptions,
    first_address: Option<u64>,
    stats: ResolveStats,
}

#[inline]
fn trim_end_nl(line: &[u8]) -> (&[u8], &[u8]) {
    let mut end = line.len();
    if end > 0 && line[end - 1] == b'\n' {
        end -= 1;
        if end > 0 && line[end - 1] == b'\r' {
            end -= 1;
        }
    }
    (&line[..end], &line[end..])
}

#[inline]
fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

const KERNEL_DSOS: [&[u8]; 3] = [
    b" ([kernel.kallsyms])",
    b" ([guest.kernel.kallsyms])",
    b" ([kernel.vmlinux])",
];

impl<'m, 'a> Resolver<'m, 'a> {
    /// A resolver over `map`.
    pub fn new(map: &'m KallsymsMapped<'a>, opts: ResolveOptions) -> Self {
        let first_address = (!map.is_empty()).then(|| map.address(0));
        Resolver {
            map,
            opts,
            first_address,
            stats: ResolveStats::default(),
        }
    }

    /// Counters so far.
    pub fn stats(&self) -> ResolveStats {
        self.stats
    }

    #[inline]
    fn lookup(&mut self, addr: u64) -> Option<AddressHit<'a>> {
        self.stats.lookups += 1;
        if addr == 0 {
            self.stats.zero += 1;
        }
        let hit = self.map.lookup_address(addr.wrapping_sub(self.opts.slide));
        self.stats.resolved += u64::from(hit.is_some());
        hit
    }

    /// Appends `name+0xOFF[/0xSIZE]`, or `[unknown]`.
    #[inline]
    fn push_sym(out: &mut Vec<u8>, hit: Option<&AddressHit<'_>>, size: bool) {
        match hit {
            Some(h) => {
                h.symbol.name.extend_into(out);
                out.push(b'+');
                hex::push_u64_0x(out, h.offset);
                if let (true, Some(s)) = (size, h.size) {
                    out.push(b'/');
                    hex::push_u64_0x(out, s);
                }
            }
            None => out.extend_from_slice(b"[unknown]"),
        }
    }

    /// Appends the output for one input line (with its line ending) to `out`.
    pub fn rewrite_line(&mut self, line: &[u8], out: &mut Vec<u8>) {
        self.stats.lines += 1;
        let (body, nl) = trim_end_nl(line);
        if self.bare_address(body, out) || self.perf_frame(body, out) {
            out.extend_from_slice(if nl.is_empty() { b"\n" } else { nl });
        } else {
            out.extend_from_slice(line);
        }
    }

    fn bare_address(&mut self, body: &[u8], out: &mut Vec<u8>) -> bool {
        let s = &body[body.iter().take_while(|&&b| is_blank(b)).count()..];
        let end = s.len() - s.iter().rev().take_while(|&&b| is_blank(b)).count();
        let s = &s[..end];
        let digits = s
            .strip_prefix(b"0x")
            .or_else(|| s.strip_prefix(b"0X"))
            .unwrap_or(s);
        let Some(addr) = hex::parse_u64(digits) else {
            return false;
        };
        let hit = self.lookup(addr);
        hex::push_u64_padded(out, addr);
        match hit {
            Some(h) => {
                out.extend_from_slice(&[b' ', h.symbol.symbol_type, b' ']);
                Self::push_sym(out, Some(&h), self.opts.size);
            }
            None => out.extend_from_slice(b" ? [unknown]"),
        }
        true
    }

    /// `<prefix><blank>ADDR SYM[ (DSO)]`: SYM replaced for kernel frames.
    fn perf_frame(&mut self, body: &[u8], out: &mut Vec<u8>) -> bool {
        let (frame, dso, kernel) = match KERNEL_DSOS.iter().find(|d| body.ends_with(d)) {
            Some(d) => (
                &body[..body.len() - d.len()],
                &body[body.len() - d.len()..],
                true,
            ),
            None if body.ends_with(b")") => return false, // a user-space DSO
            None => (body, &body[..0], false),
        };
        // ADDR is the first field after the leading blanks of a callchain line,
        // or the field before SYM on a one-line sample.
        let lead = frame.iter().take_while(|&&b| is_blank(b)).count();
        let (addr_at, addr_end) = if lead > 0 {
            let e = frame[lead..]
                .iter()
                .position(|&b| b == b' ')
                .map_or(frame.len(), |p| lead + p);
            (lead, e)
        } else if kernel {
            // One-line form: `... ADDR SYM (DSO)`; SYM is the last field.
            let Some(sp) = frame.iter().rposition(|&b| b == b' ') else {
                return false;
            };
            let a = frame[..sp]
                .iter()
                .rposition(|&b| is_blank(b))
                .map_or(0, |p| p + 1);
            (a, sp)
        } else {
            return false;
        };
        let Some(addr) = hex::parse_u64(&frame[addr_at..addr_end]) else {
            return false;
        };
        if addr_end >= frame.len() {
            return false; // bare address, handled elsewhere
        }
        if !kernel
            && self
                .first_address
                .is_none_or(|f| addr.wrapping_sub(self.opts.slide) < f)
        {
            return false; // user-space frame of -F ip,sym
        }
        let hit = self.lookup(addr);
        out.extend_from_slice(&frame[..=addr_end]);
        Self::push_sym(out, hit.as_ref(), false);
        out.extend_from_slice(dso);
        true
    }

    /// Resolves `input` to `output` until the input ends.
    ///
    /// Errors: read or write errors (a closed pipe surfaces as
    /// `ErrorKind::BrokenPipe`; callers end quietly on it).
    pub fn run<R: BufRead, W: Write>(
        &mut self,
        input: R,
        mut output: W,
    ) -> io::Result<ResolveStats> {
        let mut out = Vec::with_capacity(OUT_BLOCK + MAX_LINE + 256);
        let line_buffered = self.opts.line_buffered;
        for_each_line(input, MAX_LINE, |_, line| {
            match line {
                Line::Full(l) => self.rewrite_line(l, &mut out),
                Line::Long { piece, first } => {
                    self.stats.lines += u64::from(first);
                    out.extend_from_slice(piece);
                }
            }
            if line_buffered || out.len() >= OUT_BLOCK {
                output.write_all(&out)?;
                out.clear();
                if line_buffered {
                    output.flush()?;
                }
            }
            Ok(())
        })?;
        output.write_all(&out)?;
        output.flush()?;
        Ok(self.stats)
    }
}
