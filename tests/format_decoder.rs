//! A decoder written from docs/FORMAT.md alone (no code from src/), used to
//! check that what ksym-pack writes is what the document says.

mod common;
use common::*;

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn pad8(x: usize) -> usize {
    (x + 7) & !7
}

/// FORMAT.md §2, §3: returns (address, type, name) in address order and seqs.
type Decoded = (Vec<(u64, u8, Vec<u8>)>, Vec<u32>);

pub fn decode(b: &[u8]) -> Decoded {
    let n = u64_at(b, 0) as usize;
    let addr_at = 8;
    let off_at = addr_at + 8 * n;
    let seq_at = off_at + 4 * n;
    let names_len_at = pad8(seq_at + 4 * n);
    let names_len = u64_at(b, names_len_at) as usize;
    let names = &b[names_len_at + 8..names_len_at + 8 + names_len];
    let tt_at = pad8(names_len_at + 8 + names_len);
    let tt_len = u64_at(b, tt_at) as usize;
    let table = &b[tt_at + 8..tt_at + 8 + tt_len];
    let ti_at = pad8(tt_at + 8 + tt_len);
    let ntok = u64_at(b, ti_at) as usize;
    assert_eq!(
        b.len(),
        ti_at + 8 + 4 * ntok,
        "the blob ends right after token_index"
    );
    assert!(ntok <= 511);
    let tok_start: Vec<usize> = (0..ntok)
        .map(|i| u32_at(b, ti_at + 8 + 4 * i) as usize)
        .collect();
    let token = |id: usize| {
        let end = if id + 1 < ntok {
            tok_start[id + 1]
        } else {
            tt_len
        };
        &table[tok_start[id]..end]
    };
    // Padding bytes are zero.
    for (from, to) in [
        (seq_at + 4 * n, names_len_at),
        (names_len_at + 8 + names_len, tt_at),
        (tt_at + 8 + tt_len, ti_at),
    ] {
        assert!(
            b[from..to].iter().all(|&x| x == 0),
            "nonzero padding at {from}"
        );
    }
    let mut syms = Vec::with_capacity(n);
    let mut expect_off = 0;
    for i in 0..n {
        let off = u32_at(b, off_at + 4 * i) as usize;
        assert_eq!(off, expect_off, "records are contiguous");
        let ty = names[off];
        let len = u16::from_le_bytes([names[off + 1], names[off + 2]]) as usize;
        let p = &names[off + 3..off + 3 + len];
        let mut name = Vec::new();
        let raw = if p[0] == 0xFF {
            if p.len() >= 4 && p[3] == 0xFF {
                let id = (p[1] as usize) << 8 | p[2] as usize;
                assert!(
                    (256..511).contains(&id),
                    "2-byte form only for ids 256..=510"
                );
                name.extend_from_slice(token(id));
                &p[4..]
            } else {
                assert_eq!(p[2], 0xFF);
                name.extend_from_slice(token(p[1] as usize));
                &p[3..]
            }
        } else {
            p
        };
        assert!(!raw.contains(&0xFF));
        name.extend_from_slice(raw);
        syms.push((u64_at(b, addr_at + 8 * i), ty, name));
        expect_off = off + 3 + len;
    }
    assert_eq!(expect_off, names_len);
    let seqs = (0..n).map(|r| u32_at(b, seq_at + 4 * r)).collect();
    (syms, seqs)
}

fn check(filtered: &[u8]) {
    let blob = run_ok("ksym-pack", &[], filtered);
    let (syms, seqs) = decode(&blob);
    let mut expect: Vec<(u64, u8, Vec<u8>)> = lines(filtered)
        .map(|l| {
            let a = u64::from_str_radix(std::str::from_utf8(&l[..16]).unwrap(), 16).unwrap();
            // v1 has no field for the `\t[module]` column (FORMAT.md §6).
            let name = l[19..].split(|&b| b == b'\t').next().unwrap();
            (a, l[17], name.to_vec())
        })
        .collect();
    expect.sort_by_key(|s| s.0); // stable: aliases keep input order
    assert_eq!(syms, expect);
    // seqs: strictly ascending by (name, index): a sorted permutation.
    for w in seqs.windows(2) {
        let (a, b) = (w[0] as usize, w[1] as usize);
        assert!((&syms[a].2, a) < (&syms[b].2, b));
    }
    assert_eq!(seqs.len(), syms.len());
}

#[test]
fn decoder_from_the_document_reads_sample_blobs() {
    for s in [
        "kallsyms-6.18-sample.txt.xz",
        "System.map-6.1.0-56-sample.xz",
        "rustup-1.29.0.nm-n-sample.txt.xz",
        "cargo-1.95.0.nm-n-sample.txt.xz",
    ] {
        let filtered = run_ok("ksym-filter", &[], &sample(s));
        check(&filtered);
    }
}

#[test]
fn decoder_from_the_document_reads_corpus_blobs() {
    for name in [
        "kallsyms-6.18-x86_64.txt",
        "System.map-6.1.0-56-amd64",
        "cargo-1.95.0.nm-n.txt",
        "rustup-1.29.0.nm-n-C.txt",
    ] {
        let Some(input) = corpus(name) else { return };
        check(&run_ok("ksym-filter", &[], &input));
    }
}

#[test]
fn seed_example_is_laid_out_as_documented() {
    let blob = run_ok(
        "ksym-pack",
        &[],
        b"0000000000001000 T _start\n0000000000001100 T do_fork\n0000000000001200 T cpu_startup_entry\n",
    );
    let (syms, seqs) = decode(&blob);
    assert_eq!(syms.len(), 3);
    assert_eq!(seqs, [0, 2, 1]);
    // FORMAT.md §8: offsets 0, 9, 19; names_len 39; no tokens.
    assert_eq!(
        (u32_at(&blob, 32), u32_at(&blob, 36), u32_at(&blob, 40)),
        (0, 9, 19)
    );
    assert_eq!(u64_at(&blob, 56), 39);
    assert_eq!(u64_at(&blob, blob.len() - 8), 0);
}
