//! Recognising the kinds of input line (bare address, perf frame, oops and
//! dmesg lines) and where in each the address and symbol are.

use super::*;

#[inline]
pub(super) fn trim_end_nl(line: &[u8]) -> (&[u8], &[u8]) {
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
pub(super) fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

pub(super) fn skip_blanks(s: &[u8], at: usize) -> usize {
    at + s[at..].iter().take_while(|&&b| is_blank(b)).count()
}

pub(super) fn strip_0x(s: &[u8]) -> Option<&[u8]> {
    s.strip_prefix(b"0x").or_else(|| s.strip_prefix(b"0X"))
}

pub(super) fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    bstr::ByteSlice::find(hay, needle)
}

/// End of the token starting at `at` (up to a blank or the end).
pub(super) fn token_end(s: &[u8], at: usize) -> usize {
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
pub(super) fn parse_sym_off(tok: &[u8]) -> Option<(&[u8], u64, Option<u64>)> {
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
pub(super) enum Plan {
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
    /// An oops line with a `func+0xOFF/0xSIZE` reference, on a blob with
    /// source lines: rewritten as decode_stacktrace.sh does
    /// ([`Stacktrace`]); `addr` is the reference's (slid) address, `None`
    /// when the blob has no such function.
    Stacktrace { addr: Option<u64> },
}

impl Plan {
    pub(super) fn addr(&self) -> Option<u64> {
        match *self {
            Plan::Pass => None,
            Plan::Stacktrace { addr } => addr,
            Plan::Bare { addr } | Plan::Replace { addr, .. } => Some(addr),
        }
    }

    /// True when the output of this plan shows source lines: everything but
    /// perf frames, which show them only as inline frames (`--inline`).
    pub(super) fn wants_lines(&self, inline: bool) -> bool {
        match *self {
            Plan::Replace {
                kernel_style: false,
                ..
            } => inline,
            _ => true,
        }
    }
}

/// An oops line as `scripts/decode_stacktrace.sh` (Linux 6.x, `handle_line`
/// and `parse_symbol`) splits it: blank-separated words less the `[<ADDR>]`
/// ones, dmesg timestamps re-padded (`[` + `%13s`), and the last word taken
/// as the symbol reference, its `segment:` (`RIP: 0010:`) and parentheses
/// removed.
#[derive(Debug)]
pub(super) struct Stacktrace<'b> {
    /// The words before the symbol, in order.
    pub words: Vec<std::borrow::Cow<'b, [u8]>>,
    /// `0010:` or empty.
    pub segment: &'b [u8],
    /// The reference without segment and parentheses: `func+0x12/0x40`.
    pub symbol: &'b [u8],
    /// `func`.
    pub name: &'b [u8],
    /// `0x12`, or 0 without `+`.
    pub offset: u64,
    /// `xfs` of a `[xfs]` or `[xfs BUILDID]` reference.
    pub module: Option<&'b [u8]>,
    /// The hex build-id of a `[xfs BUILDID]` reference.
    pub build_id: Option<&'b [u8]>,
}

/// True for the lines decode_stacktrace.sh rewrites: they hold `[<…>]` or
/// `X+0xHEX/0xHEX` (lower-case hex, X not blank or `+`).
fn stacktrace_trigger(body: &[u8]) -> bool {
    if let Some(o) = find(body, b"[<") {
        let rest = &body[o + 2..];
        if let Some(c) = find(rest, b">]")
            && c > 0
            && !rest[..c].contains(&b']')
        {
            return true;
        }
    }
    let lhex = |b: &u8| b.is_ascii_digit() || (b'a'..=b'f').contains(b);
    body.iter().enumerate().any(|(i, &b)| {
        if b != b'+' || i == 0 || matches!(body[i - 1], b'+' | b' ') {
            return false;
        }
        let r = &body[i + 1..];
        let Some(r) = r.strip_prefix(b"0x") else {
            return false;
        };
        let n = r.iter().take_while(|b| lhex(b)).count();
        n > 0 && r[n..].starts_with(b"/0x") && r.get(n + 3).is_some_and(lhex)
    })
}

impl<'b> Stacktrace<'b> {
    /// Splits `body` (no newline) as the script does; `None` when the
    /// script would not touch it.
    pub(super) fn parse(body: &'b [u8]) -> Option<Self> {
        if !stacktrace_trigger(body) {
            return None;
        }
        let mut words: Vec<Option<std::borrow::Cow<'b, [u8]>>> = body
            .split(|&b| b == b' ' || b == b'\t')
            .filter(|w| !w.is_empty())
            .map(|w| Some(w.into()))
            .collect();
        let n = words.len();
        for i in 0..n {
            if words[i].as_deref().is_some_and(|w| {
                find(w, b"[<").is_some_and(|o| {
                    let r = &w[o + 2..];
                    find(r, b">]").is_some_and(|c| c > 0 && !r[..c].contains(&b']'))
                })
            }) {
                words[i] = None;
            }
            if words[i].as_deref() == Some(b"[")
                && words
                    .get(i + 1)
                    .and_then(|w| w.as_deref())
                    .is_some_and(|w| w.ends_with(b"]"))
            {
                words[i] = None;
                let t = words[i + 1].take().unwrap_or_default();
                let pad = 13usize.saturating_sub(t.len());
                let mut v = b"[".to_vec();
                v.resize(1 + pad, b' ');
                v.extend_from_slice(&t);
                words[i + 1] = Some(v.into());
            }
        }
        let mut last = n.checked_sub(1)?;
        let is_hex_close = |w: &[u8]| {
            let k = w
                .iter()
                .take_while(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
                .count();
            k > 0 && w.get(k) == Some(&b']')
        };
        // `[mod BUILDID]` is two words; `[mod]` one (the script's
        // `modbuildid` and `module`).
        let mut build_id: Option<&'b [u8]> = None;
        if last > 0 && words[last].as_deref().is_some_and(is_hex_close) {
            if let Some(std::borrow::Cow::Borrowed(w)) = words[last].take() {
                build_id = Some(&w[..w.len() - 1]);
            }
            last -= 1;
        }
        let mut module: Option<&'b [u8]> = None;
        if let Some(std::borrow::Cow::Borrowed(w)) = words[last].as_ref() {
            let w: &'b [u8] = w;
            if w.len() > 2 && w[0] == b'[' && (w.ends_with(b"]") || build_id.is_some()) {
                module = Some(w[1..].strip_suffix(b"]").unwrap_or(&w[1..]));
            }
        }
        if module.is_some() {
            words[last] = None;
            last = last.checked_sub(1)?;
        } else if build_id.is_some() {
            return None;
        }
        let sym: &'b [u8] = match words[last].take() {
            Some(std::borrow::Cow::Borrowed(w)) => w,
            Some(std::borrow::Cow::Owned(_)) => return None, // a re-padded timestamp
            None => b"",
        };
        let sym = sym.strip_prefix(b"(").unwrap_or(sym);
        let sym = sym.strip_suffix(b")").unwrap_or(sym);
        let (segment, symbol) = match sym.iter().position(|&b| b == b':') {
            Some(c) => (&sym[..=c], &sym[c + 1..]),
            None => (&sym[..0], sym),
        };
        let (name, offset) = match symbol.iter().rposition(|&b| b == b'+') {
            Some(p) => {
                let off = &symbol[p + 1..];
                let off = &off[..off.iter().position(|&b| b == b'/').unwrap_or(off.len())];
                (
                    &symbol[..p],
                    strip_0x(off).and_then(hex::parse_u64).unwrap_or(0),
                )
            }
            None => (symbol, 0),
        };
        Some(Stacktrace {
            words: words.into_iter().flatten().collect(),
            segment,
            symbol,
            name,
            offset,
            module,
            build_id,
        })
    }
}

impl Resolver<'_, '_> {
    /// Decides what to do with a line, without looking its address up.
    /// Decides what to do with a line; a module reference also sets
    /// `self.module_addr` (its module-space address).
    pub(super) fn plan(&mut self, line: &[u8]) -> Plan {
        self.module_addr = None;
        let p = self.plan_kernel(line);
        if self.module_addr.is_none()
            && let (Some(addr), Some(l)) = (p.addr(), &self.loaded)
        {
            // A raw address in a module section of the --loaded snapshot.
            if !matches!(p, Plan::Stacktrace { .. }) {
                self.module_addr = l.to_module_space(addr);
            }
        }
        p
    }

    fn plan_kernel(&mut self, line: &[u8]) -> Plan {
        self.lineno += 1;
        let (body, _) = trim_end_nl(line);
        if let Some(p) = self.bare_address(body) {
            return p;
        }
        if let Some(p) = self.perf_frame(body) {
            return p;
        }
        let p = self.kernel_log(body);
        if !matches!(p, Plan::Pass) {
            return p;
        }
        let Some(st) = Stacktrace::parse(body) else {
            return p;
        };
        if let Some(m) = st.module {
            // Decoded when the blob has the module with lines (or for
            // JSON); otherwise the line passes unchanged.
            let has_lines = self.modules.as_ref().is_some_and(|ms| ms.lines().is_some());
            if (has_lines || self.opts.json)
                && let Some(a) = self.module_ref(m, st.build_id, st.name, st.offset)
            {
                self.module_addr = Some(a);
                // The runtime address, when the line has `[<ADDR>]`
                // (for JSON; the lookup uses module_addr).
                let addr = find(body, b"[<").and_then(|o| {
                    let r = &body[o + 2..];
                    r.iter()
                        .position(|&b| b == b'>')
                        .and_then(|c| hex::parse_u64(&r[..c]))
                });
                return Plan::Stacktrace { addr };
            }
            return p;
        }
        if self.lines.is_some() {
            let addr = self
                .map
                .lookup_name(st.name)
                .filter(|_| !st.name.is_empty())
                .map(|s| {
                    s.address
                        .wrapping_add(st.offset)
                        .wrapping_add(self.opts.slide)
                });
            return Plan::Stacktrace { addr };
        }
        p
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
        if frame_len < body.len() && body[frame_len..].starts_with(b" ([") {
            let m = &body[frame_len + 3..body.len() - 2];
            if let Some((name, off, _)) = parse_sym_off(sym) {
                self.module_addr = self.module_ref(m, None, name, off);
            }
        } else {
            self.learn_slide(addr, sym);
        }
        Some(Plan::Replace {
            addr,
            from: addr_end + 1,
            to: frame_len,
            kernel_style: false,
        })
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
    pub(super) fn module_ref(
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
                && body.get(close + 1) == Some(&b']')
                && let Some(addr) = hex::parse_u64(&body[a_at..close])
            {
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
                self.check_ref(tok, Some(addr), &body[te..]);
                return Plan::Pass;
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
                self.check_ref(tok, None, &body[te..]);
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
                    self.check_ref(tok, None, rest);
                }
            }
        }
        Plan::Pass
    }

    /// Checks a `func+0xOFF[/0xSIZE]` reference against the blob; `rest`
    /// is what follows it on the line (` [mod]` for a module's function,
    /// checked against the module space when the blob has one).
    fn check_ref(&mut self, tok: &[u8], addr: Option<u64>, rest: &[u8]) {
        let Some((name, off, size)) = parse_sym_off(tok) else {
            return;
        };
        if let Some(m) = rest.strip_prefix(b" [") {
            let m = &m[..m
                .iter()
                .position(|&b| b == b' ' || b == b']')
                .unwrap_or(m.len())];
            let Some(ms) = &self.modules else {
                return self.check_kernel_ref(name, off, size, tok, addr);
            };
            // A module the blob lacks is not checked against vmlinux.
            if ms.find_module(m).is_some() {
                self.stats.checked += 1;
                let ok = self.module_ref(m, None, name, off).is_some_and(|a| {
                    let ms = self.modules.as_ref();
                    ms.and_then(|ms| ms.lookup_address(a))
                        .is_some_and(|h| h.hit.offset == off)
                });
                self.stats.mismatched += u64::from(!ok);
            }
            return;
        }
        self.check_kernel_ref(name, off, size, tok, addr);
    }

    fn check_kernel_ref(
        &mut self,
        name: &[u8],
        off: u64,
        size: Option<u64>,
        tok: &[u8],
        addr: Option<u64>,
    ) {
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
