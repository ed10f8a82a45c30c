//! Parsing one line of `nm -n` / `nm -n -C`, System.map or /proc/kallsyms
//! output into address, symbol type, name and kallsyms module.
//!
//! Grammar (binutils `nm` default "bsd" format; the kernel's
//! `kernel/kallsyms.c` `s_show`: `"%px %c %s\t[%s]"`):
//! `ADDR SP TYPE SP NAME [TAB "[" MODULE "]"]`, `ADDR` 1 to 16 hex digits,
//! `SP` one or more spaces or tabs, `TYPE` one printable ASCII character,
//! `NAME` the rest of the line (it may hold spaces: `nm -C` prints C++ and Rust
//! signatures). nm prints undefined symbols with blanks instead of an address
//! (`                 U foo`). A trailing `\r` (Windows line ending) is ignored.

use core::fmt;

use crate::text::hex;

/// A line with an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NmSymbol<'a> {
    /// Virtual address.
    pub address: u64,
    /// Symbol type character (`b'T'`, `b't'`, `b'D'`, ...).
    pub symbol_type: u8,
    /// The name, byte for byte as in the input; never empty.
    pub name: &'a [u8],
    /// The `[module]` column of /proc/kallsyms, without brackets.
    pub module: Option<&'a [u8]>,
}

/// What a well-formed line holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NmLine<'a> {
    /// A symbol with an address.
    Symbol(NmSymbol<'a>),
    /// A symbol nm prints without address (`U`, `w`, `v`): never a text symbol.
    NoAddress {
        /// Symbol type character.
        symbol_type: u8,
        /// Name.
        name: &'a [u8],
    },
    /// An empty or all-blank line.
    Blank,
}

/// Why a line is not a symbol line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineError {
    /// The first field is not 1 to 16 hex digits.
    BadAddress,
    /// No single-character symbol type after the address.
    BadType,
    /// Nothing after the symbol type.
    MissingName,
    /// A tab-separated column after the name that is not `[module]`.
    BadModule,
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LineError::BadAddress => "expected an address of 1 to 16 hex digits",
            LineError::BadType => "expected a one-character symbol type after the address",
            LineError::MissingName => "expected a symbol name after the symbol type",
            LineError::BadModule => "expected `\\t[module]` after the name",
        })
    }
}

impl std::error::Error for LineError {}

#[inline]
fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

#[inline]
fn skip_blanks(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|&&b| is_blank(b)).count();
    &s[n..]
}

/// Parses one line (with or without its `\n`).
///
/// Errors: [`LineError`] says which field was not what the grammar in the
/// module doc expects.
pub fn parse_line(line: &[u8]) -> Result<NmLine<'_>, LineError> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let body = skip_blanks(line);
    if body.is_empty() {
        return Ok(NmLine::Blank);
    }
    // An address-less nm line: the address column is all blanks, then the type.
    if body.len() < line.len() && line.len() - body.len() >= 8 {
        let (symbol_type, name) = type_and_name(body)?;
        return Ok(NmLine::NoAddress {
            symbol_type,
            name: name.0,
        });
    }
    // Most lines hold a 16-digit address: no scan for its end.
    let fast = match body.get(16) {
        Some(&b) if is_blank(b) => hex::parse_u64(&body[..16]).map(|a| (16, a)),
        _ => None,
    };
    let (end, address) = match fast {
        Some(f) => f,
        None => {
            let end = body.iter().position(|&b| is_blank(b)).unwrap_or(body.len());
            let address = hex::parse_u64(&body[..end]).ok_or(LineError::BadAddress)?;
            (end, address)
        }
    };
    let rest = skip_blanks(&body[end..]);
    if rest.len() == body.len() - end {
        return Err(LineError::BadType);
    }
    let (symbol_type, (name, module)) = type_and_name(rest)?;
    Ok(NmLine::Symbol(NmSymbol {
        address,
        symbol_type,
        name,
        module,
    }))
}

/// The common line in one pass: exactly what `ksym-filter` writes and what
/// `nm -n` prints for most symbols, `ADDR16 SP TYPE SP NAME \n` with 16 hex
/// digits, single spaces, and a name that starts with no blank and holds no
/// tab, no 0xFF and no `\r` at its end. `None` for anything else, which
/// [`parse_line`] then decides; where this gives a symbol, [`parse_line`]
/// gives the same one (a property test holds the two together). The name
/// is known to hold no 0xFF (FORMAT.md §3.3), so a writer need not look again.
#[inline]
pub fn parse_canonical(line: &[u8]) -> Option<NmSymbol<'_>> {
    let (digits, rest) = line.split_first_chunk::<16>()?;
    let [b' ', ty, b' ', name @ ..] = rest else {
        return None;
    };
    let name = name.strip_suffix(b"\n")?;
    let (first, last) = (*name.first()?, *name.last()?);
    if is_blank(first) || last == b'\r' || !ty.is_ascii_graphic() {
        return None;
    }
    if bstr::ByteSlice::find_byteset(name, b"\t\xff").is_some() {
        return None;
    }
    Some(NmSymbol {
        address: hex::parse_u64_16(digits)?,
        symbol_type: *ty,
        name,
        module: None,
    })
}

type NameAndModule<'a> = (&'a [u8], Option<&'a [u8]>);

#[inline]
fn type_and_name(s: &[u8]) -> Result<(u8, NameAndModule<'_>), LineError> {
    let (&ty, after) = s.split_first().ok_or(LineError::BadType)?;
    if !ty.is_ascii_graphic() {
        return Err(LineError::BadType);
    }
    let name = skip_blanks(after);
    if name.len() == after.len() && !after.is_empty() {
        return Err(LineError::BadType);
    }
    if name.is_empty() {
        return Err(LineError::MissingName);
    }
    Ok((ty, split_module(name)?))
}

/// Splits `name\t[module]`. A tab is kept inside names only when what follows
/// it is not a module column; kallsyms never prints tabs in names.
#[inline]
fn split_module(s: &[u8]) -> Result<NameAndModule<'_>, LineError> {
    match bstr::ByteSlice::find_byte(s, b'\t') {
        None => Ok((s, None)),
        Some(t) => {
            let col = skip_blanks(&s[t..]);
            let m = col
                .strip_prefix(b"[")
                .and_then(|c| c.strip_suffix(b"]"))
                .ok_or(LineError::BadModule)?;
            let name = &s[..t];
            if name.is_empty() {
                return Err(LineError::MissingName);
            }
            Ok((name, Some(m)))
        }
    }
}

/// True for the text symbol types `T` (global) and `t` (local): what a
/// kallsyms blob holds for symbolizing code, with the weak functions that
/// [`TextSymbols`] adds.
#[inline]
pub fn is_text_type(symbol_type: u8) -> bool {
    symbol_type == b'T' || symbol_type == b't'
}

/// Which symbols of a symbol list, read in order, a kallsyms blob keeps:
/// text symbols (`T`, `t`), the text bounds ([`is_text_bound`]), and weak
/// symbols (`W`) inside the text bounds seen so far. `W` is a weak
/// definition that nm does not tag as an object (it prints `V` for those):
/// in a kernel, its weak functions (`abort`, the `arch_*` defaults; 171 in
/// Debian's 6.1 System.map, 304 in a 6.18 /proc/kallsyms, all inside the
/// bounds), which perf counts as functions too (tools/lib/symbol/kallsyms.c
/// `kallsyms__is_function`); but also data such as glibc's `data_start`.
/// So a `W` symbol is kept when it lies at or above `_stext` and below
/// `_etext` (or `_sinittext` and `_einittext`), a bound not yet read
/// counting as open-ended: in address order (`nm -n`, System.map,
/// /proc/kallsyms) that is exactly the text; without bounds (a user
/// program) no `W` symbol is kept. Not `w`: an undefined weak symbol.
#[derive(Debug, Default, Clone)]
pub struct TextSymbols {
    /// The addresses of `_stext`, `_etext`, `_sinittext`, `_einittext`.
    bounds: [Option<u64>; 4],
}

impl TextSymbols {
    /// Whether to keep `sym`, the next symbol of the list; notes the text
    /// bounds it passes.
    pub fn keep(&mut self, sym: &NmSymbol<'_>) -> bool {
        if let Some(i) = crate::kernel::BOUND_NAMES
            .iter()
            .position(|b| *b == sym.name)
        {
            self.bounds[i] = Some(sym.address);
            return true;
        }
        if is_text_type(sym.symbol_type) {
            return true;
        }
        let inside = |lo: Option<u64>, hi: Option<u64>| {
            lo.is_some_and(|lo| lo <= sym.address) && hi.is_none_or(|hi| sym.address < hi)
        };
        let [stext, etext, sinittext, einittext] = self.bounds;
        sym.symbol_type == b'W' && (inside(stext, etext) || inside(sinittext, einittext))
    }
}

/// True for the text-bound markers `_stext`, `_etext`, `_sinittext` and
/// `_einittext`, which a resolver needs whatever their type (arm64's
/// `_etext` is a `D` symbol; FORMAT.md §5.2 and §10.6).
pub fn is_text_bound(name: &[u8]) -> bool {
    crate::kernel::BOUND_NAMES.contains(&name)
}

/// True for names that are not functions: ARM/AArch64/RISC-V mapping symbols
/// (`$x`, `$d`, `$a`, `$t`, `$x.12`, `$xrv64i2p1`) and assembler local labels (`.L…`).
pub fn is_mapping_or_local_label(name: &[u8]) -> bool {
    if name.starts_with(b".L") {
        return true;
    }
    match name.strip_prefix(b"$") {
        Some(r) => {
            let head = r.split(|&b| b == b'.').next().unwrap_or(r);
            matches!(head.first(), Some(b'x' | b'd' | b'a' | b't'))
                && head.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_')
                && r[head.len()..]
                    .iter()
                    .all(|b| b.is_ascii_digit() || *b == b'.')
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sym(line: &[u8]) -> NmSymbol<'_> {
        match parse_line(line) {
            Ok(NmLine::Symbol(s)) => s,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn weak_symbols_are_kept_inside_the_text_bounds_only() {
        let mut t = TextSymbols::default();
        let kept: Vec<bool> = [
            &b"0000000000001000 W before_stext"[..],
            b"0000000000002000 T _stext",
            b"0000000000002010 W abort",
            b"0000000000002020 t helper",
            b"0000000000002030 w undefined_weak",
            b"0000000000002040 D data",
            b"0000000000003000 D _etext",
            b"0000000000004008 W data_start",
            b"0000000000005000 T _sinittext",
            b"0000000000005010 W arch_call_rest_init",
            b"0000000000006000 T _einittext",
            b"0000000000006010 W after_init",
        ]
        .into_iter()
        .map(|l| t.keep(&sym(l)))
        .collect();
        assert_eq!(
            kept,
            [
                false, true, true, true, false, false, true, false, true, true, true, false
            ]
        );
        // A user program has no bounds: no W symbol is text.
        let mut t = TextSymbols::default();
        assert!(!t.keep(&sym(b"0000000000004008 W data_start")));
        assert!(t.keep(&sym(b"0000000000001040 T main")));
    }

    #[test]
    fn canonical_lines_take_the_one_pass_path() {
        let line = b"ffffffff81000000 T do_one thing\n";
        assert_eq!(parse_canonical(line), Some(sym(line)));
        for other in [
            &b"ffffffff81000000 T do_one"[..], // no newline
            b"ffffffff81000000 T do_one\r\n",  // CRLF
            b"ffffffffc0201000 t f\t[mod]\n",  // module column
            b"ffffffff81000000  T x\n",        // two spaces
            b"ffffffff81000000 T  x\n",        // blank before the name
            b"ffffffff81000000 T \xffx\n",     // the token marker
            b"c0100000 T _text\n",             // 8 digits
            b"ffffffff8100000g T x\n",         // not hex
            b"ffffffff81000000 T \n",          // no name
        ] {
            assert_eq!(
                parse_canonical(other),
                None,
                "{:?}",
                bstr::ByteSlice::as_bstr(other)
            );
        }
    }

    proptest::proptest! {
        // Cheap cases, and the interesting mixes are a few in a thousand.
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4096))]
        // Lines built field by field from the bytes that matter to either
        // parser: wherever the one pass answers, the general parser agrees.
        #[test]
        fn canonical_agrees_with_parse_line(
            addr in proptest::sample::select(vec![
                &b"ffffffff81000000"[..], b"00000000000000Ab", b"fffffffff8100000", b"c0100000",
                b"ffffffff8100000g", b"",
            ]),
            sep1 in proptest::sample::select(vec![&b" "[..], b"  ", b"\t", b""]),
            ty in proptest::sample::select(vec![&b"T"[..], b"t", b" ", b"\xff", b""]),
            sep2 in proptest::sample::select(vec![&b" "[..], b"  ", b"\t", b""]),
            name in proptest::collection::vec(
                proptest::sample::select(b"a_ \t\r\xff[]".to_vec()), 0..6),
            end in proptest::sample::select(vec![&b"\n"[..], b"\r\n", b"", b"\t[m]\n"]),
        ) {
            let line = [addr, sep1, ty, sep2, &name, end].concat();
            if let Some(s) = parse_canonical(&line) {
                proptest::prop_assert_eq!(parse_line(&line), Ok(NmLine::Symbol(s)));
            }
        }
    }

    #[test]
    fn parses_the_four_input_kinds() {
        let s = sym(b"ffffffff81000000 T _stext\n");
        assert_eq!(
            (s.address, s.symbol_type, s.name, s.module),
            (0xffffffff81000000, b'T', &b"_stext"[..], None)
        );
        let s = sym(b"ffffffffc0201000 t ftrace_trampoline\t[__builtin__ftrace]");
        assert_eq!(s.name, b"ftrace_trampoline");
        assert_eq!(s.module, Some(&b"__builtin__ftrace"[..]));
        let s = sym(b"0000000000047a30 T core::fmt::write(&mut dyn Write, Arguments)\r\n");
        assert_eq!(s.name, b"core::fmt::write(&mut dyn Write, Arguments)");
        let s = sym(b"c0100000 T _text");
        assert_eq!(s.address, 0xc0100000);
        assert_eq!(
            parse_line(b"                 U memcpy"),
            Ok(NmLine::NoAddress {
                symbol_type: b'U',
                name: b"memcpy"
            })
        );
        assert_eq!(parse_line(b"  \r\n"), Ok(NmLine::Blank));
    }

    #[test]
    fn refuses_what_is_not_a_symbol_line() {
        assert_eq!(parse_line(b"vmlinux:"), Err(LineError::BadAddress));
        assert_eq!(
            parse_line(b"ffffffff81000000 T"),
            Err(LineError::MissingName)
        );
        assert_eq!(
            parse_line(b"ffffffff81000000 T "),
            Err(LineError::MissingName)
        );
        assert_eq!(parse_line(b"ffffffff81000000"), Err(LineError::BadType));
        assert_eq!(
            parse_line(b"ffffffff81000000 TT x"),
            Err(LineError::BadType)
        );
        assert_eq!(
            parse_line(b"1ffffffff81000000 T x"),
            Err(LineError::BadAddress)
        );
        assert_eq!(
            parse_line(b"ffffffff81000000 T x\tjunk"),
            Err(LineError::BadModule)
        );
        assert_eq!(
            parse_line(b"ffffffff81000000 \xff x"),
            Err(LineError::BadType)
        );
    }

    #[test]
    fn mapping_symbols_and_labels() {
        for n in [
            &b"$x"[..],
            b"$d",
            b"$x.12",
            b"$a",
            b"$t.1",
            b"$xrv64i2p1",
            b".Ltmp3",
        ] {
            assert!(is_mapping_or_local_label(n), "{n:?}");
        }
        for n in [&b"$foo$bar"[..], b"x", b"_$x", b"$", b"$LT$"] {
            assert!(!is_mapping_or_local_label(n), "{n:?}");
        }
    }
}
