//! Frames that name their binary and an address in it, as user-space
//! crash reporters print them when they cannot name the function:
//!
//! - sanitizers (ASan, LSan, TSan, UBSan: sanitizer_common's stack
//!   printer): `#N 0xPC  (PATH+0xOFF)`, with ` (BuildId: HEX)` after it
//!   on recent ones; named, the same frame reads `#N 0xPC in NAME
//!   (PATH+0xOFF)`;
//! - glibc's `backtrace_symbols`: `PATH(+0xOFF)[0xPC]` (before 2.36 with a
//!   blank before `[`); named, `PATH(NAME+0xOFF)[0xPC]`.
//!
//! OFF is the PC less the binary's load bias (`dl_iterate_phdr`'s
//! `dlpi_addr`, the link map's `l_addr`): the link-time address itself.

use crate::store::layout::parse_hex;

/// Which reporter printed a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reporter {
    /// A sanitizer: the name goes in as ` in NAME` after the PC.
    Sanitizer,
    /// glibc's `backtrace_symbols`: the name goes in before `+0xOFF`.
    Glibc,
}

/// One such frame: where its binary, link-time address and name are on
/// the line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetFrame<'a> {
    /// The binary's path as printed.
    pub path: &'a [u8],
    /// The link-time address, in bytes.
    pub address: u64,
    /// The build-id a sanitizer printed (raw bytes).
    pub build_id: Option<Vec<u8>>,
    /// Who printed it.
    pub reporter: Reporter,
    /// Byte offset where the name goes: for a sanitizer, `line[..at]` is
    /// `#N 0xPC` and `line[at..]` the blanks and ` (PATH+0xOFF)…`; for
    /// glibc, `line[at..]` is `+0xOFF) [0xPC]`.
    pub at: usize,
}

fn hex_at(s: &[u8]) -> Option<(u64, usize)> {
    let digits = s.strip_prefix(b"0x")?;
    let n = digits.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    if n == 0 || n > 16 {
        return None;
    }
    Some((crate::text::hex::parse_u64(&digits[..n])?, 2 + n))
}

/// The frame on `line`, when it is an unnamed sanitizer or glibc frame
/// (see the module documentation); `None` for anything else, named
/// frames included.
pub fn offset_frame(line: &[u8]) -> Option<OffsetFrame<'_>> {
    let body = line.trim_ascii_end();
    sanitizer(body).or_else(|| glibc(body))
}

fn sanitizer(body: &[u8]) -> Option<OffsetFrame<'_>> {
    let lead = body.len() - body.trim_ascii_start().len();
    let rest = body[lead..].strip_prefix(b"#")?;
    let n = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    let after_n = rest.get(n..)?.strip_prefix(b" ")?;
    let (_, pc_len) = hex_at(after_n)?;
    let at = lead + 1 + n + 1 + pc_len;
    let tail = &body[at..];
    let open = tail.iter().position(|&b| b != b' ')?;
    if open < 1 || tail[open] != b'(' {
        return None; // ` in NAME …`: named already
    }
    let inner_end = open + tail[open..].iter().position(|&b| b == b')')?;
    let inner = &tail[open + 1..inner_end];
    let plus = inner.windows(3).rposition(|w| w == b"+0x")?;
    let (address, len) = hex_at(&inner[plus + 1..])?;
    if plus + 1 + len != inner.len() || plus == 0 {
        return None;
    }
    let build_id = bstr::ByteSlice::find(&tail[inner_end..], b"(BuildId: ").and_then(|i| {
        let id = &tail[inner_end + i + 10..];
        let n = id.iter().take_while(|b| b.is_ascii_hexdigit()).count();
        parse_hex(&id[..n]).filter(|v| !v.is_empty())
    });
    Some(OffsetFrame {
        path: &inner[..plus],
        address,
        build_id,
        reporter: Reporter::Sanitizer,
        at,
    })
}

fn glibc(body: &[u8]) -> Option<OffsetFrame<'_>> {
    let open = body.iter().position(|&b| b == b'(')?;
    let path = &body[..open];
    if path.is_empty() || path.contains(&b' ') || !path.contains(&b'/') {
        return None;
    }
    let (address, len) = hex_at(body[open + 1..].strip_prefix(b"+")?)?;
    let close = open + 2 + len;
    let tail = body.get(close..)?;
    // glibc 2.36 prints `)[0x…]`, older ones `) [0x…]`.
    let close = tail.strip_prefix(b")")?;
    let pc = close.strip_prefix(b" ").unwrap_or(close);
    let pc = pc.strip_prefix(b"[")?.strip_suffix(b"]")?;
    hex_at(pc).filter(|&(_, l)| l == pc.len())?;
    Some(OffsetFrame {
        path,
        address,
        build_id: None,
        reporter: Reporter::Glibc,
        at: open + 1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitizer_frames_give_path_offset_and_build_id() {
        let l =
            b"    #1 0x7f2d3a229d8f  (/lib/x86_64-linux-gnu/libc.so.6+0x29d8f) (BuildId: 0f2a3b)\n";
        let f = offset_frame(l).unwrap();
        assert_eq!(f.path, b"/lib/x86_64-linux-gnu/libc.so.6");
        assert_eq!(f.address, 0x29d8f);
        assert_eq!(f.build_id, Some(vec![0x0f, 0x2a, 0x3b]));
        assert_eq!(f.reporter, Reporter::Sanitizer);
        assert_eq!(&l[..f.at], b"    #1 0x7f2d3a229d8f");
        let f = offset_frame(b"#12 0x55d0c8a01189 (/tmp/a.out+0x1189)").unwrap();
        assert_eq!(
            (f.path, f.address, f.build_id),
            (&b"/tmp/a.out"[..], 0x1189, None)
        );
        // Named already, or not a frame.
        assert!(offset_frame(b"    #0 0x4f6b8d in main (/tmp/a.out+0x4f6b8d)").is_none());
        assert!(offset_frame(b"    #0 0x4f6b8d in main /src/x.c:12:3").is_none());
        assert!(offset_frame(b"#1 0x12 (no offset here)").is_none());
    }

    #[test]
    fn glibc_frames_give_path_and_offset() {
        let l = b"./prog(+0x1189) [0x55d0c8a01189]\n";
        let f = offset_frame(l).unwrap();
        assert_eq!(
            (f.path, f.address, f.reporter),
            (&b"./prog"[..], 0x1189, Reporter::Glibc)
        );
        assert_eq!(&l[f.at..f.at + 7], b"+0x1189");
        let f =
            offset_frame(b"/lib/x86_64-linux-gnu/libc.so.6(+0x29d90) [0x7f4a1c429d90]").unwrap();
        assert_eq!(f.address, 0x29d90);
        let f = offset_frame(b"./crash-plain(+0x11bc)[0x5630357501bc]").unwrap();
        assert_eq!(f.address, 0x11bc);
        assert!(
            offset_frame(
                b"/lib/x86_64-linux-gnu/libc.so.6(__libc_start_main+0x80) [0x7f4a1c429e40]"
            )
            .is_none()
        );
        assert!(
            offset_frame(b"prog(+0x1189) [0x55d0c8a01189]").is_none(),
            "no path"
        );
        assert!(offset_frame(b"f(+0x1) [x]").is_none());
    }
}
