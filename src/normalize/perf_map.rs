//! JIT symbol maps, `/tmp/perf-PID.map` (Linux `tools/perf/Documentation/
//! jit-interface.txt`): a JIT compiler (V8, the JVM's perf-map-agent,
//! LuaJIT, .NET, CPython 3.12's perf trampolines) writes one line
//! `START SIZE NAME` per piece of code it emits, START and SIZE in hex.
//! perf names a frame in anonymous executable memory after that file
//! (`7f3a2c01a0 [unknown] (/tmp/perf-4242.map)` when the file is not
//! where perf reads the capture), at its runtime address: perf maps
//! anonymous memory one to one.
//!
//! A JIT frees and reuses code memory, so entries overlap; a map has no
//! times to say which entry was there when a sample was taken. An address
//! two different entries cover is left unnamed, never guessed. The entries
//! become a v2 blob's symbols with their sizes, so names the format gives a
//! kernel meaning keep it (an entry named `_etext` names nothing, a
//! `__pfx_X` entry 16 bytes before `X` spans those 16 bytes).

use crate::blob::list::SymbolList;

/// The symbols of a perf map, and what was left out.
#[derive(Debug, Clone, Default)]
pub struct PerfMap {
    /// Every entry no other entry overlaps, in address order, each with
    /// its size (type `t`).
    pub list: SymbolList,
    /// Entries left out because another, different entry overlaps them.
    pub overlapping: usize,
    /// Lines repeated word for word (a JIT logs code it emits again).
    pub repeated: usize,
}

/// Parses a perf map: lines `START SIZE NAME` (hex START and SIZE, `0x`
/// allowed; NAME the rest of the line, spaces included, as V8 writes
/// `LazyCompile:~f a.js:1:2`). Entries of size 0 cover nothing and are
/// skipped; blank lines too.
///
/// Errors: the first line that is not an entry, with its number and what
/// was expected, or whose name a blob cannot hold (a byte 0x00 or 0xFF,
/// over 65,535 bytes).
pub fn parse(text: &[u8]) -> Result<PerfMap, String> {
    let mut entries: Vec<(u64, u64, &[u8])> = Vec::new();
    for (n, line) in text.split(|&b| b == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let e = entry(line).ok_or_else(|| {
            format!(
                "line {}: expected `START SIZE NAME` (hex START and SIZE, perf's jit-interface), got `{}`",
                n + 1,
                String::from_utf8_lossy(line)
            )
        })?;
        // What a blob's names cannot hold (FORMAT.md §6): said with the line.
        if let Some(b) = e.2.iter().find(|&&b| b == 0 || b == 0xff) {
            return Err(format!("line {}: byte {b:#04x} in the name", n + 1));
        }
        if e.2.len() > u16::MAX as usize {
            return Err(format!("line {}: a name of over 65,535 bytes", n + 1));
        }
        if e.1 > 0 {
            entries.push(e);
        }
    }
    entries.sort_unstable();
    let before = entries.len();
    entries.dedup();
    let repeated = before - entries.len();
    // In start order, an entry overlaps an earlier one when it starts below
    // the farthest end before it, and a later one when it ends past the
    // next start: linear, however many entries a reused address has.
    let mut dropped = vec![false; entries.len()];
    let mut reach = 0u64;
    for (i, &(start, size, _)) in entries.iter().enumerate() {
        let end = start + size;
        let next = entries.get(i + 1).map_or(u64::MAX, |e| e.0);
        dropped[i] = (i > 0 && start < reach) || end > next;
        reach = reach.max(end);
    }
    let mut list = SymbolList::new();
    for (i, &(start, size, name)) in entries.iter().enumerate() {
        if !dropped[i] {
            list.push(start, b't', name).map_err(|e| format!("{e}"))?;
            list.set_last_size(size);
        }
    }
    Ok(PerfMap {
        list,
        overlapping: dropped.iter().filter(|&&d| d).count(),
        repeated,
    })
}

/// A JIT's code as `ksym-resolve --perf-map` resolves it: a v2 blob of the
/// map's entries (with their sizes), the range of runtime addresses they
/// span, and the paths perf names that memory by.
#[derive(Debug, Clone)]
pub struct JitSpace {
    /// The packed entries (FORMAT.md §8-§10).
    pub blob: Vec<u8>,
    /// From the lowest entry's start to the highest entry's end.
    pub range: std::ops::Range<u64>,
    /// `/tmp/perf-PID.map` ([`perf_dso_path`]), then `path` as given.
    pub paths: Vec<Vec<u8>>,
    /// Entries left out because they overlap another.
    pub overlapping: usize,
}

/// [`parse`]s the map `text` read from `path` and packs it.
///
/// Errors: [`parse`]'s, and a map with no entry left to name anything.
pub fn jit_space(path: &[u8], text: &[u8]) -> Result<JitSpace, String> {
    let m = parse(text)?;
    let l = &m.list;
    let ends = (0..l.len()).map(|i| (l.address(i), l.address(i) + l.size(i).unwrap_or(0)));
    let range = ends
        .reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)))
        .map(|(lo, hi)| lo..hi)
        .ok_or("no code entry (`START SIZE NAME` lines) to name anything")?;
    let packed =
        crate::blob::v2::write::pack_v2(l, &Default::default()).map_err(|e| e.to_string())?;
    Ok(JitSpace {
        blob: packed.blob,
        range,
        paths: vec![perf_dso_path(path), path.to_vec()],
        overlapping: m.overlapping,
    })
}

/// One `START SIZE NAME` line.
fn entry(line: &[u8]) -> Option<(u64, u64, &[u8])> {
    let mut f = line.splitn(3, |&b| b == b' ');
    let hex = |s: &[u8]| {
        let s = s.strip_prefix(b"0x").unwrap_or(s);
        crate::text::hex::parse_u64(s)
    };
    let start = hex(f.next()?)?;
    let size = hex(f.next()?)?;
    let name = f.next()?;
    (!name.is_empty() && start.checked_add(size).is_some()).then_some((start, size, name))
}

/// The path perf gives a JIT's anonymous code of the process whose map is
/// at `path`: `/tmp/` and its file name (`perf-PID.map`), as perf's
/// `map__new` names anonymous memory whatever directory the map was
/// later copied to.
pub fn perf_dso_path(path: &[u8]) -> Vec<u8> {
    let name = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
    [b"/tmp/".as_slice(), name].concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(m: &PerfMap) -> Vec<(u64, Option<u64>, String)> {
        (0..m.list.len())
            .map(|i| {
                (
                    m.list.address(i),
                    m.list.size(i),
                    String::from_utf8_lossy(m.list.name(i)).into_owned(),
                )
            })
            .collect()
    }

    #[test]
    fn entries_with_spaces_in_names_and_repeats() {
        let m = parse(
            b"7f0000001000 40 LazyCompile:~main a.js:1:2\n\
              7f0000001000 40 LazyCompile:~main a.js:1:2\n\
              0x7f0000002000 0x10 stub\r\n\n\
              7f0000003000 0 empty\n",
        )
        .unwrap();
        assert_eq!(
            names(&m),
            [
                (
                    0x7f0000001000,
                    Some(0x40),
                    "LazyCompile:~main a.js:1:2".into()
                ),
                (0x7f0000002000, Some(0x10), "stub".into()),
            ]
        );
        assert_eq!((m.repeated, m.overlapping), (1, 0));
    }

    #[test]
    fn overlapping_entries_name_nothing() {
        // b starts inside a; c inside the long d, which also covers e's
        // start; f touches d's end and stays.
        let m = parse(
            b"1000 100 a\n1080 100 b\n2000 1000 d\n2100 10 c\n2f00 10 e\n3000 10 f\n4000 10 g\n",
        )
        .unwrap();
        assert_eq!(
            names(&m),
            [
                (0x3000, Some(0x10), "f".into()),
                (0x4000, Some(0x10), "g".into())
            ]
        );
        assert_eq!(m.overlapping, 5);
    }

    #[test]
    fn bad_lines_are_named() {
        let e = parse(b"1000 10 ok\n1000 zz bad\n").unwrap_err();
        assert!(e.starts_with("line 2: expected `START SIZE NAME`"), "{e}");
        assert!(parse(b"1000 10\n").is_err());
        assert!(parse(b"ffffffffffffffff 10 wraps\n").is_err());
        let e = parse(b"1000 10 a\0b\n").unwrap_err();
        assert_eq!(e, "line 1: byte 0x00 in the name");
    }

    #[test]
    fn perf_names_the_dso_under_tmp() {
        assert_eq!(
            perf_dso_path(b"/srv/caps/perf-4242.map"),
            b"/tmp/perf-4242.map"
        );
        assert_eq!(perf_dso_path(b"perf-7.map"), b"/tmp/perf-7.map");
    }
}
