//! The output forms: text lines (kernel `%pS` style, perf frames,
//! decode_stacktrace style), JSON objects, source lines and inline frames.

use super::*;

impl Resolver<'_, '_> {
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

    /// Writes the line as `plan` says, with `hit` the lookup of its address.
    pub(super) fn emit(&mut self, line: &[u8], plan: Plan, hit: Option<&AddressHit<'_>>, out: &mut Vec<u8>) {
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

}
