//! The resolver stream behind `ksym-resolve`: reads lines, rewrites the ones
//! that carry kernel code addresses, passes every other line through byte for
//! byte.
//!
//! Line kinds (README "ksym-resolve" shows each with an example):
//! - a bare hex address (`ffffffff81234567`, 5 to 16 digits, or `0x` and 1 to
//!   16 digits; leading blanks allowed) →
//!   `ADDR TYPE NAME+0xOFF/0xSIZE` (kernel `%pS` style), `ADDR ? [unknown]`;
//! - a `perf script` frame whose DSO is `[kernel.kallsyms]`
//!   (`\tADDR SYM+0xOFF (DSO)`, also the one-line sample form) → SYM replaced
//!   by ours, the rest kept;
//! - a `perf script -F ip,sym[,symoff]` or bcc-style frame (`\tADDR SYM`,
//!   `\t0xADDR SYM`, no DSO) at a kernel address (at or above the first
//!   symbol) → SYM replaced likewise;
//! - kernel oops / dmesg lines: `[<ADDR>] 0xADDR` and `[<ADDR>] [unknown]`
//!   (libbpf-tools memleak prints `[<ADDR>] SYM` too) get `func+0x12/0x40` in
//!   place of the raw address; `RIP: 0010:0xADDR` likewise;
//! - `func+0x12/0x40` references already symbolized by a kernel (`RIP:
//!   0010:func+…`, ` ? func+…`, `[<ADDR>] func+…`, `func+… [mod]`) are left as
//!   they are and checked against the blob ([`ResolveStats::checked`]); with
//!   [`ResolveOptions::kaslr_from_sym`] the first one that comes with an
//!   address sets the KASLR slide.
//!
//! Other hex on such lines (RSP, register dumps, timestamps, `Code:` bytes)
//! is data, not code: it is never touched.

use std::io::{self, BufRead, Write};

use crate::addrindex::AddressIndex;
use crate::blob::Kallsyms;
use crate::hex;
use crate::lines::{Line, for_each_line};
use crate::reader::AddressHit;

/// Lines longer than this are passed through in pieces without being parsed.
pub const MAX_LINE: usize = 64 * 1024;

/// Output is handed to the writer in blocks of about this many bytes.
pub const OUT_BLOCK: usize = 64 * 1024;

/// Lines handled per batch in [`Resolver::run`].
pub const BATCH: usize = 64;

/// How to print.
#[derive(Debug, Clone, Copy, Default)]
pub struct ResolveOptions {
    /// Print `/0xSIZE` after offsets (kernel `%pS`); perf frames never get one.
    pub size: bool,
    /// KASLR slide subtracted from every address before lookup; the printed
    /// address is the original.
    pub slide: u64,
    /// Set the slide from the first `[<ADDR>] func+0xOFF` or perf frame whose
    /// symbol is in the blob: `ADDR − OFF − address(func)`.
    pub kaslr_from_sym: bool,
    /// Hand each output line to the writer (and flush) at once.
    pub line_buffered: bool,
    /// One JSON object per address instead of text; other lines are dropped.
    pub json: bool,
}

/// What a run saw.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResolveStats {
    /// Input lines.
    pub lines: u64,
    /// Addresses looked up.
    pub lookups: u64,
    /// Lookups that found a symbol.
    pub resolved: u64,
    /// Kernel addresses that were zero (`kptr_restrict` hides them so).
    pub zero: u64,
    /// `func+0xOFF[/0xSIZE]` references checked against the blob.
    pub checked: u64,
    /// Checked references whose function is not in the blob, or whose offset
    /// or size disagrees with it (another kernel build?).
    pub mismatched: u64,
    /// The slide learnt with `kaslr_from_sym`, and the line it came from.
    pub learnt_slide: Option<(u64, u64)>,
}

/// Rewrites lines against one blob (either format).
#[derive(Debug)]
pub struct Resolver<'m, 'a> {
    map: &'m Kallsyms<'a>,
    opts: ResolveOptions,
    index: AddressIndex,
    first_address: Option<u64>,
    lineno: u64,
    stats: ResolveStats,
    /// A name expanded for JSON escaping (reused: no allocation per line).
    scratch: Vec<u8>,
    names: NameCache,
}

/// v2 names decoded once, by name-order rank: a v2 name is front-coded and
/// pair-coded, so decoding it costs more than copying it. Grows to at most
/// the raw names' size (1.4 MB for a 122k-symbol kernel).
#[derive(Debug, Default)]
struct NameCache {
    /// Per rank: `start << 16 | len` in `arena`, or 0 when not decoded yet.
    at: Vec<u64>,
    arena: Vec<u8>,
}

impl NameCache {
    /// Reads the cache entry and first byte `push` will read for `name`.
    #[inline]
    fn touch(&self, name: &crate::reader::Name<'_>) -> u8 {
        let Some(e) = name.coded().and_then(|c| self.at.get(c.key().0)) else {
            return 0;
        };
        self.arena.get((*e >> 16) as usize).copied().unwrap_or(0)
    }

    /// Appends `name` to `out`, from the cache when it holds it.
    #[inline]
    fn push(&mut self, out: &mut Vec<u8>, name: &crate::reader::Name<'_>) {
        let Some(c) = name.coded() else {
            return name.extend_into(out);
        };
        let (rank, pfx) = c.key();
        if pfx {
            out.extend_from_slice(crate::v2::layout::PFX);
        }
        if rank >= self.at.len() {
            self.at.resize(rank + 1, 0);
        }
        let mut e = self.at[rank];
        if e == 0 {
            let start = self.arena.len();
            c.for_each_stored_run(|r| self.arena.extend_from_slice(r));
            e = (start as u64) << 16 | (self.arena.len() - start) as u64;
            self.at[rank] = e;
        }
        let (start, len) = ((e >> 16) as usize, (e & 0xFFFF) as usize);
        out.extend_from_slice(&self.arena[start..start + len]);
    }
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

fn skip_blanks(s: &[u8], at: usize) -> usize {
    at + s[at..].iter().take_while(|&&b| is_blank(b)).count()
}

fn strip_0x(s: &[u8]) -> Option<&[u8]> {
    s.strip_prefix(b"0x").or_else(|| s.strip_prefix(b"0X"))
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    bstr::ByteSlice::find(hay, needle)
}

/// End of the token starting at `at` (up to a blank or the end).
fn token_end(s: &[u8], at: usize) -> usize {
    at + s[at..]
        .iter()
        .position(|&b| is_blank(b))
        .unwrap_or(s.len() - at)
}

/// Length of a leading dmesg timestamp `[   12.345678]`, or 0.
fn dmesg_prefix_len(s: &[u8]) -> usize {
    if s.first() != Some(&b'[') {
        return 0;
    }
    match s.iter().position(|&b| b == b']') {
        Some(e)
            if e > 1
                && s[1..e]
                    .iter()
                    .all(|&b| b == b' ' || b == b'.' || b.is_ascii_digit()) =>
        {
            e + 1
        }
        _ => 0,
    }
}

/// `name+0xOFF[/0xSIZE]` → (name, offset, size).
fn parse_sym_off(tok: &[u8]) -> Option<(&[u8], u64, Option<u64>)> {
    let plus = tok.iter().rposition(|&b| b == b'+')?;
    let (name, rest) = (&tok[..plus], &tok[plus + 1..]);
    if name.is_empty() {
        return None;
    }
    let (off, size) = match rest.iter().position(|&b| b == b'/') {
        Some(sl) => (
            &rest[..sl],
            Some(hex::parse_u64(strip_0x(&rest[sl + 1..])?)?),
        ),
        None => (rest, None),
    };
    Some((name, hex::parse_u64(strip_0x(off)?)?, size))
}

const KERNEL_DSOS: [&[u8]; 3] = [
    b" ([kernel.kallsyms])",
    b" ([guest.kernel.kallsyms])",
    b" ([kernel.vmlinux])",
];

/// What to do with one line.
#[derive(Debug, Clone, Copy)]
enum Plan {
    /// Copy it unchanged.
    Pass,
    /// A bare address: print `ADDR TYPE NAME+0xOFF/0xSIZE`.
    Bare { addr: u64 },
    /// Replace `body[from..to]` with `NAME+0xOFF`, and with `kernel_style`
    /// (oops lines, `%pS`) `/0xSIZE` and ` [mod]` after it; perf frames
    /// carry their DSO in a column of their own.
    Replace {
        addr: u64,
        from: usize,
        to: usize,
        kernel_style: bool,
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

impl<'m, 'a> Resolver<'m, 'a> {
    /// A resolver over `map`.
    pub fn new(map: &'m Kallsyms<'a>, opts: ResolveOptions) -> Self {
        let first_address = map.symbols().next().map(|s| s.address);
        Resolver {
            map,
            opts,
            index: AddressIndex::for_blob(map),
            first_address,
            lineno: 0,
            stats: ResolveStats::default(),
            scratch: Vec::with_capacity(256),
            names: NameCache::default(),
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

    /// Appends `name+0xOFF[/0xSIZE][ [mod]]`, or `[unknown]`.
    #[inline]
    fn push_sym(
        &mut self,
        out: &mut Vec<u8>,
        hit: Option<&AddressHit<'_>>,
        size: bool,
        module: bool,
    ) {
        match hit {
            Some(h) => {
                self.names.push(out, &h.symbol.name);
                out.push(b'+');
                hex::push_u64_0x(out, h.offset);
                if let (true, Some(s)) = (size, h.size) {
                    out.push(b'/');
                    hex::push_u64_0x(out, s);
                }
                if let Some(m) = h.symbol.module.filter(|_| module) {
                    out.extend_from_slice(b" [");
                    out.extend_from_slice(m);
                    out.push(b']');
                }
            }
            None => out.extend_from_slice(b"[unknown]"),
        }
    }

    /// Decides what to do with a line, without looking its address up.
    fn plan(&mut self, line: &[u8]) -> Plan {
        self.lineno += 1;
        let (body, _) = trim_end_nl(line);
        if let Some(p) = self.bare_address(body) {
            return p;
        }
        if let Some(p) = self.perf_frame(body) {
            return p;
        }
        self.kernel_log(body)
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
                None => return None, // [unknown], [vdso], a module the blob lacks
            },
            None if body.ends_with(b")") => return None, // a user-space DSO
            None => (body.len(), false),
        };
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
        if addr_end >= frame.len() {
            return None; // a bare address, handled elsewhere
        }
        let sym = &frame[addr_end + 1..];
        if !kernel {
            // A user-space frame of -F ip,sym, or not a frame at all.
            // A single symbol token; not a second hex word (old stack dumps).
            if sym.is_empty() || sym.contains(&b' ') && !sym.starts_with(b"[unknown]") {
                return None;
            }
            if hex::parse_u64(strip_0x(sym).unwrap_or(sym)).is_some() {
                return None;
            }
            if self
                .first_address
                .is_none_or(|f| addr.wrapping_sub(self.opts.slide) < f)
            {
                return None;
            }
        }
        self.learn_slide(addr, sym);
        Some(Plan::Replace {
            addr,
            from: addr_end + 1,
            to: frame_len,
            kernel_style: false,
        })
    }

    /// For a frame ending ` ([MOD])` where the blob holds module MOD (v2
    /// keeps /proc/kallsyms' module column), the length before the DSO.
    fn module_dso(&self, body: &[u8]) -> Option<usize> {
        let open = body.len() - body.iter().rev().position(|&b| b == b'[')? - 1;
        let start = open.checked_sub(2)?;
        if &body[start..open] != b" (" {
            return None;
        }
        self.map
            .has_module(&body[open + 1..body.len() - 2])
            .then_some(start)
    }

    /// Kernel oops / dmesg / libbpf-tools lines.
    fn kernel_log(&mut self, body: &[u8]) -> Plan {
        // `[<ADDR>] TOKEN`: TOKEN is `0xADDR` or `[unknown]` (rewrite), or a
        // `func+0x…` reference, maybe after `? ` (check).
        if let Some(open) = find(body, b"[<") {
            let a_at = open + 2;
            if let Some(close) = body[a_at..]
                .iter()
                .position(|&b| b == b'>')
                .map(|p| a_at + p)
            {
                if body.get(close + 1) == Some(&b']') {
                    if let Some(addr) = hex::parse_u64(&body[a_at..close]) {
                        let mut t = skip_blanks(body, close + 2);
                        if body[t..].starts_with(b"? ") {
                            t += 2;
                        }
                        let te = token_end(body, t);
                        let tok = &body[t..te];
                        let raw = strip_0x(tok).and_then(hex::parse_u64) == Some(addr);
                        if raw || tok == b"[unknown]" {
                            return Plan::Replace {
                                addr,
                                from: t,
                                to: te,
                                kernel_style: true,
                            };
                        }
                        self.check_ref(tok, Some(addr));
                        return Plan::Pass;
                    }
                }
            }
        }
        // `RIP: 0010:0xADDR` or `RIP: 0010:func+0x…` (x86; `pc : ` on arm64).
        for key in [&b"RIP: "[..], b"pc : ", b"PC is at "] {
            if let Some(k) = find(body, key) {
                let mut t = k + key.len();
                // x86 prints the code segment first: `0010:`.
                if let Some(c) = body[t..].iter().take(5).position(|&b| b == b':') {
                    t += c + 1;
                }
                let te = token_end(body, t);
                let tok = &body[t..te];
                if let Some(addr) = strip_0x(tok).and_then(hex::parse_u64) {
                    return Plan::Replace {
                        addr,
                        from: t,
                        to: te,
                        kernel_style: true,
                    };
                }
                self.check_ref(tok, None);
                return Plan::Pass;
            }
        }
        // Call trace lines: ` ? func+0x12/0x40`, ` func+0x12/0x40 [mod]`,
        // maybe behind a dmesg timestamp `[   12.345678]`.
        let from = dmesg_prefix_len(body);
        let t = skip_blanks(body, from);
        let t = if t > from { t } else { 0 };
        if t > 0 {
            let t = if body[t..].starts_with(b"? ") {
                t + 2
            } else {
                t
            };
            let te = token_end(body, t);
            let rest = &body[te..];
            if rest.is_empty() || rest.starts_with(b" [") {
                let tok = &body[t..te];
                if tok.contains(&b'/') {
                    self.check_ref(tok, None);
                }
            }
        }
        Plan::Pass
    }

    /// Checks a `func+0xOFF[/0xSIZE]` reference against the blob.
    fn check_ref(&mut self, tok: &[u8], addr: Option<u64>) {
        let Some((name, off, size)) = parse_sym_off(tok) else {
            return;
        };
        self.stats.checked += 1;
        let ok = self.map.lookup_name(name).is_some_and(|s| {
            let hit = self.map.lookup_address(s.address.wrapping_add(off));
            hit.is_some_and(|h| {
                h.symbol.address == s.address && size.is_none_or(|z| h.size == Some(z))
            })
        });
        self.stats.mismatched += u64::from(!ok);
        if let Some(a) = addr {
            self.learn_slide(a, tok);
        }
    }

    /// With `kaslr_from_sym`, sets the slide from the first `ADDR` +
    /// `func+0xOFF` pair whose function is in the blob.
    fn learn_slide(&mut self, addr: u64, sym: &[u8]) {
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

    /// Writes the line as `plan` says, with `hit` the lookup of its address.
    fn emit(&mut self, line: &[u8], plan: Plan, hit: Option<&AddressHit<'_>>, out: &mut Vec<u8>) {
        self.stats.lines += 1;
        if self.opts.json {
            if let Some(addr) = plan.addr() {
                self.emit_json(addr, hit, out);
            }
            return;
        }
        let (body, nl) = trim_end_nl(line);
        let nl: &[u8] = if nl.is_empty() { b"\n" } else { nl };
        match plan {
            Plan::Pass => out.extend_from_slice(line),
            Plan::Bare { addr } => {
                hex::push_u64_padded(out, addr);
                match hit {
                    Some(h) => {
                        out.extend_from_slice(&[b' ', h.symbol.symbol_type, b' ']);
                        self.push_sym(out, Some(h), self.opts.size, true);
                    }
                    None => out.extend_from_slice(b" ? [unknown]"),
                }
                out.extend_from_slice(nl);
            }
            Plan::Replace {
                from,
                to,
                kernel_style,
                ..
            } => {
                out.extend_from_slice(&body[..from]);
                self.push_sym(out, hit, kernel_style && self.opts.size, kernel_style);
                out.extend_from_slice(&body[to..]);
                out.extend_from_slice(nl);
            }
        }
    }

    /// `{"addr":"0x…","type":"T","name":"…","offset":N,"size":N|null,"module":"…"|null,"status":"ok"}`;
    /// `status` is `ok`, `unknown` or `no_size` (the last symbol, end unknown).
    fn emit_json(&mut self, addr: u64, hit: Option<&AddressHit<'_>>, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"addr\":\"0x");
        hex::push_u64_padded(out, addr);
        match hit {
            None => out.extend_from_slice(
                b"\",\"type\":null,\"name\":null,\"offset\":null,\"size\":null,\"module\":null,\"status\":\"unknown\"}\n",
            ),
            Some(h) => {
                out.extend_from_slice(b"\",\"type\":\"");
                out.push(if h.symbol.symbol_type.is_ascii_alphanumeric() { h.symbol.symbol_type } else { b'?' });
                out.extend_from_slice(b"\",\"name\":");
                self.scratch.clear();
                self.names.push(&mut self.scratch, &h.symbol.name);
                let _ = serde_json::to_writer(&mut *out, &String::from_utf8_lossy(&self.scratch));
                out.extend_from_slice(b",\"offset\":");
                let _ = write!(out, "{}", h.offset);
                out.extend_from_slice(b",\"size\":");
                match h.size {
                    Some(s) => {
                        let _ = write!(out, "{s}");
                    }
                    None => out.extend_from_slice(b"null"),
                }
                out.extend_from_slice(b",\"module\":");
                match h.symbol.module {
                    Some(m) => {
                        let _ = serde_json::to_writer(&mut *out, &String::from_utf8_lossy(m));
                    }
                    None => out.extend_from_slice(b"null"),
                }
                let status: &[u8] = if h.size.is_some() { b"ok" } else { b"no_size" };
                out.extend_from_slice(b",\"status\":\"");
                out.extend_from_slice(status);
                out.extend_from_slice(b"\"}\n");
            }
        }
    }

    /// Resolves `input` to `output` until the input ends.
    ///
    /// Lines are handled in batches (up to [`BATCH`] lines or [`OUT_BLOCK`]
    /// bytes; one line with `line_buffered`, or while `kaslr_from_sym` has not
    /// found the slide yet): all lookups of a batch run back to back so their
    /// cache misses overlap.
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
                    let learning = self.opts.kaslr_from_sym && self.stats.learnt_slide.is_none();
                    if line_buffered
                        || learning
                        || batch.plans.len() >= BATCH
                        || batch.text.len() >= OUT_BLOCK
                    {
                        self.flush_batch(&mut batch, &mut out);
                    }
                }
                Line::Long { piece, first } => {
                    self.flush_batch(&mut batch, &mut out);
                    if first {
                        self.lineno += 1;
                        self.stats.lines += 1;
                    }
                    if !self.opts.json {
                        out.extend_from_slice(piece);
                    }
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
            touch ^= self.map.touch(r);
        }
        let mut hits: [Option<AddressHit<'a>>; BATCH] = [None; BATCH];
        for (i, (_, plan)) in batch.plans.iter().enumerate() {
            hits[i] = plan.addr().and_then(|addr| {
                let hit = self
                    .map
                    .lookup_ranked(addr.wrapping_sub(self.opts.slide), ranks[i]);
                self.count(addr, hit.is_some());
                hit
            });
        }
        // v2: the decoded names these hits print, before printing.
        for h in hits[..n].iter().flatten() {
            touch ^= self.names.touch(&h.symbol.name);
        }
        std::hint::black_box(touch);
        for (i, (range, plan)) in batch.plans.iter().enumerate() {
            self.emit(&batch.text[range.clone()], *plan, hits[i].as_ref(), out);
        }
        batch.text.clear();
        batch.plans.clear();
    }
}

/// Packs the text symbols of a /proc/kallsyms text in memory as a v2 blob,
/// which keeps the `[module]` column (FORMAT.md §10.5): what
/// `ksym-resolve --kallsyms FILE` resolves against.
///
/// Errors: the first line that is not a symbol line (with its number), or a
/// symbol the writer refuses.
pub fn pack_kallsyms_text(
    text: &[u8],
) -> Result<crate::blobfile::AlignedBlob, crate::writer::PackError> {
    use crate::nm::{NmLine, is_text_type, parse_line};
    use crate::v2::write::{V2Options, pack_v2};
    use crate::writer::{PackError, PackErrorKind, SymbolList};
    let mut list = SymbolList::new();
    for (n, line) in text.split(|&b| b == b'\n').enumerate() {
        let at_line = |kind| PackError {
            line: Some(n as u64 + 1),
            kind,
        };
        match parse_line(line) {
            Ok(NmLine::Symbol(s)) if is_text_type(s.symbol_type) => {
                list.push(s.address, s.symbol_type, s.name)
                    .map_err(|e| at_line(e.kind))?;
                if let Some(m) = s.module {
                    list.set_last_module(m);
                }
            }
            Ok(_) => {}
            Err(e) => return Err(at_line(PackErrorKind::Line(e))),
        }
    }
    let packed = pack_v2(&list, &V2Options::default())?;
    Ok(crate::blobfile::AlignedBlob::copy_from(&packed.blob))
}

/// Reverse lookups: each input line is a name; writes `ADDR TYPE NAME` for
/// every symbol of that name (address order, `slide` added), or `? ? NAME`.
///
/// Errors: read and write errors.
pub fn resolve_names<R: BufRead, W: Write>(
    map: &Kallsyms<'_>,
    input: R,
    mut out: W,
    slide: u64,
    line_buffered: bool,
) -> io::Result<()> {
    let mut line = Vec::with_capacity(256);
    for_each_line(input, MAX_LINE, |_, l| {
        let Line::Full(l) = l else { return Ok(()) };
        let (name, _) = trim_end_nl(l);
        line.clear();
        if name.is_empty() {
            line.push(b'\n');
        }
        for s in map.lookup_name_all(name) {
            hex::push_u64_padded(&mut line, s.address.wrapping_add(slide));
            line.extend_from_slice(&[b' ', s.symbol_type, b' ']);
            s.name.extend_into(&mut line);
            line.push(b'\n');
        }
        if line.is_empty() {
            line.extend_from_slice(b"? ? ");
            line.extend_from_slice(name);
            line.push(b'\n');
        }
        out.write_all(&line)?;
        if line_buffered {
            out.flush()?;
        }
        Ok(())
    })?;
    out.flush()
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
}
