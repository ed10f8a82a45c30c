//! perf's view of user-space binaries: the DSO-relative addresses of its
//! callchain frames, and the records that tie a DSO's path to its
//! build-id.
//!
//! `perf script` prints a callchain frame of a mapped file as
//! `\t<ADDR> [SYM+OFF] (PATH)`, where ADDR is `map__map_ip()` of the
//! runtime address: `ip − map start + map pgoff`, a *file offset* into
//! PATH (tools/perf/util/map.h). It is the same in every process that maps
//! the binary, so no `/proc/PID/maps` is needed: the binary's own
//! `PT_LOAD` headers (the blob's `segments`, FORMAT.md §10.8) turn it into
//! a link-time address. The sample's own `ip` field, printed without the
//! leading tab, stays a runtime address.
//!
//! Build-ids come from `perf buildid-list` (`HEX PATH` lines) and from
//! `perf script --show-mmap-events` of a `perf record --buildid-mmap`
//! capture (`PERF_RECORD_MMAP2 … <HEX>]: r-xp PATH`).

use crate::blob::v2::read::LoadSegment;
use crate::store::layout::parse_hex;

use super::maps::MappedBinary;

const PF_X: u32 = 1;

/// A binary's file offsets as an address space for a resolver over its
/// blob: `bias` is `p_offset − p_vaddr` of its executable segments (so
/// `offset − bias` is the link-time address) and `ranges` their file
/// bytes; `paths` is `[path]`.
///
/// `None` when the binary has no executable segment, or when two of them
/// disagree on `p_offset − p_vaddr` (one bias cannot serve both; such
/// frames stay as perf printed them).
pub fn file_offset_space(segments: &[LoadSegment], path: &[u8]) -> Option<MappedBinary> {
    let mut bias = None;
    let mut ranges = Vec::new();
    for s in segments.iter().filter(|s| s.flags & PF_X != 0) {
        let b = s.offset.wrapping_sub(s.vaddr);
        if *bias.get_or_insert(b) != b {
            return None;
        }
        ranges.push(s.offset..s.offset.saturating_add(s.filesz));
    }
    Some(MappedBinary {
        bias: bias?,
        ranges,
        paths: vec![path.to_vec()],
    })
}

/// The path of a callchain frame of a mapped file: a line starting with a
/// tab, then blanks, a hex address and ending ` (PATH)` with PATH a file
/// (`/…`), not `[kernel.kallsyms]`, `[unknown]` or `[vdso]`.
pub fn callchain_path(line: &[u8]) -> Option<&[u8]> {
    let body = line.trim_ascii_end();
    let (_, after) = callchain_frame(body)?;
    if !after.starts_with(b" ") {
        return None;
    }
    let inner = body.strip_suffix(b")")?;
    let open = inner.windows(2).rposition(|w| w == b" (")?;
    let path = &inner[open + 2..];
    path.starts_with(b"/").then_some(path)
}

/// A callchain frame line's address (`\t<blanks>HEX`, at most 16 hex
/// digits) and what follows it.
fn callchain_frame(line: &[u8]) -> Option<(u64, &[u8])> {
    let rest = line.strip_prefix(b"\t")?.trim_ascii_start();
    let digits = rest.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    if digits == 0 || digits > 16 {
        return None;
    }
    Some((
        crate::text::hex::parse_u64(&rest[..digits])?,
        &rest[digits..],
    ))
}

/// The address of a callchain frame line (`\t<blanks>HEX …`).
pub fn callchain_address(line: &[u8]) -> Option<u64> {
    callchain_frame(line).map(|(a, _)| a)
}

/// The address of one of perf's nameless inline frames, `\tHEX (inlined)`:
/// `perf script -F ip,dso` of a `--call-graph dwarf` capture prints one
/// per function inlined at the frame that follows it at the same address.
pub fn nameless_inline(line: &[u8]) -> Option<u64> {
    let (addr, after) = callchain_frame(line.trim_ascii_end())?;
    let gap = after.strip_suffix(b"(inlined)")?;
    (!gap.is_empty() && gap.iter().all(u8::is_ascii_whitespace)).then_some(addr)
}

/// The path and build-id of a `PERF_RECORD_MMAP2` line that carries one
/// (`[START(LEN) @ PGOFF <HEX>]: PERMS PATH`); `None` for other lines and
/// for MMAP2 records with a device and inode instead.
pub fn mmap2_build_id(line: &[u8]) -> Option<(&[u8], Vec<u8>)> {
    // Asked of every line of a stream: the searcher is built once.
    static MMAP2: std::sync::LazyLock<bstr::Finder<'static>> =
        std::sync::LazyLock::new(|| bstr::Finder::new(b"PERF_RECORD_MMAP2 "));
    let at = MMAP2.find(line)?;
    let rest = &line[at..];
    let lt = bstr::ByteSlice::find(rest, b" <")? + 2;
    let gt = lt + bstr::ByteSlice::find(&rest[lt..], b">]: ")?;
    let id = parse_hex(&rest[lt..gt])?;
    let tail = &rest[gt + 4..];
    let sp = tail.iter().position(|&b| b == b' ')?;
    let path = tail[sp + 1..].trim_ascii_end();
    (!id.is_empty() && !path.is_empty()).then_some((path, id))
}

/// A binary's path and its build-id (raw bytes, not hex).
pub type PathBuildId = (Vec<u8>, Vec<u8>);

/// `perf buildid-list`'s output: `(path, build-id)` pairs, in order.
///
/// Errors: a non-blank line that is not `HEX PATH`, by its line number.
pub fn parse_buildid_list(text: &[u8]) -> Result<Vec<PathBuildId>, String> {
    let mut out = Vec::new();
    for (n, line) in text.split(|&b| b == b'\n').enumerate() {
        let line = line.trim_ascii();
        if line.is_empty() {
            continue;
        }
        let pair = line
            .iter()
            .position(|&b| b == b' ')
            .and_then(|sp| Some((parse_hex(&line[..sp])?, line[sp + 1..].trim_ascii())))
            .filter(|(id, path)| !id.is_empty() && !path.is_empty());
        match pair {
            Some((id, path)) => out.push((path.to_vec(), id)),
            None => {
                return Err(format!(
                    "line {}: expected `BUILDID PATH` (perf buildid-list), got `{}`",
                    n + 1,
                    String::from_utf8_lossy(line)
                ));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::normalize::test_segment as seg;

    /// lld places text at `p_vaddr = p_offset + 0x1000`: perf's 0x79d is
    /// link-time 0x179d there, and the data segment does not count.
    #[test]
    fn file_offsets_map_through_the_executable_segment() {
        let segs = [
            seg(0, 0, 0x678, 4),
            seg(0x1680, 0x680, 0x1d0, 5),
            seg(0x2850, 0x850, 0x1d8, 6),
        ];
        let m = file_offset_space(&segs, b"/bin/x").unwrap();
        assert_eq!(0x79du64.wrapping_sub(m.bias), 0x179d);
        assert_eq!(m.ranges, vec![0x680..0x850]);
        assert!(file_offset_space(&segs[..1], b"/bin/x").is_none());
        let split = [seg(0x1000, 0x1000, 0x10, 5), seg(0x3000, 0x2000, 0x10, 5)];
        assert!(file_offset_space(&split, b"/bin/x").is_none());
    }

    #[test]
    fn callchain_frames_of_files_are_told_apart() {
        let lib = b"/usr/lib/x86_64-linux-gnu/libc.so.6";
        assert_eq!(
            callchain_path(b"\t           1469e (/usr/lib/x86_64-linux-gnu/libc.so.6)\n"),
            Some(&lib[..])
        );
        assert_eq!(
            callchain_path(
                b"\t    1469e __libc_start_call_main+0x7e (/usr/lib/x86_64-linux-gnu/libc.so.6)"
            ),
            Some(&lib[..])
        );
        // The sample's runtime ip, the kernel, unknown maps, the vdso.
        assert_eq!(callchain_path(b"     5653d28de79d work (/tmp/x)"), None);
        assert_eq!(
            callchain_path(b"\tffffffff81a8a905 ([kernel.kallsyms])"),
            None
        );
        assert_eq!(callchain_path(b"\t               0 ([unknown])"), None);
        assert_eq!(callchain_path(b"\t            1234 ([vdso])"), None);
        assert_eq!(callchain_path(b"\tnot a frame (/x)"), None);
    }

    #[test]
    fn perfs_nameless_inline_frames_are_told_apart() {
        assert_eq!(
            nameless_inline(b"\t          10a22c (inlined)\n"),
            Some(0x10a22c)
        );
        assert_eq!(
            nameless_inline(b"\t          10a22c catch_unwind (inlined)"),
            None
        );
        assert_eq!(nameless_inline(b"\t          10a22c (/tmp/kp)"), None);
        assert_eq!(
            callchain_address(b"\t          10a22c (/tmp/kp)"),
            Some(0x10a22c)
        );
        assert_eq!(callchain_address(b"  10a22c (/tmp/kp)"), None);
    }

    #[test]
    fn mmap2_records_and_buildid_lists_name_build_ids() {
        let line = b"spin 30402 30373.500233: PERF_RECORD_MMAP2 30402/30402: [0x55db62244000(0x1000) @ 0 <38082a82c2c19f62f5b14ecdf0c0a7612784188d>]: r-xp /tmp/p34/spin\n";
        let (path, id) = mmap2_build_id(line).unwrap();
        assert_eq!(path, b"/tmp/p34/spin");
        assert_eq!(id[0], 0x38);
        assert_eq!(id.len(), 20);
        assert!(
            mmap2_build_id(b"x PERF_RECORD_MMAP2 1/1: [0x1(0x2) @ 0 fe:00 10 0]: r-xp /bin/x")
                .is_none()
        );
        let list =
            parse_buildid_list(b"4a5a9b0a [kernel.kallsyms]\n93ac61ec /usr/lib/libc.so.6\n\n")
                .unwrap();
        assert_eq!(
            list[1],
            (b"/usr/lib/libc.so.6".to_vec(), vec![0x93, 0xac, 0x61, 0xec])
        );
        let e = parse_buildid_list(b"93ac /x\nnothex /y\n").unwrap_err();
        assert!(e.starts_with("line 2: expected `BUILDID PATH`"), "{e}");
    }
}
