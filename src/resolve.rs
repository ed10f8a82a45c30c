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

use crate::addrindex::AddressIndex;
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
    index: AddressIndex,
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
            index: AddressIndex::new(map),
            first_address,
            stats: ResolveStats::default(),
        }
    }

    /// Counters so far.
    pub fn stats(&self) -> ResolveStats {
        self.stats
    }

    #[inline]
    fn count(&mut self, addr: u64, hit: bool) {
        self.stats.lookups += 1;
        self.stats.zero += u64::from(addr == 0);
        self.stats.resolved += u64::from(hit);
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
        let plan = self.plan(line);
        let hit = plan.addr().and_then(|a| self.lookup(a));
        self.emit(line, plan, hit.as_ref(), out);
    }

    #[inline]
    fn lookup(&mut self, addr: u64) -> Option<AddressHit<'a>> {
        let a = addr.wrapping_sub(self.opts.slide);
        let hit = self.map.lookup_address_in(a, self.index.window(a));
        self.count(addr, hit.is_some());
        hit
    }

    /// Decides what to do with a line, without looking anything up.
    fn plan(&self, line: &[u8]) -> Plan {
        let (body, _) = trim_end_nl(line);
        self.bare_address(body)
            .or_else(|| self.perf_frame(body))
            .unwrap_or(Plan::Pass)
    }

    /// Writes the line as `plan` says, with `hit` the lookup of its address.
    fn emit(&mut self, line: &[u8], plan: Plan, hit: Option<&AddressHit<'_>>, out: &mut Vec<u8>) {
        self.stats.lines += 1;
        let (body, nl) = trim_end_nl(line);
        let nl: &[u8] = if nl.is_empty() { b"\n" } else { nl };
        match plan {
            Plan::Pass => out.extend_from_slice(line),
            Plan::Bare { addr } => {
                hex::push_u64_padded(out, addr);
                match hit {
                    Some(h) => {
                        out.extend_from_slice(&[b' ', h.symbol.symbol_type, b' ']);
                        Self::push_sym(out, Some(h), self.opts.size);
                    }
                    None => out.extend_from_slice(b" ? [unknown]"),
                }
                out.extend_from_slice(nl);
            }
            Plan::Replace { from, to, size, .. } => {
                out.extend_from_slice(&body[..from]);
                Self::push_sym(out, hit, size && self.opts.size);
                out.extend_from_slice(&body[to..]);
                out.extend_from_slice(nl);
            }
        }
    }

    fn bare_address(&self, body: &[u8]) -> Option<Plan> {
        let s = &body[body.iter().take_while(|&&b| is_blank(b)).count()..];
        let end = s.len() - s.iter().rev().take_while(|&&b| is_blank(b)).count();
        let s = &s[..end];
        let digits = s
            .strip_prefix(b"0x")
            .or_else(|| s.strip_prefix(b"0X"))
            .unwrap_or(s);
        hex::parse_u64(digits).map(|addr| Plan::Bare { addr })
    }

    /// `<prefix><blank>ADDR SYM[ (DSO)]`: SYM replaced for kernel frames.
    fn perf_frame(&self, body: &[u8]) -> Option<Plan> {
        let (frame_len, kernel) = match KERNEL_DSOS.iter().find(|d| body.ends_with(d)) {
            Some(d) => (body.len() - d.len(), true),
            None if body.ends_with(b")") => return None, // a user-space DSO
            None => (body.len(), false),
        };
        let frame = &body[..frame_len];
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
            let sp = frame.iter().rposition(|&b| b == b' ')?;
            let a = frame[..sp]
                .iter()
                .rposition(|&b| is_blank(b))
                .map_or(0, |p| p + 1);
            (a, sp)
        } else {
            return None;
        };
        let addr = hex::parse_u64(&frame[addr_at..addr_end])?;
        if addr_end >= frame.len() {
            return None; // a bare address, handled elsewhere
        }
        if !kernel
            && self
                .first_address
                .is_none_or(|f| addr.wrapping_sub(self.opts.slide) < f)
        {
            return None; // user-space frame of -F ip,sym
        }
        Some(Plan::Replace {
            addr,
            from: addr_end + 1,
            to: frame_len,
            size: false,
        })
    }

    /// Resolves `input` to `output` until the input ends.
    ///
    /// Lines are handled in batches (up to [`BATCH`] lines or [`OUT_BLOCK`]
    /// bytes, one line with `line_buffered`): all lookups of a batch run
    /// back to back so their cache misses overlap.
    ///
    /// Errors: read or write errors (a closed pipe surfaces as
    /// `ErrorKind::BrokenPipe`; callers end quietly on it).
    pub fn run<R: BufRead, W: Write>(
        &mut self,
        input: R,
        mut output: W,
    ) -> io::Result<ResolveStats> {
        let mut out = Vec::with_capacity(2 * OUT_BLOCK + MAX_LINE);
        let mut batch = Batch::default();
        let line_buffered = self.opts.line_buffered;
        for_each_line(input, MAX_LINE, |_, line| {
            match line {
                Line::Full(l) => {
                    let plan = self.plan(l);
                    batch.push(l, plan);
                    if line_buffered || batch.plans.len() >= BATCH || batch.text.len() >= OUT_BLOCK
                    {
                        self.flush_batch(&mut batch, &mut out);
                    }
                }
                Line::Long { piece, first } => {
                    self.flush_batch(&mut batch, &mut out);
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
        self.flush_batch(&mut batch, &mut out);
        output.write_all(&out)?;
        output.flush()?;
        Ok(self.stats)
    }

    fn flush_batch(&mut self, batch: &mut Batch, out: &mut Vec<u8>) {
        // Phases whose loops are short and whose loads are independent, so the
        // CPU overlaps the cache misses of different lines: rank each address,
        // touch each symbol's record, then look up (now from cache) and print.
        let n = batch.plans.len();
        let mut ranks = [0usize; BATCH];
        for (r, (_, plan)) in ranks.iter_mut().zip(&batch.plans) {
            if let Some(addr) = plan.addr() {
                let a = addr.wrapping_sub(self.opts.slide);
                *r = self.map.rank_in(a, self.index.window(a));
            }
        }
        let mut touch = 0u8;
        for &r in &ranks[..n] {
            if r > 0 {
                touch ^= self.map.symbol_type(r - 1);
            }
        }
        std::hint::black_box(touch);
        for (i, (range, plan)) in batch.plans.iter().enumerate() {
            let hit = plan.addr().and_then(|addr| {
                let hit = self
                    .map
                    .lookup_ranked(addr.wrapping_sub(self.opts.slide), ranks[i]);
                self.count(addr, hit.is_some());
                hit
            });
            self.emit(&batch.text[range.clone()], *plan, hit.as_ref(), out);
        }
        batch.text.clear();
        batch.plans.clear();
    }
}

/// Lines handled per batch in [`Resolver::run`].
pub const BATCH: usize = 64;

/// What to do with one line.
#[derive(Debug, Clone, Copy)]
enum Plan {
    /// Copy it unchanged.
    Pass,
    /// A bare address: print `ADDR TYPE NAME+0xOFF/0xSIZE`.
    Bare { addr: u64 },
    /// Replace `body[from..to]` with `NAME+0xOFF[/0xSIZE]`.
    Replace {
        addr: u64,
        from: usize,
        to: usize,
        size: bool,
    },
}

impl Plan {
    fn addr(&self) -> Option<u64> {
        match *self {
            Plan::Pass => None,
            Plan::Bare { addr } | Plan::Replace { addr, .. } => Some(addr),
        }
    }
}

/// Lines waiting for their lookups.
#[derive(Debug, Default)]
struct Batch {
    text: Vec<u8>,
    plans: Vec<(std::ops::Range<usize>, Plan)>,
}

impl Batch {
    fn push(&mut self, line: &[u8], plan: Plan) {
        let start = self.text.len();
        self.text.extend_from_slice(line);
        self.plans.push((start..self.text.len(), plan));
    }
}
