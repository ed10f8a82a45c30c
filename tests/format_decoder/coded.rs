//! §15.6 (coded rows), §15.1 flag bit 4 (call sites apart) and §10.7
//! form 1 (size gaps), from the document alone, as the rest of
//! `format_decoder`.

use super::common::*;
use super::{
    decode_lines, decode_v2_names, frames_at, packed, pad8, resolved_frames, u32_at, unzigzag,
    v2_section,
};

/// §15.6: a canonical code, `counts[l − 1]` codes of `l` bits.
pub struct RowCode {
    counts: Vec<u32>,
    symbols: Vec<u16>,
}

/// §15.6: the four codes at the head of the rows part, and the stream.
pub fn row_codes(part: &[u8]) -> (Vec<RowCode>, &[u8]) {
    let u16_at = |at: usize| u16::from_le_bytes([part[at], part[at + 1]]);
    let mut at = 0;
    let mut codes = Vec::new();
    for _ in 0..4 {
        let counts: Vec<u32> = (0..16).map(|l| u32::from(u16_at(at + 2 * l))).collect();
        at += 32;
        let n = counts.iter().sum::<u32>() as usize;
        let symbols = (0..n).map(|i| u16_at(at + 2 * i)).collect();
        at += 2 * n;
        codes.push(RowCode { counts, symbols });
    }
    (codes, &part[at..])
}

/// Bits most significant first (§15.6).
pub struct BitStream<'a> {
    pub s: &'a [u8],
    pub pos: usize,
}

impl BitStream<'_> {
    fn bit(&mut self) -> u32 {
        let b = self.s[self.pos / 8] >> (7 - self.pos % 8) & 1;
        self.pos += 1;
        u32::from(b)
    }

    /// A symbol, bit by bit: RFC 1951's canonical codes.
    fn symbol(&mut self, c: &RowCode) -> u16 {
        let (mut code, mut first, mut index) = (0u32, 0u32, 0u32);
        for &count in &c.counts {
            code |= self.bit();
            if code - first < count {
                return c.symbols[(index + code - first) as usize];
            }
            index += count;
            first = (first + count) << 1;
            code <<= 1;
        }
        panic!("no code at bit {}", self.pos)
    }

    /// A value: its class (bit length), then the bits below its top one.
    fn value(&mut self, c: &RowCode) -> u64 {
        let class = self.symbol(c);
        assert!(class <= 40);
        if class == 0 {
            return 0;
        }
        (1..class).fold(1u64, |v, _| v << 1 | u64::from(self.bit()))
    }
}

/// §15.6: one coded block of `count` rows from address `addr`.
pub fn coded_block(
    codes: &[RowCode],
    bits: &mut BitStream,
    mut addr: u64,
    count: usize,
    columns: bool,
    rows: &mut Vec<(u64, u64, i64, u64, i64)>,
    discs: &mut Vec<u64>,
) {
    let [ops, gaps, dlines, values] = [&codes[0], &codes[1], &codes[2], &codes[3]];
    let mut file = bits.value(values);
    let mut line = bits.value(values) as i64;
    let mut col = if columns { bits.value(values) } else { 0 };
    let mut node = bits.value(values) as i64;
    let mut disc = bits.value(values);
    let mut recent: Vec<(i64, u64, i64)> = vec![(node, file, line)];
    let mut top = node;
    rows.push((addr, file, line, col, node));
    discs.push(disc);
    for _ in 1..count {
        let s = bits.symbol(ops);
        disc = 0;
        match s {
            0..0x1000 => {
                addr += u64::from(s >> 6) + 1;
                line += i64::from(s & 63) - 32;
            }
            0x1000..0x1080 => {
                let (j, k) = (usize::from(s >> 4 & 7), i64::from(s & 15));
                addr += bits.value(gaps);
                let (n, f, l) = recent[j];
                let d = match k {
                    0..=8 => k - 4,
                    9 | 10 => unzigzag(bits.value(dlines)),
                    _ => panic!("symbol {s:#x}"),
                };
                (node, file, line) = (n, f, l + d);
                if k == 10 {
                    disc = bits.value(values);
                }
            }
            0x1080..0x1088 => {
                addr += bits.value(gaps);
                line += unzigzag(bits.value(dlines));
                if s & 1 == 1 {
                    file = bits.value(values);
                }
                if s & 2 == 2 {
                    node = top + unzigzag(bits.value(values));
                }
                if s & 4 == 4 {
                    disc = bits.value(values);
                }
            }
            _ => panic!("symbol {s:#x}"),
        }
        if columns {
            col = bits.value(values);
        }
        recent.retain(|e| (e.0, e.1) != (node, file));
        recent.insert(0, (node, file, line));
        recent.truncate(8);
        top = top.max(node);
        rows.push((addr, file, line, col, node));
        discs.push(disc);
    }
}

/// A C program of 150 functions, each with two inlined calls: enough rows
/// (about 3,300) that `ksym-pack --elf --lines` codes them (§15.6).
fn many_functions_c() -> String {
    let mut src = String::from(
        "static inline int sq(int x) { return x * x; }\n\
         static inline int tw(int x) { return sq(x) + sq(x + 1); }\n",
    );
    for i in 0..150 {
        src += &format!(
            "int f{i}(int *a, int n) {{\n  int s = {i};\n  for (int k = 0; k < n; k++) {{\n    \
             if (a[k] > {i}) s += tw(a[k]);\n    else s -= sq(a[k] - {i});\n  }}\n  return s;\n}}\n"
        );
    }
    src += "int main(int c, char **v) {\n  int a[4] = {c, 2, 3, 4};\n  int s = 0;\n";
    for i in 0..150 {
        src += &format!("  s += f{i}(a, c);\n");
    }
    src + "  return s & 1;\n}\n"
}

/// §15.6, §15.1 flag bit 4 and §10.7 form 1, from the document: a
/// program whose rows are Huffman-coded and call sites apart decodes to
/// what `ksym-resolve` prints at every row's first and last address, and
/// its sizes in form 1 are the ELF sizes `nm -S` prints.
#[test]
fn coded_rows_and_size_gaps_from_the_document_agree_with_ksym_resolve_and_nm() {
    let dir = scratch("lines-doc-coded");
    let c = dir.join("many.c");
    std::fs::write(&c, many_functions_c()).unwrap();
    let elf = dir.join("many");
    let (c, elf_s) = (c.to_str().unwrap(), elf.to_str().unwrap());
    tool("cc", &["-O2", "-g", "-fPIE", "-pie", "-o", elf_s, c]);
    let path = dir.join("many.ksym");
    let path_s = path.to_str().unwrap();
    run_ok("ksym-pack", &["--elf", elf_s, "--lines", "-o", path_s], b"");
    let blob = std::fs::read(&path).unwrap();
    let sec = v2_section(&blob, 13);
    assert_eq!(u32_at(sec, 0) & 28, 24, "flag bits 3 and 4, not bit 2");
    let (syms, by_rank) = decode_v2_names(&blob);
    let l = decode_lines(sec, &by_rank);
    assert!(l.rows.len() > 3000, "{} rows", l.rows.len());
    let mut addrs = Vec::new();
    for w in l.rows.windows(2) {
        addrs.extend([w[0].0, w[1].0 - 1]);
    }
    let input: String = addrs.iter().map(|a| format!("{a:#x}\n")).collect();
    let mut framed = 0;
    for (a, got) in addrs.iter().zip(resolved_frames(&path, input.as_bytes())) {
        let want = frames_at(&l, *a);
        framed += usize::from(!want.is_empty());
        assert_eq!(got, want, "{a:#x}");
    }
    assert!(framed > 6000, "{framed} addresses with frames");

    // §10.7: form 1 (the u32 at 4), then each stored row's size.
    let s = v2_section(&blob, 15);
    let (width, n) = (u32_at(s, 0) as usize, u32_at(s, 8) as usize);
    assert_eq!((u32_at(s, 4), u32_at(s, 12)), (1, 0), "form 1");
    let m = syms.len();
    let exc_at = 16 + pad8((m * width).div_ceil(8));
    assert_eq!(s.len(), exc_at + 8 * n);
    let exceptions: std::collections::HashMap<usize, u64> = (0..n)
        .map(|k| {
            let e = exc_at + 8 * k;
            (u32_at(s, e) as usize, u64::from(u32_at(s, e + 4)))
        })
        .collect();
    let size = |j: usize| -> Option<u64> {
        let v = packed(&s[16..], j, width);
        if v == 0 {
            return None;
        }
        if v == (1 << width) - 1 {
            return Some(exceptions[&j]);
        }
        let next = syms[j..].iter().find(|r| r.0 > syms[j].0)?.0;
        Some(next - syms[j].0 - (v - 1))
    };
    let nm = tool("nm", &["-S", "--defined-only", elf_s]);
    let mut checked = 0;
    for (j, r) in syms.iter().enumerate() {
        let name = String::from_utf8_lossy(&r.2);
        let elf_size = nm.lines().find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 4 && f[3] == name && u64::from_str_radix(f[0], 16) == Ok(r.0))
                .then(|| u64::from_str_radix(f[1], 16).unwrap())
        });
        if let Some(want) = elf_size {
            assert_eq!(size(j), Some(want), "{name}");
            checked += 1;
        }
    }
    assert!(checked > 150, "{checked} sizes checked");
}
