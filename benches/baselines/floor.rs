//! Baseline "floor" for scripts/bench.sh: binary search over the blob's mapped
//! u64 address array, no names. Prints `ADDR 0xINDEX+0xOFF` per address line.
//! With the symbol list the blob was packed from (`ADDR TYPE NAME` lines,
//! in the blob's order), prints `ADDR NAME+0xOFF` from those names instead:
//! the floor of a resolver that prints names, read from plain memory.
//! Usage: baseline-floor BLOB [LIST] < addresses

use std::io::{self, BufRead, BufWriter, Write};

fn main() -> io::Result<()> {
    let path = std::env::args()
        .nth(1)
        .expect("usage: baseline-floor BLOB [LIST]");
    let blob = ksym::blobfile::AlignedBlob::read_file(path.as_ref())?;
    let b = blob.as_bytes();
    let n = u64::from_le_bytes(b[..8].try_into().unwrap()) as usize;
    let addrs: &[u64] = bytemuck::cast_slice(&b[8..8 + 8 * n]);
    // The names, one after another, and where each starts.
    let (mut names, mut starts) = (Vec::new(), vec![0u32]);
    if let Some(list) = std::env::args().nth(2) {
        for l in std::fs::read(list)?.split(|&c| c == b'\n') {
            if let Some(name) = l.splitn(3, |&c| c == b' ').nth(2) {
                names.extend_from_slice(name);
                starts.push(names.len() as u32);
            }
        }
        assert_eq!(starts.len() - 1, n, "the list is not the blob's");
    }
    let stdin = io::stdin().lock();
    let mut input = io::BufReader::with_capacity(1 << 16, stdin);
    let mut out = BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let (mut line, mut buf) = (Vec::new(), Vec::with_capacity(64));
    while input.read_until(b'\n', &mut line)? > 0 {
        let s = line.trim_ascii();
        let s = s.strip_prefix(b"0x").unwrap_or(s);
        if let Some(a) = ksym::text::hex::parse_u64(s) {
            buf.clear();
            ksym::text::hex::push_u64_padded(&mut buf, a);
            let i = addrs.partition_point(|&x| u64::from_le(x) <= a);
            buf.push(b' ');
            if i == 0 {
                buf.extend_from_slice(b"?");
            } else if starts.len() > 1 {
                buf.extend_from_slice(&names[starts[i - 1] as usize..starts[i] as usize]);
                buf.push(b'+');
                ksym::text::hex::push_u64_0x(&mut buf, a - u64::from_le(addrs[i - 1]));
            } else {
                ksym::text::hex::push_u64_0x(&mut buf, (i - 1) as u64);
                buf.push(b'+');
                ksym::text::hex::push_u64_0x(&mut buf, a - u64::from_le(addrs[i - 1]));
            }
            buf.push(b'\n');
            out.write_all(&buf)?;
        }
        line.clear();
    }
    out.flush()
}
