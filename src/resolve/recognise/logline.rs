//! The code references on a kernel log line, wherever they stand: every
//! `func+0xOFF/0xSIZE` word (the kernel's `%pS`/`%pB`), and raw addresses
//! in frame positions only, as each architecture's printers write them:
//! - `[<ADDR>]` (`lib/dump_stack.c`, old x86, arm, s390's `([<ADDR>] …)`),
//!   and arm's `… from [<ADDR>] (…)` (`arch/arm/kernel/traps.c`);
//! - x86 `RIP: 0010:X`, arm64 `pc : X` and `lr : X`, riscv `epc : X` and
//!   ` ra : X`, arm `PC is at X` and `LR is at X`, powerpc `NIP [ADDR] X`
//!   and `LR [ADDR] X`, s390 `Krnl PSW : MASK ADDR (X)`;
//! - powerpc's call trace `[SP] [ADDR] X`, whose second bracket is code.
//!
//! Every other hex word (`RSP: 0018:ffffc9…`, `x29: ffff8000…`, `sp : …`,
//! `r10: …`, `Code:` bytes) is data and is never reported.
//!
//! [`scan`] only parses: the resolver looks the references up.

use super::bytes::{find, is_blank, parse_sym_off, strip_0x};
use crate::text::hex;

/// What a reference on a line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::resolve) enum Found {
    /// A raw address in a frame position, and how the symbol is shown:
    /// `token` is the text it replaces (`0xADDR`, `[unknown]`), or an
    /// empty range where ` SYM` (`Edit::Insert`) or ` (SYM)`
    /// (`Edit::Paren`) is inserted; `Edit::Keep` when the line already
    /// names the frame (`[<ADDR>] (name)`).
    Raw { addr: u64, edit: Edit },
    /// `func+0xOFF/0xSIZE`: `token` is the reference less parentheses and
    /// segment; `raw` the address the same frame shows; `module` the range
    /// of `mod` in a following `[mod]` or `[mod BUILDID]`, and `build_id`
    /// that of BUILDID; `words_end` the end of the last word it took.
    Sym {
        raw: Option<u64>,
        module: Option<(usize, usize)>,
        build_id: Option<(usize, usize)>,
        words_end: usize,
    },
}

/// How a raw address's symbol enters the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::resolve) enum Edit {
    /// In place of the token.
    Replace,
    /// ` SYM` after the token (an empty range at its end).
    Insert,
    /// ` (SYM)` after it.
    Paren,
    /// Nothing: the line names it already.
    Keep,
}

/// One reference: where its token is in the line (byte offsets) and what
/// it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::resolve) struct Reference {
    pub from: usize,
    pub to: usize,
    pub found: Found,
}

/// At most this many references are taken from one line; the rest of a
/// longer line passes through unread (no real log line comes near).
pub(in crate::resolve) const MAX_REFS: usize = 16;

/// Words of `s` from `at`: (start, end) of each run of non-blanks.
fn words(s: &[u8], at: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut i = at;
    std::iter::from_fn(move || {
        while i < s.len() && is_blank(s[i]) {
            i += 1;
        }
        if i >= s.len() {
            return None;
        }
        let start = i;
        while i < s.len() && !is_blank(s[i]) {
            i += 1;
        }
        Some((start, i))
    })
}

/// The address of a `[<ADDR>]` word (maybe after `(`), and where the
/// word ends.
fn frame_bracket(w: &[u8]) -> Option<u64> {
    let w = w.strip_prefix(b"(").unwrap_or(w);
    let inner = w.strip_prefix(b"[<")?.strip_suffix(b">]")?;
    hex::parse_u64(inner)
}

/// `[ADDR]` (powerpc).
fn plain_bracket(w: &[u8]) -> Option<u64> {
    let inner = w.strip_prefix(b"[")?.strip_suffix(b"]")?;
    (inner.len() >= 8).then(|| hex::parse_u64(inner)).flatten()
}

/// The core of a word that may be a reference, (start, end) in `w`: a
/// `name+0xOFF/0xSIZE` inside it ([`sym_span`]), or else the word less
/// `(`, `)`, `,` and `;` around it and a hex segment `0010:` before it.
fn core(w: &[u8]) -> (usize, usize) {
    if let Some(span) = sym_span(w) {
        return span;
    }
    let a = usize::from(w.first() == Some(&b'('));
    let mut b = w.len();
    while b > a && matches!(w[b - 1], b')' | b',' | b';') {
        b -= 1;
    }
    (a + segment(&w[a..b]), b.max(a))
}

/// The length of an x86 segment `0010:` at the start of `w` (1 to 4 hex
/// digits and one colon, not Rust's `::`), or 0.
fn segment(w: &[u8]) -> usize {
    match w.iter().position(|&x| x == b':') {
        Some(c)
            if c > 0
                && c <= 4
                && w.get(c + 1) != Some(&b':')
                && w[..c].iter().all(u8::is_ascii_hexdigit) =>
        {
            c + 1
        }
        _ => 0,
    }
}

/// Where a `name+0xOFF/0xSIZE` stands inside the word `w`, whatever a
/// writer put around it: brackets, parentheses, quotes, Markdown's
/// backticks, an assignment (`apic->send_IPI[f+0x0/0x40]`, `` `f+…` ``,
/// `"f+…"`, `'f+…'`, `<f+…>`, `a(f+…)`, `x=f+…`), or punctuation after it
/// (`f+0x1/0x2:`, `f+0x1/0x2.`). The name starts after the last byte that
/// no kernel symbol holds (`([{"'` `` ` `` `=,;|`) and after a segment; a
/// `<` that opens more than the name closes is the writer's. The size's
/// hex digits end it.
fn sym_span(w: &[u8]) -> Option<(usize, usize)> {
    let plus = find(w, b"+0x")?;
    let digits = |from: usize| {
        from + w[from..]
            .iter()
            .take_while(|b| b.is_ascii_hexdigit())
            .count()
    };
    let off_end = digits(plus + 3);
    if off_end == plus + 3 || !w[off_end..].starts_with(b"/0x") {
        return None;
    }
    let end = digits(off_end + 3);
    if end == off_end + 3 {
        return None;
    }
    let mut start = w[..plus]
        .iter()
        .rposition(|b| b"([{\"'`=,;|".contains(b))
        .map_or(0, |i| i + 1);
    start += segment(&w[start..plus]);
    let name = &w[start..plus];
    let opens = name.iter().filter(|&&b| b == b'<').count();
    if name.first() == Some(&b'<') && opens > name.iter().filter(|&&b| b == b'>').count() {
        start += 1;
    }
    (start < plus).then_some((start, end))
}

/// True for `name+0xOFF/0xSIZE` (the size is what tells a kernel's `%pS`
/// from other `+` text).
pub(in crate::resolve) fn is_sym_ref(tok: &[u8]) -> bool {
    matches!(parse_sym_off(tok), Some((_, _, Some(_))))
}

/// A raw value in a pc-like field: `0xADDR` is replaced (a kernel without
/// kallsyms prints `%pS` so), bare hex gets ` (SYM)` after it.
fn raw_value(w: &[u8]) -> Option<(u64, Edit)> {
    match strip_0x(w) {
        Some(d) => hex::parse_u64(d).map(|a| (a, Edit::Replace)),
        None if w.len() >= 8 => hex::parse_u64(w).map(|a| (a, Edit::Paren)),
        None => None,
    }
}

/// Finds the references on `line` from byte `at` (after the log prefix),
/// in order, into `out` (cleared first; at most [`MAX_REFS`]); `ws` is
/// scratch space for the word boundaries (reused: no allocation per line).
pub(in crate::resolve) fn scan(
    line: &[u8],
    at: usize,
    ws: &mut Vec<(usize, usize)>,
    out: &mut Vec<Reference>,
) {
    out.clear();
    ws.clear();
    // Only lines with a `+0x`, a bracket or a pc-like field can hold one.
    let rest = &line[at..];
    if find(rest, b"+0x").is_none() && !rest.contains(&b'[') && !rest.contains(&b':') {
        return;
    }
    ws.extend(words(line, at));
    let ws = &ws[..];
    let word = |k: usize| ws.get(k).map(|&(a, b)| &line[a..b]);
    // The raw address of the frame being read, for the reference after it.
    let mut pending: Option<u64> = None;
    let mut k = 0;
    while k < ws.len() && out.len() < MAX_REFS {
        let (ws0, we0) = ws[k];
        let w = &line[ws0..we0];
        // `[<ADDR>]`, then what names it.
        if let Some(addr) = frame_bracket(w) {
            let mut n = k + 1;
            if word(n) == Some(b"?") {
                n += 1;
            }
            let next = word(n).unwrap_or_default();
            let (ca, cb) = core(next);
            let inner = &next[ca..cb];
            let raw = strip_0x(inner).and_then(hex::parse_u64) == Some(addr);
            if raw || next == b"[unknown]" {
                let (a, b) = if raw { (ca, cb) } else { (0, next.len()) };
                let base = ws[n].0;
                out.push(Reference {
                    from: base + a,
                    to: base + b,
                    found: Found::Raw {
                        addr,
                        edit: Edit::Replace,
                    },
                });
                k = n + 1;
                continue;
            }
            if is_sym_ref(inner) {
                pending = Some(addr);
                k = n;
                continue;
            }
            let edit = if n >= ws.len() {
                Edit::Insert
            } else {
                Edit::Keep
            };
            out.push(Reference {
                from: we0,
                to: we0,
                found: Found::Raw { addr, edit },
            });
            k += 1;
            continue;
        }
        // pc-like fields: `KEY VALUE` where VALUE is raw or a reference.
        if let Some((vk, bracket)) = pc_field(ws, line, k) {
            if let Some(b) = bracket {
                pending = Some(b);
            }
            let (vs, ve) = ws[vk];
            let v = &line[vs..ve];
            // arm's `pc : [<ADDR>]`: a frame bracket, read as one.
            if frame_bracket(v).is_some() {
                k = vk;
                continue;
            }
            let (ca, cb) = core(v);
            if !is_sym_ref(&v[ca..cb])
                && let Some((addr, edit)) = raw_value(&v[ca..cb])
            {
                // `ADDR (func+0x…)`: the line names it already.
                let named = word(vk + 1).is_some_and(|n| {
                    let (a, b) = core(n);
                    is_sym_ref(&n[a..b])
                });
                if edit == Edit::Paren && named {
                    pending = Some(addr);
                    k = vk + 1;
                    continue;
                }
                // `(0xADDR)` keeps its parentheses: `core` left them out.
                let (from, to) = match edit {
                    Edit::Replace => (vs + ca, vs + cb),
                    _ => (ve, ve),
                };
                out.push(Reference {
                    from,
                    to,
                    found: Found::Raw { addr, edit },
                });
                k = vk + 1;
                continue;
            }
            // Falls through to the reference test on the value.
            k = vk;
        }
        let (ws0, we0) = ws[k];
        let w = &line[ws0..we0];
        let (ca, cb) = core(w);
        if is_sym_ref(&w[ca..cb]) {
            // `[mod]` or `[mod BUILDID]` after it.
            let (mut module, mut build_id, mut end) = (None, None, we0);
            if let Some(m) = word(k + 1).filter(|m| m.len() > 1 && m[0] == b'[') {
                let ms = ws[k + 1].0 + 1;
                if let Some(name) = m[1..].strip_suffix(b"]") {
                    if !name.is_empty() && !name.contains(&b'<') {
                        module = Some((ms, ms + name.len()));
                        end = ws[k + 1].1;
                    }
                } else if let Some(id) = word(k + 2).and_then(|i| i.strip_suffix(b"]"))
                    && !id.is_empty()
                    && id.iter().all(u8::is_ascii_hexdigit)
                {
                    module = Some((ms, ws[k + 1].1));
                    let is = ws[k + 2].0;
                    build_id = Some((is, is + id.len()));
                    end = ws[k + 2].1;
                }
            }
            out.push(Reference {
                from: ws0 + ca,
                to: ws0 + cb,
                found: Found::Sym {
                    raw: pending.take(),
                    module,
                    build_id,
                    words_end: end,
                },
            });
            k += 1 + usize::from(module.is_some()) + usize::from(build_id.is_some());
            continue;
        }
        // powerpc `[SP] [ADDR] X` at the start of the message.
        if k == 0
            && plain_bracket(w).is_some()
            && let Some(addr) = word(1).and_then(plain_bracket)
        {
            let next = word(2).unwrap_or_default();
            let (ca, cb) = core(next);
            if is_sym_ref(&next[ca..cb]) {
                pending = Some(addr);
            } else {
                let raw = strip_0x(&next[ca..cb]).and_then(hex::parse_u64) == Some(addr);
                let (from, to, edit) = if raw {
                    (ws[2].0 + ca, ws[2].0 + cb, Edit::Replace)
                } else {
                    let e = ws[1].1;
                    (
                        e,
                        e,
                        if ws.len() == 2 {
                            Edit::Insert
                        } else {
                            Edit::Keep
                        },
                    )
                };
                out.push(Reference {
                    from,
                    to,
                    found: Found::Raw { addr, edit },
                });
                k = if raw { 3 } else { 2 };
                continue;
            }
            k = 2;
            continue;
        }
        pending = None;
        k += 1;
    }
}

/// When word `k` opens a pc-like field, the index of its value word and
/// the address a bracket before the value shows (powerpc `NIP [ADDR] X`,
/// s390 `Krnl PSW : MASK ADDR (X)`).
fn pc_field(ws: &[(usize, usize)], line: &[u8], k: usize) -> Option<(usize, Option<u64>)> {
    let w = |i: usize| ws.get(i).map(|&(a, b)| &line[a..b]);
    let this = w(k)?;
    match this {
        // x86: `RIP: 0010:X` (the segment is part of the value word); a
        // user-mode segment (`0033:`, `0023:`, `002b:`) holds no kernel
        // address.
        b"RIP:" | b"EIP:" => {
            let v = w(k + 1)?;
            let user = [&b"0033:"[..], b"0023:", b"002b:"]
                .iter()
                .any(|u| v.starts_with(u));
            (!user).then_some((k + 1, None))
        }
        // arm64 `pc : X`, `lr : X`; riscv `epc : X`, ` ra : X`.
        b"pc" | b"lr" | b"epc" | b"ra" if w(k + 1) == Some(b":") && w(k + 2).is_some() => {
            Some((k + 2, None))
        }
        // arm `PC is at X`, `LR is at X`.
        b"PC" | b"LR" if w(k + 1) == Some(b"is") && w(k + 2) == Some(b"at") => {
            w(k + 3).map(|_| (k + 3, None))
        }
        // powerpc `NIP [ADDR] X`, `LR [ADDR] X`.
        b"NIP" | b"LR" => {
            let a = w(k + 1).and_then(plain_bracket)?;
            w(k + 2).map(|_| (k + 2, Some(a)))
        }
        // s390 `Krnl PSW : MASK ADDR (X)`.
        b"PSW" if w(k + 1) == Some(b":") => {
            let addr = w(k + 3).and_then(hex::parse_u64)?;
            match w(k + 4) {
                Some(x) if x.starts_with(b"(") => Some((k + 4, Some(addr))),
                _ => Some((k + 3, None)),
            }
        }
        _ => None,
    }
    .filter(|_| find(this, b"[<").is_none())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reference as (token text, kind letter, raw address).
    type Seen = (String, char, Option<u64>);

    /// The references of `line`.
    fn refs(line: &str) -> Vec<Seen> {
        let mut out = Vec::new();
        scan(line.as_bytes(), 0, &mut Vec::new(), &mut out);
        out.iter()
            .map(|r| {
                let t = line[r.from..r.to].to_string();
                match r.found {
                    Found::Raw { addr, edit } => (
                        t,
                        match edit {
                            Edit::Replace => 'R',
                            Edit::Insert => 'I',
                            Edit::Paren => 'P',
                            Edit::Keep => 'K',
                        },
                        Some(addr),
                    ),
                    Found::Sym { raw, .. } => (t, 'S', raw),
                }
            })
            .collect()
    }

    fn s(t: &str, k: char, a: Option<u64>) -> Seen {
        (t.into(), k, a)
    }

    /// Issue 33: references inside brackets, quotes and assignments keep
    /// only their own bytes, never a writer's punctuation in the name.
    #[test]
    fn references_inside_punctuation() {
        let f = "default_send_IPI_single+0x0/0x40";
        for line in [
            format!("apic->send_IPI[{f}]"),
            format!("pasted as `{f}` here"),
            format!("\"{f}\""),
            format!("'{f}'"),
            format!("<{f}>"),
            format!("a({f})"),
            format!("x={f}"),
            format!("at {f}:"),
            format!("in {f}."),
            format!("RIP: 0010:{f},"),
        ] {
            assert_eq!(refs(&line), vec![s(f, 'S', None)], "{line}");
        }
        // A Rust name's own brackets and colons stay.
        let r = "drop_in_place<alloc::vec::Vec<u8>>+0x1/0x2";
        assert_eq!(refs(&format!(" {r}")), vec![s(r, 'S', None)]);
        assert_eq!(refs(&format!(" <{r}>")), vec![s(r, 'S', None)]);
        let c = "fe::core::f+0x1/0x2";
        assert_eq!(refs(&format!(" {c}")), vec![s(c, 'S', None)]);
        // No size, or no name: not a %pS reference.
        assert_eq!(refs("x=f+0x10 and (+0x1/0x2)"), vec![]);
    }

    #[test]
    fn references_in_every_position() {
        let cases: &[(&str, Vec<Seen>)] = &[
            (
                " ? vfs_read+0x9d/0x130",
                vec![s("vfs_read+0x9d/0x130", 'S', None)],
            ),
            (
                " #0: ffff888003e2f098 (&tty->ldisc_sem){++++}-{0:0}, at: ldsem_down_read+0x33/0x40",
                vec![s("ldsem_down_read+0x33/0x40", 'S', None)],
            ),
            (
                "(ptrval): ffffffff812c80ee (__save_stack_trace+0x6e/0xd0)",
                vec![s("__save_stack_trace+0x6e/0xd0", 'S', None)],
            ),
            (
                "WARNING: CPU: 0 PID: 1 at kernel/foo.c:12 foo+0x80/0xb0",
                vec![s("foo+0x80/0xb0", 'S', None)],
            ),
            ("lr : foo+0x80/0xb0", vec![s("foo+0x80/0xb0", 'S', None)]),
            (" ra : foo+0x80/0xb0", vec![s("foo+0x80/0xb0", 'S', None)]),
            (
                "RIP: 0010:foo+0x80/0xb0",
                vec![s("foo+0x80/0xb0", 'S', None)],
            ),
            (
                "RIP: 0010:0xffffffff81000000",
                vec![s("0xffffffff81000000", 'R', Some(0xffffffff81000000))],
            ),
            (
                "pc : 0xffff800008000000",
                vec![s("0xffff800008000000", 'R', Some(0xffff800008000000))],
            ),
            (
                "[<8011218c>] (unwind_backtrace) from [<8010e300>] (show_stack+0x18/0x1c)",
                vec![
                    s("", 'K', Some(0x8011218c)),
                    s("show_stack+0x18/0x1c", 'S', Some(0x8010e300)),
                ],
            ),
            (
                "[<c010e2a8>] (0xc010e2a8) from [<c010a3f0>] (0xc010a3f0)",
                vec![
                    s("0xc010e2a8", 'R', Some(0xc010e2a8)),
                    s("0xc010a3f0", 'R', Some(0xc010a3f0)),
                ],
            ),
            (
                "PC is at foo+0x80/0xb0",
                vec![s("foo+0x80/0xb0", 'S', None)],
            ),
            ("LR is at bar+0x4/0x8", vec![s("bar+0x4/0x8", 'S', None)]),
            (
                "[c00000000fe8f8a0] [c000000000a4d8f4] foo+0x80/0xb0 (unreliable)",
                vec![s("foo+0x80/0xb0", 'S', Some(0xc000000000a4d8f4))],
            ),
            (
                "NIP [c000000000a4d8f4] foo+0x80/0xb0",
                vec![s("foo+0x80/0xb0", 'S', Some(0xc000000000a4d8f4))],
            ),
            (
                "LR [c000000000a4d8f0] foo+0x7c/0xb0",
                vec![s("foo+0x7c/0xb0", 'S', Some(0xc000000000a4d8f0))],
            ),
            (
                "Krnl PSW : 0704c00180000000 00000000001a2c3e (foo+0x80/0xb0)",
                vec![s("foo+0x80/0xb0", 'S', Some(0x1a2c3e))],
            ),
            (
                " ([<00000000001a2c3e>] foo+0x80/0xb0)",
                vec![s("foo+0x80/0xb0", 'S', Some(0x1a2c3e))],
            ),
            (
                " [<ffffffff816d542b>] ? 0xffffffff816d542b",
                vec![s("0xffffffff816d542b", 'R', Some(0xffffffff816d542b))],
            ),
            (
                " [<ffffffff816d542b>] [unknown]",
                vec![s("[unknown]", 'R', Some(0xffffffff816d542b))],
            ),
            (
                " [<ffffffff816d542b>]",
                vec![s("", 'I', Some(0xffffffff816d542b))],
            ),
            (
                "epc : ffffffff80002fa4 ra : ffffffff80002f9c sp : ff20000000a8bd90",
                vec![
                    s("", 'P', Some(0xffffffff80002fa4)),
                    s("", 'P', Some(0xffffffff80002f9c)),
                ],
            ),
            (
                "a+0x1/0x2 b+0x3/0x4",
                vec![s("a+0x1/0x2", 'S', None), s("b+0x3/0x4", 'S', None)],
            ),
        ];
        for (line, want) in cases {
            assert_eq!(&refs(line), want, "{line:?}");
        }
    }

    #[test]
    fn data_is_not_a_reference() {
        for line in [
            "RSP: 0018:ffffc90000003e28 EFLAGS: 00010246",
            "RAX: 0000000000000000 RBX: ffffffff816d542b RCX: 0000000000000000",
            "x29: ffff80000a4bbd30 x28: ffff00000294c200",
            "sp : ffff80000a4bbd30",
            "r10: 00000000  r9 : c1b5e6c0  r8 : 00000000",
            "Code: 48 89 e5 41 57 <0f> 0b",
            "read_zero+0x77",
            "a + 0x1/0x2",
            "[unknown]",
        ] {
            assert_eq!(refs(line), vec![], "{line:?}");
        }
    }

    #[test]
    fn module_words_after_a_reference() {
        let line = b" f+0x1/0x2 [mod 0123abcd] g+0x3/0x4 [other]";
        let mut out = Vec::new();
        scan(line, 0, &mut Vec::new(), &mut out);
        let mods: Vec<_> = out
            .iter()
            .map(|r| match r.found {
                Found::Sym {
                    module, build_id, ..
                } => (
                    module.map(|(a, b)| &line[a..b]),
                    build_id.map(|(a, b)| &line[a..b]),
                ),
                _ => (None, None),
            })
            .collect();
        assert_eq!(
            mods,
            vec![
                (Some(&b"mod"[..]), Some(&b"0123abcd"[..])),
                (Some(&b"other"[..]), None)
            ]
        );
    }

    #[test]
    fn at_most_max_refs() {
        let line = "f+0x1/0x2 ".repeat(100);
        let mut out = Vec::new();
        scan(line.as_bytes(), 0, &mut Vec::new(), &mut out);
        assert_eq!(out.len(), MAX_REFS);
    }
}
