//! One backtrace frame, printed: what a kernel's oops or panic path writes
//! per address it walks, as ` [<ADDR>] NAME+0xOFF/0xSIZE [MOD] FILE:LINE >
//! INLINED FILE:LINE`. `no_std`, no allocation, and none of `core::fmt`'s
//! number formatting: numbers are written here, and the text goes out a
//! `char` at a time through [`core::fmt::Write::write_char`]. The frame walk
//! itself stays the kernel's (docs/kernel.md).

use core::fmt::{self, Write};

use super::Kallsyms;

/// Where a frame's address came from, which decides where it is looked up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameKind {
    /// The trapping instruction (an exception's pc, a `BUG()` trap):
    /// symbol and line are those of the address itself.
    Trapping,
    /// A return address from the frame walk: the call is the instruction
    /// before it, so symbol and line are looked up at `ADDR - 1` and the
    /// offset printed is one more than that (Linux's `%pB`,
    /// `lib/vsprintf.c` `sprint_backtrace`). A call to a `noreturn`
    /// function at a function's very end so stays in its caller.
    Return,
}

/// Decodes bytes to `char`s as they stream past and writes each with
/// [`Write::write_char`]: names come in runs that may split a UTF-8
/// sequence, and no buffer, no UTF-8 table and no `str` validation is
/// linked for it. Decoding is lenient: a byte that cannot start or
/// continue a sequence, a sequence cut short, or one that is no `char`
/// becomes U+FFFD.
struct Out<'w> {
    w: &'w mut dyn Write,
    /// The code point so far, and how many continuation bytes it awaits.
    cp: u32,
    need: u32,
    err: bool,
}

impl Out<'_> {
    fn new(w: &mut dyn Write) -> Out<'_> {
        Out {
            w,
            cp: 0,
            need: 0,
            err: false,
        }
    }

    // One copy of the writer's UTF-8 encoding, not one per call site.
    #[inline(never)]
    fn char(&mut self, c: char) {
        self.err |= self.w.write_char(c).is_err();
    }

    fn bytes(&mut self, b: &[u8]) {
        b.iter().for_each(|&c| self.byte(c));
    }

    fn byte(&mut self, b: u8) {
        if self.need > 0 {
            if b & 0xC0 == 0x80 {
                self.cp = self.cp << 6 | u32::from(b & 0x3F);
                self.need -= 1;
                if self.need == 0 {
                    self.char(char::from_u32(self.cp).unwrap_or(char::REPLACEMENT_CHARACTER));
                }
                return;
            }
            self.need = 0;
            self.char(char::REPLACEMENT_CHARACTER);
        }
        (self.cp, self.need) = match b {
            0..0x80 => return self.char(char::from(b)),
            0xC2..0xE0 => (u32::from(b & 0x1F), 1),
            0xE0..0xF0 => (u32::from(b & 0x0F), 2),
            0xF0..0xF5 => (u32::from(b & 0x07), 3),
            _ => return self.char(char::REPLACEMENT_CHARACTER),
        };
    }

    /// Ends the text: a sequence cut short becomes U+FFFD.
    fn finish(&mut self) {
        if self.need > 0 {
            self.need = 0;
            self.char(char::REPLACEMENT_CHARACTER);
        }
    }

    /// `v` in hex, at least `digits` digits (1 to 16).
    #[inline(never)]
    fn hex(&mut self, v: u64, digits: u32) {
        // No leading_zeros, which riscv without Zbb links a software count
        // for, and no loop of a fixed 16 steps, which opt-level 3 unrolls
        // into 16 calls: both loops run as many times as `v` needs.
        let mut n = 16;
        while n > digits && v >> (4 * (n - 1)) == 0 {
            n -= 1;
        }
        while n > 0 {
            n -= 1;
            let d = (v >> (4 * n) & 0xF) as u8;
            self.char(char::from(if d < 10 { b'0' + d } else { b'a' + d - 10 }));
        }
    }

    #[cfg(feature = "lines")]
    fn dec(&mut self, mut v: u32) {
        // Divisions by 10 only: no divisor the compiler must check for 0.
        let mut digits = [0u8; 10];
        let mut n = 0;
        for d in digits.iter_mut() {
            *d = b'0' + (v % 10) as u8;
            n += 1;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        for &d in digits.iter().take(n).rev() {
            self.char(char::from(d));
        }
    }
}

/// What a frame prints of the symbol covering its address: a part of
/// [`AddressHit`](super::AddressHit), without the symbol type and index
/// that a v2 blob would spend a search on.
struct FrameHit<'a> {
    name: super::Name<'a>,
    offset: u64,
    size: Option<u64>,
    module: Option<&'a [u8]>,
}

impl<'a> Kallsyms<'a> {
    fn frame_hit(&self, at: u64) -> Option<FrameHit<'a>> {
        match self {
            #[cfg(feature = "v2")]
            Kallsyms::V2(v) => {
                let h = v.locate_row(at, v.locate(at))?;
                Some(FrameHit {
                    name: v.row_name(h.row, h.folded),
                    offset: h.offset,
                    size: h.size,
                    module: v.row_module(h.row),
                })
            }
            #[allow(unreachable_patterns)]
            _ => self.lookup_address(at).map(|h| FrameHit {
                name: h.symbol.name,
                offset: h.offset,
                size: h.size,
                module: h.symbol.module,
            }),
        }
    }

    /// Writes one backtrace frame to `w`, without a line end:
    /// ` [<ADDR>] NAME+0xOFF/0xSIZE`, then ` [MODULE]` for a module's
    /// symbol, then with a `lines` blob (feature `lines`) ` FILE:LINE` and
    /// per inlined call ` > FUNC FILE:LINE`, outermost first (the innermost
    /// 16 at most), or ` ??:0` where the table has no row. ADDR has the
    /// pointer's width in hex digits (16 beyond 32 bits). An address no
    /// symbol covers prints as `0xADDR`, as Linux's `%pS` prints it. `/0xSIZE`
    /// is left out where the blob has no size (the last symbol with no
    /// `_etext`). `strip_prefix` is taken off the front of each source
    /// directory (with the `/` after it); empty strips nothing.
    ///
    /// `kind` says whether `addr` is the trapping instruction or a return
    /// address ([`FrameKind`]). Text goes out a `char` at a time through
    /// [`Write::write_char`], names' bytes decoded leniently (what is not
    /// UTF-8 becomes U+FFFD). No allocation; numbers are not formatted by
    /// `core::fmt`.
    ///
    /// Errors: [`fmt::Error`] when `w` returned one (the rest is still
    /// written).
    // `dyn`, not generic: the printer is compiled once, in this crate at its
    // own opt-level, not once per writer type in the kernel's crate (at
    // opt-level 3 without LTO that copy cost ~1.7 KiB on x86_64).
    pub fn write_frame(
        &self,
        w: &mut dyn Write,
        addr: u64,
        kind: FrameKind,
        strip_prefix: &[u8],
    ) -> fmt::Result {
        let mut o = Out::new(w);
        let digits = if addr > usize::MAX as u64 {
            16
        } else {
            2 * core::mem::size_of::<usize>() as u32
        };
        o.bytes(b" [<");
        o.hex(addr, digits);
        o.bytes(b">] ");
        let ret = u64::from(kind == FrameKind::Return);
        let at = addr.wrapping_sub(ret);
        match self.frame_hit(at) {
            Some(h) => {
                h.name.for_each_run(|r| o.bytes(r));
                o.bytes(b"+0x");
                o.hex(h.offset + ret, 1);
                if let Some(size) = h.size {
                    o.bytes(b"/0x");
                    o.hex(size, 1);
                }
                if let Some(m) = h.module {
                    o.bytes(b" [");
                    o.bytes(m);
                    o.bytes(b"]");
                }
            }
            None => {
                o.bytes(b"0x");
                o.hex(addr, 1);
            }
        }
        #[cfg(feature = "lines")]
        if let Some(lines) = self.lines() {
            source(&mut o, lines, at, strip_prefix);
        }
        #[cfg(not(feature = "lines"))]
        let _ = strip_prefix;
        o.finish();
        if o.err { Err(fmt::Error) } else { Ok(()) }
    }
}

#[cfg(feature = "lines")]
use super::v2::source_lines::read::{LineTable, SourceFrame};

/// ` FILE:LINE > FUNC FILE:LINE ...` of `at`, outermost first.
#[cfg(feature = "lines")]
fn source(o: &mut Out<'_>, lines: &LineTable<'_>, at: u64, strip: &[u8]) {
    let Some(row) = lines.find(at) else {
        o.bytes(b" ??:0");
        return;
    };
    // The reader walks innermost first; the line reads outermost first.
    let mut chain = [None::<SourceFrame>; 16];
    for (slot, f) in chain.iter_mut().zip(lines.frames(&row)) {
        *slot = Some(f);
    }
    for (i, f) in chain.iter().rev().flatten().enumerate() {
        if i > 0 {
            o.bytes(b" > ");
            if let Some(name) = lines.function(f.function) {
                name.for_each_run(|r| o.bytes(r));
            }
        }
        o.bytes(b" ");
        path(o, lines, f.file, strip);
        o.bytes(b":");
        o.dec(f.line);
    }
}

/// `DIR/BASE` of file `id` with `strip` taken off DIR's front, or `??`.
#[cfg(feature = "lines")]
fn path(o: &mut Out<'_>, lines: &LineTable<'_>, id: u32, strip: &[u8]) {
    let Some((dir, base)) = lines.file(id) else {
        o.bytes(b"??");
        return;
    };
    if dir_stripped(o, dir.runs(), strip) {
        o.bytes(b"/");
    }
    base.runs().for_each(|r| o.bytes(r));
}

/// Byte-by-byte equality. Slice `==` calls `memcmp`, and a bare-metal
/// kernel links compiler-builtins' generic one for it: about 575 bytes on
/// x86_64, for prefixes of a few dozen bytes.
#[cfg(any(feature = "lines", test))]
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// Writes the directory whose bytes come in `runs`, without `strip` when
/// it is `strip` or starts with `strip/` (a `/` ending `strip` is ignored;
/// as `ksym-resolve --strip-prefix`); returns whether it wrote anything.
/// The prefix is matched as the runs stream past: what matched so far is
/// written back only if the match then fails.
#[cfg(any(feature = "lines", test))]
fn dir_stripped<'r>(o: &mut Out<'_>, runs: impl Iterator<Item = &'r [u8]>, strip: &[u8]) -> bool {
    let strip = strip.strip_suffix(b"/").unwrap_or(strip);
    let mut matching = !strip.is_empty();
    let mut m = 0;
    let mut wrote = false;
    for mut r in runs {
        if matching {
            // `get` throughout: no panic path for a kernel to link.
            let want = strip.get(m..).unwrap_or(&[]);
            let n = want.len().min(r.len());
            if !same(r.get(..n).unwrap_or(&[]), want.get(..n).unwrap_or(&[])) {
                o.bytes(strip.get(..m).unwrap_or(&[]));
                wrote |= m > 0;
                matching = false;
            } else {
                m += n;
                r = r.get(n..).unwrap_or(&[]);
                // All of `strip` seen: a `/` or the end must follow.
                match r.first() {
                    None => continue,
                    Some(b'/') => r = r.get(1..).unwrap_or(&[]),
                    Some(_) => {
                        o.bytes(strip);
                        wrote = true;
                    }
                }
                matching = false;
            }
        }
        o.bytes(r);
        wrote |= !r.is_empty();
    }
    // The directory stopped inside `strip`: it is written whole.
    if matching && m < strip.len() {
        o.bytes(strip.get(..m).unwrap_or(&[]));
        wrote |= m > 0;
    }
    wrote
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blob::list::SymbolList;
    use crate::blob::v1::write::pack;
    use crate::blob::v2::source_lines::write::{InlineNode, LineRow, SourceTable};
    use crate::blob::v2::write::{V2Options, pack_v2};
    use crate::blobfile::AlignedBlob;
    use std::string::String;
    use std::vec::Vec;

    fn list() -> SymbolList {
        let mut l = SymbolList::new();
        for (a, t, n) in [
            (0xffff_ffff_8100_0000u64, b'T', &b"start_kernel"[..]),
            (0xffff_ffff_8100_0000, b'T', b"_stext"),
            (0xffff_ffff_8100_0040, b't', b"ksym::fault_here"),
            (0xffff_ffff_8100_0100, b'T', b"_etext"),
        ] {
            l.push(a, t, n).unwrap();
        }
        l
    }

    /// Rows: start_kernel at init/main.c:10; fault_here at src/lib.rs:5
    /// with check() inlined from src/check.rs:7.
    fn table() -> SourceTable {
        let s = |x: &str| x.as_bytes().to_vec();
        let row = |address, file, line, node| LineRow {
            address,
            file,
            line,
            node,
            ..LineRow::default()
        };
        SourceTable {
            rows: vec![
                row(0xffff_ffff_8100_0000, 1, 10, 1),
                row(0xffff_ffff_8100_0040, 2, 5, 2),
                row(0xffff_ffff_8100_0048, 3, 7, 3),
                row(0xffff_ffff_8100_0050, 2, 6, 2),
                row(0xffff_ffff_8100_0100, 0, 0, 0),
            ],
            nodes: vec![
                InlineNode::default(),
                InlineNode {
                    name: 1,
                    ..Default::default()
                },
                InlineNode {
                    name: 2,
                    ..Default::default()
                },
                InlineNode {
                    parent: 2,
                    name: 3,
                    call_file: 2,
                    call_line: 5,
                    call_column: 0,
                },
            ],
            files: vec![(0, 0), (4, 5), (6, 7), (6, 8)],
            strings: vec![
                s(""),
                s("start_kernel"),
                s("ksym::fault_here"),
                s("ksym::check"),
                s("/build/linux"),
                s("main.c"),
                s("/build/linux/rust"),
                s("lib.rs"),
                s("check.rs"),
            ],
        }
    }

    fn frame(k: &Kallsyms<'_>, addr: u64, kind: FrameKind, strip: &str) -> String {
        let mut s = String::new();
        k.write_frame(&mut s, addr, kind, strip.as_bytes()).unwrap();
        s
    }

    #[test]
    fn names_offsets_and_sizes_in_both_formats() {
        let v1 = AlignedBlob::copy_from(&pack(&list(), Default::default()).unwrap().blob);
        let v2 = AlignedBlob::copy_from(&pack_v2(&list(), &V2Options::default()).unwrap().blob);
        for blob in [&v1, &v2] {
            let k = Kallsyms::from_blob(blob.as_bytes(), None, None).unwrap();
            assert_eq!(
                frame(&k, 0xffff_ffff_8100_0048, FrameKind::Trapping, ""),
                " [<ffffffff81000048>] ksym::fault_here+0x8/0xc0"
            );
            // A return address right after a call that ends start_kernel
            // is its caller's, not the next function's (`%pB`).
            assert_eq!(
                frame(&k, 0xffff_ffff_8100_0040, FrameKind::Return, ""),
                " [<ffffffff81000040>] start_kernel+0x40/0x40"
            );
            assert_eq!(
                frame(&k, 0xffff_ffff_8100_0040, FrameKind::Trapping, ""),
                " [<ffffffff81000040>] ksym::fault_here+0x0/0xc0"
            );
            // A pointer's width: 8 digits on a 32-bit host.
            let pad = "0".repeat(2 * core::mem::size_of::<usize>() - 4);
            assert_eq!(
                frame(&k, 0x1234, FrameKind::Trapping, ""),
                format!(" [<{pad}1234>] 0x1234")
            );
        }
    }

    #[test]
    fn lines_and_inline_frames_outermost_first() {
        let opts = V2Options {
            lines: Some((table(), false)),
            ..V2Options::default()
        };
        let blob = AlignedBlob::copy_from(&pack_v2(&list(), &opts).unwrap().blob);
        let k = Kallsyms::from_blob(blob.as_bytes(), None, None).unwrap();
        assert_eq!(
            frame(
                &k,
                0xffff_ffff_8100_004a,
                FrameKind::Trapping,
                "/build/linux"
            ),
            " [<ffffffff8100004a>] ksym::fault_here+0xa/0xc0 rust/lib.rs:5 > ksym::check rust/check.rs:7"
        );
        // The line of a return address is the call's, at ADDR - 1.
        assert_eq!(
            frame(&k, 0xffff_ffff_8100_0050, FrameKind::Return, ""),
            " [<ffffffff81000050>] ksym::fault_here+0x10/0xc0 /build/linux/rust/lib.rs:5 > ksym::check /build/linux/rust/check.rs:7"
        );
        assert_eq!(
            frame(
                &k,
                0xffff_ffff_8100_0004,
                FrameKind::Trapping,
                "/build/linux/"
            ),
            " [<ffffffff81000004>] start_kernel+0x4/0x40 main.c:10"
        );
        assert_eq!(
            frame(&k, 0xffff_ffff_8100_0060, FrameKind::Trapping, "/elsewhere"),
            " [<ffffffff81000060>] ksym::fault_here+0x20/0xc0 /build/linux/rust/lib.rs:6"
        );
        assert_eq!(
            frame(&k, 0xffff_ffff_8100_0100, FrameKind::Trapping, ""),
            " [<ffffffff81000100>] 0xffffffff81000100 ??:0"
        );
    }

    /// A `fmt::Write` that records each `write_str`.
    #[derive(Default)]
    struct Calls(Vec<String>);

    impl Write for Calls {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            self.0.push(s.into());
            Ok(())
        }
    }

    fn out(runs: &[&[u8]]) -> String {
        let mut c = Calls::default();
        let mut o = Out::new(&mut c);
        runs.iter().for_each(|r| o.bytes(r));
        o.finish();
        c.0.concat()
    }

    #[test]
    fn utf8_split_across_runs_stays_whole() {
        let name = "fn_λ_€_𝔸".as_bytes();
        for cut in 1..name.len() {
            let runs: Vec<&[u8]> = name.chunks(cut).collect();
            assert_eq!(out(&runs), "fn_λ_€_𝔸", "runs of {cut}");
        }
        // Invalid bytes, a lead byte cut short by ASCII, a surrogate, and
        // a sequence cut off at the very end.
        assert_eq!(out(&[b"a\xffb\xc3x"]), "a\u{FFFD}b\u{FFFD}x");
        assert_eq!(out(&[b"\xed\xa0\x80", b"\xe2\x82"]), "\u{FFFD}\u{FFFD}");
    }

    #[test]
    fn numbers_without_core_fmt() {
        let mut c = Calls::default();
        let mut o = Out::new(&mut c);
        for (v, d) in [
            (0, 1),
            (0xabc, 1),
            (0x1234, 8),
            (u64::MAX, 16),
            (1 << 60, 1),
        ] {
            o.hex(v, d);
            o.char(' ');
        }
        for v in [0, 7, 10, 99, 4_294_967_295] {
            o.dec(v);
            o.char(' ');
        }
        assert_eq!(
            c.0.concat(),
            "0 abc 00001234 ffffffffffffffff 1000000000000000 0 7 10 99 4294967295 "
        );
    }

    #[test]
    fn directory_prefix_is_stripped_whatever_the_runs() {
        let strip = b"/build/linux";
        for (dir, want) in [
            ("/build/linux/rust", "rust"),
            ("/build/linux", ""),
            ("/build/linuxx", "/build/linuxx"),
            ("/build/lin", "/build/lin"),
            ("/other", "/other"),
            ("", ""),
        ] {
            for cut in 1..=dir.len().max(1) {
                let runs: Vec<&[u8]> = dir.as_bytes().chunks(cut).collect();
                let mut c = Calls::default();
                let mut o = Out::new(&mut c);
                let wrote = dir_stripped(&mut o, runs.into_iter(), strip);
                assert_eq!(
                    (c.0.concat().as_str(), wrote),
                    (want, !want.is_empty()),
                    "{dir} in runs of {cut}"
                );
            }
        }
    }
}
