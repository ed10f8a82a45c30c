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

// ---- v2 (FORMAT.md part II), again from the document alone ----

/// CRC32C, bit by bit (FORMAT.md §9.1: reflected 0x82F63B78, init and xor-out all ones).
fn crc32c(data: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in data {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 == 1 {
                (c >> 1) ^ 0x82F6_3B78
            } else {
                c >> 1
            };
        }
    }
    !c
}

/// Value `i` of a packed array of `w`-bit values (§10.4).
fn packed(b: &[u8], i: usize, w: usize) -> u64 {
    let mut v = 0u64;
    for k in 0..w {
        let bit = i * w + k;
        if b[bit / 8] >> (bit % 8) & 1 == 1 {
            v |= 1 << k;
        }
    }
    v
}

fn bit(b: &[u8], j: usize) -> bool {
    b[j / 8] >> (j % 8) & 1 == 1
}

/// Address, type, name and module of one symbol.
type Row = (u64, u8, Vec<u8>, Option<Vec<u8>>);

/// Every symbol, in address order (§10–§11).
pub fn decode_v2(b: &[u8]) -> Vec<Row> {
    assert_eq!(&b[..8], b"\x89KSYM\r\n\x1a");
    assert_eq!(u16::from_le_bytes([b[8], b[9]]), 2);
    let header_len = u16::from_le_bytes([b[10], b[11]]) as usize;
    assert_eq!(u32_at(b, 12), 0, "flags");
    let num_syms = u32_at(b, 16) as usize;
    let m = u32_at(b, 20) as usize;
    let nsect = u32_at(b, 24) as usize;
    assert_eq!(header_len, 32 + 16 * nsect);
    assert_eq!(
        u32_at(b, 28),
        crc32c(&[&b[..28], &b[32..header_len]].concat())
    );
    let mut sec: std::collections::HashMap<u32, &[u8]> = Default::default();
    let mut end = header_len;
    for s in 0..nsect {
        let d = 32 + 16 * s;
        let (id, crc, off, len) = (
            u32_at(b, d),
            u32_at(b, d + 4),
            u32_at(b, d + 8) as usize,
            u32_at(b, d + 12) as usize,
        );
        assert_eq!(off, pad8(end), "sections follow each other, 8-aligned");
        assert!(b[end..off].iter().all(|&x| x == 0));
        assert_eq!(crc32c(&b[off..off + len]), crc, "section {id}");
        sec.insert(id, &b[off..off + len]);
        end = off + len;
    }
    assert_eq!(end, b.len());
    let w = if m <= 2 {
        1
    } else {
        (usize::BITS - (m - 1).leading_zeros()) as usize
    };

    // §10.2 addresses.
    let blocks = sec[&2];
    let addr = |j: usize| {
        let h = 16 * (j / 64);
        let base = u64_at(blocks, h);
        let bitpos = u32_at(blocks, h + 8) as usize;
        let (width, shift) = (blocks[h + 12] as usize, blocks[h + 13]);
        let mut v = 0u64;
        for k in 0..width {
            let bt = bitpos + (j % 64) * width + k;
            if bit(sec[&3], bt) {
                v |= 1 << k;
            }
        }
        base + (v << shift)
    };
    // §10.3 types.
    let exc: std::collections::HashMap<u32, u8> =
        sec[&5].chunks(8).map(|e| (u32_at(e, 0), e[4])).collect();
    let ty = |j: usize| {
        *exc.get(&(j as u32))
            .unwrap_or(if bit(sec[&4], j) { &b'T' } else { &b't' })
    };
    // §10.5 modules.
    let module = |j: usize| -> Option<Vec<u8>> {
        let md = sec.get(&12)?;
        let (nmods, nruns) = (u32_at(md, 0) as usize, u32_at(md, 4) as usize);
        let offs = 8 + 8 * nruns;
        let names = &md[offs + 4 * (nmods + 1)..];
        let id = (0..nruns)
            .rev()
            .find(|&i| u32_at(md, 8 + 8 * i) as usize <= j)
            .map(|i| u32_at(md, 12 + 8 * i) as usize)?;
        (id > 0).then(|| {
            names[u32_at(md, offs + 4 * (id - 1)) as usize..u32_at(md, offs + 4 * id) as usize]
                .to_vec()
        })
    };
    // §11.2/§11.3: every name in rank order, decoded bucket by bucket.
    let tok = sec[&11];
    let expand = |c: u8| {
        let s = u16::from_le_bytes([tok[2 * c as usize], tok[2 * c as usize + 1]]) as usize;
        let e = u16::from_le_bytes([tok[2 * c as usize + 2], tok[2 * c as usize + 3]]) as usize;
        &tok[514 + s..514 + e]
    };
    let index = sec[&9];
    let names_sec = sec[&10];
    let mut by_rank: Vec<Vec<u8>> = Vec::with_capacity(m);
    for bk in 0..m.div_ceil(16) {
        let start = u32_at(index, 4 * bk) as usize;
        let stop = if 4 * (bk + 1) < index.len() {
            u32_at(index, 4 * (bk + 1)) as usize
        } else {
            names_sec.len()
        };
        let mut at = start;
        let mut prev: Vec<u8> = Vec::new();
        for k in 0..(m - 16 * bk).min(16) {
            let mut lcp = 0usize;
            if k > 0 {
                let mut shift = 0;
                loop {
                    let x = names_sec[at];
                    at += 1;
                    lcp |= ((x & 0x7F) as usize) << shift;
                    shift += 7;
                    if x & 0x80 == 0 {
                        break;
                    }
                }
            }
            let mut name = prev[..lcp].to_vec();
            while names_sec[at] != 0 {
                name.extend_from_slice(expand(names_sec[at]));
                at += 1;
            }
            at += 1;
            by_rank.push(name.clone());
            prev = name;
        }
        assert_eq!(at, stop, "bucket {bk} ends where the next starts");
    }
    // §10.4: addr_to_name directly; name_to_addr by the documented walk.
    let rank_of = |j: usize| packed(sec[&7], j, w) as usize;
    let n2a = sec[&8];
    let words = m.div_ceil(64);
    let marks_len = pad8(8 * words + 4 * words.div_ceil(8));
    let marked = |x: usize| bit(n2a, x);
    let mark_rank = |x: usize| (0..x).filter(|&y| marked(y)).count();
    let back = |x: usize| packed(&n2a[marks_len..], mark_rank(x), w) as usize;
    for r in (0..m).step_by(97) {
        let (mut x, mut jumped, mut found) = (r, false, None);
        for _ in 0..18 {
            if rank_of(x) == r {
                found = Some(x);
                break;
            }
            if marked(x) && !jumped {
                jumped = true;
                x = back(x);
            } else {
                x = rank_of(x);
            }
        }
        let j = found.expect("the inverse is found within 2T + 2 steps");
        assert_eq!(rank_of(j), r);
    }
    // §10.1: rows, with the folded companions put back.
    let mut out = Vec::with_capacity(num_syms);
    for j in 0..m {
        let name = by_rank[rank_of(j)].clone();
        if bit(sec[&6], j) {
            out.push((
                addr(j) - 16,
                ty(j),
                [&b"__pfx_"[..], &name].concat(),
                module(j),
            ));
        }
        out.push((addr(j), ty(j), name, module(j)));
    }
    assert_eq!(out.len(), num_syms);
    // §11.1: names strictly ascending by (name, row).
    let mut rows: Vec<usize> = (0..m).collect();
    rows.sort_by_key(|&j| rank_of(j));
    for p in rows.windows(2) {
        assert!((&by_rank[rank_of(p[0])], p[0]) < (&by_rank[rank_of(p[1])], p[1]));
    }
    out
}

fn check_v2(filtered: &[u8]) {
    let blob = run_ok("ksym-pack", &["--format", "v2"], filtered);
    let syms = decode_v2(&blob);
    let mut expect: Vec<Row> = lines(filtered)
        .map(|l| {
            let a = u64::from_str_radix(std::str::from_utf8(&l[..16]).unwrap(), 16).unwrap();
            let mut parts = l[19..].splitn(2, |&b| b == b'\t');
            let name = parts.next().unwrap().to_vec();
            let module = parts.next().map(|m| m[1..m.len() - 1].to_vec());
            (a, l[17], name, module)
        })
        .collect();
    expect.sort_by_key(|s| s.0);
    assert_eq!(syms.len(), expect.len());
    for (got, want) in syms.iter().zip(&expect) {
        assert_eq!(got, want);
    }
}

#[test]
fn v2_decoder_from_the_document_reads_sample_blobs() {
    for s in [
        "kallsyms-6.18-sample.txt.xz",
        "System.map-6.1.0-56-sample.xz",
        "System.map-6.1.0-56-cloud-arm64-sample.xz",
        "rustup-1.29.0.nm-n-sample.txt.xz",
        "cargo-1.95.0.nm-n-sample.txt.xz",
    ] {
        check_v2(&run_ok("ksym-filter", &[], &sample(s)));
    }
}

#[test]
fn v2_decoder_from_the_document_reads_every_corpus_blob() {
    for name in CORPUS_SYMBOL_LISTS {
        let Some(input) = corpus(name) else { return };
        check_v2(&run_ok("ksym-filter", &[], &input));
    }
}
