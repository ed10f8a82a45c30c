//! The output forms: text lines (kernel `%pS` style, perf frames,
//! decode_stacktrace style), JSON objects, source lines and inline frames.

#[cfg(feature = "disasm")]
pub(super) mod code;
mod log;

use crate::blob::v2::source_lines::read::SourceFrame;
use crate::resolve::batch::plan::FrameStyle;
use crate::resolve::recognise::bytes::{find, is_blank};
use crate::resolve::*;

/// What the output forms print of a lookup's answer.
#[derive(Debug, Clone, Copy)]
pub(in crate::resolve) struct Hit<'a> {
    pub(super) symbol_type: u8,
    /// Bytes from the symbol's address.
    pub(super) offset: u64,
    /// As [`AddressHit::size`].
    pub(super) size: Option<u64>,
    pub(super) module: Option<&'a [u8]>,
    pub(super) name: HitName<'a>,
}

/// A line's lookups and their answers, in the order of its lookups.
pub(in crate::resolve) struct Looked<'x, 'a> {
    pub(super) hits: &'x [Option<Hit<'a>>],
    pub(super) rows: &'x [Option<SourceRow>],
    pub(super) lookups: &'x [Lookup],
}

/// Where a [`Hit`]'s name comes from.
#[derive(Debug, Clone, Copy)]
pub(in crate::resolve) enum HitName<'a> {
    /// A stored row of the kernel's v2 blob, named through the resolver's
    /// [`RowTable`] (decoded once per row).
    Row { row: usize, folded: bool },
    /// Any other symbol (a v1 blob's, the module space's).
    Name(crate::blob::Name<'a>),
}

impl<'a> From<&AddressHit<'a>> for Hit<'a> {
    fn from(h: &AddressHit<'a>) -> Self {
        Hit {
            symbol_type: h.symbol.symbol_type,
            offset: h.offset,
            size: h.size,
            module: h.symbol.module,
            name: HitName::Name(h.symbol.name),
        }
    }
}

/// Appends `frame`'s path, `dir/file` (nothing without a file).
pub(in crate::resolve) fn push_path(out: &mut Vec<u8>, lines: &LineTable<'_>, frame: &SourceFrame) {
    if let Some((dir, base)) = lines.file(frame.file) {
        if !dir.is_empty() {
            dir.extend_into(out);
            out.push(b'/');
        }
        base.extend_into(out);
    }
}

/// Appends `path` less `prefix` and the `/` after it.
pub(in crate::resolve) fn push_stripped(out: &mut Vec<u8>, path: &[u8], prefix: &[u8]) {
    // Most runs strip nothing: no compare call per frame then.
    if prefix.is_empty() {
        return out.extend_from_slice(path);
    }
    let p = prefix.strip_suffix(b"/").unwrap_or(prefix);
    match path.strip_prefix(p).and_then(|r| r.strip_prefix(b"/")) {
        Some(rest) if !p.is_empty() => out.extend_from_slice(rest),
        _ => out.extend_from_slice(path),
    }
}

/// Which prefix a path loses: `--strip-prefix`'s, or the oops lines' (the
/// same, or decode_stacktrace.sh's `auto`).
#[derive(Clone, Copy)]
pub(in crate::resolve) enum Prefix {
    User,
    Oops,
}

/// Appends `v` in decimal (line numbers, a few per frame).
#[inline]
pub(in crate::resolve) fn push_u32(out: &mut Vec<u8>, v: u32) {
    // Digits left-aligned in a fixed 10 bytes, appended whole, then the
    // tail cut, as `hex::push_u64_0x`: itoa's string of its own length was
    // a call to memcpy per number.
    // Two digits a step, from a table of the 100 pairs: half the
    // divisions of one digit a step (2.3 M fewer instructions on 100k
    // addresses of libstdc++).
    const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
        2021222324252627282930313233343536373839\
        4041424344454647484950515253545556575859\
        6061626364656667686970717273747576777879\
        8081828384858687888990919293949596979899";
    let n = v.checked_ilog10().unwrap_or(0) as usize + 1;
    let mut buf = [0u8; 10];
    let (mut x, mut i) = (v, n);
    while i >= 2 {
        let r = (x % 100) as usize * 2;
        x /= 100;
        buf[i - 2..i].copy_from_slice(&PAIRS[r..r + 2]);
        i -= 2;
    }
    if i == 1 {
        buf[0] = b'0' + x as u8;
    }
    let len = out.len();
    out.extend_from_slice(&buf);
    out.truncate(len + n);
}

/// Appends a line's end as it was read, `\n` or `\r\n` (`nl` of
/// [`trim_end_nl`], never empty here): fixed-size copies, where a slice
/// of its own length was a call to memcpy per line.
#[inline]
pub(in crate::resolve) fn push_nl(out: &mut Vec<u8>, nl: &[u8]) {
    match nl {
        b"\r\n" => out.extend_from_slice(b"\r\n"),
        _ => out.push(b'\n'),
    }
}

impl<'a> Resolver<'_, 'a> {
    /// Appends `name+0xOFF[/0xSIZE][ [mod]]`, or `[unknown]`.
    #[inline]
    pub(in crate::resolve) fn push_sym(
        &mut self,
        out: &mut Vec<u8>,
        hit: Option<&Hit<'_>>,
        size: bool,
        module: bool,
    ) {
        match hit {
            Some(h) => {
                self.push_name(out, h.name);
                out.push(b'+');
                hex::push_u64_0x(out, h.offset);
                if let (true, Some(s)) = (size, h.size) {
                    out.push(b'/');
                    hex::push_u64_0x(out, s);
                }
                if let Some(m) = h.module.filter(|_| module) {
                    out.extend_from_slice(b" [");
                    out.extend_from_slice(m);
                    out.push(b']');
                }
            }
            None => out.extend_from_slice(b"[unknown]"),
        }
    }

    /// Writes a bare address, perf frame, `Code:` or passed line as `plan`
    /// says, with `looked` its lookup (blobs with lines: and source row).
    pub(in crate::resolve) fn emit(
        &mut self,
        line: &[u8],
        plan: Plan,
        looked: &Looked<'_, '_>,
        out: &mut Vec<u8>,
    ) {
        self.stats.lines += 1;
        let hit = looked.hits.first().and_then(Option::as_ref);
        // A row without a file is "no line information" (llvm-symbolizer
        // prints `??:0`): no frames.
        let row = looked
            .rows
            .first()
            .and_then(Option::as_ref)
            .filter(|r| r.file != 0);
        #[cfg(feature = "disasm")]
        if let Plan::Code {
            prefix,
            arch,
            fault,
        } = plan
        {
            return self.emit_code(line, prefix, arch, fault, out);
        }
        if self.opts.json {
            if let Some(a) = plan_addr(plan) {
                self.emit_json(Some(a), hit, row, out);
            }
            return;
        }
        let (body, nl) = trim_end_nl(line);
        let nl: &[u8] = if nl.is_empty() { b"\n" } else { nl };
        match plan {
            Plan::Bare { addr } => {
                hex::push_u64_padded(out, addr);
                match hit {
                    Some(h) => {
                        out.extend_from_slice(&[b' ', h.symbol_type, b' ']);
                        self.push_sym(out, Some(h), self.opts.size, true);
                    }
                    None => out.extend_from_slice(b" ? [unknown]"),
                }
                if self.lines.is_some() && (hit.is_some() || row.is_some()) {
                    self.push_chain(out, row);
                }
                push_nl(out, nl);
            }
            Plan::Replace { keep: true, .. } if hit.is_none() => out.extend_from_slice(line),
            Plan::Replace {
                from,
                to,
                style: FrameStyle::Bpftrace { dso },
                ..
            } => {
                // Always `keep`: a line without a hit was copied above.
                out.extend_from_slice(&body[..from]);
                if let Some(h) = hit {
                    self.push_name(out, h.name);
                    out.push(b'+');
                    out.extend_from_slice(itoa::Buffer::new().format(h.offset).as_bytes());
                }
                match self.opts.paths.as_ref().and_then(|p| p.first()) {
                    Some(p) if dso => {
                        out.extend_from_slice(b" (");
                        out.extend_from_slice(p);
                        out.push(b')');
                    }
                    _ => out.extend_from_slice(&body[to..]),
                }
                push_nl(out, nl);
            }
            Plan::Replace { from, to, .. } => {
                if self.opts.inline && from > 0 && is_blank(body[0]) {
                    let symoff = find(&body[from..to], b"+0x").is_some();
                    // `ADDR (DSO)`: the inlined frames' `ADDR NAME (inlined)`
                    // take the blank before the DSO too.
                    let prefix = if from == to { from + 1 } else { from };
                    self.push_perf_inlines(out, &body[..prefix], hit, row, symoff, nl);
                }
                out.extend_from_slice(&body[..from]);
                if from == to {
                    // `ADDR (DSO)` becomes what `-F ip,sym,dso` prints.
                    out.push(b' ');
                    match hit {
                        Some(h) => self.push_name(out, h.name),
                        None => out.extend_from_slice(b"[unknown]"),
                    }
                } else {
                    self.push_sym(out, hit, false, false);
                }
                out.extend_from_slice(&body[to..]);
                push_nl(out, nl);
            }
            _ => out.extend_from_slice(line),
        }
    }

    /// Appends a frame's function as the blob stores it (FORMAT.md §15.3:
    /// inlined frames by their DWARF name, the outermost as llvm-symbolizer
    /// names it from the symbol table), `??` when unknown.
    pub(in crate::resolve) fn push_function(&mut self, out: &mut Vec<u8>, f: &SourceFrame) {
        // Borrowed, not copied: a `LineTable` is 288 bytes.
        let Some(lines) = &self.lines else { return };
        // The cache first: finding the coded string costs two bit reads.
        // Frames give a string id of the table or u32::MAX for none, which
        // must not size the cache (4 G slots).
        let name: &[u8] = match f.function {
            u32::MAX => &[],
            id => self.functions.get(id, |a| {
                if let Some(s) = lines.function(id) {
                    s.extend_into(a)
                }
            }),
        };
        if name.is_empty() {
            out.extend_from_slice(b"??");
        } else {
            out.extend_from_slice(name);
        }
    }

    /// Appends a frame's path less `prefix` (`??` without a file when
    /// `unknown_as_qq`, else nothing).
    pub(in crate::resolve) fn push_file(
        &mut self,
        out: &mut Vec<u8>,
        f: &SourceFrame,
        prefix: Prefix,
        unknown_as_qq: bool,
    ) {
        let Some(lines) = &self.lines else { return };
        if f.file == 0 {
            if unknown_as_qq {
                out.extend_from_slice(b"??");
            }
            return;
        }
        let prefix: &[u8] = match prefix {
            Prefix::User => self.opts.strip_prefix.as_deref().unwrap_or_default(),
            Prefix::Oops => &self.oops_prefix,
        };
        let path = self.paths.get(f.file, |a| push_path(a, lines, f));
        push_stripped(out, path, prefix);
    }

    /// ` FILE:LINE` of the outermost frame, then ` > FUNC FILE:LINE` for
    /// each inlined frame from the outermost inward (docs/lines-and-modules.md, "Source
    /// lines"); ` ??:0` without line information.
    fn push_chain(&mut self, out: &mut Vec<u8>, row: Option<&SourceRow>) {
        let (true, Some(row)) = (self.lines.is_some(), row) else {
            out.extend_from_slice(b" ??:0");
            return;
        };
        self.with_frames(row, |me, frames| {
            for (k, f) in frames.iter().rev().enumerate() {
                out.push(b' ');
                if k > 0 {
                    out.extend_from_slice(b"> ");
                    me.push_function(out, f);
                    out.push(b' ');
                }
                me.push_file(out, f, Prefix::User, true);
                out.push(b':');
                push_u32(out, f.line);
            }
        });
    }

    /// `addr2line -i`'s lines joined by blanks, innermost first, as
    /// decode_stacktrace.sh prints them: `PATH:LINE` (`?` for line 0), the
    /// base path stripped.
    pub(in crate::resolve) fn push_code(&mut self, out: &mut Vec<u8>, row: Option<&SourceRow>) {
        let Some(row) = row else { return };
        self.with_frames(row, |me, frames| {
            for (k, f) in frames.iter().enumerate() {
                if k > 0 {
                    out.push(b' ');
                }
                me.push_file(out, f, Prefix::Oops, true);
                out.push(b':');
                if f.line == 0 {
                    out.push(b'?');
                } else {
                    push_u32(out, f.line);
                }
                if f.discriminator != 0 {
                    let _ = write!(out, " (discriminator {})", f.discriminator);
                }
            }
        });
    }

    /// perf script --inline: a `PREFIX FUNC[+0xOFF] (inlined)` line for each
    /// inlined frame, innermost first, before the frame line itself.
    fn push_perf_inlines(
        &mut self,
        out: &mut Vec<u8>,
        prefix: &[u8],
        hit: Option<&Hit<'_>>,
        row: Option<&SourceRow>,
        symoff: bool,
        nl: &[u8],
    ) {
        let (Some(row), Some(h)) = (row, hit) else {
            return;
        };
        self.with_frames(row, |me, frames| {
            for f in frames.iter().filter(|f| f.inlined) {
                out.extend_from_slice(prefix);
                me.push_function(out, f);
                if symoff {
                    out.push(b'+');
                    hex::push_u64_0x(out, h.offset);
                }
                out.extend_from_slice(b" (inlined)");
                push_nl(out, nl);
            }
        });
    }

    /// Runs `f` over `row`'s frames, innermost first
    /// ([`LineTable::frames`]; none without a line table), collected into
    /// the reused frame buffer first: printing them takes `&mut self` (the
    /// decoded-string caches).
    fn with_frames(&mut self, row: &SourceRow, f: impl FnOnce(&mut Self, &[SourceFrame])) {
        let mut frames = std::mem::take(&mut self.frames);
        frames.clear();
        if let Some(lines) = &self.lines {
            frames.extend(lines.frames(row));
        }
        f(self, &frames);
        self.frames = frames;
    }

    /// `{"addr":"0x…","type":"T","name":"…","offset":N,"size":N|null,"module":"…"|null,"status":"ok"}`;
    /// `status` is `ok`, `unknown` or `no_size` (the last symbol, end unknown).
    pub(in crate::resolve) fn emit_json(
        &mut self,
        addr: Option<u64>,
        hit: Option<&Hit<'_>>,
        row: Option<&SourceRow>,
        out: &mut Vec<u8>,
    ) {
        let _ = write!(out, "{{\"line\":{},", self.emitting);
        match addr {
            Some(a) => {
                out.extend_from_slice(b"\"addr\":\"0x");
                hex::push_u64_padded(out, a);
                out.push(b'"');
            }
            None => out.extend_from_slice(b"\"addr\":null"),
        }
        match hit {
            None => out.extend_from_slice(
                b",\"type\":null,\"name\":null,\"offset\":null,\"size\":null,\"module\":null,\"status\":\"unknown\"",
            ),
            Some(h) => {
                out.extend_from_slice(b",\"type\":\"");
                out.push(if h.symbol_type.is_ascii_alphanumeric() { h.symbol_type } else { b'?' });
                out.extend_from_slice(b"\",\"name\":");
                let mut name = std::mem::take(&mut self.scratch);
                name.clear();
                self.push_name(&mut name, h.name);
                let _ = serde_json::to_writer(&mut *out, &String::from_utf8_lossy(&name));
                self.scratch = name;
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
                match h.module {
                    Some(m) => {
                        let _ = serde_json::to_writer(&mut *out, &String::from_utf8_lossy(m));
                    }
                    None => out.extend_from_slice(b"null"),
                }
                let status: &[u8] = if h.size.is_some() { b"ok" } else { b"no_size" };
                out.extend_from_slice(b",\"status\":\"");
                out.extend_from_slice(status);
                out.push(b'"');
            }
        }
        if self.lines.is_some() {
            self.push_json_frames(out, row);
        }
        out.extend_from_slice(b"}\n");
    }

    /// `,"frames":[{"function":…,"file":…,"line":N,"column":N|null,"inlined":bool},…]`,
    /// innermost first; `[]` without line information.
    pub(in crate::resolve) fn push_json_frames(
        &mut self,
        out: &mut Vec<u8>,
        row: Option<&SourceRow>,
    ) {
        out.extend_from_slice(b",\"frames\":[");
        if let Some(row) = row {
            self.with_frames(row, |me, frames| {
                for (k, f) in frames.iter().enumerate() {
                    if k > 0 {
                        out.push(b',');
                    }
                    out.extend_from_slice(b"{\"function\":");
                    me.scratch.clear();
                    let mut name = std::mem::take(&mut me.scratch);
                    // "" when unknown, as llvm-symbolizer's JSON has it.
                    let function = me.lines.as_ref().and_then(|l| l.function(f.function));
                    if let Some(s) = function.filter(|s| !s.is_empty()) {
                        name.extend_from_slice(me.functions.get(f.function, |a| s.extend_into(a)));
                    }
                    let _ = serde_json::to_writer(&mut *out, &String::from_utf8_lossy(&name));
                    name.clear();
                    me.push_file(&mut name, f, Prefix::User, false);
                    out.extend_from_slice(b",\"file\":");
                    let _ = serde_json::to_writer(&mut *out, &String::from_utf8_lossy(&name));
                    me.scratch = name;
                    let _ = write!(out, ",\"line\":{},\"column\":", f.line);
                    match f.column {
                        Some(c) => {
                            let _ = write!(out, "{c}");
                        }
                        None => out.extend_from_slice(b"null"),
                    }
                    let _ = write!(out, ",\"inlined\":{}}}", f.inlined);
                }
            });
        }
        out.push(b']');
    }
}

/// The address a bare address or perf frame plan looks up.
fn plan_addr(plan: Plan) -> Option<u64> {
    match plan {
        Plan::Bare { addr } | Plan::Replace { addr, .. } => Some(addr),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blob::list::SymbolList;
    use crate::blob::v2::source_lines::write::{InlineNode, LineRow, SourceTable};
    use crate::blob::v2::write::{V2Options, pack_v2};
    use crate::blobfile::AlignedBlob;

    /// Line numbers of every length, and both line ends, after other bytes.
    #[test]
    fn decimal_and_line_ends_append_what_format_prints() {
        let mut values = vec![0, 1, 9, 10, 99, 100, 65_535, 999_999_999, u32::MAX];
        values.extend((0..32).map(|k| 1u32 << k).flat_map(|v| [v - 1, v, v + 1]));
        for v in values {
            let mut out = b"x:".to_vec();
            push_u32(&mut out, v);
            push_nl(&mut out, b"\r\n");
            push_nl(&mut out, b"\n");
            assert_eq!(out, format!("x:{v}\r\n\n").as_bytes());
        }
    }

    /// A frame with no function (`u32::MAX`, what `Frames` gives when a
    /// node's name is past the string table) prints `??` and leaves the
    /// name cache alone: sized by that id, it would take 4 G slots.
    #[test]
    fn a_frame_without_a_function_prints_question_marks() {
        let mut list = SymbolList::new();
        list.push(0xffff_ffff_8100_0000, b'T', b"do_fork").unwrap();
        list.push(0xffff_ffff_8100_0100, b'T', b"schedule").unwrap();
        let row = |a: u64, file, node| LineRow {
            address: 0xffff_ffff_8100_0000 + a,
            file,
            line: 10 * file,
            node,
            ..LineRow::default()
        };
        let table = SourceTable {
            // The last row ends the table: no file, no node.
            rows: vec![row(0, 1, 1), row(0x200, 0, 0)],
            nodes: vec![
                InlineNode::default(),
                InlineNode {
                    parent: 0,
                    name: 0,
                    call_file: 0,
                    call_line: 0,
                    call_column: 0,
                },
            ],
            files: vec![(0, 0), (1, 2)],
            strings: vec![b"do_fork".to_vec(), b"kernel".to_vec(), b"fork.c".to_vec()],
        };
        let opts = V2Options {
            lines: Some((table, false)),
            ..V2Options::default()
        };
        let blob = AlignedBlob::copy_from(&pack_v2(&list, &opts).unwrap().blob);
        let map = Kallsyms::from_blob(blob.as_bytes(), None, None).unwrap();
        let mut r = Resolver::new(&map, ResolveOptions::default());
        let frame = |function| SourceFrame {
            function,
            file: 1,
            line: 10,
            column: None,
            discriminator: 0,
            inlined: true,
        };
        let mut out = Vec::new();
        r.push_function(&mut out, &frame(u32::MAX));
        assert_eq!(out, b"??");
        assert!(r.functions.len() < 16, "{}", r.functions.len());
        out.clear();
        r.push_function(&mut out, &frame(0));
        assert_eq!(out, b"do_fork");
    }

    #[test]
    fn decimals_are_printed_as_format_prints_them() {
        let mut values = vec![0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 65_535, u32::MAX];
        values.extend((0..32).map(|k| 1u32 << k));
        values.extend((1..10).map(|k| 10u32.pow(k) - 1));
        let mut out = b"x".to_vec();
        for v in values {
            out.truncate(1);
            push_u32(&mut out, v);
            assert_eq!(out, format!("x{v}").as_bytes());
        }
    }
}
