//! Baseline for scripts/bench.sh: the bcc-style resolver, a `Vec<(u64, String)>`
//! loaded from `ADDR TYPE NAME` text, binary search, `write!` formatting.
//! Usage: baseline-naive SYMBOLS.txt < addresses

use std::io::{self, BufRead, BufWriter, Write};

fn main() -> io::Result<()> {
    let path = std::env::args()
        .nth(1)
        .expect("usage: baseline-naive SYMBOLS.txt");
    let mut syms: Vec<(u64, String)> = Vec::new();
    for l in io::BufReader::new(std::fs::File::open(path)?).lines() {
        let l = l?;
        let mut it = l.splitn(3, ' ');
        let (Some(a), Some(_), Some(n)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        syms.push((u64::from_str_radix(a, 16).unwrap(), n.to_string()));
    }
    syms.sort_by_key(|s| s.0);
    let mut out = BufWriter::new(io::stdout().lock());
    for l in io::stdin().lock().lines() {
        let l = l?;
        let s = l.trim();
        let Ok(a) = u64::from_str_radix(s.trim_start_matches("0x"), 16) else {
            continue;
        };
        let i = syms.partition_point(|s| s.0 <= a);
        if i == 0 {
            writeln!(out, "{a:016x} ? [unknown]")?;
        } else {
            let (sa, name) = &syms[i - 1];
            writeln!(out, "{a:016x} {name}+{:#x}", a - sa)?;
        }
    }
    out.flush()
}
