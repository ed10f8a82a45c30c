//! The output forms of kernel log lines: raw frame addresses symbolized in
//! place (`%pS` style), or the whole line as `scripts/decode_stacktrace.sh`
//! (Linux 6.1, `handle_line`) prints it when the blob has its source
//! lines, the log prefix kept before it; and one JSON object per reference.

use super::{Hit, Looked};
use crate::resolve::recognise::bytes::{self, is_blank, parse_sym_off};
use crate::resolve::recognise::logline::{Edit, Found};
use crate::resolve::*;

/// True for a word the script drops: it holds `[<…>]`.
fn is_frame_word(w: &[u8]) -> bool {
    bytes::find(w, b"[<").is_some_and(|o| {
        let r = &w[o + 2..];
        bytes::find(r, b">]").is_some_and(|c| c > 0 && !r[..c].contains(&b']'))
    })
}

impl Resolver<'_, '_> {
    /// Writes a [`Plan::Log`] line; `refs` are its references, `looked`
    /// their lookups in the same order.
    pub(in crate::resolve) fn emit_log(
        &mut self,
        line: &[u8],
        plan: Plan,
        refs: &[LineRef],
        looked: &Looked<'_, '_>,
        out: &mut Vec<u8>,
    ) {
        self.stats.lines += 1;
        let Plan::Log { prefix, script, .. } = plan else {
            return out.extend_from_slice(line);
        };
        let (body, nl) = trim_end_nl(line);
        if self.opts.json {
            for (j, r) in refs.iter().enumerate() {
                self.in_space(r.module, |me| me.json_ref(body, r, j, looked, out));
            }
            return;
        }
        let nl: &[u8] = if nl.is_empty() { b"\n" } else { nl };
        if script {
            self.script_line(body, prefix, refs, looked, out);
        } else {
            let mut at = 0;
            for (j, r) in refs.iter().enumerate() {
                let Found::Raw { edit, .. } = r.r.found else {
                    continue;
                };
                // An address the blob does not know keeps its raw form.
                let hit = looked.hits[j];
                if edit == Edit::Keep || hit.is_none() {
                    continue;
                }
                out.extend_from_slice(&body[at..r.r.from]);
                self.push_raw(out, edit, r.module, hit.as_ref(), looked.rows[j].as_ref());
                at = r.r.to;
            }
            out.extend_from_slice(&body[at..]);
        }
        super::push_nl(out, nl);
    }

    /// Runs `f` with the module space's tables in place when `module`.
    pub(in crate::resolve) fn in_space<T>(
        &mut self,
        module: bool,
        f: impl FnOnce(&mut Self) -> T,
    ) -> T {
        if module {
            self.swap_spaces();
        }
        let t = f(self);
        if module {
            self.swap_spaces();
        }
        t
    }

    /// A raw frame address's symbol: `func+0xOFF/0xSIZE [mod]`, with
    /// ` (FILE:LINE …)` when the blob has lines, as `edit` places it.
    fn push_raw(
        &mut self,
        out: &mut Vec<u8>,
        edit: Edit,
        module: bool,
        hit: Option<&Hit<'_>>,
        row: Option<&SourceRow>,
    ) {
        let row = row.filter(|r| r.file != 0);
        match edit {
            Edit::Insert => out.push(b' '),
            Edit::Paren => out.extend_from_slice(b" ("),
            Edit::Replace | Edit::Keep => {}
        }
        self.in_space(module, |me| {
            me.push_sym(out, hit, me.opts.size, true);
            if row.is_some() && me.lines.is_some() {
                out.extend_from_slice(b" (");
                me.push_code(out, row);
                out.push(b')');
            }
        });
        if edit == Edit::Paren {
            out.push(b')');
        }
    }

    /// The line as decode_stacktrace.sh prints it: the prefix, then the
    /// words joined by one blank less the `[<ADDR>]` ones, each reference
    /// as `func (FILE:LINE …)`; the last word, when a reference, as the
    /// script's `$segment$name ($code) $module`.
    fn script_line(
        &mut self,
        body: &[u8],
        prefix: usize,
        refs: &[LineRef],
        looked: &Looked<'_, '_>,
        out: &mut Vec<u8>,
    ) {
        let pre = &body[..prefix];
        let pre = &pre[..pre.len() - pre.iter().rev().take_while(|&&b| is_blank(b)).count()];
        out.extend_from_slice(pre);
        let end = body.len() - body.iter().rev().take_while(|&&b| is_blank(b)).count();
        // The reference that ends the line (with its module words).
        let last = refs.iter().rposition(|r| match r.r.found {
            Found::Sym { words_end, .. } => words_end == end,
            Found::Raw { .. } => false,
        });
        let mut first = pre.is_empty();
        let mut sep = |out: &mut Vec<u8>| {
            if !first {
                out.push(b' ');
            }
            first = false;
        };
        let mut j = 0;
        let mut at = prefix;
        while at < end {
            at = bytes::skip_blanks(body, at);
            if at >= end {
                break;
            }
            let we = bytes::token_end(body, at);
            let w = &body[at..we];
            while j < refs.len() && refs[j].r.to <= at && refs[j].r.from < at {
                j += 1;
            }
            if Some(j) == last && refs[j].r.from >= at && refs[j].r.from <= we {
                let Found::Sym {
                    words_end, module, ..
                } = refs[j].r.found
                else {
                    unreachable!()
                };
                sep(out);
                let seg_from = at + usize::from(w.first() == Some(&b'('));
                self.push_script_ref(out, body, seg_from, &refs[j], j, looked);
                out.push(b' ');
                if let Some((a, b)) = module {
                    out.extend_from_slice(&body[a..b]);
                }
                at = words_end;
                continue;
            }
            if is_frame_word(w) {
                at = we;
                continue;
            }
            sep(out);
            let mut wat = at;
            while j < refs.len() && refs[j].r.from >= at && refs[j].r.to <= we {
                let r = &refs[j];
                out.extend_from_slice(&body[wat..r.r.from]);
                match r.r.found {
                    Found::Sym { .. } => {
                        let row = looked.rows[j].as_ref();
                        let name = parse_sym_off(&body[r.r.from..r.r.to]).map(|p| p.0);
                        match (name, row.is_some() && r.decodable) {
                            (Some(name), true) => {
                                out.extend_from_slice(name);
                                out.extend_from_slice(b" (");
                                self.in_space(r.module, |me| me.push_code(out, row));
                                out.push(b')');
                            }
                            _ => out.extend_from_slice(&body[r.r.from..r.r.to]),
                        }
                    }
                    Found::Raw { edit, .. } => {
                        out.extend_from_slice(&body[r.r.from..r.r.to]);
                        if edit != Edit::Keep && looked.hits[j].is_some() {
                            let e = if edit == Edit::Replace {
                                Edit::Insert
                            } else {
                                edit
                            };
                            let (h, row) = (looked.hits[j], looked.rows[j]);
                            self.push_raw(out, e, r.module, h.as_ref(), row.as_ref());
                        }
                    }
                }
                wat = r.r.to;
                j += 1;
            }
            out.extend_from_slice(&body[wat..we]);
            at = we;
        }
    }

    /// decode_stacktrace.sh's `parse_symbol` result for the last word:
    /// `$segment$name ($code)` when decoded, else the reference less its
    /// parentheses and segment.
    fn push_script_ref(
        &mut self,
        out: &mut Vec<u8>,
        body: &[u8],
        seg_from: usize,
        r: &LineRef,
        j: usize,
        looked: &Looked<'_, '_>,
    ) {
        let tok = &body[r.r.from..r.r.to];
        let row = looked.rows[j].as_ref();
        let found = looked.lookups[j].addr.is_some() || looked.lookups[j].module_addr.is_some();
        match (parse_sym_off(tok), found && r.decodable, row) {
            (Some((name, ..)), true, Some(_)) => {
                out.extend_from_slice(&body[seg_from..r.r.from]);
                out.extend_from_slice(name);
                out.extend_from_slice(b" (");
                self.in_space(r.module, |me| me.push_code(out, row));
                out.push(b')');
            }
            _ => out.extend_from_slice(tok),
        }
    }

    /// One JSON object for a log line's reference: a raw frame address as
    /// a bare address's object; a `func+0xOFF/0xSIZE` with the reference
    /// as written (`"ref"`), its name, offset, size and module, and
    /// `"status"` ok, mismatch or unknown.
    fn json_ref(
        &mut self,
        body: &[u8],
        r: &LineRef,
        j: usize,
        looked: &Looked<'_, '_>,
        out: &mut Vec<u8>,
    ) {
        let hit = looked.hits[j];
        let row = looked.rows[j].filter(|r| r.file != 0);
        let Found::Sym { module, .. } = r.r.found else {
            return self.emit_json(r.addr, hit.as_ref(), row.as_ref(), out);
        };
        let tok = &body[r.r.from..r.r.to];
        let Some((name, off, size)) = parse_sym_off(tok) else {
            return;
        };
        let _ = write!(out, "{{\"line\":{},\"addr\":", self.emitting);
        match r.addr {
            Some(a) => {
                out.extend_from_slice(b"\"0x");
                hex::push_u64_padded(out, a);
                out.push(b'"');
            }
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b",\"type\":");
        match hit.filter(|_| r.status != oops::Status::Unknown) {
            Some(h) if h.symbol_type.is_ascii_alphanumeric() => {
                out.push(b'"');
                out.push(h.symbol_type);
                out.push(b'"');
            }
            _ => out.extend_from_slice(b"null"),
        }
        // The blob's name for it when it agrees (the first alias, as for an
        // address), else the name as written.
        out.extend_from_slice(b",\"name\":");
        let mut shown = std::mem::take(&mut self.scratch);
        shown.clear();
        match hit.filter(|_| r.status == oops::Status::Ok) {
            Some(h) => self.push_name(&mut shown, h.name),
            None => shown.extend_from_slice(name),
        }
        let _ = serde_json::to_writer(&mut *out, &String::from_utf8_lossy(&shown));
        self.scratch = shown;
        let _ = write!(out, ",\"offset\":{off},\"size\":");
        match size {
            Some(s) => {
                let _ = write!(out, "{s}");
            }
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b",\"module\":");
        match module {
            Some((a, b)) => {
                let _ = serde_json::to_writer(&mut *out, &String::from_utf8_lossy(&body[a..b]));
            }
            None => out.extend_from_slice(b"null"),
        }
        let _ = write!(out, ",\"status\":\"{}\",\"ref\":", r.status.as_str());
        let _ = serde_json::to_writer(&mut *out, &String::from_utf8_lossy(tok));
        if self.lines.is_some() {
            self.push_json_frames(out, row.as_ref());
        }
        out.extend_from_slice(b"}\n");
    }
}
