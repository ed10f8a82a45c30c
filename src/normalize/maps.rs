//! `/proc/PID/maps` (proc(5)): which file each range of a process's
//! address space maps, from which file offset; and, for one binary, the
//! load bias that turns its runtime addresses into the link-time addresses
//! its blob holds (ELF spec, "Program Loading": a segment's bytes at file
//! offset `p_offset + k` are mapped at `p_vaddr + k + bias`).

use std::ops::Range;

use crate::blob::Kallsyms;
use crate::blob::v2::read::LoadSegment;

/// One line of a maps file: `START-END PERMS OFFSET DEV INODE [PATH]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    /// The mapped addresses.
    pub range: Range<u64>,
    /// Whether the range is executable (`x` in PERMS).
    pub exec: bool,
    /// The file offset mapped at `range.start`.
    pub offset: u64,
    /// The path (bytes as the kernel printed them), empty for anonymous
    /// memory; `[vdso]`, `[stack]` and the like as they are.
    pub path: Vec<u8>,
}

/// Parses a maps file.
///
/// Errors: the first line that is not a maps line, with its number and
/// what was expected.
pub fn parse(text: &[u8]) -> Result<Vec<Mapping>, String> {
    let mut out = Vec::new();
    for (n, line) in text.split(|&b| b == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        out.push(parse_line(line).ok_or_else(|| {
            format!(
                "line {}: expected `START-END PERMS OFFSET DEV INODE [PATH]` (proc(5)), got `{}`",
                n + 1,
                String::from_utf8_lossy(line)
            )
        })?);
    }
    Ok(out)
}

fn parse_line(line: &[u8]) -> Option<Mapping> {
    let mut fields = line.splitn(6, |&b| b == b' ');
    let range = fields.next()?;
    let perms = fields.next()?;
    let offset = fields.next()?;
    let _dev = fields.next()?;
    let _inode = fields.next()?;
    let path = fields.next().unwrap_or_default();
    let dash = range.iter().position(|&b| b == b'-')?;
    let hex = crate::text::hex::parse_u64;
    let (start, end) = (hex(&range[..dash])?, hex(&range[dash + 1..])?);
    if start > end || perms.len() != 4 {
        return None;
    }
    Some(Mapping {
        range: start..end,
        exec: perms[2] == b'x',
        offset: hex(offset)?,
        path: path.trim_ascii().to_vec(),
    })
}

/// The load bias of the binary whose mappings are `maps` (all of one
/// file) and whose load segments are `segments`: runtime address minus
/// link-time address. Each executable mapping maps file offset
/// `m.offset` at `m.range.start`; in the executable segment (`PF_X`) whose
/// file bytes it maps, that offset has link-time address
/// `p_vaddr + (m.offset − p_offset)`. `None` when no executable mapping
/// lines up with an executable segment, or when two disagree (not one
/// binary loaded once, or another build of it).
pub fn load_bias(maps: &[&Mapping], segments: &[LoadSegment]) -> Option<u64> {
    const PF_X: u32 = 1;
    let mut bias = None;
    for m in maps.iter().filter(|m| m.exec) {
        let len = m.range.end - m.range.start;
        let seg = segments.iter().find(|s| {
            s.flags & PF_X != 0
                && s.offset < m.offset.saturating_add(len)
                && m.offset < s.offset.saturating_add(s.filesz)
        })?;
        let link = seg.vaddr.wrapping_add(m.offset).wrapping_sub(seg.offset);
        let b = m.range.start.wrapping_sub(link);
        if *bias.get_or_insert(b) != b {
            return None;
        }
    }
    bias
}

/// Where a blob's binary is in one process (`ksym-resolve --maps`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MappedBinary {
    /// Runtime address minus link-time address.
    pub bias: u64,
    /// The executable ranges it is mapped at.
    pub ranges: Vec<Range<u64>>,
    /// The paths it is mapped from (sorted, each once).
    pub paths: Vec<Vec<u8>>,
}

/// The blob's binary in the process whose maps file is `maps`: its
/// mappings are those whose path is `dso` or ends in `/dso`, else those
/// whose file (read on this machine) has the blob's build-id.
///
/// Errors: the maps file does not parse (the line named), the blob holds
/// no load segments (not made by `ksym-pack --elf`), no mapping is the
/// binary's, or its mappings do not line up with its segments.
pub fn locate_binary(
    map: &Kallsyms<'_>,
    maps: &[u8],
    dso: Option<&str>,
) -> Result<MappedBinary, String> {
    let all = parse(maps)?;
    let segments: Vec<LoadSegment> = match map {
        Kallsyms::V2(v) => v.load_segments().collect(),
        _ => Vec::new(),
    };
    if segments.is_empty() {
        return Err(
            "--maps needs a blob that holds its binary's load segments (ksym-pack --elf)".into(),
        );
    }
    let build_id = map.build_id();
    let mine: Vec<&Mapping> = all
        .iter()
        .filter(|m| !m.path.is_empty() && !m.path.starts_with(b"["))
        .filter(|m| match dso {
            Some(d) => m.path == d.as_bytes() || m.path.ends_with(format!("/{d}").as_bytes()),
            None => build_id.is_some_and(|id| file_build_id(&m.path).as_deref() == Some(id)),
        })
        .collect();
    if mine.is_empty() {
        return Err(match dso {
            Some(d) => format!("no mapping of `{d}`"),
            None => "no mapping of a file with the blob's build-id (give --dso NAME)".into(),
        });
    }
    let bias = load_bias(&mine, &segments).ok_or(
        "the binary's mappings do not line up with the blob's load segments (another build?)",
    )?;
    let ranges = mine
        .iter()
        .filter(|m| m.exec)
        .map(|m| m.range.clone())
        .collect();
    let mut paths: Vec<Vec<u8>> = mine.iter().map(|m| m.path.clone()).collect();
    paths.sort();
    paths.dedup();
    Ok(MappedBinary {
        bias,
        ranges,
        paths,
    })
}

/// The file-backed mappings of a process (`/`-rooted paths), grouped by
/// path in the order they first appear; only files with an executable
/// mapping (code that can be on a stack).
pub fn file_mappings(all: &[Mapping]) -> Vec<(&[u8], Vec<&Mapping>)> {
    let mut out: Vec<(&[u8], Vec<&Mapping>)> = Vec::new();
    for m in all.iter().filter(|m| m.path.starts_with(b"/")) {
        match out.iter_mut().find(|(p, _)| *p == &m.path[..]) {
            Some((_, ms)) => ms.push(m),
            None => out.push((&m.path, vec![m])),
        }
    }
    out.retain(|(_, ms)| ms.iter().any(|m| m.exec));
    out
}

/// The runtime address a line of a process's frames starts with: blanks,
/// then `0x` and 1 to 16 hex digits, or 1 to 16 hex digits, then a blank
/// or the end (a bare address, perf's `-F ip,sym` frame, bpftrace's and
/// bcc's frames).
pub fn leading_address(line: &[u8]) -> Option<u64> {
    let s = line.trim_ascii_start();
    let s = s.strip_prefix(b"0x").unwrap_or(s);
    let n = s.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    if n == 0 || n > 16 || s.get(n).is_some_and(|b| !b.is_ascii_whitespace()) {
        return None;
    }
    crate::text::hex::parse_u64(&s[..n])
}

/// The GNU build-id of the ELF file at `path` (as a maps file or perf
/// prints it) on this machine, if any.
pub fn file_build_id(path: &[u8]) -> Option<Vec<u8>> {
    let path = std::path::Path::new(std::str::from_utf8(path).ok()?);
    crate::elf::debugfile::build_id_of(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &[u8] = b"\
55d0c8a00000-55d0c8a01000 r--p 00000000 fe:01 1317 /usr/bin/prog
55d0c8a01000-55d0c8a02000 r-xp 00001000 fe:01 1317 /usr/bin/prog
7f2b4c228000-7f2b4c24e000 r--p 00000000 fe:01 2050 /usr/lib/x86_64-linux-gnu/libc.so.6
7f2b4c24e000-7f2b4c3a3000 r-xp 00026000 fe:01 2050 /usr/lib/x86_64-linux-gnu/libc.so.6
7ffd1a3c5000-7ffd1a3e6000 rw-p 00000000 00:00 0                          [stack]
7ffd1a3f2000-7ffd1a3f4000 r-xp 00000000 00:00 0                          [vdso]
";

    #[test]
    fn lines_parse_with_and_without_a_path() {
        let m = parse(MAPS).unwrap();
        assert_eq!(m.len(), 6);
        assert_eq!(m[3].range, 0x7f2b_4c24_e000..0x7f2b_4c3a_3000);
        assert!(m[3].exec && !m[2].exec);
        assert_eq!(m[3].offset, 0x26000);
        assert_eq!(m[3].path, b"/usr/lib/x86_64-linux-gnu/libc.so.6");
        assert_eq!(m[5].path, b"[vdso]");
        let err = parse(b"55d0c8a00000-55d0c8a01000 r--p\nnot a line\n").unwrap_err();
        assert!(err.starts_with("line 1: expected"), "{err}");
    }

    #[test]
    fn the_bias_lines_segments_up_with_mappings() {
        let m = parse(MAPS).unwrap();
        let seg = |vaddr, offset, filesz, flags| LoadSegment {
            vaddr,
            offset,
            filesz,
            memsz: filesz,
            flags,
        };
        // libc 2.36's first two PT_LOADs (R, then R E): vaddr = offset.
        let libc = [seg(0, 0, 0x26000, 4), seg(0x26000, 0x26000, 0x155000, 5)];
        let maps: Vec<&Mapping> = m[2..4].iter().collect();
        assert_eq!(load_bias(&maps, &libc), Some(0x7f2b_4c22_8000));
        // lld's layout: the code's vaddr is not its file offset.
        let moved = [seg(0, 0, 0x1000, 4), seg(0x2000, 0x1000, 0x1000, 5)];
        let maps: Vec<&Mapping> = m[0..2].iter().collect();
        assert_eq!(load_bias(&maps, &moved), Some(0x55d0_c8a0_1000 - 0x2000));
        // No executable segment where the mapping is: not this binary.
        assert_eq!(load_bias(&maps, &libc[..1]), None);
    }

    #[test]
    fn files_with_code_are_grouped_by_path() {
        let m = parse(MAPS).unwrap();
        let files = file_mappings(&m);
        let paths: Vec<&[u8]> = files.iter().map(|f| f.0).collect();
        assert_eq!(
            paths,
            [
                &b"/usr/bin/prog"[..],
                b"/usr/lib/x86_64-linux-gnu/libc.so.6"
            ]
        );
        assert!(files.iter().all(|f| f.1.len() == 2));
        let data_only = parse(b"5000-6000 rw-p 00000000 fe:01 3 /var/db\n").unwrap();
        assert!(file_mappings(&data_only).is_empty());
    }

    #[test]
    fn a_line_s_leading_address() {
        assert_eq!(leading_address(b"0x7f00c2afd694\n"), Some(0x7f00_c2af_d694));
        assert_eq!(
            leading_address(b"\t7f00c2afd694 0x7f00c2afd694 ([unknown])"),
            Some(0x7f00_c2af_d694)
        );
        assert_eq!(
            leading_address(b"    7f00c2afd694 [unknown]"),
            Some(0x7f00_c2af_d694)
        );
        assert_eq!(leading_address(b"main+0x1a"), None);
        assert_eq!(leading_address(b"deadbeefx"), None);
        assert_eq!(leading_address(b"0x"), None);
        assert_eq!(leading_address(b"12345678901234567"), None);
    }
}
